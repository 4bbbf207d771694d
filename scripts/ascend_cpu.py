"""Run Ascend-lowered softmax kernels on the CPU and compare them with torch in float64.

The input is the linalg IR triton-ascend hands to bishengir for an NPU (``.ttadapter``), so what
runs is the NPU compile path up to that point, not Triton's interpreter. It is lowered with
triton-ascend's own CPU-target pass list (``linalg_to_llir``) by Debian's LLVM/MLIR 19 tools
(``apt-get download mlir-19-tools libmlir-19 llvm-19 libllvm19`` unpacked with ``dpkg -x``), after
one extra pass the NPU form needs (``--convert-elementwise-to-linalg``: the NPU path keeps
elementwise ops on tensors for bishengir), then ``llc`` and ``cc`` make a shared object. Each
program of a persistent grid is one call, with the kernel's arguments followed by triton-ascend's
grid arguments (``num_programs`` then ``program_id``, x/y/z).

What this does not cover: bishengir's HIVM lowering and hivmc (the NPU code itself), UB
buffering, and the NPU's own float arithmetic.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import torch
import triton

from npu_softmax import launcher
from npu_softmax.layout import row_layout

TORCH_DTYPE = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
#: |y - softmax(x)| always allowed, per output dtype: a few ulps of the output near 1, and for
#: fp32 the rounding of ``x - max`` (|x| reaches ~20 here, so ~20 * 2**-24 in the exponent).
TOLERANCE = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1.6e-2}
#: Beyond that, the error may be this many times torch's own softmax in the same dtype (long
#: rows sum tens of thousands of terms in float32).
TORCH_FACTOR = 4
#: ... or this many standard deviations of a float32 sum of ``n_cols`` terms taken one after
#: another (``sqrt(n) * 2**-24``): LLVM lowers a chunk's ``tl.sum`` to a sequential loop, where
#: torch and the NPU's vector units sum in trees.
SUM_SIGMAS = 4
#: Programs of the persistent grid (each program loops over several work items).
PROGRAMS = 3
#: Distance between the elements of a row in the "strided" layout.
COL_STRIDE = 2


class Toolchain:
    """Debian's LLVM/MLIR 19 unpacked under ``root`` (the folder holding ``usr/``)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.llvm = self.root / "usr/lib/llvm-19"
        self.libs = [self.llvm / "lib", self.root / "usr/lib/x86_64-linux-gnu"]

    def available(self) -> bool:
        return all((self.llvm / "bin" / tool).exists() for tool in ("mlir-opt", "llc"))

    def env(self) -> dict[str, str]:
        paths = [str(p) for p in self.libs] + [os.environ.get("LD_LIBRARY_PATH", "")]
        return {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(p for p in paths if p),
                "MLIR_ROOT": str(self.llvm)}

    def load_runtime(self) -> None:
        # memrefCopy lives in MLIR's C runner utils, which need libLLVM: load both globally.
        for lib in ("usr/lib/x86_64-linux-gnu/libLLVM.so.19.1",
                    "usr/lib/llvm-19/lib/libmlir_c_runner_utils.so.19.1"):
            ctypes.CDLL(str(self.root / lib), mode=ctypes.RTLD_GLOBAL)


def build(adapter: str, fn_name: str, tc: Toolchain, stage_globals: dict, work: Path) -> Any:
    """Lower one kernel's ``.ttadapter`` text to a loaded CPU function."""
    src, ew = work / f"{fn_name}.mlir", work / f"{fn_name}.ew.mlir"
    src.write_text(adapter)
    env = tc.env()
    subprocess.run([str(tc.llvm / "bin/mlir-opt"), str(src), "--convert-elementwise-to-linalg",
                    "-o", str(ew)], check=True, capture_output=True, env=env)

    class _Options:
        debug = False

    saved = {k: os.environ.get(k) for k in ("MLIR_ROOT", "LD_LIBRARY_PATH")}
    os.environ.update({k: env[k] for k in saved})
    try:
        llir = stage_globals["linalg_to_llir"](ew.read_text(), {}, _Options())
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    ll, obj, so = (work / f"{fn_name}{ext}" for ext in (".ll", ".o", ".so"))
    ll.write_text(llir)
    subprocess.run([str(tc.llvm / "bin/llc"), "-O2", "-relocation-model=pic", "-filetype=obj",
                    str(ll), "-o", str(obj)], check=True, capture_output=True, env=env)
    subprocess.run(["cc", "-shared", str(obj), "-o", str(so), "-lm"], check=True,
                   capture_output=True)
    return getattr(ctypes.CDLL(str(so)), fn_name)


