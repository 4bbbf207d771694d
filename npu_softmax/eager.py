"""Repeat eager calls cheaply: the launch of each call signature, planned once and kept.

A call's signature is everything its launch depends on besides the data: the shapes, strides,
dtypes and device of its inputs, and its other arguments. The first call of a signature runs the
checks, the layout and the plan (``ops``) and keeps the ``launcher.Launch`` it made; a later call
with the same signature only allocates its output and starts the kernels, a few microseconds of
host time instead of tens. Forward and backward calls are both kept, and out= and in-place
calls keep their launch alone (``repeat_into``). A forward call that autograd records runs its
autograd function on the arguments checked at the signature's first call
(``recorded_forward``). ``torch.compile`` tracing, ``torch.jit.trace`` and tensor subclasses
never come here (``plain``), and a signature whose first call needed a copy or a cast of an
input is not kept.
"""

from __future__ import annotations

import torch
from torch.autograd import forward_ad

from .launcher import Launch

#: Signatures kept at most; past that the cache starts again (shapes that never repeat).
MAX_SIGNATURES = 4096


class _Call:
    """Allocate the output of a known signature and run its launch on ``(*inputs, output)``.

    A forward signature's call also keeps its checked arguments (``checked``: the wrapped
    ``dim``, output dtype, ``temperature`` as a float, ``log``, ``variant``), which a repeat
    that autograd records hands to the autograd function without checking them again."""

    __slots__ = ("shape", "dtype", "device", "like", "launch", "checked")

    def __init__(self, inputs: tuple[torch.Tensor, ...], out: torch.Tensor,
                 launch: Launch, checked: tuple | None = None) -> None:
        self.shape, self.dtype, self.device, self.launch = out.shape, out.dtype, out.device, launch
        self.checked = checked
        # The output is a new contiguous tensor. Where an input has its dtype and strides,
        # empty_like makes it with less argument parsing than empty (host time, again).
        self.like = next((i for i, t in enumerate(inputs)
                          if t.dtype == out.dtype and t.stride() == out.stride()), None)

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        if self.like is not None:
            out = torch.empty_like(inputs[self.like])
        else:
            out = torch.empty(self.shape, dtype=self.dtype, device=self.device)
        tensors = (*inputs, out)
        # The launch's direct start where it has one (one Python call less), else the launch.
        start = self.launch.start
        if start is None or not start(tensors):
            self.launch(*tensors)
        return out


#: Kept calls by signature: a ``_Call`` per forward or backward signature, the ``Launch`` itself
#: per out= or in-place signature (``into_signature``: keys of their own length).
_calls: dict[tuple, _Call | Launch] = {}
#: Whether any ``torch.autocast`` is on: its calls take the full path, which asks ``amp`` for
#: the output dtype (bound once: a repeat call checks it).
_any_autocast = torch._C._is_any_autocast_enabled
#: Whether ``torch.jit.trace`` records the calls of this thread (bound once, as above).
_jit_tracing = torch._C._is_tracing
#: Whether a tensor has storage the kernels can address: not a ``torch.func`` transform's
#: tensor, nor a batch of autograd's own vmap (``is_grads_batched``, ``jacobian(vectorize=
#: True)``), whose calls go through the custom op (its loop over the batch) or torch ops
#: (bound once, as above).
_has_storage = torch._C._has_storage
#: How many Python dispatch modes (``TorchDispatchMode``: ``make_fx``, ``FlopCounterMode``,
#: logging and debug modes) are on: they see only the dispatcher's ops, so calls under one go
#: through the custom op, which they then see (bound once, as above).
_dispatch_modes = torch._C._len_torch_dispatch_stack


def _has_data(t: torch.Tensor) -> bool:
    """Whether ``t``'s elements are in memory the kernels can read or write: it has storage
    (``_has_storage``) and is no efficient zero tensor (``_is_zerotensor()``: the gradient
    autograd hands ``torch.sgn``'s input, say), which has none; the custom op's dispatch makes
    one a tensor of zeros as input, and refuses one as ``out``, as torch's own ops do."""
    return _has_storage(t) and not t._is_zerotensor()


