"""npu_softmax: a persistent fused softmax written once in Triton, for Ascend NPUs (triton-ascend),
NVIDIA/AMD GPUs (upstream Triton) and the CPU (Triton's interpreter)."""

from .api import softmax
from .info import target_info

__all__ = ["softmax", "target_info"]
__version__ = "0.1.0"