def _memref(t: torch.Tensor) -> list[Any]:
    # A rank-1 memref<?xT> as LLVM passes it: allocated and aligned pointers, offset, size, stride.
    p = ctypes.c_void_p(t.data_ptr())
    return [p, p, ctypes.c_int64(0), ctypes.c_int64(t.numel()), ctypes.c_int64(1)]


def inputs(plan: Any, dtype_name: str, layout: str) -> list[tuple[torch.Tensor, int]]:
    """Inputs for ``plan`` and the dim to normalise, the first the one its kernels are
    specialised for (the others share that specialisation). ``layout``:

    * "last": the last dim of a contiguous 2-d tensor;
    * "strided": the last dim of ``x[..., 0]`` for a contiguous ``(n, n_cols, COL_STRIDE)`` x
      (row elements apart, rows not interleaved);
    * "view": the last dim of a sliced 3-d view (rows not evenly spaced);
    * "inner" (``cols`` plans): the middle dim of a contiguous ``(2, n_cols, n_inner)`` tensor,
      ``n_inner`` filling the plan's groups one and a half times (rows interleaved);
    * "transposed" (``cols`` plans): the last dim of a transposed contiguous matrix of as many
      rows (interleaved in the input, contiguous in the output).

    Rows are a multiple of 16 elements long where the plan allows, as the power-of-two sizes of
    most models are, yet shorter than the block or not a whole number of chunks, and the row
    count leaves the last row block partly filled. A ``cols`` plan of one range per group
    holds its rows whole or loops over them by their length: it gets one input of each."""
    n_rows, col_counts, n_inner = _sizes(plan)
    return [_input(layout, TORCH_DTYPE[dtype_name], n_rows, n_cols, n_inner)
            for n_cols in col_counts]


@functools.lru_cache(maxsize=8)
def example(plan: Any, dtype_name: str, layout: str) -> tuple[torch.Tensor, int]:
    """The input ``plan``'s kernels are specialised for (the first of ``inputs``, alone), its
    elements left unset: a specialisation sees shapes, strides, dtypes and addresses only. Kept
    for the last few plans, since a plan's compiles ask for it several times: read it, never
    write it."""
    n_rows, col_counts, n_inner = _sizes(plan)
    return _input(layout, TORCH_DTYPE[dtype_name], n_rows, col_counts[0], n_inner, fill=False)


def _sizes(plan: Any) -> tuple[int, list[int], int]:
    # inputs()' row count, row lengths (one input each) and inner length for plan.
    bm, bn, splits = plan.block_m, plan.block_n, plan.n_splits
    whole, longer = bn - 16 if bn >= 32 else bn, 2 * bn + bn // 2 + 16
    if plan.variant == "tile":
        n_rows, col_counts = 2 * bm + 1, [whole]
    elif plan.variant == "online":
        n_rows, col_counts = 3, [longer]
    elif splits > 1:
        n_rows, col_counts = 2, [splits * bn - bn // 2 + 16]
    else:
        n_rows, col_counts = 2, [whole, longer]
    return n_rows, col_counts, 3 * bm // 2 if bm >= 32 else max(2, bm - 1)


def _input(layout: str, dtype: torch.dtype, n_rows: int, n_cols: int, n_inner: int,
           fill: bool = True) -> tuple[torch.Tensor, int]:
    # One input of inputs() for layout, and its dim; without fill, the same tensor unset.
    def make(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape) * 4).to(dtype) if fill else torch.empty(*shape, dtype=dtype)

    if layout == "view":  # rows 4 of every 5 along dim 1: the outer dims do not fold
        return make(triton.cdiv(n_rows, 4), 5, n_cols)[:, :4, :], -1
    if layout == "strided":
        return make(n_rows, n_cols, COL_STRIDE)[..., 0], -1
    if layout == "inner":
        return make(n_rows, n_cols, n_inner), 1
    if layout == "transposed":
        return make(n_cols, n_rows * n_inner).t(), -1
    return make(n_rows, n_cols), -1


