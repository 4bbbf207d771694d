#!/usr/bin/env python3
"""Compile every Ascend kernel the launcher can choose, as far as a machine without CANN can.

For each target (A2: Ascend910B3, A5: Ascend910_9599), dtype (fp32, fp16, bf16), input layout
(``ascend_cpu.inputs``) and plan that ``npu_softmax.launcher.reachable_plans`` (or, for
interleaved rows, ``reachable_column_plans``) lists for the NPU backend, each kernel of the plan
goes through triton-ascend's own pipeline with ``triton.compile`` (for ``--sampled-dtypes``, the
smallest and largest plan of each kernel only):

1. ``ttir``      Triton IR (triton-ascend's frontend and TTIR passes);
2. ``ttadapter`` linalg/HIVM input (triton-ascend's ``triton-adapter-opt``);
3. ``bishengir`` the whole BiShengIR pipeline of the ascendnpu-ir wheel, with the options the
   launcher passes (``multibuffer``), up to memory planning and the HIVM IR; it then calls the
   external ``hivmc`` of CANN, which is not on PyPI: that call failing is the expected end.

The UB check rides on that same bishengir run (triton-ascend's own command line, see
``_compiler_dir``), with ``--enable-tuning-mode`` (no silent retry without multi-buffering when
the plan does not fit) and ``--save-temps``; the UB the plan uses is read from bishengir's own
report (A5:
``--enable-print-memory-allocated-size``) or from the planned buffer offsets in the HIVM IR (A2,
whose bishengir has no such flag). It must fit the UB the launcher assumes (``ub_bytes(arch)``,
also checked against the chip spec bishengir compiles for); the launcher's estimate
(``AscendBackend.tile_ub_bytes``) is printed beside it.

4. ``--cpu-run``: plans also run on the CPU from the same ``.ttadapter`` IR, lowered with
   LLVM/MLIR 19 (``scripts/ascend_cpu.py``), against ``torch.softmax`` in float64.

Exits 1 when any kernel stops before ``bishengir``'s end, does not fit, or computes a wrong
softmax on the CPU; prints a table.
Usage: ``python scripts/compile_ascend.py [--targets A2,A5] [--dtypes fp32,fp16,bf16] [-j N]
[--cpu-run none|some|all]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import hashlib
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

from npu_softmax import _compat, launcher
from npu_softmax import kernels as K
from npu_softmax import kernels_backward as KB
from npu_softmax import kernels_cols as KC
from npu_softmax.backends import AscendBackend
from npu_softmax.backends.ascend import ub_bytes
from npu_softmax.layout import row_layout

sys.path.insert(0, str(Path(__file__).parent))
import ascend_cpu  # noqa: E402  (the sibling module, from scripts/)

#: Stages in order; "npubin" needs CANN's hivmc and is never reached here.
STAGES = ("ttir", "ttadapter", "bishengir", "npubin")
#: The furthest stage this machine can reach.
REACHABLE = "bishengir"


@dataclasses.dataclass(frozen=True)
class Target:
    """An Ascend chip to compile for."""

    name: str  # "A2", "A5"
    arch: str  # bishengir --target
    vector_cores: int  # sizes the plan sweep; checked against bishengir's chip spec
    compiler: str  # binary of the ascendnpu-ir wheel
    options: tuple[tuple[str, Any], ...] = ()  # extra triton-ascend options for this chip


TARGETS = {
    "A2": Target("A2", "Ascend910B3", 40, "bishengir-compile"),
    # Ascend 950 (triton-ascend calls it 910_95): its own bishengir build and compile path.
    "A5": Target("A5", "Ascend910_9599", 72, "bishengir-compile-a5",
                 (("compile_on_910_95", True),)),
}
DTYPES = {"fp32": tl.float32, "fp16": tl.float16, "bf16": tl.bfloat16}


@dataclasses.dataclass
class Row:
    """One compiled kernel and how far it went."""

    target: str
    dtype: str
    layout: str  # the input the kernel was specialised for (ascend_cpu.inputs)
    kernel: str
    plan: launcher.Plan
    stage: str = "-"
    ub_used: int | None = None  # bytes planned (or required, when over)
    ub_model: int = 0  # the launcher's estimate
    ub_budget: int = 0  # the UB the launcher assumes for the arch
    multibuffer: bool = True
    cpu_error: float | None = None  # max |y - softmax(x)| of the CPU run, when one ran
    error: str = ""
    seconds: float = 0.0
    cached: bool = False  # taken from an earlier run's results (same inputs)

    @property
    def ok(self) -> bool:
        return (not self.error and self.stage == REACHABLE and self.ub_used is not None
                and self.ub_used <= self.ub_budget)


def kernels_of(p: launcher.Plan, backward: bool = False) -> list[Any]:
    """The Triton kernels ``launch_softmax`` (``launch_softmax_backward`` with ``backward``)
    runs for a plan."""
    if p.variant == "cols":
        if p.n_splits == 1:
            return [KC.softmax_bwd_cols_kernel if backward else KC.softmax_cols_kernel]
        if backward:
            return [KC.softmax_bwd_cols_split_dot_kernel, KC.softmax_bwd_cols_split_grad_kernel]
        return [KC.softmax_cols_split_stats_kernel, KC.softmax_cols_split_norm_kernel]
    if backward:
        if p.variant == "tile":
            return [KB.softmax_bwd_tile_kernel if p.block_m > 1 else KB.softmax_bwd_row_kernel]
        if p.variant == "online":
            return [KB.softmax_bwd_online_kernel]
        return [KB.softmax_bwd_split_dot_kernel, KB.softmax_bwd_split_grad_kernel]
    if p.variant == "tile":
        return [K.softmax_tile_kernel if p.block_m > 1 else K.softmax_row_kernel]
    if p.variant == "online":
        return [K.softmax_online_kernel]
    return [K.softmax_split_stats_kernel, K.softmax_split_norm_kernel]


def _kernel(name: str) -> Any:
    # A kernel of kernels.py, kernels_backward.py or kernels_cols.py by name.
    for module in (K, KB, KC):
        if isinstance(getattr(module, name, None), triton.runtime.JITFunction):
            return getattr(module, name)
    raise KeyError(name)


@functools.lru_cache(maxsize=32)
def specialise(fn: Any, p: launcher.Plan, dtype_name: str, arch: str,
               layout: str) -> tuple[dict, dict, list]:
    """Signature, constants and 16-divisible arguments of ``fn`` exactly as triton-ascend's JIT
    derives them (its binder and ``AttrsDescriptor``) when ``launch_softmax`` runs plan ``p``
    on ``ascend_cpu.example(p, dtype_name, layout)``: e.g. unit strides and ``n_inner`` of 1
    become constants; ``n_rows``/``n_cols`` never do (``do_not_specialize``). Other shapes can
    give other specialisations of the same kernel. Kept for the last few kernels (a plan's
    job asks several times): read the result, never change it."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend

    x, dim = ascend_cpu.example(p, dtype_name, layout)
    values = {**ascend_cpu.launch_values(p, x, torch.empty(x.shape, dtype=x.dtype), dim),
              "OUT_TY": DTYPES[dtype_name]}
    backend = make_backend(GPUTarget("npu", arch, 0))
    if fn.binder is None:
        fn.create_binder(backend)
    runtime = [q for q in fn.params if not q.is_constexpr]
    bound, sig_and_spec, *_ = fn.binder(*(values[q.name] for q in runtime),
                                        **{q.name: values[q.name] for q in fn.params
                                           if q.is_constexpr})
    attrs = backend.get_attrs_descriptor(fn.params, tuple(bound.values()))
    fixed = attrs.get_constants()
    signature = {q.name: ty for q, ty in zip(runtime, sig_and_spec)}
    constants = {q.name: values[q.name] for q in fn.params if q.is_constexpr or q.num in fixed}
    aligned = [fn.params[i].name for i in attrs.arg_properties.get("tt.divisibility", [])]
    return signature, constants, aligned


