"""The custom ops behind the public functions (defined on torch's dispatcher by ``registry``).

=====================================================  =========================================
``npu_softmax::softmax(x, dim, dtype, temperature, variant) -> Tensor``       forward, autograd
``npu_softmax::log_softmax(x, dim, dtype, temperature, variant) -> Tensor``   forward, autograd
``npu_softmax::softmax_backward(grad, output, dim, input_dtype, temperature, variant)``
``npu_softmax::log_softmax_backward(grad, output, dim, input_dtype, temperature, variant)``
``npu_softmax::softmax_out(x, dim, temperature, variant, out!)``              writes ``out``
``npu_softmax::log_softmax_out(x, dim, temperature, variant, out!)``          writes ``out``
``npu_softmax::softmax_(x!, dim, temperature, variant)``                      in place
``npu_softmax::log_softmax_(x!, dim, temperature, variant)``                  in place
=====================================================  =========================================

Each has an overload ``temperature_tensor`` whose temperature is a 0-d float64 CPU tensor, for a
temperature that ``torch.compile`` traces as a symbolic float (``traced_temperature``).
Each has a fake kernel (shapes and dtypes only) so ``torch.compile`` traces through it without a
graph break; the forwards have autograd through the backward ops, which run the Triton backward
kernels (no double backward through the ops; eager calls have it, see ``_EagerAutograd``). The
out= and in-place ops refuse arguments that require grad and bump the version of the tensor
they write.
``dim`` may be negative, as in torch's ops (``_op_dim``: scripted code calls the ops directly);
the backward checks that ``grad`` has the shape of ``output`` (``checks.check_grad_shape``), the
out= and in-place ops check ``out`` as the public functions do (``checks.check_out``: its shape,
device, no element twice); the ops check dtypes and devices against the Triton target (inside
the op, so tracing never sees the driver lookup). Tensors on a device the kernels do not serve
(CPU without the interpreter; meta, whose results have only a shape and dtype) run torch's own
softmax, so every device the public API accepts has an implementation.

Eager calls from ``api`` skip the op's dispatch (``checked_forward``): ``eager_forward`` runs
the op's body, under a ``torch.autograd.Function`` when autograd records the call. Forward,
backward, out= and in-place bodies keep their launch per call signature (``eager``), the ops'
own calls (a compiled graph's) under keys of their own. Calls on a ``torch.func``
transform's tensors (``vmap``, ``grad``, ``jvp`` and what is built on them) go through a
second ``torch.autograd.Function`` whose transform rules run the kernels on the unwrapped
batch; a tensor batched at the innermost ``vmap`` level is unwrapped directly (``batching``),
which does what the ``vmap`` rule does for a fraction of the host time.
"""

import math
from typing import Callable, Optional, Union

import torch

from . import batching, checks, eager, launcher, registry
from .layout import row_layout

Tensor = torch.Tensor


def op_name(log: bool) -> str:
    """The public function's name, for error messages."""
    return "npu_softmax.log_softmax" if log else "npu_softmax.softmax"


def _as_rows(t: Tensor) -> Tensor:
    # The kernels need at least one dim; a 0-d tensor is one row of one element.
    return t.reshape(1) if t.dim() == 0 else t


#: Input dtypes the kernels load (and widen as they load).
_LOADED = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _cast_first(src: torch.dtype, dst: torch.dtype) -> bool:
    """Whether an input of ``src`` is cast to the output dtype ``dst`` before the kernels: it is
    not a float the kernels load (integers, float8 with ``dtype=``), or the cast can round
    (float32 -> bfloat16, float16 <-> bfloat16)."""
    return src not in _LOADED or (src != dst and torch.promote_types(src, dst) != dst)


_FLOAT32 = torch.finfo(torch.float32)


def _fp32_scale_ok(dtype: torch.dtype, temperature: float) -> bool:
    # Triton passes a Python float to a kernel as float32: exact for temperature 1, but
    # 1 / temperature then carries float32 rounding, too coarse for float64 results. And a
    # reciprocal that is not a normal float32 (temperatures below about 2.9e-39 or above
    # 8.5e37) would be inf, so that 0 * inf is NaN, or subnormal, which a device may flush to
    # 0. Those divide by the temperature outside the kernels (``_divided``).
    if temperature == 1.0:
        return True
    return dtype != torch.float64 and _FLOAT32.tiny <= 1.0 / temperature <= _FLOAT32.max


