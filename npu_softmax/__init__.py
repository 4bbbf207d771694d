"""npu_softmax: a persistent fused softmax written once in Triton, for Ascend NPUs (triton-ascend),
NVIDIA/AMD GPUs (upstream Triton) and the CPU (Triton's interpreter)."""

from ._requirements import require_triton

require_triton()

from .api import softmax  # noqa: E402 (needs the check above to pass first)
from .info import target_info  # noqa: E402

__all__ = ["softmax", "target_info"]
__version__ = "0.1.0"
