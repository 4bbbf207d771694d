"""The ``cols`` variant: softmax over a dim that is not the last (rows interleaved in memory),
and over the last dim of a transposed input, against torch in float64.

Each case is planned with small column tiles and chunks and four cores on every device, so that
the three forms of ``kernels_cols`` (whole rows, looped rows, split rows) all run on small
tensors; NaN-poisoned outputs, log-softmax, a temperature, the gradient and in-place calls.
"""

from __future__ import annotations

import pytest
import torch
from _ref import (
    DTYPES,
    assert_close,
    assert_softmax_close,
    contiguous_strides,
    reference,
    reference_grad,
)

import npu_softmax
from npu_softmax import eager, launcher
from npu_softmax.backends import AscendBackend, CudaBackend, InterpreterBackend
from npu_softmax.layout import RowLayout, row_layout

#: (shape, dim, transposed, form): ``transposed`` takes ``randn(shape).t()``; ``form`` is what
#: the small sizes below plan: "whole", "looped" or "split".
CASES = [
    ((3, 7, 40), 1, False, "whole"),
    ((2, 3, 50, 5), 2, False, "whole"),
    ((50, 33), -1, True, "whole"),
    ((70, 80), 0, False, "looped"),
    ((9, 70, 9), 1, False, "looped"),
    ((300, 6), 0, False, "split"),
    ((200, 40), -1, True, "split"),
]


@pytest.fixture
def four_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans for 4 cores, from fresh plan and call caches."""
    monkeypatch.setattr(launcher, "core_count", lambda device_index: 4)
    monkeypatch.setattr(eager, "_calls", {})
    launcher._plan.cache_clear()
    yield
    launcher._plan.cache_clear()


@pytest.fixture
def small_columns(four_cores: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Column tiles of 256 elements, chunks of 64 (whole-row chunks too), groups of at least 4
    rows, 4 cores."""
    be = type(launcher.backend())
    monkeypatch.setattr(be, "column_tile_elems", lambda self, itemsize, lanes: 256)
    monkeypatch.setattr(be, "column_chunk_elems", lambda self, itemsize, lanes: 64)
    monkeypatch.setattr(be, "column_holds_whole",
                        lambda self, itemsize, lanes, cols, split, groups, n_cores, n_cols:
                        lanes * cols <= 64)
    monkeypatch.setattr(be, "column_lanes", lambda self, itemsize: 4)


def _form(p: launcher.Plan, n_cols: int) -> str:
    return "split" if p.n_splits > 1 else "whole" if p.block_n >= n_cols else "looped"


def _input(shape: tuple[int, ...], transposed: bool, dtype: torch.dtype,
           device: str) -> torch.Tensor:
    x = (torch.randn(shape) * 3).to(dtype).to(device)
    return x.t() if transposed else x


def _check_gradient(x: torch.Tensor, dim: int) -> None:
    # The gradient of softmax over ``dim`` for a random upstream gradient, against float64.
    x = x.detach().requires_grad_()
    dy = torch.randn(x.shape).to(x.dtype).to(x.device)
    (dx,) = torch.autograd.grad(npu_softmax.softmax(x, dim), x, dy)
    assert_close(dx, reference_grad(torch.softmax, x, dy, dim), x.dtype, scale=4.0)


