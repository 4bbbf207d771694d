"""The package's ops on torch's dispatcher, defined with ``torch.library.Library``.

``torch.library.custom_op`` would define the same ops with more Python around every call: an
argument bundle through a generated ``autograd.Function``, a wrapper that turns TorchDynamo
off, an aliasing check of the result. A compiled graph calls the ops through all of it: on the
H100's host a compiled graph of one softmax took 61-67 µs a call that way and 50-51 µs defined
here (docs/tuning.md, "Host cost of compiled graphs"). Here a call runs:

1. the ``Autograd`` kernel: where grad mode is on and a tensor argument requires grad, the op's
   ``autograd.Function`` (``define``'s ``grad_fn``); otherwise straight on, below autograd;
2. for an op that writes a tensor argument, the ``ADInplaceOrView`` kernel: it bumps that
   tensor's version counter, so autograd refuses a gradient that saved its old contents;
3. the implementation (``CompositeExplicitAutograd``: every device) or, for meta and fake
   tensors (``torch.compile``, ``torch.export``), the fake kernel (shapes and dtypes only).
"""

from __future__ import annotations

from typing import Callable

import torch

from . import checks

_LIB = torch.library.Library("npu_softmax", "DEF")
_BELOW_AUTOGRAD = torch._C._after_autograd_keyset
_BELOW_INPLACE_OR_VIEW = torch._C._after_ADInplaceOrView_keyset

#: ``grad_fn`` of an op: called as ``grad_fn(below, *args)`` with the dispatch keys below
#: autograd, it returns the op's result with autograd's history.
GradFn = Callable[..., object]


def define(name: str, schema: str, impl: Callable, fake: Callable,
           grad_fn: GradFn | None = None, mutated: int | None = None,
           tags: tuple[torch.Tag, ...] = ()) -> torch._ops.OpOverload:
    """Define ``npu_softmax::{name}{schema}`` and return its overload (``name`` may name one,
    ``"softmax.temperature_tensor"``; else the default).

    ``impl`` and ``fake`` take the schema's arguments. ``grad_fn`` runs the op where autograd
    records it; without one, an op that writes no argument still runs there and its result
    refuses a backward (a gradient's op, say, under ``create_graph=True``), and an op that
    writes argument ``mutated`` refuses to run, as torch's out= functions do. ``tags``: more
    than ``pt2_compliant_tag``.
    """
    _LIB.define(name + schema, tags=(torch.Tag.pt2_compliant_tag, *tags))
    base, _, overload = name.partition(".")
    op = getattr(getattr(torch.ops.npu_softmax, base), overload or "default")
    _LIB.impl(name, impl, "CompositeExplicitAutograd")
    torch.library.register_fake(op, fake, lib=_LIB)
    if grad_fn is None:
        grad_fn = _no_derivative(op) if mutated is None else _refuse_grad(op)
    _LIB.impl(name, _autograd_kernel(op, grad_fn), "Autograd", with_keyset=True)
    if mutated is not None:
        _LIB.impl(name, _version_bump(op, mutated), "ADInplaceOrView", with_keyset=True)
    return op


def redispatch(op: torch._ops.OpOverload, below: torch.DispatchKeySet, *args: object) -> object:
    """``op`` on the dispatch keys ``below`` autograd (inside a ``grad_fn``'s ``forward``)."""
    with torch._C._AutoDispatchBelowAutograd():
        return op.redispatch(below, *args)


def _any_requires_grad(*args: object) -> bool:
    return any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)


#: torch's own test where it has one (a C function, the cheaper per call).
_requires_grad = getattr(torch._C, "_any_requires_grad", _any_requires_grad)


def _autograd_kernel(op: torch._ops.OpOverload, grad_fn: GradFn) -> Callable:
    def kernel(keyset: torch.DispatchKeySet, *args: object) -> object:
        below = keyset & _BELOW_AUTOGRAD
        if torch.is_grad_enabled() and _requires_grad(*args):
            return grad_fn(below, *args)
        # No tensor here records autograd: on below it, with no context to enter.
        return op.redispatch(below, *args)
    return kernel


def _no_derivative(op: torch._ops.OpOverload) -> GradFn:
    class NoDerivative(torch.autograd.Function):
        @staticmethod
        def forward(ctx: torch.autograd.function.FunctionCtx,
                    below: torch.DispatchKeySet, *args: object) -> object:
            return redispatch(op, below, *args)

        @staticmethod
        def backward(ctx: torch.autograd.function.FunctionCtx, *grads: object) -> tuple:
            raise RuntimeError(f"{op}: no derivative of this op (the public functions' eager "
                               "calls have one, under create_graph=True)")

    return NoDerivative.apply


def _refuse_grad(op: torch._ops.OpOverload) -> GradFn:
    def refuse(below: torch.DispatchKeySet, *args: object) -> None:
        raise RuntimeError(checks.no_grad_into_message(str(op)))
    return refuse


def _version_bump(op: torch._ops.OpOverload, mutated: int) -> Callable:
    def kernel(keyset: torch.DispatchKeySet, *args: object) -> object:
        torch.autograd.graph.increment_version(args[mutated])
        with torch._C._AutoDispatchBelowADInplaceOrView():
            return op.redispatch(keyset & _BELOW_INPLACE_OR_VIEW, *args)
    return kernel
