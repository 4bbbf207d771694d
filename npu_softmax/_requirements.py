"""Fail at ``import npu_softmax`` with an install hint when no usable Triton is importable.

Without this check a missing or foreign ``triton`` surfaces deep inside the kernels module as
``ModuleNotFoundError`` or ``AttributeError: module 'triton' has no attribute 'jit'``, which
does not say which package to install.
"""

from __future__ import annotations

import re

#: Oldest Triton the kernels are written for (triton-ascend 3.2.0; upstream is 3.6+).
MIN_TRITON = (3, 2)

INSTALL_HINT = (
    "install Triton for your device: `pip install 'triton>=3.6'` for NVIDIA GPUs or the CPU "
    "interpreter, or on Ascend NPUs `pip install torch_npu triton-ascend==3.2.0` in an "
    "environment without upstream triton (then npu_softmax with `pip install --no-deps`, "
    "which keeps upstream triton out)"
)


def require_triton() -> None:
    """Import ``triton`` and check it is a Triton build of at least ``MIN_TRITON``.

    Raises:
        ImportError: naming what is wrong and what to install.
    """
    try:
        import triton
    except ImportError as e:
        raise ImportError(f"npu_softmax needs Triton, which is not importable ({e}); "
                          f"{INSTALL_HINT}") from e
    version = getattr(triton, "__version__", None)
    if not isinstance(version, str) or not hasattr(triton, "jit"):
        where = getattr(triton, "__file__", None) or list(getattr(triton, "__path__", []))
        raise ImportError(f"npu_softmax needs Triton, but the 'triton' module found at {where} "
                          f"is not a Triton build (no version or triton.jit); {INSTALL_HINT}")
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None or (int(found[1]), int(found[2])) < MIN_TRITON:
        raise ImportError(f"npu_softmax needs Triton >= {'.'.join(map(str, MIN_TRITON))}, "
                          f"found triton {version}; {INSTALL_HINT}")
