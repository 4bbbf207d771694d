"""NVIDIA (and AMD, through Triton's HIP backend) GPUs: register tiles, occupancy-sized grids."""

from __future__ import annotations

from typing import Any

from .. import _compat
from .base import Backend

#: Resident threads per SM on every NVIDIA GPU since Volta (and per CU on AMD CDNA).
MAX_THREADS_PER_SM = 2048
#: Programs of 16 or more warps (a row or chunk of 8192+ elements each) are launched this many
#: times over what the SMs hold at once; each still loops, but the hardware scheduler, not the
#: fixed round-robin, then evens out the last rows. Measured through the API on the H100
#: (2026-11-22, docs/tuning.md): 4096x8192 fp32 2738 -> 2825 GB/s, bf16 2573 -> 2701, 4096x32768
#: fp32 2817 -> 2926; tiles of short rows gain nothing or lose, so they keep one wave.
WIDE_PROGRAM_WAVES = 16


class CudaBackend(Backend):
    """Tiles live in registers; the grid is as many programs as the SMs keep resident."""

    #: Several programs share an SM, so short rows are cut into at least 4 row blocks per SM
    #: (measured through the API on the H100, 2026-11-22: 4096x128 fp32 512 -> 683 GB/s,
    #: 4096x256 923 -> 1074, 1000x300 325 -> 369, against torch's 636, 975 and 347).
    row_blocks_per_core = 4

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

    def options(self, block_m: int, block_n: int, itemsize: int) -> dict[str, Any]:
        # 4 warps for small tiles, 8 from 4096 elements, 16 from 8192, 32 from 32768; but 4 for
        # a tile of several float32 rows up to 4096 elements (measured through the API on the
        # H100, 2026-11-22: 32768x128 2106 against 1876 GB/s with 8, 4096x1024 2032 against
        # 1859; bfloat16 tiles do better with 8). One stage: the persistent loop keeps enough
        # rows in flight through occupancy instead.
        elems = block_m * block_n
        warps = 4 if elems < 4096 else 8 if elems < 8192 else 16 if elems < 32768 else 32
        if block_m > 1 and itemsize >= 4 and elems <= 4096:
            warps = 4
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
        waves = WIDE_PROGRAM_WAVES if options["num_warps"] >= 16 else 1
        return props["multiprocessor_count"] * max(1, occupancy) * waves
