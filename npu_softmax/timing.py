"""Device timing shared by ``python -m npu_softmax`` and ``scripts/bench.py``."""

from __future__ import annotations

import itertools
import os
from typing import Callable

import torch
import triton.testing

#: Bytes of input copies a timing cycles through (``inputs``): several times the L2 of any
#: GPU here (50 MB on the H100), so that no call finds its input in L2.
POOL_BYTES = 256 * 2**20
#: At most this many copies (inputs under 256 KB then cover less than ``POOL_BYTES``).
MAX_COPIES = 1024


def time_ms(fn: Callable[[], object], warmup_ms: int = 25, rep_ms: int = 100) -> float:
    """Median milliseconds of one ``fn()`` on the active device, timed with device events.

    ``triton.testing.do_bench`` on every target: triton-ascend's version times with
    ``torch.npu`` events like upstream's with CUDA events. Under ``TRITON_BENCH_METHOD=npu``
    triton-ascend 3.2's ``do_bench`` hands over to its profiler (``do_bench_npu``), which returns
    the mean of the first profiled op in microseconds (one kernel of a two-kernel call, and not
    milliseconds), so the variable is set aside while this times.
    """
    method = os.environ.pop("TRITON_BENCH_METHOD", None)
    try:
        return float(triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms,
                                             return_mode="median"))
    finally:
        if method is not None:
            os.environ["TRITON_BENCH_METHOD"] = method


def inputs(x: torch.Tensor, pool_bytes: int = POOL_BYTES) -> Callable[[], torch.Tensor]:
    """A function that returns the next of copies of ``x`` (its strides kept) at each call,
    round the copies, which hold ``pool_bytes`` at least (``MAX_COPIES`` at most); ``x`` itself
    every call where ``pool_bytes`` is 0.

    A new input each call, as a model gives a softmax: ``do_bench`` flushes L2 before each call
    by writing 256 MB, but lines that an earlier call read with a high eviction priority (the
    split and online kernels' first reads, ``evict_last``) stay. Timed on one input, a call then
    found part of it in L2: on the H100 a copy timed after npu_softmax ran up to 30% faster than
    before it, and npu_softmax up to 17% faster on its own input (docs/tuning.md, thirty-fifth
    session).
    """
    size = x.numel() * x.element_size()
    copies = min(MAX_COPIES, max(2, -(-pool_bytes // max(size, 1)))) if pool_bytes else 1
    pool = [x] + [x.clone() for _ in range(copies - 1)]
    return itertools.cycle(pool).__next__


def gbps(n_bytes: int, ms: float) -> float:
    """GB/s (1e9 bytes per second) of moving ``n_bytes`` in ``ms`` milliseconds."""
    return n_bytes / (ms * 1e-3) / 1e9
