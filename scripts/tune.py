"""Sweep the launch parameters of each kernel variant on the device here, to choose the backend's
constants (tile sizes, rows per block, warps, pipeline stages, programs per core).

Calls the Triton kernels directly (no API, no cache), so every point is one configuration. Prints
GB/s = (read + write) / median time per configuration, best first per shape, then the host cost
of each layer of a call on a tiny tensor.

    python scripts/tune.py [--variant tile|online|split|host] [--dtype float32|bfloat16]
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch
import triton

import npu_softmax
from npu_softmax import kernels as K
from npu_softmax import launcher
from npu_softmax.layout import row_layout
from npu_softmax.timing import gbps, time_ms

TILE_SHAPES = [(32768, 128), (65536, 64), (16384, 512), (1823, 781), (4096, 1024),
               (4096, 4096), (4096, 8192), (1024, 16384), (4096, 32768), (64, 65536)]
ONLINE_SHAPES = [(4096, 32768), (64, 65536), (1024, 131072), (256, 151936)]
SPLIT_SHAPES = [(1, 151936), (8, 151936), (32, 151936), (16, 262144), (4, 1048576)]


def _args(x: torch.Tensor, y: torch.Tensor) -> tuple:
    lay = row_layout(x.shape, 1, x.stride(), y.stride())
    return lay, (y, x, lay.n_rows, lay.n_cols, lay.n_inner, *lay.x_strides, *lay.y_strides, 1.0)


def _report(shape: tuple, dtype: torch.dtype, results: list[tuple[float, str]], roof: float,
            top: int) -> None:
    results.sort(reverse=True)
    print(f"{shape} {dtype}: copy {roof:.0f} GB/s")
    for g, cfg in results[:top]:
        print(f"   {g:7.0f} GB/s  {100 * g / roof:4.0f}%  {cfg}")


def tune_tile(dtype: torch.dtype, sms: int, top: int) -> None:
    for m, n in TILE_SHAPES:
        x = torch.randn(m, n, device="cuda").to(dtype)
        y = torch.empty_like(x)
        lay, args = _args(x, y)
        nbytes = 2 * x.numel() * x.element_size()
        roof = gbps(nbytes, time_ms(lambda: y.copy_(x)))  # noqa: B023
        block_n = triton.next_power_of_2(n)
        results = []
        for elems, warps, stages, per_sm in itertools.product(
                (1024, 2048, 4096, 8192), (2, 4, 8, 16, 32), (1, 2), (1, 2, 4, 8, 16)):
            block_m = max(1, elems // block_n)
            if block_m == 1 and elems > block_n:
                continue
            grid = (min(sms * per_sm, triton.cdiv(m, block_m)),)
            tile = {"BLOCK_M": block_m} if block_m > 1 else {}
            kernel = K.softmax_tile_kernel if block_m > 1 else K.softmax_row_kernel
            def run() -> None:
                kernel[grid](*args, BLOCK_N=block_n, INDEX_64=False, LOG=False,  # noqa: B023
                             num_warps=warps, num_stages=stages, **tile)  # noqa: B023
            try:
                g = gbps(nbytes, time_ms(run, warmup_ms=5, rep_ms=20))
            except Exception as e:  # out of resources for this configuration
                print(f"   skip bm={block_m} w={warps} s={stages}: {type(e).__name__}")
                continue
            results.append((g, f"BLOCK_M={block_m} warps={warps} stages={stages} "
                               f"programs/SM={per_sm}"))
        _report((m, n), dtype, results, roof, top)


def tune_online(dtype: torch.dtype, sms: int, top: int) -> None:
    for m, n in ONLINE_SHAPES:
        x = torch.randn(m, n, device="cuda").to(dtype)
        y = torch.empty_like(x)
        lay, args = _args(x, y)
        nbytes = 2 * x.numel() * x.element_size()
        roof = gbps(nbytes, time_ms(lambda: y.copy_(x)))  # noqa: B023
        results = []
        for block_n, warps, stages, per_sm in itertools.product(
                (2048, 4096, 8192), (4, 8, 16), (1, 2, 3), (1, 2, 4)):
            grid = (min(sms * per_sm, m),)
            def run() -> None:
                K.softmax_online_kernel[grid](*args, BLOCK_N=block_n, INDEX_64=False,  # noqa: B023
                                              LOG=False, num_warps=warps,  # noqa: B023
                                              num_stages=stages)  # noqa: B023
            try:
                g = gbps(nbytes, time_ms(run, warmup_ms=5, rep_ms=20))
            except Exception as e:
                print(f"   skip bn={block_n} w={warps} s={stages}: {type(e).__name__}")
                continue
            results.append((g, f"BLOCK_N={block_n} warps={warps} stages={stages} "
                               f"programs/SM={per_sm}"))
        _report((m, n), dtype, results, roof, top)


def tune_split(dtype: torch.dtype, sms: int, top: int) -> None:
    for m, n in SPLIT_SHAPES:
        x = torch.randn(m, n, device="cuda").to(dtype)
        y = torch.empty_like(x)
        lay, _ = _args(x, y)
        nbytes = 2 * x.numel() * x.element_size()
        roof = gbps(nbytes, time_ms(lambda: y.copy_(x)))  # noqa: B023
        results = []
        for block_n, warps, stages, splits in itertools.product(
                (2048, 4096), (8, 16), (1, 2), (32, 64, 128, 256)):
            if triton.cdiv(n, block_n) < splits:
                continue
            split_cols = triton.cdiv(triton.cdiv(n, splits), block_n) * block_n
            pm = torch.empty((m, splits), device="cuda")
            ps = torch.empty_like(pm)
            grid = (min(m * splits, sms * 8),)
            rows = (lay.n_rows, lay.n_cols, lay.n_inner)
            opts = {"BLOCK_N": block_n, "INDEX_64": False, "N_SPLITS": splits,
                    "num_warps": warps, "num_stages": stages}
            def run() -> None:
                K.softmax_split_stats_kernel[grid](pm, ps, x, *rows, *lay.x_strides,  # noqa: B023
                                                   split_cols, 1.0, **opts)  # noqa: B023
                K.softmax_split_norm_kernel[grid](y, pm, ps, x, *rows, *lay.x_strides,  # noqa: B023
                                                  *lay.y_strides, split_cols, 1.0,  # noqa: B023
                                                  LOG=False, **opts)  # noqa: B023
            try:
                g = gbps(nbytes, time_ms(run, warmup_ms=5, rep_ms=20))
            except Exception as e:
                print(f"   skip bn={block_n} w={warps}: {type(e).__name__}")
                continue
            results.append((g, f"BLOCK_N={block_n} warps={warps} stages={stages} "
                               f"splits={splits}"))
        _report((m, n), dtype, results, roof, top)


def host_costs() -> None:
    x = torch.randn(4, 128, device="cuda")
    y = torch.empty_like(x)
    lay, args = _args(x, y)

    def per_call(fn, calls: int = 3000) -> float:
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
        "npu_softmax.softmax": lambda: npu_softmax.softmax(x, -1),
        "torch.ops.npu_softmax.softmax": lambda: torch.ops.npu_softmax.softmax(x, 1, None, 1.0,
                                                                                 None),
        "launcher.launch_softmax": lambda: launcher.launch_softmax(x, y, lay),
        "kernel[grid](...)": lambda: K.softmax_tile_kernel[(1,)](
            *args, BLOCK_M=4, BLOCK_N=128, INDEX_64=False, LOG=False, num_warps=1,
            num_stages=1),
        "launcher.kernels (dict lookup)": lambda: launcher.kernels.get(None),
        "torch.empty_like": lambda: torch.empty_like(x),
    }
    for name, fn in layers.items():
        try:
            print(f"  {name:32s} {per_call(fn):6.1f} us/call")
        except Exception as e:
            print(f"  {name:32s} failed: {type(e).__name__}: {e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--variant", choices=["tile", "online", "split", "host"], action="append")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], action="append")
    parser.add_argument("--top", type=int, default=4)
    parser.add_argument("--shapes", help="only these MxN shapes, e.g. 4096x32768,64x65536")
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if args.shapes:
        wanted = {tuple(map(int, s.split("x"))) for s in args.shapes.split(",")}
        for shapes in (TILE_SHAPES, ONLINE_SHAPES, SPLIT_SHAPES):
            shapes[:] = [s for s in shapes if s in wanted]
    print(torch.cuda.get_device_name(), f"{sms} SMs", "triton", triton.__version__)
    for variant in args.variant or ["host", "tile", "online", "split"]:
        if variant == "host":
            host_costs()
            continue
        for dname in args.dtype or ["float32", "bfloat16"]:
            {"tile": tune_tile, "online": tune_online, "split": tune_split}[variant](
                getattr(torch, dname), sms, args.top)


if __name__ == "__main__":
    main()