def _divided(t: Tensor, temperature: float) -> Tensor:
    """``t / temperature`` in the kernels' arithmetic (float32, float64 for float64 ``t``),
    within an ulp of a true division (but for subnormal elements of ``t``).

    torch's CUDA kernels multiply by the reciprocal of a Python number (inf for 1e-39), and a
    float32 1e-39 is subnormal, 20 bits; so ``t`` is divided by ``temperature``'s mantissa in
    [1, 2) (a 0-d tensor: no overflow), then scaled by its power of two in steps float32
    holds, which is exact (beyond 2**300 either way every float32 quotient is already inf or
    0, beyond 2**2100 every float64 one). Temperature 1 divides nothing: ``t`` in that
    arithmetic.
    """
    acc = launcher.acc_dtype(t.dtype)
    if temperature == 1.0:
        return t.to(acc)
    mantissa, exponent = math.frexp(temperature)
    q = t.to(acc) / torch.full((), 2 * mantissa, dtype=acc, device=t.device)
    most = 2100 if acc == torch.float64 else 300
    shift = max(-most, min(most, 1 - exponent))
    while shift:
        step = max(-126, min(126, shift))
        q, shift = q * 2.0 ** step, shift - step
    return q


def _fallback_dtype(dtype: torch.dtype) -> torch.dtype:
    """The arithmetic of torch's softmax where it stands in for the kernels (``forward_into``,
    ``_backward``): float32 for 2-byte results, float64 for float32 and float64 ones. torch's
    float32 CPU softmax sums a row one term after another, so a long row's sum, and every
    result, moves by many float32 ulps (over dim 0 of a 16384x2 float32 tensor, up to 5e-5
    relative; the kernels' tolerance is 1e-5)."""
    return torch.float32 if dtype.itemsize < 4 else torch.float64


def _cast_scaled(x: Tensor, dtype: torch.dtype, temperature: float) -> Tensor:
    """``(x / temperature).to(dtype)``: the input of ``torch.softmax(x / temperature,
    dtype=dtype)`` where the cast can round (``_cast_first``). Divided in ``x``'s arithmetic
    first (``_divided``), so logits the division brings into ``dtype``'s range are not cast to
    inf on the way (float32 70000 at temperature 1000 into float16), and rounded once."""
    return x.to(dtype) if temperature == 1.0 else _divided(x, temperature).to(dtype)


