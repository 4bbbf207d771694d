"""Correctness of ``npu_softmax.softmax`` against ``torch.softmax`` in float64, on every device."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from _ref import (
    LANES_ON_ASCEND,
    assert_close,
    assert_softmax_close,
    check_tile_refusal,
    reference,
    reference_grad,
)

import npu_softmax
from npu_softmax import eager, launcher
from npu_softmax.checks import supported_dtypes
from npu_softmax.layout import row_layout

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def _dtypes(device: str) -> list[torch.dtype]:
    return [d for d in DTYPES if d in supported_dtypes(torch.device(device))]


@pytest.mark.parametrize("shape", [(1823, 781), (1, 1), (7, 13), (131, 257), (3, 1021), (509,)])
def test_irregular_shapes_every_dtype(device: str, shape: tuple[int, ...]) -> None:
    for dtype in _dtypes(device):
        x = torch.randn(shape, device=device).mul(3).to(dtype)
        y = npu_softmax.softmax(x, -1)
        assert y.shape == x.shape and y.dtype == dtype and y.device == x.device
        assert y.is_contiguous()
        assert_softmax_close(y, reference(x, -1))


@pytest.mark.parametrize("dim", [-4, -3, -2, -1, 0, 1, 2, 3])
def test_every_dim_of_4d(device: str, dim: int) -> None:
    x = torch.randn(3, 5, 7, 11, device=device)
    assert_softmax_close(npu_softmax.softmax(x, dim), reference(x, dim))


@pytest.mark.parametrize("view", ["transpose", "step_slice", "expand", "permute", "narrow_cols"])
def test_strided_inputs(device: str, view: str) -> None:
    base = torch.randn(37, 45, 29, device=device)
    x = {
        "transpose": base[:, :, 0].t(),
        "step_slice": base[::3, 5:, ::2],
        "expand": base[:1, :1, :].expand(6, 45, 29),
        "permute": base.permute(2, 0, 1),
        "narrow_cols": base[:, 3:40, :].transpose(1, 2),
    }[view]
    for dim in range(x.dim()):
        y = npu_softmax.softmax(x, dim)
        assert y.is_contiguous()
        assert_softmax_close(y, reference(x, dim))


def test_zero_dim_and_single_column(device: str) -> None:
    s = torch.tensor(2.5, device=device)
    for dim in (0, -1):
        assert_softmax_close(npu_softmax.softmax(s, dim), reference(s, dim))
    x = torch.randn(19, 1, device=device)
    assert_softmax_close(npu_softmax.softmax(x, -1), reference(x, -1))
    assert_softmax_close(npu_softmax.softmax(x, 0), reference(x, 0))


@pytest.mark.parametrize("shape,dim", [((0, 5), -1), ((5, 0), -1), ((5, 0), 0), ((0,), 0),
                                       ((2, 0, 3), 2)])
def test_empty(device: str, shape: tuple[int, ...], dim: int) -> None:
    x = torch.randn(shape, device=device)
    y = npu_softmax.softmax(x, dim)
    assert y.shape == x.shape and y.dtype == x.dtype and y.numel() == 0


def test_dtype_argument(device: str) -> None:
    x16 = torch.randn(53, 300, device=device, dtype=torch.float16)
    y = npu_softmax.softmax(x16, -1, dtype=torch.float32)
    assert y.dtype == torch.float32
    assert_softmax_close(y, reference(x16, -1, dtype=torch.float32))
    # Narrowing: the input is rounded to the output dtype first, as torch.softmax does.
    x32 = torch.randn(53, 300, device=device) * 8
    y = npu_softmax.softmax(x32, -1, dtype=torch.bfloat16)
    assert y.dtype == torch.bfloat16
    assert_softmax_close(y, reference(x32, -1, dtype=torch.bfloat16))
    # Integer input is accepted with a floating dtype=, as by torch.softmax.
    xi = torch.randint(-5, 5, (17, 33), device=device)
    y = npu_softmax.softmax(xi, 1, dtype=torch.float32)
    assert_softmax_close(y, reference(xi, 1, dtype=torch.float32))


def test_torch_argument_names(device: str) -> None:
    # Code written for torch.softmax / torch.nn.Softmax names its arguments as torch does.
    x = torch.randn(29, 301, device=device)
    x16 = x.half()  # dtype= widens it on every device (float64 is not served on Ascend)
    ref = reference(x16, 0, dtype=torch.float32)
    assert_softmax_close(npu_softmax.softmax(input=x16, dim=0, dtype=torch.float32), ref)
    assert_close(npu_softmax.log_softmax(input=x, dim=1), reference(x, 1, log=True), x.dtype)
    assert_softmax_close(npu_softmax.Softmax(dim=1)(input=x), reference(x, 1))
    assert_close(npu_softmax.LogSoftmax(dim=0)(input=x), reference(x, 0, log=True), x.dtype)
    y = x.clone()
    assert npu_softmax.softmax_(input=y, dim=1) is y
    assert_softmax_close(y, reference(x, 1))
    y = x.clone()
    assert npu_softmax.log_softmax_(input=y, dim=0) is y
    assert_close(y, reference(x, 0, log=True), x.dtype)


def _special_rows(device: str, n_cols: int) -> torch.Tensor:
    x = torch.randn(8, n_cols, device=device)
    inf = float("inf")
    x[0] = -inf  # all -inf: NaN, as torch
    x[1, ::3] = -inf  # some -inf: zeros there
    x[2, 5] = inf  # one +inf
    x[3, 7] = float("nan")  # one NaN
    x[4, -1] = inf
    x[4, 0] = -inf
    x[5, : n_cols // 2] = -inf  # a leading run of -inf longer than a chunk in looped kernels
    x[6] = 1e30  # huge equal values
    x[7] = -1e30
    return x


@pytest.mark.parametrize("variant", [None, "tile", "online", "split"])
def test_nan_and_inf_rows_match_torch(device: str, variant: str | None) -> None:
    for n_cols in (11, 3001):
        x = _special_rows(device, n_cols)
        for dtype in _dtypes(device):
            xd = x.to(dtype)
            y = npu_softmax.softmax(xd, -1, variant=variant if launcher.serves(xd.device) else None)
            expected = torch.softmax(xd.cpu().double(), -1)
            assert_softmax_close(y, expected)


@pytest.mark.parametrize("variant", ["tile", "online", "split"])
@pytest.mark.parametrize("shape,dim", [((5, 3001), -1), ((3, 2100, 4), 1), ((1, 9000), -1),
                                       ((6, 3, 5), 0)])
def test_each_variant_writes_every_element(kernel_device: str, variant: str,
                                           shape: tuple[int, ...], dim: int) -> None:
    """Each kernel variant, forced, into an output poisoned with NaN."""
    for dtype in _dtypes(kernel_device):
        x = torch.randn(shape, device=kernel_device).mul(4).to(dtype)
        y = torch.full(x.shape, float("nan"), device=kernel_device, dtype=dtype)
        layout = row_layout(x.shape, dim % x.dim(), x.stride(), y.stride())
        try:
            used = launcher.launch_softmax(x, y, layout, variant)
        except ValueError as e:
            check_tile_refusal(e, shape[dim])
            continue
        assert used.plan.variant == variant
        assert_softmax_close(y, reference(x, dim))


def test_rows_longer_than_a_tile(kernel_device: str) -> None:
    """The launcher's own choice for rows past the tile, many and few of them."""
    be = launcher.backend()
    n_cols = be.tile_elems(4) + 1234
    cores = launcher.core_count(torch.device(kernel_device).index or 0)
    for n_rows in (1, cores + 1):
        x = torch.randn(n_rows, n_cols, device=kernel_device)
        assert_softmax_close(npu_softmax.softmax(x, -1), reference(x, -1))


