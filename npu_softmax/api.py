"""The PyTorch-facing API: ``softmax`` with ``torch.softmax``'s contract, checked up front."""

from __future__ import annotations

import torch

from . import launcher
from .layout import row_layout

#: Input/output dtypes the kernels take on every target.
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
#: float64 works where Triton has fp64 arithmetic (CUDA, HIP, the interpreter), not on Ascend.
FLOAT64_TARGETS = ("cuda", "hip", "cpu")
VARIANTS = ("tile", "online", "split")


def softmax(x: torch.Tensor, dim: int = -1, *, dtype: torch.dtype | None = None,
            variant: str | None = None) -> torch.Tensor:
    """Softmax of ``x`` along ``dim``, as ``torch.softmax(x, dim, dtype=dtype)``.

    Args:
        x: a tensor of any shape (0-d included) and any strides, float16, bfloat16 or float32
            (float64 too, except on Ascend). Integer or bool tensors need ``dtype=``.
        dim: the dim to normalise over; negative counts from the end.
        dtype: output dtype (float16, bfloat16, float32, float64); the input is cast to it
            first, as torch does. Default: ``x.dtype``.
        variant: force a kernel variant (``"tile"``, ``"online"``, ``"split"``) instead of the
            launcher's choice; for tests and benchmarks.

    Returns:
        A new contiguous tensor of ``x.shape`` and dtype ``dtype or x.dtype`` on ``x``'s device.
        Arithmetic is float32 (float64 for float64 output).

    Tensors on the device of the active Triton target (``npu``, ``cuda``) run the Triton kernels;
    CPU tensors run them under Triton's interpreter when ``TRITON_INTERPRET=1``, and otherwise
    fall back to ``torch.softmax`` (see ``npu_softmax.target_info()``).

    Raises:
        TypeError: ``x`` is not a tensor, or its dtype or ``dtype`` is not a supported float.
        IndexError: ``dim`` is out of range.
        RuntimeError: ``x`` is on a device the active Triton driver cannot serve.
        ValueError: ``variant`` is not one of the kernel variants.
    """
    out_dtype = _check(x, dim, dtype, variant)
    dim = _wrap_dim(dim, x.dim())
    if not launcher.serves(x.device):
        return torch.softmax(x, dim, dtype=dtype)
    if not x.dtype.is_floating_point:
        x = x.to(out_dtype)
    if x.requires_grad and torch.is_grad_enabled():
        return _Softmax.apply(x, dim, out_dtype, variant)
    return _forward(x, dim, out_dtype, variant)


def _forward(x: torch.Tensor, dim: int, out_dtype: torch.dtype,
             variant: str | None) -> torch.Tensor:
    if out_dtype == torch.bfloat16 and launcher.target().interpreter:
        # Triton's interpreter converts float32 -> bfloat16 by truncation (and float64 ->
        # bfloat16 as an integer cast) where devices round to nearest even, so on the CPU both
        # roundings happen in torch: the input as torch.softmax(dtype=) casts it, the float32
        # result once at the end.
        return _forward(x.to(torch.bfloat16), dim, torch.float32, variant).to(torch.bfloat16)
    # torch.softmax returns a contiguous tensor whatever the input's strides; so do we.
    y = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    if y.numel() == 0:
        return y
    xv, yv = (x.reshape(1), y.reshape(1)) if x.dim() == 0 else (x, y)
    layout = row_layout(xv.shape, dim, xv.stride(), yv.stride())
    if layout is None:
        # More than two non-normalised dims that no stride pair describes (a permuted 4-d
        # view, say): the one case where the input is copied.
        xv = xv.contiguous()
        layout = row_layout(xv.shape, dim, xv.stride(), yv.stride())
    launcher.launch_softmax(xv, yv, layout, variant)
    return y


class _Softmax(torch.autograd.Function):
    """Gradient of softmax: ``dx = y * (dy - sum(dy * y))`` along ``dim``."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, dim: int, out_dtype: torch.dtype,  # noqa: ANN001
                variant: str | None) -> torch.Tensor:
        y = _forward(x, dim, out_dtype, variant)
        ctx.save_for_backward(y)
        ctx.dim, ctx.x_dtype = dim, x.dtype
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):  # noqa: ANN001, ANN205
        (y,) = ctx.saved_tensors
        acc = torch.float64 if y.dtype == torch.float64 else torch.float32
        y32, dy32 = y.to(acc), dy.to(acc)
        dx = y32 * (dy32 - (dy32 * y32).sum(ctx.dim, keepdim=True))
        return dx.to(ctx.x_dtype), None, None, None


def _check(x: object, dim: object, dtype: torch.dtype | None,
           variant: str | None) -> torch.dtype:
    """Validate the arguments in the caller's terms; return the output dtype."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"npu_softmax.softmax: expected a torch.Tensor, got {type(x).__name__}")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"npu_softmax.softmax: dim must be an int, got {type(dim).__name__}")
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"npu_softmax.softmax: variant must be one of {VARIANTS}, got {variant!r}")
    t = launcher.target()
    allowed = FLOAT_DTYPES + ((torch.float64,) if t.backend in FLOAT64_TARGETS else ())
    names = ", ".join(str(d).removeprefix("torch.") for d in allowed)
    where = "on this target" if t.backend not in FLOAT64_TARGETS else ""
    if dtype is not None and dtype not in allowed:
        raise TypeError(f"npu_softmax.softmax: dtype={dtype} is not supported {where}; "
                        f"use one of {names}".replace("  ", " "))
    if dtype is None and x.dtype not in allowed:
        hint = ("; pass dtype=torch.float32 to convert it"
                if not (x.is_floating_point() or x.is_complex()) else "")
        raise TypeError(f"npu_softmax.softmax: expected a tensor of dtype {names}, "
                        f"got {x.dtype}{hint}")
    if x.is_complex():
        raise TypeError(f"npu_softmax.softmax: complex tensors are not supported, got {x.dtype}")
    if not launcher.serves(x.device) and x.device.type != "cpu":
        raise RuntimeError(_device_message(x.device))
    return dtype or x.dtype


def _device_message(device: torch.device) -> str:
    t = launcher.target()
    if t.interpreter:
        active = ("Triton's interpreter runs only tensors with data on "
                  f"{', '.join(launcher.INTERPRETED_DEVICE_TYPES)}")
    elif t.backend == "cpu":
        active = "no Triton device driver is active (CPU only)"
    else:
        active = f"the active Triton target is {t.backend!r} ({t.arch}), serving " \
                 f"{launcher.DEVICE_TYPE[t.backend]!r} tensors"
    return (f"npu_softmax.softmax: the tensor is on {str(device)!r} but {active}; move it to a "
            "served device or install the Triton build for it (triton-ascend + torch_npu for "
            "'npu', upstream triton for 'cuda')")


def _wrap_dim(dim: int, ndim: int) -> int:
    """``dim`` as a non-negative index; a 0-d tensor takes dims -1 and 0, as in torch."""
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-size}, {size - 1}], but got {dim})")
    return dim % size
