"""Softmax bandwidth on the device that is here: npu_softmax against its peers, in one run.

GB/s = (bytes read + bytes written) / median time, from ``triton.testing.do_bench``, the best of
``--rounds`` rounds that time every provider once, each round in a new order, each call on the
next of copies of the input that hold 256 MB (``--same-input``: the input itself). Providers:
npu_softmax, torch.softmax, the naive 5-op torch softmax, torch.compile of torch.softmax,
Liger-Kernel's softmax when it is installed, and a device-to-device copy of the same bytes (the
roof). Three parts: the seeds' sweep (M = 4096, N = 128 * i), a list of shapes (short rows, the
shapes of the project's issues, LLM vocabulary rows), and softmax over dims that are not the
last (channels, columns, transposed inputs), all in float32 and bfloat16; with ``--random``, a
fourth of seeded random shapes (``random_shapes``), not only those the list names. Writes
``bench.csv`` (sweep, shapes and random shapes), ``bench_dims.csv``,
``bench_sweep_<dtype>.png`` and ``summary.md`` into ``--out`` and prints a table with % of the
roof and the ratio to torch.softmax; also the host cost of a call on a tiny tensor, and with
``--backward`` the backward pass beside torch's.

    python scripts/bench.py --out docs/benchmarks            # full run (GPU or NPU)
    python scripts/bench.py --quick                           # fewer sweep points
    python scripts/bench.py --no-shapes --dtypes bfloat16     # the sweep of one dtype
    python scripts/bench.py --only-dims                       # only the other dims
    python scripts/bench.py --no-sweep --random 48 --seed 1   # and 48 random shapes
"""

from __future__ import annotations

import argparse
import csv
import datetime
import functools
import math
import os
import random
import statistics
import time
from typing import Callable

import torch

import npu_softmax
from npu_softmax.timing import POOL_BYTES, gbps, inputs, time_ms

SHAPES = [
    (32768, 128), (65536, 64), (16384, 512), (1823, 781), (4096, 1024), (4096, 8192),
    (4096, 32768), (64, 65536), (16, 262144), (4, 1048576),
    (1, 151936), (8, 151936), (32, 151936), (64, 151936), (64, 128256), (1, 131072),
    (1024, 65536), (256, 151936),
    # Llama 2's and Mistral's 32000-entry vocabulary over a batch of tokens.
    (4096, 32000),
    # Rows that are not 16-byte aligned: short rows, rows that fit a tile, and GPT-2's
    # 50257-entry vocabulary.
    (8192, 200), (8192, 333), (65536, 100), (65536, 333), (32768, 777), (2048, 1000),
    (4096, 10001), (2048, 20001), (4096, 50257), (8, 50257),
    # Short rows of odd length just past a power of two, 128 MB of float32 (docs/tuning.md,
    # forty-second session), and just under one and further past one (fifty-second session);
    # rows just past 256 (odd) and 512 (16-byte aligned), 128 MB too (fifty-third session).
    (231884, 69), (124031, 129), (253968, 63), (164948, 97), (62256, 257), (30769, 520),
    # Rows of 1025-2048: odd (float32 rows in runs of one element) and 16-byte aligned, 64 MB
    # of bfloat16 and 128 MB of float32 (sixty-fifth session).
    (15609, 1025), (20833, 1536),
]
#: Softmax over a dim that is not the last (rows interleaved in memory: channels of an image
#: batch, columns of a matrix), and over the last dim of a transposed input: (shape, dim,
#: transposed). A transposed input is ``randn(shape).t()``.
DIM_CASES = [
    ((4096, 4096), 0, False), ((1024, 16384), 0, False), ((16384, 1024), 0, False),
    ((131072, 8), 0, False), ((32, 64, 4096), 1, False), ((8, 19, 262144), 1, False),
    ((16, 3, 50176), 1, False), ((64, 256, 1024), 1, False), ((64, 512, 512), 1, False),
    ((256, 1000, 49), 1, False), ((4, 8192, 1024), 1, False), ((512, 21, 4096), 1, False),
    ((4096, 4096), -1, True), ((8192, 1000), -1, True), ((1000, 8192), -1, True),
    ((100, 16384), -1, True),
]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
#: The random shapes' rows (elements) and the bytes a call moves (read + written), each drawn
#: log-uniformly between these: short rows to LLM vocabularies, tensors from about L2's size
#: (50 MB on the H100) to far past it.
RANDOM_COLS = (16, 200_000)
RANDOM_MOVED_BYTES = (8e6, 256e6)
#: The order of each round's timings: seeded, so a run repeats its orders.
_ORDER = random.Random(0)


