"""Triton's CPU interpreter (``TRITON_INTERPRET=1``): programs run one after another in numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Backend, stat_lanes_per_vector

if TYPE_CHECKING:
    from ..launcher import Plan


class InterpreterBackend(Backend):
    """Large tiles (numpy is fastest on big arrays) and a small grid (programs run serially)."""

    name = "cpu"
    #: A few programs, so the persistent loop is exercised; more would only add overhead.
    programs = 4
    #: Tail blocks wherever they save lanes, so the tests run both forms of the tile kernels.
    tail_from = 1
    #: Short last chunks wherever they save lanes, so the tests run the online kernel's last
    #: chunks at many sizes.
    min_last_chunk = 64
    #: ``cols`` kernels compiled for one form of rows where CUDA's are, so the tests run the
    #: kernel in each of its three forms.
    column_forms_from = 4

    def windows(self, plan: Plan, itemsize: int) -> bool:
        # Wherever they apply, so the tests run the 16-byte vector form of every kernel (aligned
        # windows, aligned bodies).
        return True

    def body_rows(self, block_n: int, itemsize: int) -> bool:
        # Where CUDA reads rows from their bodies (2-byte rows in blocks of 512 lanes, here
        # those without a tail: 385-512 elements), so the tests run both forms of the tile
        # kernel's vector reads.
        return itemsize == 2 and block_n == 512

    def stat_lanes(self, plan: Plan, itemsize: int) -> int:
        # CUDA's rule (``CudaBackend.stat_lanes``) on a 128-thread program, so the tests run
        # both forms of the online kernel's first pass.
        return stat_lanes_per_vector(plan, itemsize, threads=128)

    def whole_row_words(self, plan: Plan) -> bool:
        # Wherever they apply, so the tests run the words on whole rows too.
        return True

    def tile_elems(self, itemsize: int) -> int:
        return 1 << 15

    def chunk_elems(self, itemsize: int, variant: str, n_cols: int) -> int:
        # Small enough that the looped kernels run several chunks on test-sized rows.
        return 1 << 11

    def column_lanes(self, itemsize: int) -> int:
        # Small groups, tiles and chunks, so that test-sized rows run every form of the column
        # kernels (whole, looped, split).
        return 4

    def column_tile_elems(self, itemsize: int, lanes: int) -> int:
        return 1 << 11

    def column_chunk_elems(self, itemsize: int, lanes: int) -> int:
        return 1 << 8

    def core_count(self, device_index: int) -> int:
        return self.programs

    def max_programs(self, kernel: Any, args: tuple, constexprs: dict[str, Any],
                     options: dict[str, Any], device_index: int) -> int:
        return self.programs
