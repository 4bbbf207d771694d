"""The launcher: which Triton target is active, which kernel variant and tile a shape gets, how
many programs to launch, and the cache of compiled-kernel launch configurations.

The target is resolved once per process from ``triton.runtime.driver.active`` ("npu" for
triton-ascend, "cuda"/"hip" for upstream Triton, "cpu" when there is no driver or Triton runs its
interpreter). ``kernels`` maps everything that changes a compiled binary (variant, tile sizes,
dtypes, 64-bit indexing, target, device) to the number of programs that binary runs at once, so a
new shape that maps to a known key neither compiles nor measures anything again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from dataclasses import dataclass
from typing import Any, Callable

import torch
import triton

from . import _compat
from . import kernels as K
from . import kernels_backward as KB
from .backends import Backend, InterpreterBackend, for_target
from .layout import RowLayout

#: torch device type served by each Triton backend.
DEVICE_TYPE = {"npu": "npu", "cuda": "cuda", "hip": "cuda"}
#: torch device types whose tensors Triton's interpreter can run on.
INTERPRETED_DEVICE_TYPES = ("cpu", "cuda", "npu")


@dataclass(frozen=True)
class Target:
    """The Triton target of this process."""

    backend: str  # "npu", "cuda", "hip" or "cpu"
    arch: str  # e.g. "Ascend910B3", "90"; "interpreter" or "none" on cpu
    interpreter: bool


@functools.cache
def target() -> Target:
    """The active Triton target, resolved once (a per-call lookup would cost host time and break
    graphs in traced code)."""
    if _compat.interpreter_enabled():
        return Target("cpu", "interpreter", True)
    found = _compat.current_target()
    if found is None:
        return Target("cpu", "none", False)
    return Target(str(found.backend), str(found.arch), False)


@functools.cache
def backend() -> Backend:
    """The sizing rules of the active target."""
    t = target()
    return for_target(t.backend, t.arch)


def serves(device: torch.device) -> bool:
    """Whether the Triton kernels run for tensors on ``device``.

    The interpreter takes tensors with data (cpu, and cuda/npu by copying through the host),
    never ``meta`` ones, which have no data to read.
    """
    return _serves_type(device.type)


@functools.cache
def _serves_type(device_type: str) -> bool:
    t = target()
    if t.interpreter:
        return device_type in INTERPRETED_DEVICE_TYPES
    return DEVICE_TYPE.get(t.backend) == device_type


@functools.cache
def core_count(device_index: int) -> int:
    """Cores of one device (SMs, vector cores; a few programs under the interpreter)."""
    return backend().core_count(device_index)


#: Most programs that share one row in the split variant.
MAX_SPLITS = 128


@dataclass(frozen=True)
class Plan:
    """A kernel variant and its compile-time tile for one call."""

    variant: str  # "tile", "online" or "split"
    block_m: int  # rows per iteration (tile variant; 1 otherwise)
    block_n: int  # columns per block or per chunk
    n_splits: int  # programs sharing one row (split variant; 1 otherwise)
    index_64: bool  # 64-bit offsets

    def split_cols(self, n_cols: int) -> int:
        """Columns per work item of the split variant: a whole number of ``block_n`` chunks."""
        return triton.cdiv(triton.cdiv(n_cols, self.n_splits), self.block_n) * self.block_n

    def partials(self, n_rows: int, out_dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """An empty ``[n_rows, n_splits]`` buffer for the split variant's per-range results:
        float32, or float64 for float64 output."""
        acc = torch.float64 if out_dtype == torch.float64 else torch.float32
        return torch.empty((n_rows, self.n_splits), dtype=acc, device=device)


def plan(layout: RowLayout, itemsize: int, n_cores: int, be: Backend,
         variant: str | None = None, streams: int = 1) -> Plan:
    """Choose the variant and tile for a row matrix of ``itemsize``-byte elements.

    * rows that fit the target's tile: ``tile``, several rows per iteration when they are short;
    * longer rows, fewer rows than cores: ``split`` (each row shared by several programs);
    * longer rows otherwise: ``online`` (one row per iteration, looped).

    ``variant`` forces a variant (tests use it to run each one on small shapes). ``streams`` is
    how many tensors a kernel reads per element (2 for the backward's ``y`` and ``dy``): the
    tile and chunk budgets are shared between them.
    """
    return _plan(layout.n_rows, layout.n_cols, layout.max_offset(), itemsize, n_cores,
                 be.for_layout(layout), variant, streams)


@functools.lru_cache(maxsize=4096)
def _plan(n_rows: int, n_cols: int, max_offset: int, itemsize: int, n_cores: int, be: Backend,
          variant: str | None, streams: int) -> Plan:
    # plan() on plain numbers, cached: a call with a shape seen before costs a dict lookup.
    full_block = triton.next_power_of_2(n_cols)
    fits = full_block * streams <= be.tile_elems(itemsize)
    def chunk(kind: str) -> int:
        return min(max(1, be.chunk_elems(itemsize, kind) // streams), full_block)

    most_splits = triton.cdiv(n_cols, chunk("split"))
    if variant is None:
        if fits:
            variant = "tile"
        elif n_rows < n_cores and most_splits > 1:
            variant = "split"
        else:
            variant = "online"
    block_m, block_n, n_splits = 1, chunk(variant), 1
    if variant == "tile":
        block_n = full_block
        block_m = be.rows_per_block(block_n, n_rows, n_cores, itemsize)
    elif variant == "split":
        # About four work items per core (measured best on an H100), at most MAX_SPLITS.
        wanted = min(triton.cdiv(4 * n_cores, n_rows), MAX_SPLITS)
        n_splits = triton.next_power_of_2(max(2, min(wanted, most_splits)))
    reach = max(max_offset, n_rows * n_splits) + block_m * block_n * n_splits
    return Plan(variant, block_m, block_n, n_splits, index_64=reach >= 2**31)


kernels: dict[tuple, int] = {}
_lock = threading.RLock()
#: (kernel key, argument specialisation) -> a direct launcher of the compiled binary (GPUs).
_direct: dict[tuple, Callable] = {}


def _specialisation(args: tuple) -> tuple:
    """What Triton specialises a binary on, for each argument (a superset, to be safe): a
    tensor's 16-byte alignment; an integer being 1, a multiple of 16, or wider than 32 bits.
    Floats are never specialised."""
    return tuple([a.data_ptr() % 16 == 0 if type(a) is torch.Tensor
                  else None if type(a) is float
                  else (a == 1, a % 16 == 0, -2**31 <= a < 2**31) for a in args])


def _launch(key: tuple, kernel: Any, n_items: int, args: tuple, constexprs: dict[str, Any],
            device_index: int, block_elems: int) -> None:
    """Launch ``kernel`` over ``n_items`` work items on a persistent grid.

    The first call for a ``key`` sizes the grid (compiling on GPUs) and launches under a lock,
    so threads racing on a new key compile it once; later calls only read ``kernels``. On
    CUDA/HIP a binary already launched once for the same argument specialisation is started
    directly, skipping Triton's per-call argument binding (most of a small call's host time).
    """
    be = backend()
    max_programs = kernels.get(key)
    direct_key = None
    if max_programs is not None and be.name in ("cuda", "hip"):
        direct_key = (key, _specialisation(args))
        direct = _direct.get(direct_key)
        if direct is not None:
            n_const = tuple(constexprs[name] for name in kernel.arg_names[len(args):])
            direct(max(1, min(max_programs, n_items)), args + n_const)
            return
    options = be.options(block_elems)
    if max_programs is None or isinstance(be, InterpreterBackend):
        # The interpreter patches triton.language globally while it runs: one launch at a time.
        with _lock:
            max_programs = kernels.get(key)
            if max_programs is None:
                max_programs = be.max_programs(kernel, args, constexprs, options, device_index)
            grid = (max(1, min(max_programs, n_items, be.max_grid)),)
            kernel[grid](*args, **constexprs, **options)
            kernels[key] = max_programs
        return
    grid = (max(1, min(max_programs, n_items, be.max_grid)),)
    compiled = kernel[grid](*args, **constexprs, **options)
    if direct_key is not None:
        direct = _compat.direct_launcher(compiled)
        if direct is not None:
            _direct[direct_key] = direct


def launch_softmax(x: torch.Tensor, y: torch.Tensor, layout: RowLayout,
                   variant: str | None = None, *, log: bool = False,
                   scale: float = 1.0) -> Plan:
    """Write ``softmax(x * scale)`` (``log_softmax`` with ``log``) into ``y`` along the rows of
    ``layout``; return the plan used.

    ``x`` and ``y`` are on one device; ``y``'s dtype is the output dtype; no element is empty.
    ``y`` may be ``x`` itself (every variant reads an element before writing it, in one program).
    """
    be = backend()
    device_index = x.device.index or 0
    p = plan(layout, max(x.element_size(), y.element_size()), core_count(device_index), be,
             variant)
    n_rows, n_cols, n_inner = layout.n_rows, layout.n_cols, layout.n_inner
    key = (p.variant, p.block_m, p.block_n, p.n_splits, p.index_64, x.dtype, y.dtype, log,
           be.name, x.device.type, device_index)
    args = (y, x, n_rows, n_cols, n_inner, *layout.x_strides, *layout.y_strides, scale)
    with _device_guard(x.device):
        if p.variant == "tile" and p.block_m == 1:
            _launch(key, K.softmax_row_kernel, n_rows, args,
                    {"BLOCK_N": p.block_n, "INDEX_64": p.index_64, "LOG": log}, device_index,
                    p.block_n)
        elif p.variant == "tile":
            _launch(key, K.softmax_tile_kernel, triton.cdiv(n_rows, p.block_m), args,
                    {"BLOCK_M": p.block_m, "BLOCK_N": p.block_n, "INDEX_64": p.index_64,
                     "LOG": log}, device_index, p.block_m * p.block_n)
        elif p.variant == "online":
            _launch(key, K.softmax_online_kernel, n_rows, args,
                    {"BLOCK_N": p.block_n, "INDEX_64": p.index_64, "LOG": log}, device_index,
                    p.block_n)
        else:
            _launch_split(x, y, layout, p, key, device_index, log, scale)
    return p


def launch_softmax_backward(dy: torch.Tensor, y: torch.Tensor, dx: torch.Tensor,
                            layout: RowLayout, variant: str | None = None, *,
                            log: bool = False, scale: float = 1.0) -> Plan:
    """Write the gradient of ``softmax(x * scale)`` (``log_softmax`` with ``log``) into ``dx``,
    from the forward's output ``y`` and the incoming gradient ``dy``; return the plan used.

    ``layout.x_strides`` address ``dy``; ``layout.y_strides`` address both ``y`` and ``dx``.
    The variant and tile come from the forward's ``plan``, for two input streams.
    """
    be = backend()
    device_index = dy.device.index or 0
    itemsize = max(dy.element_size(), y.element_size(), dx.element_size())
    p = plan(layout, itemsize, core_count(device_index), be, variant, streams=2)
    n_rows, n_cols, n_inner = layout.n_rows, layout.n_cols, layout.n_inner
    key = ("backward", p.variant, p.block_m, p.block_n, p.n_splits, p.index_64, dy.dtype,
           y.dtype, dx.dtype, log, be.name, dy.device.type, device_index)
    rows = (n_rows, n_cols, n_inner, *layout.x_strides, *layout.y_strides)
    flags = {"BLOCK_N": p.block_n, "INDEX_64": p.index_64, "LOG": log}
    with _device_guard(dy.device):
        if p.variant == "tile":
            _launch(key, KB.softmax_bwd_tile_kernel, triton.cdiv(n_rows, p.block_m),
                    (dx, y, dy, *rows, scale), {**flags, "BLOCK_M": p.block_m}, device_index,
                    p.block_m * p.block_n)
        elif p.variant == "online":
            _launch(key, KB.softmax_bwd_online_kernel, n_rows, (dx, y, dy, *rows, scale), flags,
                    device_index, p.block_n)
        else:
            dots = p.partials(n_rows, y.dtype, dy.device)
            split_cols = p.split_cols(n_cols)
            n_items = n_rows * p.n_splits
            flags["N_SPLITS"] = p.n_splits
            _launch(key + ("dot",), KB.softmax_bwd_split_dot_kernel, n_items,
                    (dots, y, dy, *rows, split_cols), flags, device_index, p.block_n)
            _launch(key + ("grad",), KB.softmax_bwd_split_grad_kernel, n_items,
                    (dx, dots, y, dy, *rows, split_cols, scale), flags, device_index, p.block_n)
    return p


def _launch_split(x: torch.Tensor, y: torch.Tensor, layout: RowLayout, p: Plan, key: tuple,
                  device_index: int, log: bool, scale: float) -> None:
    # Partial max and sum per (row, split).
    part_max = p.partials(layout.n_rows, y.dtype, x.device)
    part_sum = torch.empty_like(part_max)
    split_cols = p.split_cols(layout.n_cols)
    n_items = layout.n_rows * p.n_splits
    rows = (layout.n_rows, layout.n_cols, layout.n_inner)
    common = {"N_SPLITS": p.n_splits, "BLOCK_N": p.block_n, "INDEX_64": p.index_64}
    _launch(key + ("stats",), K.softmax_split_stats_kernel, n_items,
            (part_max, part_sum, x, *rows, *layout.x_strides, split_cols, scale),
            common, device_index, p.block_n)
    _launch(key + ("norm",), K.softmax_split_norm_kernel, n_items,
            (y, part_max, part_sum, x, *rows, *layout.x_strides, *layout.y_strides, split_cols,
             scale), {**common, "LOG": log}, device_index, p.block_n)


def _device_guard(device: torch.device) -> Any:
    """Make ``device`` current so Triton launches there (and on its current stream)."""
    if device.index is None or device.type not in ("cuda", "npu"):
        return contextlib.nullcontext()
    if device.type == "cuda":
        return torch.cuda._DeviceGuard(device.index)  # the cheap guard compiled code uses
    return torch.npu.device(device.index)


def reachable_plans(be: Backend, itemsize: int, n_cores: int, col_stride: int = 1) -> list[Plan]:
    """Every distinct ``Plan`` that ``plan()`` can choose on ``be`` for ``itemsize``-byte elements
    on a device of ``n_cores`` cores, for rows whose elements lie ``col_stride`` apart (1: softmax
    over the last dim; more: over an inner dim), sorted; for ahead-of-time compile checks.

    ``plan()`` itself is run over a sweep of (n_rows, n_cols) shapes that reaches each
    of its branches: row lengths at and just past every power of two (every ``block_n``), row
    counts from 1 to past twice the cores (every ``n_splits``) and at each power of two times the
    cores (every ``block_m``). Strided views can set ``index_64`` for any tile, so every plan is
    returned with both index widths.
    """
    # Long enough that a single row is split as many ways as plan() ever splits one.
    max_cols = 4 * n_cores * max(be.tile_elems(itemsize), be.chunk_elems(itemsize, "online"),
                                  be.chunk_elems(itemsize, "split"))
    col_counts = sorted({c for k in range(max_cols.bit_length()) for c in (1 << k, (1 << k) + 1)})
    row_counts = set(range(1, 2 * n_cores + 2))
    row_counts |= {n_cores << k for k in range(be.tile_elems(itemsize).bit_length() + 1)}
    found = set()
    for n_cols in col_counts:
        for n_rows in sorted(row_counts):
            # Rows of a contiguous (n_rows // col_stride, n_cols, col_stride) tensor.
            strides = (n_cols * col_stride, 1, col_stride) if col_stride > 1 else (n_cols, 0, 1)
            inner = min(col_stride, n_rows)
            layout = RowLayout(n_rows, n_cols, inner, strides, strides)
            p = plan(layout, itemsize, n_cores, be)
            for wide in (False, True):
                found.add(dataclasses.replace(p, index_64=wide))
    return sorted(found, key=lambda p: (p.variant, p.block_n, p.block_m, p.n_splits, p.index_64))
