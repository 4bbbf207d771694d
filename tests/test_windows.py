"""Rows that do not start on a 16-byte boundary, which the kernels may read in whole vectors
(``Backend.window_vec``: aligned windows in the tile kernel, the row's aligned body in the
others): which plans do, and the answers on misaligned tensors, views and outputs, with
NaN/inf in the lanes a window shares with the neighbouring rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from _ref import assert_softmax_close, check_tile_refusal, reference

import npu_softmax
from npu_softmax import launcher
from npu_softmax.backends import AscendBackend, CudaBackend, InterpreterBackend
from npu_softmax.layout import row_layout

#: (dtype, elements of 16 bytes).
VECS = [(torch.float32, 4), (torch.bfloat16, 8), (torch.float16, 8)]


def _vec(be: object, shape: tuple[int, int], itemsize: int, strides: tuple[int, int] | None = None,
         variant: str | None = None, cores: int = 132) -> tuple[launcher.Plan, int]:
    """The plan and ``VEC`` that ``be`` gives a softmax over the last dim of ``shape``."""
    strides = strides or (shape[1], 1)
    layout = row_layout(shape, 1, strides, (shape[1], 1))
    p = launcher.plan(layout, itemsize, cores, be, variant)
    return p, be.for_layout(layout, itemsize).window_vec(layout, p, itemsize)


@pytest.mark.parametrize("dtype,vec", VECS)
def test_cuda_windows_short_misaligned_tiles_and_looped_rows(dtype: torch.dtype,
                                                             vec: int) -> None:
    be = CudaBackend("cuda", 90)
    size = dtype.itemsize
    # Windows in tiles of float32 rows only: 2-byte tiles ran faster as they are on the H100,
    # and so did float32 tiles of four 512-lane rows. 2-byte rows of 129-512 elements go four
    # or two to a tile, each read from its aligned body (runs of 2-4 elements too); longer ones
    # one to a program, as they are.
    p, got = _vec(be, (8192, 201), size)
    assert (p.variant, got) == ("tile", vec) and p.block_m > 1
    rows = be.for_layout(row_layout((8192, 201), 1, (201, 1), (201, 1)), size)
    assert rows.tile_bodies(p, size) == (size == 2)
    for cols in (333, 300, 500, 257):
        p, got = _vec(be, (8192, cols), size)
        rows = be.for_layout(row_layout((8192, cols), 1, (cols, 1), (cols, 1)), size)
        assert (p.variant, got) == ("tile", 1 if size == 4 else vec), cols
        assert rows.tile_bodies(p, size) == (size == 2) and p.tail_n == 0, cols
        assert p.block_m == 2 if size == 2 else p.block_m > 1, cols
    p, got = _vec(be, (8192, 600), size)
    assert (p.block_m == 1, got) == (size == 2, 1)
    assert not be.for_layout(row_layout((8192, 336), 1, (336, 1), (336, 1)), size).tile_bodies(
        _vec(be, (8192, 336), size)[0], size)
    # Rows of whole vectors load as vectors already (16-divisible, or through ``ALIGN``), rows
    # of 8-byte runs as such (``ALIGN``), and so do tiles of several rows of 4-byte runs; longer
    # rows of 4-byte runs (2-byte elements in pairs) keep windows. Strided rows cannot use one.
    assert _vec(be, (8192, 336), size)[1] == 1
    assert _vec(be, (8192, 200), size)[1] == 1
    p, got = _vec(be, (65536, 50), size)
    assert p.block_m > 1 and got == 1
    assert _vec(be, (65536, 51), size)[1] == vec
    for shape in ((4096, 10002), (4096, 50258), (8, 50258)):
        assert _vec(be, shape, size)[1] == (vec if size == 2 else 1), shape
    assert _vec(be, (4096, 10004), size)[1] == 1
    assert _vec(be, (8192, 333), size, strides=(1, 8192))[1] == 1
    # One row per block (the row kernel: its aligned body) in more than 1024 lanes, with a
    # tail block too; tiles of several longer rows never. (Rows of 16385+ elements stay in the
    # row kernel where they are fewer than SMs but more than 4/5 of them.)
    for shape in ((200, 3001), (4096, 10001), (120, 20001)):
        p, got = _vec(be, shape, size)
        assert (p.variant, p.block_m, got) == ("tile", 1, vec), shape
    p, got = _vec(be, (1823, 781), size)
    assert p.block_m == 1 and got == 1
    # Rows of 1025-2048 elements of 8-byte runs load the runs (``ALIGN``): float32 ones in
    # tiles of several rows, 2-byte ones one to a program (those of odd length: the body).
    p, got = _vec(be, (4096, 1500), size)
    assert (p.block_m > 1) == (size == 4) and p.block_n == 2048 and got == 1
    p, got = _vec(be, (4096, 1501), size)
    assert (p.block_m, got) == ((2, 1) if size == 4 else (1, vec))
    # 2-byte rows of 16385+ elements run the online kernel, through windows, where rows are
    # as many as SMs; at most 4/5 as many as SMs, the split kernels, through windows too.
    p, got = _vec(be, (2048, 20001), size)
    assert (p.variant, got) == ("tile" if size == 4 else "online", vec)
    assert _vec(be, (2048, 16383), size)[0].variant == "tile"
    p, got = _vec(be, (64, 20001), size)
    assert (p.variant, got) == ("split", vec)
    # Online and split rows: their aligned body.
    p, got = _vec(be, (4096, 50257), size)
    assert p.variant == "online" and got == vec
    assert _vec(be, (4096, 50257), size, strides=(1, 4096))[1] == 1
    p, got = _vec(be, (8, 50257), size)
    assert p.variant == "split" and got == vec


def test_cuda_float32_forward_tiles_of_rows_of_up_to_24_read_them_as_they_are() -> None:
    """Float32 rows of up to 24 elements that windows would fit go in the forward's tiles
    element by element (``PLAIN_FLOAT_TILE_COLS``): faster on the H100. Rows of 25 and more,
    and the backward's tiles, keep their windows."""
    be = CudaBackend("cuda", 90)
    for cols in (5, 9, 13, 17, 23, 25, 29, 33, 61):
        layout = row_layout((65536, cols), 1, (cols, 1), (cols, 1))
        p, got = _vec(be, (65536, cols), 4)
        assert (p.variant, p.block_m > 1, got) == ("tile", True, 1 if cols <= 24 else 4), cols
        back = launcher.plan(layout, 4, 132, be, streams=2)
        assert back.variant == "tile" and back.block_m > 1, cols
        assert be.for_layout(layout, 4, 2).window_vec(layout, back, 4) == 4, cols
    # Slices of longer rows too; 2-byte rows keep theirs (bf16 rows of 17 in 32 lanes).
    assert _vec(be, (65536, 20), 4, strides=(29, 1))[1] == 1
    assert _vec(be, (65536, 17), 2)[1] == 8


