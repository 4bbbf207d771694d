"""npu_softmax: a persistent fused softmax written once in Triton, for Ascend NPUs (triton-ascend),
NVIDIA/AMD GPUs (upstream Triton) and the CPU (Triton's interpreter)."""

from ._requirements import require_triton

require_triton()

# The imports below need Triton, checked above with a message that says what to install.
from .api import log_softmax, log_softmax_, softmax, softmax_  # noqa: E402
from .dispatch import disable, enable, enabled, is_enabled  # noqa: E402
from .info import target_info  # noqa: E402
from .modules import LogSoftmax, Softmax  # noqa: E402

__all__ = ["LogSoftmax", "Softmax", "disable", "enable", "enabled", "is_enabled", "log_softmax",
           "log_softmax_", "softmax", "softmax_", "target_info"]
__version__ = "0.1.0"
