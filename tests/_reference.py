"""Shared by the tests: the float64 reference and per-dtype tolerances."""

from __future__ import annotations

import torch

#: (rtol, atol) for a result of this dtype against a float64 reference: a few units of the
#: dtype's rounding, plus an atol for probabilities near its subnormal range.
TOLERANCES = {
    torch.float64: (1e-12, 1e-15),
    torch.float32: (1e-5, 1e-7),
    torch.float16: (2e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
}


def reference(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``torch.softmax`` in float64 on the CPU, of ``x`` first cast to ``dtype`` as torch does."""
    if dtype is not None:
        x = x.to(dtype)
    return torch.softmax(x.detach().cpu().double(), dim)


def assert_matches(y: torch.Tensor, ref: torch.Tensor) -> None:
    """``y`` equals the float64 ``ref`` within ``y.dtype``'s tolerance; NaN exactly where ref has
    NaN (so an element left unwritten in a NaN-poisoned output fails)."""
    rtol, atol = TOLERANCES[y.dtype]
    torch.testing.assert_close(y.detach().cpu().double(), ref, rtol=rtol, atol=atol,
                               equal_nan=True)
