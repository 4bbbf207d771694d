"""``launcher.reachable_plans`` and ``reachable_column_plans`` list every plan ``plan()`` picks
on Ascend (what ``scripts/compile_ascend.py`` compiles), and on targets with tail blocks, checked
against ``plan()`` on random shapes."""

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
        strides = (n_cols * col_stride, 0, col_stride)  # rows not interleaved
        layout = RowLayout(n_rows, n_cols, 1, strides, strides)
        p = launcher.plan(layout, itemsize, cores, be)
        assert p in listed, (n_rows, n_cols, p)


@pytest.mark.parametrize("arch,cores", [("Ascend910B3", 40), ("Ascend910_9599", 72)])
@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("transposed", [False, True])
def test_random_interleaved_shapes_pick_listed_column_plans(arch: str, cores: int, itemsize: int,
                                                            transposed: bool) -> None:
    be = AscendBackend(arch)
    listed = set(launcher.reachable_column_plans(be, itemsize, cores, transposed))
    rng = random.Random(f"cols{arch}{itemsize}{transposed}")
    for _ in range(500):
        n_outer, n_cols, n_inner = (max(2, int(10 ** rng.uniform(0, e))) for e in (3, 6, 4))
        n_outer = 1 if transposed else n_outer // 2
        n_rows = n_outer * n_inner
        if transposed:  # the last dim of randn(n_cols, n_rows).t(), output contiguous
            layout = RowLayout(n_rows, n_cols, 1, (1, 0, n_rows), (n_cols, 0, 1))
        else:  # dim 1 of a contiguous (n_outer, n_cols, n_inner) tensor
            strides = (n_cols * n_inner, 1, n_inner)
            layout = RowLayout(n_rows, n_cols, n_inner, strides, strides)
        p = launcher.plan(layout, itemsize, cores, be)
        assert p.variant == "cols" and p in listed, (n_outer, n_cols, n_inner, p)


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


#: Unified buffer per vector core (docs/ascend.md, from bishengir's chip specs: a 910B kernel's
#: memory plan fails with "requires 1573120 bits while 1572864 bits available").
ASCEND_UB = {"Ascend910B3": 192 * 1024, "Ascend910_9599": 248 * 1024}


def _documented_ub_bytes(p: launcher.Plan, streams: int) -> int:
    """UB bytes of ``p``'s tile by docs/ascend.md's rule: three live float32 copies of each tile
    row, doubled by multi-buffering, a row taking at least 64 bytes a copy; a ``cols`` tile's
    row (a run of its group's neighbouring rows) at least one 32-byte block, for each of the
    ``streams`` tensors read (the row kernels' backward holds as many rows as the forward:
    bishengir fits its largest tile, test_ascend_compile.py)."""
    if p.variant == "cols":
        return p.block_n * max(4 * p.block_m, 32) * 3 * 2 * streams
    return p.block_m * max(4 * (p.block_n + p.tail_n), 64) * 3 * 2


@pytest.mark.parametrize("arch,cores", [("Ascend910B3", 40), ("Ascend910_9599", 72)])
@pytest.mark.parametrize("itemsize", [2, 4])
def test_ascend_tiles_fit_the_documented_ub(arch: str, cores: int, itemsize: int) -> None:
    """Every tile ``plan()`` can pick on Ascend fits the UB by docs/ascend.md's rule: the
    forward's (``reachable_plans``, ``reachable_column_plans``) and the backward's, which reads
    two tensors (random shapes). On A2/A3 a tile or chunk of rows whose elements are apart,
    or of groups that are not contiguous (a transposed input's output), holds at most 1024
    elements (bishengir moves those element by element: 4096 took 262-1050 KB). Ascend runs
    no kernel here: a plan past the UB is caught by bishengir only (test_ascend_compile.py)."""
    be = AscendBackend(arch)
    capped = not arch.startswith("Ascend910_95")  # A5 plans such rows like contiguous ones
    cases = [(p, 1, col_stride > 1) for col_stride in (1, 16)
             for p in launcher.reachable_plans(be, itemsize, cores, col_stride)]
    cases += [(p, 1, transposed) for transposed in (False, True)
              for p in launcher.reachable_column_plans(be, itemsize, cores, transposed)]
    rng = random.Random(f"ub{arch}{itemsize}")
    for _ in range(100):
        n_outer, n_cols, n_inner = (max(1, int(10 ** rng.uniform(0, e))) for e in (3, 6, 3))
        n_rows = n_outer * n_inner
        rows = (n_cols, 0, 1)
        strided = (n_cols * 16, 0, 16)
        inner = (n_cols * n_inner, 1, n_inner)
        for layout, apart in ((RowLayout(n_outer, n_cols, 1, rows, rows), False),
                              (RowLayout(n_outer, n_cols, 1, strided, strided), True),
                              (RowLayout(n_rows, n_cols, n_inner, inner, inner), False)):
            cases.append((launcher.plan(layout, itemsize, cores, be, streams=2), 2, apart))
    for p, streams, apart in cases:
        assert _documented_ub_bytes(p, streams) <= ASCEND_UB[arch], (p, streams)
        if apart and capped:
            assert p.block_m * (p.block_n + p.tail_n) <= 1024, p
