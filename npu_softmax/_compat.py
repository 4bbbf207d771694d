"""The few places where upstream Triton (3.6+) and triton-ascend 3.2 differ, kept together.

Everything else in the package uses only the API both share.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
from collections.abc import Sequence
from typing import Any

import triton

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


def interpreter_enabled() -> bool:
    """True when Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1`` at import)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on")


def _interpreter_lacks_bf16_constants() -> bool:
    # Upstream Triton's interpreter before 3.9 (3.2-3.8) has no ``get_bf16``: a float constant
    # meeting a bfloat16 block (``tl.where(mask, held, -inf)``) raises AttributeError there.
    from triton.runtime.interpreter import InterpreterBuilder

    return not hasattr(InterpreterBuilder, "get_bf16")


#: Whether the row and tile kernels keep a 2-byte block as loaded until they use it
#: (``kernels._hold``). Upstream Triton then holds it in half the registers, so more rows fit an
#: SM at once; triton-ascend, with nothing measured on its unified buffer, widens it at once, and
#: so do interpreters with no bfloat16 constants (the same values; registers mean nothing there).
HOLD_AS_LOADED = EXP_AS_EXP2 and not (interpreter_enabled() and _interpreter_lacks_bf16_constants())


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


def cuda_arch(device_index: int) -> str:
    """One CUDA device's compute capability as Triton's CUDA target spells its arch (``"90"``
    for sm_90). The process's target (``get_current_target``) is that of the current device
    alone, which on a host of two GPU generations is not every device's."""
    import torch

    major, minor = torch.cuda.get_device_capability(device_index)
    return f"{major}{minor}"


def max_threads_per_sm(device_index: int) -> int:
    """Threads one SM (a CU on AMD) of a CUDA/HIP device keeps resident: 2048 on most NVIDIA
    GPUs since Volta, 1536 on sm_86 and sm_89, 1024 on Turing. Triton's property dict does
    not hold it; torch's does."""
    import torch

    return torch.cuda.get_device_properties(device_index).max_threads_per_multi_processor


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