def test_windows_off_on_ascend_on_wherever_they_apply_under_the_interpreter() -> None:
    for variant in ("tile", "online", "split"):
        assert _vec(AscendBackend("Ascend910B3"), (64, 3001), 2, variant=variant)[1] == 1
        # 3501 columns: a tile with no tail block (3001 would be 2048 + 1024).
        assert _vec(InterpreterBackend(), (64, 3501), 4, variant=variant, cores=4)[1] == 4
        # Rows of whole vectors, or of runs of two elements, need none.
        assert _vec(InterpreterBackend(), (64, 3500), 4, variant=variant, cores=4)[1] == 1
        assert _vec(InterpreterBackend(), (64, 3502), 4, variant=variant, cores=4)[1] == 1
    assert _vec(InterpreterBackend(), (64, 3001), 4, variant="tile", cores=4)[1] == 1
    # Tiles of 2-byte rows in 512 lanes with no tail (385-512 elements) read the rows' bodies,
    # as CUDA's do; float32 ones take windows.
    for size, vec in ((2, 8), (4, 4)):
        p, got = _vec(InterpreterBackend(), (64, 457), size, cores=4)
        assert (p.block_m > 1, p.tail_n, got) == (True, 0, vec)
        assert InterpreterBackend().tile_bodies(p, size) == (size == 2)
    # One row per block (the row kernel), with a tail block too (2048 + 1024 lanes).
    p, got = _vec(InterpreterBackend(), (3, 3001), 2, variant="tile", cores=4)
    assert (p.block_m, p.tail_n, got) == (1, 1024, 8)
    # Chunks shorter than a vector: rows of 2 float32 or 3 bfloat16 elements (blocks of 2, 4).
    assert _vec(InterpreterBackend(), (64, 2), 4, variant="online", cores=4)[1] == 1
    assert _vec(InterpreterBackend(), (64, 3), 2, variant="online", cores=4)[1] == 1
    assert _vec(InterpreterBackend(), (64, 3), 4, variant="online", cores=4)[1] == 4
    # Float64 rows have windows of two elements.
    assert _vec(InterpreterBackend(), (64, 3001), 8, variant="online", cores=4)[1] == 2


