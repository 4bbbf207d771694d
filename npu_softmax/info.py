"""``target_info()``: what this process runs softmax on, for users and bug reports."""

from __future__ import annotations

from typing import Any

import torch

from . import _compat, launcher


def target_info() -> dict[str, Any]:
    """Describe the active Triton target and how each kind of tensor is served.

    Keys: ``backend`` ("npu", "cuda", "hip", "cpu"), ``arch``, ``interpreter`` (bool),
    ``triton``/``torch`` versions, ``kernel_devices`` (torch device types that run the Triton
    kernels), ``cpu_tensors`` ("triton interpreter" or "torch.softmax fallback"), and on a
    device target ``device_name`` and ``cores`` (SMs or vector cores of the current device).
    """
    t = launcher.target()
    info: dict[str, Any] = {
        "backend": t.backend,
        "arch": t.arch,
        "interpreter": t.interpreter,
        "triton": _compat.triton_version(),
        "torch": torch.__version__,
        "kernel_devices": list(launcher.INTERPRETED_DEVICE_TYPES) if t.interpreter
        else [launcher.DEVICE_TYPE[t.backend]] if t.backend in launcher.DEVICE_TYPE else [],
        "cpu_tensors": "triton interpreter" if t.interpreter else "torch.softmax fallback",
    }
    if t.backend in launcher.DEVICE_TYPE:
        module = getattr(torch, launcher.DEVICE_TYPE[t.backend])
        index = module.current_device()
        info["device_name"] = module.get_device_name(index)
        info["cores"] = launcher.core_count(index)
    return info
