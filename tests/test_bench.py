"""``scripts/bench.py``'s bookkeeping, on the CPU with a stand-in for the device timer (the real
one needs a GPU or NPU; the benchmark itself runs there): each round times the copy and every
provider once, the rounds do not all share one order, each keeps its best round, and a provider
that refuses a shape is reported as NaN and not timed again."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import bench  # noqa: E402

from npu_softmax.timing import gbps  # noqa: E402


def test_measure_times_each_round_in_its_own_order(monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.randn(6, 10)
    called: list[str] = []

    def provider(name: str):  # noqa: ANN202
        def fn(t: torch.Tensor, dim: int) -> torch.Tensor:
            called.append(name)
            if name == "refuses":
                raise ValueError("out of shared memory")
            return torch.softmax(t, dim)
        return fn

    names = ["ours", "theirs", "refuses"]
    fns = {name: provider(name) for name in names}
    timings: list[tuple[str, float]] = []
    spent = iter(random.Random(1).sample(range(1, 100), 40))

    def fake_time_ms(fn) -> float:  # noqa: ANN001
        before = len(called)
        fn()
        name = called[-1] if len(called) > before else "copy"
        ms = float(next(spent))
        timings.append((name, ms))
        return ms

    monkeypatch.setattr(bench, "time_ms", fake_time_ms)
    monkeypatch.setattr(bench, "_ORDER", random.Random(0))
    rounds = 5
    result = bench.measure(fns, x, -1, names, rounds)

    # The refusing provider is called once (its first round) and then left out.
    assert called.count("refuses") == 1 and math.isnan(result["refuses"])
    # Every other entry once a round, in orders that are not all the same.
    others = [name for name, _ in timings]
    assert len(others) == 3 * rounds
    orders = [tuple(others[3 * r:3 * r + 3]) for r in range(rounds)]
    assert all(sorted(order) == ["copy", "ours", "theirs"] for order in orders), orders
    assert len(set(orders)) > 1, f"every round in one order: {orders}"
    # Each keeps its best (shortest) time, as GB/s of the bytes read and written.
    n_bytes = 2 * x.numel() * x.element_size()
    for name in ("copy", "ours", "theirs"):
        best = min(ms for n, ms in timings if n == name)
        assert result[name] == pytest.approx(gbps(n_bytes, best)), name


def test_each_call_reads_a_new_copy_of_the_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every timed call, the copy's and each provider's, reads the next of copies of the input
    (its values and strides), so no call finds its input in a cache an earlier one filled; with
    ``pool_bytes`` 0, the input itself every call."""
    x = torch.randn(10, 6).t()  # a transposed input keeps its strides in the copies
    seen: dict[str, list[torch.Tensor]] = {"ours": [], "copy": []}

    def ours(t: torch.Tensor, dim: int) -> torch.Tensor:
        seen["ours"].append(t)
        return torch.softmax(t, dim)

    def fake_time_ms(fn) -> float:  # noqa: ANN001
        before = len(seen["ours"])
        for _ in range(3):
            out = fn()
            if len(seen["ours"]) == before:
                seen["copy"].append(out.clone())
        return 1.0

    monkeypatch.setattr(bench, "time_ms", fake_time_ms)
    pool = 3 * x.numel() * x.element_size()
    bench.measure({"ours": ours}, x, -1, ["ours"], rounds=2, pool_bytes=pool)
    calls = seen["ours"]
    assert len(calls) == 6
    assert len({t.data_ptr() for t in calls}) == 3  # three copies, in turn
    for t in calls:
        assert t.stride() == x.stride() and torch.equal(t, x)
    assert len(seen["copy"]) == 6 and all(torch.equal(c, x) for c in seen["copy"])

    seen["ours"].clear()
    bench.measure({"ours": ours}, x, -1, ["ours"], rounds=1, pool_bytes=0)
    assert all(t is x for t in seen["ours"])


def test_random_shapes_span_rows_and_sizes_and_repeat_by_seed() -> None:
    dtypes = ["float32", "bfloat16"]
    shapes = bench.random_shapes(400, 5, dtypes)
    assert shapes == bench.random_shapes(400, 5, dtypes)
    assert shapes[:8] != bench.random_shapes(8, 6, dtypes)
    assert {d for d, _, _ in shapes} == set(dtypes)
    only_bf16 = bench.random_shapes(20, 5, ["bfloat16"])
    assert only_bf16 and all(d == "bfloat16" for d, _, _ in only_bf16)
    lo, hi = bench.RANDOM_COLS
    moved_lo, moved_hi = bench.RANDOM_MOVED_BYTES
    for dname, m, n in shapes:
        row_bytes = 2 * n * bench.DTYPES[dname].itemsize
        assert lo <= n <= hi and m >= 1
        # M rows move the drawn bytes, to within a row (and one row at least).
        assert m * row_bytes <= moved_hi and (m + 1) * row_bytes > moved_lo
    # Log-uniform: each decade of row lengths and of sizes is drawn.
    cols = [n for _, _, n in shapes]
    for decade in (10, 100, 1000, 10_000, 100_000):
        assert any(decade <= n < 10 * decade for n in cols if n >= lo), decade
    moved = [2 * m * n * bench.DTYPES[d].itemsize for d, m, n in shapes]
    assert min(moved) < 16e6 and max(moved) > 128e6


def test_random_summary_counts_the_random_rows_only() -> None:
    def row(part: str, ours: float, torch_: float, liger: float, copy: float) -> dict:
        return {"part": part, "dtype": "float32", "M": 1, "N": 1, "copy": copy,
                "npu_softmax": ours, "torch": torch_, "liger": liger}

    rows = [row("shapes", 1.0, 9.0, 9.0, 10.0),   # not random: left out
            row("random", 10.0, 9.0, 10.2, 20.0),  # beats torch, within 3% of liger
            row("random", 8.8, 9.0, 8.0, 10.0),    # under torch (the best peer) by under 3%
            row("random", 5.0, 4.0, float("nan"), 10.0),  # liger refused: torch is the best
            row("random", 7.0, 6.0, 9.0, 10.0)]    # beats torch, 0.78x liger
    line = bench.random_summary(rows, ["torch", "liger"])
    assert "torch.softmax on 3 of 4" in line and "best peer on 3;" in line
    assert "a median 60% of the copy" in line  # of 50%, 88%, 50% and 70%
