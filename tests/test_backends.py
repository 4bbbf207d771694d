"""Per-target rules that need no device."""

from __future__ import annotations

import itertools

import pytest
import torch
import triton

from npu_softmax import _compat, kernels, kernels_backward, kernels_cols, launcher
from npu_softmax.backends import AscendBackend, CudaBackend, InterpreterBackend, for_target
from npu_softmax.backends.cuda import (
    FAST_MEMORY_BYTES_PER_SM,
    FASTEST_MEMORY_BYTES_PER_SM,
    memory_bytes_per_sm,
)
from npu_softmax.layout import RowLayout, row_layout


def _contiguous(n_rows: int, n_cols: int) -> RowLayout:
    """The rows of a contiguous ``(n_rows, n_cols)`` tensor."""
    strides = (n_cols, 0, 1)
    return RowLayout(n_rows, n_cols, 1, strides, strides)


def _cuda_forward(layout: RowLayout, itemsize: int,
                  fast_memory: bool = False) -> tuple[launcher.Plan, CudaBackend]:
    """The forward plan for ``layout`` of a GPU of slower memory, such as an A100 (with
    ``fast_memory``, that of a GPU of fast memory such as the H100 or the H200) and the CUDA
    rules for its rows (``for_layout``), whose ``options`` give the plan's warps."""
    be = CudaBackend("cuda", 90, fast_memory=fast_memory)
    return launcher.plan(layout, itemsize, 132, be), be.for_layout(layout, itemsize)


def _one_row_program(layout: RowLayout, itemsize: int, block_n: int, warps: int,
                     fast_memory: bool = False) -> tuple[launcher.Plan, CudaBackend]:
    """``_cuda_forward``'s plan and rules for ``layout``, after checking that the plan holds one
    row a program in one block of ``block_n`` lanes without a tail, on ``warps`` warps."""
    p, rows = _cuda_forward(layout, itemsize, fast_memory)
    assert (p.variant, p.block_m, p.block_n, p.tail_n) == ("tile", 1, block_n, 0)
    assert rows.options(p, itemsize)["num_warps"] == warps
    return p, rows


def _split(be: CudaBackend, layout: RowLayout, itemsize: int,
           streams: int = 1) -> tuple[launcher.Plan, int]:
    """``be``'s plan for ``layout`` on 132 SMs, which must be the split variant, and its
    warps."""
    p = launcher.plan(layout, itemsize, 132, be, streams=streams)
    assert p.variant == "split"
    return p, be.for_layout(layout, itemsize, streams).options(p, itemsize)["num_warps"]


def _plan_launches_by(monkeypatch: pytest.MonkeyPatch, be: CudaBackend) -> None:
    """Launches on CUDA device 0 planned by ``be`` for 132 SMs, without a GPU (nothing is
    launched)."""
    monkeypatch.setattr(launcher, "backend", lambda: be)
    monkeypatch.setattr(launcher, "device_backend", lambda device_index: be)
    monkeypatch.setattr(launcher, "core_count", lambda device_index: 132)


@pytest.mark.parametrize("name,arch,hopper_or_later", [
    ("cuda", 90, True), ("cuda", "100", True), ("cuda", 80, False), ("cuda", "75", False),
    ("hip", "gfx942", False), ("hip", 90, False)])
def test_dependent_launch_only_on_cuda_from_hopper(name: str, arch: object,
                                                   hopper_or_later: bool) -> None:
    """The split variant's second kernel is a programmatic dependent launch on sm_90+ CUDA
    with a Triton that has it, nowhere else."""
    expected = hopper_or_later and _compat.HAS_DEPENDENT_LAUNCH
    assert for_target(name, arch).dependent_launch is expected
    assert CudaBackend(name, arch).dependent_launch is expected


def test_no_dependent_launch_off_cuda() -> None:
    assert AscendBackend("Ascend910B3").dependent_launch is False
    assert InterpreterBackend().dependent_launch is False
    assert for_target("cpu", "none").dependent_launch is False


@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("streams", [1, 2])
def test_programs_keep_their_threads_on_wider_warps(itemsize: int, streams: int) -> None:
    """On AMD's CDNA GPUs (wavefronts of 64 threads) every plan runs programs of as many threads
    as on NVIDIA, in half the warps, never more than the 1024 threads a block may have; one-warp
    programs take one wavefront. 2-byte rows are held in blocks of at most 16384 there, whose
    shared memory fits a CDNA workgroup's 64 KB."""
    hip = for_target("hip", "gfx942", 64)
    assert isinstance(hip, CudaBackend) and hip.warp_size == 64
    assert for_target("cuda", "90", 32).warp_size == for_target("cuda", "90").warp_size == 32
    assert hip.tile_elems(itemsize) == (16384 if itemsize == 2 else 32768)
    for unaligned in (False, True):
        # Rows not 16-byte aligned, and a transposed input's groups, with them.
        flags = (unaligned, streams, False, unaligned, not unaligned, False)
        nvidia, amd = CudaBackend("cuda", 90, *flags), CudaBackend("hip", "gfx942", *flags,
                                                                   warp_size=64)
        plans = (launcher.reachable_plans(amd, itemsize, 8)
                 + launcher.reachable_column_plans(amd, itemsize, 8, unaligned))
        most = 0
        for p in plans:
            assert p.variant != "tile" or p.block_n * p.block_m <= amd.tile_elems(itemsize), p
            threads = 32 * nvidia.options(p, itemsize)["num_warps"]
            amd_warps = amd.options(p, itemsize)["num_warps"]
            assert 64 * amd_warps == max(64, threads) <= 1024, (p, threads, amd_warps)
            most = max(most, threads)
        assert most == 1024  # 32 NVIDIA warps somewhere: the case that needs the halving


@pytest.mark.parametrize("n_rows", [8192, 65536])
@pytest.mark.parametrize("n_cols,most_rows", [(101, {2: 4, 4: 8}), (102, {2: 4, 4: 8}),
                                              (201, {2: 4, 4: 4}), (202, {2: 4, 4: 4}),
                                              (333, {4: 4}), (400, {2: 8, 4: 8}),
                                              (777, {4: 2})])
