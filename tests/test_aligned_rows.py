"""Rows that are whole 16-byte vectors although their length is not a multiple of 16 (200 float32
or 1000 bfloat16 elements), or whole runs of 2 or 4 elements (100 bfloat16, 50 or 4098 float32
elements), which the kernels are told (``ALIGN``), on every device and variant: contiguous,
column slices whose row strides are whole vectors or not, rows with an inner dim, outputs of
other strides, misaligned storage, in place, and the backward, each checked against float64
(outputs NaN-poisoned where the test gives them)."""

from __future__ import annotations

import pytest
import torch
from _ref import VARIANTS, assert_close, assert_softmax_close, reference

import npu_softmax
from npu_softmax import launcher
from npu_softmax.checks import supported_dtypes
from npu_softmax.layout import row_layout

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64]


def _data(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    return (torch.randn(shape, device=device) * 4).to(dtype)


def _check(x: torch.Tensor, variant: str | None, msg: str, dim: int = -1) -> None:
    """softmax of ``x`` into a fresh output, and log_softmax into a NaN-poisoned one."""
    assert_softmax_close(npu_softmax.softmax(x, dim, variant=variant), reference(x, dim), msg)
    out = torch.full_like(x, float("nan"))
    npu_softmax.log_softmax(x, dim, variant=variant, out=out)
    assert_close(out, reference(x, dim, log=True), x.dtype)


# Few rows: each still meets every row alignment its length gives (rows of 100 bfloat16
# elements start 16-byte aligned every fourth row), and the interpreter's 4 programs loop.
# The ``cols`` kernels take no row alignment (their runs are along the inner dim), so the rows
# of 1000 and fewer cover them; the long rows are for the row kernels' aligned bodies (and
# 2-byte rows of 1064, one to a two-warp program on GPUs of fast memory).
SHAPES = [(9, 200), (6, 1000), (4, 1064), (3, 4104), (11, 100), (5, 4098)]


@pytest.mark.parametrize("variant,rows,cols", [(v, r, c) for v in VARIANTS for r, c in SHAPES
                                               if v != "cols" or c <= 1000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_of_whole_vectors(kernel_device: str, variant: str | None, dtype: torch.dtype,
                               rows: int, cols: int) -> None:
    if dtype not in supported_dtypes(torch.device(kernel_device)):
        pytest.skip(f"{dtype} is not supported on {kernel_device}")
    _check(_data((rows, cols), dtype, kernel_device), variant, "contiguous")
    # Column slices, into slices of the same shape: rows 8 more elements apart (whole vectors)
    # or 2 more (not), and rows one element short of whole vectors, whole vectors apart.
    for width, n in ((cols + 8, cols), (cols + 2, cols), (cols + 8, cols - 1)):
        x = _data((rows, width), dtype, kernel_device)[:, :n]
        _check(x, variant, f"{n} columns of {width}")
        out = torch.full((rows, width), float("nan"), dtype=dtype, device=kernel_device)[:, :n]
        npu_softmax.softmax(x, -1, variant=variant, out=out)
        assert_softmax_close(out, reference(x, -1), f"{n} columns of {width}, out= alike")
    # An inner dim: rows (i, j) at i * 10 * (cols + 8) + j * (cols + 8).
    deep = _data((4, 10, cols + 8), dtype, kernel_device)
    _check(deep[:, :5, :cols], variant, "inner dim")
    # From contiguous rows into outputs whose rows are whole vectors apart and not, and from
    # misaligned storage.
    x = _data((rows, cols), dtype, kernel_device)
    for extra in (8, 2):
        out = torch.full((rows, cols + extra), float("nan"), dtype=dtype,
                         device=kernel_device)[:, :cols]
        npu_softmax.softmax(x, -1, variant=variant, out=out)
        assert_softmax_close(out, reference(x, -1), f"output rows {cols + extra} apart")
    flat = _data((rows * cols + 1,), dtype, kernel_device)
    _check(flat[1:].view(rows, cols), variant, "storage one element past a vector")
    ref = reference(x, -1)
    npu_softmax.softmax_(x, -1, variant=variant)
    assert_softmax_close(x, ref, "in place")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("cols", [200, 100, 50])
def test_gradient_of_rows_of_whole_vectors(kernel_device: str, variant: str | None,
                                           dtype: torch.dtype, cols: int) -> None:
    x = _data((37, cols), dtype, kernel_device).requires_grad_()
    dy = _data((37, cols + 8), dtype, kernel_device)[:, :cols]
    y = npu_softmax.softmax(x, -1, variant=variant)
    y.backward(dy)
    assert_softmax_close(y, reference(x, -1), "forward")
    # dx is checked against the float64 backward of the ``y`` it was given, and ``y`` against
    # the float64 softmax above. Against the exact gradient, dx would also carry y's error: with
    # 4-sigma logits one element of a row is near 1, and a float32 sum of up to ``cols`` terms
    # taken one after another (the ``cols`` kernel's whole form under the interpreter, as
    # torch's CPU softmax over a non-last dim) can be ~20 ulps off; that error times
    # ``y * dot`` went past three roundings once in a clean-clone CI run (2026-11-27).
    y64, dy64 = y.detach().cpu().double(), dy.cpu().double()
    assert_close(x.grad, y64 * (dy64 - (dy64 * y64).sum(-1, keepdim=True)), dtype, scale=3)


@pytest.mark.parametrize("cols", [1000, 50304])
def test_bfloat16_rows_read_as_words_only_from_4_byte_aligned_inputs(
        kernel_device: str, monkeypatch: pytest.MonkeyPatch, cols: int) -> None:
    """The online kernel's second pass reads bfloat16 rows of whole 4-byte words (an even
    length and even row strides) as words where the target asks for it (``Backend.word_reads``:
    the interpreter always, CUDA on plans of 16 warps and more). A call whose input is not
    4-byte aligned runs the binary compiled without them (on a GPU a word load from it would
    fault). Inputs at each element offset, into NaN-poisoned outputs, against float64."""
    rows = 3
    layout = row_layout((rows, cols), 1, (cols, 1), (cols, 1))
    launch = launcher.prepare_softmax(torch.bfloat16, torch.bfloat16,
                                      torch.device(kernel_device), layout, "online")
    asked = launch.steps[0].constexprs["WORDS"]
    if kernel_device == "cpu":
        assert asked
    seen: list[bool] = []
    launch_through_triton = launcher._launch

    def recording(key: tuple, kernel: object, n_items: int, args: tuple,
                  constexprs: dict, *rest: object) -> object:
        seen.append(constexprs["WORDS"])
        return launch_through_triton(key, kernel, n_items, args, constexprs, *rest)

    monkeypatch.setattr(launcher, "_launch", recording)
    flat = _data((rows * cols + 4,), torch.bfloat16, kernel_device)
    for offset in range(4):
        x = flat[offset:offset + rows * cols].view(rows, cols)
        y = torch.full_like(x, float("nan"))
        seen.clear()
        launch(x, y)
        assert_softmax_close(y, reference(x, -1), f"input {offset} elements in")
        # (A CUDA call whose pointers are 16-byte aligned may start past Triton, unseen.)
        assert seen in ([], [asked and x.data_ptr() % 4 == 0])


@pytest.mark.parametrize("cols", [999, 4097])
def test_bfloat16_rows_of_an_odd_length_are_not_read_as_words(kernel_device: str,
                                                              cols: int) -> None:
    """Rows of an odd length at even row strides (a column slice of wider rows) start 4-byte
    aligned but end in half a word: read whole by the online kernel (into a transposed
    output, whose strided rows take no window), their last element is not lost to the
    second pass's word reads (``RowLayout.word_rows``). NaN-poisoned output, against
    float64."""
    x = _data((5, cols + 1), torch.bfloat16, kernel_device)[:, :cols]
    out = torch.full((cols, 5), float("nan"), dtype=torch.bfloat16, device=kernel_device).t()
    npu_softmax.softmax(x, -1, variant="online", out=out)
    assert_softmax_close(out, reference(x, -1))
