"""Argument checks with errors in the caller's terms.

Two kinds: ``check_*`` functions that look only at Python values and tensor metadata (safe in code
that ``torch.compile`` traces), and ``check_target`` which asks the Triton target which dtypes and
devices it serves; that one runs inside the custom ops (their kernels and fake kernels), never in
the traced Python of the public functions, so a driver lookup can never break a graph.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator

import torch

from . import launcher

#: Input/output dtypes the kernels take on every target.
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
#: float64 works where Triton has fp64 arithmetic (CUDA, HIP, the interpreter), not on Ascend.
FLOAT64_TARGETS = ("cuda", "hip", "cpu")
VARIANTS = ("tile", "online", "split", "cols")


def check_args(fn: str, x: object, dim: object, variant: object) -> None:
    """``x`` is a real tensor, ``dim`` an int and ``variant`` a kernel variant or None."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{fn}: expected a torch.Tensor, got {type(x).__name__}")
    _check_dense(fn, "the input", x)
    if x.is_complex():
        raise TypeError(f"{fn}: complex tensors are not supported, got {x.dtype}")
    # An int, or an integer that says so through ``__index__`` (numpy's), as torch takes;
    # not a bool, nor a tensor.
    if isinstance(dim, (bool, torch.Tensor)) or not hasattr(type(dim), "__index__"):
        raise TypeError(f"{fn}: dim must be an int, got {type(dim).__name__}")
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"{fn}: variant must be one of {VARIANTS}, got {variant!r}")


def _check_dense(fn: str, name: str, t: torch.Tensor) -> None:
    # The kernels address memory by strides: sparse, mkldnn and nested tensors have none to
    # give, and a quantized tensor's elements are not its values.
    if t.is_nested:
        raise TypeError(f"{fn}: {name} is a nested tensor, which is not supported; apply it "
                        "to each component (unbind())")
    if t.layout != torch.strided:
        raise TypeError(f"{fn}: {name} has layout {t.layout}; only dense (strided) tensors are "
                        "supported: call .to_dense() first")
    if t.is_quantized:
        raise TypeError(f"{fn}: {name} is quantized ({t.dtype}), which is not supported; call "
                        ".dequantize() first")


def check_dtype_arg(fn: str, x: torch.Tensor, dtype: object) -> torch.dtype:
    """The output dtype: ``dtype`` or ``x.dtype``; integer and bool inputs need ``dtype``."""
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"{fn}: dtype={dtype!r} is not supported (not a floating torch.dtype); "
                        "use one of float16, bfloat16, float32 (or float64 off Ascend)")
    if dtype is None and not x.is_floating_point():
        raise TypeError(f"{fn}: expected a floating-point tensor, got {x.dtype}; "
                        "pass dtype=torch.float32 to convert it")
    return dtype or x.dtype


def check_temperature(fn: str, temperature: object) -> float:
    """``temperature`` as a float: a real number (numpy's included), positive and finite (None
    means 1)."""
    if temperature is None:
        return 1.0
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        hint = (" (pass a Python number: temperature.item())"
                if isinstance(temperature, torch.Tensor) else "")
        raise TypeError(f"{fn}: temperature must be a positive finite float, "
                        f"got {type(temperature).__name__}{hint}")
    # Comparisons rather than math.isfinite: under torch.compile a float argument may be a
    # symbolic float, which comparisons guard on and math.isfinite cannot take. NaN fails both.
    # A positive finite int or Fraction may still round to a float of 0 or overflow one
    # (10**400, Fraction(1, 10**400)): the float is what the kernels divide by.
    value = math.inf
    if 0 < temperature < math.inf:
        try:
            value = float(temperature)
        except OverflowError:
            pass
    if not (0 < value < math.inf):
        # A traced symbolic float cannot be formatted; its value is in the guard's message.
        got = "" if torch.compiler.is_compiling() else f", got {temperature}"
        raise ValueError(f"{fn}: temperature must be a positive finite float{got}")
    return value


def wrap_dim(dim: int, ndim: int) -> int:
    """``dim`` (an int, or an integer with ``__index__``) as a non-negative index; a 0-d
    tensor takes dims -1 and 0, as in torch."""
    dim = operator.index(dim)
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-size}, {size - 1}], but got {dim})")
    return dim % size


def _same_shape(a: torch.Tensor, b: torch.Tensor) -> bool:
    # Under torch.jit.trace sizes are traced values, whose comparison warns that the trace
    # might not generalise; is_same_size compares them untraced (torch.compile cannot trace
    # it, and compares shapes symbolically).
    if not torch.compiler.is_compiling() and torch._C._is_tracing():
        return a.is_same_size(b)
    return a.shape == b.shape


