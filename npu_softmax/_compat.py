"""The few places where upstream Triton (3.6+) and triton-ascend 3.2 differ, kept together.

Everything else in the package uses only the API both share.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import operator
import os
from collections.abc import Sequence
from typing import Any, Callable

import torch
import triton

from . import cuda_start

try:  # upstream 3.4+: programmatic dependent launch (CUDA, sm_90+)
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

    HAS_DEPENDENT_LAUNCH = True
except ImportError:  # triton-ascend 3.2: kernels only call these under a False constexpr
    HAS_DEPENDENT_LAUNCH = False

    @triton.jit
    def gdc_wait() -> None:
        """Stands in for upstream's ``gdc_wait`` (wait for the launch this one depends on)."""

    @triton.jit
    def gdc_launch_dependents() -> None:
        """Stands in for upstream's ``gdc_launch_dependents`` (let the next launch start)."""


#: Whether the kernels take a float32 ``exp`` as ``exp2``: upstream Triton lowers ``exp2`` to the
#: GPU's own instruction (NVIDIA's ``ex2.approx.ftz``, where ``tl.exp`` adds a guard for
#: subnormal results, three more instructions an element). triton-ascend (its ``ascend``
#: backend) keeps ``tl.exp``, its vector unit's own.
EXP_AS_EXP2 = importlib.util.find_spec("triton.backends.ascend") is None
#: Whether the row and tile kernels keep a 2-byte block as loaded until they use it
#: (``kernels._hold``). Upstream Triton then holds it in half the registers, so more rows fit an
#: SM at once; triton-ascend, with nothing measured on its unified buffer, widens it at once.
HOLD_AS_LOADED = EXP_AS_EXP2