def random_shapes(count: int, seed: int, dtypes: list[str]) -> list[tuple[str, int, int]]:
    """``count`` shapes ``(dtype, M, N)``, the same for the same arguments: a dtype of
    ``dtypes``, rows of ``RANDOM_COLS`` elements and ``M`` rows moving ``RANDOM_MOVED_BYTES``,
    each drawn log-uniformly. Rows of every length and tensors of every size in between, not
    only the shapes the list names (and the launch rules were measured on)."""
    rng = random.Random(seed)
    shapes = []
    for _ in range(count):
        dname = rng.choice(dtypes)
        n = int(math.exp(rng.uniform(*map(math.log, RANDOM_COLS))))
        moved = math.exp(rng.uniform(*map(math.log, RANDOM_MOVED_BYTES)))
        shapes.append((dname, max(1, int(moved / (2 * n * DTYPES[dname].itemsize))), n))
    return shapes


def naive_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The seeds' 5-op softmax: max, subtract, exp, sum, divide (8 passes over memory)."""
    x_max = x.max(dim=dim, keepdim=True)[0]
    z = torch.exp(x - x_max)
    return z / z.sum(dim=dim, keepdim=True)


def providers(device: str) -> dict[str, Callable[[torch.Tensor, int], object]]:
    """Name -> function of the input and the dim, for every provider available here."""
    out: dict[str, Callable[[torch.Tensor, int], object]] = {
        "npu_softmax": npu_softmax.softmax,
        "torch": torch.softmax,
        "naive": naive_softmax,
    }
    out["torch.compile"] = torch.compile(torch.softmax, dynamic=False)
    try:
        from liger_kernel.ops.softmax import LigerSoftmaxFunction
    except ImportError:
        pass
    else:
        def liger(x: torch.Tensor, dim: int) -> torch.Tensor:
            if dim % x.dim() != x.dim() - 1:
                raise ValueError("Liger-Kernel's softmax takes the last dim only")
            return LigerSoftmaxFunction.apply(x)
        out["liger"] = liger
    return out


