"""Addressing: ``layout.row_layout`` on many stride patterns, ``launcher.plan``'s 64-bit index
decision, and a real launch whose offsets pass 2**31 (cheap on every device: a lazily
allocated storage that the view touches in a few places only)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import triton
from _ref import assert_softmax_close, contiguous_strides, reference
from hypothesis import given, settings
from hypothesis import strategies as st

import npu_softmax
from npu_softmax import launcher
from npu_softmax.backends import AscendBackend, CudaBackend, InterpreterBackend
from npu_softmax.layout import RowLayout, row_layout

INT32_LIMIT = 2**31


def _offsets(shape: list[int], strides: list[int]) -> torch.Tensor:
    """Element offset of every logical index of a view (int64, of ``shape``)."""
    off = torch.zeros(shape, dtype=torch.int64)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        view = [1] * len(shape)
        view[d] = size
        off = off + (torch.arange(size, dtype=torch.int64) * stride).reshape(view)
    return off


def _check_layout(shape: list[int], dim: int, xs: list[int]) -> RowLayout | None:
    """``row_layout`` for ``x`` strides ``xs`` and a contiguous output; when it folds, every
    (row, col) must address the input and output element of one logical index."""
    ys = contiguous_strides(shape)
    layout = row_layout(shape, dim, xs, ys)
    if layout is None:
        return None
    assert layout.n_cols == shape[dim]
    assert layout.n_rows == math.prod(shape) // shape[dim]
    want = torch.stack([_offsets(shape, s).movedim(dim, -1).reshape(-1) for s in (xs, ys)])
    r = torch.arange(layout.n_rows).repeat_interleave(layout.n_cols)
    c = torch.arange(layout.n_cols).repeat(layout.n_rows)
    got = torch.stack([(r // layout.n_inner) * s[0] + (r % layout.n_inner) * s[1] + c * s[2]
                       for s in (layout.x_strides, layout.y_strides)])
    # Same (input offset, output offset) pairs: each output element reads its own input.
    def key(p: torch.Tensor) -> torch.Tensor:
        return p[1] * (int(p[0].max()) + 1) + p[0]
    assert torch.equal(torch.sort(key(got)).values, torch.sort(key(want)).values)
    assert layout.max_offset() == max(int(want[0].max()), int(want[1].max()))
    return layout


@st.composite
def strided(draw: st.DrawFn) -> tuple[list[int], int, list[int]]:
    """A shape, a dim and input strides: permuted, sliced, expanded or arbitrary (overlapping)."""
    rank = draw(st.integers(1, 5))
    shape = [draw(st.integers(1, 5)) for _ in range(rank)]
    dim = draw(st.integers(0, rank - 1))
    kind = draw(st.sampled_from(["permute", "slice", "expand", "arbitrary"]))
    if kind == "arbitrary":
        return shape, dim, [draw(st.integers(0, 40)) for _ in range(rank)]
    perm = draw(st.permutations(range(rank))) if kind == "permute" else list(range(rank))
    steps = [draw(st.integers(1, 3)) if kind == "slice" else 1 for _ in range(rank)]
    base = torch.empty([shape[p] * steps[p] for p in perm]).permute(
        [perm.index(d) for d in range(rank)])
    x = base[tuple(slice(None, None, k) for k in steps)]
    xs = list(x.stride())
    if kind == "expand":
        xs = [0 if draw(st.booleans()) else s for s in xs]
    return shape, dim, xs


@settings(max_examples=400, deadline=None)
@given(strided())
def test_row_layout_addresses_each_element_once(case: tuple[list[int], int, list[int]]) -> None:
    """Whenever row_layout folds a view, its rows read exactly the view's elements."""
    _check_layout(*case)


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 3, 4, 5), (1, 3, 1, 4, 1)])
def test_row_layout_folds_contiguous_and_transposed(shape: tuple[int, ...]) -> None:
    """Contiguous tensors never need the copy, nor do transposed ones of rank <= 3 (at most
    two dims besides the normalised one: always an (outer, inner) pair)."""
    for dim in range(len(shape)):
        assert _check_layout(list(shape), dim, contiguous_strides(list(shape))) is not None
        swaps = itertools.combinations(range(len(shape)), 2) if len(shape) <= 3 else []
        for a, b in swaps:
            t = torch.empty([shape[b] if d == a else shape[a] if d == b else s
                             for d, s in enumerate(shape)]).transpose(a, b)
            assert _check_layout(list(shape), dim, list(t.stride())) is not None


def test_row_layout_permuted_4d_is_the_copy_case() -> None:
    """Three non-normalised dims in a foreign order fold to no (outer, inner) pair: None."""
    t = torch.empty(2, 3, 4, 5).permute(2, 0, 3, 1)  # shape (4, 2, 5, 3)
    assert row_layout(list(t.shape), 3, list(t.stride()),
                      contiguous_strides(list(t.shape))) is None


