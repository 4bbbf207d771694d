"""The Ascend compile check (``scripts/compile_ascend.py``) on a few plans, where it can run.

Needs triton-ascend (installed as ``triton``), the ascendnpu-ir wheel and ``TRITON_INTERPRET=0``
(conftest.py turns the interpreter on where no device is); skipped otherwise. The full sweep over
every plan is ``python scripts/compile_ascend.py`` (``.ci/ascend`` runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("ascendnpuir", reason="needs the ascendnpu-ir wheel (bishengir-compile)")
backends = pytest.importorskip("triton.backends").backends
if "ascend" not in backends:
    pytest.skip("needs triton-ascend (the installed triton has no ascend backend)",
                allow_module_level=True)

from npu_softmax import _compat, launcher  # noqa: E402
from npu_softmax.backends import AscendBackend  # noqa: E402
from npu_softmax.layout import row_layout  # noqa: E402

if _compat.interpreter_enabled():
    # conftest.py turns the interpreter on where no device is; compiling needs the real JIT.
    pytest.skip("compiles kernels: run with TRITON_INTERPRET=0", allow_module_level=True)
if _compat.current_target() is not None:
    # The offline check stops at bishengir (no CANN) and, to do so, patches triton-ascend's
    # target chip, compiler path and cache in this process: on a host with a device the suite
    # compiles and runs every kernel for real instead.
    pytest.skip("the offline compile check is for machines without an NPU",
                allow_module_level=True)

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import compile_ascend  # noqa: E402


def _largest(target: compile_ascend.Target, variant: str, layout: str) -> launcher.Plan:
    """The plan of ``variant`` with the most elements per block for rows laid out as
    ``layout`` (``ascend_cpu.inputs``) whose elements are not contiguous: the tightest UB
    fit."""
    be = AscendBackend(target.arch)
    if variant == "cols":
        plans = launcher.reachable_column_plans(be, 2, target.vector_cores,
                                                layout == "transposed")
    else:
        plans = launcher.reachable_plans(be, 2, target.vector_cores,
                                         compile_ascend.ascend_cpu.COL_STRIDE)
    return max((p for p in plans if p.variant == variant),
               key=lambda p: (p.block_m * p.block_n, p.n_splits, p.index_64))


@pytest.mark.parametrize("target", ["A2", "A5"])
@pytest.mark.parametrize("variant,layout", [("tile", "strided"), ("online", "strided"),
                                            ("split", "strided"), ("cols", "inner"),
                                            ("cols", "transposed")])
def test_largest_plan_compiles_and_fits(target: str, variant: str, layout: str,
                                        tmp_path: pytest.TempPathFactory) -> None:
    t = compile_ascend.TARGETS[target]
    p = _largest(t, variant, layout)
    for fn in compile_ascend.kernels_of(p):
        row, _ = compile_ascend.compile_one(t, "bf16", p, layout, fn.__name__, str(tmp_path))
        assert row.stage == compile_ascend.REACHABLE, row.error
        assert row.ok, f"{row.ub_used} B of UB planned, launcher assumes {row.ub_budget}: " \
                       f"{row.error}"


#: (shape, dim, variant): inputs whose backward plan (two tensors read) fills its variant's
#: largest tile or chunk.
BACKWARD_CASES = [
    ((4096, 4096), -1, "tile"),
    ((4096, 100000), -1, "online"),
    ((2, 1 << 20), -1, "split"),
    ((8, 64, 64), 1, "cols"),
    ((1, 100000, 64), 1, "cols"),
]


@pytest.mark.parametrize("target", ["A2", "A5"])
@pytest.mark.parametrize("case", BACKWARD_CASES, ids=lambda c: f"{c[2]}-{c[0]}")
def test_largest_backward_plans_compile_and_fit(target: str, case: tuple,
                                                tmp_path: pytest.TempPathFactory) -> None:
    """The backward's kernels (``kernels_backward``, ``kernels_cols``), which the sweep of
    ``scripts/compile_ascend.py`` leaves out: the largest tiles fit the UB beside their second
    tensor's."""
    shape, dim, variant = case
    t = compile_ascend.TARGETS[target]
    strides = torch.empty(shape).stride()
    layout = row_layout(shape, dim % len(shape), strides, strides)
    p = launcher.plan(layout, 2, t.vector_cores, AscendBackend(t.arch), streams=2)
    assert p.variant == variant, p
    for fn in compile_ascend.kernels_of(p, backward=True):
        row, _ = compile_ascend.compile_one(t, "bf16", p, "inner" if variant == "cols" else "last",
                                            fn.__name__, str(tmp_path))
        assert row.stage == compile_ascend.REACHABLE, row.error
        assert row.ok, f"{row.ub_used} B of UB planned, launcher assumes {row.ub_budget}: " \
                       f"{row.error}"
