"""The few places where upstream Triton (3.6+) and triton-ascend 3.2 differ, kept together.

Everything else in the package uses only the API both share.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import triton


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


def direct_launcher(compiled: Any) -> Callable[[int, tuple], None] | None:
    """``launch(programs, args)`` starting an already compiled kernel on the current stream,
    where ``args`` are all the kernel's parameters in order (constexpr values included), or
    None where this Triton's ``CompiledKernel`` lacks the launch interface of upstream 3.3+
    (``run(grid, stream, function, packed_metadata, launch_metadata, hooks, *args)``), as
    triton-ascend 3.2's does.

    This is what ``JITFunction.run`` does after binding and specialising the arguments; the
    caller keeps one per argument specialisation.
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
    driver = triton.runtime.driver.active
    hooks = knobs.runtime

    def launch(programs: int, args: tuple) -> None:
        stream = driver.get_current_stream(driver.get_current_device())
        enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
        meta = (compiled.launch_metadata((programs, 1, 1), stream, *args)
                if enter is not None or leave is not None else None)
        run(programs, 1, 1, stream, function, packed, meta, enter, leave, *args)

    return launch