# ---------------------------------------------------------------------------------------------
# Worker side: one process compiles one kernel at a time.

_BIN = None


def _setup_worker(cache_root: str) -> None:
    """Point triton-ascend at the ascendnpu-ir binaries and at the arch being compiled for."""
    global _BIN
    import ascendnpuir
    from triton.backends import backends

    _BIN = Path(ascendnpuir.__file__).parent / "bin"
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(dir=cache_root)
    # triton-ascend asks the device for the arch while building the bishengir command
    # (NPUUtils().get_arch() compiles a helper against CANN). Here the arch is the target's:
    # the stage functions read NPUUtils from the backend module's globals, so it is set there.
    stage_globals = backends["ascend"].compiler.add_stages.__globals__

    class _TargetArch:
        def get_arch(self) -> str:
            return os.environ["NPU_SOFTMAX_ARCH"]

    stage_globals["NPUUtils"] = _TargetArch


def _compiler_dir(t: Target, cache_root: str) -> str:
    """A folder whose ``bishengir-compile`` runs the target's bishengir from the ascendnpu-ir
    wheel with triton-ascend's arguments unchanged, plus: ``--enable-tuning-mode`` (a memory
    plan that does not fit is an error, instead of a silent retry without multi-buffering),
    ``--save-temps`` (the HIVM IR, with the planned UB offsets) and, where the build has it,
    ``--enable-print-memory-allocated-size``. triton-ascend runs whatever ``bishengir-compile``
    is first on PATH.

    triton-ascend reads ``bishengir-compile --help`` to pick flags, several times a kernel: the
    wrapper answers a plain ``--help`` with the real one's output, saved once, and passes any
    other call with ``--help`` through untouched."""
    folder = Path(cache_root) / f"bin-{t.name}"
    wrapper = folder / "bishengir-compile"
    if not wrapper.exists():
        folder.mkdir(exist_ok=True)
        real = _BIN / t.compiler
        help_run = subprocess.run([str(real), "--help"], capture_output=True, text=True)
        (folder / "help.out").write_text(help_run.stdout)
        (folder / "help.err").write_text(help_run.stderr)
        extra = "--enable-tuning-mode --save-temps=\"$NPU_SOFTMAX_TEMPS\""
        if "--enable-print-memory-allocated-size" in help_run.stdout:
            extra += " --enable-print-memory-allocated-size"
        # Written whole under another name, then renamed: a worker that finds the wrapper
        # (other workers share the folder) finds it complete.
        partial = folder / f"wrapper.{os.getpid()}"
        partial.write_text(
            "#!/bin/sh\n"
            f'case " $* " in " --help ") cat "{folder}/help.out"; cat "{folder}/help.err" >&2; '
            f"exit {help_run.returncode};;\n"
            f'    *" --help "*) exec "{real}" "$@";;\nesac\n'
            f'exec "{real}" "$@" {extra} > "$NPU_SOFTMAX_TEMPS/stdout.txt"\n')
        partial.chmod(0o755)
        os.replace(partial, wrapper)
    return str(folder)