@pytest.mark.parametrize("variant", [None, "tile", "online", "split"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
# Three rows: one to a block (the row kernel, reading its aligned body), 20001 columns forced
# to ``tile`` in a head and a tail block on CUDA too (the split kernels by the launcher's plan).
# Rows of 97 (float32 8 to a tile, 2-byte 4) and of 63 (8) on GPUs of fast memory:
# tiles read from their bodies; 2-byte rows of 601 and 777 there: one-warp row programs, each
# row read from its body; float32 rows of 1537 there: two-warp row programs from their bodies.
# 2-byte rows of 122, one element past those whose window fits their 128 lanes.
@pytest.mark.parametrize("rows,cols", [(5, 201), (3, 250), (19, 63), (19, 97), (19, 122), (19, 333),
                                       (19, 457), (5, 601), (5, 777), (5, 1537), (19, 3502),
                                       (3, 3001), (3, 20001)])
def test_misaligned_tensors_views_and_outputs(kernel_device: str, variant: str | None,
                                              dtype: torch.dtype, rows: int, cols: int) -> None:
    """Inputs and outputs starting anywhere in a 16-byte block, a column slice (rows of another
    row stride), and in place, each into a NaN-poisoned output."""
    flat = (torch.randn(rows * cols + 16, device=kernel_device) * 4).to(dtype)
    buf = torch.empty(rows * cols + 16, dtype=dtype, device=kernel_device)
    for x_off, y_off in ((0, 0), (1, 1), (5, 1), (1, 0), (3, 5), (7, 2)):
        x = flat[x_off:x_off + rows * cols].view(rows, cols)
        out = buf[y_off:y_off + rows * cols].view(rows, cols).fill_(float("nan"))
        try:
            npu_softmax.softmax(x, -1, variant=variant, out=out)
        except ValueError as e:  # the first call, where a forced tile cannot hold the rows
            check_tile_refusal(e, cols)
            return
        assert_softmax_close(out, reference(x, -1), f"offsets {x_off}, {y_off}")
    wide = (torch.randn(rows, cols + 9, device=kernel_device) * 4).to(dtype)
    x = wide[:, 3:cols + 3]
    assert_softmax_close(npu_softmax.softmax(x, -1, variant=variant), reference(x, -1))
    ref = reference(x, -1)
    beside = wide[:, :3].clone(), wide[:, cols + 3:].clone()
    npu_softmax.softmax_(x, -1, variant=variant)
    assert_softmax_close(x, ref)
    # The columns beside the slice, which the windows cover, are left as they were.
    assert torch.equal(wide[:, :3], beside[0]) and torch.equal(wide[:, cols + 3:], beside[1])


@pytest.mark.parametrize("variant", [None, "tile", "online", "split"])
@pytest.mark.parametrize("cols", [333, 781, 2500])
def test_neighbour_nan_and_inf_stay_out_of_a_row(kernel_device: str, variant: str | None,
                                                 cols: int) -> None:
    """A window loads the last elements of the row before and the first of the row after:
    NaN and inf there must not reach this row's max or sum."""
    x = torch.randn(12, cols, device=kernel_device) * 3
    x[1, -1] = float("nan")
    x[3, 0] = float("nan")
    x[5, -2:] = float("inf")
    x[7, :2] = float("-inf")
    x[9, 0] = float("inf")
    x[10, -1] = float("inf")
    ref = reference(x, -1)
    assert ref[2].isfinite().all() and ref[4].isfinite().all()
    out = torch.full_like(x, float("nan"))
    npu_softmax.softmax(x, -1, variant=variant, out=out)
    assert_softmax_close(out, ref)


#: Compiles the tile kernel (4 rows of 512 lanes, through windows, or with ``body`` from their
#: aligned bodies, ``Y_LIKE_X`` as given; ``body128``: 8 float32 or 4 2-byte rows of 128 lanes
#: so, on one warp), the
#: row kernel (a head of 4096 lanes and a tail of 1024) or the online kernel (chunks of 4096, the
#: rest of a row in chunks of 2048, ``Y_LIKE_X`` as given) for an sm_90 GPU (no GPU needed;
#: pointers 16-byte aligned, the other arguments as the launcher passes a contiguous row matrix of
#: a length not divisible by 16, with the given ``VEC`` and ``ALIGN``) and prints the PTX's global
#: load and store instructions, how many stores are of one element, and how many shared-memory
#: stores and barriers it has; exits 3 where this Triton has no NVIDIA backend (triton-ascend).
#: Run in its own process: Triton's interpreter, which the CPU suite runs under, cannot compile.
_GLOBAL_ACCESSES = """
import json, re, sys
from triton.backends import backends
if "nvidia" not in backends:
    sys.exit(3)
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from npu_softmax import kernels as K

dtype, vec, kernel, align = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
like = len(sys.argv) > 5 and sys.argv[5] == "1"
runtime = {"y_ptr": "*" + dtype, "x_ptr": "*" + dtype, "n_rows": "i32", "n_cols": "i32",
           "n_inner": "i32", "x_outer_stride": "i32", "y_outer_stride": "i32", "scale": "fp32"}
fixed = {"x_inner_stride": 0, "x_col_stride": 1, "y_inner_stride": 0, "y_col_stride": 1,
         "INDEX_64": False, "LOG": False, "STORE_CACHE": "", "VEC": vec, "ALIGN": align}
warps = 4
if kernel in ("tile", "body", "body128"):
    fn, fixed = K.softmax_tile_kernel, {**fixed, "BLOCK_M": 4, "BLOCK_N": 512, "TAIL_N": 0,
                                        "BODY": kernel != "tile", "Y_LIKE_X": like}
    if kernel == "body128":
        fixed, warps = {**fixed, "BLOCK_M": 8 if dtype == "fp32" else 4, "BLOCK_N": 128}, 1
elif kernel in ("online", "words"):
    # Words as the launcher asks for them: on bodies found from the row's address (VEC > 1);
    # "words" on whole rows too.
    fn, fixed = K.softmax_online_kernel, {**fixed, "BLOCK_N": 4096, "LAST_N": 2048,
                                          "FIRST_EVICT": "", "SECOND_EVICT": "",
                                          "STAT_LANES": 0, "Y_LIKE_X": like,
                                          "WORDS": kernel == "words" or vec > 1}
else:
    fn, fixed = K.softmax_row_kernel, {**fixed, "BLOCK_N": 4096, "TAIL_N": 1024}
signature = {n: runtime.get(n, "constexpr") for n in fn.arg_names}
src = ASTSource(fn, signature, constexprs=fixed,
                attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})
ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                     options={"num_warps": warps, "num_stages": 1}).asm["ptx"]
print(json.dumps({**{op: sorted(set(re.findall(op + r"\\.global\\S*", ptx)))
                     for op in ("ld", "st")},
                  "element_st": len(re.findall(r"st\\.global(?!\\S*\\.v[248]\\.)\\S*", ptx)),
                  "shared": len(re.findall(r"st\\.shared|bar\\.sync", ptx))}))
"""


def _global_accesses(dtype: str, vec: int, kernel: str, align: int, like: bool = False) -> dict:
    """``_GLOBAL_ACCESSES``'s answer, in a process of its own; skips where it exits 3."""
    done = subprocess.run([sys.executable, "-c", _GLOBAL_ACCESSES, dtype, str(vec), kernel,
                           str(align), str(int(like))], capture_output=True, text=True,
                          env={**os.environ, "TRITON_INTERPRET": "0"})
    if done.returncode == 3:
        pytest.skip("this Triton has no NVIDIA backend")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("kernel", ["tile", "row"])
@pytest.mark.parametrize("dtype,vec", [("fp32", 4), ("bf16", 8)])
def test_windowed_loads_and_stores_are_16_byte_vectors(kernel: str, dtype: str,
                                                        vec: int) -> None:
    """On CUDA, rows of a length that is not a multiple of 16 load and store one element per
    instruction, and load as 16-byte vectors through windows: the point of them. The row
    kernel loads and stores the row's aligned body as vectors (the elements around it one by
    one). Rows that are whole vectors (``ALIGN``) load and store nothing but vectors, rows of
    8-byte runs nothing but 8-byte vectors."""
    ops = {(v, align): _global_accesses(dtype, v, kernel, align)
           for v, align in ((1, 1), (vec, 1), (1, vec), (1, vec // 2))}
    plain, windowed, aligned = ops[1, 1], ops[vec, 1], ops[1, vec]
    assert plain["ld"] and not any(".v" in op for op in plain["ld"] + plain["st"])
    if kernel == "tile":
        assert windowed["ld"] and all(".v4." in op for op in windowed["ld"])
    else:
        assert any(".v4." in op for op in windowed["ld"])
        assert any(".v4." in op for op in windowed["st"])
    assert aligned["ld"] and aligned["st"]
    assert all(".v4." in op for op in aligned["ld"] + aligned["st"])
    runs = ops[1, vec // 2]
    assert runs["ld"] and runs["st"]
    assert all(op.endswith(".v2.b32") for op in runs["ld"] + runs["st"])


@pytest.mark.parametrize("dtype,vec", [("fp32", 4), ("bf16", 8)])
def test_an_output_laid_out_like_the_input_compiles_no_element_stores_for_the_body(
        dtype: str, vec: int) -> None:
    """With ``Y_LIKE_X`` (``launcher.rows_alike``) the looped kernels store a row's aligned body
    as vectors and compile nothing for outputs aligned otherwise, whose element stores cost
    bf16 4096x50257 6% on the H100 even where no row took them."""
    alike = _global_accesses(dtype, vec, "online", 1, like=True)
    tested = _global_accesses(dtype, vec, "online", 1, like=False)
    assert any(".v4." in op for op in alike["st"])
    assert alike["element_st"] < tested["element_st"]


@pytest.mark.parametrize("kernel,vec,align", [("online", 8, 1), ("words", 1, 8)])
def test_bfloat16_second_pass_words_stay_in_registers(kernel: str, vec: int, align: int) -> None:
    """The online kernel's second pass reads a bfloat16 body (or, with the launcher's word
    rows, a whole 16-byte aligned row) as 32-bit words and puts each pair back in order with
    tl.join (``kernels._store_words``): still 16-byte loads and stores, and no more shared
    memory than float16's kernel, which reads elements. Its offsets came out in a layout of
    one vector of elements a thread, not of words, in a first version (chunks of twice the
    rest's), and the output went through shared memory before its store, every chunk."""
    words = _global_accesses("bf16", vec, kernel, align, like=True)
    elements = _global_accesses("fp16", vec, kernel, align, like=True)
    assert any(".v4." in op for op in words["ld"]) and any(".v4." in op for op in words["st"])
    assert words["shared"] == elements["shared"] > 0


@pytest.mark.parametrize("dtype,vec,form", [("fp32", 4, "body"), ("bf16", 8, "body"),
                                            ("fp32", 4, "body128"), ("bf16", 8, "body128")])
def test_tiles_read_from_row_bodies_load_and_store_vectors(dtype: str, vec: int,
                                                          form: str) -> None:
    """The tile kernel with ``BODY`` loads each row's aligned body as 16-byte vectors, and
    stores it so with ``Y_LIKE_X``; an output aligned otherwise takes element stores. (The
    ``body128`` form: the one-warp tiles of 8 float32 or 4 2-byte rows of 65-127 elements that
    GPUs of fast memory take.)"""
    alike = _global_accesses(dtype, vec, form, 1, like=True)
    other = _global_accesses(dtype, vec, form, 1, like=False)
    for ops in (alike, other):
        assert any(".v4." in op for op in ops["ld"])
    assert any(".v4." in op for op in alike["st"])
    assert other["st"] and not any(".v" in op for op in other["st"])


def test_rows_alike() -> None:
    """``Y_LIKE_X`` holds where every output row sits in its 16-byte blocks as its input row,
    given pointers alike: elements of one size, row strides equal modulo a vector."""
    def alike(x_strides: tuple[int, int], y_strides: tuple[int, int], vec: int = 8,
              y_dtype: torch.dtype = torch.bfloat16) -> bool:
        layout = row_layout((6, 10, 333), 2, (10 * x_strides[0], *x_strides),
                            (10 * y_strides[0], *y_strides))
        return launcher.rows_alike(layout, vec, torch.bfloat16, y_dtype)

    assert alike((333, 1), (333, 1))
    assert alike((341, 1), (333, 1))  # rows 8 elements further apart each: a vector
    assert not alike((336, 1), (333, 1))
    assert not alike((333, 1), (333, 1), vec=1)  # no aligned bodies
    assert not alike((333, 1), (333, 1), y_dtype=torch.float32)