def plain(x: object) -> bool:
    """Whether a call on ``x`` may skip its custom op and run eagerly.

    The op's dispatch costs 6-15 µs of host time on the H100's host, as long as a small kernel
    runs; it is needed only for ``torch.compile``/export tracing, for ``torch.jit.trace`` (which
    records ops, never a Triton launch, and hands the planning code sizes as tensors) and for
    tensor subclasses (fake tensors), which still go through it, and under a Python dispatch
    mode, which sees only the dispatcher's ops; but for ``nn.Parameter``, a plain tensor marked
    as a module's, which runs eagerly (its calls then take the full path: the repeat paths
    below take ``torch.Tensor`` alone). Nor a tensor without data (``_has_data``).
    """
    return ((type(x) is torch.Tensor or type(x) is torch.nn.Parameter)
            and not torch.compiler.is_compiling() and not _jit_tracing()
            and not _dispatch_modes() and _has_data(x))


def dual(x: torch.Tensor) -> bool:
    """Whether ``x`` carries a tangent of ``torch.autograd.forward_ad``'s current level (calls
    on it take the rule with a ``jvp``, ``ops._TransformAutograd``)."""
    return (forward_ad._current_level >= 0
            and forward_ad.unpack_dual(x).tangent is not None)


def transformed(x: torch.Tensor) -> bool:
    """Whether ``x`` is a ``torch.func`` transform's tensor (``vmap``'s batched tensor,
    ``grad``'s or ``jvp``'s wrapper): it has no storage for the kernels to read, so calls on it
    go through ``ops.checked_forward``, whose transform rules unwrap it. False while
    ``torch.compile`` traces (its tensors go through the custom ops)."""
    return (not torch.compiler.is_compiling()
            and torch._C._functorch.is_functorch_wrapped_tensor(x))


def storageless(x: torch.Tensor) -> bool:
    """Whether ``x`` has no storage for the kernels (a transform's tensor, a batch of
    autograd's own vmap)."""
    return not _has_storage(x)


def records_grad(x: torch.Tensor) -> bool:
    """Whether autograd records a call on ``x``."""
    return x.requires_grad and torch.is_grad_enabled()


def signature(x: torch.Tensor, *args: object) -> tuple:
    """The key of a call whose first input is ``x`` (a plain tensor), with the other arguments
    ``args`` (hashable: other tensors enter by their strides and dtypes).

    Each argument's type is part of the key, so ``True`` never passes for ``1``: a call whose
    arguments would fail a check never matches a signature that passed.
    """
    return (x.shape, x.stride(), x.dtype, x.device, *args, *map(type, args))


def forward_signature(x: torch.Tensor, dim: object, dtype: object, temperature: object,
                      variant: object, log: bool) -> tuple:
    """``signature`` of a call of the public forward functions, spelt out: only ``dim`` and
    ``temperature`` can equal a valid value while failing a check (``True`` for ``1``), so only
    their types are added. The layout too: a sparse COO tensor reports strides of 0, those of
    an expanded dense one."""
    return (x.shape, x.stride(), x.dtype, x.device, x.layout, dim, type(dim), dtype,
            temperature, type(temperature), variant, log)


def repeat_forward(x: object, dim: object, dtype: object, temperature: object, variant: object,
                   log: bool) -> torch.Tensor | None:
    """The output of a public forward call when its ``forward_signature`` is kept and the call
    may skip the checks: ``x`` is a plain tensor that autograd does not record, no
    ``torch.func`` transform wraps, and no autocast may change the output dtype (``plain``,
    ``records_grad`` and ``transformed`` spelt out inline, as this runs before every repeat
    call). None otherwise; the caller then takes the full path."""
    if (type(x) is not torch.Tensor or (x.requires_grad and torch.is_grad_enabled())
            or torch.compiler.is_compiling() or _any_autocast() or _jit_tracing()
            or _dispatch_modes() or not _has_data(x) or x.is_neg()
            or forward_ad._current_level >= 0):
        return None
    try:
        call = _calls.get(forward_signature(x, dim, dtype, temperature, variant, log))
    except (TypeError, RuntimeError):
        # An argument that cannot be hashed, or a tensor without sizes or strides (nested,
        # sparse CSR): the checks will report it.
        return None
    return None if call is None else call(x)


