"""Triton kernels for the gradient of softmax and log-softmax over the rows of a strided matrix.

With ``y`` the forward's output, ``dy`` the incoming gradient and ``s`` the forward's ``scale``
(``1 / temperature``), each row gets

* softmax:     ``dx = s * y * (dy - sum(dy * y))``
* log-softmax: ``dx = s * (dy - exp(y) * sum(dy))``

The row matrix is the forward's (see ``kernels``): ``dy`` is addressed by the ``dy_*`` strides,
``y`` and ``dx`` share the ``y_*`` strides. The variants mirror the forward's and the launcher
picks them with the same ``plan``: one whole row or a tile of whole rows per iteration, one
looped row per iteration, or a row split across programs (partial sums, then the gradient). All
are persistent. Arithmetic is float32 (float64 when ``y`` is float64); ``dx`` is written in its
own dtype (the forward input's).
"""

import triton
import triton.language as tl

from ._compat import gdc_launch_dependents, gdc_wait
from .kernels import _aligned, _exp, _out, _row_start, _split_range, _widen


@triton.jit
def _term(dy, y, LOG: tl.constexpr):
    # The summand of the row reduction.
    if LOG:
        t = dy
    else:
        t = dy * y
    return t


@triton.jit
def _grad(dy, y, dot, scale, LOG: tl.constexpr):
    if LOG:
        dx = dy - _exp(y) * dot
    else:
        dx = y * (dy - dot)
    return dx * scale


@triton.jit
def _load_pair(y_ptrs, dy_ptrs, mask, ACC_TY: tl.constexpr, EVICT: tl.constexpr):
    # y and dy in ACC_TY, read with the L2 eviction policy EVICT; masked lanes read 0, which
    # adds no term to the reduction and is never stored.
    y = tl.load(y_ptrs, mask=mask, other=0.0, eviction_policy=EVICT).to(ACC_TY)
    dy = tl.load(dy_ptrs, mask=mask, other=0.0, eviction_policy=EVICT).to(ACC_TY)
    return y, dy


@triton.jit
def _range_dot(y_row, dy_row, y_col_stride, dy_col_stride, cols, lo, hi,
               BLOCK_N: tl.constexpr, ACC_TY: tl.constexpr, LOG: tl.constexpr,
               EVICT: tl.constexpr):
    """``sum(dy * y)`` (``sum(dy)`` for log-softmax) over ``[lo, hi)`` of one row, reading
    with the L2 eviction policy ``EVICT``."""
    acc = tl.zeros([BLOCK_N], ACC_TY)
    for start in tl.range(lo, hi, BLOCK_N):
        c = start + cols
        mask = c < hi
        y, dy = _load_pair(y_row + c * y_col_stride, dy_row + c * dy_col_stride, mask, ACC_TY,
                           EVICT)
        acc += _term(dy, y, LOG)
    return tl.sum(acc, axis=0)