def launch_values(plan: Any, x: torch.Tensor, y: torch.Tensor, dim: int) -> dict[str, Any]:
    """The arguments ``launcher.launch_softmax`` passes the kernels of ``plan`` for softmax over
    ``dim`` of ``x`` into ``y``, by parameter name (the row layout from the package's own
    ``row_layout``, in its ``columns()`` form for the ``cols`` variant); and the backward's
    kernels', for ``dy`` laid out as ``x`` and ``dx`` as ``y``."""
    rows = row_layout(x.shape, dim % x.dim(), x.stride(), y.stride())
    if plan.variant == "cols":
        rows = rows.columns()
    splits = plan.n_splits
    # Room for the split kernels' partial results: 2 per row (and padding row of a group).
    parts = 2 * (rows.n_rows + rows.n_rows // rows.n_inner * plan.block_m) * splits
    return {"y_ptr": y, "x_ptr": x, "n_rows": rows.n_rows, "n_cols": rows.n_cols,
            "n_inner": rows.n_inner, "dx_ptr": y, "dy_ptr": x, "dot_ptr": torch.empty(parts),
            **dict(zip(("x_outer_stride", "x_inner_stride", "x_col_stride"), rows.x_strides)),
            **dict(zip(("dy_outer_stride", "dy_inner_stride", "dy_col_stride"), rows.x_strides)),
            **dict(zip(("y_outer_stride", "y_inner_stride", "y_col_stride"), rows.y_strides)),
            "part_ptr": torch.empty(parts),
            "split_cols": plan.split_cols(rows.n_cols),
            "BLOCK_M": plan.block_m, "BLOCK_N": plan.block_n, "TAIL_N": plan.tail_n,
            "BLOCK_I": plan.block_m, "BLOCK_C": plan.block_n,
            "LAST_N": plan.last_n or plan.block_n, "INDEX_64": plan.index_64,
            "N_SPLITS": splits, "scale": 1.0, "LOG": False, "PDL": False,
            "FIRST_EVICT": "", "SECOND_EVICT": "", "EVICT": "",
            "STORE_CACHE": "", "VEC": 1, "STAT_LANES": 0, "ALIGN": 1,
            "Y_LIKE_X": False, "WORDS": False, "BODY": False, "WHOLE": -1}


def work_items(plan: Any, values: dict[str, Any]) -> int:
    """Work items of the kernels of ``plan`` (the persistent loop's trip count, all programs)
    given its ``launch_values``."""
    n_rows = values["n_rows"]
    if plan.variant == "tile":
        return triton.cdiv(n_rows, plan.block_m)
    if plan.variant == "cols":
        return launcher.column_groups(n_rows, values["n_inner"], plan.block_m) * plan.n_splits
    return n_rows * plan.n_splits


def _call(fn: Any, arg_names: list[str], values: dict[str, Any], n_items: int) -> None:
    scratch = torch.zeros(64, dtype=torch.int8)  # sync-block lock and workspace (unused here)
    args = _memref(scratch) + _memref(scratch)
    for name in arg_names:
        v = values[name]
        args += (_memref(v) if isinstance(v, torch.Tensor)
                 else [ctypes.c_float(v)] if isinstance(v, float) else [ctypes.c_int32(v)])
    grid = max(1, min(PROGRAMS, n_items))
    for pid in range(grid):
        fn(*args, *(ctypes.c_int32(v) for v in (grid, 1, 1, pid, 0, 0)))


def check_plan(plan: Any, dtype_name: str, layout: str,
               kernels: list[tuple[str, list[str], str]], tc: Toolchain,
               stage_globals: dict) -> list[float]:
    """Run the kernels of ``plan`` (``(name, runtime argument names, ttadapter)`` each, in
    launch order), compiled for ``example(plan, dtype_name, layout)``, on each of ``inputs``;
    return max |y - softmax(x)| of each against torch in float64."""
    torch.manual_seed(0)  # the inputs allowed_errors sees too
    cases = inputs(plan, dtype_name, layout)
    tc.load_runtime()
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        fns = [(build(adapter, name, tc, stage_globals, Path(tmp)), arg_names)
               for name, arg_names, adapter in kernels]
        for x, dim in cases:
            y = torch.full(x.shape, float("nan"), dtype=x.dtype)  # contiguous, as the API's
            values = launch_values(plan, x, y, dim)
            for fn, arg_names in fns:
                _call(fn, arg_names, values, work_items(plan, values))
            ref = torch.softmax(x.double(), dim)
            errors.append((y.double() - ref).abs().max().item())
    return errors


def allowed_errors(plan: Any, dtype_name: str, layout: str) -> list[float]:
    """Largest error ``check_plan`` may return for each input: the largest of ``TOLERANCE``,
    ``TORCH_FACTOR`` times the error of ``torch.softmax`` itself on the same input and dtype, and
    the spread of a sequential float32 sum over the row (``SUM_SIGMAS``)."""
    torch.manual_seed(0)
    out = []
    for x, dim in inputs(plan, dtype_name, layout):
        ref = torch.softmax(x.double(), dim)
        own = (torch.softmax(x, dim).double() - ref).abs().max().item()
        sequential = SUM_SIGMAS * math.sqrt(x.shape[dim]) * 2.0**-24
        out.append(max(TOLERANCE[dtype_name], TORCH_FACTOR * own, sequential))
    return out
