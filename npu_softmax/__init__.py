"""npu_softmax: a persistent fused softmax written once in Triton, for Ascend NPUs (triton-ascend),
NVIDIA/AMD GPUs (upstream Triton) and the CPU (Triton's interpreter)."""

from .api import log_softmax, log_softmax_, softmax, softmax_
from .dispatch import disable, enable, enabled, is_enabled
from .info import target_info
from .modules import LogSoftmax, Softmax

__all__ = ["LogSoftmax", "Softmax", "disable", "enable", "enabled", "is_enabled", "log_softmax",
           "log_softmax_", "softmax", "softmax_", "target_info"]
__version__ = "0.1.0"