def forward_into(x: Tensor, y: Tensor, dim: int, temperature: float, log: bool,
                 variant: Optional[str]) -> Optional[launcher.Launch]:
    """Write ``softmax(x / temperature)`` (``log_softmax`` with ``log``) along ``dim`` into ``y``.

    ``y`` has ``x``'s shape, any strides without internal overlap, and the output dtype; it may
    be ``x`` itself, or share its memory otherwise. ``x`` is cast to ``y.dtype`` first, as
    torch does for ``dtype=``.

    Returns the ``launcher.Launch`` when the kernels ran on ``x`` and ``y`` as given (tensors of
    the same signature may repeat it), None when the call needed a cast, a copy or torch.
    """
    if y.numel() == 0:
        return None
    if _cast_first(x.dtype, y.dtype):
        # The kernels only widen on load; a cast that can round is torch's, on the input
        # divided by the temperature, as torch.softmax(x / temperature, dtype=dtype) does.
        x, temperature = _cast_scaled(x, y.dtype, temperature), 1.0
        as_given = False
    else:
        as_given = True
    if not launcher.serves(x.device):
        # torch, in float32 (float64 for float32 and float64 output, ``_fallback_dtype``) and
        # rounded once to the output dtype, as the kernels do: ``/ temperature`` in a 2-byte
        # dtype rounds the scaled input (bfloat16 at temperature 0.7: 8.8% off on the CPU), and
        # torch's own 2-byte CPU softmax rounds on the way (bfloat16 over dim 1: two ulps). A
        # true division (``_divided``): torch would round 1e39 to a float32 inf, 3e-45 to 4e-45.
        fn = torch.log_softmax if log else torch.softmax
        # (Divided in the kernels' arithmetic, then widened: a float32 ``x / temperature``
        # past float32's range is inf, and the row NaN, as on a device and in torch.)
        y.copy_(fn(_divided(x.to(y.dtype), temperature).to(_fallback_dtype(y.dtype)), dim))
        return None
    if x.is_neg():
        # A view whose values are its memory negated (``z.conj().imag``): the kernels read
        # memory, so they read a copy of its values.
        x, as_given = x.resolve_neg(), False
    if not _fp32_scale_ok(y.dtype, temperature):
        x, temperature, as_given = _divided(x.to(y.dtype), temperature), 1.0, False
    xv, yv = _as_rows(x), _as_rows(y)
    layout = row_layout(xv.shape, dim, xv.stride(), yv.stride())
    if layout is None and xv.data_ptr() != yv.data_ptr():
        # More than two non-normalised dims that no stride pair describes (a permuted 4-d view,
        # say): copy the input. In place that would not help, so the output goes through a
        # contiguous buffer instead.
        xv, as_given = xv.contiguous(), False
        layout = row_layout(xv.shape, dim, xv.stride(), yv.stride())
    if layout is None or yv.is_neg() or checks.overlaps_apart(xv, yv):
        # Strides the kernels cannot address, an output whose values are its memory negated
        # (which the kernels would write as memory), or one that shares the input's memory
        # without being it (interleaved views, a shifted window: programs would write elements
        # that others have yet to read): through a buffer, copied in as values, so the output
        # is the softmax of the input as it was.
        tmp = torch.empty(yv.shape, dtype=yv.dtype, device=yv.device)
        forward_into(xv, tmp, dim, temperature, log, variant)
        yv.copy_(tmp)
        return None
    launch = launcher.launch_softmax(xv, yv, layout, variant, log=log, scale=1.0 / temperature)
    return launch if as_given else None


def run_forward(x: Tensor, dim: int, out_dtype: torch.dtype, temperature: float, log: bool,
                variant: Optional[str]) -> tuple[Tensor, Optional[launcher.Launch]]:
    """The forward op's body: check the target, allocate the output, run the kernels; return
    the output and, as ``forward_into``, the launch that wrote it."""
    checks.check_target(op_name(log), x, out_dtype)
    y = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    return y, forward_into(x, y, dim, temperature, log, variant)


def run_out(x: Tensor, out: Tensor, dim: int, temperature: float, log: bool,
            variant: Optional[str], key: Optional[tuple] = None) -> None:
    """The out= and in-place ops' body (``out`` may be ``x``). With ``key``, the call's
    ``eager.into_signature``, a launch that ran on ``x`` and ``out`` as given is kept under
    it."""
    checks.check_target(op_name(log), x, out.dtype)
    launch = forward_into(x, out, dim, temperature, log, variant)
    if key is not None:
        eager.remember_into(key, launch)


def backward(grad: Tensor, output: Tensor, dim: int, input_dtype: torch.dtype,
             temperature: float, log: bool, variant: Optional[str]) -> Tensor:
    """The gradient w.r.t. the forward's input, of dtype ``input_dtype`` (contiguous); a
    signature seen before repeats its kept launch (``eager``)."""
    if grad.is_neg():  # its values, not its memory (``forward_into``)
        grad = grad.resolve_neg()
    key = None
    if eager.plain(grad) and type(output) is Tensor:
        # The output's shape and device too: a launch kept for a pair of one shape, or on one
        # device, never runs on an output of another (``_backward`` refuses such a pair).
        key = eager.signature(grad, output.shape, output.stride(), output.dtype, output.device,
                              dim, input_dtype, temperature, log, variant)
        dx = eager.repeat(key, grad, output)
        if dx is not None:
            return dx
    dx, launch = _backward(grad, output, dim, input_dtype, temperature, log, variant)
    if key is not None:
        eager.remember(key, (grad, output), dx, launch)
    return dx