def test_cuda_tiles_of_unaligned_rows_are_small(n_rows: int, n_cols: int,
                                                most_rows: dict[int, int]) -> None:
    """Rows that are not 16-byte aligned (all but 400) go in tiles of at most 1024 elements on
    CUDA, float32 rows of 512- and 1024-lane blocks in tiles of at most 2048; 2-byte tiles of
    such rows take 2 warps, but full tiles of rows of up to 128 elements one (4 rows: the one-warp
    tests below) and 2-byte rows of 129-256 go four to a one-warp tile read from their aligned
    bodies, other tiles more, and rows of odd length read through windows only
    up to 128 lanes a row (float32: all but 512-lane rows); rows of even length load runs of 2
    or 4 elements (``ALIGN``) instead. (2-byte rows of 257-1024 elements: the next test.)"""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(n_rows, n_cols)
    for itemsize in most_rows:
        sibling = be.for_layout(layout, itemsize)
        p = launcher.plan(layout, itemsize, 132, be)
        assert p.variant == "tile" and p.block_n == triton.next_power_of_2(n_cols)
        # 65536 rows leave each SM enough row blocks of the most rows; 8192 may take fewer.
        most = most_rows[itemsize]
        assert p.block_m == most if n_rows == 65536 else 1 < p.block_m <= most
        elems = p.block_m * p.block_n
        warps = sibling.options(p, itemsize)["num_warps"]
        body = itemsize == 2 and p.block_n == 256 and n_cols % 8 > 0
        assert sibling.tile_bodies(p, itemsize) == body
        one_warp = itemsize == 2 and p.block_n <= 128 and p.block_m == most or body
        assert (warps == 1) == one_warp
        assert (warps == 2) == (not one_warp and itemsize == 2 and n_cols % 16 > 0
                                and elems <= 1024)
        vec = sibling.window_vec(layout, p, itemsize)
        windowed = n_cols % 2 > 0 and (p.block_n <= 128 or itemsize == 4 and p.block_n != 512)
        assert vec == (16 // itemsize if windowed or body else 1)
    # Fewer rows than cores: one row per block, whatever the alignment.
    few = _contiguous(100, n_cols)
    assert launcher.plan(few, 4, 132, be).block_m == 1


@pytest.mark.parametrize("n_rows,n_cols,forward,backward", [
    (2048, 1000, 2, 4), (2000, 800, 2, 4), (1000, 1024, 1, 2), (4096, 1000, 4, 4),
    (2048, 2048, 2, 2), (1000, 2000, 2, 2), (2048, 512, 4, 4)])
def test_cuda_few_aligned_float32_rows_of_1024_lanes_go_in_small_tiles(
        n_rows: int, n_cols: int, forward: int, backward: int) -> None:
    """Aligned float32 rows of 513-1024 elements take tiles of as many rows as make 8 row
    blocks an SM in the forward (``ALIGNED_FLOAT_ROW_BLOCKS``); the backward and other row
    lengths keep 4 (a tile holds 4 rows of 1024 lanes at most, 2 of 2048)."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(n_rows, n_cols)
    p = launcher.plan(layout, 4, 132, be)
    assert (p.variant, p.block_n, p.block_m) == ("tile", triton.next_power_of_2(n_cols), forward)
    assert launcher.plan(layout, 4, 132, be, streams=2).block_m == backward


@pytest.mark.parametrize("n_cols,tail", [(602, 128), (777, 0), (1002, 0)])
def test_cuda_unaligned_2_byte_rows_of_513_to_1024_go_one_to_a_one_warp_program(
        n_cols: int, tail: int) -> None:
    """Such rows run the row kernel with one warp in the forward, as a head of half their
    power-of-two block and a tail where that takes fewer lanes than the block; the backward
    (two streams), float32 and aligned rows keep tiles of several."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(65536, n_cols)
    p = launcher.plan(layout, 2, 132, be)
    assert (p.variant, p.block_m, p.tail_n) == ("tile", 1, tail)
    block = triton.next_power_of_2(n_cols)
    assert p.block_n == (block // 2 if tail else block)
    assert be.for_layout(layout, 2).options(p, 2)["num_warps"] == 1
    backward = launcher.plan(layout, 2, 132, be, streams=2)
    assert backward.block_m > 1
    assert be.for_layout(layout, 2, streams=2).options(backward, 2)["num_warps"] > 1
    assert launcher.plan(layout, 4, 132, be).block_m > 1
    aligned = _contiguous(65536, 512)
    assert launcher.plan(aligned, 2, 132, be).block_m > 1


@pytest.mark.parametrize("n_rows", [1, 3, 100, 65536])
@pytest.mark.parametrize("n_cols", [129, 150, 201, 220, 255, 257, 300, 333, 500, 511])
def test_cuda_unaligned_2_byte_rows_of_129_to_512_go_to_one_warp_body_tiles(
        n_rows: int, n_cols: int) -> None:
    """Such rows, runs of 2-8 bytes included, go to one-warp tiles of 1024 lanes (four rows of
    256 lanes, two of 512), read and written from their aligned bodies (``VEC``,
    ``tile_bodies``), however few; the backward, float32 rows, rows of whole vectors and rows
    whose elements are apart do not."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(n_rows, n_cols)
    block = triton.next_power_of_2(n_cols)
    p, rows = _cuda_forward(layout, 2)
    assert (p.variant, p.block_m, p.block_n, p.tail_n) == ("tile", 1024 // block, block, 0)
    assert rows.options(p, 2)["num_warps"] == 1
    assert rows.tile_bodies(p, 2) and rows.window_vec(layout, p, 2) == 8
    assert rows.row_align(layout, 2, 8) == 1
    backward = launcher.plan(layout, 2, 132, be, streams=2)
    assert not be.for_layout(layout, 2, streams=2).tile_bodies(backward, 2)
    wide = launcher.plan(layout, 4, 132, be)
    assert not be.for_layout(layout, 4).tile_bodies(wide, 4)
    aligned = _contiguous(n_rows, block // 2 + 8)
    assert not be.for_layout(aligned, 2).tile_bodies(launcher.plan(aligned, 2, 132, be), 2)
    apart = RowLayout(n_rows, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1))
    p, rows = _cuda_forward(apart, 2)
    assert not rows.tile_bodies(p, 2) and rows.window_vec(apart, p, 2) == 1


@pytest.mark.parametrize("n_cols", [300, 333, 500])
@pytest.mark.parametrize("x_col,y_col", [(2, 1), (1, 3), (2, 2)])
def test_cuda_2_byte_rows_of_257_to_512_whose_elements_are_apart_stay_one_to_a_one_warp_row(
        n_cols: int, x_col: int, y_col: int) -> None:
    """Rows with a column stride (``x[:, ::2]``, or such an output) cannot be read from their
    bodies as vectors, and tiles of two such rows read element by element lost on the H100:
    they keep one row a one-warp program, with a tail where it saves lanes."""
    layout = RowLayout(65536, n_cols, 1, (n_cols * x_col, 0, x_col),
                       (n_cols * y_col, 0, y_col))
    p, rows = _cuda_forward(layout, 2)
    assert (p.variant, p.block_m) == ("tile", 1)
    assert rows.options(p, 2)["num_warps"] == 1
    assert not rows.tile_bodies(p, 2) and rows.window_vec(layout, p, 2) == 1


@pytest.mark.parametrize("n_rows", [1, 100, 31220])
@pytest.mark.parametrize("n_cols", [1025, 1100, 1333, 1500, 2047])
def test_cuda_unaligned_2_byte_rows_of_1025_to_2048_go_one_to_a_two_warp_program(
        n_rows: int, n_cols: int) -> None:
    """Such rows go one to a program of 2 warps in one block of 2048 lanes, which reads the
    row's aligned body as vectors (rows of odd length) or in runs (``ALIGN``, 1500), however
    many rows; the backward, float32 rows, 16-byte aligned rows and rows whose elements are apart
    keep tiles of two rows."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(n_rows, n_cols)
    p, rows = _one_row_program(layout, 2, 2048, 2)
    assert rows.window_vec(layout, p, 2) == (8 if n_cols % 2 else 1)
    big = _contiguous(31220, n_cols)
    assert launcher.plan(big, 2, 132, be, streams=2).block_m == 2
    assert launcher.plan(big, 4, 132, be).block_m == 2
    aligned = _contiguous(31220, 1032)
    assert launcher.plan(aligned, 2, 132, be).block_m == 2
    apart = RowLayout(31220, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1))
    assert launcher.plan(apart, 2, 132, be).block_m == 2


@pytest.mark.parametrize("n_rows", [1, 4096, 30075])
@pytest.mark.parametrize("n_cols", [1032, 1064, 1536, 2000, 2048])
def test_cuda_aligned_2_byte_rows_of_1025_to_2048_on_fast_memory_go_one_to_a_two_warp_program(
        n_rows: int, n_cols: int) -> None:
    """On a GPU of fast memory 16-byte aligned 2-byte rows of 1025-2048 elements go one to a
    program of 2 warps too, read as whole vectors; slower GPUs (an A100), the backward and
    float32 rows keep tiles of two rows where rows are many."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    layout = _contiguous(n_rows, n_cols)
    assert layout.vector_rows(2)
    p, rows = _one_row_program(layout, 2, 2048, 2, fast_memory=True)
    assert rows.window_vec(layout, p, 2) == 1
    big = _contiguous(30075, n_cols)
    assert launcher.plan(big, 2, 132, plain).block_m == 2
    assert launcher.plan(big, 2, 132, fast, streams=2).block_m == 2
    assert launcher.plan(big, 4, 132, fast).block_m == 2


@pytest.mark.parametrize("n_rows", [1, 2048, 41237])
@pytest.mark.parametrize("n_cols", [776, 800, 896, 1000, 1024])
def test_cuda_aligned_2_byte_rows_of_776_to_1024_on_fast_memory_go_one_to_a_one_warp_program(
        n_rows: int, n_cols: int) -> None:
    """On a GPU of fast memory 16-byte aligned 2-byte rows of 776-1024 elements (a block of
    1024 lanes) go one to a one-warp program, as unaligned ones do everywhere, read as whole
    vectors; slower GPUs (an A100) and the backward keep tiles of several rows where rows are
    many, as do aligned rows of 392-512 elements (a block of 512)."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    layout = _contiguous(n_rows, n_cols)
    assert layout.vector_rows(2)
    p, rows = _one_row_program(layout, 2, 1024, 1, fast_memory=True)
    assert rows.windows(p, 2) and rows.window_vec(layout, p, 2) == 1
    big = _contiguous(41237, n_cols)
    assert launcher.plan(big, 2, 132, plain).block_m > 1
    assert launcher.plan(big, 2, 132, fast, streams=2).block_m > 1
    for short_cols in (448, 512):
        assert launcher.plan(_contiguous(41237, short_cols), 2, 132, fast).block_m > 1


@pytest.mark.parametrize("itemsize,n_cols", [(4, 4097), (4, 6143), (4, 8191), (2, 6001),
                                             (2, 7777), (2, 8191)])
def test_cuda_unaligned_rows_in_one_block_of_8192_lanes_take_8_warps(itemsize: int,
                                                                     n_cols: int) -> None:
    """Rows that are not 16-byte aligned, held one to a program in one block of 8192 lanes,
    run on 8 warps in the forward; aligned rows, the backward and rows whose elements are apart
    keep 16."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    p, _ = _one_row_program(layout, itemsize, 8192, 8)
    backward = launcher.plan(layout, itemsize, 132, be, streams=2)
    assert be.for_layout(layout, itemsize, 2).options(backward, itemsize)["num_warps"] == 16
    aligned = _contiguous(4096, 8192 - 16 // itemsize)
    assert be.for_layout(aligned, itemsize).options(p, itemsize)["num_warps"] == 16
    apart = RowLayout(4096, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1))
    assert be.for_layout(apart, itemsize).options(p, itemsize)["num_warps"] == 16


@pytest.mark.parametrize("itemsize", [4, 2])
def test_cuda_tiles_of_1024_single_element_rows_take_8_warps(itemsize: int) -> None:
    """A softmax over a dim of size 1 on many rows: tiles of 1024 rows on 8 warps in the
    forward; smaller tiles (fewer rows) and the backward keep theirs."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(1 << 22, 1)
    p, rows = _cuda_forward(layout, itemsize)
    assert (p.variant, p.block_m, p.block_n) == ("tile", 1024, 1)
    assert rows.options(p, itemsize)["num_warps"] == 8
    backward = launcher.plan(layout, itemsize, 132, be, streams=2)
    assert be.for_layout(layout, itemsize, 2).options(backward, itemsize)["num_warps"] < 8
    p, rows = _cuda_forward(_contiguous(100000, 1), itemsize)
    assert p.block_m < 1024
    assert rows.options(p, itemsize)["num_warps"] < 8


@pytest.mark.parametrize("n_cols,tile_rows", [(33, 8), (47, 8), (63, 8), (65, 4), (69, 4),
                                              (95, 4), (86, 0), (97, 0), (127, 0), (129, 4),
                                              (131, 4), (169, 4), (170, 0), (171, 0), (34, 0),
                                              (62, 0), (31, 0)])
def test_cuda_float32_tiles_of_padded_odd_rows_go_on_one_warp(n_cols: int,
                                                              tile_rows: int) -> None:
    """Float32 rows of odd length of 33-63 elements go in the forward 8 to a one-warp tile,
    of 65-96 elements (blocks of 128 lanes) or 129-170 (256) 4 to one; longer rows, even ones
    (8-byte runs), rows of 32 lanes, rows whose elements are apart and the backward keep tiles
    of 1024 elements on 4 warps, and fewer rows smaller tiles on 4 warps. (2-byte rows: the
    next test; fast memory: the test after it.)"""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(1 << 18, n_cols)
    p, rows = _cuda_forward(layout, 4)
    assert (p.variant, p.tail_n) == ("tile", 0)
    assert (p.block_m, rows.options(p, 4)["num_warps"]) == ((tile_rows, 1) if tile_rows
                                                             else (1024 // p.block_n, 4))
    backward = launcher.plan(layout, 4, 132, be, streams=2)
    assert backward.block_m * backward.block_n == 1024
    assert be.for_layout(layout, 4, 2).options(backward, 4)["num_warps"] == 4
    apart = RowLayout(1 << 18, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1))
    p, rows = _cuda_forward(apart, 4)
    assert rows.options(p, 4)["num_warps"] == 4
    p, rows = _cuda_forward(_contiguous(4000, n_cols), 4)
    assert p.block_m < max(tile_rows, 4) and rows.options(p, 4)["num_warps"] == 4


@pytest.mark.parametrize("n_cols,tile_rows", [(33, 8), (47, 8), (49, 8), (61, 8), (63, 8), (65, 8),
                                              (69, 8), (97, 8), (111, 8), (127, 8), (171, 4),
                                              (201, 4), (241, 4),
                                              (243, 0), (255, 0), (98, 0), (200, 0), (202, 0)])
def test_cuda_float32_fuller_odd_rows_go_on_one_warp_on_fast_memory(n_cols: int,
                                                                    tile_rows: int) -> None:
    """On a GPU of fast memory, the forward's float32 rows of odd length go on one warp up to
    127 elements in blocks of 128 lanes and 241 in blocks of 256, where slower GPUs (an A100)
    stop at 96 and 170: rows of 33-47, 63 (too long for windows) and 65-127 8 to a tile read
    and written from their aligned bodies (as vectors, ``tile_bodies``), rows of 49-61 8 to a
    tile and of 129-241 4 through windows; rows of 243-255, even rows and the backward keep the
    plans of other GPUs."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    layout = _contiguous(1 << 18, n_cols)
    p, rows = _cuda_forward(layout, 4, fast_memory=True)
    warps = rows.options(p, 4)["num_warps"]
    if tile_rows:
        assert (p.variant, p.block_m, p.block_n, warps) == (
            "tile", tile_rows, triton.next_power_of_2(n_cols), 1)
        body = rows.tile_bodies(p, 4)
        assert body == (n_cols <= 47 or n_cols == 63 or p.block_n == 128)
        assert rows.window_vec(layout, p, 4) == 4 or not body
    else:
        assert (p, warps) == (launcher.plan(layout, 4, 132, plain),
                              plain.for_layout(layout, 4).options(p, 4)["num_warps"])
        assert warps > 1
    backward = launcher.plan(layout, 4, 132, fast, streams=2)
    assert backward == launcher.plan(layout, 4, 132, plain, streams=2)
    assert fast.for_layout(layout, 4, 2).options(backward, 4)["num_warps"] > 1


@pytest.mark.parametrize("n_cols,stride,form", [
    (257, 257, "pair"), (290, 290, "pair"), (318, 318, "pair"), (300, 303, "pair"),
    (319, 319, "pair"), (321, 321, None), (322, 322, None), (333, 333, None),
    (260, 260, None), (320, 320, None), (300, 304, None),
    (520, 520, "row"), (768, 768, "row"), (1000, 1000, "row"), (1024, 1024, "row"),
    (1000, 1004, "row"), (777, 777, None), (1000, 1003, None), (513, 513, None)])
def test_cuda_float32_rows_of_257_1024_on_two_warps_on_fast_memory(n_cols: int, stride: int,
                                                                    form: str | None) -> None:
    """On a GPU of fast memory, the forward's float32 rows of 257-320 elements that are not
    16-byte aligned (elements next to each other) go two to a tile of 512 lanes on 2 warps,
    and 16-byte aligned rows of 513-1024 one to a program on 2 warps; other rows, the backward
    and slower GPUs (an A100: tiles of 4 rows, or 2 or 4 of 1024 lanes, on 4 warps) keep their
    plans."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    strides = (stride, 0, 1)
    layout = RowLayout(1 << 16, n_cols, 1, strides, strides)
    p = launcher.plan(layout, 4, 132, fast)
    warps = fast.for_layout(layout, 4).options(p, 4)["num_warps"]
    q = launcher.plan(layout, 4, 132, plain)
    plain_warps = plain.for_layout(layout, 4).options(q, 4)["num_warps"]
    assert (q.variant, q.block_m > 1, plain_warps) == ("tile", True, 4)
    if form:
        assert (p.variant, p.block_m, p.block_n, warps) == (
            "tile", 2 if form == "pair" else 1, triton.next_power_of_2(n_cols), 2)
    else:
        assert (p, warps) == (q, plain_warps)
    backward = launcher.plan(layout, 4, 132, fast, streams=2)
    assert backward == launcher.plan(layout, 4, 132, plain, streams=2)
    assert (fast.for_layout(layout, 4, 2).options(backward, 4)
            == plain.for_layout(layout, 4, 2).options(backward, 4))


@pytest.mark.parametrize("shape", [(1, 151936), (8, 151936), (64, 128256), (4, 1048576),
                                   (64, 65536), (100, 20001)])
def test_cuda_float32_split_rows_on_four_warps_on_fast_memory(shape: tuple[int, int]) -> None:
    """On a GPU of fast memory the forward's split variant runs float32 rows on 4 warps; 2-byte
    rows and slower GPUs (an A100) keep 8, and the backward its plan."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    layout = _contiguous(*shape)
    warps = [_split(be, layout, itemsize)[1] for be, itemsize in ((fast, 4), (plain, 4), (fast, 2))]
    assert warps == [4, 8, 8]
    assert _split(fast, layout, 4, 2)[1] == _split(plain, layout, 4, 2)[1]


@pytest.mark.parametrize("shape,float_plan,half_plan", [
    ((4, 1 << 20), (8192, 128), (8192, 128)), ((1, 2_000_000), (8192, 128), (8192, 128)),
    ((64, 151936), (8192, 32), (8192, 16)), ((48, 151936), (8192, 32), (8192, 16)),
    ((100, 151936), (8192, 16), (8192, 8)), ((128, 50257), (4096, 16), (8192, 8)),
    ((32, 151936), (4096, 64), (8192, 32)), ((16, 262144), (4096, 64), (4096, 64)),
    ((1, 131072), (4096, 32), (4096, 32)), ((64, 65536), (4096, 16), (4096, 16))])
def test_cuda_split_plans_on_fast_memory(shape: tuple[int, int], float_plan: tuple[int, int],
                                         half_plan: tuple[int, int]) -> None:
    """On a GPU of fast memory the forward's split variant aims for 8 work items an SM with
    float32 rows (4 with 2-byte rows, as other GPUs do), then reads rows in chunks of 8192
    where each work item covers more than 4096 elements of a row, on the warps of chunks of
    4096 (float32 4, 2-byte rows 8); float64, the backward and slower GPUs (an A100) keep
    their plans: chunks of 4096, 4 items an SM. Plans as (chunk, splits)."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    layout = _contiguous(*shape)
    for itemsize, want, warps in ((4, float_plan, 4), (2, half_plan, 8)):
        p, w = _split(fast, layout, itemsize)
        assert (p.block_n, p.n_splits, w) == (*want, warps)
        assert (p.block_n == 8192) == (triton.cdiv(shape[1], p.n_splits) > 4096)
        assert p.split_cols(shape[1]) % p.block_n == 0
        before = _split(plain, layout, itemsize)[0]
        assert before.block_n == 4096
        assert (before.n_splits == p.n_splits) if itemsize == 2 else (
            before.n_splits <= p.n_splits)
        assert _split(fast, layout, itemsize, 2) == _split(plain, layout, itemsize, 2)
    assert _split(fast, layout, 8) == _split(plain, layout, 8)


@pytest.mark.parametrize("shape,warps", [((2048, 20001), 8), ((1024, 16401), 8),
                                         ((4096, 18000), 8), ((1024, 20480), 8),
                                         ((1023, 20001), 16), ((512, 18000), 16),
                                         ((2048, 16390), 16), ((2048, 22000), 16),
                                         ((4096, 24576), 16)])
def test_cuda_float32_rows_with_a_last_chunk_on_eight_warps_on_fast_memory(
        shape: tuple[int, int], warps: int) -> None:
    """On a GPU of fast memory the forward's float32 rows read online in chunks of 8192 with
    a last chunk (16400-20480 elements) run on 8 warps where there are at least 1024 rows, on
    16 with fewer rows or whole chunks only; 2-byte rows, the backward and slower GPUs (an
    A100, which holds these rows in one block) keep their plans."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    layout = _contiguous(*shape)
    p = launcher.plan(layout, 4, 132, fast)
    last = 16 <= shape[1] % 8192 <= 4096
    assert (p.variant, p.block_n, bool(p.last_n)) == ("online", 8192, last)
    assert fast.for_layout(layout, 4).options(p, 4)["num_warps"] == warps
    assert launcher.plan(layout, 4, 132, plain).variant == "tile"
    for be, itemsize, streams in ((fast, 2, 1), (fast, 4, 2), (plain, 4, 1)):
        assert not be.for_layout(layout, itemsize, streams).narrow_float_chunks


@pytest.mark.parametrize("n_cols,tile_rows", [(33, 8), (47, 8), (63, 8), (65, 4), (66, 4),
                                              (100, 4), (127, 4), (31, 0), (64, 0), (120, 0),
                                              (200, 0)])
def test_cuda_2_byte_tiles_of_short_unaligned_rows_go_on_one_warp(n_cols: int,
                                                                   tile_rows: int) -> None:
    """2-byte rows that are not 16-byte aligned, elements next to each other, go in the
    forward 8 to a one-warp tile where they take 64 lanes (33-64 elements), 4 where they take
    128; 16-byte aligned rows (64, 120, 200), rows in shorter blocks (31), rows whose elements
    are apart, the backward and fewer rows keep tiles on 2 warps or more. (Rows of 129-512:
    one-warp body tiles, above.)"""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(1 << 18, n_cols)
    p, rows = _cuda_forward(layout, 2)
    warps = rows.options(p, 2)["num_warps"]
    if tile_rows:
        assert (p.variant, p.block_m, p.block_n, p.tail_n, warps) == (
            "tile", tile_rows, triton.next_power_of_2(n_cols), 0, 1)
    else:
        assert warps > 1
    backward = launcher.plan(layout, 2, 132, be, streams=2)
    assert be.for_layout(layout, 2, 2).options(backward, 2)["num_warps"] > 1
    apart = RowLayout(1 << 18, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1))
    p, rows = _cuda_forward(apart, 2)
    assert rows.options(p, 2)["num_warps"] > 1
    p, rows = _cuda_forward(_contiguous(2000, n_cols), 2)
    assert rows.options(p, 2)["num_warps"] > 1
    assert p.block_m < tile_rows or not tile_rows


@pytest.mark.parametrize("n_cols,body", [(65, True), (66, True), (69, True), (97, True),
                                         (126, True), (127, True), (59, True), (61, True),
                                         (63, True), (33, False), (57, False), (58, False),
                                         (62, False), (68, False), (100, False), (120, False),
                                         (129, False)])
def test_cuda_2_byte_short_unaligned_rows_read_from_bodies_on_fast_memory(
        n_cols: int, body: bool) -> None:
    """On a GPU of fast memory the forward's 2-byte rows that are not 16-byte aligned, elements
    next to each other, of 65-127 elements (runs of 2 elements too, 66, 126), and of odd length
    of 59-63 (too long for windows in 64 lanes), keep their one-warp tiles (4 rows of 128
    lanes, 8 of 64) but read and write each row from its aligned body (``tile_bodies``, ``VEC``
    8), however few; rows that windows take (33, 57), rows of 4- or 8-byte runs in 64 lanes (58,
    62), of 8-byte runs in 128 (68, 100), 16-byte aligned rows (120), rows whose elements are
    apart, the backward and slower GPUs (an A100) keep their plans; rows of 129 their body
    tiles of 256 lanes."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    block = triton.next_power_of_2(n_cols)
    for n_rows in (1 << 18, 3000, 5):
        layout = _contiguous(n_rows, n_cols)
        p, rows = _cuda_forward(layout, 2, fast_memory=True)
        if body:
            assert (p.variant, p.block_m, p.block_n, p.tail_n) == ("tile", 512 // block, block, 0)
            assert rows.options(p, 2)["num_warps"] == 1
            assert rows.window_vec(layout, p, 2) == 8
        assert rows.tile_bodies(p, 2) == (body or n_cols == 129)
        plain_plan = launcher.plan(layout, 2, 132, plain)
        if n_rows == 1 << 18:
            assert plain_plan == p
        assert not plain.for_layout(layout, 2).tile_bodies(plain_plan, 2) or n_cols == 129
    layout = _contiguous(1 << 18, n_cols)
    backward = launcher.plan(layout, 2, 132, fast, streams=2)
    assert not fast.for_layout(layout, 2, 2).tile_bodies(backward, 2)
    apart = RowLayout(1 << 18, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1))
    assert not fast.for_layout(apart, 2).tile_bodies(launcher.plan(apart, 2, 132, fast), 2)


@pytest.mark.parametrize("n_cols,vec", [(513, 8), (601, 8), (767, 8), (769, 8), (777, 8),
                                        (1023, 8), (778, 8), (1002, 8), (514, 1), (642, 1),
                                        (516, 1), (780, 1), (520, 1)])
def test_cuda_one_warp_2_byte_rows_read_from_bodies_on_fast_memory(n_cols: int,
                                                                   vec: int) -> None:
    """On a GPU of fast memory the forward's 2-byte rows of 513-1023 elements, one to a
    one-warp program (a block of 1024, or of 512 and a tail), read and write each row from its
    aligned body (``VEC`` 8) where it is not 16-byte aligned: rows of odd length, and rows of
    4-byte runs in a block of 1024 (778, 1002). Rows of 4-byte runs in a block of 512 and a
    tail (514, 642) and of 8-byte runs (516, 780) keep their ``ALIGN`` runs, 16-byte aligned
    rows their vectors (``VEC`` 1). Rows whose elements are apart, and slower GPUs (an A100),
    read element by element (or by runs) as before."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    for n_rows in (1 << 16, 3000, 5):
        layout = _contiguous(n_rows, n_cols)
        p, rows = _cuda_forward(layout, 2, fast_memory=True)
        assert (p.variant, p.block_m) == ("tile", 1)
        assert p.block_n in (512, 1024) and n_cols <= p.block_n + p.tail_n <= 1024
        assert rows.options(p, 2)["num_warps"] == 1
        assert rows.window_vec(layout, p, 2) == vec
        plain_plan = launcher.plan(layout, 2, 132, plain)
        assert plain.for_layout(layout, 2).window_vec(layout, plain_plan, 2) == 1
    apart = RowLayout(1 << 16, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1))
    assert fast.for_layout(apart, 2).window_vec(apart, launcher.plan(apart, 2, 132, fast), 2) == 1


@pytest.mark.parametrize("n_cols,stride,one_row", [
    (1025, 1025, True), (1337, 1337, True), (1999, 1999, True), (2047, 2047, True),
    (1536, 1537, True), (1537, 2048, True), (1026, 1026, False), (2046, 2046, False),
    (1028, 1028, False), (1023, 1023, False), (511, 511, False)])
def test_cuda_float32_rows_in_runs_of_one_go_one_to_a_program_on_fast_memory(
        n_cols: int, stride: int, one_row: bool) -> None:
    """On a GPU of fast memory the forward's float32 rows of 1025-2048 elements in runs of one
    (odd lengths, odd strides), elements next to each other, go one to a two-warp program, read
    from their aligned bodies (``VEC`` 4), where tiles of two rows read them element by
    element. Rows of 8-byte runs (1026, 2046), hinted vectors (1028), rows of 1023 and 511
    (other blocks), rows whose elements are apart, the backward and slower GPUs (an A100) keep
    their plans."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    for n_rows in (1 << 16, 3000):
        layout = RowLayout(n_rows, n_cols, 1, (stride, 0, 1), (n_cols, 0, 1))
        p, rows = _cuda_forward(layout, 4, fast_memory=True)
        assert (p.variant, p.block_m == 1) == ("tile", one_row)
        if one_row:
            assert rows.options(p, 4)["num_warps"] == 2
            assert rows.window_vec(layout, p, 4) == 4
        plain_plan = launcher.plan(layout, 4, 132, plain)
        assert plain_plan.block_m == (2 if p.block_n == 2048 else p.block_m)
        assert launcher.plan(layout, 4, 132, fast, streams=2).block_m > 1
    apart = RowLayout(1 << 16, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1))
    assert launcher.plan(apart, 4, 132, fast).block_m > 1


@pytest.mark.parametrize("n_cols,tail", [(336, 128), (576, 64), (600, 128), (528, 16),
                                         (304, 64), (1000, 0), (1024, 0), (512, 0), (400, 0)])
def test_cuda_aligned_2_byte_rows_of_257_to_1024_with_a_tail_go_one_to_a_one_warp_program(
        n_cols: int, tail: int) -> None:
    """2-byte rows of 16-byte vectors (16-divisible or not) run the row kernel with one warp
    in the forward where a head and a tail take fewer lanes than their block, and tiles of
    several rows otherwise."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(65536, n_cols)
    assert layout.vector_rows(2)
    p = launcher.plan(layout, 2, 132, be)
    assert (p.variant, p.tail_n) == ("tile", tail)
    assert (p.block_m == 1) == (tail > 0)
    assert (be.for_layout(layout, 2).options(p, 2)["num_warps"] == 1) == (tail > 0)
    assert launcher.plan(layout, 2, 132, be, streams=2).block_m > 1


def test_cuda_grids_of_small_programs_are_128_an_sm_and_32_for_cols(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Row kernels' programs of under 16 warps: at least 128 per SM, more than an SM keeps,
    even where registers allow fewer; the ``cols`` kernels' (tiles of ``BLOCK_I`` rows) at
    least 32; programs of 16+ warps 16 waves of what the SMs hold. Planned without a GPU."""
    props = {"multiprocessor_count": 132, "max_num_regs": 65536, "max_shared_mem": 232448,
             "warpSize": 32}
    monkeypatch.setattr(_compat, "device_properties", lambda index: props)
    monkeypatch.setattr(_compat, "max_threads_per_sm", lambda index: 2048)
    # 128 registers a thread: 16 one-warp programs an SM, 8 of two warps, 1 of 16 warps.
    monkeypatch.setattr(_compat, "compile_for_occupancy", lambda *args: (128, 0))
    be = CudaBackend("cuda", 90)
    for warps in (1, 2, 4, 8):
        assert be.max_programs(None, (), {"BLOCK_M": 4}, {"num_warps": warps}, 0) == 132 * 128
        assert be.max_programs(None, (), {"BLOCK_I": 8}, {"num_warps": warps}, 0) == 132 * 32
    assert be.max_programs(None, (), {}, {"num_warps": 16}, 0) == 132 * 16
    assert be.max_programs(None, (), {"BLOCK_I": 8}, {"num_warps": 16}, 0) == 132 * 16
    # The rule tells the kernels apart by that parameter: every ``cols`` kernel has it, no
    # row kernel does.
    for module, has in ((kernels, False), (kernels_backward, False), (kernels_cols, True)):
        jitted = [v for k, v in vars(module).items()
                  if k.startswith("softmax") and k.endswith("kernel")]
        assert len(jitted) >= 5
        assert all(("BLOCK_I" in k.arg_names) == has for k in jitted), module.__name__


def test_cuda_grids_of_rows_with_a_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Row programs of 8 warps with a tail (unaligned 2-byte rows of 8193-9216 elements) are
    launched as many as the SMs hold, by registers; those of 4 warps with a head of 8192 and a
    tail of up to 1024 (aligned rows of 8193-9216) four times that; without a tail, or with a
    tail of 2048, at least 128 an SM."""
    props = {"multiprocessor_count": 132, "max_num_regs": 65536, "max_shared_mem": 232448,
             "warpSize": 32}
    monkeypatch.setattr(_compat, "device_properties", lambda index: props)
    monkeypatch.setattr(_compat, "max_threads_per_sm", lambda index: 2048)
    # 64 registers a thread: 4 programs of 8 warps an SM, 8 of 4 warps.
    monkeypatch.setattr(_compat, "compile_for_occupancy", lambda *args: (64, 0))
    be = CudaBackend("cuda", 90)
    def grid(block_n: int, tail_n: int, warps: int) -> int:
        return be.max_programs(None, (), {"BLOCK_N": block_n, "TAIL_N": tail_n},
                               {"num_warps": warps}, 0)
    assert grid(8192, 1024, 8) == 132 * 4
    assert grid(16384, 0, 8) == 132 * 128
    assert grid(8192, 1024, 4) == 132 * 8 * 4
    assert grid(8192, 2048, 4) == 132 * 128
    assert grid(4096, 1024, 4) == 132 * 128
    for n_cols, warps in ((9472, 4), (9000, 4), (9001, 8), (10001, 4)):
        layout = _contiguous(4096, n_cols)
        p = launcher.plan(layout, 2, 132, be)
        assert (p.block_n, p.tail_n) == (8192, 2048 if n_cols > 9216 else 1024)
        assert be.for_layout(layout, 2).options(p, 2)["num_warps"] == warps


@pytest.mark.parametrize("threads,programs", [(2048, 8), (1536, 6), (1024, 4)],
                         ids=["sm90", "sm89", "sm75"])
def test_cuda_grids_count_the_threads_each_device_keeps(
        monkeypatch: pytest.MonkeyPatch, threads: int, programs: int) -> None:
    """What an SM holds at once is bounded by the threads the device keeps resident (2048 on
    Hopper, 1536 on Ada, 1024 on Turing), read per device: programs of 8 warps with a tail, 32
    registers a thread (8 an SM by registers), are launched as many as the threads allow."""
    props = {"multiprocessor_count": 128, "max_num_regs": 65536, "max_shared_mem": 101376,
             "warpSize": 32}
    monkeypatch.setattr(_compat, "device_properties", lambda index: props)
    monkeypatch.setattr(_compat, "max_threads_per_sm", lambda index: (2048, threads)[index])
    monkeypatch.setattr(_compat, "compile_for_occupancy", lambda *args: (32, 0))
    be = CudaBackend("cuda", 89)
    for index, held in enumerate((8, programs)):
        assert be.max_programs(None, (), {"BLOCK_N": 8192, "TAIL_N": 1024},
                               {"num_warps": 8}, index) == 128 * held


def test_launches_compile_with_the_options_of_their_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch compiles with the options of the backend for its rows' layout (one warp for
    unaligned 2-byte rows of 202 on CUDA, read from their bodies, more for aligned ones of
    208), and its ``kernels`` key holds them, so a layout with
    other options never shares its cached grid size. Planned for CUDA without a GPU: nothing
    is launched."""
    be = CudaBackend("cuda", 90)
    _plan_launches_by(monkeypatch, be)
    device = torch.device("cuda", 0)
    for n_cols in (202, 208):
        layout = _contiguous(65536, n_cols)
        launch = launcher.prepare_softmax(torch.bfloat16, torch.bfloat16, device, layout)
        (step,) = launch.steps
        expected = be.for_layout(layout, 2).options(launch.plan, 2)
        assert step.options == expected
        assert (expected["num_warps"] == 1) == (n_cols == 202)
        assert ("num_warps", expected["num_warps"]) in step.key


@pytest.mark.parametrize("n_cols,itemsize,align", [
    (200, 2, 8), (1000, 2, 8), (100, 2, 4), (102, 2, 2), (202, 2, 1), (208, 2, 0), (200, 4, 4),
    (100, 4, 4), (202, 4, 2), (4100, 4, 4), (50260, 4, 4), (50260, 2, 4), (50257, 2, 1),
    (333, 2, 1), (201, 4, 1), (4098, 4, 2), (50258, 4, 2), (10002, 2, 1), (50258, 2, 1),
    (1002, 8, 2), (1001, 8, 1), (128, 4, 0), (50272, 2, 0)])
def test_rows_of_whole_vectors_are_stated_aligned(monkeypatch: pytest.MonkeyPatch, n_cols: int,
                                                  itemsize: int, align: int) -> None:
    """Rows whose length and strides are whole 16-byte vectors are planned as aligned rows on
    CUDA, and every kernel of the launch is told so (``ALIGN``, also in its ``kernels`` key)
    where Triton cannot see it, rows of 16-divisible counts (``align`` 0 here) never; rows of
    runs of 2 or 4 elements are told that and planned as unaligned rows, but get 1 where they
    read through windows (long rows of 2-byte pairs) or from their aligned bodies (2-byte rows
    of 129-512), as rows of odd length do; Ascend gets 1
    always. Planned for CUDA without a GPU: nothing is launched."""
    be = CudaBackend("cuda", 90)
    _plan_launches_by(monkeypatch, be)
    dtype = {2: torch.bfloat16, 4: torch.float32, 8: torch.float64}[itemsize]
    for n_rows in (4096, 8):  # the split variant too
        layout = _contiguous(n_rows, n_cols)
        whole = align == 0 or align * itemsize == 16
        assert be.for_layout(layout, itemsize).unaligned_rows == (not whole)
        launch = launcher.prepare_softmax(dtype, dtype, torch.device("cuda", 0), layout)
        for step in launch.steps:
            assert step.constexprs["ALIGN"] == max(align, 1) and max(align, 1) in step.key
    assert AscendBackend("Ascend910B3").row_align(_contiguous(64, n_cols), itemsize) == 1


def test_rows_of_whole_vectors_need_every_stride_whole() -> None:
    """A row is whole vectors only where the row length and both tensors' row strides are
    multiples of a vector and its elements are contiguous; else whole runs of the most elements,
    a power of two, that divides them all."""
    def layout(x_strides: tuple, y_strides: tuple, n_cols: int = 200) -> RowLayout:
        return RowLayout(4096, n_cols, 8, x_strides, y_strides)

    assert layout((1600, 200, 1), (1600, 200, 1)).row_align(4) == 4
    assert layout((1600, 200, 1), (1600, 200, 1)).row_align(2) == 8
    assert layout((1616, 202, 1), (1600, 200, 1)).row_align(4) == 2
    assert layout((1600, 200, 1), (1602, 200, 1)).row_align(4) == 2
    assert layout((1600, 200, 1), (1600, 200, 1), n_cols=198).row_align(4) == 2
    assert layout((1600, 200, 1), (1600, 200, 1), n_cols=196).row_align(2) == 4
    assert layout((1600, 200, 1), (1601, 200, 1)).row_align(4) == 1
    assert layout((1600, 201, 1), (1600, 200, 1)).row_align(2) == 1
    assert layout((1600, 200, 1), (1600, 200, 1), n_cols=199).row_align(4) == 1
    assert layout((1600, 200, 2), (1600, 200, 1)).row_align(4) == 1
    assert layout((1600, 200, 1), (1600, 200, 3)).row_align(2) == 1
    assert layout((1600, 200, 2), (1600, 200, 1)).strided_rows()
    assert layout((1600, 200, 1), (1600, 200, 3)).strided_rows()
    assert not layout((1616, 202, 1), (1600, 200, 1)).strided_rows()
    assert layout((1600, 200, 1), (1600, 200, 1)).row_align(8) == 2
    assert layout((1600, 200, 1), (1600, 200, 1)).vector_rows(4)
    assert not layout((1616, 202, 1), (1600, 200, 1)).vector_rows(4)
    assert not layout((1600, 200, 1), (1600, 200, 1), n_cols=196).vector_rows(2)


@pytest.mark.parametrize("n_cols,itemsize,lanes", [
    (50257, 4, 4096), (65536, 4, 4096), (151936, 2, 8192), (65536, 2, 4096), (200000, 2, 8192),
    (50257, 2, 4096), (100001, 2, 8192)])
def test_cuda_online_first_pass_keeps_a_max_and_sum_per_vector_lane(
        n_cols: int, itemsize: int, lanes: int) -> None:
    """The online kernel keeps one running max and sum per element of the program's vector
    load (32 warps x 4 float32, 16 or 32 warps x 8 bfloat16), aligned rows or not; rows that
    fit a tile, and the split kernels, keep one."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    sibling = be.for_layout(layout, itemsize)
    p = launcher.plan(layout, itemsize, 132, be)
    assert p.variant == "online"
    assert sibling.stat_lanes(p, itemsize) == lanes
    for short in (_contiguous(4096, 1000), _contiguous(8, n_cols)):
        other = launcher.plan(short, itemsize, 132, be)
        assert other.variant in ("tile", "split")
        assert sibling.stat_lanes(other, itemsize) == 0
    assert AscendBackend("Ascend910B3").stat_lanes(p, itemsize) == 0


@pytest.mark.parametrize("n_cols,words", [
    (50304, True), (65536, True), (102400, True), (151936, True), (50260, True), (32000, False),
    (40960, False)])
def test_cuda_whole_bfloat16_rows_read_as_words_from_16_warps(n_cols: int, words: bool) -> None:
    """On the H200 the online kernel's second pass reads whole bfloat16 rows (16-byte or 8-byte
    aligned) as 32-bit words on plans of 16 warps and more (``cuda.WORD_ROW_WARPS``), where
    every row is contiguous whole words (``RowLayout.word_rows``); rows read from a body found
    from their address always; rows of odd strides or elements apart, and Ascend, never."""
    fast = CudaBackend("cuda", 90, fast_memory=True, fastest_memory=True)
    layout = _contiguous(4096, n_cols)
    p = launcher.plan(layout, 2, 132, fast)
    be = fast.for_layout(layout, 2)
    assert p.variant == "online"
    assert be.word_reads(layout, p, 1) == words == (be.options(p, 2)["num_warps"] >= 16)
    assert be.word_reads(layout, p, 8)
    for other in (RowLayout(4096, n_cols, 1, (n_cols + 1, 0, 1), (n_cols, 0, 1)),
                  RowLayout(4096, n_cols, 1, (2 * n_cols, 0, 2), (n_cols, 0, 1)),
                  RowLayout(4096, n_cols - 1, 1, (n_cols, 0, 1), (n_cols, 0, 1))):
        assert not other.word_rows() and not be.word_reads(other, p, 1)
    assert not AscendBackend("Ascend910B3").word_reads(layout, p, 1)


@pytest.mark.parametrize("n_cols,itemsize,warps", [
    (2049, 4, 8), (3000, 4, 8), (4096, 4, 8), (5000, 4, 16), (8192, 4, 16), (20000, 4, 32),
    (3000, 2, 4), (8192, 2, 16), (32768, 2, 32)])
def test_cuda_warps_of_one_row_a_program(n_cols: int, itemsize: int, warps: int) -> None:
    """Rows held one to a program in one block take warps by block and element size
    (float32 blocks of 4096: 8 warps), in the forward and the backward. Fewer rows than SMs
    but more than 4/5 of them, as rows of more than 16384 elements run the online kernel (2-byte)
    when they are many and the split variant when they are few."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(120, n_cols)
    for streams in (1, 2):
        p = launcher.plan(layout, itemsize, 132, be, streams=streams)
        if streams == 2 and p.variant != "tile":
            continue
        assert (p.variant, p.block_m, p.tail_n) == ("tile", 1, 0)
        assert be.for_layout(layout, itemsize, streams).options(p, itemsize)["num_warps"] == warps