@pytest.mark.parametrize("n_cols", [9000, 9001, 10001, 12345, 16383, 17001, 18432, 20001,
                                    22528, 24001, 32000])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_long_rows_as_planned(kernel_device: str, n_cols: int, dtype: torch.dtype) -> None:
    """Rows of 9000-32000 elements, 16-byte aligned (9000, 18432, 22528, 32000) or not, more of
    them than cores, by the target's own plan (on CUDA, 2-byte rows: a head and a tail on 8 or
    4 warps, one block of 16384 held as loaded, online chunks of 8192 on 8 warps or of 16384,
    and on GPUs of fast memory online chunks of 4096 on 4 warps for rows of 8705-10240, or of
    8705-15360 on those of the fastest memory; float32 rows: one block, but past 16384
    elements, on GPUs of fast memory, online chunks of 8192 or 16384 on 16 warps), into an
    output poisoned with NaN."""
    cores = launcher.core_count(torch.device(kernel_device).index or 0)
    x = torch.randn(cores + 3, n_cols, device=kernel_device).mul(3).to(dtype)
    y = torch.full_like(x, float("nan"))
    npu_softmax.softmax(x, -1, out=y)
    assert_softmax_close(y, reference(x, -1))


def _check_into_poisoned(x: torch.Tensor, log: bool, temperature: float = 1.0,
                         variant: str | None = None) -> None:
    """npu_softmax's softmax of ``x / temperature`` over its last dim (log_softmax with
    ``log``; the launcher's plan, or ``variant``) into an output poisoned with NaN, against
    float64."""
    y = torch.full_like(x, float("nan"))
    if log:
        npu_softmax.log_softmax(x, -1, temperature=temperature, variant=variant, out=y)
        assert_close(y, reference(x, -1, log=True, temperature=temperature), x.dtype)
    else:
        npu_softmax.softmax(x, -1, temperature=temperature, variant=variant, out=y)
        assert_softmax_close(y, reference(x, -1, temperature=temperature))