def _backward(grad: Tensor, output: Tensor, dim: int, input_dtype: torch.dtype,
              temperature: float, log: bool,
              variant: Optional[str]) -> tuple[Tensor, Optional[launcher.Launch]]:
    # backward()'s first call of a signature: the gradient, and the launch when it ran on
    # (grad, output, dx) as given.
    if grad.device != output.device:
        # As torch's own backward: the launch, planned and run on grad's device, would read
        # and write another device's memory.
        raise RuntimeError(f"{op_name(log)} backward: grad is on {grad.device} but the output "
                           f"is on {output.device}")
    checks.check_grad_shape(op_name(log), grad, output)
    if not launcher.serves(grad.device):
        # torch, in ``forward_into``'s fallback arithmetic and rounded once, as that does.
        fn = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        acc = _fallback_dtype(torch.promote_types(input_dtype, output.dtype))
        dx = fn(grad.to(acc), output.to(acc), dim, acc)
        return _divided(dx, temperature).to(input_dtype), None
    # y and dx share strides in the kernels; the forward's output is contiguous already.
    y = output.contiguous()
    exact = _fp32_scale_ok(y.dtype, temperature)
    # Where the temperature divides outside the kernels, they write float32 (float64) first.
    dx_dtype = input_dtype if exact else launcher.acc_dtype(input_dtype)
    dx = torch.empty(y.shape, dtype=dx_dtype, device=y.device)
    if dx.numel() == 0:
        return dx.to(input_dtype), None
    dyv, yv, dxv = _as_rows(grad), _as_rows(y), _as_rows(dx)
    layout = row_layout(yv.shape, dim, dyv.stride(), yv.stride())
    as_given = y is output
    if layout is None:
        dyv, as_given = dyv.contiguous(), False
        layout = row_layout(yv.shape, dim, dyv.stride(), yv.stride())
    launch = launcher.launch_softmax_backward(dyv, yv, dxv, layout, variant, log=log,
                                              scale=1.0 / temperature if exact else 1.0)
    if not exact:
        return _divided(dx, temperature).to(input_dtype), None
    return dx, launch if as_given else None


def eager_forward(key: tuple, x: Tensor, dim: int, out_dtype: torch.dtype, temperature: float,
                  log: bool, variant: Optional[str]) -> Tensor:
    """The forward of a checked eager call (``dim`` wrapped, ``temperature`` a float) without
    the op's dispatch: a repeat of the kept launch of signature ``key``, or the signature's
    first call, which is then kept. A negated view (``is_neg()``) never repeats a launch: its
    signature is that of the plain view of its memory, which the kernels would read."""
    y = None if x.is_neg() else eager.repeat(key, x)
    if y is None:
        y, launch = run_forward(x, dim, out_dtype, temperature, log, variant)
        eager.remember(key, (x,), y, launch, (dim, out_dtype, temperature, log, variant))
    return y


def differentiable_backward(grad: Tensor, output: Tensor, dim: int, input_dtype: torch.dtype,
                            temperature: float, log: bool, variant: Optional[str]) -> Tensor:
    """``backward``'s gradient from torch ops, for ``create_graph=True``: autograd records them,
    and differentiates ``output`` through its own node, so any order of derivative works.
    Arithmetic in float32 at least; ``variant`` is unused (no kernel runs)."""
    acc = torch.promote_types(torch.promote_types(grad.dtype, output.dtype), torch.float32)
    dy, y = grad.to(acc), output.to(acc)
    if log:
        dx = dy - y.exp() * dy.sum(dim, keepdim=True)
    else:
        dx = y * (dy - (dy * y).sum(dim, keepdim=True))
    return (dx / temperature).to(input_dtype)


def _save(ctx: torch.autograd.function.FunctionCtx, x: Tensor, y: Tensor, dim: int,
          temperature: float, log: bool, variant: Optional[str]) -> None:
    # What the gradient needs: the output, and the arguments of ``backward``.
    ctx.save_for_backward(y)
    ctx.args = (dim, x.dtype, temperature, log, variant)


def _dense(dy: Tensor) -> Tensor:
    # A sparse upstream gradient (torch's own softmax backward refuses one) as a dense tensor,
    # which the kernels can address.
    return dy if dy.layout == torch.strided else dy.to_dense()


