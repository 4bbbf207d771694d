"""Calls under ``torch.func.vmap`` (and ``functionalize``), unwrapped with functorch's own
primitives.

``_TransformAutograd``'s ``vmap`` rule (``ops``) is correct, but torch's machinery around a
``torch.autograd.Function`` under a transform (argument binding, pytree walks, output
wrapping) costs 150-220 microseconds of host time per call (measured on an H100 host and on
the CPU, docs/pytorch.md), several times what the kernels run on a small batch. A call whose
tensor is batched at the innermost ``vmap`` level takes the direct way instead: the batch is
unwrapped, run below that level with its batch dim first, and its result wrapped back at the
level, which is what the rule's machinery does. Where torch lacks the primitives
(``available`` False), calls go through the rule.
"""

from typing import Callable, Optional

import torch

_functorch = torch._C._functorch
available = all(hasattr(_functorch, name) for name in (
    "is_batchedtensor", "maybe_get_level", "maybe_current_level", "_unwrap_batched",
    "_add_batch_dim", "pop_dynamic_layer_stack", "push_dynamic_layer_stack"))
functional_available = all(hasattr(_functorch, name) for name in (
    "is_functionaltensor", "maybe_get_level", "maybe_current_level", "_unwrap_functional_tensor",
    "_wrap_functional_tensor", "pop_dynamic_layer_stack", "push_dynamic_layer_stack"))


def innermost_level(x: torch.Tensor) -> Optional[int]:
    """The innermost ``vmap`` level if ``x`` is batched at it, else None."""
    if not available or not _functorch.is_batchedtensor(x):
        return None
    level = _functorch.maybe_get_level(x)
    return level if level == _functorch.maybe_current_level() else None


def functional_level(x: torch.Tensor) -> Optional[int]:
    """The innermost level if ``x`` is ``torch.func.functionalize``'s tensor at it, else None."""
    if not functional_available or not _functorch.is_functionaltensor(x):
        return None
    level = _functorch.maybe_get_level(x)
    return level if level == _functorch.maybe_current_level() else None


def run_functional(x: torch.Tensor, level: int,
                   fn: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """``fn`` on the tensor that ``functionalize``'s ``x`` wraps (its pending writes applied),
    run below ``level``; its result wrapped back there. functorch has no ``functionalize`` rule
    for a ``torch.autograd.Function`` (``NYI: Functionalize rule for custom_function_call``);
    a softmax neither writes nor views its input, so this is what ``functionalize`` does for
    such an op."""
    inner = _functorch._unwrap_functional_tensor(x, False)
    layer = _functorch.pop_dynamic_layer_stack()
    try:
        out = fn(inner)
    finally:
        _functorch.push_dynamic_layer_stack(layer)
    return _functorch._wrap_functional_tensor(out, level)


def run_batched(x: torch.Tensor, level: int,
                fn: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """``fn`` on ``x``'s whole batch at ``level`` (a tensor of one more dim, the batch dim
    first), run below the level; its result (batch dim first) as a tensor batched there."""
    inner, batch_dim = _functorch._unwrap_batched(x, level)
    layer = _functorch.pop_dynamic_layer_stack()
    try:
        out = fn(inner.movedim(batch_dim, 0))
    finally:
        _functorch.push_dynamic_layer_stack(layer)
    return _functorch._add_batch_dim(out, 0, level)
