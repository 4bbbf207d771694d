"""``launcher.reachable_plans`` lists every plan ``plan()`` picks on Ascend (what
``scripts/compile_ascend.py`` compiles), and on targets with tail blocks, checked against
``plan()`` on random shapes."""

from __future__ import annotations

import random

import pytest

from npu_softmax import launcher
from npu_softmax.backends import AscendBackend, Backend, CudaBackend, InterpreterBackend
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


@pytest.mark.parametrize("be,cores", [(CudaBackend(), 132), (InterpreterBackend(), 4)],
                         ids=["cuda", "interpreter"])
@pytest.mark.parametrize("itemsize", [2, 4])
def test_tail_blocks_are_listed(be: Backend, cores: int, itemsize: int) -> None:
    """Targets that hold rows as head and tail blocks: every tail ``plan()`` picks is listed
    (rows of random lengths, and rows just past a power of two, where tails are)."""
    listed = set(launcher.reachable_plans(be, itemsize, cores))
    rng = random.Random(f"tails{itemsize}")
    widths = [int(10 ** rng.uniform(0, 4.6)) for _ in range(300)]
    widths += [(1 << k) + rng.randrange(1, 1 << (k - 1)) for k in range(2, 16)]
    picked = set()
    for n_cols in widths:
        n_rows = int(10 ** rng.uniform(0, 5))
        strides = (n_cols, 0, 1)
        p = launcher.plan(RowLayout(n_rows, n_cols, 1, strides, strides), itemsize, cores, be)
        assert p in listed, (n_rows, n_cols, p)
        picked.add(p.tail_n > 0)
    assert True in picked or itemsize == 4 and isinstance(be, CudaBackend)
