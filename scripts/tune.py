"""Sweep the launch parameters of each kernel variant on the GPU here, to choose the backend's
constants (tile sizes, rows per block, warps, pipeline stages, programs per core).

Calls the Triton kernels directly (no API, no cache), so every point is one configuration. Prints
GB/s = (read + write) / median time per configuration, best first per shape, beside the copy
roof, torch.softmax and the launcher's own plan, then the host cost of each layer of a call on
a tiny tensor.

    python scripts/tune.py [--variant tile|online|split|host] [--dtype float32|bfloat16]
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable, Iterator

import torch
import triton

import npu_softmax
from npu_softmax import eager, launcher
from npu_softmax import kernels as K
from npu_softmax.backends.base import head_tail, window_fit
from npu_softmax.backends.cuda import CudaBackend
from npu_softmax.layout import RowLayout, row_layout
from npu_softmax.timing import gbps, time_ms

#: The output stores' cache modifier, the looped kernels' L2 policies and floating-point fusion,
#: as the launcher passes them on CUDA.
STORE = CudaBackend.output_cache
FIRST_EVICT, SECOND_EVICT = CudaBackend.reread_eviction
FUSION = CudaBackend.fp_fusion
TILE_SHAPES = [(32768, 128), (65536, 64), (16384, 512), (8192, 333), (65536, 333), (1823, 781),
               (4096, 1024), (4096, 4096), (4096, 4352), (4096, 8192), (4096, 8448), (4096, 10240),
               (1024, 16384), (4096, 20480), (4096, 32768), (64, 65536)]
ONLINE_SHAPES = [(4096, 40000), (4096, 50257), (4096, 65536), (1024, 65536), (1024, 131072),
                 (256, 151936), (512, 262144)]
SPLIT_SHAPES = [(1, 151936), (8, 151936), (8, 50257), (32, 151936), (16, 262144), (4, 1048576)]

#: A configuration sweep: for one input and output, (label, launch) pairs.
Configs = Callable[[torch.Tensor, torch.Tensor, RowLayout, int], Iterator[tuple[str, Callable]]]


def _rows(lay: RowLayout) -> tuple:
    """The row-matrix arguments every kernel takes after its pointers."""
    return (lay.n_rows, lay.n_cols, lay.n_inner, *lay.x_strides)


def _align(x: torch.Tensor, lay: RowLayout, vec: int = 1) -> int:
    """The kernels' ``ALIGN`` for ``x``'s rows read with ``VEC`` = ``vec``, as the launcher
    passes it on CUDA."""
    return CudaBackend().row_align(lay, x.element_size(), vec)


def _vecs(x: torch.Tensor, lay: RowLayout, variant: str, block_m: int, block_n: int,
          tail_n: int = 0, bodies: bool = False) -> tuple[int, ...]:
    """The kernels' ``VEC`` values worth timing for one configuration: 1, and an aligned window
    (with ``bodies``, each row's aligned body) where one fits (``window_fit``)."""
    p = launcher.Plan(variant, block_m, block_n, tail_n, 1, index_64=False)
    vec = window_fit(lay, p, x.element_size(), bodies)
    return (1, vec) if vec > 1 else (1,)


def _tile_reads(x: torch.Tensor, lay: RowLayout, block_m: int, block_n: int,
                tail_n: int) -> list[tuple[int, bool]]:
    """``(VEC, BODY)`` of the tile kernels worth timing: ``_vecs``, and for a tile of several
    rows with no tail each row's aligned body, where the rows are not whole vectors."""
    reads = [(vec, False) for vec in _vecs(x, lay, "tile", block_m, block_n, tail_n)]
    if block_m > 1 and not tail_n:
        reads += [(vec, True) for vec in _vecs(x, lay, "tile", block_m, block_n, bodies=True)
                  if vec > 1]
    return reads


def tile_configs(x: torch.Tensor, y: torch.Tensor, lay: RowLayout,
                 sms: int) -> Iterator[tuple[str, Callable]]:
    """The row kernel (one row per block) and the tile kernel (several rows per block), each
    with the row in one power-of-two block and, where that takes fewer lanes, as a head of half
    that block and a power-of-two tail (``Backend.tail_block``); rows that are not 16-byte
    aligned also through aligned windows (``VEC``) and, in tiles of several rows, from their
    aligned bodies (``BODY``; ``y`` is laid out like ``x``). Grids of 1 to 128 programs per SM: the
    launcher runs at least 128 per SM for programs under 16 warps (``MIN_PROGRAMS_PER_SM``)."""
    m, n = x.shape
    full, tail = triton.next_power_of_2(n), head_tail(n)
    blocks = [(full, 0)] + ([(full // 2, tail)] if tail else [])
    for (block_n, tail_n), elems, warps, stages, per_sm in itertools.product(
            blocks, (512, 1024, 2048, 4096, 8192), (1, 2, 4, 8, 16, 32), (1, 2),
            (1, 4, 16, 32, 64, 128)):
        block_m = max(1, elems // full)
        if block_m == 1 and elems > full:
            continue
        if block_m * (block_n + tail_n) // (warps * 32) > 64:  # more than registers hold
            continue
        grid = (min(sms * per_sm, triton.cdiv(m, block_m)),)
        kernel = K.softmax_tile_kernel if block_m > 1 else K.softmax_row_kernel
        for vec, body in _tile_reads(x, lay, block_m, block_n, tail_n):
            tile = {"VEC": vec, "ALIGN": _align(x, lay, vec)}
            if block_m > 1:
                tile.update(BLOCK_M=block_m, BODY=body, Y_LIKE_X=body)

            def run(kernel=kernel, grid=grid, tile=tile, block_n=block_n, tail_n=tail_n,
                    warps=warps, stages=stages) -> None:
                kernel[grid](y, x, *_rows(lay), *lay.y_strides, 1.0, BLOCK_N=block_n,
                             TAIL_N=tail_n, INDEX_64=False, LOG=False, STORE_CACHE=STORE,
                             num_warps=warps, num_stages=stages, enable_fp_fusion=FUSION,
                             **tile)
            yield (f"BLOCK_M={block_m} BLOCK_N={block_n}+{tail_n} warps={warps} "
                   f"stages={stages} programs/SM={per_sm} VEC={vec} BODY={body}", run)


def online_configs(x: torch.Tensor, y: torch.Tensor, lay: RowLayout,
                   sms: int) -> Iterator[tuple[str, Callable]]:
    """The looped kernel: chunk length, warps, stages, programs per SM (16: the launcher's
    waves for wide programs), L2 eviction policies of its two reads, aligned bodies, one
    running max and sum or one per element of a vector load (``STAT_LANES``), and the rest of a
    row in whole chunks or in the last chunk of ``CudaBackend.last_chunk`` (``LAST_N``), with
    or without a cap of 64 registers a thread (programs of 16 warps, as the launcher caps)."""
    # Chunks are far longer than a vector: windows fit all of them or none.
    vecs = _vecs(x, lay, "online", 1, 8192)
    per_thread = 16 // x.element_size()
    for block_n, warps, stages, per_sm, evict, vec, form, last, cap in itertools.product(
            (8192, 16384, 32768), (8, 16, 32), (1, 2), (1, 2, 16), (False, True), vecs,
            ("one", "lanes"), (False, True), (None, 64)):
        if block_n // (warps * 32) > 64:  # more elements a thread than registers hold
            continue
        if cap is not None and warps != 16:  # where the launcher caps (CudaBackend.options)
            continue
        grid = (min(sms * per_sm, x.shape[0]),)
        first, second = (FIRST_EVICT, SECOND_EVICT) if evict else ("", "")
        lanes = {"one": 0, "lanes": min(block_n, warps * 32 * per_thread)}[form]
        last_n = CudaBackend().last_chunk(lay.n_cols, block_n) if last else 0
        if last and not last_n:
            continue
        last_n = max(last_n, lanes) if last_n else block_n
        opts = {"ALIGN": _align(x, lay, vec), "num_warps": warps, "num_stages": stages,
                "enable_fp_fusion": FUSION}
        if cap:
            opts["maxnreg"] = cap

        def run(block_n=block_n, grid=grid, first=first, second=second, vec=vec,
                lanes=lanes, last_n=last_n, opts=opts) -> None:
            K.softmax_online_kernel[grid](y, x, *_rows(lay), *lay.y_strides, 1.0,
                                          BLOCK_N=block_n, LAST_N=last_n, INDEX_64=False,
                                          LOG=False, FIRST_EVICT=first, SECOND_EVICT=second,
                                          STORE_CACHE=STORE, VEC=vec, STAT_LANES=lanes,
                                          Y_LIKE_X=vec > 1,
                                          WORDS=vec > 1 and x.dtype == torch.bfloat16,
                                          **opts)
        yield (f"BLOCK_N={block_n} LAST_N={last_n} warps={warps} stages={stages} "
               f"maxnreg={cap} programs/SM={per_sm} evict={first or 'default'}/"
               f"{second or 'default'} VEC={vec} STAT_LANES={lanes}", run)


def split_configs(x: torch.Tensor, y: torch.Tensor, lay: RowLayout,
                  sms: int) -> Iterator[tuple[str, Callable]]:
    """The two split kernels: chunk length, warps, stages, splits per row, aligned windows."""
    m, n = x.shape
    vecs = _vecs(x, lay, "split", 1, 2048)  # as in online_configs
    for block_n, warps, stages, splits, vec in itertools.product(
            (2048, 4096), (8, 16), (1, 2), (32, 64, 128, 256), vecs):
        if triton.cdiv(n, block_n) < splits:
            continue
        cols = triton.cdiv(triton.cdiv(n, splits), block_n) * block_n
        parts = torch.empty(2 * m * splits, device=x.device)
        grid = (min(m * splits, sms * 8),)
        opts = {"BLOCK_N": block_n, "INDEX_64": False, "N_SPLITS": splits, "PDL": False,
                "VEC": vec, "ALIGN": _align(x, lay, vec), "num_warps": warps, "num_stages": stages,
                "enable_fp_fusion": FUSION}

        def run(parts=parts, grid=grid, cols=cols, opts=opts, like=vec > 1) -> None:
            K.softmax_split_stats_kernel[grid](parts, x, *_rows(lay), cols, 1.0,
                                               EVICT=FIRST_EVICT, **opts)
            K.softmax_split_norm_kernel[grid](y, parts, x, *_rows(lay), *lay.y_strides, cols,
                                              1.0, LOG=False, EVICT=SECOND_EVICT,
                                              STORE_CACHE=STORE, Y_LIKE_X=like, **opts)
        yield f"BLOCK_N={block_n} warps={warps} stages={stages} splits={splits} VEC={vec}", run


def sweep(shapes: list[tuple[int, int]], configs: Configs, dtype: torch.dtype, sms: int,
          top: int) -> None:
    """Time every configuration on each shape; print the ``top`` best beside the copy roof."""
    for m, n in shapes:
        x = torch.randn(m, n, device="cuda").to(dtype)
        y = torch.empty_like(x)
        lay = row_layout(x.shape, 1, x.stride(), y.stride())
        nbytes = 2 * x.numel() * x.element_size()
        roof = gbps(nbytes, time_ms(lambda: y.copy_(x)))  # noqa: B023 (called here)
        results = []
        for label, run in configs(x, y, lay, sms):
            try:
                results.append((gbps(nbytes, time_ms(run, warmup_ms=5, rep_ms=20)), label))
            except Exception as e:  # out of resources for this configuration
                print(f"   skip {label}: {type(e).__name__}")
        results.sort(reverse=True)
        api = gbps(nbytes, time_ms(lambda: npu_softmax.softmax(x, -1)))  # noqa: B023
        ref = gbps(nbytes, time_ms(lambda: torch.softmax(x, -1)))  # noqa: B023
        print(f"({m}, {n}) {dtype}: copy {roof:.0f} GB/s, torch.softmax {ref:.0f}, "
              f"npu_softmax.softmax (the launcher's plan) {api:.0f}")
        for g, label in results[:top]:
            print(f"   {g:7.0f} GB/s  {100 * g / roof:4.0f}%  {label}")


def host_costs() -> None:
    """Host microseconds per call of each layer of a softmax on a 4x128 tensor."""
    x = torch.randn(4, 128, device="cuda")
    xg = x.clone().requires_grad_()
    y = torch.empty_like(x)
    lay = row_layout(x.shape, 1, x.stride(), y.stride())
    npu_softmax.softmax(x, -1)
    kept = eager._calls[eager.forward_signature(x, -1, None, None, None, False)].launch
    align = _align(x, lay)

    def per_call(fn: Callable[[], object], calls: int = 3000) -> float:
        for _ in range(100):
            fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / calls * 1e6

    layers = {
        "torch.softmax": lambda: torch.softmax(x, -1),
        "npu_softmax.softmax (repeat)": lambda: npu_softmax.softmax(x, -1),
        "torch.softmax, input requires grad": lambda: torch.softmax(xg, -1),
        "npu_softmax, input requires grad": lambda: npu_softmax.softmax(xg, -1),
        "custom op (compiled code's path)": lambda: torch.ops.npu_softmax.softmax(x, 1, None, 1.0,
                                                                                 None),
        "launcher.launch_softmax (plans)": lambda: launcher.launch_softmax(x, y, lay),
        "kept Launch(x, y)": lambda: kept(x, y),
        "Triton kernel[grid](...)": lambda: K.softmax_row_kernel[(4,)](
            y, x, *_rows(lay), *lay.y_strides, 1.0, BLOCK_N=128, TAIL_N=0, INDEX_64=False,
            LOG=False, STORE_CACHE=STORE, VEC=1, ALIGN=align, num_warps=4, num_stages=1,
            enable_fp_fusion=FUSION),
        "eager.forward_signature": lambda: eager.forward_signature(x, -1, None, None, None,
                                                                  False),
        "torch.empty": lambda: torch.empty((4, 128), dtype=torch.float32, device=x.device),
    }
    for name, fn in layers.items():
        try:
            print(f"  {name:34s} {per_call(fn):6.1f} us/call")
        except Exception as e:
            print(f"  {name:34s} failed: {type(e).__name__}: {e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--variant", choices=["tile", "online", "split", "host"], action="append")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], action="append")
    parser.add_argument("--top", type=int, default=4)
    parser.add_argument("--shapes", help="these MxN shapes instead of each variant's list, "
                        "e.g. 4096x32768,64x65536")
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plans = {"tile": (TILE_SHAPES, tile_configs), "online": (ONLINE_SHAPES, online_configs),
             "split": (SPLIT_SHAPES, split_configs)}
    if args.shapes:
        wanted = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",")]
        for shapes, _ in plans.values():
            shapes[:] = wanted
    print(torch.cuda.get_device_name(), f"{sms} SMs", "triton", triton.__version__)
    for variant in args.variant or ["host", "tile", "online", "split"]:
        if variant == "host":
            host_costs()
            continue
        shapes, configs = plans[variant]
        for dname in args.dtype or ["float32", "bfloat16"]:
            sweep(shapes, configs, getattr(torch, dname), sms, args.top)


if __name__ == "__main__":
    main()
