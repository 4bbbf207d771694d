"""What the launcher asks of a target."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import triton

from ..layout import RowLayout

if TYPE_CHECKING:
    from ..launcher import Plan


def head_tail(n_cols: int) -> int:
    """The power-of-two tail that follows a head of half the power-of-two block of ``n_cols``
    (9000: 1024 after 8192), or 0 where head and tail would take no fewer lanes than the block."""
    head = triton.next_power_of_2(n_cols) // 2
    tail = triton.next_power_of_2(n_cols - head) if head else 0
    return tail if tail < head else 0


def window_lanes(n_cols: int, itemsize: int) -> int:
    """Lanes the window of a row of ``n_cols`` elements of ``itemsize`` bytes takes: the row
    from any element of its first 16-byte block (``window_fit``)."""
    return n_cols + 16 // itemsize - 1


def window_fit(layout: RowLayout, plan: Plan, itemsize: int, bodies: bool = False) -> int:
    """The elements of 16 bytes where the kernels of ``plan`` can read the rows of ``layout``
    (input elements of ``itemsize`` bytes) through aligned windows (``kernels``' module
    docstring), 1 where they read rows as they are, on any target. With ``bodies`` (a tile of
    several rows read from each row's aligned body, ``Backend.tile_bodies``) every row that is
    not whole vectors fits, runs of 2-4 elements included.

    Windows need contiguous row elements (in the output too), and rows that are not whole
    runs of 8 bytes (``RowLayout.row_align``): rows of such runs load them through the kernels'
    ``ALIGN`` instead, which ran faster on the H100 (thirteenth session, docs/tuning.md, against
    windows: bf16 65536x100 1489 -> 1687 GB/s, 4096x4100 2114 -> 2391, 4096x50260 2328 -> 2461;
    fp32 65536x50 1591 -> 1747, 4096x4098 2204 -> 2276), and so do tiles of several rows of
    4-byte runs (bf16 65536x50 927 -> 1084); longer rows of 4-byte runs lost so (bf16 4096x10002
    2320 -> 1484, 2048x20002 2105 -> 1934) and keep windows. A tile of several rows must hold
    a row's window in its block, with no tail, and a chunk at least one vector. The row kernel
    (a tile of one row) holds the row's aligned body instead, which always fits.
    """
    vec = 16 // itemsize
    align = layout.row_align(itemsize)
    several_rows = plan.variant == "tile" and plan.block_m > 1
    if vec < 2 or plan.block_n < vec or align == vec or layout.strided_rows():
        return 1
    if bodies:
        return vec
    if align > 1 and (align * itemsize >= 8 or several_rows):
        return 1
    if several_rows and (plan.tail_n or window_lanes(layout.n_cols, itemsize) > plan.block_n):
        return 1
    return vec


def stat_lanes_per_vector(plan: Plan, itemsize: int, threads: int) -> int:
    """``Backend.stat_lanes`` for a program of ``threads`` threads that load 16-byte vectors,
    in the online kernel only: the elements of one such load of the whole program, a thread's
    vector of them sharing one running max and sum."""
    if plan.variant != "online":
        return 0
    return min(plan.block_n, threads * max(1, 16 // itemsize))


class Backend:
    """Sizing rules of one target family. Subclasses override what differs."""

    #: Name of the Triton backend (``"npu"``, ``"cuda"``, ``"hip"``, ``"cpu"``).
    name = "cpu"
    #: Largest grid the target accepts in one dimension.
    max_grid = 2**31 - 1
    #: Work items per core the split variant aims for (a few, so cores that finish early can
    #: take another; measured best on an H100).
    split_items_per_core = 4
    #: Shortest row given a tail block (``tail_block``); None: never.
    tail_from: int | None = None
    #: Fewest columns of the online kernel's chunks for the rest of a row after its whole
    #: chunks (``last_chunk``); None: the rest takes a whole chunk.
    min_last_chunk: int | None = None
    #: Whether the split variant's second kernel may be launched while the first still runs,
    #: waiting for it inside the kernel (CUDA's programmatic dependent launch), so the gap
    #: between the two launches overlaps the first one's last work.
    dependent_launch = False
    #: L2 eviction policies of the looped kernels' (online, split) first and second read of a
    #: row (``""``: the target's default).
    reread_eviction = ("", "")
    #: Cache modifier of the kernels' output stores (``""``: the target's default).
    output_cache = ""
    #: Elements of at least this many bytes get ``cols`` kernels (of one range per group)
    #: compiled for the form a call's rows take, held whole or looped over chunks; narrower
    #: ones, or all where None, get both forms in one kernel, which tests the row length as it
    #: runs (``column_form``).
    column_forms_from: int | None = None

    # By value: plans are cached per backend, and for_layout() may make new instances.
    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), *sorted(vars(self).items())))

    def for_device(self, device_index: int) -> Backend:
        """The sizing rules for one device of the target (what its properties change); the
        same for every device here."""
        return self

    def for_layout(self, layout: RowLayout, itemsize: int, streams: int = 1) -> Backend:
        """The sizing rules for rows laid out as ``layout``, of ``itemsize``-byte elements at
        most, read by kernels that take ``streams`` tensors per element (2: the backward's ``y``
        and ``dy``); the same for every layout here."""
        return self

    def row_align(self, layout: RowLayout, itemsize: int, vec: int = 1) -> int:
        """The kernels' ``ALIGN`` for rows of ``layout`` of ``itemsize``-byte elements at most,
        read with ``VEC`` = ``vec`` (``window_vec``): a number of elements, up to a 16-byte
        vector's, that divides the row length and every row stride (``RowLayout.row_align``),
        which the kernels state to Triton so that it can prove rows aligned to that many
        elements and load them in vectors of as many bytes; or 1 to state nothing, as for rows
        read through windows (``window_fit`` keeps them for long rows of 2-byte pairs only).

        Rows whose counts all divide by 16 get 1: Triton proves as much from its own
        specialisation, and the rewritten counts would hide their divisibility by 16. On the
        H100 stating it cost short rows 4-9% (twelfth session, docs/tuning.md: fp32 32768x128
        2110 -> 1931 GB/s, 4096x256 1083 -> 986).
        """
        if vec > 1 or layout.vector_rows(1):
            return 1
        return layout.row_align(itemsize)

    def row_blocks(self, block_n: int, itemsize: int) -> int:
        """Row blocks per core the tile variant leaves at least for rows of ``block_n`` columns,
        when rows are few enough that bigger blocks would leave fewer (one where a core runs one
        program)."""
        return 1

    def column_form(self, n_cols: int, block_c: int, itemsize: int) -> int:
        """The ``cols`` kernels' ``WHOLE`` for rows of ``n_cols`` elements of ``itemsize``
        bytes in tiles of ``block_c`` columns: 1 (held whole) or 0 (looped) where this target
        compiles the two forms apart (``column_forms_from``), else -1 (both compiled in, the
        length tested)."""
        if self.column_forms_from is None or itemsize < self.column_forms_from:
            return -1
        return int(n_cols <= block_c)

    def windows(self, plan: Plan, itemsize: int) -> bool:
        """Whether the kernels of ``plan`` read rows that do not start on a 16-byte boundary
        through aligned windows (``window_vec``); never here."""
        return False

    def window_vec(self, layout: RowLayout, plan: Plan, itemsize: int) -> int:
        """The kernels' ``VEC`` for ``plan`` on rows of ``layout`` whose input elements take
        ``itemsize`` bytes: ``window_fit``'s where this target ``windows`` the plan, else 1."""
        if not self.windows(plan, itemsize):
            return 1
        return window_fit(layout, plan, itemsize, self.tile_bodies(plan, itemsize))

    def tile_bodies(self, plan: Plan, itemsize: int) -> bool:
        """Whether the tile kernel reads the rows of ``plan`` that are not 16-byte aligned from
        their aligned bodies rather than through windows (``kernels.softmax_tile_kernel``'s
        ``BODY``), where it reads them as vectors at all (``window_vec``): tiles of several
        rows with no tail, in blocks the target reads so (``body_rows``)."""
        return (plan.variant == "tile" and plan.block_m > 1 and not plan.tail_n
                and self.body_rows(plan.block_n, itemsize))

    def body_rows(self, block_n: int, itemsize: int) -> bool:
        """Whether rows of ``itemsize``-byte elements in blocks of ``block_n`` lanes go in tiles
        read from each row's aligned body (``tile_bodies``); never here."""
        return False

    def stat_lanes(self, plan: Plan, itemsize: int) -> int:
        """Lanes in whose rows the online kernel's first pass reads a row of ``itemsize``-byte
        elements, each 16-byte vector of them keeping a running max and sum
        (``kernels._range_stats``): 0 for one max and sum, reduced at every chunk; here
        always."""
        return 0

    def word_reads(self, layout: RowLayout, plan: Plan, vec: int) -> bool:
        """Whether the online kernel's second pass reads bfloat16 rows of ``layout`` (with
        ``VEC`` = ``vec``) as 32-bit words (``kernels._store_words``): rows read from a body
        found from their address (``vec`` > 1), which is aligned for them, always; whole rows
        (``vec`` 1) where they are whole words (``layout.word_rows()``) and the target reads
        them so (``whole_row_words``). The launcher checks each call's input for a 4-byte
        aligned address."""
        return vec > 1 or (layout.word_rows() and self.whole_row_words(plan))

    def whole_row_words(self, plan: Plan) -> bool:
        """Whether the online kernel of ``plan`` reads whole bfloat16 rows that allow it as
        32-bit words (``word_reads``); never here."""
        return False

    def tile_elems(self, itemsize: int) -> int:
        """Most elements one program may hold on chip in one iteration (a power of two)."""
        raise NotImplementedError

    def online_rows(self, n_cols: int, itemsize: int) -> bool:
        """Whether rows of ``n_cols`` elements of ``itemsize`` bytes run the online kernel
        although they fit a tile, where the rows are at least as many as the cores (here:
        never)."""
        return False

    def split_rows(self, n_rows: int, n_cols: int, n_cores: int) -> bool:
        """Whether ``n_rows`` rows of ``n_cols`` elements, fewer than the ``n_cores`` cores,
        run the split variant although they fit a tile (here: never; rows past the tile
        always do)."""
        return False

    def chunk_elems(self, itemsize: int, variant: str, n_cols: int) -> int:
        """Chunk length of the looped kernels (``variant``: ``"online"`` or ``"split"``) for rows
        of ``n_cols`` elements, a power of two; never shorter for a longer row."""
        return self.tile_elems(itemsize)

    def split_items(self, itemsize: int) -> int:
        """Work items per core the split variant aims for with ``itemsize``-byte rows:
        ``split_items_per_core`` here."""
        return self.split_items_per_core

    def split_chunk(self, chunk: int, range_cols: int, itemsize: int) -> int:
        """Chunk length of the split variant whose work items each cover ``range_cols`` columns
        of a row in chunks of ``chunk`` (``chunk_elems``): a multiple of ``chunk`` no longer
        than the row; ``chunk`` here."""
        return chunk

    def last_chunk(self, n_cols: int, block_n: int) -> int:
        """Columns of the online kernel's chunks for what is left of a row of ``n_cols``
        elements after its whole ``block_n`` chunks: the power of two that holds it (at least
        ``min_last_chunk``), or 0 for a whole chunk, masked past the row's end, where that
        would be no smaller or the target takes none.

        The kernel reads a row's 16-byte aligned body, up to two vectors (16 elements) shorter
        than the row: a row fewer than 16 elements past whole chunks may have a body just short
        of them, whose rest is nearly a whole chunk, so such rows keep whole chunks. (Any
        ``LAST_N`` gives the right answer, the kernel loops over the rest; this is for speed.)
        """
        rest = n_cols % block_n
        if self.min_last_chunk is None or rest < 16:
            return 0
        last = max(triton.next_power_of_2(rest), self.min_last_chunk)
        return last if last < block_n else 0

    def rows_tile_elems(self, itemsize: int) -> int:
        """Elements of a tile of several short rows (at most ``tile_elems``)."""
        return self.tile_elems(itemsize)

    # The sizes of ``cols`` plans (``launcher.column_plan``).
    def column_lanes(self, itemsize: int) -> int:
        """Fewest neighbouring rows a ``cols`` group holds (where there are as many): the
        contiguous run each column of its tile loads."""
        raise NotImplementedError

    def column_min_lanes(self, itemsize: int, split: bool) -> int:
        """Fewest neighbouring rows a ``cols`` group may narrow down to where that holds its
        rows whole in a chunk (read once, not twice), ``split`` telling whether groups of
        ``column_lanes`` rows would be split between programs: ``column_lanes`` here, never
        fewer."""
        return self.column_lanes(itemsize)

    def column_tile_elems(self, itemsize: int, lanes: int) -> int:
        """Elements of a ``cols`` tile that holds its rows whole, for groups of at least
        ``lanes`` rows (``column_lanes``, or all the rows where there are fewer)."""
        raise NotImplementedError

    def column_chunk_elems(self, itemsize: int, lanes: int) -> int:
        """Elements of a ``cols`` chunk, for rows too long for ``column_tile_elems``."""
        raise NotImplementedError

    def column_holds_whole(self, itemsize: int, lanes: int, cols: int, split: bool,
                           groups: int, n_cores: int, n_cols: int) -> bool:
        """Whether a group of ``lanes`` rows of ``n_cols`` elements (``cols``: the power of two
        at or above it) holds its rows whole in one chunk, for rows too long for
        ``column_chunk_elems`` of the widest groups (``split``: whether those would be split
        between programs; ``groups``: how many groups of ``lanes`` rows there are, for
        ``n_cores`` cores): where they fit ``column_chunk_elems`` here."""
        return lanes * cols <= self.column_chunk_elems(itemsize, lanes)

    def column_loop_groups(self, itemsize: int, split: bool) -> tuple[int, int, int]:
        """Rows of a ``cols`` group whose rows no chunk holds whole (looped, read twice), the
        work items per core its split aims for, and the fewest chunks each split range must
        then hold, or the groups stay ``column_lanes`` rows wide (``split``: whether groups of
        ``column_lanes`` rows would be split between programs): ``column_lanes``,
        ``split_items_per_core`` and none here."""
        return self.column_lanes(itemsize), self.split_items_per_core, 0

    def tail_block(self, n_cols: int, itemsize: int) -> int:
        """Columns of the tail block for a row of ``n_cols`` elements that fits the tile, 0 for
        none (one power-of-two block).

        With ``tail_from`` set, a row at least that long is held as a head of half its
        power-of-two block and the power-of-two tail after it, where the two take fewer lanes.
        """
        if self.tail_from is None or n_cols < self.tail_from:
            return 0
        return head_tail(n_cols)

    def rows_per_block(self, block_n: int, n_rows: int, n_cores: int, itemsize: int) -> int:
        """How many whole rows of ``block_n`` columns (head and tail) the tile kernel takes per
        iteration.

        Enough rows that an iteration moves a useful number of bytes, but not so many that the
        cores run out of row blocks to share.
        """
        # A power of two (a tl.arange size), though a row with a tail block is not.
        rows = 1 << max(0, (self.rows_tile_elems(itemsize) // block_n).bit_length() - 1)
        blocks = n_cores * self.row_blocks(block_n, itemsize)
        per_block = triton.next_power_of_2(triton.cdiv(n_rows, blocks))
        return min(rows, per_block)

    def core_count(self, device_index: int) -> int:
        """Independent cores (SMs, vector cores) of the device."""
        raise NotImplementedError

    def options(self, plan: Plan, itemsize: int) -> dict[str, Any]:
        """Compile options for the kernels of ``plan`` on ``itemsize``-byte elements."""
        return {}

    def max_programs(self, kernel: Any, args: tuple, constexprs: dict[str, Any],
                     options: dict[str, Any], device_index: int) -> int:
        """How many programs of this compiled kernel the device runs at once."""
        raise NotImplementedError
