"""Tolerances for comparing a softmax output with a float64 reference, in one place.

Softmax values lie in [0, 1]. A correct kernel computes in float32 (float64 for float64 output)
and rounds once to the output dtype, so its error is at most half an ulp of the output dtype
plus a few float32 ulps (GPU ``exp`` approximations, reduction order). ``rtol`` bounds that
relative to the reference value; ``atol`` only covers results in the output dtype's subnormal
range (and float32 results flushed to zero), where a relative bound cannot hold.
"""

from __future__ import annotations

import torch

#: (rtol, atol) per output dtype.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    # half an ulp is 2**-24 ~ 6e-8 relative; GPU exp.approx adds ~1e-6 for |x - max| of tens.
    torch.float32: (1e-5, 1e-7),
    # half an ulp is 2**-11 ~ 4.9e-4; subnormals are 2**-24 ~ 6e-8 apart.
    torch.float16: (1e-3, 1e-7),
    # half an ulp is 2**-8 ~ 3.9e-3; bfloat16 keeps float32's exponent range.
    torch.bfloat16: (8e-3, 1e-7),
    # float64 arithmetic: error grows with the row length (summation), far below this.
    torch.float64: (1e-10, 1e-14),
}


def assert_softmax_close(y: torch.Tensor, ref: torch.Tensor, msg: str = "") -> None:
    """Assert ``y`` (output dtype) matches the float64 ``ref`` within ``y.dtype``'s tolerance.

    NaNs must sit exactly where the reference has them (``equal_nan``), and so must infinities.
    """
    rtol, atol = TOLERANCES[y.dtype]
    torch.testing.assert_close(y.cpu().double(), ref.cpu().double(), rtol=rtol, atol=atol,
                               equal_nan=True, msg=lambda m: f"{m}\n{msg}" if msg else m)


def reference(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``torch.softmax(x, dim, dtype=dtype)`` computed in float64 on the CPU.

    torch casts the input to ``dtype`` first, so the reference does too before widening.
    """
    x = x.detach().cpu()
    if dtype is not None:
        x = x.to(dtype)
    return torch.softmax(x.double(), dim)
