"""``nn.Module`` wrappers, drop-in for ``torch.nn.Softmax`` / ``torch.nn.LogSoftmax``."""

from __future__ import annotations

import torch

from . import api


class Softmax(torch.nn.Module):
    """``npu_softmax.softmax(x, dim, temperature=temperature)`` as a module.

    Input: any shape; output: the same shape and dtype, contiguous.
    """

    def __init__(self, dim: int = -1, temperature: float | None = None) -> None:
        super().__init__()
        self.dim = dim
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return api.softmax(x, self.dim, temperature=self.temperature)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, temperature={self.temperature}"


class LogSoftmax(Softmax):
    """``npu_softmax.log_softmax(x, dim, temperature=temperature)`` as a module."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return api.log_softmax(x, self.dim, temperature=self.temperature)
