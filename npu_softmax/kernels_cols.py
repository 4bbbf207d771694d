"""Triton kernels for interleaved rows: a softmax over a dim that is not the last one.

In a contiguous ``(outer, C, inner)`` tensor, a softmax over ``C`` has rows whose elements lie
``inner`` apart, while neighbouring rows sit next to each other. The row kernels (``kernels``)
would load such a row one element per 32-byte sector; these kernels instead take a
``[BLOCK_C, BLOCK_I]`` tile of ``BLOCK_I`` neighbouring rows (a *group*) and reduce down axis 0, so
every load reads whole runs of memory. They use the row matrix of ``layout.RowLayout.columns``:
row ``r`` is inner position ``r % n_inner`` of outer index ``r // n_inner``. Strides are runtime
arguments: Triton specialises a stride of 1, so whichever axis of the tile is contiguous in a
tensor (rows in the input, columns in a row-major output of a transposed input, say) is the one
its loads or stores coalesce along.

* ``softmax_cols_kernel``: a group per iteration, whole (one read) when its rows fit
  ``BLOCK_C``, else looped in ``BLOCK_C`` chunks with a running max and sum per row (``WHOLE``
  tells which, or leaves it to the row length at run time);
* ``softmax_cols_split_stats_kernel`` + ``softmax_cols_split_norm_kernel``: a group's rows cut
  into ``N_SPLITS`` column ranges worked on by different programs, for long rows in few groups;
* the backward of each (``softmax_bwd_cols_*``), as ``kernels_backward`` states it.

Every kernel reads an element before it writes it, in one program, so ``y`` may be ``x``.
"""

import triton
import triton.language as tl

from ._compat import gdc_launch_dependents, gdc_wait
from .kernels import (
    _combined_parts,
    _exp,
    _finish,
    _items_last_first,
    _last_chunk,
    _load,
    _merge_lane_stats,
    _norm,
    _out,
    _safe_shift,
    _split_range,
    _widen,
)
from .kernels_backward import _grad, _load_pair, _term


@triton.jit
def _group(g, n_inner, BLOCK_I: tl.constexpr):
    """Group ``g`` of ``BLOCK_I`` neighbouring rows: its outer index, and the inner positions
    of its rows as a ``[1, BLOCK_I]`` row of the tile with their mask."""
    n_blocks = tl.cdiv(n_inner, BLOCK_I)
    inner = (g % n_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)[None, :]
    return g // n_blocks, inner, inner < n_inner


@triton.jit
def _n_groups(n_rows, n_inner, BLOCK_I: tl.constexpr):
    return n_rows // n_inner * tl.cdiv(n_inner, BLOCK_I)


@triton.jit
def _split_item(item, split_cols, n_cols, n_inner, N_SPLITS: tl.constexpr,
                BLOCK_I: tl.constexpr):
    """Work item ``g * N_SPLITS + s`` of split groups: columns ``[lo, hi)`` of group ``g``,
    returned as ``(g, lo, hi, outer, inner, imask)`` (``_group``)."""
    g, lo, hi = _split_range(item, split_cols, n_cols, N_SPLITS)
    outer, inner, imask = _group(g, n_inner, BLOCK_I)
    return g, lo, hi, outer, inner, imask


@triton.jit
def _group_parts(part_ptr, g, N_SPLITS: tl.constexpr, BLOCK_I: tl.constexpr):
    # The [N_SPLITS, BLOCK_I] partial results of group g's rows, one row per split.
    return (part_ptr + (g * N_SPLITS + tl.arange(0, N_SPLITS)[:, None]) * BLOCK_I
            + tl.arange(0, BLOCK_I)[None, :])


@triton.jit
def _cols_stats(x_lanes, imask, x_col_stride, c, lo, hi, scale, BLOCK_C: tl.constexpr,
                BLOCK_I: tl.constexpr, ACC_TY: tl.constexpr, EVICT: tl.constexpr):
    """Per row of a group (``x_lanes``: its rows' starts), the max ``m`` and
    ``sum(exp(x - m))`` of columns ``[lo, hi)`` in one pass, a running pair per row."""
    m = tl.full([BLOCK_I], float("-inf"), ACC_TY)
    d = tl.zeros([BLOCK_I], ACC_TY)
    for start in tl.range(lo, hi, BLOCK_C):
        cc = start + c
        x = _load(x_lanes + cc * x_col_stride, imask & (cc < hi), scale, ACC_TY, EVICT)
        m, d = _merge_lane_stats(m, d, x)
    return m, d


