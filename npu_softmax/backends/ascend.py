"""Huawei Ascend NPUs through triton-ascend: one program per vector core, tiles sized to the UB.

Softmax is vector-only work (it compiles to ``mix_mode = "aiv"``), so the grid is the number of
vector cores and each program loops over its share of rows. Each core's unified buffer (UB) holds
a program's tiles; with double buffering (``multibuffer``, on by default) a tile may use half of
it. ``num_warps``/``num_stages`` mean nothing there and are never passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _compat
from ..layout import RowLayout
from .base import Backend

if TYPE_CHECKING:
    from ..launcher import Plan

#: Unified buffer per vector core, bytes, by chip family (prefix of the arch name), as the chip
#: specs of bishengir-compile 1.2 give it (``UB_SIZE``; checked by scripts/compile_ascend.py).
#: A5 (Ascend 950, which triton-ascend and bishengir call ``Ascend910_95xx``/``Ascend950*``) has
#: 256 KiB, of which 248 KiB are left to a kernel.
UB_BYTES = {
    "Ascend910B": 192 * 1024,
    "Ascend910_93": 192 * 1024,
    "Ascend910_95": 248 * 1024,
    "Ascend950": 248 * 1024,
}
#: Used for an arch not in the table: the smallest UB of the chips above.
DEFAULT_UB_BYTES = 192 * 1024
#: Live fp32 copies of a tile inside a kernel (loaded row, exp, scaled result). Calibrated with
#: bishengir's memory plans (scripts/compile_ascend.py): the largest tiles this allows (8192
#: elements) plan at most 24 bytes per element with multi-buffering, 2 x 3 x 4.
TILE_COPIES = 3
#: UB is allocated in 32-byte blocks, and bishengir's plan gives each row of a 2-d tile of short
#: rows two blocks per copy: a 512 x 2 fp32 tile plans 189 KB, about 370 bytes a row. So a row
#: counts as at least 64 bytes per copy; without that, a 4096 x 2 tile of rows from a sliced
#: 3-d view needs 672 KB of UB.
MIN_ROW_BYTES = 64
#: Most elements a tile or chunk may have when row elements are not contiguous (softmax over an
#: inner dim). bishengir for A2/A3 lowers such loads and stores element by element and plans
#: 64-160 UB bytes per element (a 4096-element tile needs 262-1050 KB); 1024-element tiles and
#: chunks plan at most 189 KB (multi-buffered) on 910B.
STRIDED_TILE_ELEMS = 1024
#: Chips whose bishengir plans strided rows like contiguous ones (A5: 8-17 bytes per element).
STRIDED_LIKE_CONTIGUOUS = ("Ascend910_95", "Ascend950")
#: Bytes of the contiguous run of a ``cols`` tile's row (``column_lanes``): the neighbouring rows
#: of a group, side by side in memory, move to the UB by DMA in runs this long (bishengir lowers
#: such tiles to 2-d copies, ``load_gm_to_ubuf_2d``, where a strided row is copied element by
#: element). Not timed on an NPU: eight 32-byte UB blocks, so that a run is long beside its
#: alignment.
COLUMN_RUN_BYTES = 256
#: The UB is allocated in blocks of this many bytes: each run of a tile's fp32 copy takes at least
#: one (bishengir planned tiles of 2- and 4-row groups at 64-96 bytes a row).
UB_BLOCK_BYTES = 32
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

    def __init__(self, arch: str, multibuffer: bool = True, strided: bool = False,
                 strided_groups: bool = False, streams: int = 1) -> None:
        self.arch = arch
        self.multibuffer = multibuffer
        self.strided = strided  # rows whose elements are not contiguous
        # Groups of rows (cols tiles) whose neighbours are not contiguous in some tensor.
        self.strided_groups = strided_groups
        self.streams = streams  # tensors read per element

    def for_layout(self, layout: RowLayout, itemsize: int, streams: int = 1) -> AscendBackend:
        if self.arch.startswith(STRIDED_LIKE_CONTIGUOUS):
            strided = strided_groups = False
        else:
            cols = layout.columns()
            strided = layout.strided_rows()
            strided_groups = cols.x_strides[1] != 1 or cols.y_strides[1] != 1
        if (strided, strided_groups, streams) == (self.strided, self.strided_groups,
                                                  self.streams):
            return self
        return AscendBackend(self.arch, self.multibuffer, strided, strided_groups, streams)

    def row_align(self, layout: RowLayout, itemsize: int, vec: int = 1) -> int:
        # Rows move to the unified buffer by DMA, not in per-thread vectors, so the hint has
        # nothing to enable there; without it the NPU binaries stay the ones the offline compile
        # check covers.
        return 1

    def tile_budget_bytes(self) -> int:
        """UB bytes one tile may use: all of it, or half under double buffering."""
        return ub_bytes(self.arch) // (2 if self.multibuffer else 1)

    def tile_elems(self, itemsize: int) -> int:
        # Arithmetic is fp32 whatever the input dtype, so the fp32 copies set the size.
        elems = self.tile_budget_bytes() // (TILE_COPIES * 4)
        if self.strided:
            elems = min(elems, STRIDED_TILE_ELEMS)
        return 1 << (elems.bit_length() - 1)

    def column_lanes(self, itemsize: int) -> int:
        return COLUMN_RUN_BYTES // itemsize

    def column_tile_elems(self, itemsize: int, lanes: int) -> int:
        # A tile is rows of ``lanes`` contiguous elements, planned as contiguous rows are: each
        # fp32 copy of a row takes whole UB blocks, and the tensors a kernel reads share the
        # UB. Where neighbours are apart (a transposed input's output), as strided rows.
        row_bytes = max(4 * lanes, UB_BLOCK_BYTES)
        elems = self.tile_budget_bytes() // (TILE_COPIES * row_bytes * self.streams) * lanes
        if self.strided_groups:
            elems = min(elems, STRIDED_TILE_ELEMS)
        return 1 << (elems.bit_length() - 1)

    def column_chunk_elems(self, itemsize: int, lanes: int) -> int:
        return self.column_tile_elems(itemsize, lanes)

    def rows_per_block(self, block_n: int, n_rows: int, n_cores: int, itemsize: int) -> int:
        # Short rows take MIN_ROW_BYTES of each copy, not 4 * block_n.
        row_elems = max(block_n, MIN_ROW_BYTES // 4)
        return super().rows_per_block(row_elems, n_rows, n_cores, itemsize)

    def tile_ub_bytes(self, block_m: int, block_n: int) -> int:
        """UB bytes a ``block_m x block_n`` tile (or chunk) takes by this model; reported by
        ``scripts/compile_ascend.py`` next to bishengir's memory plan."""
        row_bytes = max(4 * block_n, MIN_ROW_BYTES)
        return block_m * row_bytes * TILE_COPIES * (2 if self.multibuffer else 1)

    def core_count(self, device_index: int) -> int:
        return _compat.device_properties(device_index)["num_vectorcore"]

    def options(self, plan: Plan, itemsize: int) -> dict[str, Any]:
        return {"multibuffer": self.multibuffer}

    def max_programs(self, kernel: Any, args: tuple, constexprs: dict[str, Any],
                     options: dict[str, Any], device_index: int) -> int:
        return min(self.core_count(device_index), MAX_GRID)


