"""Kept CUDA launches started directly, past Triton's JIT path.

A kept launch (``launcher._Step``) has its compiled kernel, grid and every parameter but the
data pointers fixed; ``direct_launcher`` turns that into one call that starts the kernel on the
current stream. Where ``cuda_start`` builds its C starter the start goes through it; elsewhere
through Triton's own C launch, whose arguments differ between upstream 3.5-3.6 and 3.7-3.9
(``_launch_entry``). triton-ascend has neither, so the NPU keeps Triton's launch path.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any, Callable

import torch
import triton

from . import cuda_start


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
            and cuda_start.without_scratch(run)):
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