@pytest.mark.parametrize("variant", [None, "cols"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-dim{c[1]}{'T' * c[2]}")
def test_columns_match_float64(kernel_device: str, small_columns: None, case: tuple,
                               dtype: torch.dtype, variant: str | None) -> None:
    shape, dim, transposed, form = case
    if dtype == torch.float64 and kernel_device == "npu":
        pytest.skip("no float64 on Ascend")
    x = _input(shape, transposed, dtype, kernel_device)
    # Poisoned outputs, so an element no program writes fails.
    y = torch.full(x.shape, float("nan"), dtype=dtype, device=kernel_device)
    npu_softmax.softmax(x, dim, temperature=0.7, variant=variant, out=y)
    layout = row_layout(x.shape, dim % x.dim(), x.stride(), y.stride())
    p = launcher.plan(layout, x.element_size(), 4, launcher.backend(), variant)
    assert p.variant == "cols" and _form(p, x.shape[dim]) == form, p
    assert_softmax_close(y, reference(x, dim, temperature=0.7), f"{case} {dtype}")
    logs = torch.full(x.shape, float("nan"), dtype=dtype, device=kernel_device)
    npu_softmax.log_softmax(x, dim, variant=variant, out=logs)
    assert_close(logs, reference(x, dim, log=True), dtype)
    # Fresh output (contiguous, so a transposed input's output is laid out otherwise).
    assert_softmax_close(npu_softmax.softmax(x, dim, variant=variant), reference(x, dim))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-dim{c[1]}{'T' * c[2]}")
def test_columns_gradient(kernel_device: str, small_columns: None, case: tuple,
                          dtype: torch.dtype, log: bool) -> None:
    shape, dim, transposed, form = case
    x = _input(shape, transposed, dtype, kernel_device).requires_grad_()
    dy = torch.randn(x.shape).to(dtype).to(kernel_device)
    fn = npu_softmax.log_softmax if log else npu_softmax.softmax
    y = fn(x.detach(), dim)
    layout = row_layout(y.shape, dim % y.dim(), dy.stride(), y.stride())
    p = launcher.plan(layout, x.element_size(), 4, launcher.backend(), streams=2)
    assert p.variant == "cols" or transposed, p  # a transposed input's y has rows contiguous
    # dy laid out as y, and in the reverse order of dims (its rows' elements apart otherwise).
    flipped = list(reversed(range(x.dim())))
    for g in (dy, torch.randn([x.shape[d] for d in flipped]).to(dtype).to(kernel_device)
              .permute(*flipped)):
        (dx,) = torch.autograd.grad(fn(x, dim, temperature=1.3), x, g)
        ref = reference_grad(torch.log_softmax if log else torch.softmax, x, g, dim, 1.3)
        assert_close(dx, ref, dtype, scale=4.0)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-dim{c[1]}{'T' * c[2]}")
def test_columns_special_values_and_in_place(kernel_device: str, small_columns: None,
                                             case: tuple) -> None:
    shape, dim, transposed, _ = case
    x = _input(shape, transposed, torch.float32, kernel_device)
    rows = x.movedim(dim, -1)  # a view: writes land in x

    def row(k: int) -> tuple:
        return tuple(int(i) for i in torch.unravel_index(torch.tensor(k), rows.shape[:-1]))

    rows[row(0)] = float("-inf")  # a row of -inf alone: torch gives NaN
    rows[row(1) + (2,)] = float("inf")
    rows[row(2) + (1,)] = float("nan")
    rows[row(3) + (slice(0, 2),)] = float("-inf")
    ref = reference(x, dim)
    assert_softmax_close(npu_softmax.softmax(x, dim, variant="cols"), ref)
    npu_softmax.softmax_(x, dim, variant="cols")
    assert_softmax_close(x, ref)


def test_interleaved_rows_plan_cols_on_every_target() -> None:
    contiguous = RowLayout(7 * 9, 70, 9, (70 * 9, 1, 9), (70 * 9, 1, 9))  # dim 1 of 7x70x9
    transposed = row_layout((33, 50), 1, (1, 33), (50, 1))  # the last dim of randn(50, 33).t()
    last = RowLayout(100, 70, 1, (70, 0, 1), (70, 0, 1))
    assert contiguous.interleaved() and transposed.interleaved()
    assert not transposed.interleaved(output=True) and not last.interleaved()
    for be, cores in ((CudaBackend(), 132), (InterpreterBackend(), 4),
                      (AscendBackend("Ascend910B3"), 40), (AscendBackend("Ascend910_9599"), 72)):
        for layout in (contiguous, transposed):
            assert launcher.plan(layout, 4, cores, be).variant == "cols"
        assert launcher.plan(last, 4, cores, be).variant != "cols"
        # The backward follows y (and dx): rows of a transposed input's output are contiguous.
        assert launcher.plan(transposed, 4, cores, be, streams=2).variant != "cols"


def test_column_kernels_compiled_for_the_form_of_the_rows() -> None:
    """On CUDA (and under the interpreter) a float32 or float64 ``cols`` kernel of one range per
    group is compiled for the form its rows take: ``WHOLE`` 1 where they fit the tile, held
    whole, 0 where they are looped over chunks. 2-byte ones, and all on Ascend, get -1: both
    forms compiled in, the row length tested. The launch of a softmax over dim 1 passes it."""
    for be in (CudaBackend(), InterpreterBackend()):
        for itemsize in (4, 8):
            assert [be.column_form(n, 128, itemsize)
                    for n in (1, 127, 128, 129, 4096)] == [1, 1, 1, 0, 0]
        assert be.column_form(100, 128, 2) == be.column_form(200, 128, 2) == -1
    for arch in ("Ascend910B3", "Ascend910_9599"):
        assert AscendBackend(arch).column_form(100, 128, 4) == -1
    # The launches follow the active target's rules (an NPU host's are Ascend's).
    active = launcher.backend()
    forms = set()
    for dtype, n_cols in ((torch.float32, 70), (torch.float32, 3000), (torch.bfloat16, 70)):
        layout = row_layout((7, n_cols, 9), 1, (n_cols * 9, 9, 1), (n_cols * 9, 9, 1))
        launch = launcher.prepare_softmax(dtype, dtype, torch.device("cpu"), layout)
        p = launch.plan
        if p.variant == "cols" and p.n_splits == 1:
            whole = launch.steps[0].constexprs["WHOLE"]
            forms.add(whole)
            assert whole == active.column_form(n_cols, p.block_n, dtype.itemsize)
    if active.column_forms_from is not None:
        assert {1, -1} <= forms


def _cuda_warps(be: CudaBackend, layout: RowLayout, p: launcher.Plan, itemsize: int,
                streams: int = 1) -> int:
    # The warps ``be`` gives plan ``p`` of ``layout``.
    return be.for_layout(layout, itemsize, streams).options(p, itemsize)["num_warps"]


def _shape(p: launcher.Plan) -> tuple:
    return p.variant, p.block_m, p.block_n, p.n_splits


@pytest.mark.parametrize("itemsize", [2, 4])
def test_groups_narrow_to_hold_rows_whole_on_cuda(itemsize: int) -> None:
    """On CUDA, groups hold their rows whole in one chunk (one read) where a group of the
    target's sizes allows it: a transposed input's narrowed to 8 rows (to 4 in the float32
    forward: ``test_cuda_float32_transposed_rows_whole_in_narrow_groups``); interleaved rows' where
    32-row groups would be split, in float32 narrowed to 8 rows, in the 2-byte backward to 16
    (chunks of 16384), in the forward in chunks of 32768 where the runs are aligned (float32
    8 rows, 2-byte 32 or 16), in the float32 forward to 16 rows in chunks of 16384 where they
    are not; otherwise 32 rows (64 for the forward's looped split groups: the test below)."""
    be = CudaBackend("cuda", 90)
    transposed = row_layout((8192, 1000), 1, (1, 8192), (1000, 1))  # randn(1000, 8192).t()
    long = row_layout((4096, 4096), 1, (1, 4096), (4096, 1))
    split = row_layout((1000, 8192), 0, (8192, 1), (8192, 1))  # 256 groups of rows of 1000
    unaligned = row_layout((256, 1000, 49), 1, (49000, 49, 1), (49000, 49, 1))
    whole = row_layout((512, 65536), 0, (65536, 1), (65536, 1))  # 2048 groups: no split
    assert _shape(launcher.plan(transposed, itemsize, 132, be)) == ("cols", 8, 1024, 1)
    assert _shape(launcher.plan(long, itemsize, 132, be)) == (
        ("cols", 8, 4096, 1) if itemsize == 4 else ("cols", 32, 256, 8))
    forward = ("cols", 8, 1024, 1) if itemsize == 4 else ("cols", 32, 1024, 1)
    backward = ("cols", 8, 1024, 1) if itemsize == 4 else ("cols", 16, 1024, 1)
    assert _shape(launcher.plan(split, itemsize, 132, be)) == forward
    assert _shape(launcher.plan(split, itemsize, 132, be, streams=2)) == backward
    forward = ("cols", 16, 1024, 1) if itemsize == 4 else ("cols", 32, 256, 2)
    backward = ("cols", 8, 1024, 1) if itemsize == 4 else ("cols", 16, 1024, 1)
    assert _shape(launcher.plan(unaligned, itemsize, 132, be)) == forward
    assert _shape(launcher.plan(unaligned, itemsize, 132, be, streams=2)) == backward
    # Unaligned rows of 2048 do not fit 16 rows in 16384 (nor 8 in a chunk): looped in 64-row
    # groups (``test_cuda_looped_rows_in_64_row_groups``); 1024 groups of 32 rows are not
    # split and keep them.
    longer = _contiguous_layout((64, 2048, 100), 1)
    assert _shape(launcher.plan(longer, itemsize, 132, be)) == (
        ("cols", 64, 128, 4) if itemsize == 4 else ("cols", 64, 128, 8))
    many = _contiguous_layout((512, 1000, 49), 1)
    assert _shape(launcher.plan(many, itemsize, 132, be)) == ("cols", 32, 256, 1)
    for streams in (1, 2):
        assert _shape(launcher.plan(whole, itemsize, 132, be, streams=streams)) == (
            "cols", 32, 256, 1)


def test_cuda_2_byte_rows_of_257_to_512_whole_on_4_warps() -> None:
    """On CUDA the forward's 2-byte interleaved rows of 257-512 elements in 32-row groups of
    aligned runs, where they go whole in 32x512 tiles, take 4 warps (128 elements a thread):
    rows of 257-352 where the groups are many (looped in 32x256 chunks before, as longer rows
    still are), rows of up to 512 where they are few (whole on 8 warps before). The backward,
    float32, unaligned runs, a transposed input and narrower groups keep their plans."""
    be = CudaBackend("cuda", 90)

    def plan_of(shape: tuple[int, ...], itemsize: int, streams: int = 1) -> tuple:
        layout = _contiguous_layout(shape, 1)
        p = launcher.plan(layout, itemsize, 132, be, streams=streams)
        return (*_shape(p), _cuda_warps(be, layout, p, itemsize, streams))

    for shape in ((128, 333, 1024), (256, 257, 512), (64, 352, 512),  # many groups
                  (16, 400, 1024), (8, 512, 2048), (1, 300, 64)):  # few groups
        assert plan_of(shape, 2) == ("cols", 32, 512, 1, 4), shape
    for shape in ((64, 353, 512), (64, 512, 512), (64, 256, 512)):
        assert plan_of(shape, 2) == ("cols", 32, 256, 1, 4), shape
    assert plan_of((64, 300, 512), 2, streams=2) == ("cols", 32, 256, 1, 16)
    assert plan_of((64, 300, 512), 4) == ("cols", 32, 256, 1, 8)
    assert plan_of((256, 300, 49), 2)[1:3] == (32, 256)  # runs of 98 bytes
    assert plan_of((256, 300, 16), 2) == ("cols", 16, 512, 1, 8)  # 16-row groups
    transposed = row_layout((4096, 300), 1, (1, 4096), (300, 1))  # randn(300, 4096).t()
    assert _shape(launcher.plan(transposed, 2, 132, be)) == ("cols", 16, 512, 1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_2_byte_rows_of_257_to_512_over_dim_1(device: str, dtype: torch.dtype,
                                              four_cores: None) -> None:
    """Rows of 257-512 elements over dim 1 with 32 or more neighbours, in groups that are
    many for 4 cores and in few (on CUDA whole in 32x512 tiles on 4 warps), partial groups,
    into NaN-filled outputs, softmax and log_softmax."""
    for shape in ((8, 300, 48), (2, 300, 48), (1, 512, 32)):
        x = torch.randn(shape, device=device).mul(4).to(dtype)
        out = torch.full_like(x, float("nan"))
        npu_softmax.softmax(x, 1, out=out)
        assert_softmax_close(out, reference(x, 1))
        npu_softmax.log_softmax(x, 1, out=out.fill_(float("nan")))
        assert_close(out, reference(x, 1, log=True), dtype)


def test_cuda_2_byte_forward_column_tiles_hold_64_elements_a_thread() -> None:
    """On CUDA the forward's 2-byte ``cols`` tiles of 32-row groups, or of a transposed input,
    hold 64 elements a thread (on 4 warps at least where ``_wide_column_min_warps`` says so);
    float32 tiles, the backward's and narrow groups of interleaved rows hold at most 32 of each
    tensor they read."""
    be = CudaBackend("cuda", 90)
    dim1 = row_layout((64, 256, 1024), 1, (262144, 1024, 1), (262144, 1024, 1))
    transposed = row_layout((8192, 1000), 1, (1, 8192), (1000, 1))
    narrow = row_layout((131072, 8), 0, (8, 1), (8, 1))  # one group of 8 rows
    for layout, itemsize, streams, most in ((dim1, 2, 1, 64), (transposed, 2, 1, 64),
                                            (narrow, 2, 1, 32), (dim1, 4, 1, 32),
                                            (dim1, 2, 2, 32), (transposed, 4, 1, 32)):
        p = launcher.plan(layout, itemsize, 132, be, streams=streams)
        warps = _cuda_warps(be, layout, p, itemsize, streams)
        elems = p.block_m * p.block_n * streams // (32 * warps)
        assert p.variant == "cols" and (elems == most or most == 32 and elems <= 32), (
            layout, itemsize, streams, p, warps)


@pytest.mark.parametrize("shape,plan", [
    ((1000, 8192), (4, 8192, 1)),  # 250 groups of 4 rows of 8192
    ((2000, 4096), (8, 4096, 1)),  # 250 groups of 8 rows of 4096
    ((1000, 4096), (4, 4096, 1)),  # 8-row groups would be 125, fewer than the SMs
    ((1000, 2048), (8, 2048, 1)),  # 125 groups, but in tiles of 16384: kept
    ((1000, 16384), (32, 256, 32)),  # rows too long for 4-row groups: split, as before
    ((8192, 1000), (8, 1024, 1)),  # rows of 1000: 8-row groups in chunks of 8192, as before
])
def test_cuda_float32_transposed_rows_whole_in_narrow_groups(
        shape: tuple[int, int], plan: tuple[int, int, int]) -> None:
    """On CUDA the float32 forward holds a transposed input's rows of up to 8192 whole, in
    groups of 8 rows or, narrowed, 4 (16-byte runs), in tiles of up to 32768 elements; where
    8-row groups in such a tile would be fewer than the SMs, 4-row ones. 2-byte rows keep
    groups of 8 rows at least."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous_layout(shape, 1, transposed=True)
    assert _shape(launcher.plan(layout, 4, 132, be)) == ("cols", *plan)
    assert launcher.plan(layout, 2, 132, be).block_m >= 8


@pytest.mark.parametrize("shape,plan", [
    ((2048, 2048), (16, 2048, 1)),  # 128 groups of 16 rows of 2048
    ((2048, 1280), (16, 2048, 1)),  # 80 groups: at least half the SMs
    ((1025, 4096), (16, 2048, 1)),
    ((2048, 1024), (8, 2048, 1)),  # 64 groups of 16 rows would be under half the SMs
    ((1000, 16384), (16, 1024, 1)),  # 1024 groups of 16 rows of 897-1024: 4 an SM or more
    ((897, 12288), (16, 1024, 1)),
    ((896, 16384), (8, 1024, 1)),  # shorter rows keep 8-row groups
    ((1000, 8192), (8, 1024, 1)),  # 512 groups of 16 rows would be under 4 an SM
    ((1000, 4096 * 33), (32, 256, 1)),  # 32-row groups not split: looped, as before
    ((2048, 1000), (64, 128, 16)),  # runs not whole vectors: split 64-row groups
])
def test_cuda_float32_rows_of_up_to_2048_whole_in_16_row_groups(
        shape: tuple[int, int], plan: tuple[int, int, int]) -> None:
    """On CUDA the float32 forward holds interleaved rows (dim 0 of a matrix) whole in groups
    of 16 rows where 32-row groups would be split and their runs are aligned: rows of
    1025-2048 elements in a tile of 32768 where the 16-row groups number at least half the
    SMs, rows of 897-1024 in a tile of 16384 where they number at least 4 an SM. The backward
    keeps its plans (no 16-row float32 groups)."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous_layout(shape, 0)
    assert _shape(launcher.plan(layout, 4, 132, be)) == ("cols", *plan)
    assert launcher.plan(layout, 4, 132, be, streams=2).block_m != 16


@pytest.mark.parametrize("shape,dim,float_plan,half_plan", [
    ((27586, 507), 0, (64, 128, 64), (32, 256, 64)),  # runs not aligned; 2-byte ranges of 216
    ((2, 1500, 4097), 1, (64, 128, 4), (32, 256, 4)),  # 2-byte ranges of 188 rows
    ((2500, 40), 0, (64, 128, 32), (32, 256, 16)),  # one group of 40 neighbours
    ((4096, 4096), 0, (8, 4096, 1), (64, 128, 16)),  # aligned runs; float32 whole
    ((4, 8192, 1024), 1, (32, 256, 8), (64, 128, 16)),  # aligned runs, looped
    ((1024, 3001, 49), 1, (32, 256, 1), (32, 256, 1)),  # 32-row groups not split
    ((32, 4096, 25), 1, (32, 256, 16), (32, 256, 16)),  # no more than 32 neighbours
])
def test_cuda_looped_rows_in_64_row_groups(shape: tuple[int, ...], dim: int,
                                           float_plan: tuple[int, int, int],
                                           half_plan: tuple[int, int, int]) -> None:
    """On CUDA the forward loops interleaved rows that no group holds whole in 64-row groups
    (tiles of 64x128) where 32-row groups would be split and there are more than 32
    neighbours: float32 rows whose runs are not aligned vectors, split for 2 work items an SM;
    2-byte rows where each range of a split for 4 work items an SM holds at least 256 rows.
    The backward keeps 32-row groups or fewer."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous_layout(shape, dim)
    assert _shape(launcher.plan(layout, 4, 132, be)) == ("cols", *float_plan)
    assert _shape(launcher.plan(layout, 2, 132, be)) == ("cols", *half_plan)
    for itemsize in (2, 4):
        assert launcher.plan(layout, itemsize, 132, be, streams=2).block_m <= 32


#: (shape, CUDA's float32 and bfloat16 plans of dim 0 for 4 cores): matrices small enough for
#: every device, planned for 4 cores as the H100 plans larger tensors for 132 SMs.
FOUR_CORE_CASES = [
    # 16-row groups holding rows of up to 2048 whole in one tile (2048x2048 on 132 SMs).
    ((1100, 64), (16, 2048, 1), (16, 2048, 1)),
    # 16-row groups holding rows of 897-1024 whole (1000x16384 on 132 SMs).
    ((900, 256), (16, 1024, 1), (32, 1024, 1)),
    # Rows of 4096, runs of 60 elements (not aligned vectors): one 64-row group looped in
    # 64x128 tiles, split 8 ways in float32 and 16 in 2-byte.
    ((4096, 60), (64, 128, 8), (64, 128, 16)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", FOUR_CORE_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_groups_of_the_h100_plans_on_four_cores(kernel_device: str, four_cores: None,
                                                dtype: torch.dtype, case: tuple) -> None:
    """Dim 0 of matrices planned for 4 cores (on CUDA as the H100 plans larger tensors:
    ``FOUR_CORE_CASES``), softmax and log_softmax into NaN-poisoned outputs and the gradient
    on every kernel device."""
    shape, *cuda_plans = case
    x = _input(shape, False, dtype, kernel_device)
    for fn, log in ((npu_softmax.softmax, False), (npu_softmax.log_softmax, True)):
        y = torch.full(x.shape, float("nan"), dtype=dtype, device=kernel_device)
        fn(x, 0, out=y)
        assert_close(y, reference(x, 0, log=log), dtype)
    _check_gradient(x, 0)
    be = launcher.backend()
    if isinstance(be, CudaBackend) and be.name == "cuda":
        p = launcher.plan(row_layout(x.shape, 0, x.stride(), x.stride()), x.element_size(), 4,
                          be)
        assert _shape(p) == ("cols", *cuda_plans[dtype == torch.bfloat16]), p


def _contiguous_layout(shape: tuple[int, ...], dim: int, transposed: bool = False) -> RowLayout:
    # The row layout of a softmax over ``dim`` of a contiguous tensor (of its transpose, into a
    # contiguous output, with ``transposed``).
    out = contiguous_strides(list(shape))
    strides = contiguous_strides(list(shape[::-1]))[::-1] if transposed else out
    return row_layout(shape, dim, strides, out)


@pytest.mark.parametrize("shape,dim,transposed,itemsize,streams,warps", [
    ((8, 19, 262144), 1, False, 2, 1, 1),  # 2-byte rows of 32 lanes, aligned runs: 256 bytes
    ((1024, 9, 4096), 1, False, 2, 1, 1),  # of 16 lanes
    ((16384, 2, 256), 1, False, 2, 1, 1),  # a tile of 512 (a short inner dim)
    ((2048, 5, 1024), 1, False, 2, 1, 2),  # of 8 lanes: the 2-byte rule, 64 elements a thread
    ((16, 3, 50176), 1, False, 2, 1, 4),  # of 4 lanes: 4 warps
    ((32, 64, 4096), 1, False, 2, 1, 2),  # of 64 lanes
    ((16384, 100), 1, True, 2, 1, 2),  # a transposed input's rows of 128 lanes
    ((64, 7, 20001), 1, False, 2, 1, 4),  # runs not whole vectors
    ((8, 19, 262144), 1, False, 2, 2, 8),  # the backward: 32 elements of each of two tensors
    ((64, 256, 1024), 1, False, 2, 1, 4),  # tiles of 8192: 64 elements a thread on 4 warps
    ((8, 19, 262144), 1, False, 4, 1, 2),  # float32 rows of up to 32 lanes, aligned runs
    ((16, 3, 50176), 1, False, 4, 1, 2),  # of 4 lanes
    ((16384, 2, 256), 1, False, 4, 1, 1),  # tiles of 512 and 256 (a short inner dim)
    ((65536, 3, 64), 1, False, 4, 1, 1),
    ((64, 7, 20001), 1, False, 4, 1, 4),  # float32 runs not whole vectors
    ((32, 64, 4096), 1, False, 4, 1, 4),  # float32 rows of 64 lanes
    ((16384, 20), 1, True, 4, 1, 4),  # a transposed input's float32 rows
    ((8, 19, 262144), 1, False, 4, 2, 8),  # the float32 backward
    ((8, 19, 262144), 1, False, 8, 1, 4),  # float64
])
def test_cuda_forward_column_tiles_of_short_rows_take_few_warps(
        shape: tuple[int, ...], dim: int, transposed: bool, itemsize: int, streams: int,
        warps: int) -> None:
    """On CUDA the forward's ``cols`` tiles of whole rows of up to 32 lanes with aligned runs
    hold 256 bytes of input a thread (float32 tiles of 4096 elements on 2 warps, 2-byte ones
    and smaller tiles on one), but 2-byte tiles of 4096 elements of rows of 4-8 lanes keep the
    2-byte rule, as do other 2-byte tiles of whole rows with aligned runs or a transposed
    output (64 elements a thread, 2 warps at least, 4 under 8 lanes); other tiles keep 4 warps
    at least."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous_layout(shape, dim, transposed)
    p = launcher.plan(layout, itemsize, 132, be, streams=streams)
    assert p.variant == "cols" and p.n_splits == 1 and p.block_n >= layout.n_cols, p
    assert _cuda_warps(be, layout, p, itemsize, streams) == warps


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,dim,transposed,warps", [
    ((2, 19, 2048), 1, False, 1), ((16, 5, 1024), 1, False, 2), ((100, 1024), -1, True, 2),
    ((8, 3, 256), 1, False, 1)])
def test_whole_column_tiles_of_2_byte_rows(kernel_device: str, dtype: torch.dtype,
                                           shape: tuple[int, ...], dim: int,
                                           transposed: bool, warps: int) -> None:
    """Short interleaved 2-byte rows in the device's own plans (on CUDA: whole in tiles of 4096
    elements on 1 or 2 warps, or of 1024 on one), softmax and log_softmax into NaN-poisoned
    outputs."""
    x = _input(shape, transposed, dtype, kernel_device)
    for fn, log in ((npu_softmax.softmax, False), (npu_softmax.log_softmax, True)):
        y = torch.full(x.shape, float("nan"), dtype=dtype, device=kernel_device)
        fn(x, dim, out=y)
        ref = reference(x, dim, log=log)
        if log:
            assert_close(y, ref, dtype)
        else:
            assert_softmax_close(y, ref, f"{shape} dim {dim} {transposed=} {dtype}")
    be = launcher.backend()
    if isinstance(be, CudaBackend) and be.name == "cuda":
        layout = row_layout(x.shape, dim % x.dim(), x.stride(), y.stride())
        p = launcher.plan(layout, 2, launcher.core_count(0), be)
        assert p.variant == "cols" and p.block_n >= layout.n_cols, p
        assert _cuda_warps(be, layout, p, 2) == warps, p


#: (shape, transposed, CUDA's float32 and bfloat16 forward plans as (block_m, n_splits)): rows
#: of 1000-2500 of a transposed input, or of dim 0 of a contiguous one whose runs are aligned
#: (32 columns) or not (40).
TARGET_CASES = [
    ((1000, 40), True, (8, 1), (8, 1)),
    ((2000, 40), True, (8, 1), (32, 8)),
    ((2500, 40), True, (4, 1), (32, 16)),
    ((1000, 32), False, (8, 1), (32, 1)),
    ((2500, 32), False, (8, 1), (32, 16)),
    ((1000, 40), False, (16, 1), (32, 4)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", TARGET_CASES, ids=lambda c: f"{c[0]}{'T' * c[1]}")
def test_rows_at_the_targets_sizes(kernel_device: str, dtype: torch.dtype, case: tuple) -> None:
    """Interleaved rows planned with the device's own sizes (on CUDA: groups that hold their
    rows whole, where its rules allow), into a NaN-poisoned output, and the gradient."""
    shape, transposed, *cuda_plans = case
    x = _input(shape, transposed, dtype, kernel_device)
    dim = -1 if transposed else 0
    y = torch.full(x.shape, float("nan"), dtype=dtype, device=kernel_device)
    npu_softmax.softmax(x, dim, out=y)
    assert_softmax_close(y, reference(x, dim), f"rows of {shape[0]}, {transposed=} {dtype}")
    _check_gradient(x, dim)
    be = launcher.backend()
    p = launcher.plan(row_layout(x.shape, dim % 2, x.stride(), y.stride()), x.element_size(),
                      launcher.core_count(0), be)
    assert p.variant == "cols", p
    if isinstance(be, CudaBackend) and launcher.core_count(0) >= 64:
        assert (p.block_m, p.n_splits) == cuda_plans[dtype == torch.bfloat16], p


@pytest.mark.parametrize("n_rows,n_cols,n_inner", [(4096 * 64, 4096, 64), (2**20, 19, 2**18),
                                                    (8, 131072, 8), (3, 100000, 3)])
def test_column_plans_cover_each_group(n_rows: int, n_cols: int, n_inner: int) -> None:
    """H100-sized plans: every tile holds the target's fewest rows or all of them, a split
    group's ranges cover its rows, and the work items fit the grid limit."""
    be = CudaBackend()
    layout = RowLayout(n_rows, n_cols, n_inner, (n_cols * n_inner, 1, n_inner),
                       (n_cols * n_inner, 1, n_inner))
    p = launcher.plan(layout, 2, 132, be)
    assert p.variant == "cols"
    assert p.block_m >= min(n_inner, be.column_lanes(2)) and p.block_m & (p.block_m - 1) == 0
    assert p.block_n * p.block_m <= max(be.column_tile_elems(2, p.block_m),
                                        be.column_chunk_elems(2, p.block_m))
    if p.n_splits > 1:
        assert p.split_cols(n_cols) * p.n_splits >= n_cols > p.block_n
