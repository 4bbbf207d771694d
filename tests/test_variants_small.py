"""Every kernel variant on small shapes, against torch in float64.

Marked ``ascend_interp``: small enough for triton-ascend's interpreter (about 17x slower than
upstream's), which ``.ci/ascend`` runs with ``-m ascend_interp``.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from _ref import LANES_ON_ASCEND, assert_softmax_close, reference

from npu_softmax import eager, kernels, launcher, softmax
from npu_softmax.layout import row_layout

pytestmark = pytest.mark.ascend_interp

TOL = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}


@pytest.mark.parametrize("variant", ["tile", "online", "split", "cols"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(3, 1), (7, 300), (2, 2500), (2, 2501)])
@pytest.mark.parametrize(("temperature", "offset"), [(0.6, 0.0), (0.6, 150.0), (2.0, 250.0)])
def test_variant_matches_torch(kernel_device: str, variant: str, dtype: torch.dtype,
                               shape: tuple[int, int], temperature: float,
                               offset: float) -> None:
    # A temperature: the row and tile kernels hold 2-byte rows unscaled until they use them.
    # Rows far from 0 need the scaled max as their shift: shifted by the unscaled one, the
    # largest exp overflows (``temperature`` < 1) or underflows to 0 (> 1). Rows of 2501 are
    # not whole 16-byte vectors: the kernels read the elements around each row's aligned body
    # apart, and the looped ones take those elements' max before their scale
    # (``_merge_raw_stats``); rows of 300 and 2500 are read whole, in runs of 8 bytes.
    x = (torch.randn(shape, dtype=torch.float32) * 4 + offset).to(dtype).to(kernel_device)
    y = softmax(x, variant=variant, temperature=temperature)
    ref = torch.softmax(x.cpu().double() / temperature, -1)
    assert y.dtype == dtype and y.shape == x.shape
    # float32 rounds x / temperature to a few 2**-24 of its size, an error the exp keeps.
    rtol = TOL[dtype] + offset / temperature * 2**-22
    torch.testing.assert_close(y.cpu().double(), ref, atol=TOL[dtype], rtol=rtol)


@pytest.mark.parametrize("variant", ["tile", "online", "split"])
def test_strided_view_and_inf_rows(kernel_device: str, variant: str) -> None:
    # dim 1 of a transposed 3-d view: rows neither contiguous nor equally spaced in memory.
    x = torch.randn(5, 9, 4, device=kernel_device).transpose(0, 2)
    x[0, :, 1] = float("-inf")  # a whole row of -inf: torch gives NaN
    x[1, 3, 2] = float("inf")
    y = softmax(x, dim=1, variant=variant)
    torch.testing.assert_close(y.cpu().double(), torch.softmax(x.cpu().double(), 1),
                               equal_nan=True)


@pytest.mark.parametrize("lanes", [0, 1, 16, 512, 2048])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n_cols", [3000, 4096])
def test_online_first_pass_with_any_running_maxima(kernel_device: str,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   lanes: int, dtype: torch.dtype,
                                                   n_cols: int) -> None:
    """The online kernel's first pass with one running max and sum, or one per lane of its
    chunks (``Backend.stat_lanes``; chunks here hold 2048 elements or more), on rows read
    from their aligned body (3000) or whole (4096), with the row's max in a later chunk than
    a lane's, -inf, +inf and NaN entries, and a row of -inf alone."""
    if lanes and kernel_device == "npu":
        pytest.skip(LANES_ON_ASCEND)
    monkeypatch.setattr(type(launcher.backend()), "stat_lanes",
                        lambda self, plan, itemsize: lanes)
    monkeypatch.setattr(eager, "_calls", {})
    x = torch.randn(6, n_cols, dtype=torch.float32) * 3
    x[0, -5] = 40.0  # far above the lanes' maxima of the chunks before it
    x[1, :100] = float("-inf")
    x[2] = float("-inf")
    x[3, 7] = float("inf")
    x[4, n_cols // 2] = float("nan")
    x = x.to(dtype).to(kernel_device)
    y = torch.full_like(x, float("nan"))
    softmax(x, variant="online", out=y)
    assert_softmax_close(y, reference(x, -1))


@pytest.mark.parametrize("variant,shape,dim", [("split", (5, 2500), 1), ("cols", (3000, 20), 0)])
@pytest.mark.parametrize("in_place", [False, True])
def test_split_programs_with_several_work_items(kernel_device: str,
                                                monkeypatch: pytest.MonkeyPatch, variant: str,
                                                shape: tuple[int, int], dim: int,
                                                in_place: bool) -> None:
    """The split kernels on a grid of 3 programs, so that each takes several work items: on
    CUDA from sm_90 a program of pass 2 reads its first item's last chunk before it waits for
    pass 1, and the others after it. NaN-poisoned output, or in place."""
    monkeypatch.setattr(type(launcher.backend()), "max_grid", 3)
    monkeypatch.setattr(eager, "_calls", {})
    x = (torch.randn(shape) * 3).to(kernel_device)
    x[1] = float("-inf")
    ref = reference(x, dim)
    layout = row_layout(x.shape, dim, x.stride(), x.stride())
    p = launcher.plan(layout, 4, launcher.core_count(0), launcher.device_backend(0), variant)
    assert p.n_splits > 1, p
    y = x if in_place else torch.full_like(x, float("nan"))
    softmax(x, dim, variant=variant, out=y)
    assert_softmax_close(y, ref)


@triton.jit
def _bfloat16_out_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, kernels._out(tl.load(x_ptr + offs, mask=mask), tl.bfloat16),
             mask=mask)


def test_bfloat16_outputs_round_to_nearest_even(kernel_device: str) -> None:
    """``kernels._out``, which every kernel stores its outputs through, rounds float32 to
    bfloat16 to nearest, ties to even, as torch does: random bit patterns (normal numbers,
    infinities, NaN), and ties with an even and an odd kept half. Triton's interpreter alone
    truncates. Subnormals are left out: some devices flush them, below every tolerance."""
    bits = torch.randint(-2**31, 2**31, (1 << 14,), dtype=torch.int64).to(torch.int32)
    bits[:64] = (bits[:64] & ~0xFFFF) | 0x8000  # exact ties
    x = bits.view(torch.float32)
    x = x[x.isnan() | (x.abs() >= torch.finfo(torch.float32).tiny)]
    x = torch.cat([x, torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 1.00390625,
                                    1.01171875, 3.4028235e38])]).to(kernel_device)
    y = torch.empty(x.shape, dtype=torch.bfloat16, device=kernel_device)
    _bfloat16_out_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    want, y = x.cpu().bfloat16(), y.cpu()  # torch's CPU rounding as the reference
    assert torch.equal(y.isnan(), want.isnan())
    same = y.view(torch.int16) == want.view(torch.int16)
    assert bool((same | want.isnan()).all()), x[~same & ~want.isnan()][:8]