def _gradient(ctx: torch.autograd.function.FunctionCtx, dy: Tensor) -> Tensor:
    # ``backward``'s kernels, or torch ops where autograd records the backward or tensors
    # without storage come in (a ``torch.func`` transform's, a batch of autograd's own vmap);
    # the backward op where its kernels must go through the dispatcher (under a dispatch
    # mode, or for a subclass of upstream gradient).
    (y,) = ctx.saved_tensors
    dy = _dense(dy)
    if torch.is_grad_enabled() or eager.storageless(dy) or eager.storageless(y):
        return differentiable_backward(dy, y, *ctx.args)
    if not eager.plain(dy):
        dim, input_dtype, temperature, log, variant = ctx.args
        op = log_softmax_backward if log else softmax_backward
        return op(dy, y, dim, input_dtype, temperature, variant)
    return backward(dy, y, *ctx.args)


class _EagerAutograd(torch.autograd.Function):
    """``eager_forward`` with its gradient from ``backward``'s kernels, or from
    ``differentiable_backward`` when autograd records the backward (``create_graph=True``).
    No ``setup_context``: with one, every ``apply`` binds its arguments through ``inspect``,
    tens of microseconds of host time per call."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, key: tuple, x: Tensor, dim: int,
                out_dtype: torch.dtype, temperature: float, log: bool,
                variant: Optional[str]) -> Tensor:
        y = eager_forward(key, x, dim, out_dtype, temperature, log, variant)
        _save(ctx, x, y, dim, temperature, log, variant)
        return y

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, dy: Tensor) -> tuple:
        return None, _gradient(ctx, dy), None, None, None, None, None


class _TransformAutograd(torch.autograd.Function):
    """The forward on ``torch.func`` transforms' tensors (and on dual tensors of
    ``torch.autograd.forward_ad``), with the rules the transforms call: ``vmap`` runs the
    kernels once on the whole batch, ``jvp`` gives the forward-mode derivative, the gradient
    is ``_EagerAutograd``'s (from torch ops: ``torch.func.grad`` records the backward). Its
    ``forward`` gets the tensor unwrapped, a kernels' tensor."""

    @staticmethod
    def forward(x: Tensor, dim: int, out_dtype: torch.dtype, temperature: float, log: bool,
                variant: Optional[str]) -> Tensor:
        return checked_forward(x, dim, out_dtype, temperature, log, variant)

    @staticmethod
    def setup_context(ctx: torch.autograd.function.FunctionCtx, inputs: tuple,
                      output: Tensor) -> None:
        x, dim, _, temperature, log, variant = inputs
        _save(ctx, x, output, dim, temperature, log, variant)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, dy: Tensor) -> tuple:
        return _gradient(ctx, dy), None, None, None, None, None

    @staticmethod
    def jvp(ctx: torch.autograd.function.FunctionCtx, x_t: Tensor, *_: None) -> Tensor:
        # d softmax = y * (t - sum(y * t)), d log_softmax = t - sum(exp(y) * t), with
        # t = x_t / temperature; in float32 at least, like the kernels.
        (y,) = ctx.saved_tensors
        dim, _, temperature, log, _ = ctx.args
        acc = torch.promote_types(y.dtype, torch.float32)
        t, p = x_t.to(acc) / temperature, y.to(acc)
        if log:
            return (t - (p.exp() * t).sum(dim, keepdim=True)).to(y.dtype)
        return (p * (t - (p * t).sum(dim, keepdim=True))).to(y.dtype)

    @staticmethod
    def vmap(info: object, in_dims: tuple, x: Tensor, dim: int, out_dtype: torch.dtype,
             temperature: float, log: bool, variant: Optional[str]) -> tuple[Tensor, int]:
        xb = x.movedim(in_dims[0], 0)
        return _batch_forward(xb, dim, out_dtype, temperature, log, variant), 0


def _batch_forward(xb: Tensor, dim: int, out_dtype: torch.dtype, temperature: float, log: bool,
                   variant: Optional[str]) -> Tensor:
    # A vmap batch as one tensor, its batch dim first: each sample's dim is one further on.
    # A sample of no dims is a row of one element.
    if xb.dim() == 1:
        return checked_forward(xb[:, None], 1, out_dtype, temperature, log, variant)[:, 0]
    return checked_forward(xb, dim + 1, out_dtype, temperature, log, variant)


