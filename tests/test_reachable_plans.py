"""``launcher.reachable_plans`` lists every plan ``plan()`` picks on Ascend (what
``scripts/compile_ascend.py`` compiles), checked against ``plan()`` on random shapes."""

from __future__ import annotations

import random

import pytest

from npu_softmax import launcher
from npu_softmax.backends import AscendBackend
from npu_softmax.layout import RowLayout


@pytest.mark.parametrize("arch,cores", [("Ascend910B3", 40), ("Ascend910_9599", 72)])
@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("col_stride", [1, 16])
def test_random_shapes_pick_listed_plans(arch: str, cores: int, itemsize: int,
                                         col_stride: int) -> None:
    be = AscendBackend(arch)
    listed = set(launcher.reachable_plans(be, itemsize, cores, col_stride))
    rng = random.Random(f"{arch}{itemsize}{col_stride}")
    for _ in range(500):
        n_rows, n_cols = (int(10 ** rng.uniform(0, 6.5)) for _ in range(2))
        inner = col_stride if col_stride > 1 else 1
        strides = (n_cols * inner, 1 if inner > 1 else 0, col_stride)
        layout = RowLayout(n_rows, n_cols, inner, strides, strides)
        p = launcher.plan(layout, itemsize, cores, be)
        assert p in listed, (n_rows, n_cols, p)