def measure(fns: dict[str, Callable], x: torch.Tensor, dim: int, names: list[str],
            rounds: int, pool_bytes: int = POOL_BYTES) -> dict[str, float]:
    """GB/s of each named provider (and the copy roof) on the input ``x`` over ``dim``: the
    best of ``rounds`` rounds, each timing the copy and every provider once, in an order of its
    own. Interference on a shared host (other processes, torch.compile's workers) only ever slows
    a timing down, and so does the device state a timing inherits from the ones before it: on
    the H100 one kernel ran 2760 or 2900 GB/s by its place in the round alone (docs/tuning.md,
    thirty-second session). A fixed order would give each provider the same place, and the
    same luck, every round; a new order each round and the best of the rounds compare them as
    the device runs them. The roof copies a contiguous tensor of ``x``'s bytes.

    Each call reads the next of copies of ``x`` holding ``pool_bytes`` (``timing.inputs``; 0:
    ``x`` itself every call, as runs before commit 8d64250 did), so that no timing
    finds its input in L2, left there by its own earlier calls or by another provider's."""
    src = x.contiguous()
    dst = torch.empty_like(src)
    n_bytes = 2 * x.numel() * x.element_size()
    next_x = inputs(x, pool_bytes)
    next_src = next_x if src is x else inputs(src, pool_bytes)
    timed: dict[str, Callable[[], object]] = {"copy": lambda: dst.copy_(next_src())}
    timed.update({name: functools.partial(_call, fns[name], next_x, dim) for name in names})
    result = dict.fromkeys(timed, 0.0)
    # torch.compile specialises on shapes and stops compiling after a few (dynamo's recompile
    # limit), falling back to eager: compile each shape from scratch instead.
    torch._dynamo.reset()
    order = list(timed)
    for _ in range(rounds):
        _ORDER.shuffle(order)
        for name in order:
            if result[name] != result[name]:  # refused this shape in an earlier round
                continue
            try:
                ms = time_ms(timed[name])
            except Exception as e:  # a peer that refuses a shape (out of shared memory, ...)
                print(f"  {name} failed on {tuple(x.shape)} dim {dim} {x.dtype}: "
                      f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
                result[name] = float("nan")
                continue
            result[name] = max(result[name], gbps(n_bytes, ms))
    return result


def _call(fn: Callable, next_x: Callable[[], torch.Tensor], dim: int) -> object:
    return fn(next_x(), dim)


def random_summary(rows: list[dict], peers: list[str]) -> str:
    """One line on the rows of the random part: on how many npu_softmax is at least as fast as
    torch.softmax, and at least 0.97x the best peer (refused shapes left out), and the median
    of its share of the copy roof."""
    picked = [r for r in rows if r["part"] == "random"]
    ours = [r["npu_softmax"] for r in picked]
    # (A shape every peer refused has no best peer to fall short of.)
    best = [_best_peer(r, peers, default=0.0) for r in picked]
    at_torch = sum(o >= r["torch"] for o, r in zip(ours, picked))
    at_peer = sum(o >= 0.97 * b for o, b in zip(ours, best))
    roof = statistics.median(o / r["copy"] for o, r in zip(ours, picked))
    return (f"Random shapes: npu_softmax at least torch.softmax on {at_torch} of {len(picked)}, "
            f"at least 0.97x the best peer on {at_peer}; a median {100 * roof:.0f}% of the copy.")


def _best_peer(r: dict, peers: list[str], default: float = float("nan")) -> float:
    """The best GB/s of ``peers`` in the row ``r``, those that refused the shape (NaN) left
    out; ``default`` where all refused."""
    return max((r[p] for p in peers if r[p] == r[p]), default=default)


def _table_row(r: dict, label: str, names: list[str], peers: list[str]) -> str:
    best = _best_peer(r, peers)
    ours = r["npu_softmax"]
    return (f"| {r['dtype']} | {label} | {r['copy']:.0f} | "
            + " | ".join(f"{r[n]:.0f}" for n in names)
            + f" | {100 * ours / r['copy']:.0f}% | {ours / r['torch']:.2f} | {ours / best:.2f} |")


def measure_backward(shape: tuple[int, ...], dim: int, dtype: torch.dtype,
                     device: str) -> dict[str, float]:
    """GB/s of the backward pass over ``dim`` (reads the output and its gradient, writes the
    input's gradient) of npu_softmax and torch.softmax, from one saved forward each; ``copy`` is
    the same input's copy roof, for scale."""
    x = torch.randn(shape, device=device).mul(3).to(dtype).requires_grad_()
    dy = torch.randn(shape, device=device).to(dtype)
    dst = torch.empty_like(x)
    n_bytes = 3 * x.numel() * x.element_size()
    result = {"copy": gbps(2 * x.numel() * x.element_size(),
                           time_ms(lambda: dst.copy_(x.detach())))}
    for name, fn in (("npu_softmax", npu_softmax.softmax), ("torch", torch.softmax)):
        y = fn(x, dim)
        result[name] = gbps(n_bytes, time_ms(
            lambda: torch.autograd.grad(y, x, dy, retain_graph=True)))  # noqa: B023
    return result


def host_cost_us(fn: Callable[[], object], device: str, calls: int = 2000) -> float:
    """Microseconds per call of ``fn`` in a loop, device synchronised only at the end: on a tiny
    tensor the device finishes each call before the host issues the next, so this is the
    host's launch cost."""
    sync = torch.npu.synchronize if device == "npu" else torch.cuda.synchronize
    for _ in range(50):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls * 1e6


def plot(rows: list[dict], dtype: str, path: str, device_name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = [r for r in rows if r["part"] == "sweep" and r["dtype"] == dtype]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name in [k for k in sweep[0] if k not in ("part", "dtype", "M", "N")]:
        ax.plot([r["N"] for r in sweep], [r[name] for r in sweep], label=name,
                linestyle="--" if name == "copy" else "-")
    ax.set_xlabel("N (M = 4096)")
    ax.set_ylabel("GB/s (read + write)")
    ax.set_title(f"softmax {dtype}, {device_name}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_csv(path: str, rows: list[dict], keys: list[str], names: list[str]) -> None:
    """Write ``rows`` (their ``keys``, the copy roof and each provider's GB/s) to ``path``."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*keys, "copy", *names])
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="bench-results", help="folder for csv/png/md")
    parser.add_argument("--quick", action="store_true", help="every 8th sweep point")
    parser.add_argument("--no-sweep", action="store_true", help="only the list of shapes")
    parser.add_argument("--no-shapes", action="store_true",
                        help="no list of shapes (last dim) and no other dims")
    parser.add_argument("--only-dims", action="store_true",
                        help="only the other dims (no sweep, no list of shapes)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds per point, each provider's best kept (default 3)")
    parser.add_argument("--backward", action="store_true",
                        help="also the backward pass over the list of shapes")
    parser.add_argument("--random", type=int, default=0, metavar="COUNT",
                        help="also COUNT random shapes of the dtypes (``random_shapes``)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random shapes")
    parser.add_argument("--same-input", action="store_true",
                        help="time every call on the one input, as the runs kept in "
                        "docs/benchmarks before commit 8d64250 did (default: a new copy each "
                        "call)")
    parser.add_argument("--dtypes", nargs="+", choices=list(DTYPES), default=list(DTYPES),
                        help="dtypes to measure (default: all); a full sweep of one dtype "
                        "fits a shorter session on a lent device")
    args = parser.parse_args()
    dtypes = {name: DTYPES[name] for name in args.dtypes}
    pool = 0 if args.same_input else POOL_BYTES
    info = npu_softmax.target_info()
    device = {"npu": "npu", "cuda": "cuda", "hip": "cuda"}.get(info["backend"])
    if device is None:
        raise SystemExit("scripts/bench.py needs a GPU or NPU (the interpreter is not timed)")
    os.makedirs(args.out, exist_ok=True)
    fns = providers(device)
    names = list(fns)
    device_name = info["device_name"]
    stamp = datetime.date.today().isoformat()
    print(f"{device_name} ({info['backend']} {info['arch']}), {stamp}, torch {info['torch']}, "
          f"triton {info['triton']}; providers: {', '.join(names)}")

    # Every table is written as it goes: a run stopped early (a lent device's time limit)
    # keeps the points it measured.
    rows: list[dict] = []
    dims: list[dict] = []
    save_rows = functools.partial(write_csv, os.path.join(args.out, "bench.csv"), rows,
                                  ["part", "dtype", "M", "N"], names)
    save_dims = functools.partial(write_csv, os.path.join(args.out, "bench_dims.csv"), dims,
                                  ["dtype", "shape", "dim"], names)
    if not (args.no_sweep or args.only_dims):
        step = 8 if args.quick else 2
        for dname, dtype in dtypes.items():
            for i in range(2, 100, step):
                x = torch.randn(4096, 128 * i, device=device).mul(3).to(dtype)
                r = measure(fns, x, -1, names, args.rounds, pool)
                rows.append({"part": "sweep", "dtype": dname, "M": 4096, "N": 128 * i, **r})
                save_rows()
            plot(rows, dname, os.path.join(args.out, f"bench_sweep_{dname}.png"), device_name)
    cases = [] if args.no_shapes or args.only_dims else [
        ("shapes", dname, m, n) for dname in dtypes for m, n in SHAPES]
    cases += [("random", *shape) for shape in random_shapes(args.random, args.seed, list(dtypes))]
    for part, dname, m, n in cases:
        x = torch.randn(m, n, device=device).mul(3).to(dtypes[dname])
        r = measure(fns, x, -1, names, args.rounds, pool)
        rows.append({"part": part, "dtype": dname, "M": m, "N": n, **r})
        save_rows()
    for dname, dtype in dtypes.items():
        for shape, dim, transposed in [] if args.no_shapes else DIM_CASES:
            x = torch.randn(shape, device=device).mul(3).to(dtype)
            r = measure(fns, x.t() if transposed else x, dim, names, args.rounds, pool)
            dims.append({"dtype": dname, "shape": "x".join(map(str, shape))
                         + (" transposed" if transposed else ""), "dim": dim, **r})
            save_dims()
    if not rows:
        save_rows()  # an --only-dims run leaves its (empty) bench.csv too, as every run does

    peers = [n for n in names if n != "npu_softmax"]
    lines = [f"Measured on {device_name}, {stamp} (torch {info['torch']}, triton "
             f"{info['triton']}). GB/s = (read + write) / median time; copy = device-to-device "
             f"copy of the same bytes; each the best of {args.rounds} rounds; "
             + ("the same input every call." if args.same_input else
                f"each call on the next of copies of the input ({POOL_BYTES >> 20} MB at "
                "least)."), "",
             "| dtype | M x N | copy | " + " | ".join(names)
             + " | % of copy | vs torch | vs best peer |",
             "|---|---|---|" + "---|" * len(names) + "---|---|---|"]
    for r in rows:
        if r["part"] == "sweep" and r["N"] not in (1024, 4096, 8192, 12544):
            continue
        label = f"{r['M']}x{r['N']}" + (" (random)" if r["part"] == "random" else "")
        lines.append(_table_row(r, label, names, peers))
    if args.random:
        lines += ["", random_summary(rows, peers) + f" (seed {args.seed})"]
    if dims:
        lines += ["", "Softmax over other dims (a transposed input is randn(shape).t(), over "
                  "its last dim; copy: of a contiguous tensor of the same bytes):", "",
                  "| dtype | shape, dim | copy | " + " | ".join(names)
                  + " | % of copy | vs torch | vs best peer |",
                  "|---|---|---|" + "---|" * len(names) + "---|---|---|"]
        lines += [_table_row(r, f"{r['shape']}, dim {r['dim']}", names, peers) for r in dims]
    if args.backward:
        lines += ["", "Backward (GB/s = 3 tensors moved / median time; copy = forward's roof):",
                  "", "| dtype | shape, dim | copy | npu_softmax | torch | vs torch |",
                  "|---|---|---|---|---|---|"]
        for dname, dtype in dtypes.items():
            for shape, dim in [*((s, -1) for s in SHAPES),
                               *((s, d) for s, d, transposed in DIM_CASES if not transposed)]:
                r = measure_backward(shape, dim, dtype, device)
                lines.append(f"| {dname} | {'x'.join(map(str, shape))}, dim {dim} | "
                             f"{r['copy']:.0f} | {r['npu_softmax']:.0f} | {r['torch']:.0f} | "
                             f"{r['npu_softmax'] / r['torch']:.2f} |")
    tiny = torch.randn(4, 128, device=device)
    # Best of the rounds, the two in turn (as the bandwidths: interference only adds time).
    ours_us = torch_us = float("inf")
    for _ in range(args.rounds):
        ours_us = min(ours_us, host_cost_us(lambda: npu_softmax.softmax(tiny, -1), device))
        torch_us = min(torch_us, host_cost_us(lambda: torch.softmax(tiny, -1), device))
    lines += ["", f"Host cost of one call on a 4x128 float32 tensor (best of {args.rounds} "
              f"rounds): npu_softmax {ours_us:.1f} us, torch.softmax {torch_us:.1f} us "
              f"({ours_us / torch_us:.2f}x)."]
    text = "\n".join(lines)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
