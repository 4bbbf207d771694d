"""Float64 references and tolerances for every test file, in one place.

Probabilities (softmax outputs, in [0, 1]) are compared with ``assert_softmax_close``: a correct
kernel computes in float32 (float64 for float64 output) and rounds once to the output dtype, so
its error is about half an ulp of that dtype plus a few float32 ulps (GPU ``exp``
approximations, reduction order); ``atol`` only covers the subnormal range. bfloat16's ``rtol``
is half an ulp (``2**-8``) with little to spare, so an output truncated instead of rounded to
nearest (up to a whole ulp off) fails.

Log-probabilities and gradients are compared with ``assert_close``, whose absolute term covers
cancellation (``dy - sum(dy * y)``, ``x - max - log(sum)``).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

#: (rtol, atol) of a probability rounded to each dtype, against float64.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-5, 1e-7),
    torch.float16: (1e-3, 1e-7),
    torch.bfloat16: (4.5e-3, 1e-7),
    torch.float64: (1e-10, 1e-14),
}

def compile_backend(device: str) -> str:
    """The ``torch.compile`` backend the tests use on ``device``: inductor, but ``aot_eager``
    on an NPU, where inductor's code for the ops around npu_softmax is torch_npu's backend,
    which this suite does not test (``aot_eager`` still traces the custom ops through their
    fake kernels and autograd, as inductor does)."""
    return "aot_eager" if device == "npu" else "inductor"


#: Why a test skips running maxima per lane (``Backend.stat_lanes``) on an NPU: Ascend never
#: plans them, and float32 lanes of its 8192-element chunks overflow the unified buffer at
#: compile time.
LANES_ON_ASCEND = "running maxima per lane are a CUDA plan; on Ascend they overflow the UB"

#: (atol, rtol) of a log-probability or gradient of each dtype, against float64.
TOL = {
    torch.float64: (1e-10, 1e-10),
    torch.float32: (2e-6, 1e-5),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1.6e-2),
}
DTYPES = list(TOL)
#: None (the launcher's choice) and every variant.
VARIANTS = [None, "tile", "online", "split", "cols"]


_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def reference(x: torch.Tensor, dim: int, log: bool = False, temperature: float = 1.0,
              dtype: torch.dtype | None = None) -> torch.Tensor:
    """torch's (log-)softmax of ``x / temperature`` with ``dtype=dtype``, in float64 on the
    CPU: ``x / temperature`` cast to ``dtype`` first where that cast can round (integers,
    float8, a narrower float, float16 <-> bfloat16), as ``torch.softmax(x / temperature, dim,
    dtype=dtype)`` does; a widening ``dtype`` changes no value."""
    x = x.detach().cpu()
    if dtype is not None and (x.dtype not in _FLOATS or torch.promote_types(x.dtype, dtype)
                              != dtype):
        x64 = (x.double() / temperature).to(dtype).double()
    else:
        x64 = x.double() / temperature
    return torch.log_softmax(x64, dim) if log else torch.softmax(x64, dim)


def reference_grad(torch_fn, x: torch.Tensor, dy: torch.Tensor, dim: int,  # noqa: ANN001
                   temperature: float = 1.0) -> torch.Tensor:
    """The gradient of ``torch_fn(x / temperature, dim)`` (``torch.softmax`` or
    ``torch.log_softmax``) for the upstream gradient ``dy``, in float64 on the CPU."""
    x64 = x.detach().cpu().double().requires_grad_()
    torch_fn(x64 / temperature, dim).backward(dy.detach().cpu().double())
    return x64.grad


def assert_softmax_close(y: torch.Tensor, ref: torch.Tensor, msg: str = "",
                         scale: float = 1.0) -> None:
    """Probabilities ``y`` match the float64 ``ref`` within ``y.dtype``'s tolerance (``scale``
    widens the relative part); NaN and inf exactly where ``ref`` has them (so an element left
    unwritten in a NaN-poisoned output fails)."""
    rtol, atol = TOLERANCES[y.dtype]
    torch.testing.assert_close(y.detach().cpu().double(), ref.cpu().double(), rtol=rtol * scale,
                               atol=atol, equal_nan=True,
                               msg=(lambda m: f"{m}\n{msg}") if msg else None)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype,
                 scale: float = 1.0) -> None:
    """``actual`` within ``dtype``'s log-probability/gradient tolerance of ``expected``
    (``scale`` widens it)."""
    atol, rtol = TOL[dtype]
    torch.testing.assert_close(actual.detach().cpu().double(), expected.cpu().double(),
                               atol=atol * scale, rtol=rtol * scale, equal_nan=True)


def autocast_or_skip(device: str, fast_dtype: torch.dtype) -> torch.autocast:
    """``torch.autocast(device, dtype=fast_dtype)``, or a skip of the calling test where
    autocast does not know the device type or does not take that dtype there."""
    try:
        ctx = torch.autocast(device, dtype=fast_dtype)
    except RuntimeError:
        pytest.skip(f"no autocast for {device}")
    with ctx:
        if not torch.is_autocast_enabled(device):
            pytest.skip(f"no {fast_dtype} autocast on {device}")
    return ctx


def check_tile_refusal(error: ValueError, n_cols: int) -> None:
    """Re-raise ``error`` unless it is ``launcher.plan``'s refusal of a forced ``tile`` for rows
    of ``n_cols``, longer than the one block the target holds, on an NPU. Tests force ``tile``
    on rows of up to 20001 elements, which CUDA's and the interpreter's 32768-element tiles
    hold; the NPU's unified-buffer tiles are shorter (docs/tuning.md), so there the test checks
    the refusal instead."""
    from npu_softmax import launcher

    found = re.search(r"variant='tile' holds a row in one block of at most (\d+) elements",
                      str(error))
    if found is None or launcher.target().backend != "npu":
        raise error
    assert n_cols > int(found.group(1)), error


def contiguous_strides(shape: list[int]) -> list[int]:
    """The strides, in elements, of a contiguous tensor of ``shape`` (no tensor allocated)."""
    return [math.prod(shape[d + 1:]) for d in range(len(shape))]


def run_python(code: str, *, path: Path | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter, with ``path`` first on sys.path."""
    full_env = {**os.environ, **(env or {})}
    if path is not None:
        full_env["PYTHONPATH"] = os.pathsep.join([str(path), full_env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                          capture_output=True, text=True, timeout=300)
