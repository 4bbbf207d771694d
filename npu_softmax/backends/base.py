"""What the launcher asks of a target."""

from __future__ import annotations

from typing import Any

import triton

from ..layout import RowLayout


class Backend:
    """Sizing rules of one target family. Subclasses override what differs."""

    #: Name of the Triton backend (``"npu"``, ``"cuda"``, ``"hip"``, ``"cpu"``).
    name = "cpu"
    #: Largest grid the target accepts in one dimension.
    max_grid = 2**31 - 1
    #: Work items per core the split variant aims for (a few, so cores that finish early can
    #: take another; measured best on an H100).
    split_items_per_core = 4
    #: Row blocks per core the tile variant leaves at least, when rows are few enough that
    #: bigger blocks would leave fewer (one where a core runs one program).
    row_blocks_per_core = 1

    def for_layout(self, layout: RowLayout) -> Backend:
        """The sizing rules for rows laid out as ``layout`` (the same for every layout here)."""
        return self

    def tile_elems(self, itemsize: int) -> int:
        """Most elements one program may hold on chip in one iteration (a power of two)."""
        raise NotImplementedError

    def chunk_elems(self, itemsize: int, variant: str) -> int:
        """Chunk length of the looped kernels (``variant``: ``"online"`` or ``"split"``), a
        power of two."""
        return self.tile_elems(itemsize)

    def rows_tile_elems(self, itemsize: int) -> int:
        """Elements of a tile of several short rows (at most ``tile_elems``)."""
        return self.tile_elems(itemsize)

    def rows_per_block(self, block_n: int, n_rows: int, n_cores: int, itemsize: int) -> int:
        """How many whole rows of ``block_n`` columns the tile kernel takes per iteration.

        Enough rows that an iteration moves a useful number of bytes, but not so many that the
        cores run out of row blocks to share.
        """
        rows = max(1, self.rows_tile_elems(itemsize) // block_n)
        per_block = triton.next_power_of_2(triton.cdiv(n_rows, n_cores * self.row_blocks_per_core))
        return min(rows, per_block)

    def core_count(self, device_index: int) -> int:
        """Independent cores (SMs, vector cores) of the device."""
        raise NotImplementedError

    def options(self, block_m: int, block_n: int, itemsize: int) -> dict[str, Any]:
        """Compile options for a kernel whose tile is ``block_m x block_n`` elements of
        ``itemsize`` bytes (``block_m`` 1 for one row or one chunk)."""
        return {}

    def max_programs(self, kernel: Any, args: tuple, constexprs: dict[str, Any],
                     options: dict[str, Any], device_index: int) -> int:
        """How many programs of this compiled kernel the device runs at once."""
        raise NotImplementedError
