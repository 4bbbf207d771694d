"""What ``torch.autocast`` makes of a softmax's output dtype, asked of torch itself.

Under CUDA autocast, ``torch.softmax`` and ``torch.log_softmax`` of a float16, bfloat16 or
float32 input with no ``dtype=`` return float32; CPU autocast leaves them alone, and a backend
such as torch_npu registers its own lists. Rather than copy those lists, the first call of each
(device type, input dtype, autocast dtype) asks torch: it runs torch's own function on an empty
tensor of the device (no kernel runs, no memory is taken) and reads the result's dtype. The
kernels then write that dtype directly, widening as they load, where torch casts the input
first.
"""

from __future__ import annotations

import torch

_dtypes: dict[tuple, torch.dtype] = {}


def _autocast_on(device_type: str) -> bool:
    if not torch._C._is_any_autocast_enabled():
        return False
    try:
        return torch.is_autocast_enabled(device_type)
    except RuntimeError:  # a device type autocast does not know (meta)
        return False


def output_dtype(x: torch.Tensor, dtype: torch.dtype | None, log: bool) -> torch.dtype | None:
    """The ``dtype=`` argument of a call on ``x`` as autocast makes it: ``dtype`` itself unless
    it is None, ``x`` is floating-point and autocast is on for ``x``'s device type; then the
    dtype torch's own (log-)softmax would return (None where that is ``x.dtype``)."""
    device_type = x.device.type
    if dtype is not None or not x.is_floating_point() or not _autocast_on(device_type):
        return dtype
    key = (device_type, x.dtype, torch.get_autocast_dtype(device_type), log)
    # While torch.compile traces, ask torch each time: the probe is traced, the dict is not.
    compiling = torch.compiler.is_compiling()
    found = None if compiling else _dtypes.get(key)
    if found is None:
        fn = torch.log_softmax if log else torch.softmax
        found = fn(torch.empty(0, dtype=x.dtype, device=x.device), -1).dtype
        if not compiling:
            _dtypes[key] = found
    return None if found == x.dtype else found
