"""``nn.Module`` wrappers, drop-in for ``torch.nn.Softmax`` / ``torch.nn.LogSoftmax``."""

from __future__ import annotations

import warnings

import torch

from . import api


def _implicit_dim(name: str, ndim: int) -> int:
    """The dim ``torch.nn.Softmax(dim=None)`` normalises over for an input of ``ndim`` dims:
    torch's deprecated legacy rule (0 for 0-, 1- and 3-d inputs, else 1), with a warning
    (but where ``torch.compile`` traces, which cannot trace ``warnings.warn``)."""
    if not torch.compiler.is_compiling():
        warnings.warn(f"npu_softmax.{name}(dim=None) picks dim by torch's deprecated legacy "
                      "rule; pass dim explicitly", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _by_legacy_rule(x: torch.Tensor, log: bool, temperature: float | None) -> torch.Tensor:
    """A module's call with ``dim=None``: the dim by torch's legacy rule for ``x``'s rank.

    A function of its own, which ``torch.fx.wrap`` records as one node under
    ``torch.fx.symbolic_trace`` (as the public functions record themselves, ``api._fx_node``):
    there ``x`` is a ``Proxy``, whose rank is known only when the graph runs.
    """
    name = "LogSoftmax" if log else "Softmax"
    fn = api.log_softmax if log else api.softmax
    return fn(x, _implicit_dim(name, x.dim()), temperature=temperature)


torch.fx.wrap("_by_legacy_rule")


class Softmax(torch.nn.Module):
    """``npu_softmax.softmax(input, dim, temperature=temperature)`` as a module.

    Input: any shape; output: the same shape and dtype (inside ``torch.autocast``, the dtype
    torch's softmax returns there), contiguous. ``dim=None`` (what a ``torch.nn.Softmax()``
    built without a dim holds, e.g. when its ``dim`` is copied over in a module swap) picks the
    dim as that module does, with a warning.
    """

    def __init__(self, dim: int | None = -1, temperature: float | None = None) -> None:
        super().__init__()
        self.dim = dim
        self.temperature = temperature

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.dim is None:
            return _by_legacy_rule(input, False, self.temperature)
        return api.softmax(input, self.dim, temperature=self.temperature)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, temperature={self.temperature}"


class LogSoftmax(Softmax):
    """``npu_softmax.log_softmax(input, dim, temperature=temperature)`` as a module."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.dim is None:
            return _by_legacy_rule(input, True, self.temperature)
        return api.log_softmax(input, self.dim, temperature=self.temperature)
