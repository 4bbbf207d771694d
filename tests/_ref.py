"""Float64 references and tolerances shared by the drop-in tests."""

from __future__ import annotations

import torch

#: Absolute/relative tolerance of a result rounded to each dtype, against a float64 reference.
TOL = {
    torch.float64: (1e-10, 1e-10),
    torch.float32: (2e-6, 1e-5),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1.6e-2),
}
DTYPES = list(TOL)
VARIANTS = [None, "tile", "online", "split"]


def reference(x: torch.Tensor, dim: int, log: bool, temperature: float = 1.0,
              dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch's (log-)softmax of ``x / temperature`` in float64, after the cast to ``dtype``."""
    x64 = x.to(dtype or x.dtype).double().cpu() / temperature
    return torch.log_softmax(x64, dim) if log else torch.softmax(x64, dim)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype,
                 scale: float = 1.0) -> None:
    """``actual`` within ``dtype``'s tolerance of ``expected`` (``scale`` widens it)."""
    atol, rtol = TOL[dtype]
    torch.testing.assert_close(actual.cpu().double(), expected.cpu().double(), atol=atol * scale,
                               rtol=rtol * scale, equal_nan=True)
