"""The Ascend compile check (``scripts/compile_ascend.py``) on a few plans, where it can run.

Needs triton-ascend (installed as ``triton``), the ascendnpu-ir wheel and ``TRITON_INTERPRET=0``
(conftest.py turns the interpreter on where no device is); skipped otherwise. The full sweep over
every plan is ``python scripts/compile_ascend.py`` (``.ci/ascend`` runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("ascendnpuir", reason="needs the ascendnpu-ir wheel (bishengir-compile)")
backends = pytest.importorskip("triton.backends").backends
if "ascend" not in backends:
    pytest.skip("needs triton-ascend (the installed triton has no ascend backend)",
                allow_module_level=True)

from npu_softmax import _compat, launcher  # noqa: E402
from npu_softmax.backends import AscendBackend  # noqa: E402

if _compat.interpreter_enabled():
    # conftest.py turns the interpreter on where no device is; compiling needs the real JIT.
    pytest.skip("compiles kernels: run with TRITON_INTERPRET=0", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import compile_ascend  # noqa: E402


def _largest(target: compile_ascend.Target, variant: str) -> launcher.Plan:
    """The plan of ``variant`` with the most elements per block for inner-dim rows: the
    tightest UB fit."""
    plans = launcher.reachable_plans(AscendBackend(target.arch), 2, target.vector_cores,
                                     compile_ascend.ascend_cpu.INNER)
    return max((p for p in plans if p.variant == variant),
               key=lambda p: (p.block_m * p.block_n, p.n_splits, p.index_64))


@pytest.mark.parametrize("target", ["A2", "A5"])
@pytest.mark.parametrize("variant", ["tile", "online", "split"])
def test_largest_plan_compiles_and_fits(target: str, variant: str,
                                        tmp_path: pytest.TempPathFactory) -> None:
    t = compile_ascend.TARGETS[target]
    p = _largest(t, variant)
    for fn in compile_ascend.kernels_of(p):
        row, _ = compile_ascend.compile_one(t, "bf16", p, "inner", fn.__name__, str(tmp_path))
        assert row.stage == compile_ascend.REACHABLE, row.error
        assert row.ok, f"{row.ub_used} B of UB planned, launcher assumes {row.ub_budget}: " \
                       f"{row.error}"
