"""NVIDIA (and AMD, through Triton's HIP backend) GPUs: register tiles, occupancy-sized grids."""

from __future__ import annotations

from typing import Any

import triton

from .. import _compat
from .base import Backend


class CudaBackend(Backend):
    """Tiles live in registers; the grid is as many programs as the SMs keep resident."""

    def __init__(self, name: str = "cuda") -> None:
        self.name = name

    def tile_elems(self, itemsize: int) -> int:
        # 32 KiB of input per program iteration: 16 elements per thread at 16 warps (fp32).
        return (32 * 1024) // itemsize

    def chunk_elems(self, itemsize: int) -> int:
        return (16 * 1024) // itemsize

    def core_count(self, device_index: int) -> int:
        return _compat.device_properties(device_index)["multiprocessor_count"]

    def options(self, block_elems: int) -> dict[str, Any]:
        # About 8-16 elements per thread; a warp is 32 (CUDA) or 64 (HIP) lanes.
        lanes = 64 if self.name == "hip" else 32
        warps = triton.next_power_of_2(max(1, block_elems // (8 * lanes)))
        return {"num_warps": min(16, warps), "num_stages": 1}

    def max_programs(self, kernel: Any, args: tuple, constexprs: dict[str, Any],
                     options: dict[str, Any], device_index: int) -> int:
        # As the upstream fused-softmax tutorial: compile once, then read how many programs of
        # this register and shared-memory footprint fit on one SM.
        props = _compat.device_properties(device_index)
        n_regs, smem = _compat.compile_for_occupancy(kernel, args, constexprs, options)
        threads = options["num_warps"] * props["warpSize"]
        occupancy = props["max_num_regs"] // max(1, n_regs * threads)
        if smem > 0:
            occupancy = min(occupancy, props["max_shared_mem"] // smem)
        return props["multiprocessor_count"] * max(1, occupancy)