def interpreter_enabled() -> bool:
    """True when Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1`` at import)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on")


def current_target() -> Any | None:
    """The active driver's ``GPUTarget`` (``backend``: ``"npu"``, ``"cuda"``, ``"hip"``), or None.

    On a machine with no device Triton has no active driver and raises
    ``RuntimeError: 0 active drivers``; that means "cpu" to us.
    """
    try:
        return triton.runtime.driver.active.get_current_target()
    except RuntimeError:
        return None


def device_properties(device_index: int) -> dict[str, Any]:
    """The driver's property dict for one device.

    CUDA/HIP: ``multiprocessor_count``, ``max_num_regs``, ``max_shared_mem``, ``warpSize``.
    triton-ascend: ``num_aicore``, ``num_vectorcore`` (its ``max_shared_mem`` is a dummy).
    """
    return triton.runtime.driver.active.utils.get_device_properties(device_index)


def compile_for_occupancy(kernel: Any, args: tuple, constexprs: dict[str, Any],
                          options: dict[str, Any]) -> tuple[int, int]:
    """Compile ``kernel`` for these arguments without launching it; return (registers per
    thread, shared memory bytes per program). Both APIs spell this ``warmup(..., grid=...)``."""
    compiled = kernel.warmup(*args, grid=(1,), **constexprs, **options)
    compiled._init_handles()
    return compiled.n_regs, compiled.metadata.shared


def triton_version() -> str:
    """``triton.__version__`` (triton-ascend reports its own, e.g. ``3.2.0``)."""
    return triton.__version__


def _launch_entry(run: Any, packed: Any) -> tuple[Callable[..., Any], tuple, bool]:
    """What ``direct_launcher`` calls to start a kernel, the arguments that go between the
    ``function`` handle and the kernel's own, and whether the kernel's own go as one tuple.

    Upstream's ``CudaLauncher.__call__`` allocates the global and profile scratch (none for a
    kernel that asks for none) and then calls its C ``launch``; where both sizes are 0 (and,
    from 3.8, no GSan instrumentation), calling ``launch`` itself spares a Python frame per call
    (about 1 µs of host time on the H100's host with 3.6, 2 µs with 3.9; 2026-11-23 and
    2026-11-26). Its arguments after ``function``: in 3.5 and 3.6 the cooperative and PDL
    flags, the two scratch buffers, the packed metadata, the launch metadata and the two hooks,
    then the kernel's arguments one by one; in 3.7-3.9 the flags, the packed metadata, the
    launch metadata, the hooks, the scratch buffers, the argument annotations and the kernel
    signature, then the kernel's arguments as one tuple. Every other Triton, and kernels with
    scratch, go through ``run`` itself.
    """
    launch = getattr(run, "launch", None)
    version = triton.__version__.split(".")[:2]
    if (type(run).__name__ == "CudaLauncher" and callable(launch)
            and getattr(run, "global_scratch_size", None) == 0
            and getattr(run, "profile_scratch_size", None) == 0
            and not getattr(run, "gsan_enabled", False)):
        if version in (["3", "5"], ["3", "6"]):
            return launch, (run.launch_cooperative_grid, run.launch_pdl, None, None,
                            packed, None, None, None), False
        if version in (["3", "7"], ["3", "8"], ["3", "9"]):
            return launch, (run.launch_cooperative_grid, run.launch_pdl, packed, None, None,
                            None, None, None, run.arg_annotations, run.kernel_signature), True
    return run, (packed, None, None, None), False


def direct_launcher(compiled: Any, programs: int, device_index: int, operands: Sequence[int],
                    tail: tuple) -> Callable[[tuple], bool] | None:
    """``start(tensors) -> bool``: start an already compiled kernel on ``programs`` programs on
    the current stream of device ``device_index`` (which must be current), with the data
    pointers of ``tensors[i] for i in operands`` as its first parameters and ``tail`` (the rest
    of its parameters in order, constexpr values included) after them.

    It returns False, launching nothing, when a pointer is not 16-byte aligned (Triton compiled
    ``compiled`` for aligned pointers) or while Triton launch hooks are set (a profiler such as
    proton): those calls go through Triton, so the hooks see them as usual. None where this
    Triton's ``CompiledKernel`` lacks the launch interface of upstream 3.4+ (``run(grid, stream,
    function, packed_metadata, launch_metadata, hooks, *args)``), as triton-ascend 3.2's does.

    This is what ``JITFunction.run`` does after binding and specialising the arguments, in one
    Python call: on a tiny tensor Triton's own path costs more host time than the kernel runs.
    An integer address also spares the launcher its per-pointer driver query. Where
    ``cuda_start`` can build its C starter, the start goes through it, past Triton's C launch
    and the Python that builds that launch's arguments; elsewhere through Triton's C launch.
    """
    try:
        from triton import knobs  # upstream 3.4+
    except ImportError:
        return None
    run = getattr(compiled, "run", None)
    function = getattr(compiled, "function", None)
    packed = getattr(compiled, "packed_metadata", None)
    if run is None or function is None or packed is None:
        return None
    stream_of = triton.runtime.driver.active.get_current_stream
    hooks = knobs.runtime

    def hooked() -> bool:
        # A launch hook is a function, None, or (upstream 3.5+) a chain of functions, maybe
        # empty.
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        return bool((enter is not None and getattr(enter, "calls", True))
                    or (leave is not None and getattr(leave, "calls", True)))

    get = operator.itemgetter(*operands)
    data_ptr = torch.Tensor.data_ptr
    fast = cuda_start.starter(compiled, programs, len(operands), tail)
    if fast is not None:
        # The C starter packs everything but the stream and the pointers once, and checks
        # their alignment itself.
        if len(operands) == 2:
            first, second = operands

            def start_fast_two(tensors: tuple) -> bool:
                return not hooked() and fast(stream_of(device_index),
                                             tensors[first].data_ptr(),
                                             tensors[second].data_ptr())

            return start_fast_two

        def start_fast(tensors: tuple) -> bool:
            return not hooked() and fast(stream_of(device_index), *map(data_ptr, get(tensors)))

        return start_fast
    call, head, as_tuple = _launch_entry(run, packed)
    if len(operands) == 2:
        # The forward's one kernel: its two pointers read without a loop (host time again).
        first, second = operands

        def start_two(tensors: tuple) -> bool:
            a, b = tensors[first].data_ptr(), tensors[second].data_ptr()
            if (a | b) & 15 or hooked():
                return False
            args = (a, b, *tail)
            call(programs, 1, 1, stream_of(device_index), function, *head,
                 *((args,) if as_tuple else args))
            return True

        return start_two

    def start(tensors: tuple) -> bool:
        ptrs = tuple(map(data_ptr, get(tensors)))
        if functools.reduce(operator.or_, ptrs) & 15 or hooked():
            return False
        args = (*ptrs, *tail)
        call(programs, 1, 1, stream_of(device_index), function, *head,
             *((args,) if as_tuple else args))
        return True

    return start


def ast_source(fn: Any, signature: dict[str, str], constexprs: dict[str, Any],
               aligned: Sequence[str] = ()) -> Any:
    """A ``triton.compiler.ASTSource`` for ``triton.compile``, as ``kernel[grid](...)`` builds it.

    ``signature`` maps each runtime argument name to its Triton type (``"*fp16"``, ``"i32"``);
    ``constexprs`` maps the other names to values (``tl.constexpr`` parameters, and arguments the
    JIT specialises, such as a stride of 1); ``aligned`` names arguments known to be divisible
    by 16 (a pointer's address, an integer's value), as the JIT marks them.

    triton-ascend 3.2 (and upstream before 3.3) take ``constants`` keyed by name, runtime
    arguments only in the signature, and an ``AttrsDescriptor``; upstream 3.3+ takes
    ``constexprs`` keyed by ``(index,)``, ``"constexpr"`` in the signature, and attribute lists.
    """
    from triton.compiler import ASTSource

    index = {name: i for i, name in enumerate(fn.arg_names)}
    if "constants" in inspect.signature(ASTSource).parameters:
        src = ASTSource(fn, dict(signature), constants=dict(constexprs))
        # The backend's own descriptor class (triton-ascend's default), filled from hints.
        src.attrs = type(src.attrs).from_hints({index[name]: 16 for name in aligned})
        return src
    full = {name: signature.get(name, "constexpr") for name in fn.arg_names}
    return ASTSource(fn, full, constexprs={(index[k],): v for k, v in constexprs.items()},
                     attrs={(index[name],): [["tt.divisibility", 16]] for name in aligned})