def _inputs_digest() -> str:
    """Hash of what every plan's rows depend on besides the job (``_job_inputs``): the kernels'
    source and the code that specialises, compiles and checks them, and the toolchain
    versions. The launcher and backends enter through each job's own inputs instead, so a
    change to them that leaves the Ascend compiles alone (a CUDA rule, say) keeps the results."""
    import importlib.metadata

    pkg = Path(K.__file__).parent
    files = [pkg / n for n in ("kernels.py", "kernels_cols.py", "kernels_backward.py", "layout.py",
                               "_compat.py")]
    files += [Path(__file__), Path(ascend_cpu.__file__)]
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    for dist in ("triton-ascend", "ascendnpu-ir", "torch"):
        h.update(importlib.metadata.version(dist).encode())
    return h.hexdigest()


def cached_plan(results: str | None, digest: str, t: Target, dtype_name: str,
                p: launcher.Plan, layout: str, cache_root: str,
                cpu_root: str | None) -> list[Row]:
    """``compile_plan``, remembered in ``results`` (a folder) when every row passed: the rows
    are a deterministic function of the job and of ``digest``'s inputs, so an unchanged plan is
    not compiled again by the next run on this machine."""
    if results is None:
        return compile_plan(t, dtype_name, p, layout, cache_root, cpu_root)
    job = repr((digest, t, dtype_name, p, layout, cpu_root is not None,
                _job_inputs(t, dtype_name, p, layout))).encode()
    path = Path(results) / f"{hashlib.sha256(job).hexdigest()}.pickle"
    if path.exists():
        rows = pickle.loads(path.read_bytes())
        for r in rows:
            r.cached = True
        return rows
    rows = compile_plan(t, dtype_name, p, layout, cache_root, cpu_root)
    if all(r.ok for r in rows):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(rows))
    return rows