def repeat_recorded(x: object, dim: object, dtype: object, temperature: object,
                    variant: object, log: bool) -> Optional[Tensor]:
    """The output of a public forward call that autograd records, when its signature is kept
    (``eager.recorded_forward``): ``_EagerAutograd`` on the arguments checked at the
    signature's first call, which a repeat need not check again. None otherwise; the caller
    then takes the full path."""
    found = eager.recorded_forward(x, dim, dtype, temperature, variant, log)
    if found is None:
        return None
    key, checked = found
    return _EagerAutograd.apply(key, x, *checked)


def checked_forward(x: Tensor, dim: int, out_dtype: torch.dtype, temperature: float, log: bool,
                    variant: Optional[str], key: Optional[tuple] = None) -> Tensor:
    """The forward of a checked call (``dim`` wrapped, ``temperature`` a float) on any tensor:
    a ``torch.func`` transform's through its rules, which unwrap it level by level (a batch
    of the innermost ``vmap`` level directly, ``batching``, and a ``functionalize`` tensor, for
    which functorch has no rule); a plain one's launch kept under
    ``key`` (the caller's signature of the call; None: that of a public call with these
    arguments, which means the same), under autograd when autograd records it; a subclass's,
    or a traced one's, through the custom op."""
    if eager.transformed(x):
        level = batching.innermost_level(x)
        if level is not None:
            return batching.run_batched(x, level, lambda xb: _batch_forward(
                xb, dim, out_dtype, temperature, log, variant))
        level = batching.functional_level(x)
        if level is not None:
            return batching.run_functional(x, level, lambda inner: checked_forward(
                inner, dim, out_dtype, temperature, log, variant))
        return _TransformAutograd.apply(x, dim, out_dtype, temperature, log, variant)
    if eager.dual(x):
        # Forward-mode AD (``torch.autograd.forward_ad``): the rule with a ``jvp``.
        return _TransformAutograd.apply(x, dim, out_dtype, temperature, log, variant)
    if not eager.plain(x):
        if isinstance(temperature, Tensor):
            op = log_softmax_t if log else softmax_t
        else:
            op = log_softmax if log else softmax
        return op(x, dim, out_dtype, temperature, variant)
    if key is None:
        key = eager.forward_signature(x, dim, out_dtype, temperature, variant, log)
    if eager.records_grad(x):
        return _EagerAutograd.apply(key, x, dim, out_dtype, temperature, log, variant)
    return eager_forward(key, x, dim, out_dtype, temperature, log, variant)


def traced_temperature(temperature: float) -> Union[float, Tensor]:
    """The temperature argument of the ops for a checked ``temperature``: itself, but where
    ``torch.compile`` traces it as a symbolic float (``torch._dynamo.config.specialize_float``
    off, its default, and the value changed since the first call) a 0-d float64 CPU tensor,
    which the ``temperature_tensor`` ops take. torch.compile turns the product into an input
    of the graph (``x / t`` the same way), where a float argument of an op would be guarded
    on and specialised, a graph per value up to its recompile limit."""
    if not torch.compiler.is_compiling():
        return temperature
    # symbolic_shapes (sympy: 0.4 s to import) is loaded wherever torch.compile traces. torch
    # 2.4 has no has_static_value (and specialises floats by default): the float stays.
    static = getattr(torch.fx.experimental.symbolic_shapes, "has_static_value", None)
    if static is None or static(temperature):
        return temperature
    return torch.ones((), dtype=torch.float64, device="cpu") * temperature


def into_op(log: bool, inplace: bool, temperature: Union[float, Tensor]) -> torch._ops.OpOverload:
    """The out= (``inplace``: in-place) op for a temperature from ``traced_temperature``."""
    if isinstance(temperature, Tensor):
        if inplace:
            return log_softmax_t_ if log else softmax_t_
        return log_softmax_out_t if log else softmax_out_t
    if inplace:
        return log_softmax_ if log else softmax_
    return log_softmax_out if log else softmax_out


def _op_dim(dim: int, ndim: int) -> int:
    """An op's ``dim`` wrapped to ``[0, ndim)``, or torch's IndexError. The public functions
    pass it wrapped; scripted code that calls the ops may not, and a negative dim would reach
    the kernels' addressing as it is (they wrote out of bounds)."""
    return dim if 0 <= dim < ndim else checks.wrap_dim(dim, ndim)