@triton.jit
def _cols_normalize(x_lanes, y_lanes, imask, x_col_stride, y_col_stride, c, lo, hi, shift, norm,
                    scale, BLOCK_C: tl.constexpr, ACC_TY: tl.constexpr, LOG: tl.constexpr,
                    EVICT: tl.constexpr, STORE_CACHE: tl.constexpr, pre, PRE: tl.constexpr):
    """Columns ``[lo, hi)`` of a group's output from each row's ``shift`` and ``norm``
    (``[1, BLOCK_I]``), last chunk first: those are the likeliest to be still in cache. With
    ``PRE`` the last chunk was read already (``pre``, scaled; ``_cols_split_norm_item``)."""
    n_chunks = tl.cdiv(hi - lo, BLOCK_C)
    done = 0
    if PRE:
        cc = lo + _last_chunk(hi - lo, BLOCK_C) + c
        _cols_store(y_lanes, pre, cc, imask & (cc < hi), y_col_stride, shift, norm, LOG,
                    STORE_CACHE)
        done = 1
    for k in tl.range(done, n_chunks):
        cc = lo + (n_chunks - 1 - k) * BLOCK_C + c
        mask = imask & (cc < hi)
        x = _load(x_lanes + cc * x_col_stride, mask, scale, ACC_TY, EVICT)
        _cols_store(y_lanes, x, cc, mask, y_col_stride, shift, norm, LOG, STORE_CACHE)


@triton.jit
def _fits(n_cols, BLOCK_C: tl.constexpr, WHOLE: tl.constexpr):
    # Whether rows of ``n_cols`` fit a ``BLOCK_C`` tile: ``WHOLE`` as a constant where the
    # launcher has told it (0 or 1), so that a branch on it compiles one form; else tested.
    # (Both forms compiled in, the row length tested per call, cost float32 dim 1 of
    # 256x1000x49 11% on the H100: docs/tuning.md, thirty-sixth session.)
    if WHOLE >= 0:
        fits = WHOLE == 1
    else:
        fits = n_cols <= BLOCK_C
    return fits


