"""The launcher: which Triton target is active, which kernel variant and tile a shape gets, how
many programs to launch, and the cache of compiled-kernel launch configurations.

The target is resolved once per process from ``triton.runtime.driver.active`` ("npu" for
triton-ascend, "cuda"/"hip" for upstream Triton, "cpu" when there is no driver or Triton runs its
interpreter). ``kernels`` maps everything that changes a compiled binary (the ``Plan``: variant,
tile sizes, 64-bit indexing; dtypes, window width, the target's compile options for the rows'
layout such as warps; target, device) to the number of programs to launch, so a new shape that
maps to a known key neither compiles nor measures anything again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy
import torch
import triton

from . import _compat, direct_launch
from . import kernels as K
from . import kernels_backward as KB
from . import kernels_cols as KC
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
    #: Threads of a warp (64 on AMD's CDNA GPUs); 0 where the target does not say (NPU, cpu).
    warp_size: int = 0


@functools.cache
def target() -> Target:
    """The active Triton target, resolved once (a per-call lookup would cost host time and break
    graphs in traced code)."""
    if _compat.interpreter_enabled():
        return Target("cpu", "interpreter", True)
    found = _compat.current_target()
    if found is None:
        return Target("cpu", "none", False)
    return Target(str(found.backend), str(found.arch), False,
                  int(getattr(found, "warp_size", 0) or 0))


@functools.cache
def backend() -> Backend:
    """The sizing rules of the active target."""
    t = target()
    return for_target(t.backend, t.arch, t.warp_size)


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
def device_backend(device_index: int) -> Backend:
    """The sizing rules of the active target for one of its devices (``Backend.for_device``)."""
    return backend().for_device(device_index)


@functools.cache
def core_count(device_index: int) -> int:
    """Cores of one device (SMs, vector cores; a few programs under the interpreter)."""
    return backend().core_count(device_index)


#: Most programs that share one row in the split variant.
MAX_SPLITS = 128


@dataclass(frozen=True)
class Plan:
    """A kernel variant and its compile-time tile for one call."""

    variant: str  # "tile", "online", "split" or "cols"
    block_m: int  # rows per iteration (tile variant; neighbouring rows per group: cols; else 1)
    block_n: int  # columns per block or per chunk
    tail_n: int  # columns of the tile variant's second block, from block_n on (0: none)
    n_splits: int  # programs sharing one row (split variant, or group: cols; 1 otherwise)
    index_64: bool  # 64-bit offsets
    last_n: int = 0  # columns of the online kernel's chunks after its whole ones (0: whole)

    def split_cols(self, n_cols: int) -> int:
        """Columns per work item of the split variant: a whole number of ``block_n`` chunks."""
        return triton.cdiv(triton.cdiv(n_cols, self.n_splits), self.block_n) * self.block_n


def plan(layout: RowLayout, itemsize: int, n_cores: int, be: Backend,
         variant: str | None = None, streams: int = 1) -> Plan:
    """Choose the variant and tile for a row matrix of ``itemsize``-byte elements.

    * rows that fit the target's tile: ``tile``, several rows per iteration when they are short
      (but ``online`` for rows the target runs faster so, ``Backend.online_rows``);
    * longer rows, fewer rows than cores: ``split`` (each row shared by several programs; also
      rows that fit where the target runs them faster so, ``Backend.split_rows``);
    * longer rows otherwise: ``online`` (one row per iteration, looped);
    * interleaved rows (``RowLayout.interleaved``: a softmax over a dim that is not the last):
      ``cols`` (groups of neighbouring rows as 2-d tiles, see
      ``column_plan``).

    ``variant`` forces a variant (tests use it to run each one on small shapes). ``streams`` is
    how many tensors a kernel reads per element (2 for the backward's ``y`` and ``dy``): the
    tile and chunk budgets are shared between them.

    Raises:
        ValueError: ``variant="tile"`` for rows longer than the target's tile
            (``Backend.tile_elems``): that variant holds a whole row in one block, which Triton
            could not compile for such rows (too many threads or registers, or past the UB).
            The backward (``streams`` > 1) takes the launcher's choice there instead: its
            forward held the rows in one block, but its own tensors (a ``dy`` whose elements
            are apart) may get a smaller tile.
    """
    # The backward reads the forward's output (y) and dy, laid out alike as a rule: y decides.
    return _plan(layout.n_rows, layout.n_cols, layout.max_offset(), itemsize, n_cores,
                 be.for_layout(layout, itemsize, streams), variant, streams,
                 layout.columns().n_inner, layout.interleaved(output=streams > 1))


@functools.lru_cache(maxsize=4096)
def _plan(n_rows: int, n_cols: int, max_offset: int, itemsize: int, n_cores: int, be: Backend,
          variant: str | None, streams: int, n_inner: int, interleaved: bool) -> Plan:
    # plan() on plain numbers, cached: a call with a shape seen before costs a dict lookup.
    if variant == "cols" or variant is None and interleaved:
        return column_plan(n_rows, n_cols, n_inner, max_offset, itemsize, n_cores, be)
    full_block, tile = triton.next_power_of_2(n_cols), be.tile_elems(itemsize)
    fits = full_block * streams <= tile
    def chunk(kind: str) -> int:
        return min(max(1, be.chunk_elems(itemsize, kind, n_cols) // streams), full_block)

    if variant == "tile" and full_block > tile:
        if streams == 1:
            raise ValueError(f"variant='tile' holds a row in one block of at most {tile} "
                             f"elements on this target ({be.name}); rows of {n_cols} elements "
                             f"take 'online', 'split' or the launcher's choice")
        # The backward of a forward forced to 'tile', which held the row in one block: its
        # tensors laid out otherwise (dy's elements apart, on Ascend: 1024-element tiles) may
        # hold less, and a backward that autograd runs has no caller to refuse. The launcher's
        # choice then.
        variant = None
    most_splits = triton.cdiv(n_cols, chunk("split"))
    if variant is None:
        few = n_rows < n_cores and most_splits > 1
        if few and (not fits or be.split_rows(n_rows, n_cols, n_cores)):
            variant = "split"
        elif fits and (n_rows < n_cores or not be.online_rows(n_cols, itemsize)):
            variant = "tile"
        else:
            variant = "online"
    block_m, block_n, tail_n, n_splits, last_n = 1, chunk(variant), 0, 1, 0
    if variant == "tile":
        block_n, tail_n = full_block, be.tail_block(n_cols, itemsize) if streams == 1 else 0
        if tail_n:
            block_n //= 2
        block_m = be.rows_per_block(block_n + tail_n, n_rows, n_cores, itemsize)
    elif variant == "online" and streams == 1:
        last_n = be.last_chunk(n_cols, block_n)
    elif variant == "split":
        # The target's work items per core, at most MAX_SPLITS per row.
        wanted = min(triton.cdiv(be.split_items(itemsize) * n_cores, n_rows), MAX_SPLITS)
        n_splits = triton.next_power_of_2(max(2, min(wanted, most_splits)))
        # The same splits in longer chunks where the target takes them.
        block_n = be.split_chunk(block_n, triton.cdiv(n_cols, n_splits), itemsize)
    # The split variant's scratch holds 2 * n_rows * n_splits partial results.
    reach = max(max_offset, 2 * n_rows * n_splits) + block_m * (block_n + tail_n) * n_splits
    return Plan(variant, block_m, block_n, tail_n, n_splits, index_64=reach >= 2**31,
                last_n=last_n)


def column_plan(n_rows: int, n_cols: int, n_inner: int, max_offset: int, itemsize: int,
                n_cores: int, be: Backend) -> Plan:
    """The ``cols`` plan for ``n_rows`` rows of ``n_cols`` elements, ``n_inner`` of them
    neighbours (``RowLayout.columns``): groups of ``block_m`` rows as ``[block_n, block_m]``
    tiles (``kernels_cols``).

    A group of at least the target's ``column_lanes`` rows (fewer where there are fewer) holds
    whole rows in a tile of ``column_tile_elems`` where they fit, with as many more rows as the
    tile leaves room for; longer rows go in ``column_chunk_elems`` chunks, whole in one chunk
    of the widest group, down to ``column_min_lanes`` rows, that the target says holds them
    (``column_holds_whole``: both may depend on whether the wide groups would be split, the
    second on how many groups the narrower width gives and on the row length; rows no group
    holds whole are looped in groups of ``column_loop_groups`` rows where there are that many
    and each split range then holds the chunks it asks for), and where the groups are too few
    to give every core ``split_items_per_core`` work items (or the looped groups' own count),
    each group's rows are split between programs as the split variant splits a row, into no
    more ranges than a chunk holds groups (the split kernels combine a group's partial results
    as one ``[n_splits, block_m]`` tile: on Ascend, 128 ranges of 128-row groups did not fit
    the UB).
    The sizes count elements of each tensor read, for the backward's two as for the forward's
    one: the target sizes its programs for what they read (``options``).
    """
    full = triton.next_power_of_2(n_cols)
    inner = triton.next_power_of_2(n_inner)
    lanes = min(inner, be.column_lanes(itemsize))
    tile = be.column_tile_elems(itemsize, lanes)
    items = be.split_items_per_core
    if full * lanes > tile:
        tile = be.column_chunk_elems(itemsize, lanes)
        if full * lanes > tile:
            # The widest group, down to the target's fewest rows, whose whole rows fit a chunk
            # of its own: each row is then read once, not twice (nor split).
            split = column_groups(n_rows, n_inner, lanes) < items * n_cores
            narrow = lanes
            while narrow >= be.column_min_lanes(itemsize, split):
                groups = column_groups(n_rows, n_inner, narrow)
                if be.column_holds_whole(itemsize, narrow, full, split, groups, n_cores,
                                         n_cols):
                    lanes, tile = narrow, full * narrow
                    break
                narrow //= 2
            else:
                # None does: the rows are looped in chunks, in groups as wide as the target
                # loops them where there are that many neighbours and each split range then
                # holds as many chunks as the target asks.
                wide, wide_items, range_chunks = be.column_loop_groups(itemsize, split)
                wide = min(inner, wide)
                if wide > lanes:
                    chunk = be.column_chunk_elems(itemsize, wide)
                    block = chunk // wide  # rows a chunk of such a group holds
                    splits = _column_splits(n_rows, n_cols, n_inner, wide, block, chunk,
                                            wide_items, n_cores)
                    if triton.cdiv(n_cols, splits) >= range_chunks * block:
                        lanes, items, tile = wide, wide_items, chunk
    block_m = min(inner, max(lanes, tile // full))
    block_n = min(full, max(1, tile // block_m))
    n_splits = (_column_splits(n_rows, n_cols, n_inner, block_m, block_n, tile, items, n_cores)
                if block_n < n_cols else 1)
    # The split form's scratch holds 2 partial results per row (and padding row) and split.
    reach = max(max_offset, 2 * (n_rows + n_rows // n_inner * block_m) * n_splits)
    return Plan("cols", block_m, block_n, 0, n_splits, index_64=reach >= 2**31)


def _column_splits(n_rows: int, n_cols: int, n_inner: int, block_m: int, block_n: int,
                   tile: int, items: int, n_cores: int) -> int:
    # Ranges of each group's rows for ``items`` work items a core: a power of two, no more
    # than ``MAX_SPLITS``, the chunks of a row, or the groups a tile holds.
    wanted = min(triton.cdiv(items * n_cores, column_groups(n_rows, n_inner, block_m)),
                 MAX_SPLITS, triton.cdiv(n_cols, block_n), max(1, tile // block_m))
    return triton.next_power_of_2(wanted) if wanted > 1 else 1


def column_groups(n_rows: int, n_inner: int, block_m: int) -> int:
    """Groups of ``block_m`` neighbouring rows of a ``cols`` plan (as ``kernels_cols`` counts
    them): every outer index's ``n_inner`` rows, in groups, the last one partial."""
    return n_rows // n_inner * triton.cdiv(n_inner, block_m)


kernels: dict[tuple, int] = {}
_lock = threading.RLock()


def _launch(key: tuple, kernel: Any, n_items: int, args: tuple, constexprs: dict[str, Any],
            device_index: int, options: dict[str, Any]) -> tuple[Any, int]:
    """Launch ``kernel`` through Triton over ``n_items`` work items on a persistent grid, with
    ``options`` (compile and launch options); return what the launch returned (the compiled
    kernel, on GPUs) and the grid size.

    The first call for a ``key`` sizes the grid (compiling on GPUs) and launches under a lock,
    so threads racing on a new key compile it once; later calls only read ``kernels``.
    """
    be = backend()
    max_programs = kernels.get(key)
    interpreted = isinstance(be, InterpreterBackend)
    if max_programs is None or interpreted:
        # The interpreter patches triton.language globally while it runs: one launch at a time.
        # It also evaluates masked-off lanes (1/0, exp and log of -inf), whose numpy warnings
        # mean nothing to a caller: they are never stored.
        quiet = numpy.errstate(all="ignore") if interpreted else contextlib.nullcontext()
        with _lock, quiet:
            max_programs = kernels.get(key)
            if max_programs is None:
                max_programs = be.max_programs(kernel, args, constexprs, options, device_index)
            grid = max(1, min(max_programs, n_items, be.max_grid))
            compiled = kernel[(grid,)](*args, **constexprs, **options)
            kernels[key] = max_programs
        return compiled, grid
    grid = max(1, min(max_programs, n_items, be.max_grid))
    return kernel[(grid,)](*args, **constexprs, **options), grid


class _Step:
    """One kernel launch of a ``Launch``: the kernel, its ``kernels`` key and work items, which
    of the call's tensors it takes (``operands``, by index) and the scalars that follow them.

    On CUDA, once Triton has launched the step with every pointer 16-byte aligned, the step
    keeps that binary and starts it directly on later aligned calls (``start``, from
    ``direct_launch.direct_launcher``), skipping Triton's per-call binding and specialisation of
    the arguments, which is most of a small call's host time. The scalars are fixed by the call's
    signature, so the binary's integer specialisation holds; pointer alignment is checked per
    call.

    Two constexprs hold for some calls' addresses only. A step compiled with ``Y_LIKE_X``
    (``rows_alike``) serves calls whose input and output (operands ``like``) start at the same
    place in their 16-byte blocks; one compiled with ``WORDS`` on whole rows
    (``Backend.word_reads``), calls whose input (operand ``words``) is 4-byte aligned. Other
    calls run the binary compiled without the constexpr they fail.
    """

    def __init__(self, kernel: Any, key: tuple, n_items: int, operands: tuple[int, ...],
                 scalars: tuple, constexprs: dict[str, Any], options: dict[str, Any],
                 dependent: bool = False, like: tuple[int, int] | None = None,
                 words: int | None = None) -> None:
        self.kernel, self.key, self.n_items = kernel, key, n_items
        self.operands, self.scalars, self.constexprs = operands, scalars, constexprs
        #: The target's compile options for the plan and, for a programmatic dependent of the
        #: step before it (``dependent_launch``), the launch option.
        self.options = {**options, "launch_pdl": True} if dependent else options
        #: The constexprs that hold for some calls only, each with its test of a call's
        #: tensors.
        self.guards: tuple[tuple[str, Callable[[tuple], bool]], ...] = ()
        if like is not None and constexprs.get("Y_LIKE_X"):
            out, inp = like
            self.guards += (("Y_LIKE_X", lambda t: not (t[out].data_ptr()
                                                         - t[inp].data_ptr()) & 15),)
        if words is not None and constexprs.get("WORDS"):
            self.guards += (("WORDS", lambda t: not t[words].data_ptr() & 3),)
        self.start: Callable[[tuple], bool] | None = None

    def __call__(self, tensors: tuple[torch.Tensor, ...], device_index: int) -> None:
        if self.start is not None and self.start(tensors):
            return
        args = [tensors[i] for i in self.operands]
        key, constexprs = self.key, self.constexprs
        if self.guards:
            off = tuple(name for name, holds in self.guards if not holds(tensors))
            if off:
                key, constexprs = (*key, *off), {**constexprs, **dict.fromkeys(off, False)}
        compiled, grid = _launch(key, self.kernel, self.n_items, (*args, *self.scalars),
                                 constexprs, device_index, self.options)
        # (Every pointer aligned: every guard holds, the input and output alike for
        # ``Y_LIKE_X``, the input 4-byte aligned for ``WORDS``.)
        if self.start is None and backend().name == "cuda" and not any(
                t.data_ptr() & 15 for t in args):
            # The direct launcher takes every parameter in order, constexpr values included.
            names = self.kernel.arg_names[len(self.operands) + len(self.scalars):]
            tail = (*self.scalars, *(self.constexprs[name] for name in names))
            self.start = direct_launch.direct_launcher(compiled, grid, device_index,
                                                       self.operands, tail)


class Launch:
    """A softmax call, or its backward, planned once for one signature (shapes, strides, dtypes,
    device, variant, log flag and scale): calling it with tensors of that signature runs the
    kernels. The forward takes ``(x, y)``, the backward ``(dy, y, dx)``. Built by
    ``launch_softmax``/``launch_softmax_backward``; callers that meet the signature again (the
    eager call cache) keep it, so a repeat call does no planning at all.
    """

    __slots__ = ("plan", "device", "steps", "scratch", "guarded", "start")

    def __init__(self, plan: Plan, device: torch.device, steps: tuple[_Step, ...],
                 scratch: tuple[int, torch.dtype] | None = None) -> None:
        self.plan, self.device, self.steps = plan, device, steps
        #: Elements and dtype of the split variant's scratch buffer (the last operand).
        self.scratch = scratch
        self.guarded = _needs_guard(device.type)
        #: The one step's direct start, once it has one, when that is all a call needs (no
        #: scratch, no device guard): then a call is this one Python call.
        self.start: Callable[[tuple], bool] | None = None

    def __call__(self, *tensors: torch.Tensor) -> None:
        if self.start is not None and self.start(tensors):
            return
        if self.guarded:
            with _device_guard(self.device):
                self._run(tensors)
        else:
            self._run(tensors)
        if len(self.steps) == 1 and self.scratch is None and not self.guarded:
            self.start = self.steps[0].start

    def _run(self, tensors: tuple[torch.Tensor, ...]) -> None:
        if self.scratch is not None:
            n, dtype = self.scratch
            tensors = (*tensors, torch.empty(n, dtype=dtype, device=self.device))
        index = self.device.index or 0
        for step in self.steps:
            step(tensors, index)


def acc_dtype(out_dtype: torch.dtype) -> torch.dtype:
    """The kernels' arithmetic (and the split variants' partial results): float32, or float64
    for float64 output."""
    return torch.float64 if out_dtype == torch.float64 else torch.float32


def launch_softmax(x: torch.Tensor, y: torch.Tensor, layout: RowLayout,
                   variant: str | None = None, *, log: bool = False,
                   scale: float = 1.0) -> Launch:
    """Write ``softmax(x * scale)`` (``log_softmax`` with ``log``) into ``y`` along the rows of
    ``layout``; return the ``Launch``, which repeats the call for tensors of the same signature.

    ``x`` and ``y`` are on one device; ``y``'s dtype is the output dtype; no element is empty.
    ``y`` may be ``x`` itself (every variant reads an element before writing it, in one program).
    """
    launch = prepare_softmax(x.dtype, y.dtype, x.device, layout, variant, log=log, scale=scale)
    launch(x, y)
    return launch


def prepare_softmax(x_dtype: torch.dtype, y_dtype: torch.dtype, device: torch.device,
                    layout: RowLayout, variant: str | None = None, *, log: bool = False,
                    scale: float = 1.0) -> Launch:
    """The ``Launch`` of ``launch_softmax`` for inputs of ``x_dtype`` and outputs of ``y_dtype``
    on ``device`` laid out as ``layout``, without running it. Operands: ``(x, y)``."""
    itemsize = max(x_dtype.itemsize, y_dtype.itemsize)
    device_index = device.index or 0
    be = device_backend(device_index).for_layout(layout, itemsize)
    p = plan(layout, itemsize, core_count(device_index), be, variant)
    options = be.options(p, itemsize)
    if p.variant == "cols":
        key = (p, x_dtype, y_dtype, log, be.name, device.type, device_index,
               *sorted(options.items()))
        return _column_forward(p, key, device, layout.columns(), y_dtype, itemsize, log, scale,
                               be, options)
    # Rows may be read in 16-byte vectors through aligned windows or bodies (VEC), and rows
    # whose length and strides are whole vectors, or runs of 2-4 elements, load as such
    # (ALIGN).
    vec = be.window_vec(layout, p, x_dtype.itemsize)
    align = be.row_align(layout, itemsize, vec)
    like = rows_alike(layout, vec, x_dtype, y_dtype)
    # Tiles of several rows read from each row's aligned body rather than through windows.
    body = vec > 1 and be.tile_bodies(p, x_dtype.itemsize)
    key = (p, x_dtype, y_dtype, log, be.name, device.type, device_index, vec, align, like, body,
           *sorted(options.items()))
    rows = (layout.n_rows, layout.n_cols, layout.n_inner)
    flags = {"BLOCK_N": p.block_n, "INDEX_64": p.index_64, "LOG": log,
             "STORE_CACHE": be.output_cache, "ALIGN": align}
    # The looped variants read a row twice: the target's eviction policies for the two reads.
    first, second = be.reread_eviction
    every_row = (*rows, *layout.x_strides, *layout.y_strides, scale)
    if p.variant == "tile" and p.block_m == 1:
        steps = (_Step(K.softmax_row_kernel, key, layout.n_rows, (1, 0), every_row,
                       {**flags, "TAIL_N": p.tail_n, "VEC": vec}, options),)
    elif p.variant == "tile":
        steps = (_Step(K.softmax_tile_kernel, key, triton.cdiv(layout.n_rows, p.block_m),
                       (1, 0), every_row,
                       {**flags, "BLOCK_M": p.block_m, "TAIL_N": p.tail_n, "VEC": vec,
                        "BODY": body, "Y_LIKE_X": like and body}, options, like=(1, 0)),)
    elif p.variant == "online":
        lanes = be.stat_lanes(p, x_dtype.itemsize)
        # The last chunk holds at least the first pass's lanes (whole chunks: BLOCK_N).
        last = max(p.last_n, lanes) if p.last_n else p.block_n
        # Whole rows (``vec`` 1) read as words need the input 4-byte aligned: checked per call.
        words = x_dtype == torch.bfloat16 and be.word_reads(layout, p, vec)
        steps = (_Step(K.softmax_online_kernel, (*key, lanes, words), layout.n_rows, (1, 0),
                       every_row, {**flags, "LAST_N": last, "FIRST_EVICT": first,
                                   "SECOND_EVICT": second, "VEC": vec, "STAT_LANES": lanes,
                                   "Y_LIKE_X": like, "WORDS": words},
                       options, like=(1, 0), words=0 if vec == 1 else None),)
    else:
        # Pass 1 writes each (row, split)'s max and sum into the scratch operand (index 2),
        # pass 2 combines them and normalises.
        n_items = layout.n_rows * p.n_splits
        cols = p.split_cols(layout.n_cols)
        split = {"N_SPLITS": p.n_splits, "BLOCK_N": p.block_n, "INDEX_64": p.index_64,
                 "PDL": be.dependent_launch, "VEC": vec, "ALIGN": align}
        steps = (
            _Step(K.softmax_split_stats_kernel, key + ("stats",), n_items, (2, 0),
                  (*rows, *layout.x_strides, cols, scale), {**split, "EVICT": first}, options),
            _Step(K.softmax_split_norm_kernel, key + ("norm",), n_items, (1, 2, 0),
                  (*rows, *layout.x_strides, *layout.y_strides, cols, scale),
                  {**split, "EVICT": second, "LOG": log, "STORE_CACHE": be.output_cache,
                   "Y_LIKE_X": like}, options, be.dependent_launch, like=(1, 0)),
        )
        return Launch(p, device, steps, (2 * n_items, acc_dtype(y_dtype)))
    return Launch(p, device, steps)


def rows_alike(layout: RowLayout, vec: int, x_dtype: torch.dtype, y_dtype: torch.dtype) -> bool:
    """The looped kernels' ``Y_LIKE_X`` for rows read through aligned bodies (``vec`` > 1):
    whether every output row starts at the same place in its 16-byte blocks as its input row
    wherever the two tensors do (elements of one size, row strides alike modulo a vector).
    A call's pointers are checked apart (``_Step``).

    Then the kernels store each row's body as vectors with no test per row, which is faster:
    the branch for other outputs, compiled in, cost bf16 4096x50257 6% on the H100
    (docs/tuning.md, thirty-sixth session).
    """
    return (vec > 1 and x_dtype.itemsize == y_dtype.itemsize
            and all((xs - ys) % vec == 0
                    for xs, ys in zip(layout.x_strides[:2], layout.y_strides[:2])))


def _column_forward(p: Plan, key: tuple, device: torch.device, layout: RowLayout,
                    y_dtype: torch.dtype, itemsize: int, log: bool, scale: float, be: Backend,
                    options: dict[str, Any]) -> Launch:
    # prepare_softmax's launch of a ``cols`` plan on ``layout`` (its ``columns()`` form).
    first, second = be.reread_eviction
    groups = column_groups(layout.n_rows, layout.n_inner, p.block_m)
    rows = (layout.n_rows, layout.n_cols, layout.n_inner)
    tile = {"BLOCK_I": p.block_m, "BLOCK_C": p.block_n, "INDEX_64": p.index_64}
    if p.n_splits == 1:
        whole = be.column_form(layout.n_cols, p.block_n, itemsize)
        step = _Step(KC.softmax_cols_kernel, (*key, whole), groups, (1, 0),
                     (*rows, *layout.x_strides, *layout.y_strides, scale),
                     {**tile, "LOG": log, "FIRST_EVICT": first, "SECOND_EVICT": second,
                      "STORE_CACHE": be.output_cache, "WHOLE": whole}, options)
        return Launch(p, device, (step,))
    n_items = groups * p.n_splits
    cols = p.split_cols(layout.n_cols)
    split = {"N_SPLITS": p.n_splits, **tile, "PDL": be.dependent_launch}
    steps = (
        _Step(KC.softmax_cols_split_stats_kernel, key + ("stats",), n_items, (2, 0),
              (*rows, *layout.x_strides, cols, scale), {**split, "EVICT": first}, options),
        _Step(KC.softmax_cols_split_norm_kernel, key + ("norm",), n_items, (1, 2, 0),
              (*rows, *layout.x_strides, *layout.y_strides, cols, scale),
              {**split, "LOG": log, "EVICT": second, "STORE_CACHE": be.output_cache}, options,
              be.dependent_launch),
    )
    return Launch(p, device, steps, (2 * n_items * p.block_m, acc_dtype(y_dtype)))


def launch_softmax_backward(dy: torch.Tensor, y: torch.Tensor, dx: torch.Tensor,
                            layout: RowLayout, variant: str | None = None, *,
                            log: bool = False, scale: float = 1.0) -> Launch:
    """Write the gradient of ``softmax(x * scale)`` (``log_softmax`` with ``log``) into ``dx``,
    from the forward's output ``y`` and the incoming gradient ``dy``; return the ``Launch``.

    ``layout.x_strides`` address ``dy``; ``layout.y_strides`` address both ``y`` and ``dx``.
    The variant and tile come from the forward's ``plan``, for two input streams.
    """
    launch = prepare_softmax_backward(dy.dtype, y.dtype, dx.dtype, dy.device, layout, variant,
                                      log=log, scale=scale)
    launch(dy, y, dx)
    return launch


def prepare_softmax_backward(dy_dtype: torch.dtype, y_dtype: torch.dtype, dx_dtype: torch.dtype,
                             device: torch.device, layout: RowLayout,
                             variant: str | None = None, *, log: bool = False,
                             scale: float = 1.0) -> Launch:
    """The ``Launch`` of ``launch_softmax_backward`` for tensors of these dtypes on ``device``
    laid out as ``layout``, without running it. Operands: ``(dy, y, dx)``."""
    itemsize = max(dy_dtype.itemsize, y_dtype.itemsize, dx_dtype.itemsize)
    device_index = device.index or 0
    be = device_backend(device_index).for_layout(layout, itemsize, streams=2)
    p = plan(layout, itemsize, core_count(device_index), be, variant, streams=2)
    options = be.options(p, itemsize)
    if p.variant == "cols":
        # The column kernels take the rows' columns() form and no ALIGN.
        layout, align = layout.columns(), 1
    else:
        align = be.row_align(layout, itemsize)
    key = (p, dy_dtype, y_dtype, dx_dtype, log, be.name, device.type, device_index,
           "backward", align, *sorted(options.items()))
    rows = (layout.n_rows, layout.n_cols, layout.n_inner, *layout.x_strides, *layout.y_strides)
    flags = {"BLOCK_N": p.block_n, "INDEX_64": p.index_64, "LOG": log, "ALIGN": align}
    # Kernels that write dx store with the target's cache modifier.
    writes = {**flags, "STORE_CACHE": be.output_cache}
    first, second = be.reread_eviction
    # Operands: (dy, y, dx) and, for the split variant, the partial sums' scratch (3).
    scratch = None
    if p.variant == "tile" and p.block_m == 1:
        steps = (_Step(KB.softmax_bwd_row_kernel, key, layout.n_rows, (2, 1, 0),
                       (*rows, scale), writes, options),)
    elif p.variant == "tile":
        steps = (_Step(KB.softmax_bwd_tile_kernel, key, triton.cdiv(layout.n_rows, p.block_m),
                       (2, 1, 0), (*rows, scale), {**writes, "BLOCK_M": p.block_m},
                       options),)
    elif p.variant == "online":
        steps = (_Step(KB.softmax_bwd_online_kernel, key, layout.n_rows, (2, 1, 0),
                       (*rows, scale), {**writes, "FIRST_EVICT": first, "SECOND_EVICT": second},
                       options),)
    elif p.variant == "cols":
        groups = column_groups(layout.n_rows, layout.n_inner, p.block_m)
        tile = {"BLOCK_I": p.block_m, "BLOCK_C": p.block_n, "INDEX_64": p.index_64, "LOG": log}
        if p.n_splits == 1:
            whole = be.column_form(layout.n_cols, p.block_n, itemsize)
            steps = (_Step(KC.softmax_bwd_cols_kernel, (*key, whole), groups, (2, 1, 0),
                           (*rows, scale),
                           {**tile, "FIRST_EVICT": first, "SECOND_EVICT": second,
                            "STORE_CACHE": be.output_cache, "WHOLE": whole}, options),)
        else:
            n_items = groups * p.n_splits
            cols = p.split_cols(layout.n_cols)
            split = {"N_SPLITS": p.n_splits, **tile, "PDL": be.dependent_launch}
            steps = (
                _Step(KC.softmax_bwd_cols_split_dot_kernel, key + ("dot",), n_items, (3, 1, 0),
                      (*rows, cols), {**split, "EVICT": first}, options),
                _Step(KC.softmax_bwd_cols_split_grad_kernel, key + ("grad",), n_items,
                      (2, 3, 1, 0), (*rows, cols, scale),
                      {**split, "EVICT": second, "STORE_CACHE": be.output_cache}, options,
                      be.dependent_launch),
            )
            scratch = (n_items * p.block_m, acc_dtype(y_dtype))
    else:
        n_items = layout.n_rows * p.n_splits
        cols = p.split_cols(layout.n_cols)
        split = {"N_SPLITS": p.n_splits, "PDL": be.dependent_launch}
        steps = (
            _Step(KB.softmax_bwd_split_dot_kernel, key + ("dot",), n_items, (3, 1, 0),
                  (*rows, cols), {**flags, **split, "EVICT": first}, options),
            _Step(KB.softmax_bwd_split_grad_kernel, key + ("grad",), n_items, (2, 3, 1, 0),
                  (*rows, cols, scale), {**writes, **split, "EVICT": second}, options,
                  be.dependent_launch),
        )
        scratch = (n_items, acc_dtype(y_dtype))
    return Launch(p, device, steps, scratch)


def _device_guard(device: torch.device) -> Any:
    """Make ``device`` current so Triton launches there (and on its current stream)."""
    if device.index is None or not _needs_guard(device.type):
        return contextlib.nullcontext()
    if device.type == "cuda":
        return torch.cuda._DeviceGuard(device.index)  # the cheap guard compiled code uses
    return torch.npu.device(device.index)


@functools.cache
def _needs_guard(device_type: str) -> bool:
    # With one device of a type it is always the current one; skipping the guard then saves a
    # few microseconds of every call.
    module = getattr(torch, device_type, None) if device_type in ("cuda", "npu") else None
    return module is not None and module.device_count() > 1


def reachable_plans(be: Backend, itemsize: int, n_cores: int, col_stride: int = 1) -> list[Plan]:
    """Every distinct ``Plan`` that ``plan()`` can choose on ``be`` for ``itemsize``-byte elements
    on a device of ``n_cores`` cores, for rows whose elements lie ``col_stride`` apart (1: softmax
    over the last dim of a contiguous tensor; more: of a strided view, rows not interleaved),
    sorted; for ahead-of-time compile checks (``reachable_column_plans`` lists interleaved
    rows' plans).

    ``plan()`` itself is run over a sweep of (n_rows, n_cols) shapes that reaches each
    of its branches: row lengths at and just past every power of two (every ``block_n``; past
    it by each smaller power of two where the target takes tail blocks, and by one less for
    rows that are not 16-byte aligned, every ``tail_n``), row
    counts from 1 to past twice the cores (every ``n_splits``) and at each power of two times the
    cores (every ``block_m``). Strided views can set ``index_64`` for any tile, so every plan is
    returned with both index widths.
    """
    # Long enough that a single row is split as many ways as plan() ever splits one.
    longest_chunk = max(be.tile_elems(itemsize),
                        *(be.chunk_elems(itemsize, kind, 2**40) for kind in ("online", "split")))
    max_cols = be.split_items_per_core * n_cores * longest_chunk
    # Past a power of two by one, and, where the target takes tail blocks, by every smaller
    # power of two (each tail size) and by one less than that (the same tail on an unaligned
    # row).
    past = range(max_cols.bit_length()) if be.tail_from is not None else range(1)
    col_counts = sorted({c for k in range(max_cols.bit_length())
                         for c in (1 << k, *((1 << k) + (1 << j) - odd
                                             for j in past if j < k for odd in (0, 1)))})
    row_counts = set(range(1, 2 * n_cores + 2))
    row_counts |= {n_cores << k for k in range(be.tile_elems(itemsize).bit_length() + 1)}
    found = set()
    for n_cols in col_counts:
        for n_rows in sorted(row_counts):
            # Rows of x[..., 0] for a contiguous (n_rows, n_cols, col_stride) tensor x.
            strides = (n_cols * col_stride, 0, col_stride)
            layout = RowLayout(n_rows, n_cols, 1, strides, strides)
            p = plan(layout, itemsize, n_cores, be)
            for wide in (False, True):
                found.add(dataclasses.replace(p, index_64=wide))
    return sorted(found, key=lambda p: (p.variant, p.block_n, p.block_m, p.n_splits, p.index_64))


def reachable_column_plans(be: Backend, itemsize: int, n_cores: int,
                           transposed: bool = False) -> list[Plan]:
    """Every distinct ``cols`` plan that ``plan()`` can choose on ``be`` for interleaved rows
    (``reachable_plans``' counterpart): a softmax over the middle dim of a contiguous
    ``(n_outer, n_cols, n_inner)`` tensor, or with ``transposed`` over the last dim of a
    transposed matrix, whose contiguous output has rows laid out otherwise.

    Groups of every power-of-two width (``block_m`` is one) from 2 to twice the largest tile
    (wider groups give the same plans), counts of groups from 1 to past the work items the
    split form aims for (every ``n_splits``), and row lengths at and just past every power of
    two (every ``block_n``, and each split count a group's chunks allow).
    """
    lanes = be.column_lanes(itemsize)
    widest = max(be.column_tile_elems(itemsize, lanes), be.column_chunk_elems(itemsize, lanes))
    max_cols = be.split_items_per_core * n_cores * widest
    col_counts = sorted({c for k in range(max_cols.bit_length()) for c in (1 << k, (1 << k) + 1)
                         if c > 1})
    found = set()
    for width in (1 << k for k in range(1, widest.bit_length() + 1)):
        for groups in range(1, be.split_items_per_core * n_cores + 2):
            n_rows = width * groups
            for n_cols in col_counts:
                if transposed:
                    layout = RowLayout(n_rows, n_cols, 1, (1, 0, n_rows), (n_cols, 0, 1))
                else:
                    strides = (n_cols * width, 1, width)
                    layout = RowLayout(n_rows, n_cols, width, strides, strides)
                p = plan(layout, itemsize, n_cores, be)
                for wide in (False, True):
                    found.add(dataclasses.replace(p, index_64=wide))
    return sorted(found, key=lambda p: (p.block_n, p.block_m, p.n_splits, p.index_64))
