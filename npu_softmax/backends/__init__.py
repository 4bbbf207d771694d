"""Per-target tuning: how big a tile may be, how many programs to launch, compile options.

One class per target family; ``for_target`` picks it. The launcher asks the same questions of
each, so the kernels and the variant choice stay target-independent.
"""

from __future__ import annotations

from .ascend import AscendBackend
from .base import Backend
from .cuda import TUNED_WARP_SIZE, CudaBackend
from .interpreter import InterpreterBackend

__all__ = ["AscendBackend", "Backend", "CudaBackend", "InterpreterBackend", "for_target"]


def for_target(backend: str, arch: str | int, warp_size: int = 0) -> Backend:
    """The tuning for a Triton target: ``"npu"``, ``"cuda"``, ``"hip"`` or ``"cpu"``, with its
    threads per warp where it says (``GPUTarget.warp_size``: 64 on AMD's CDNA GPUs)."""
    if backend == "npu":
        return AscendBackend(str(arch))
    if backend in ("cuda", "hip"):
        return CudaBackend(backend, arch, warp_size=warp_size or TUNED_WARP_SIZE)
    return InterpreterBackend()