BACKENDS = [InterpreterBackend(), CudaBackend("cuda"), CudaBackend("hip"),
            AscendBackend("Ascend910B3")]


def _layout(shape: tuple[int, int], strides: tuple[int, int]) -> RowLayout:
    rows, cols = shape
    return RowLayout(rows, cols, 1, (strides[0], 0, strides[1]), (cols, 0, 1))


def _plan(layout: RowLayout, itemsize: int, be: object,
          variant: str | None) -> launcher.Plan | None:
    """``launcher.plan`` on 132 cores, or None where it refuses, as it must, a forced ``tile``
    whose rows do not fit the target's one block."""
    limit = be.for_layout(layout, itemsize).tile_elems(itemsize)  # Ascend: smaller if strided
    if variant == "tile" and triton.next_power_of_2(layout.n_cols) > limit:
        with pytest.raises(ValueError, match="variant='tile'"):
            launcher.plan(layout, itemsize, 132, be, variant)
        return None
    return launcher.plan(layout, itemsize, 132, be, variant)


@pytest.mark.parametrize("be", BACKENDS, ids=lambda b: f"{b.name}")
@pytest.mark.parametrize("variant", [None, "tile", "online", "split"])
@pytest.mark.parametrize("itemsize", [2, 4])
def test_plan_index_64_boundary(be: object, variant: str | None, itemsize: int) -> None:
    """int32 offsets up to just under 2**31 elements, int64 from the first one past it."""
    # 65535 x 32768 = 2**31 - 2**15 elements: every offset fits int32 with room for a block.
    for layout in (_layout((65535, 32768), (32768, 1)), _layout((1000, 1000), (1000, 1))):
        p = _plan(layout, itemsize, be, variant)
        assert p is None or not p.index_64, layout
    # 65537 x 32775 > 2**31 elements: the last rows start past 2**31.
    big = [
        _layout((65537, 32775), (32775, 1)),  # contiguous
        _layout((65537, 32775), (1, 65537)),  # transposed: a row's elements 65537 apart
        _layout((3, 100), (2**30, 1)),  # few elements, rows 2**30 apart
        _layout((2, 3), (1, 2**30)),  # one row's last element at 2**31
    ]
    for layout in big:
        assert layout.max_offset() >= INT32_LIMIT
        p = _plan(layout, itemsize, be, variant)
        assert p is None or p.index_64, layout


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(1, 2**20), cols=st.integers(1, 2**20), transposed=st.booleans(),
       gap=st.integers(0, 2**12), be=st.sampled_from(BACKENDS),
       variant=st.sampled_from([None, "tile", "online", "split"]), itemsize=st.sampled_from([2, 4]))
def test_plan_int32_only_when_every_offset_fits(rows: int, cols: int, transposed: bool,
                                                gap: int, be: object, variant: str | None,
                                                itemsize: int) -> None:
    """int32 indexing is chosen only when element offsets and work-item indices (plus a block
    of slack for masked lanes) stay below 2**31."""
    strides = (1, rows + gap) if transposed else (cols + gap, 1)
    layout = _layout((rows, cols), strides)
    p = _plan(layout, itemsize, be, variant)
    if p is None:
        return
    if not p.index_64:
        assert layout.max_offset() + p.block_m * p.block_n * p.n_splits < INT32_LIMIT
        assert 2 * layout.n_rows * p.n_splits < INT32_LIMIT
    if layout.max_offset() >= INT32_LIMIT:
        assert p.index_64


def _sparse_storage(device: str, n: int, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised ``n``-element storage; on the CPU its pages stay virtual until written."""
    try:
        return torch.empty(n, dtype=dtype, device=device)
    except (RuntimeError, MemoryError) as e:  # torch.OutOfMemoryError is a RuntimeError
        pytest.skip(f"cannot allocate {n} elements on {device}: {e}")


@pytest.mark.parametrize("variant", ["tile", "online", "split"])
def test_offsets_past_int32_run_with_int64(kernel_device: str, variant: str) -> None:
    """Rows 2**30 elements apart in a 4 GiB storage: the last ones start past 2**31; and rows
    whose own elements are 2**30 apart. Only a few pages are touched (cheap on the CPU)."""
    store = _sparse_storage(kernel_device, INT32_LIMIT + 4096, torch.float16)
    for shape, strides in (((3, 100), (2**30, 1)), ((5, 3), (1, 2**30))):
        x = store.as_strided(shape, strides)
        x.copy_(torch.randn(shape).to(torch.float16))
        before = set(launcher.kernels)
        y = npu_softmax.softmax(x, -1, variant=variant)
        assert_softmax_close(y, reference(x, -1), f"{shape} {strides}")
        used = set(launcher.kernels) - before or set(launcher.kernels)
        assert any(k[0].variant == variant and k[0].index_64 for k in used)