@pytest.mark.parametrize("dtype,n_cols", [
    *((torch.float32, n) for n in (33, 47, 63, 65, 95, 97, 127, 129, 169, 171, 241, 255, 257,
                                   290, 318)),
    *((torch.bfloat16, n) for n in (33, 63, 66, 100, 127, 129)), (torch.float16, 65)])
@pytest.mark.parametrize("log", [False, True])
def test_short_unaligned_rows_as_planned(kernel_device: str, dtype: torch.dtype, n_cols: int,
                                         log: bool) -> None:
    """Rows that are not 16-byte aligned, just past a power of two and below the next, enough of
    them for full tiles, by the target's own plan (on CUDA, in the forward: float32 rows of odd
    length in one-warp tiles of 8 rows for 33-63 elements and of 4 rows for 65-95 and 129-169,
    on GPUs of fast memory also 171-241, and 33-47 and 65-127 8 to a tile read from their
    aligned bodies; two-warp tiles of 2 rows for 257-319 (even ones too), of 1024 elements on 4
    warps for the others; 2-byte rows 8 to a one-warp tile for 33-64 elements, 4 for 65-128
    (read from their bodies on GPUs of fast memory), 2 warps for tiles of longer ones), into an
    output poisoned with NaN."""
    cores = launcher.core_count(torch.device(kernel_device).index or 0)
    x = torch.randn(64 * cores + 5, n_cols, device=kernel_device).mul(3).to(dtype)
    _check_into_poisoned(x, log)


@pytest.mark.parametrize("n_cols", [520, 1000, 1024])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("log", [False, True])
def test_aligned_rows_of_513_1024_as_planned(kernel_device: str, n_cols: int,
                                             dtype: torch.dtype, log: bool) -> None:
    """16-byte aligned rows of 513-1024 elements, more of them than 8 a core and fewer than
    the cores, by the target's own plan (on CUDA, float32 rows in the forward: tiles of 1-4
    rows on 4 warps, on GPUs of fast memory one row a program on 2 warps), into an output
    poisoned with NaN."""
    cores = launcher.core_count(torch.device(kernel_device).index or 0)
    for n_rows in (8 * cores + 5, max(1, cores - 1)):
        x = torch.randn(n_rows, n_cols, device=kernel_device).mul(3).to(dtype)
        _check_into_poisoned(x, log)