@triton.jit
def _cols_store(y_lanes, x, cc, mask, y_col_stride, shift, norm, LOG: tl.constexpr,
                STORE_CACHE: tl.constexpr):
    # Columns ``cc`` of a group's output from its input ``x`` (scaled).
    tl.store(y_lanes + cc * y_col_stride,
             _out(_finish(x, shift, norm, LOG, False), y_lanes.dtype.element_ty), mask=mask,
             cache_modifier=STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_cols_kernel(
    y_ptr, x_ptr, n_rows, n_cols, n_inner,
    x_outer_stride, x_inner_stride, x_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, scale,
    BLOCK_I: tl.constexpr, BLOCK_C: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    FIRST_EVICT: tl.constexpr, SECOND_EVICT: tl.constexpr, STORE_CACHE: tl.constexpr,
    WHOLE: tl.constexpr,
):
    """A group of ``BLOCK_I`` interleaved rows per iteration: held whole and read once where
    the rows fit ``BLOCK_C``; else two passes over ``BLOCK_C`` chunks (running max and sum per
    row, then the output), the first read with L2 eviction policy ``FIRST_EVICT``, the second
    with ``SECOND_EVICT`` (as the row kernels' ``softmax_online_kernel``).

    ``WHOLE``: 1 where the launcher has found that the rows fit, 0 where they do not; then only
    that form is compiled. -1 compiles both and tests the row length (``_fits``)."""
    OUT_TY: tl.constexpr = y_ptr.dtype.element_ty
    ACC_TY: tl.constexpr = tl.float64 if OUT_TY == tl.float64 else tl.float32
    c = _widen(tl.arange(0, BLOCK_C), INDEX_64)[:, None]
    for g in tl.range(tl.program_id(0), _n_groups(n_rows, n_inner, BLOCK_I),
                      tl.num_programs(0)):
        outer, inner, imask = _group(_widen(g, INDEX_64), n_inner, BLOCK_I)
        x_lanes = x_ptr + outer * x_outer_stride + inner * x_inner_stride
        y_lanes = y_ptr + outer * y_outer_stride + inner * y_inner_stride
        if _fits(n_cols, BLOCK_C, WHOLE):
            mask = imask & (c < n_cols)
            x = _load(x_lanes + c * x_col_stride, mask, scale, ACC_TY, "")
            shift = _safe_shift(tl.max(x, axis=0))[None, :]
            norm = _norm(tl.sum(_exp(x - shift), axis=0), LOG, False)[None, :]
            tl.store(y_lanes + c * y_col_stride, _out(_finish(x, shift, norm, LOG, False), OUT_TY),
                     mask=mask, cache_modifier=STORE_CACHE)
        else:
            m, d = _cols_stats(x_lanes, imask, x_col_stride, c, 0, n_cols, scale, BLOCK_C,
                               BLOCK_I, ACC_TY, FIRST_EVICT)
            _cols_normalize(x_lanes, y_lanes, imask, x_col_stride, y_col_stride, c, 0, n_cols,
                            _safe_shift(m)[None, :], _norm(d, LOG, False)[None, :], scale, BLOCK_C,
                            ACC_TY, LOG, SECOND_EVICT, STORE_CACHE, 0, False)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_cols_split_stats_kernel(
    part_ptr, x_ptr, n_rows, n_cols, n_inner,
    x_outer_stride, x_inner_stride, x_col_stride, split_cols, scale,
    N_SPLITS: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_C: tl.constexpr,
    INDEX_64: tl.constexpr, PDL: tl.constexpr, EVICT: tl.constexpr,
):
    """Pass 1 of split groups: work item ``g * N_SPLITS + s`` writes the max and sum of columns
    ``[s * split_cols, (s + 1) * split_cols)`` of each row of group ``g`` into ``part_ptr``,
    ``[2, n_items, BLOCK_I]`` (maxima, then sums). With ``PDL`` pass 2 may start at once."""
    if PDL:
        gdc_launch_dependents()
    ACC_TY: tl.constexpr = part_ptr.dtype.element_ty
    c = _widen(tl.arange(0, BLOCK_C), INDEX_64)[:, None]
    lanes = tl.arange(0, BLOCK_I)
    n_items = _n_groups(n_rows, n_inner, BLOCK_I) * N_SPLITS
    for i in tl.range(tl.program_id(0), n_items, tl.num_programs(0)):
        item = _widen(i, INDEX_64)
        g, lo, hi, outer, inner, imask = _split_item(item, split_cols, n_cols, n_inner, N_SPLITS,
                                                     BLOCK_I)
        m, d = _cols_stats(x_ptr + outer * x_outer_stride + inner * x_inner_stride, imask,
                           x_col_stride, c, lo, hi, scale, BLOCK_C, BLOCK_I, ACC_TY, EVICT)
        tl.store(part_ptr + item * BLOCK_I + lanes, m)
        tl.store(part_ptr + (n_items + item) * BLOCK_I + lanes, d)


@triton.jit
def _cols_split_norm_item(y_ptr, part_ptr, x_ptr, item, n_items, n_cols, n_inner,
                          x_outer_stride, x_inner_stride, x_col_stride,
                          y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale, c,
                          N_SPLITS: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_C: tl.constexpr,
                          LOG: tl.constexpr, EVICT: tl.constexpr, STORE_CACHE: tl.constexpr,
                          pre, PRE: tl.constexpr):
    # Pass 2's work item ``item``: each row's partial maxima and sums combined, its column range
    # written (``pre``: the range's last chunk, read before pass 1 ended, with ``PRE``).
    ACC_TY: tl.constexpr = part_ptr.dtype.element_ty
    g, lo, hi, outer, inner, imask = _split_item(item, split_cols, n_cols, n_inner, N_SPLITS,
                                                 BLOCK_I)
    shift, d = _combined_parts(_group_parts(part_ptr, g, N_SPLITS, BLOCK_I), n_items * BLOCK_I)
    _cols_normalize(x_ptr + outer * x_outer_stride + inner * x_inner_stride,
                    y_ptr + outer * y_outer_stride + inner * y_inner_stride, imask,
                    x_col_stride, y_col_stride, c, lo, hi, shift[None, :],
                    _norm(d, LOG, False)[None, :], scale, BLOCK_C, ACC_TY, LOG, EVICT, STORE_CACHE,
                    pre, PRE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_cols_split_norm_kernel(
    y_ptr, part_ptr, x_ptr, n_rows, n_cols, n_inner,
    x_outer_stride, x_inner_stride, x_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale,
    N_SPLITS: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_C: tl.constexpr,
    INDEX_64: tl.constexpr, LOG: tl.constexpr, PDL: tl.constexpr, EVICT: tl.constexpr,
    STORE_CACHE: tl.constexpr,
):
    """Pass 2 of split groups: combine each row's partial maxima and sums, write one column
    range, items in the order of ``_items_last_first``. With ``PDL`` this kernel waits for
    pass 1 to finish and its writes to be visible, a program reading the last chunk of its
    first item before it waits (pass 1 writes only the partial results), as the row kernels'
    ``softmax_split_norm_kernel`` does."""
    ACC_TY: tl.constexpr = part_ptr.dtype.element_ty
    c = _widen(tl.arange(0, BLOCK_C), INDEX_64)[:, None]
    n_items = _n_groups(n_rows, n_inner, BLOCK_I) * N_SPLITS
    last, n_mine, n_programs = _items_last_first(n_items, INDEX_64)
    first = 0
    if PDL:
        item = last
        _, lo, hi, outer, inner, imask = _split_item(item, split_cols, n_cols, n_inner,
                                                     N_SPLITS, BLOCK_I)
        cc = lo + _last_chunk(hi - lo, BLOCK_C) + c
        pre = _load(x_ptr + outer * x_outer_stride + inner * x_inner_stride + cc * x_col_stride,
                    imask & (cc < hi), scale, ACC_TY, EVICT)
        gdc_wait()
        _cols_split_norm_item(y_ptr, part_ptr, x_ptr, item, n_items, n_cols, n_inner,
                              x_outer_stride, x_inner_stride, x_col_stride,
                              y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale,
                              c, N_SPLITS, BLOCK_I, BLOCK_C, LOG, EVICT, STORE_CACHE, pre, True)
        first = 1
    for k in tl.range(first, n_mine):
        _cols_split_norm_item(y_ptr, part_ptr, x_ptr, last - k * n_programs, n_items, n_cols,
                              n_inner, x_outer_stride, x_inner_stride, x_col_stride,
                              y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale,
                              c, N_SPLITS, BLOCK_I, BLOCK_C, LOG, EVICT, STORE_CACHE, 0, False)


@triton.jit
def _cols_dot(y_lanes, dy_lanes, imask, y_col_stride, dy_col_stride, c, lo, hi,
              BLOCK_C: tl.constexpr, BLOCK_I: tl.constexpr, ACC_TY: tl.constexpr,
              LOG: tl.constexpr, EVICT: tl.constexpr):
    # Per row of a group, sum(dy * y) (sum(dy) for log-softmax) over columns [lo, hi).
    acc = tl.zeros([BLOCK_C, BLOCK_I], ACC_TY)
    for start in tl.range(lo, hi, BLOCK_C):
        cc = start + c
        y, dy = _load_pair(y_lanes + cc * y_col_stride, dy_lanes + cc * dy_col_stride,
                           imask & (cc < hi), ACC_TY, EVICT)
        acc += _term(dy, y, LOG)
    return tl.sum(acc, axis=0)


@triton.jit
def _cols_grad(dx_lanes, y_lanes, dy_lanes, imask, y_col_stride, dy_col_stride, c, lo, hi, dot,
               scale, BLOCK_C: tl.constexpr, ACC_TY: tl.constexpr, LOG: tl.constexpr,
               EVICT: tl.constexpr, STORE_CACHE: tl.constexpr):
    # Columns [lo, hi) of a group's gradient from each row's reduction ``dot`` ([1, BLOCK_I]),
    # last chunk first.
    n_chunks = tl.cdiv(hi - lo, BLOCK_C)
    for k in tl.range(0, n_chunks):
        cc = lo + (n_chunks - 1 - k) * BLOCK_C + c
        mask = imask & (cc < hi)
        y, dy = _load_pair(y_lanes + cc * y_col_stride, dy_lanes + cc * dy_col_stride, mask,
                           ACC_TY, EVICT)
        tl.store(dx_lanes + cc * y_col_stride,
                 _out(_grad(dy, y, dot, scale, LOG), dx_lanes.dtype.element_ty), mask=mask,
                 cache_modifier=STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_bwd_cols_kernel(
    dx_ptr, y_ptr, dy_ptr, n_rows, n_cols, n_inner,
    dy_outer_stride, dy_inner_stride, dy_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, scale,
    BLOCK_I: tl.constexpr, BLOCK_C: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    FIRST_EVICT: tl.constexpr, SECOND_EVICT: tl.constexpr, STORE_CACHE: tl.constexpr,
    WHOLE: tl.constexpr,
):
    """The gradient of ``softmax_cols_kernel``: a group per iteration, whole where its rows fit
    ``BLOCK_C``, else a reduction pass and a gradient pass over chunks. ``dx`` shares ``y``'s
    strides."""
    ACC_TY: tl.constexpr = tl.float64 if y_ptr.dtype.element_ty == tl.float64 else tl.float32
    c = _widen(tl.arange(0, BLOCK_C), INDEX_64)[:, None]
    for g in tl.range(tl.program_id(0), _n_groups(n_rows, n_inner, BLOCK_I),
                      tl.num_programs(0)):
        outer, inner, imask = _group(_widen(g, INDEX_64), n_inner, BLOCK_I)
        y_start = outer * y_outer_stride + inner * y_inner_stride
        dy_lanes = dy_ptr + outer * dy_outer_stride + inner * dy_inner_stride
        if _fits(n_cols, BLOCK_C, WHOLE):
            mask = imask & (c < n_cols)
            y, dy = _load_pair(y_ptr + y_start + c * y_col_stride, dy_lanes + c * dy_col_stride,
                               mask, ACC_TY, "")
            dot = tl.sum(_term(dy, y, LOG), axis=0)[None, :]
            tl.store(dx_ptr + y_start + c * y_col_stride,
                     _out(_grad(dy, y, dot, scale, LOG), dx_ptr.dtype.element_ty), mask=mask,
                     cache_modifier=STORE_CACHE)
        else:
            # (Named apart from the branch above: Triton merges names set in both branches.)
            row_dot = _cols_dot(y_ptr + y_start, dy_lanes, imask, y_col_stride, dy_col_stride,
                                c, 0, n_cols, BLOCK_C, BLOCK_I, ACC_TY, LOG, FIRST_EVICT)
            _cols_grad(dx_ptr + y_start, y_ptr + y_start, dy_lanes, imask, y_col_stride,
                       dy_col_stride, c, 0, n_cols, row_dot[None, :], scale, BLOCK_C, ACC_TY,
                       LOG, SECOND_EVICT, STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_bwd_cols_split_dot_kernel(
    dot_ptr, y_ptr, dy_ptr, n_rows, n_cols, n_inner,
    dy_outer_stride, dy_inner_stride, dy_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, split_cols,
    N_SPLITS: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_C: tl.constexpr,
    INDEX_64: tl.constexpr, LOG: tl.constexpr, PDL: tl.constexpr, EVICT: tl.constexpr,
):
    """Pass 1 of split groups' gradient: each item's partial reductions into ``dot_ptr``,
    ``[n_items, BLOCK_I]``."""
    if PDL:
        gdc_launch_dependents()
    ACC_TY: tl.constexpr = dot_ptr.dtype.element_ty
    c = _widen(tl.arange(0, BLOCK_C), INDEX_64)[:, None]
    n_items = _n_groups(n_rows, n_inner, BLOCK_I) * N_SPLITS
    for i in tl.range(tl.program_id(0), n_items, tl.num_programs(0)):
        item = _widen(i, INDEX_64)
        g, lo, hi, outer, inner, imask = _split_item(item, split_cols, n_cols, n_inner, N_SPLITS,
                                                     BLOCK_I)
        dot = _cols_dot(y_ptr + outer * y_outer_stride + inner * y_inner_stride,
                        dy_ptr + outer * dy_outer_stride + inner * dy_inner_stride, imask,
                        y_col_stride, dy_col_stride, c, lo, hi, BLOCK_C, BLOCK_I, ACC_TY, LOG,
                        EVICT)
        tl.store(dot_ptr + item * BLOCK_I + tl.arange(0, BLOCK_I), dot)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_bwd_cols_split_grad_kernel(
    dx_ptr, dot_ptr, y_ptr, dy_ptr, n_rows, n_cols, n_inner,
    dy_outer_stride, dy_inner_stride, dy_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale,
    N_SPLITS: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_C: tl.constexpr,
    INDEX_64: tl.constexpr, LOG: tl.constexpr, PDL: tl.constexpr, EVICT: tl.constexpr,
    STORE_CACHE: tl.constexpr,
):
    """Pass 2 of split groups' gradient: add up each row's partial reductions, write one column
    range (with ``PDL``, once pass 1 has finished)."""
    if PDL:
        gdc_wait()
    ACC_TY: tl.constexpr = dot_ptr.dtype.element_ty
    c = _widen(tl.arange(0, BLOCK_C), INDEX_64)[:, None]
    n_items = _n_groups(n_rows, n_inner, BLOCK_I) * N_SPLITS
    for i in tl.range(tl.program_id(0), n_items, tl.num_programs(0)):
        item = _widen(i, INDEX_64)
        g, lo, hi, outer, inner, imask = _split_item(item, split_cols, n_cols, n_inner, N_SPLITS,
                                                     BLOCK_I)
        dot = tl.sum(tl.load(_group_parts(dot_ptr, g, N_SPLITS, BLOCK_I)), axis=0)[None, :]
        y_start = outer * y_outer_stride + inner * y_inner_stride
        _cols_grad(dx_ptr + y_start, y_ptr + y_start,
                   dy_ptr + outer * dy_outer_stride + inner * dy_inner_stride, imask,
                   y_col_stride, dy_col_stride, c, lo, hi, dot, scale, BLOCK_C, ACC_TY, LOG,
                   EVICT, STORE_CACHE)