@triton.jit
def _range_grad(dx_row, y_row, dy_row, y_col_stride, dy_col_stride, cols, lo, hi, dot, scale,
                BLOCK_N: tl.constexpr, ACC_TY: tl.constexpr, LOG: tl.constexpr,
                EVICT: tl.constexpr, STORE_CACHE: tl.constexpr):
    """``dx_row[lo:hi]`` from the row's reduction ``dot``, reading with the L2 eviction policy
    ``EVICT`` and storing with the cache modifier ``STORE_CACHE``. Last chunk first, as the
    forward's ``_range_normalize``: those are the likeliest to be still in cache."""
    n_chunks = tl.cdiv(hi - lo, BLOCK_N)
    for k in tl.range(0, n_chunks):
        c = lo + (n_chunks - 1 - k) * BLOCK_N + cols
        mask = c < hi
        y, dy = _load_pair(y_row + c * y_col_stride, dy_row + c * dy_col_stride, mask, ACC_TY,
                           EVICT)
        dx = _grad(dy, y, dot, scale, LOG)
        tl.store(dx_row + c * y_col_stride, _out(dx, dx_row.dtype.element_ty), mask=mask,
                 cache_modifier=STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_bwd_row_kernel(
    dx_ptr, y_ptr, dy_ptr, n_rows, n_cols, n_inner,
    dy_outer_stride, dy_inner_stride, dy_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, scale,
    BLOCK_N: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr, STORE_CACHE: tl.constexpr,
    ALIGN: tl.constexpr,
):
    """A row that fits one block: one row per iteration as a 1-D block (as the forward's row
    kernel, so no warp idles on a size-1 row axis)."""
    n_cols = _aligned(n_cols, ALIGN)
    ACC_TY: tl.constexpr = tl.float64 if y_ptr.dtype.element_ty == tl.float64 else tl.float32
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    mask = cols < n_cols
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = _widen(r, INDEX_64)
        y_offs = _row_start(row, n_inner, y_outer_stride, y_inner_stride, ALIGN) \
            + cols * y_col_stride
        dy_offs = _row_start(row, n_inner, dy_outer_stride, dy_inner_stride, ALIGN) \
            + cols * dy_col_stride
        y, dy = _load_pair(y_ptr + y_offs, dy_ptr + dy_offs, mask, ACC_TY, "")
        dot = tl.sum(_term(dy, y, LOG), axis=0)
        dx = _grad(dy, y, dot, scale, LOG)
        tl.store(dx_ptr + y_offs, _out(dx, dx_ptr.dtype.element_ty), mask=mask,
                 cache_modifier=STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_bwd_tile_kernel(
    dx_ptr, y_ptr, dy_ptr, n_rows, n_cols, n_inner,
    dy_outer_stride, dy_inner_stride, dy_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    STORE_CACHE: tl.constexpr, ALIGN: tl.constexpr,
):
    """Rows that fit one block: a ``BLOCK_M x BLOCK_N`` tile of whole rows per iteration."""
    n_cols = _aligned(n_cols, ALIGN)
    ACC_TY: tl.constexpr = tl.float64 if y_ptr.dtype.element_ty == tl.float64 else tl.float32
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    col_mask = cols < n_cols
    for block in tl.range(tl.program_id(0), tl.cdiv(n_rows, BLOCK_M), tl.num_programs(0)):
        rows = _widen(block, INDEX_64) * BLOCK_M + tl.arange(0, BLOCK_M)
        mask = (rows < n_rows)[:, None] & col_mask[None, :]
        y_offs = _row_start(rows, n_inner, y_outer_stride, y_inner_stride, ALIGN)[:, None] \
            + cols[None, :] * y_col_stride
        dy_offs = _row_start(rows, n_inner, dy_outer_stride, dy_inner_stride, ALIGN)[:, None] \
            + cols[None, :] * dy_col_stride
        y, dy = _load_pair(y_ptr + y_offs, dy_ptr + dy_offs, mask, ACC_TY, "")
        dot = tl.sum(_term(dy, y, LOG), axis=1)[:, None]
        dx = _grad(dy, y, dot, scale, LOG)
        tl.store(dx_ptr + y_offs, _out(dx, dx_ptr.dtype.element_ty), mask=mask,
                 cache_modifier=STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_bwd_online_kernel(
    dx_ptr, y_ptr, dy_ptr, n_rows, n_cols, n_inner,
    dy_outer_stride, dy_inner_stride, dy_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, scale,
    BLOCK_N: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    FIRST_EVICT: tl.constexpr, SECOND_EVICT: tl.constexpr, STORE_CACHE: tl.constexpr,
    ALIGN: tl.constexpr,
):
    """Rows longer than a block: one row per iteration, a reduction pass then a gradient pass,
    reading with the L2 eviction policies ``FIRST_EVICT`` and ``SECOND_EVICT`` (as the
    forward's ``softmax_online_kernel``)."""
    n_cols = _aligned(n_cols, ALIGN)
    ACC_TY: tl.constexpr = tl.float64 if y_ptr.dtype.element_ty == tl.float64 else tl.float32
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = _widen(r, INDEX_64)
        y_start = _row_start(row, n_inner, y_outer_stride, y_inner_stride, ALIGN)
        dy_row = dy_ptr + _row_start(row, n_inner, dy_outer_stride, dy_inner_stride, ALIGN)
        dot = _range_dot(y_ptr + y_start, dy_row, y_col_stride, dy_col_stride, cols, 0, n_cols,
                         BLOCK_N, ACC_TY, LOG, FIRST_EVICT)
        _range_grad(dx_ptr + y_start, y_ptr + y_start, dy_row, y_col_stride, dy_col_stride, cols,
                    0, n_cols, dot, scale, BLOCK_N, ACC_TY, LOG, SECOND_EVICT, STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_bwd_split_dot_kernel(
    dot_ptr, y_ptr, dy_ptr, n_rows, n_cols, n_inner,
    dy_outer_stride, dy_inner_stride, dy_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, split_cols,
    N_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    PDL: tl.constexpr, EVICT: tl.constexpr, ALIGN: tl.constexpr,
):
    """Pass 1 of a split row: the reduction of each ``split_cols`` range into
    ``[n_rows, N_SPLITS]``, reading with the L2 eviction policy ``EVICT``. With ``PDL``, pass 2
    may be launched at once (as the forward's)."""
    n_cols = _aligned(n_cols, ALIGN)
    if PDL:
        gdc_launch_dependents()
    ACC_TY: tl.constexpr = dot_ptr.dtype.element_ty
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    for i in tl.range(tl.program_id(0), n_rows * N_SPLITS, tl.num_programs(0)):
        item = _widen(i, INDEX_64)
        row, lo, hi = _split_range(item, split_cols, n_cols, N_SPLITS)
        y_row = y_ptr + _row_start(row, n_inner, y_outer_stride, y_inner_stride, ALIGN)
        dy_row = dy_ptr + _row_start(row, n_inner, dy_outer_stride, dy_inner_stride, ALIGN)
        dot = _range_dot(y_row, dy_row, y_col_stride, dy_col_stride, cols, lo, hi,
                         BLOCK_N, ACC_TY, LOG, EVICT)
        tl.store(dot_ptr + item, dot)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_bwd_split_grad_kernel(
    dx_ptr, dot_ptr, y_ptr, dy_ptr, n_rows, n_cols, n_inner,
    dy_outer_stride, dy_inner_stride, dy_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale,
    N_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    PDL: tl.constexpr, EVICT: tl.constexpr, STORE_CACHE: tl.constexpr, ALIGN: tl.constexpr,
):
    """Pass 2 of a split row: add up the row's partial reductions, write one column range
    (with ``PDL``, once pass 1 has finished), reading with the L2 eviction policy ``EVICT``."""
    n_cols = _aligned(n_cols, ALIGN)
    if PDL:
        gdc_wait()
    ACC_TY: tl.constexpr = dot_ptr.dtype.element_ty
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    splits = tl.arange(0, N_SPLITS)
    for i in tl.range(tl.program_id(0), n_rows * N_SPLITS, tl.num_programs(0)):
        item = _widen(i, INDEX_64)
        row, lo, hi = _split_range(item, split_cols, n_cols, N_SPLITS)
        dot = tl.sum(tl.load(dot_ptr + row * N_SPLITS + splits), axis=0)
        y_start = _row_start(row, n_inner, y_outer_stride, y_inner_stride, ALIGN)
        dy_row = dy_ptr + _row_start(row, n_inner, dy_outer_stride, dy_inner_stride, ALIGN)
        _range_grad(dx_ptr + y_start, y_ptr + y_start, dy_row, y_col_stride, dy_col_stride, cols,
                    lo, hi, dot, scale, BLOCK_N, ACC_TY, LOG, EVICT, STORE_CACHE)