@pytest.mark.parametrize("n_cols", [16401, 20000])
def test_many_float32_rows_with_a_last_chunk(kernel_device: str, n_cols: int) -> None:
    """1030 float32 rows of 16400-20480 elements, 16-byte aligned (20000) or not, by the
    target's own plan (on CUDA GPUs of fast memory, online chunks of 8192 and a last chunk on
    8 warps from 1024 rows), softmax and log_softmax into outputs poisoned with NaN."""
    x = torch.randn(1030, n_cols, device=kernel_device).mul(3)
    _check_into_poisoned(x, log=False)
    _check_into_poisoned(x, log=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("log", [False, True])
def test_few_long_rows_in_ranges_of_several_chunks(kernel_device: str, dtype: torch.dtype,
                                                   log: bool) -> None:
    """Few rows long enough that each program sharing a row covers more than 4096 of its
    elements (2 rows of 2**20 + 5, half as many rows as cores of 70001), by the target's own
    plan (on CUDA GPUs of fast memory, the split variant in chunks of 8192), into an output
    poisoned with NaN."""
    cores = launcher.core_count(torch.device(kernel_device).index or 0)
    for n_rows, n_cols in ((2, (1 << 20) + 5), (max(1, cores // 2), 70001)):
        x = torch.randn(n_rows, n_cols, device=kernel_device).mul(3).to(dtype)
        _check_into_poisoned(x, log)


@pytest.mark.parametrize("variant", ["online", "split"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("log", [False, True])
def test_looped_two_byte_rows_far_from_zero(kernel_device: str, variant: str,
                                            dtype: torch.dtype, log: bool) -> None:
    """The looped variants take a 2-byte row's sum off inside the exponent (``_finish``'s
    FOLD, ``exp2(t * log2(e) - log2(sum))``): rows of 70001 elements, one of equal logits far
    from 0 (every probability 1/70001, the largest sum), one of spread 40 around 200, one of 71
    logits among -inf, one of spread 3, at a temperature of 0.7, into outputs poisoned with
    NaN."""
    x = torch.randn(4, 70001).mul(40).add(200)
    x[0] = 250.0
    x[2] = float("-inf")
    x[2, ::1000] = torch.randn(71) * 3
    x[3] = torch.randn(70001) * 3
    _check_into_poisoned(x.to(dtype).to(kernel_device), log, temperature=0.7, variant=variant)


@pytest.mark.parametrize("n_cols", [20001, 32000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_few_rows_that_fit_a_tile(kernel_device: str, n_cols: int, dtype: torch.dtype) -> None:
    """Fewer rows than cores of 20001 and 32000 elements (logits of a sampling batch), by the
    target's own plan (on CUDA the split variant where they are at most 4/5 as many as SMs, one
    block a row above that), into an output poisoned with NaN."""
    cores = launcher.core_count(torch.device(kernel_device).index or 0)
    for n_rows in sorted({1, max(1, cores // 2), max(1, cores - 1)}):
        x = torch.randn(n_rows, n_cols, device=kernel_device).mul(3).to(dtype)
        y = torch.full_like(x, float("nan"))
        npu_softmax.softmax(x, -1, out=y)
        assert_softmax_close(y, reference(x, -1))


@pytest.fixture
def fresh_plans() -> Iterator[None]:
    """Plans made under a patched backend rule stay out of the plan cache of later tests."""
    launcher._plan.cache_clear()
    yield
    launcher._plan.cache_clear()


@pytest.mark.parametrize("last,lanes", [(None, None), (64, 0), (64, 16), (512, 0), (2048, 512)])
@pytest.mark.parametrize("rest", [3, 17, 700, 1500])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_online_last_chunks(kernel_device: str, monkeypatch: pytest.MonkeyPatch,
                            fresh_plans: None, last: int | None, lanes: int | None, rest: int,
                            dtype: torch.dtype) -> None:
    """Rows of whole chunks of the online kernel and ``rest`` elements more: what is left
    after the whole chunks is read in chunks of ``last`` (None: the target's own rule,
    ``Backend.last_chunk``), one or many of them, with one running max and sum or one per
    lane (``Backend.stat_lanes``). A bfloat16 row 3 past whole chunks has an aligned body
    short of them where it starts 4-7 elements past a 16-byte boundary, so the rest is nearly
    a chunk. softmax and log_softmax, into outputs poisoned with NaN."""
    if lanes and kernel_device == "npu":
        pytest.skip(LANES_ON_ASCEND)
    be = launcher.backend()
    if last is not None:
        monkeypatch.setattr(type(be), "last_chunk", lambda self, n_cols, block_n: last)
        monkeypatch.setattr(type(be), "stat_lanes", lambda self, plan, itemsize: lanes)
    monkeypatch.setattr(eager, "_calls", {})
    chunk = be.chunk_elems(dtype.itemsize, "online", 2**20)
    x = torch.randn(6, 2 * chunk + rest, device=kernel_device).mul(3).to(dtype)
    x[1, -1] = 60.0  # the row's max in its last chunk
    x[2, -rest:] = float("-inf")
    x[3, 5] = float("nan")
    y = torch.full_like(x, float("nan"))
    used = launcher.launch_softmax(x, y, row_layout(x.shape, 1, x.stride(), y.stride()),
                                   "online")
    expected = be.last_chunk(x.shape[1], used.plan.block_n) if last is None else last
    assert used.plan.last_n == expected
    assert_softmax_close(y, reference(x, -1))
    logp = torch.full_like(x, float("nan"))
    npu_softmax.log_softmax(x, -1, variant="online", out=logp)
    assert_close(logp, reference(x, -1, log=True), dtype)


@pytest.mark.parametrize("variant", [None, "split", "cols"])
def test_calls_on_a_side_stream(kernel_device: str, variant: str | None) -> None:
    """On a stream that is not the default one, every launch (first call and kept, forward,
    backward, out=) goes on that stream: the stream holds the input's write back behind a sleep,
    so a kernel started on another stream would read it before it is written."""
    module = getattr(torch, kernel_device, None)
    if module is None or not hasattr(module, "_sleep") or not hasattr(module, "Stream"):
        pytest.skip(f"no streams or no device sleep for {kernel_device}")
    src = torch.randn(37, 3001, device=kernel_device)
    dy = torch.randn_like(src)
    dim = 0 if variant == "cols" else 1
    side = module.Stream()
    side.wait_stream(module.current_stream())
    results = []
    with module.stream(side):
        for _ in range(2):  # the first call plans, the second repeats the kept launch
            x = torch.full_like(src, float("nan"))
            module._sleep(20_000_000)  # about 10 ms of this stream's time before the write
            x.copy_(src)
            xg = x.clone().requires_grad_()
            y = npu_softmax.softmax(xg, dim, variant=variant)
            (dx,) = torch.autograd.grad(y, xg, dy)
            out = torch.full_like(src, float("nan"))
            npu_softmax.log_softmax(x, dim, variant=variant, out=out)
            results.append((npu_softmax.softmax(x, dim, variant=variant), dx, out))
    side.synchronize()
    for probs, dx, out in results:
        assert_softmax_close(probs, reference(src, dim))
        assert_close(dx, reference_grad(torch.softmax, src, dy, dim), torch.float32)
        assert_close(out, reference(src, dim, log=True), torch.float32)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_two_byte_inputs_with_a_temperature(device: str, dtype: torch.dtype, dim: int) -> None:
    """2-byte inputs at a temperature over each dim: softmax, log_softmax and the gradient, on
    every device, the CPU's torch fallback next to a GPU or NPU included, whose arithmetic is
    the kernels' (``x / temperature`` in bfloat16 alone puts the probabilities 8.8% off)."""
    x = (torch.randn(5, 37, 40) * 3).to(dtype).to(device).requires_grad_()
    y = npu_softmax.softmax(x, dim, temperature=0.7)
    assert_softmax_close(y, reference(x, dim, temperature=0.7))
    log_y = npu_softmax.log_softmax(x, dim, temperature=0.7)
    assert_close(log_y, reference(x, dim, log=True, temperature=0.7), dtype)
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    assert_close(dx, reference_grad(torch.softmax, x, dy, dim, 0.7), dtype)


def test_long_float32_columns_within_the_float32_tolerance(device: str) -> None:
    """Long float32 rows over dim 0 on every device, the CPU's torch fallback next to a GPU or
    NPU included: torch's own float32 CPU softmax sums such a row one term after another, and
    for this shape came out up to 5e-5 off (rtol 1e-5); the fallback computes float32 results
    in float64. (``online`` rather than the launcher's ``cols``: a fifth of the interpreter's
    time.)"""
    x = (torch.randn(16384, 2) * 4).to(device).requires_grad_()
    y = npu_softmax.softmax(x, 0, variant="online")
    assert_softmax_close(y, reference(x, 0))
    log_y = npu_softmax.log_softmax(x, 0, variant="online")
    assert_close(log_y, reference(x, 0, log=True), torch.float32)
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    assert_close(dx, reference_grad(torch.softmax, x, dy, 0), torch.float32)
