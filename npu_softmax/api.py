"""The PyTorch-facing functions, with ``torch.softmax``'s contract, checked up front.

Each validates its arguments in plain Python (nothing here asks the Triton driver anything, so
``torch.compile`` traces these functions without a graph break) and calls a custom op from
``ops``. Eager calls skip the op's dispatch (``eager``): they run its body, autograd through a
``torch.autograd.Function``, and a repeat of a call signature runs its kept launch. Under
``torch.fx.symbolic_trace`` a call becomes one node of the graph, which calls the function
again when the graph runs. Supported dtypes: float16, bfloat16, float32, and float64 except on
Ascend.
"""

from __future__ import annotations

import torch
import torch.fx

from . import amp, checks, eager, ops


def softmax(input: torch.Tensor, dim: int = -1, dtype: torch.dtype | None = None, *,
            temperature: float | None = None, variant: str | None = None,
            out: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax of ``input`` along ``dim``: ``torch.softmax(input / temperature, dim,
    dtype=dtype)``. The arguments are named as torch's (``softmax(input=x, dim=-1)`` works).

    Args:
        input: a tensor of any shape (0-d and empty included) and any strides, float16,
            bfloat16 or float32 (float64 too, except on Ascend). Integer, bool and float8
            tensors need ``dtype=``.
        dim: the dim to normalise over (an int, or an integer with ``__index__``); negative
            counts from the end.
        dtype: output dtype; the input is cast to it first, as torch does (where the cast can
            round, ``input / temperature`` is). Default ``input.dtype``.
        temperature: a positive finite real number (a Python float or int, or numpy's); the
            kernels multiply each element by ``1 / temperature`` as they load it (float32
            arithmetic), so it costs no extra pass over memory. float64 outputs, and
            temperatures whose reciprocal is not a normal float32, are divided by it first (one
            more pass). ``None`` means 1. Under ``torch.compile`` a constant of the graph, or
            where it changes between calls an input of it (``ops.traced_temperature``).
        variant: force a kernel variant (``"tile"``, ``"online"``, ``"split"``, ``"cols"``)
            instead of the launcher's choice; for tests and benchmarks.
        out: write the result here and return it: a tensor of ``input``'s shape, the output
            dtype and ``input``'s device, with any strides whose elements are distinct. It may
            be ``input`` itself (as ``softmax_``) or share memory with ``input`` otherwise
            (interleaved views, a shifted window): it then gets the softmax of ``input`` as it
            was before the call. No autograd.

    Returns:
        A new contiguous tensor of ``input.shape`` and dtype ``dtype or input.dtype`` on
        ``input``'s device (or ``out``). Differentiable (through the Triton backward kernels)
        when ``out`` is None. Inside ``torch.autocast`` with no ``dtype``, the dtype torch's own
        softmax returns there (float32 on CUDA). A ``meta`` tensor gives a ``meta`` result
        (shape and dtype only).

    Tensors on the device of the active Triton target (``npu``, ``cuda``) run the Triton kernels;
    CPU tensors run them under Triton's interpreter when ``TRITON_INTERPRET=1``, and otherwise
    fall back to torch (see ``npu_softmax.target_info()``).

    Raises:
        TypeError: ``input``/``out`` is not a tensor, or is sparse, nested or quantized, a dtype is
            not supported, ``out`` has another dtype than the result, or ``temperature`` is not
            a real number (a tensor included).
        ValueError: bad ``variant`` or ``temperature`` value, ``variant="tile"`` on rows
            longer than the target's one-block tile, or ``out`` has the wrong shape.
        IndexError: ``dim`` is out of range.
        RuntimeError: a tensor is on a device the active Triton driver cannot serve, ``out`` is
            on another device than ``input``, overlaps itself (a stride of 0), is an inference
            tensor outside ``torch.inference_mode()``, or is used with autograd.
    """
    if out is None:
        # A signature seen before skips everything else (see ``eager``); a call that autograd
        # records then goes straight to its autograd function.
        y = eager.repeat_forward(input, dim, dtype, temperature, variant, False)
        if y is None:
            y = ops.repeat_recorded(input, dim, dtype, temperature, variant, False)
        if y is not None:
            return y
    elif eager.repeat_into(input, out, dim, dtype, temperature, variant, False):
        return out
    return _dispatch(False, input, dim, dtype, temperature, variant, out)


def log_softmax(input: torch.Tensor, dim: int = -1, dtype: torch.dtype | None = None, *,
                temperature: float | None = None, variant: str | None = None,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """Log-softmax of ``input`` along ``dim``: ``torch.log_softmax(input / temperature, dim,
    dtype=dtype)``.

    Same arguments, returns and errors as ``softmax``; computed as ``(x - max) - log(sum(exp(x -
    max)))`` in one fused kernel, so it never takes the log of a rounded softmax.
    """
    if out is None:
        y = eager.repeat_forward(input, dim, dtype, temperature, variant, True)
        if y is None:
            y = ops.repeat_recorded(input, dim, dtype, temperature, variant, True)
        if y is not None:
            return y
    elif eager.repeat_into(input, out, dim, dtype, temperature, variant, True):
        return out
    return _dispatch(True, input, dim, dtype, temperature, variant, out)


def softmax_(input: torch.Tensor, dim: int = -1, *, temperature: float | None = None,
             variant: str | None = None) -> torch.Tensor:
    """In-place ``softmax``: overwrite ``input`` (any strides, elements distinct) and return it.

    Every kernel variant reads each element before writing it, within one program, so no second
    buffer is allocated (except for strides the kernels cannot address, a permuted 4-d view say,
    where the result goes through a temporary). No autograd.
    """
    if eager.repeat_into(input, input, dim, None, temperature, variant, False):
        return input
    return _inplace(False, input, dim, temperature, variant)


def log_softmax_(input: torch.Tensor, dim: int = -1, *, temperature: float | None = None,
                 variant: str | None = None) -> torch.Tensor:
    """In-place ``log_softmax``; see ``softmax_``."""
    if eager.repeat_into(input, input, dim, None, temperature, variant, True):
        return input
    return _inplace(True, input, dim, temperature, variant)


def _dispatch(log: bool, x: torch.Tensor, dim: int, dtype: torch.dtype | None,
              temperature: float | None, variant: str | None,
              out: torch.Tensor | None) -> torch.Tensor:
    # The first call of a signature (or one that records autograd): checked, then kept.
    node = _fx_node(log_softmax if log else softmax, (x, out), (x, dim),
                    {"dtype": dtype, "temperature": temperature, "variant": variant, "out": out})
    if node is not None:
        return node
    fn = ops.op_name(log)
    checks.check_args(fn, x, dim, variant)
    if out is None:
        dtype = amp.output_dtype(x, dtype, log)
    out_dtype = checks.check_dtype_arg(fn, x, dtype)
    t = ops.traced_temperature(checks.check_temperature(fn, temperature))
    wrapped = checks.wrap_dim(dim, x.dim())
    if out is None:
        # Kept under the arguments as given, the key ``eager.repeat_forward`` looks up.
        key = (eager.forward_signature(x, dim, dtype, temperature, variant, log)
               if eager.plain(x) else None)
        return ops.checked_forward(x, wrapped, out_dtype, t, log, variant, key)
    checks.check_out(fn, x, out, out_dtype)
    _no_grad(fn, x, out)
    if eager.transformed(x) or eager.transformed(out):
        # Under torch.func.vmap: the batch's result, copied in by torch's batched copy.
        return out.copy_(ops.checked_forward(x, wrapped, out_dtype, t, log, variant))
    if eager.plain(x) and eager.plain(out):
        # Kept under the arguments as given, the key ``eager.repeat_into`` looks up. (An
        # ``out`` of a tensor subclass, a wrapper without storage say, takes the op, as ``x``
        # of one does.)
        key = (eager.into_signature(x, out, dim, dtype, temperature, variant, log)
               if type(out) is torch.Tensor else None)
        ops.run_out(x, out, wrapped, t, log, variant, key)
        torch.autograd.graph.increment_version(out)  # as the op's dispatch does (registry)
    elif out is x:
        ops.into_op(log, True, t)(x, wrapped, t, variant)
    else:
        ops.into_op(log, False, t)(x, wrapped, t, variant, out)
    return out


def _inplace(log: bool, x: torch.Tensor, dim: int, temperature: float | None,
             variant: str | None) -> torch.Tensor:
    node = _fx_node(log_softmax_ if log else softmax_, (x,), (x, dim),
                    {"temperature": temperature, "variant": variant})
    if node is not None:
        return node
    fn = ops.op_name(log) + "_"
    checks.check_args(fn, x, dim, variant)
    if not x.is_floating_point():
        raise TypeError(f"{fn}: in place needs a floating-point tensor, got {x.dtype}")
    checks.check_out(fn, x, x, x.dtype)
    _no_grad(fn, x, x)
    t = ops.traced_temperature(checks.check_temperature(fn, temperature))
    wrapped = checks.wrap_dim(dim, x.dim())
    if eager.transformed(x):
        return x.copy_(ops.checked_forward(x, wrapped, x.dtype, t, log, variant))
    if eager.plain(x):
        key = eager.into_signature(x, x, dim, None, temperature, variant, log)
        ops.run_out(x, x, wrapped, t, log, variant, key)
        torch.autograd.graph.increment_version(x)  # as the op's dispatch does (registry)
    else:
        ops.into_op(log, True, t)(x, wrapped, t, variant)
    return x


def _fx_node(fn: object, tensors: tuple[object, ...], args: tuple,
             kwargs: dict[str, object]) -> torch.fx.Proxy | None:
    # Where ``torch.fx.symbolic_trace`` passes a ``Proxy`` for a tensor, the call ``fn(*args,
    # **kwargs)`` as a node of its graph (as ``torch.fx.wrap`` records a function): the checks
    # and the kernels run when the graph runs, on real tensors. None for real calls.
    for t in tensors:
        if type(t) is not torch.Tensor and isinstance(t, torch.fx.Proxy):
            return t.tracer.create_proxy("call_function", fn, args, kwargs)
    return None


def _no_grad(fn: str, x: torch.Tensor, out: torch.Tensor) -> None:
    if (torch.is_grad_enabled() and (x.requires_grad or out.requires_grad)
            or eager.dual(x) or eager.dual(out)):
        raise RuntimeError(checks.no_grad_into_message(fn))
