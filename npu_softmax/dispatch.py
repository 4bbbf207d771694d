"""Route torch's own softmax to the Triton kernels: ``enable()``, ``disable()``, ``enabled()``.

``torch.softmax``, ``torch.nn.functional.softmax``, ``Tensor.softmax`` (and the log-softmax
ones) all reach the aten kernels ``_softmax``/``_log_softmax`` and, for autograd,
``_softmax_backward_data``/``_log_softmax_backward_data``. ``enable()`` registers Triton
implementations of those four for the dispatch key of each device the kernels serve
(``PrivateUse1`` for ``npu``, ``CUDA`` for ``cuda``/ROCm, ``CPU`` only under the interpreter);
torch keeps autograd, dtype promotion (``dtype=``) and every other device. The implementations
call the launcher directly, never a torch softmax, so they cannot recurse into themselves.
``torch.compile`` lowers softmax itself (inductor), so compiled code is not affected.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from . import checks, eager, launcher, ops

#: Dispatch key of the torch device type served by each Triton backend.
DISPATCH_KEY = {"npu": "PrivateUse1", "cuda": "CUDA"}

_library: torch.library.Library | None = None


def _aten_forward(log: bool):  # noqa: ANN202
    def impl(x: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
        # Below autograd, on a real tensor: a signature seen before repeats its launch.
        key = eager.signature(x, "aten", dim, half_to_float, log)
        y = eager.repeat(key, x)
        if y is not None:
            return y
        out_dtype = torch.float32 if half_to_float else x.dtype
        if not out_dtype.is_floating_point:
            # As torch's own kernels: an integer or bool input needs ``dtype=``.
            raise NotImplementedError(f"{'log_softmax' if log else 'softmax'} is not "
                                      f"implemented for {out_dtype}; pass dtype=")
        y = torch.empty(x.shape, dtype=out_dtype, device=x.device)
        if out_dtype in checks.supported_dtypes(x.device):
            launch = ops.forward_into(x, y, checks.wrap_dim(dim, x.dim()), 1.0, log, None)
            eager.remember(key, (x,), y, launch)
            return y
        # float64 on Ascend: the kernels have no fp64 there; torch's elementwise ops do.
        xs = x.to(out_dtype)
        shifted = xs - xs.amax(dim, keepdim=True)
        lse = shifted.exp().sum(dim, keepdim=True).log()
        return shifted - lse if log else (shifted - lse).exp()
    return impl


def _aten_backward(log: bool):  # noqa: ANN202
    def impl(grad: torch.Tensor, output: torch.Tensor, dim: int,
             input_dtype: torch.dtype) -> torch.Tensor:
        dim = checks.wrap_dim(dim, output.dim())
        if output.dtype in checks.supported_dtypes(output.device):
            return ops.backward(grad, output, dim, input_dtype, 1.0, log, None)
        if log:
            dx = grad - output.exp() * grad.sum(dim, keepdim=True)
        else:
            dx = output * (grad - (grad * output).sum(dim, keepdim=True))
        return dx.to(input_dtype)
    return impl


def dispatch_keys() -> list[str]:
    """The dispatch keys ``enable()`` overrides in this process (empty: nothing to route)."""
    t = launcher.target()
    keys = [DISPATCH_KEY[launcher.DEVICE_TYPE[t.backend]]] if t.backend in launcher.DEVICE_TYPE \
        else []
    if launcher.serves(torch.device("cpu")):
        keys.append("CPU")
    return keys


def enable() -> None:
    """Route torch's softmax and log-softmax (forward and backward) to the Triton kernels for
    the devices they serve. Calling it again does nothing."""
    global _library
    if _library is not None:
        return
    lib = torch.library.Library("aten", "IMPL")
    for key in dispatch_keys():
        lib.impl("_softmax", _aten_forward(False), key)
        lib.impl("_log_softmax", _aten_forward(True), key)
        lib.impl("_softmax_backward_data", _aten_backward(False), key)
        lib.impl("_log_softmax_backward_data", _aten_backward(True), key)
    _library = lib


def disable() -> None:
    """Give torch its own softmax kernels back. Calling it when not enabled does nothing."""
    global _library
    if _library is not None:
        _library._destroy()
        _library = None


def is_enabled() -> bool:
    """Whether ``enable()`` is in effect."""
    return _library is not None


@contextlib.contextmanager
def enabled() -> Iterator[None]:
    """``with npu_softmax.enabled(): ...`` routes torch's softmax inside the block only (left as
    it was, enabled or not, on exit)."""
    was = is_enabled()
    enable()
    try:
        yield
    finally:
        if not was:
            disable()
