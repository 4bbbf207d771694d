"""The test harness's interpreter skip (``_interpreter.py``) changes no result.

Each variant's forward and backward, with their ``@triton.jit`` helpers called inside row loops,
give bit-identical outputs with the skip and with upstream's patching, and (Triton 3.4+, whose
launches restore ``triton.language``) a launch leaves the language unpatched.
"""

from __future__ import annotations

import os
import warnings

import pytest
import torch
import triton.language as tl
from _interpreter import upstream_patching
from triton.runtime import interpreter

import npu_softmax

pytestmark = [pytest.mark.ascend_interp,
              pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                 reason="only interpreted runs skip the repeated patching")]


def _outputs(x: torch.Tensor, variant: str) -> list[torch.Tensor]:
    x = x.detach().requires_grad_()
    y = npu_softmax.softmax(x, -1, variant=variant)
    log_y = npu_softmax.log_softmax(x, -1, variant=variant)
    (grad,) = torch.autograd.grad((y * y.detach()).sum() + log_y.sum(), x)
    return [y.detach(), log_y.detach(), grad]


@pytest.mark.parametrize(("variant", "shape"), [("tile", (9, 300)), ("online", (3, 2500)),
                                                ("split", (2, 5000)), ("cols", (5, 70))])
def test_skip_changes_no_result(variant: str, shape: tuple[int, int]) -> None:
    assert getattr(interpreter._patch_lang, "skips_repeats", False), "conftest did not install it"
    x = torch.randn(shape, dtype=torch.float32) * 4
    skipped = _outputs(x, variant)
    with upstream_patching():
        upstream = _outputs(x, variant)
    for a, b in zip(skipped, upstream):
        assert not a.isnan().any()
        assert torch.equal(a, b)


@pytest.mark.skipif(not hasattr(interpreter, "_LangPatchScope"),
                    reason="this interpreter's patches stay after a launch")
def test_a_launch_leaves_the_language_unpatched() -> None:
    builtin = tl.exp
    npu_softmax.softmax(torch.randn(3, 2500), -1, variant="online")
    assert tl.exp is builtin and tl.core.is_builtin(tl.exp)


@pytest.mark.parametrize("variant", ["tile", "online", "split", "cols"])
def test_masked_lanes_warn_nothing(variant: str) -> None:
    """The interpreter evaluates masked-off lanes too (1/0, exp and log of -inf): a caller sees
    no numpy RuntimeWarning from them, nor from rows of -inf, in any variant's forward or
    backward (pyproject's filter, which hides them elsewhere in the suite, is overridden)."""
    x = torch.randn(5, 70 if variant == "cols" else 300) * 4
    x[1] = float("-inf")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        outputs = _outputs(x, variant)
    expected = torch.softmax(x.double(), -1)
    assert torch.allclose(outputs[0].double(), expected, atol=1e-6, equal_nan=True)