def _job_inputs(t: Target, dtype_name: str, p: launcher.Plan, layout: str) -> tuple:
    """What the package gives a plan's compiles and checks beyond the kernels' source: each
    kernel's specialisation (signature, constants with the launcher's flags, 16-divisible
    arguments), the backend's compile options, the UB budget and the UB model printed."""
    x, dim = ascend_cpu.example(p, dtype_name, layout)
    be = AscendBackend(t.arch).for_layout(
        row_layout(x.shape, dim % x.dim(), x.stride(), torch.empty(x.shape).stride()),
        x.element_size())
    tile = (p.block_n, p.block_m) if p.variant == "cols" else (p.block_m, p.block_n)
    return (sorted(be.options(p, x.element_size()).items()), ub_bytes(t.arch),
            be.tile_ub_bytes(*tile),
            [(fn.__name__, specialise(fn, p, dtype_name, t.arch, layout)) for fn in kernels_of(p)])


def compile_plan(t: Target, dtype_name: str, p: launcher.Plan, layout: str, cache_root: str,
                 cpu_root: str | None) -> list[Row]:
    """Every kernel of plan ``p``; then, with ``cpu_root`` (LLVM/MLIR 19) and when all reached
    bishengir's end, the plan run on the CPU from the same linalg IR."""
    rows, adapters = [], []
    for fn in kernels_of(p):
        row, adapter = compile_one(t, dtype_name, p, layout, fn.__name__, cache_root)
        rows.append(row)
        signature, constants, _ = specialise(fn, p, dtype_name, t.arch, layout)
        adapters.append((fn.__name__, [n for n in signature if n not in constants], adapter))
    if cpu_root and all(r.ok for r in rows):
        from triton.backends import backends

        tc = ascend_cpu.Toolchain(cpu_root)
        try:
            err = ascend_cpu.check_plan(p, dtype_name, layout, adapters, tc,
                                        backends["ascend"].compiler.add_stages.__globals__)
        except (subprocess.CalledProcessError, OSError) as e:
            for r in rows:
                r.error = f"CPU run: {_first_error(str(getattr(e, 'stderr', '') or e))}"
            return rows
        allowed = ascend_cpu.allowed_errors(p, dtype_name, layout)
        for r in rows:
            r.cpu_error = max(err)
            for e, a in zip(err, allowed):
                if not e <= a:
                    r.error = f"CPU run differs from torch by {e:.3g} (allowed {a:.3g})"
    return rows