def recorded_forward(x: object, dim: object, dtype: object, temperature: object,
                     variant: object, log: bool) -> tuple[tuple, tuple] | None:
    """The ``forward_signature`` and kept checked arguments of a public forward call that
    autograd records (``x`` a plain tensor that requires grad, grad mode on; no tracing, no
    autocast, no ``torch.func`` transform), when the signature is kept; None otherwise."""
    if (type(x) is not torch.Tensor or not (x.requires_grad and torch.is_grad_enabled())
            or torch.compiler.is_compiling() or _any_autocast() or _jit_tracing()
            or _dispatch_modes() or not _has_data(x) or x.is_neg()
            or forward_ad._current_level >= 0):
        return None
    try:
        key = forward_signature(x, dim, dtype, temperature, variant, log)
        call = _calls.get(key)
    except (TypeError, RuntimeError):
        return None
    if type(call) is not _Call or call.checked is None:
        return None
    return key, call.checked


def into_signature(x: torch.Tensor, out: torch.Tensor, dim: object, dtype: object,
                   temperature: object, variant: object, log: bool, tag: str = "into") -> tuple:
    """The key of a public out= or in-place call (``out`` is ``x`` in place):
    ``forward_signature`` with ``out``'s shape, strides, dtype, device and layout, and whether
    ``out`` is ``x``. ``tag`` keeps callers that check other things apart (the custom ops'
    bodies, which trust their caller's checks, use their own)."""
    return (*forward_signature(x, dim, dtype, temperature, variant, log), out.shape,
            out.stride(), out.dtype, out.device, out.layout, out is x, tag)


def repeat_into(x: object, out: object, dim: object, dtype: object, temperature: object,
                variant: object, log: bool, tag: str = "into") -> bool:
    """Run the kept launch of a public out= or in-place call, bump ``out``'s version (as
    torch's in-place ops do, so autograd refuses a gradient that saved its old contents) and
    return True when its ``into_signature`` (with ``tag``) is kept and the call may skip the
    checks: plain tensors that autograd does not record, no ``torch.func`` transform or
    forward-mode AD, no tracing, no negated views, an ``out`` that may be written here (not an
    inference tensor outside inference mode), and ``out`` either ``x`` itself or in other
    memory (two views of one storage take the full path, which puts the result through a
    buffer where they overlap). False otherwise; the caller then takes the full path."""
    if (type(x) is not torch.Tensor or type(out) is not torch.Tensor
            or (torch.is_grad_enabled() and (x.requires_grad or out.requires_grad))
            or torch.compiler.is_compiling() or _jit_tracing() or _dispatch_modes()
            or not _has_data(x) or not _has_data(out)
            or x.is_neg() or out.is_neg() or forward_ad._current_level >= 0
            or (out.is_inference() and not torch.is_inference_mode_enabled())):
        return False
    try:
        launch = _calls.get(into_signature(x, out, dim, dtype, temperature, variant, log, tag))
    except (TypeError, RuntimeError):
        return False
    # Storages are read only for a kept signature: dense tensors on a served device.
    if launch is None or (out is not x and x.untyped_storage().data_ptr()
                          == out.untyped_storage().data_ptr()):
        return False
    launch(x, out)
    torch.autograd.graph.increment_version(out)
    return True


def remember_into(key: tuple, launch: Launch | None) -> None:
    """Keep the ``launch`` of an out= or in-place call for its ``into_signature`` ``key``;
    nothing when the call could not launch on its tensors as given (``launch`` None)."""
    if launch is not None:
        _keep(key, launch)


def repeat(key: tuple, *inputs: torch.Tensor) -> torch.Tensor | None:
    """The output of a call of a kept signature, or None when ``key`` is not kept (or holds an
    argument that cannot be hashed, which the checks will then report)."""
    try:
        call = _calls.get(key)
    except TypeError:
        return None
    return None if call is None else call(*inputs)


def remember(key: tuple, inputs: tuple[torch.Tensor, ...], out: torch.Tensor,
             launch: Launch | None, checked: tuple | None = None) -> None:
    """Keep the ``launch`` that wrote ``out`` (a new contiguous tensor) from ``inputs`` for
    signature ``key``, with a forward's ``checked`` arguments; nothing when the first call
    could not launch on its tensors as given (``launch`` None)."""
    if launch is not None:
        _keep(key, _Call(inputs, out, launch, checked))


def _keep(key: tuple, kept: _Call | Launch) -> None:
    # A key that cannot be hashed (a ``dim`` that is an integer through ``__index__`` alone: a
    # 0-d numpy array, say) is never looked up either (``repeat_forward``): not kept.
    try:
        hash(key)
    except TypeError:
        return
    # At most MAX_SIGNATURES kept; past that the cache starts again.
    if len(_calls) >= MAX_SIGNATURES:
        _calls.clear()
    _calls[key] = kept
