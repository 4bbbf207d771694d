"""Huawei Ascend NPUs through triton-ascend: one program per vector core, tiles sized to the UB.

Softmax is vector-only work (it compiles to ``mix_mode = "aiv"``), so the grid is the number of
vector cores and each program loops over its share of rows. Each core's unified buffer (UB) holds
a program's tiles; with double buffering (``multibuffer``, on by default) a tile may use half of
it. ``num_warps``/``num_stages`` mean nothing there and are never passed.
"""

from __future__ import annotations

from typing import Any

from .. import _compat
from .base import Backend

#: Unified buffer per vector core, bytes, by chip family (prefix of the arch name).
UB_BYTES = {
    "Ascend910B": 192 * 1024,
    "Ascend910_93": 192 * 1024,
}
#: Used for an arch not in the table: the smallest UB of the chips above.
DEFAULT_UB_BYTES = 192 * 1024
#: Live fp32 copies of a tile inside a kernel (loaded row, exp, scaled result).
TILE_COPIES = 3
#: triton-ascend rejects a grid larger than this.
MAX_GRID = 65535


def ub_bytes(arch: str) -> int:
    """Unified-buffer bytes per vector core of ``arch`` (e.g. ``"Ascend910B3"``)."""
    for prefix, size in UB_BYTES.items():
        if arch.startswith(prefix):
            return size
    return DEFAULT_UB_BYTES


class AscendBackend(Backend):
    """Sizing for triton-ascend's ``npu`` target."""

    name = "npu"
    max_grid = MAX_GRID

    def __init__(self, arch: str, multibuffer: bool = True) -> None:
        self.arch = arch
        self.multibuffer = multibuffer

    def tile_budget_bytes(self) -> int:
        """UB bytes one tile may use: all of it, or half under double buffering."""
        return ub_bytes(self.arch) // (2 if self.multibuffer else 1)

    def tile_elems(self, itemsize: int) -> int:
        # Arithmetic is fp32 whatever the input dtype, so the fp32 copies set the size.
        elems = self.tile_budget_bytes() // (TILE_COPIES * 4)
        return 1 << (elems.bit_length() - 1)

    def tile_ub_bytes(self, block_elems: int) -> int:
        """UB bytes a kernel whose tile (or chunk) has ``block_elems`` elements uses, by this
        model; ``scripts/compile_ascend.py`` checks it against bishengir's memory plan."""
        return block_elems * TILE_COPIES * 4 * (2 if self.multibuffer else 1)

    def core_count(self, device_index: int) -> int:
        return _compat.device_properties(device_index)["num_vectorcore"]

    def options(self, block_elems: int) -> dict[str, Any]:
        return {"multibuffer": self.multibuffer}

    def max_programs(self, kernel: Any, args: tuple, constexprs: dict[str, Any],
                     options: dict[str, Any], device_index: int) -> int:
        return min(self.core_count(device_index), MAX_GRID)