def compile_one(t: Target, dtype_name: str, p: launcher.Plan, layout: str, fn_name: str,
                cache_root: str) -> tuple[Row, str]:
    """Run one kernel through triton-ascend and bishengir; measure its UB plan. Returns the row
    and the kernel's ``.ttadapter`` text ("" when it stopped before)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.errors import MLIRCompilationError

    if _BIN is None:
        _setup_worker(cache_root)
    start = time.time()
    x, dim = ascend_cpu.example(p, dtype_name, layout)
    y_strides = torch.empty(x.shape).stride()
    be = AscendBackend(t.arch).for_layout(row_layout(x.shape, dim % x.dim(), x.stride(),
                                                     y_strides), x.element_size())
    fn = _kernel(fn_name)
    # A cols tile [BLOCK_C, BLOCK_I] is BLOCK_C rows of BLOCK_I contiguous elements; the
    # backward's kernels hold two tensors' tiles.
    tile_rows, tile_cols = (p.block_n, p.block_m) if p.variant == "cols" else (p.block_m, p.block_n)
    streams = 2 if fn_name.startswith("softmax_bwd_") else 1
    row = Row(t.name, dtype_name, layout, fn_name.removeprefix("softmax_").removesuffix("_kernel"),
              p, ub_model=be.tile_ub_bytes(tile_rows, tile_cols) * streams,
              ub_budget=ub_bytes(t.arch))
    options = {**be.options(p, x.element_size()), **dict(t.options)}
    row.multibuffer = bool(options.get("multibuffer"))
    os.environ["NPU_SOFTMAX_ARCH"] = t.arch
    os.environ["PATH"] = _compiler_dir(t, cache_root) + os.pathsep + os.environ["PATH"]
    signature, constants, aligned = specialise(fn, p, dtype_name, t.arch, layout)
    src = _compat.ast_source(fn, signature, constants, aligned)
    adapter = ""
    temps = Path(tempfile.mkdtemp(dir=cache_root))
    os.environ["NPU_SOFTMAX_TEMPS"] = str(temps)
    try:
        triton.compile(src, target=GPUTarget("npu", t.arch, 0), options=options)
        row.stage = "npubin"
    except MLIRCompilationError as e:
        text = str(e)
        cache = re.search(r"compiled kernel cache is in (\S+)", text)
        done = {f.suffix.lstrip(".") for f in Path(cache.group(1)).iterdir()} if cache else set()
        row.stage = "ttadapter" if "ttadapter" in done else "ttir" if "ttir" in done else "-"
        if row.stage == "ttadapter":
            adapter = (Path(cache.group(1)) / f"{fn_name}.ttadapter").read_text()
        # bishengir ran its whole pipeline when its only diagnostic is the missing hivmc.
        errors = [line for line in text.splitlines()
                  if ": error: " in line and "External hivmc run fails" not in line]
        over = re.search(r"ub overflow, requires (\d+) bits", text)
        if over:
            row.ub_used = int(over.group(1)) // 8
            row.error = f"UB overflow (multibuffer={row.multibuffer})"
        elif row.stage == "ttadapter" and "hivmc" in text and not errors:
            row.stage = REACHABLE
            _read_ub(row, temps, t)
        else:
            row.error = _first_error(text)
    except Exception as e:  # a frontend error: the kernel does not lower at all
        row.error = f"{type(e).__name__}: {_first_error(str(e))}"
    row.seconds = time.time() - start
    return row, adapter


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if ": error: " in line or "Error" in line:
            return line.strip()[:160]
    return text.strip().splitlines()[-1][:160] if text.strip() else "unknown error"


def _read_ub(row: Row, temps: Path, target: Target) -> None:
    """UB the memory plan uses: bishengir's own figure where it prints one (A5), else the
    highest planned buffer end in the HIVM IR it saved (A2)."""
    hivm = temps / "module.hivm.opt.mlir"
    if not hivm.exists():
        row.error = "bishengir saved no HIVM IR"
        return
    ir = hivm.read_text()
    _check_chip_spec(ir, target, row)
    out = (temps / "stdout.txt").read_text() if (temps / "stdout.txt").exists() else ""
    printed = re.search(r"Allocated UB size = (\d+) bits", out)
    row.ub_used = int(printed.group(1)) // 8 if printed else planned_ub_bytes(ir)


def _check_chip_spec(ir: str, target: Target, row: Row) -> None:
    spec = dict(re.findall(r'dl_entry<"(\w+)", (\d+) : i32>', ir))
    if int(spec.get("UB_SIZE", 0)) // 8 != row.ub_budget:
        row.error = f"launcher assumes {row.ub_budget} B of UB, chip spec says " \
                    f"{int(spec.get('UB_SIZE', 0)) // 8} B"
    elif int(spec.get("VECTOR_CORE_COUNT", 0)) != target.vector_cores:
        row.error = f"chip spec has {spec.get('VECTOR_CORE_COUNT')} vector cores, " \
                    f"the sweep assumed {target.vector_cores}"


_BITS = {"i1": 1, "i8": 8, "i16": 16, "f16": 16, "bf16": 16, "i32": 32, "f32": 32, "i64": 64,
         "f64": 64}


def planned_ub_bytes(hivm_ir: str) -> int:
    """Highest UB byte the memory plan uses: bishengir's PlanMemory gives every UB buffer a
    fixed byte offset, ``hivm.hir.pointer_cast(%offset) : memref<shape x type, ub>``."""
    consts = dict(re.findall(r"(%c\w+) = arith\.constant (\d+) : i64", hivm_ir))
    top = 0
    for offsets, shape in re.findall(
            r"hivm\.hir\.pointer_cast\(([^)]*)\)[^:\n]*: memref<([^,>]*)[^>]*address_space<ub>>",
            hivm_ir):
        *dims, elem = shape.split("x")
        count = 1
        for d in dims:
            count *= int(d)
        size = (count * _BITS[elem] + 7) // 8
        for name in offsets.split(","):
            top = max(top, int(consts[name.strip()]) + size)
    return top


# ---------------------------------------------------------------------------------------------
# Driver side.

def _size(p: launcher.Plan) -> tuple[int, int, int]:
    return p.block_m * p.block_n, p.n_splits, p.block_m


def _kernel_kind(p: launcher.Plan) -> tuple:
    # The row and multi-row tile kernels differ, and the cols kernels of one range per group and
    # of split groups, so each gets its own smallest and largest run.
    return p.variant, p.block_m > 1, p.n_splits > 1, p.index_64


@functools.cache
def _plans(t: Target, itemsize: int, layout: str) -> list[launcher.Plan]:
    be = AscendBackend(t.arch)
    if layout in ("inner", "transposed"):  # interleaved rows: cols plans
        return launcher.reachable_column_plans(be, itemsize, t.vector_cores,
                                               layout == "transposed")
    stride = ascend_cpu.COL_STRIDE if layout == "strided" else 1
    return launcher.reachable_plans(be, itemsize, t.vector_cores, stride)


def jobs(targets: list[Target], dtypes: list[str], layouts: list[str], cpu: str,
         sampled: tuple[str, ...] = ()) -> list[tuple]:
    """(target, dtype, plan, layout, run on CPU?) for every plan the launcher can pick. ``cpu``:
    "all", "none", or "some": the sample, per kernel and index width the smallest and largest
    tile or split. Dtypes in ``sampled`` compile the sample only."""
    out = []
    for t in targets:
        for dtype_name in dtypes:
            for layout in layouts:
                plans = _plans(t, DTYPES[dtype_name].primitive_bitwidth // 8, layout)
                sample = set()
                for kind in {_kernel_kind(p) for p in plans}:
                    group = [p for p in plans if _kernel_kind(p) == kind]
                    sample |= {min(group, key=_size), max(group, key=_size)}
                out += [(t, dtype_name, p, layout,
                         cpu == "all" or (cpu == "some" and p in sample)) for p in plans
                        if dtype_name not in sampled or p in sample]
    return out


def table(rows: list[Row]) -> str:
    head = ("target", "dtype", "layout", "kernel", "BLOCK_MxN", "splits", "i64", "stage", "UB used",
            "model", "budget", "cpu |err|", "ok")
    lines = [head]
    for r in rows:
        p = r.plan
        lines.append((r.target, r.dtype, r.layout, r.kernel, f"{p.block_m}x{p.block_n}",
                      str(p.n_splits), "y" if p.index_64 else "n", r.stage,
                      "?" if r.ub_used is None else str(r.ub_used), str(r.ub_model),
                      str(r.ub_budget), "-" if r.cpu_error is None else f"{r.cpu_error:.1e}",
                      "ok" if r.ok else "FAIL " + r.error))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1]
                     for line in lines)


def summary(rows: list[Row]) -> str:
    """One line per target, dtype, layout and kernel: how many compiled, the furthest stage all
    reached, the largest UB plan against the budget, and the CPU runs."""
    head = ("target", "dtype", "layout", "kernel", "kernels", "stage", "max UB used", "budget",
            "tile of max", "CPU runs", "max cpu |err|", "failed")
    lines = [head]
    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        groups.setdefault((r.target, r.dtype, r.layout, r.kernel), []).append(r)
    for key, group in groups.items():
        worst = max(group, key=lambda r: r.ub_used or 0)
        stages = {r.stage for r in group}
        ran = [r.cpu_error for r in group if r.cpu_error is not None]
        lines.append((*key, str(len(group)), "/".join(sorted(stages)), str(worst.ub_used),
                      str(worst.ub_budget), f"{worst.plan.block_m}x{worst.plan.block_n}",
                      str(len(ran)), f"{max(ran):.1e}" if ran else "-",
                      str(sum(not r.ok for r in group))))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |"
                     for line in lines[:1] + [tuple("-" * w for w in widths)] + lines[1:])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--targets", default="A2,A5", help="comma-separated: A2, A5")
    ap.add_argument("--dtypes", default="fp32,fp16,bf16")
    ap.add_argument("--sampled-dtypes", default="fp16",
                    help="dtypes compiled for the sampled plans only, or 'none'. fp16's plans "
                         "are bf16's, and in a full sweep (2026-11-25) each planned the same "
                         "UB as its bf16 twin")
    ap.add_argument("--layouts", default="last,strided,inner,transposed",
                    help="inputs to specialise for: last (dim -1), strided (dim -1 of a view "
                         "with row elements apart), inner (a middle dim), transposed (dim -1 "
                         "of a transposed matrix), view (dim -1 of a sliced 3-d view)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--cpu-run", choices=("none", "some", "all"), default="some",
                    help="which plans also run on the CPU from their linalg IR")
    ap.add_argument("--llvm19", default=str(Path(__file__).parents[1] / ".ci-cache" / "llvm19"),
                    help="Debian LLVM/MLIR 19 packages unpacked with dpkg -x (for --cpu-run)")
    ap.add_argument("--results", default=str(Path.home() / ".cache" / "npu_softmax" / "ascend"),
                    help="folder remembering passed plans across runs; 'none' to recompile all")
    args = ap.parse_args(argv)
    targets = [TARGETS[n] for n in args.targets.split(",")]
    cpu_root = None
    if args.cpu_run != "none":
        if not ascend_cpu.Toolchain(args.llvm19).available():
            print(f"no LLVM/MLIR 19 tools under {args.llvm19}: see scripts/ascend_cpu.py",
                  file=sys.stderr)
            return 2
        cpu_root = args.llvm19
    todo = jobs(targets, args.dtypes.split(","), args.layouts.split(","), args.cpu_run,
                tuple(args.sampled_dtypes.split(",")))
    print(f"triton {triton.__version__}: {len(todo)} plans, "
          f"{sum(run for *_, run in todo)} of them also run on the CPU, {args.jobs} processes",
          flush=True)
    start = time.time()
    with tempfile.TemporaryDirectory() as cache_root, \
            concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        results = None if args.results == "none" else args.results
        digest = _inputs_digest()
        futures = [pool.submit(cached_plan, results, digest, t, d, p, lay, cache_root,
                               cpu_root if run else None)
                   for t, d, p, lay, run in todo]
        rows = [row for f in futures for row in f.result()]
    print(table(rows))
    print()
    print(summary(rows))
    bad = [r for r in rows if not r.ok]
    print(f"{len(rows) - len(bad)} passed, {len(bad)} failed "
          f"({time.time() - start:.0f} s, {sum(r.cached for r in rows)} kernels from "
          f"{args.results}; furthest stage reachable here: {REACHABLE})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