def _define(log: bool) -> tuple:
    """Define the forward, backward, out and in-place ops of softmax (``log``: log-softmax)."""
    base = "log_softmax" if log else "softmax"
    fn = op_name(log)

    # The ops' bodies keep their launches per call signature as eager calls do, so that a
    # compiled graph's repeat calls skip the planning too (host time). Under keys of their
    # own ("op"): an op trusts its caller's checks, so its kept launch must never serve a
    # public call, which checks more.
    def forward(x: Tensor, dim: int, dtype: Optional[torch.dtype] = None,
                temperature: float = 1.0, variant: Optional[str] = None) -> Tensor:
        dim, out_dtype = _op_dim(dim, x.dim()), dtype or x.dtype
        if type(x) is not Tensor:
            return run_forward(x, dim, out_dtype, temperature, log, variant)[0]
        key = (*eager.forward_signature(x, dim, out_dtype, temperature, variant, log), "op")
        return eager_forward(key, x, dim, out_dtype, temperature, log, variant)

    def forward_fake(x: Tensor, dim: int, dtype: Optional[torch.dtype] = None,
                     temperature: float = 1.0, variant: Optional[str] = None) -> Tensor:
        _op_dim(dim, x.dim())
        checks.check_target(fn, x, dtype or x.dtype)
        return x.new_empty(x.shape, dtype=dtype or x.dtype)

    def grad(grad: Tensor, output: Tensor, dim: int, input_dtype: torch.dtype,
             temperature: float = 1.0, variant: Optional[str] = None) -> Tensor:
        return backward(grad, output, _op_dim(dim, output.dim()), input_dtype, temperature,
                        log, variant)

    def grad_fake(grad: Tensor, output: Tensor, dim: int, input_dtype: torch.dtype,
                  temperature: float = 1.0, variant: Optional[str] = None) -> Tensor:
        _op_dim(dim, output.dim())
        checks.check_grad_shape(fn, grad, output)
        return output.new_empty(output.shape, dtype=input_dtype)

    def into(x: Tensor, out: Tensor, dim: int, temperature: float,
             variant: Optional[str]) -> None:
        dim = _op_dim(dim, x.dim())
        if eager.repeat_into(x, out, dim, None, temperature, variant, log, "op"):
            return
        # A signature's first call (a kept one's shapes and strides match). Called directly,
        # an op may get any out: the kernels would write past one of another shape, or race on
        # one whose elements overlap. (Any dtype: the output's.)
        checks.check_out(fn, x, out, out.dtype)
        plain = type(x) is Tensor and type(out) is Tensor
        key = eager.into_signature(x, out, dim, None, temperature, variant, log, "op") \
            if plain else None
        run_out(x, out, dim, temperature, log, variant, key)

    def out_op(x: Tensor, dim: int, temperature: float, variant: Optional[str],
               out: Tensor) -> None:
        into(x, out, dim, temperature, variant)

    def out_fake(x: Tensor, dim: int, temperature: float, variant: Optional[str],
                 out: Tensor) -> None:
        _op_dim(dim, x.dim())
        checks.check_out(fn, x, out, out.dtype)
        checks.check_target(fn, x, out.dtype)

    def inplace(x: Tensor, dim: int, temperature: float, variant: Optional[str]) -> None:
        into(x, x, dim, temperature, variant)

    def inplace_fake(x: Tensor, dim: int, temperature: float, variant: Optional[str]) -> None:
        _op_dim(dim, x.dim())
        checks.check_out(fn, x, x, x.dtype)  # as ``into`` checks x, its own out
        checks.check_target(fn, x, x.dtype)

    bwd_op = registry.define(
        f"{base}_backward", "(Tensor grad, Tensor output, SymInt dim, ScalarType input_dtype, "
        "float temperature=1., str? variant=None) -> Tensor", grad, grad_fake)
    o_op = registry.define(
        f"{base}_out", "(Tensor x, SymInt dim, float temperature, str? variant, "
        "Tensor(a4!) out) -> ()", out_op, out_fake, mutated=4)
    i_op = registry.define(
        f"{base}_", "(Tensor(a0!) x, SymInt dim, float temperature, str? variant) -> ()",
        inplace, inplace_fake, mutated=0)

    def autograd(fwd: Callable[[], torch._ops.OpOverload],
                 bwd: torch._ops.OpOverload) -> registry.GradFn:
        # The forward op ``fwd()`` where autograd records it; its gradient is ``bwd``'s.
        class OpAutograd(torch.autograd.Function):
            @staticmethod
            def forward(ctx: torch.autograd.function.FunctionCtx, below: torch.DispatchKeySet,
                        x: Tensor, dim: int, dtype: Optional[torch.dtype],
                        temperature: Union[float, Tensor], variant: Optional[str]) -> Tensor:
                y = registry.redispatch(fwd(), below, x, dim, dtype, temperature, variant)
                ctx.save_for_backward(y)
                ctx.args = (dim, x.dtype, temperature, variant)
                return y

            @staticmethod
            def backward(ctx: torch.autograd.function.FunctionCtx, dy: Tensor) -> tuple:
                (y,) = ctx.saved_tensors
                dim, x_dtype, temperature, variant = ctx.args
                return None, bwd(_dense(dy), y, dim, x_dtype, temperature, variant), *[None] * 4

        def grad_fn(below: torch.DispatchKeySet, x: Tensor, dim: int,
                    dtype: Optional[torch.dtype] = None,
                    temperature: Union[float, Tensor] = 1.0,
                    variant: Optional[str] = None) -> Tensor:
            return OpAutograd.apply(below, x, dim, dtype, temperature, variant)
        return grad_fn

    fwd_op = registry.define(
        base, "(Tensor x, SymInt dim, ScalarType? dtype=None, float temperature=1., "
        "str? variant=None) -> Tensor", forward, forward_fake, autograd(lambda: fwd_op, bwd_op))

    # The same ops with the temperature a 0-d CPU tensor (``temperature_tensor``): what a
    # compiled graph calls for a temperature that torch.compile made a symbolic float, which
    # stays an input of the graph where a float argument would be specialised (a graph per
    # value). Their bodies read it on the host (no device sync) and run the float ops' bodies;
    # the fake kernels, which never read the temperature, are the float ops' own.
    def host_read(body: Callable[..., object], at: int) -> Callable[..., object]:
        # ``body`` with its temperature, argument ``at``, read from the tensor.
        def read(*args: object) -> object:
            return body(*args[:at], args[at].item(), *args[at + 1:])
        return read

    # No CUDA graph may record them, since a replay would keep the value read at capture:
    # inductor's graph partitions (torch 2.11: on by default) run ops so tagged between the
    # graphs; without partitions their CPU input keeps the whole graph uncaptured.
    t_tags = (torch.Tag.cudagraph_unsafe,) if hasattr(torch.Tag, "cudagraph_unsafe") else ()
    t_schema = "Tensor temperature"
    bwd_t_op = registry.define(
        f"{base}_backward.temperature_tensor", "(Tensor grad, Tensor output, SymInt dim, "
        f"ScalarType input_dtype, {t_schema}, str? variant=None) -> Tensor", host_read(grad, 4),
        grad_fake, tags=t_tags)
    o_t_op = registry.define(
        f"{base}_out.temperature_tensor", f"(Tensor x, SymInt dim, {t_schema}, str? variant, "
        "Tensor(a4!) out) -> ()", host_read(out_op, 2), out_fake, mutated=4, tags=t_tags)
    i_t_op = registry.define(
        f"{base}_.temperature_tensor", f"(Tensor(a0!) x, SymInt dim, {t_schema}, "
        "str? variant) -> ()", host_read(inplace, 2), inplace_fake, mutated=0, tags=t_tags)
    fwd_t_op = registry.define(
        f"{base}.temperature_tensor", f"(Tensor x, SymInt dim, ScalarType? dtype, {t_schema}, "
        "str? variant=None) -> Tensor", host_read(forward, 3), forward_fake,
        autograd(lambda: fwd_t_op, bwd_t_op), tags=t_tags)
    return fwd_op, bwd_op, o_op, i_op, fwd_t_op, bwd_t_op, o_t_op, i_t_op


(softmax, softmax_backward, softmax_out, softmax_,
 softmax_t, softmax_backward_t, softmax_out_t, softmax_t_) = _define(log=False)
(log_softmax, log_softmax_backward, log_softmax_out, log_softmax_,
 log_softmax_t, log_softmax_backward_t, log_softmax_out_t, log_softmax_t_) = _define(log=True)