def check_out(fn: str, x: torch.Tensor, out: object, out_dtype: torch.dtype) -> None:
    """``out`` has ``x``'s shape and device, the output dtype, and no element twice."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{fn}: out must be a torch.Tensor, got {type(out).__name__}")
    _check_dense(fn, "out", out)
    if not _same_shape(out, x):
        raise ValueError(f"{fn}: out has shape {tuple(out.shape)} but the result has shape "
                         f"{tuple(x.shape)}")
    if out.dtype != out_dtype:
        raise TypeError(f"{fn}: out has dtype {out.dtype} but the result has dtype {out_dtype}")
    if out.device != x.device:
        raise RuntimeError(f"{fn}: out is on {out.device} but the input is on {x.device}")
    # torch.compile traces fake tensors, never inference tensors (and cannot trace the test).
    if (not torch.compiler.is_compiling() and out.is_inference()
            and not torch.is_inference_mode_enabled()):
        raise RuntimeError(f"{fn}: out is an inference tensor, which may be written only "
                           "inside torch.inference_mode(); write into a clone of it instead")
    if any(st == 0 and sz > 1 for sz, st in zip(out.shape, out.stride())):
        raise RuntimeError(f"{fn}: out has overlapping elements (a stride of 0, e.g. from "
                           "expand()); pass a tensor whose elements are distinct")


def check_grad_shape(fn: str, grad: torch.Tensor, output: torch.Tensor) -> None:
    """A backward's ``grad`` has the shape of ``output``, as torch's softmax backward checks:
    autograd's gradients always do, but a direct call (scripted code, aten's backward under
    ``enable()``) may pass any, and the kernels address both by the output's shape (one would
    be read past its end, or rows of it left unread). Compared directly: the ops' bodies run
    below ``torch.jit.trace``'s recording, which ``_same_shape`` keeps its sizes from."""
    if grad.shape != output.shape:
        raise RuntimeError(f"{fn} backward: grad has shape {tuple(grad.shape)} but the output "
                           f"has shape {tuple(output.shape)}")


def overlaps_apart(x: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether ``out``'s memory may overlap ``x``'s without being the very same view (in
    place).

    Compared by byte ranges, so two interleaved views that touch distinct elements count too
    (conservative: such a call only goes through a separate buffer).
    """
    if x.numel() == 0 or x.untyped_storage().data_ptr() != out.untyped_storage().data_ptr():
        return False
    if (x.data_ptr(), x.stride(), x.dtype) == (out.data_ptr(), out.stride(), out.dtype):
        return False

    def extent(t: torch.Tensor) -> tuple[int, int]:
        last = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))
        return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()

    (a0, a1), (b0, b1) = extent(x), extent(out)
    return a0 < b1 and b0 < a1


def supported_dtypes(device: torch.device) -> tuple[torch.dtype, ...]:
    """Output dtypes served for tensors on ``device``: float16, bfloat16, float32, and float64
    unless the tensor runs the Ascend kernels (no fp64 arithmetic there)."""
    return _supported_dtypes(device.type)


@functools.cache
def _supported_dtypes(device_type: str) -> tuple[torch.dtype, ...]:
    if (launcher.serves(torch.device(device_type))
            and launcher.target().backend not in FLOAT64_TARGETS):
        return FLOAT_DTYPES
    return FLOAT_DTYPES + (torch.float64,)


def check_target(fn: str, x: torch.Tensor, out_dtype: torch.dtype) -> None:
    """``x``'s device and the dtypes are ones the active Triton target serves. CPU tensors the
    target does not serve run torch's softmax, and ``meta`` tensors (no data) get only a result
    of the right shape and dtype, as from torch."""
    allowed = supported_dtypes(x.device)
    if out_dtype not in allowed:
        names = ", ".join(str(d).replace("torch.", "") for d in allowed)
        raise TypeError(f"{fn}: dtype={out_dtype} is not supported for {x.device.type} tensors "
                        f"on the {launcher.target().backend!r} target; use one of {names}")
    if not launcher.serves(x.device) and x.device.type not in ("cpu", "meta"):
        raise RuntimeError(device_message(fn, x.device))


def device_message(fn: str, device: torch.device) -> str:
    t = launcher.target()
    if t.backend == "cpu":
        active = "no Triton device driver is active (CPU only)"
    else:
        active = f"the active Triton target is {t.backend!r} ({t.arch}), serving " \
                 f"{launcher.DEVICE_TYPE[t.backend]!r} tensors"
    return (f"{fn}: the tensor is on {str(device)!r} but {active}; move it to a "
            "served device or install the Triton build for it (triton-ascend + torch_npu for "
            "'npu', upstream triton for 'cuda')")


def no_grad_into_message(fn: str) -> str:
    """The error of an out= or in-place call that autograd would have to record: as torch's
    out= functions, a result written into a given buffer is not differentiable."""
    return (f"{fn}: out= and in-place results do not support autograd (an input requires "
            "grad or carries a forward-mode tangent); call it without out= or under "
            "torch.no_grad()")
