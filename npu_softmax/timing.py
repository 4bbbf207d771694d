"""Device timing shared by ``python -m npu_softmax`` and ``scripts/bench.py``."""

from __future__ import annotations

from typing import Callable

import triton.testing


def time_ms(fn: Callable[[], object], warmup_ms: int = 25, rep_ms: int = 100) -> float:
    """Median milliseconds of one ``fn()`` on the active device, timed with device events.

    ``triton.testing.do_bench`` on every target: triton-ascend's version times with
    ``torch.npu`` events like upstream's with CUDA events. (triton-ascend's ``do_bench_npu``
    profiles kernels instead, but its signature and units change between releases.)
    """
    return float(triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))


def gbps(n_bytes: int, ms: float) -> float:
    """GB/s (1e9 bytes per second) of moving ``n_bytes`` in ``ms`` milliseconds."""
    return n_bytes / (ms * 1e-3) / 1e9