@pytest.mark.parametrize("n_cols,warps", [(10001, 16), (12352, 32), (16383, 16)])
def test_cuda_warps_of_float32_rows_of_16384_lanes(n_cols: int, warps: int) -> None:
    """Float32 rows of 8193-16384 elements take 32 warps, but 16 in the forward where they are
    not 16-byte aligned (the row kernel reads their aligned body)."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    p = launcher.plan(layout, 4, 132, be)
    assert (p.variant, p.block_m, p.block_n) == ("tile", 1, 16384)
    assert be.for_layout(layout, 4).options(p, 4)["num_warps"] == warps
    p = launcher.plan(layout, 4, 132, be, streams=2)
    assert be.for_layout(layout, 4, 2).options(p, 4)["num_warps"] == 32


@pytest.mark.parametrize("n_cols,tail,warps", [
    (9217, 2048, 4), (10001, 2048, 4), (10239, 2048, 4), (9001, 1024, 8), (8500, 512, 8),
    (10240, 2048, 4), (9000, 1024, 4), (8200, 8, 4), (5001, 1024, 4), (12345, 0, 16)])
def test_cuda_tails_of_2_byte_rows_of_16384_lanes(n_cols: int, tail: int, warps: int) -> None:
    """2-byte rows of 8193-16384 elements take a tail of at most 2048 after a head of 8192, on 4
    warps, but on 8 where they are not 16-byte aligned and the tail is shorter than 2048
    (8193-9216); longer rows run one block of 16384 with 16 warps (rows of 4097-8192 keep tails
    of up to 1024). Only the forward takes tails."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    p = launcher.plan(layout, 2, 132, be)
    block = triton.next_power_of_2(n_cols)
    assert (p.variant, p.block_m, p.tail_n) == ("tile", 1, tail)
    assert p.block_n == (block // 2 if tail else block)
    assert be.for_layout(layout, 2).options(p, 2)["num_warps"] == warps
    assert launcher.plan(layout, 2, 132, be, streams=2).tail_n == 0


@pytest.mark.parametrize("n_cols", [16385, 16392, 16400, 20000, 20001, 20480, 20488, 24001,
                                    24576, 32000, 32767, 32768])
def test_cuda_2_byte_rows_longer_than_16384_run_online(n_cols: int) -> None:
    """2-byte rows of 16385-32768 elements, 16-byte aligned or not, run the online kernel in the
    forward where rows are at least as many as SMs; fewer rows and float32 rows keep a tile."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    assert be.for_layout(layout, 2).unaligned_rows is (n_cols % 8 != 0)
    assert launcher.plan(layout, 2, 132, be).variant == "online"
    assert launcher.plan(layout, 4, 132, be).variant == "tile"
    assert launcher.plan(_contiguous(120, n_cols), 2, 132, be).variant == "tile"
    assert launcher.plan(_contiguous(4096, 16384), 2, 132, be).variant == "tile"


#: The Triton driver's properties of an A100 80GB, an H100 SXM and the lent H200 (memory clock
#: in kHz and bus width in bits, as CUDA reports them; the H200's read there on 2026-11-28, the
#: H100's clock on 2026-12-07).
A100 = {"multiprocessor_count": 108, "mem_clock_rate": 1593000, "mem_bus_width": 5120}
H100 = {"multiprocessor_count": 132, "mem_clock_rate": 2619000, "mem_bus_width": 5120}
H200 = {"multiprocessor_count": 132, "mem_clock_rate": 3201000, "mem_bus_width": 6016}


def test_cuda_memory_bytes_per_sm() -> None:
    """Peak DRAM bytes a second per SM from a driver's properties: the H200's (4.8 TB/s) past
    the line of the fastest memory, the H100's (3.35 TB/s) between it and that of fast memory,
    the A100's (2.0 TB/s) under both; 0 where the driver does not say."""
    assert memory_bytes_per_sm(H200) == pytest.approx(4.814e12 / 132, rel=1e-3)
    assert memory_bytes_per_sm(H100) == pytest.approx(3.352e12 / 132, rel=1e-3)
    assert memory_bytes_per_sm(A100) == pytest.approx(2.039e12 / 108, rel=1e-3)
    assert (memory_bytes_per_sm(H200) > FASTEST_MEMORY_BYTES_PER_SM > memory_bytes_per_sm(H100)
            > FAST_MEMORY_BYTES_PER_SM > memory_bytes_per_sm(A100))
    assert memory_bytes_per_sm({"multiprocessor_count": 132}) == 0


@pytest.mark.parametrize("props,fast,fastest", [
    (A100, False, False), (H100, True, False), (H200, True, True)], ids=["a100", "h100", "h200"])
def test_cuda_plans_for_the_memory_of_the_device(monkeypatch: pytest.MonkeyPatch,
                                                  props: dict[str, int], fast: bool,
                                                  fastest: bool) -> None:
    """CUDA's rules for a device (``for_device``) follow its memory, its rows' rules keep that
    (``for_layout``), and a launch is planned by the device's rules: 4096 float32 rows of 20001
    elements run online on the H100 and the H200, one block a row on the A100; 4096 bfloat16
    rows of 32768 in chunks of 8192 on the H200 alone. Planned without a GPU: nothing is
    launched."""
    monkeypatch.setattr(_compat, "device_properties", lambda index: props)
    monkeypatch.setattr(_compat, "cuda_arch", lambda index: "90")
    be = CudaBackend("cuda", 90).for_device(0)
    assert (be.fast_memory, be.fastest_memory) == (fast, fastest)
    layout = _contiguous(4096, 20001)
    rows = be.for_layout(layout, 4)
    assert (rows.fast_memory, rows.fastest_memory) == (fast, fastest)
    _plan_launches_by(monkeypatch, be)
    launch = launcher.prepare_softmax(torch.float32, torch.float32, torch.device("cuda", 0),
                                      layout)
    assert launch.plan.variant == ("online" if fast else "tile")
    launch = launcher.prepare_softmax(torch.bfloat16, torch.bfloat16, torch.device("cuda", 0),
                                      _contiguous(4096, 32768))
    assert launch.plan.block_n == (8192 if fastest else 16384)
    assert AscendBackend("Ascend910B3").for_device(0) == AscendBackend("Ascend910B3")


@pytest.mark.parametrize("target_arch", ["90", "80"])
def test_cuda_devices_of_two_generations_plan_by_their_own_arch(
        monkeypatch: pytest.MonkeyPatch, target_arch: str) -> None:
    """On a host of an H100 (device 0) and an A100 (device 1), whichever is current when the
    target is read, each device's rules take its own arch: the split's second kernel is a
    programmatic dependent launch on the H100 alone (with a Triton that has it). Planned
    without a GPU: nothing is launched."""
    monkeypatch.setattr(_compat, "device_properties", lambda index: (H100, A100)[index])
    monkeypatch.setattr(_compat, "cuda_arch", lambda index: ("90", "80")[index])
    target = CudaBackend("cuda", target_arch)
    hopper, ampere = target.for_device(0), target.for_device(1)
    assert (hopper.arch, ampere.arch) == ("90", "80")
    assert hopper.dependent_launch is _compat.HAS_DEPENDENT_LAUNCH
    assert ampere.dependent_launch is False
    assert (hopper.fast_memory, ampere.fast_memory) == (True, False)
    assert hopper.for_layout(_contiguous(4, 131072), 4).dependent_launch is hopper.dependent_launch
    assert ampere.for_layout(_contiguous(4, 131072), 4).dependent_launch is False
    monkeypatch.setattr(launcher, "device_backend", lambda index: target.for_device(index))
    monkeypatch.setattr(launcher, "core_count", lambda index: 132)
    for index, be in enumerate((hopper, ampere)):
        launch = launcher.prepare_softmax(torch.float32, torch.float32,
                                          torch.device("cuda", index), _contiguous(4, 131072))
        assert launch.plan.variant == "split"
        first, second = launch.steps
        assert first.constexprs["PDL"] is second.constexprs["PDL"] is be.dependent_launch
        assert second.options.get("launch_pdl", False) is be.dependent_launch


@pytest.mark.parametrize("current", [0, 1])
def test_hip_devices_of_two_warp_widths_plan_by_their_own_warps(
        monkeypatch: pytest.MonkeyPatch, current: int) -> None:
    """On a host of an RDNA GPU (warps of 32 threads, device 0) and a CDNA one (64, device 1),
    whichever is current when the target is read, each device's rules take its own warp
    width: float32 rows of 20001 elements (one row a program, 1024 threads) compile with 32
    warps on the RDNA card and 16 on the CDNA one, never 2048 threads, past the 1024 a
    workgroup may have. Planned without a GPU: nothing is launched."""
    rdna = {"multiprocessor_count": 48, "warpSize": 32, "arch": "gfx1100"}
    cdna = {"multiprocessor_count": 104, "warpSize": 64, "arch": "gfx90a"}
    monkeypatch.setattr(_compat, "device_properties", lambda index: (rdna, cdna)[index])
    target = for_target("hip", ("gfx1100", "gfx90a")[current], (32, 64)[current])
    layout = _contiguous(4096, 20001)
    monkeypatch.setattr(launcher, "device_backend", lambda index: target.for_device(index))
    monkeypatch.setattr(launcher, "core_count", lambda index: 104)
    for index, props in enumerate((rdna, cdna)):
        be = target.for_device(index)
        assert be.warp_size == props["warpSize"]
        assert be.for_layout(layout, 4).warp_size == props["warpSize"]
        launch = launcher.prepare_softmax(torch.float32, torch.float32,
                                          torch.device("cuda", index), layout)
        assert (launch.plan.variant, launch.plan.block_m) == ("tile", 1)
        (step,) = launch.steps
        assert step.options["num_warps"] * props["warpSize"] == 1024
    assert target.for_device(current) is target


@pytest.mark.parametrize("n_cols,chunk,last", [
    (16385, 8192, 0), (16400, 8192, 1024), (20001, 8192, 4096), (22000, 8192, 0),
    (24576, 8192, 0), (24577, 16384, 0), (26000, 16384, 0), (30001, 16384, 0),
    (32768, 16384, 0)])
def test_cuda_float32_rows_of_16385_to_32768_run_online_on_fast_memory(
        n_cols: int, chunk: int, last: int) -> None:
    """On a GPU of fast memory, the forward's float32 rows of 16385-32768 elements, at least as
    many as SMs, run the online kernel on 16 warps (8 for these 4096 rows with a last chunk,
    above), in chunks of 8192 up to 24576 elements and of 16384 above. The backward, fewer rows
    than SMs and rows of up to 16384 elements keep the plans of slower GPUs (an A100's)."""
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    p = launcher.plan(layout, 4, 132, fast)
    assert (p.variant, p.block_n, p.last_n) == ("online", chunk, last)
    assert fast.for_layout(layout, 4).options(p, 4)["num_warps"] == (8 if last else 16)
    assert launcher.plan(layout, 4, 132, plain).variant == "tile"
    for itemsize, streams in ((4, 2), (2, 2)):
        assert (launcher.plan(layout, itemsize, 132, fast, streams=streams)
                == launcher.plan(layout, itemsize, 132, plain, streams=streams))
    for rows in (8, 120):
        assert (launcher.plan(_contiguous(rows, n_cols), 4, 132, fast)
                == launcher.plan(_contiguous(rows, n_cols), 4, 132, plain))
    assert launcher.plan(_contiguous(4096, 16384), 4, 132, fast).variant == "tile"


@pytest.mark.parametrize("n_cols,last", [
    (16385, 0), (20001, 4096), (20481, 0), (21001, 0), (24001, 0), (24577, 0),
    (26000, 2048), (30001, 0), (32768, 0), (36000, 4096), (40001, 0), (40960, 0)])
def test_cuda_2_byte_rows_of_up_to_40960_in_short_chunks_on_fastest_memory(n_cols: int,
                                                                           last: int) -> None:
    """On a GPU of the fastest memory (the H200), the forward's 2-byte rows of 16385-40960
    elements, 16-byte aligned or not, run the online kernel in chunks of 8192 on 8 warps (at
    most 64 registers a thread with a last chunk); longer rows and the backward keep the plans
    of other GPUs, and GPUs of fast memory (the H100) those of slower ones (chunks of 16384 from
    20481 or 24577 elements)."""
    fast = CudaBackend("cuda", 90, fast_memory=True, fastest_memory=True)
    plain = CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    assert (launcher.plan(layout, 2, 132, CudaBackend("cuda", 90, fast_memory=True))
            == launcher.plan(layout, 2, 132, plain))
    p = launcher.plan(layout, 2, 132, fast)
    assert (p.variant, p.block_n, p.last_n) == ("online", 8192, last)
    options = fast.for_layout(layout, 2).options(p, 2)
    assert options["num_warps"] == 8 and options.get("maxnreg") == (64 if last else None)
    if n_cols > 24576:
        assert launcher.plan(layout, 2, 132, plain).block_n == 16384
    assert (launcher.plan(layout, 2, 132, fast, streams=2)
            == launcher.plan(layout, 2, 132, plain, streams=2))
    for longer in (40961, 45000, 50257):
        assert (launcher.plan(_contiguous(4096, longer), 2, 132, fast)
                == launcher.plan(_contiguous(4096, longer), 2, 132, plain))


@pytest.mark.parametrize("n_cols,last", [
    (8705, 1024), (9001, 1024), (9216, 1024), (10001, 2048), (10240, 2048), (10241, 0),
    (12288, 0), (12345, 1024), (14001, 2048), (15360, 0)])
def test_cuda_2_byte_rows_of_8705_to_15360_online_on_fast_memory(n_cols: int, last: int) -> None:
    """On a GPU of the fastest memory (the H200), the forward's 2-byte rows of 8705-15360
    elements, 16-byte aligned or not, at least as many as SMs, run the online kernel in chunks
    of 4096 on 4 warps (no register cap), and on one of fast memory short of it (the H100) those
    of up to 10240, where slower GPUs (an A100) hold them in the row kernel. Rows of 8193-8704
    (short tails), 15361-16384, fewer rows than SMs, float32 rows and the backward keep the
    plans of other GPUs."""
    fastest = CudaBackend("cuda", 90, fast_memory=True, fastest_memory=True)
    fast, plain = CudaBackend("cuda", 90, fast_memory=True), CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    tiers = (fastest, fast) if n_cols <= 10240 else (fastest,)
    for be in tiers:
        p = launcher.plan(layout, 2, 132, be)
        assert (p.variant, p.block_n, p.last_n) == ("online", 4096, last)
        options = be.for_layout(layout, 2).options(p, 2)
        assert options["num_warps"] == 4 and "maxnreg" not in options
    if n_cols > 10240:
        assert launcher.plan(layout, 2, 132, fast) == launcher.plan(layout, 2, 132, plain)
    assert launcher.plan(layout, 2, 132, plain).variant == "tile"
    for be, itemsize, streams in itertools.product(tiers, (2, 4), (1, 2)):
        if (itemsize, streams) != (2, 1):
            assert (launcher.plan(layout, itemsize, 132, be, streams=streams)
                    == launcher.plan(layout, itemsize, 132, plain, streams=streams))
    for be, other in itertools.product(tiers, (
            _contiguous(100, n_cols), _contiguous(4096, 8704), _contiguous(4096, 8448),
            _contiguous(4096, 15361), _contiguous(4096, 16384))):
        assert launcher.plan(other, 2, 132, be) == launcher.plan(other, 2, 132, plain)


@pytest.mark.parametrize("n_cols", [16385, 20001, 32000, 32768])
@pytest.mark.parametrize("itemsize", [2, 4])
def test_cuda_few_rows_of_16385_to_32768_run_split(n_cols: int, itemsize: int) -> None:
    """Rows of 16385-32768 elements, which fit a tile, run the split variant on CUDA where they
    are at most 4/5 as many as SMs; more of them (but fewer than SMs) keep one block a row, and
    rows of up to 16384 elements keep it however few they are. Ascend keeps its tile."""
    be = CudaBackend("cuda", 90)
    for n_rows in (1, 8, 64, 105):
        p = launcher.plan(_contiguous(n_rows, n_cols), itemsize, 132, be)
        assert p.variant == "split" and p.n_splits > 1
    for n_rows in (106, 131):
        assert launcher.plan(_contiguous(n_rows, n_cols), itemsize, 132, be).variant == "tile"
    assert launcher.plan(_contiguous(8, 16384), itemsize, 132, be).variant == "tile"
    ascend = AscendBackend("Ascend910B3")
    assert not ascend.split_rows(8, n_cols, 40)


@pytest.mark.parametrize("n_cols,itemsize,chunk,last,maxnreg", [
    (20001, 2, 8192, 4096, 64), (20479, 2, 8192, 4096, 64), (20481, 2, 16384, 8192, 64),
    (20000, 2, 8192, 4096, 64), (16400, 2, 8192, 1024, 64), (20480, 2, 8192, 4096, 64),
    (16385, 2, 8192, 0, None),
    (20488, 2, 8192, 0, None), (22528, 2, 8192, 0, None), (24576, 2, 8192, 0, None),
    (24584, 2, 16384, 0, None), (24577, 2, 16384, 0, None), (26624, 2, 16384, 0, None),
    (32000, 2, 16384, 0, None), (32768, 2, 16384, 0, None), (24001, 2, 16384, 8192, 64),
    (36000, 2, 16384, 4096, 64), (40001, 2, 16384, 8192, 64),
    (50257, 2, 16384, 2048, 64), (65536, 2, 16384, 0, None), (65551, 2, 16384, 0, None),
    (65552, 2, 16384, 1024, 64), (30001, 2, 16384, 0, None), (100003, 2, 32768, 2048, None),
    (33000, 4, 32768, 1024, None), (40001, 4, 32768, 8192, None),
    (151936, 4, 32768, 0, None), (65536, 4, 32768, 0, None)])
def test_cuda_last_chunks_of_online_rows(n_cols: int, itemsize: int, chunk: int, last: int,
                                         maxnreg: int | None) -> None:
    """The online kernel's last chunk on CUDA: the power of two that holds what is left after
    the whole chunks (at least 1024), none where that is no smaller than a chunk or fewer than
    16 elements are left; 2-byte rows with one, on 8 or 16 warps, take at most 64 registers a
    thread; 2-byte rows of up to 20480 elements go in chunks of 8192 on 8 warps, 16-byte aligned
    ones of up to 24576. The backward keeps whole chunks."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(4096, n_cols)
    p = launcher.plan(layout, itemsize, 132, be)
    assert (p.variant, p.block_n, p.last_n) == ("online", chunk, last)
    options = be.for_layout(layout, itemsize).options(p, itemsize)
    assert options.get("maxnreg") == maxnreg
    if chunk == 8192:
        assert options["num_warps"] == 8
    assert launcher.plan(layout, itemsize, 132, be, streams=2).last_n == 0
    assert CudaBackend("hip", "gfx942").options(p, itemsize).get("maxnreg") is None


def test_no_last_chunks_on_ascend() -> None:
    """Ascend keeps whole chunks (no hardware here to measure a last one on)."""
    be = AscendBackend("Ascend910B3")
    for n_cols in (20001, 50257, 100003):
        p = launcher.plan(_contiguous(4096, n_cols), 4, 40, be)
        assert p.variant == "online" and p.last_n == 0


@pytest.mark.parametrize("n_cols,elems,warps", [
    (100, 2048, 8), (200, 2048, 8), (60, 2048, 8), (128, 4096, 4), (64, 4096, 4), (300, 4096, 4),
    (1000, 4096, 4)])
def test_cuda_float32_tiles_of_short_rows_of_whole_vectors(n_cols: int, elems: int,
                                                           warps: int) -> None:
    """Float32 rows of whole vectors that are not 16-divisible, in blocks of at most 256
    lanes, go in tiles of 2048 elements, 8 a thread, in the forward; 16-divisible rows, longer
    blocks, the backward and 2-byte rows keep tiles of 4096 (``rows_tile_elems``)."""
    be = CudaBackend("cuda", 90)
    layout = _contiguous(65536, n_cols)
    p = launcher.plan(layout, 4, 132, be)
    assert (p.variant, p.block_m * p.block_n) == ("tile", elems)
    assert be.for_layout(layout, 4).options(p, 4)["num_warps"] == warps
    backward = launcher.plan(layout, 4, 132, be, streams=2)
    assert backward.block_m * backward.block_n == 4096
    assert be.for_layout(layout, 4, streams=2).options(backward, 4)["num_warps"] == 4
    if n_cols % 8 == 0:
        assert launcher.plan(layout, 2, 132, be).block_m * p.block_n == 4096


def test_cuda_plans_ask_for_fp_fusion() -> None:
    """Plans of every variant on CUDA, rows or interleaved rows, forward or backward, in every
    layout's rules, compile with floating-point fusion asked for: never left to Triton's
    default, which Triton 3.10 turns off (the GPU suite checks the binaries alike)."""
    be = CudaBackend("cuda", 90)
    layouts = [_contiguous(m, n) for m, n in ((65536, 100), (1823, 781), (4096, 8192),
                                              (1024, 65536), (8, 151936), (4, 70001))]
    strides = (4096 * 512, 512, 1)
    layouts.append(row_layout((64, 4096, 512), 1, strides, strides))  # dim 1: interleaved rows
    seen = set()
    for layout, itemsize, streams in itertools.product(layouts, (2, 4), (1, 2)):
        rules = be.for_layout(layout, itemsize, streams)
        p = launcher.plan(layout, itemsize, 132, rules)
        seen.add(p.variant)
        options = rules.options(p, itemsize)
        assert options["enable_fp_fusion"] is True, (p, itemsize, streams)
    assert seen == {"tile", "online", "split", "cols"}


@pytest.mark.parametrize("itemsize", [2, 4])
def test_backward_of_a_forced_tile_takes_the_launchers_choice_where_dy_holds_less(
        itemsize: int) -> None:
    """On Ascend (910B3) a forward forced to ``tile`` holds rows of 3001 elements in one block
    of 4096; the backward of a ``dy`` whose elements are apart (``dy[:, ::2]``, as
    ``test_grad_strides`` passes) gets the 1024-element tiles of strided rows, so a forced
    ``tile`` there, run by autograd, took the launcher's choice instead of refusing with
    ``ValueError`` inside ``backward()``. The forward still refuses a forced tile it cannot
    hold."""
    be = AscendBackend("Ascend910B3")
    y = (3001, 0, 1)
    forward = launcher.plan(RowLayout(3, 3001, 1, y, y), itemsize, 40, be, "tile")
    assert (forward.variant, forward.block_n) == ("tile", 4096)
    layout = RowLayout(3, 3001, 1, (6002, 0, 2), y)  # dy[:, ::2] beside a contiguous y
    strided = be.for_layout(layout, itemsize, streams=2)
    assert strided.tile_elems(itemsize) == 1024
    backward = launcher.plan(layout, itemsize, 40, be, "tile", streams=2)
    assert backward == launcher.plan(layout, itemsize, 40, be, streams=2)
    assert backward.variant != "tile" and backward.block_n * 2 <= 1024
    with pytest.raises(ValueError, match="at most 1024 elements"):
        launcher.plan(RowLayout(3, 3001, 1, (6002, 0, 2), (6002, 0, 2)), itemsize, 40, be,
                      "tile")


@pytest.mark.parametrize("be", [InterpreterBackend(), CudaBackend("cuda", 90),
                                CudaBackend("cuda", 90, fast_memory=True),
                                AscendBackend("Ascend910B3")],
                         ids=["interpreter", "cuda", "cuda_fast", "ascend"])
@pytest.mark.parametrize("itemsize", [2, 4])
def test_backward_never_holds_two_streams_past_the_tile(be: object, itemsize: int) -> None:
    """The backward reads ``y`` and ``dy``: a row whose block fits the tile only alone (more
    than half of it) is looped or split, never held whole twice over, for few rows and many."""
    for n_rows in (3, 4 * 132):
        layout = _contiguous(n_rows, 1)
        tile = be.for_layout(layout, itemsize, 2).tile_elems(itemsize)
        for n_cols in (tile // 2 + 1, tile):
            layout = _contiguous(n_rows, n_cols)
            p = launcher.plan(layout, itemsize, 132, be, streams=2)
            assert p.variant != "tile", (n_rows, n_cols, p)
            # Half the tile is a whole backward block still.
            half = launcher.plan(_contiguous(n_rows, tile // 2), itemsize, 132, be, streams=2)
            assert half.block_n <= tile // 2
