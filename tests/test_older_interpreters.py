"""The kernels under the CPU interpreters of older upstream Tritons (3.6-3.8, which CUDA torch
2.10-2.12 wheels pin), stood in for here by removing what they lack from this Triton's
interpreter in a fresh process."""

from __future__ import annotations

from pathlib import Path

import pytest
import triton
from _ref import run_python

from npu_softmax import _requirements

ROOT = Path(__file__).resolve().parents[1]


def test_bfloat16_rows_without_bfloat16_constants() -> None:
    """Upstream Triton's interpreter before 3.9 has no bfloat16 constants (``get_bf16``); a
    bfloat16 softmax over rows of odd length (the windowed tile) still runs there and matches
    torch."""
    problem = _requirements.interpreter_numpy_problem(triton.__version__)
    if problem:
        pytest.skip(problem)  # this Triton's interpreter runs nothing beside this numpy
    done = run_python("""
        import warnings
        warnings.simplefilter("ignore", RuntimeWarning)
        import torch
        from triton.runtime.interpreter import InterpreterBuilder
        if hasattr(InterpreterBuilder, "get_bf16"):
            del InterpreterBuilder.get_bf16  # as in upstream Triton 3.2-3.8
        import npu_softmax
        x = (torch.randn(37, 781) * 4).bfloat16()
        for t in (1.0, 1.7):
            y = npu_softmax.softmax(x, -1, temperature=t)
            err = (y.double() - torch.softmax(x.double() / t, -1)).abs().max().item()
            assert err <= 8e-3, (t, err)
        print("ok")
    """, path=ROOT, env={"TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok"]
