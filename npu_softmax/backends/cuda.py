"""NVIDIA (and AMD, through Triton's HIP backend) GPUs: register tiles, occupancy-sized grids."""

from __future__ import annotations

from typing import Any

from .. import _compat
from .base import Backend

#: Resident threads per SM on every NVIDIA GPU since Volta (and per CU on AMD CDNA).
MAX_THREADS_PER_SM = 2048


class CudaBackend(Backend):
    """Tiles live in registers; the grid is as many programs as the SMs keep resident."""

    def __init__(self, name: str = "cuda") -> None:
        self.name = name

    # Sizes below come from scripts/tune.py on an H100 (2026-11-22): a row of up to 32768
    # elements held in registers by one program (32 warps from 32768) runs at 95-99% of the
    # copy roof (65536 falls to 66%: longer rows loop); short rows do
    # best in tiles of about 4096 elements; the online kernel in chunks of 8192 (16 warps), the
    # split kernels in chunks of 4096 (8 warps).
    def tile_elems(self, itemsize: int) -> int:
        return 32768

    def rows_tile_elems(self, itemsize: int) -> int:
        return 4096

    def chunk_elems(self, itemsize: int, variant: str) -> int:
        return 8192 if variant == "online" else 4096

    def core_count(self, device_index: int) -> int:
        return _compat.device_properties(device_index)["multiprocessor_count"]

    def options(self, block_elems: int) -> dict[str, Any]:
        # 4 warps for small tiles, 8 from 4096 elements, 16 from 8192, 32 from 32768. One stage:
        # the persistent loop keeps enough rows in flight through occupancy instead.
        warps = 4 if block_elems < 4096 else 8 if block_elems < 8192 else 16
        if block_elems >= 32768:
            warps = 32
        return {"num_warps": warps, "num_stages": 1}

    def max_programs(self, kernel: Any, args: tuple, constexprs: dict[str, Any],
                     options: dict[str, Any], device_index: int) -> int:
        # As the upstream fused-softmax tutorial: compile once, then read how many programs of
        # this register and shared-memory footprint fit on one SM.
        props = _compat.device_properties(device_index)
        n_regs, smem = _compat.compile_for_occupancy(kernel, args, constexprs, options)
        threads = options["num_warps"] * props["warpSize"]
        occupancy = min(props["max_num_regs"] // max(1, n_regs * threads),
                        MAX_THREADS_PER_SM // threads)
        if smem > 0:
            occupancy = min(occupancy, props["max_shared_mem"] // smem)
        return props["multiprocessor_count"] * max(1, occupancy)
