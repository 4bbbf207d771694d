"""Triton kernels for a softmax over the last axis of a strided row matrix.

Every kernel sees its input as ``n_rows`` rows of ``n_cols`` elements. Row ``r`` starts at
``(r // n_inner) * outer_stride + (r % n_inner) * inner_stride`` and its elements lie
``col_stride`` apart, so softmax over any dim of a contiguous tensor (and of most strided views)
needs no copy. The output is addressed the same way with its own strides.

All kernels are persistent: a grid of programs, each walking work items
``pid, pid + num_programs, ...`` with ``tl.range``; the launcher sizes the grid from the device.
``n_rows`` and ``n_cols`` are runtime values (never ``tl.constexpr``), so a new shape reuses the
compiled binary; Triton still specialises ``n_cols`` and the strides on divisibility by 16 (a
handful of binaries per tile at most), which lets masked loads and stores use vector width.
Arithmetic runs in float32 (float64 for float64 output); the input is
never narrower than the output (the API casts a wider input first, as ``torch.softmax`` does).
Every output is stored through ``_out``, rounded once to nearest even, under Triton's
interpreter too (whose own bfloat16 conversion truncates).

Every kernel multiplies its input by a runtime ``scale`` as it loads it (``1 / temperature``, so
a sampling temperature costs no extra pass over memory) and, with ``LOG`` set, writes
``log_softmax`` instead of ``softmax``. Outputs are stored with the target's cache modifier
``STORE_CACHE`` (CUDA: streaming, so they do not push out of the caches the input that a second
read still needs), and the looped kernels read a row's two passes with its eviction policies
(``launcher`` takes both from the backend). The backward kernels are in ``kernels_backward``.

The row and tile kernels hold a row from its load to its store. On GPUs they hold a 2-byte
input as loaded, widening it only where they use it (``_hold``): it takes half the registers of
float32, so more programs share an SM.

Triton proves a row 16-byte aligned, and loads it in 16-byte vectors, only from arguments
divisible by 16. Every kernel takes ``ALIGN``: where the launcher has found the row length and
the row strides divisible by a power of two of elements up to a vector's (a vector in rows of
200 float32 or 1000 bfloat16 elements, 8 bytes in rows of 100 bfloat16, say), ``ALIGN`` is
that number and the kernel rewrites them in a form that shows it (``_aligned``), so such rows
load in vectors of that many elements too; 1 states nothing.

Rows whose start is not even a multiple of two elements (an odd row length, e.g. 781 or a
50257-entry vocabulary) would load and store one element per instruction. With ``VEC`` > 1 (the
elements of 16 bytes) the kernels read such rows in whole vectors. The tile kernel reads each row
through a window that starts at the 16-byte boundary before it; the few lanes of the neighbouring
rows that a window covers are loaded, never used, and never stored. The row and looped kernels, and
the tile kernel with ``BODY``, read the row's aligned body (``_aligned_body``), with no lane
outside the row to mask, and the fewer than 16 bytes at each end of it apart; they store the body
as vectors too where the output is aligned like the input.

Variants (the launcher picks one, see ``launcher.plan``):

* ``softmax_row_kernel``: one whole row per iteration, held in one 1-D block.
* ``softmax_tile_kernel``: ``BLOCK_M`` whole short rows per iteration, as a 2-D tile.

  Both hold a row either in one power-of-two block or, with ``TAIL_N`` > 0, in a head of
  ``BLOCK_N`` and a smaller power-of-two tail (9216 columns: 8192 + 1024 instead of 16384, of
  which 7168 would be masked padding), so fewer registers go to lanes that load nothing.
* ``softmax_online_kernel``: one row per iteration, looped in ``BLOCK_N`` chunks and a shorter
  ``LAST_N`` one for the rest of the row: one read for the running max and sum (Milakov &
  Gimelshein 2018; one per lane of a chunk where the launcher asks, ``_range_stats``), one read
  and one write to normalise.
* ``softmax_split_stats_kernel`` + ``softmax_split_norm_kernel``: each row cut into ``n_splits``
  column ranges worked on by different programs, so a few very long rows still fill the chip.

The ``cols`` variant's kernels, for rows interleaved in memory (a softmax over a dim that is not
the last), are in ``kernels_cols``.
"""

import triton
import triton.language as tl

from ._compat import (
    EXP_AS_EXP2,
    HOLD_AS_LOADED,
    gdc_launch_dependents,
    gdc_wait,
    interpreter_enabled,
)

#: Chunk of the row kernel's element stores for 2-byte rows whose output is not aligned like
#: their input.
FALLBACK_CHUNK: tl.constexpr = tl.constexpr(256)


#: ``_exp``'s form (``_compat.EXP_AS_EXP2``), and the factor it takes.
EXP2: tl.constexpr = tl.constexpr(EXP_AS_EXP2)
LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
#: ``_hold``'s form (``_compat.HOLD_AS_LOADED``).
HOLD_RAW: tl.constexpr = tl.constexpr(HOLD_AS_LOADED)
#: Whether ``_out`` rounds bfloat16 outputs itself: Triton's CPU interpreter truncates float32
#: -> bfloat16 (and turns float32 subnormals into wrong normals), where GPUs and NPUs round to
#: nearest even.
ROUND_BF16: tl.constexpr = tl.constexpr(interpreter_enabled())


@triton.jit
def _out(y, OUT_TY: tl.constexpr):
    # ``y`` (float32, or float64 where the arithmetic is float64) converted to the output
    # dtype, rounded to nearest even. Under the interpreter a bfloat16 output is rounded on the
    # float32 bits: adding 0x7FFF plus the lowest kept bit carries into the kept half exactly
    # when rounding up is due (ties to even), and the kept half is the bfloat16, NaN made a
    # quiet NaN (a float64 ``y``, a gradient of a float64 output, rounds to float32 first).
    # Compiled kernels leave it to the conversion, which rounds so already.
    if ROUND_BF16:
        if OUT_TY == tl.bfloat16:
            bits = y.to(tl.float32).to(tl.uint32, bitcast=True)
            half = tl.where(y == y, (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16, 0x7FC0)
            return half.to(tl.uint16).to(tl.bfloat16, bitcast=True)
    return y.to(OUT_TY)


@triton.jit
def _exp(x):
    # exp(x) = 2 ** (x * log2(e)) for float32 on GPUs: the hardware's exp2 with no guard for
    # subnormal results (below 2**-126, they are 0). ``tl.exp`` elsewhere, and for float64.
    if EXP2:
        if x.dtype == tl.float32:
            return tl.math.exp2(x * LOG2E)
    return tl.exp(x)


@triton.jit
def _log_for_exp(d):
    # log(d) in the units of ``_exp``'s exponent: log2(d) where ``_exp`` is exp2 of x * log2(e).
    if EXP2:
        if d.dtype == tl.float32:
            return tl.math.log2(d)
    return tl.log(d)


@triton.jit
def _exp_over(t, log_d):
    # exp(t) / d for ``log_d = _log_for_exp(d)``: the division taken into the exponent, so that
    # with exp2 the exponent is one FMA (t * log2(e) - log2(d)) and no multiply follows.
    if EXP2:
        if t.dtype == tl.float32:
            return tl.math.exp2(t * LOG2E - log_d)
    return tl.exp(t - log_d)


@triton.jit
def _widen(i, INDEX_64: tl.constexpr):
    # Offsets stay int32 unless the launcher saw an offset that can pass 2**31. tl.cast, not
    # i.to(): under the interpreter a tl.range loop index is a Python int, with no .to().
    if INDEX_64:
        i = tl.cast(i, tl.int64)
    return i


@triton.jit
def _aligned(n, ALIGN: tl.constexpr):
    # ``n``, a row length or stride that the launcher found divisible by ALIGN, in a form from
    # which Triton can prove that (it specialises integer arguments only on divisibility by 16).
    if ALIGN > 1:
        n = n // ALIGN * ALIGN
    return n


@triton.jit
def _row_start(rows, n_inner, outer_stride, inner_stride, ALIGN: tl.constexpr):
    return ((rows // n_inner) * _aligned(outer_stride, ALIGN)
            + (rows % n_inner) * _aligned(inner_stride, ALIGN))


@triton.jit
def _load_raw(ptrs, mask, EVICT: tl.constexpr):
    # The input as stored. Masked lanes read -inf: they add nothing to the max and exp(-inf) = 0
    # to the sum (scale > 0 keeps them -inf).
    return tl.load(ptrs, mask=mask, other=float("-inf"), eviction_policy=EVICT)


@triton.jit
def _scaled(x, scale, ACC_TY: tl.constexpr):
    return x.to(ACC_TY) * scale


@triton.jit
def _hold(x, scale, ACC_TY: tl.constexpr):
    # What the row and tile kernels keep of a block they load. On GPUs a 2-byte input stays as
    # loaded, 2 bytes a lane, half the registers of float32 (``_use`` scales it where it is
    # used); other inputs are scaled at once.
    if HOLD_RAW and x.dtype.primitive_bitwidth == 16:
        held = x
    else:
        held = _scaled(x, scale, ACC_TY)
    return held


@triton.jit
def _use(x, scale, ACC_TY: tl.constexpr):
    # A block kept by ``_hold``, scaled in ACC_TY.
    if x.dtype != ACC_TY:
        x = _scaled(x, scale, ACC_TY)
    return x


@triton.jit
def _held_max(x, scale, ACC_TY: tl.constexpr, axis: tl.constexpr):
    # The max of ``_use(x)`` along ``axis``, taken before the scale where ``x`` is unscaled: a
    # positive scale keeps the order (rounding is monotone), so the result is the same. Whether
    # to scale follows ``x``'s dtype: tl.max returns a 2-byte block's max as float32.
    m = tl.max(x, axis=axis)
    if x.dtype != ACC_TY:
        m = _scaled(m, scale, ACC_TY)
    return m


@triton.jit
def _load(ptrs, mask, scale, ACC_TY: tl.constexpr, EVICT: tl.constexpr):
    return _scaled(_load_raw(ptrs, mask, EVICT), scale, ACC_TY)


@triton.jit
def _lead(ptr, VEC: tl.constexpr):
    # How many elements ``ptr`` (a pointer, or a 1-d tensor of them) lies past the 16-byte
    # boundary at or before it, from the address itself.
    ITEM: tl.constexpr = ptr.dtype.element_ty.primitive_bitwidth // 8
    return ((ptr.to(tl.int64) // ITEM) % VEC).to(tl.int32)


@triton.jit
def _window(start_ptr, n, VEC: tl.constexpr):
    """The aligned window of the ``n`` contiguous elements at ``start_ptr`` (a pointer, or a
    1-d tensor of them): the 16-byte boundary at or before it, how many elements the data lies
    past that boundary (``lead``, < ``VEC``), and the window's length, a multiple of ``VEC``.

    The lead is taken from the address itself, so a window never reaches past the 16-byte
    blocks that hold the data, whatever the tensor's alignment.
    """
    ITEM: tl.constexpr = start_ptr.dtype.element_ty.primitive_bitwidth // 8
    lead = _lead(start_ptr, VEC)
    # A row of no elements gets an empty window.
    span = tl.multiple_of(tl.where(n > 0, (lead + n + VEC - 1) // VEC * VEC, 0), VEC)
    return tl.multiple_of(start_ptr - lead, VEC * ITEM), lead, span


@triton.jit
def _in_window(p, lead, n):
    # Which lanes ``p`` of a window hold one of its ``n`` elements.
    return (p >= lead) & (p < lead + n)


@triton.jit
def _aligned_body(row_ptr, n, VEC: tl.constexpr):
    """``(body_ptr, a, body)`` for the ``n`` contiguous elements at ``row_ptr``: elements
    ``[a, a + body)`` are whole 16-byte vectors, starting at ``body_ptr``, with fewer than
    ``VEC`` before and after them (none for ``n`` <= 0)."""
    ITEM: tl.constexpr = row_ptr.dtype.element_ty.primitive_bitwidth // 8
    a = tl.minimum((VEC - _lead(row_ptr, VEC)) % VEC, n)
    return (tl.multiple_of(row_ptr + a, VEC * ITEM), a,
            tl.multiple_of((n - a) // VEC * VEC, VEC))


@triton.jit
def _edge_lanes(a, body, n, VEC: tl.constexpr):
    # The elements around an aligned body (``_aligned_body``), [0, a) in lanes below VEC and
    # [a + body, n) in the others: their offsets and mask.
    q = tl.arange(0, 2 * VEC)
    e = tl.where(q < VEC, q, a + body + q - VEC)
    return e, tl.where(q < VEC, q < a, (e >= a + body) & (e < n))


@triton.jit
def _range_body(x_row, col_stride, lo, hi, VEC: tl.constexpr):
    """Where the looped kernels read ``x_row[lo:hi]`` in chunks: ``(base, a, body)``, lane
    ``p`` < ``body`` holding element ``lo + a + p``. With ``VEC`` > 1 (contiguous elements)
    the range's aligned body (``_aligned_body``; the caller takes the elements around it
    apart, ``_edge_lanes``); otherwise the whole range (``a`` 0)."""
    if VEC > 1:
        base, a, body = _aligned_body(x_row + lo, hi - lo, VEC)
    else:
        base, a, body = x_row + lo * col_stride, 0, hi - lo
    return base, a, body


@triton.jit
def _load_body_raw(base, p, body, col_stride, EVICT: tl.constexpr, VEC: tl.constexpr):
    # Lanes p of a range read from ``_range_body``, as stored, -inf past its end.
    if VEC > 1:
        x = _load_raw(base + p, p < body, EVICT)
    else:
        x = _load_raw(base + p * col_stride, p < body, EVICT)
    return x


@triton.jit
def _load_body(base, p, body, col_stride, scale, ACC_TY: tl.constexpr, EVICT: tl.constexpr,
               VEC: tl.constexpr):
    # ``_load_body_raw``, scaled.
    return _scaled(_load_body_raw(base, p, body, col_stride, EVICT, VEC), scale, ACC_TY)


@triton.jit
def _safe_shift(m):
    # A row (or chunk) that is all -inf has max -inf; shifting by it would give
    # -inf - (-inf) = NaN where torch's answer comes from exp(-inf) = 0.
    return tl.where(m == float("-inf"), 0.0, m)


@triton.jit
def _finish(x, shift, norm, LOG: tl.constexpr, FOLD: tl.constexpr):
    # ``norm`` is ``_norm(sum, LOG, FOLD)``, once per row, so the per-element work after
    # ``x - shift`` is one subtraction, one multiply or (FOLD) none: the sum is taken off inside
    # the exponent (``_exp_over``). ``x - shift`` comes first so that a large max cancels
    # exactly before the sum is taken off. FOLD is for the looped kernels' 2-byte rows
    # (``_range_normalize``); the kernels that hold a row keep it off, since the compiler then
    # reuses the exp values of the row's sum for its output.
    if LOG:
        y = (x - shift) - norm
    elif FOLD:
        y = _exp_over(x - shift, norm)
    else:
        y = _exp(x - shift) * norm
    return y


@triton.jit
def _norm(d, LOG: tl.constexpr, FOLD: tl.constexpr):
    # What ``_finish`` takes off a row whose sum is ``d``: log(d) for log-softmax; for softmax
    # ``1 / d``, or with FOLD ``_log_for_exp(d)``.
    if LOG:
        n = tl.log(d)
    elif FOLD:
        n = _log_for_exp(d)
    else:
        n = 1.0 / d
    return n


@triton.jit
def _tail_cols(n_cols, BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr, INDEX_64: tl.constexpr):
    # A row of 8448 elements held in one block needs 16384 lanes, half of them masked; as a
    # block of 8192 and a tail of 256 it needs 8448. Columns BLOCK_N.. of the row, and their mask.
    t_cols = BLOCK_N + _widen(tl.arange(0, TAIL_N), INDEX_64)
    return t_cols, t_cols < n_cols


@triton.jit
def _merge_stats(m, d, x):
    # The running max ``m`` and sum ``d = sum(exp(. - m))`` with the elements of ``x`` added.
    m_new = tl.maximum(m, tl.max(x, axis=0))
    shift = _safe_shift(m_new)
    return m_new, d * _exp(m - shift) + tl.sum(_exp(x - shift), axis=0)


@triton.jit
def _merge_raw_stats(m, d, x, scale, ACC_TY: tl.constexpr):
    # ``_merge_stats`` of ``x * scale`` for ``x`` as loaded. The max is taken before the scale: a
    # positive scale keeps the order, and its rounding is monotone, so the max is the same.
    m_new = tl.maximum(m, _scaled(tl.max(x, axis=0), scale, ACC_TY))
    shift = _safe_shift(m_new)
    return m_new, d * _exp(m - shift) + tl.sum(_exp(_scaled(x, scale, ACC_TY) - shift), axis=0)


@triton.jit
def _split_range(item, split_cols, n_cols, N_SPLITS: tl.constexpr):
    """Row and column range ``[lo, hi)`` of work item ``item`` of a row split ``N_SPLITS`` ways."""
    lo = (item % N_SPLITS) * split_cols
    return item // N_SPLITS, lo, tl.minimum(lo + split_cols, n_cols)


@triton.jit
def _whole_chunks(body, BLOCK_N: tl.constexpr, LAST_N: tl.constexpr):
    # Where the looped kernels' BLOCK_N chunks of a range of ``body`` elements end and its
    # LAST_N chunks begin; with LAST_N == BLOCK_N there are none of those, and the last BLOCK_N
    # chunk is masked past the end.
    if LAST_N < BLOCK_N:
        body = body // BLOCK_N * BLOCK_N
    return body


@triton.jit
def _merge_lane_stats(m, d, x):
    # Each lane's running max ``m`` and sum ``d`` with the rows of the 2-d ``x`` added (lane j
    # takes column j): element-wise, no reduction across lanes.
    m_new = tl.maximum(m, tl.max(x, axis=0))
    shift = _safe_shift(m_new)
    return m_new, d * _exp(m - shift) + tl.sum(_exp(x - shift[None, :]), axis=0)


@triton.jit
def _merge_group_stats(m, d, x, GROUP: tl.constexpr):
    # ``_merge_lane_stats`` with each ``GROUP`` neighbouring lanes of the 2-d ``x`` sharing one
    # running max ``m`` and sum ``d``: one rescale of ``d`` (an exp) per group and chunk, where
    # one per lane took an exp for every few elements. A group is what one thread loads as a
    # vector, so its reductions stay within the thread.
    ROWS: tl.constexpr = x.shape[0]
    LANES: tl.constexpr = x.shape[1]
    x = tl.reshape(x, [ROWS, LANES // GROUP, GROUP])
    m_new = tl.maximum(m, tl.max(tl.max(x, axis=2), axis=0))
    shift = _safe_shift(m_new)
    return m_new, d * _exp(m - shift) + tl.sum(tl.sum(_exp(x - shift[None, :, None]), axis=2),
                                               axis=0)


@triton.jit
def _range_stats(x_row, col_stride, cols, lo, hi, scale, BLOCK_N: tl.constexpr,
                 LAST_N: tl.constexpr, ACC_TY: tl.constexpr, EVICT: tl.constexpr,
                 VEC: tl.constexpr, LANES: tl.constexpr):
    """Max ``m`` and ``sum(exp(x - m))`` of ``x_row[lo:hi]`` in one pass (online softmax),
    reading with the eviction policy ``EVICT`` (``""``: the default) from ``_range_body``.

    The whole ``BLOCK_N`` chunks come first, then what is left in chunks of ``LAST_N`` (at most
    ``BLOCK_N``; the launcher sizes it to the row's rest, so a row of 3.1 chunks does not spend
    a fourth chunk's work on masked lanes). With ``LANES`` 0 every chunk is reduced to the
    running max and sum at once. With ``LANES`` > 0 (at most ``LAST_N``) a chunk is read as rows
    of ``LANES`` elements, a lane taking the same column of every row, and each group of lanes
    that make one 16-byte vector of the input keeps its own running max and sum, folded into
    one only after the last chunk. The launcher sets the lanes to the elements the program's
    threads load at once, so a group is one thread's vector: the reductions inside the loop
    stay within a thread, and no chunk waits at a block-wide reduction before the next one is
    read.
    """
    # Lanes of one 16-byte vector of the input (8 of 2 bytes, 4 of float32), or all of them.
    VECTOR: tl.constexpr = 128 // x_row.dtype.element_ty.primitive_bitwidth
    GROUP: tl.constexpr = VECTOR if VECTOR < LANES else LANES
    tl.static_assert(LANES <= LAST_N)
    base, a, body = _range_body(x_row, col_stride, lo, hi, VEC)
    if VEC > 1:
        # The elements around the body, loaded first so that their latency overlaps the loop.
        e, e_mask = _edge_lanes(a, body, hi - lo, VEC)
        xe = _load_raw(x_row + lo + e, e_mask, EVICT)
    full = _whole_chunks(body, BLOCK_N, LAST_N)
    if LANES > 0:
        # Offsets of the tiles' elements, in the type of ``cols`` (64-bit with INDEX_64).
        lanes = tl.arange(0, LANES)[None, :]
        q = (tl.arange(0, BLOCK_N // LANES)[:, None] * LANES + lanes).to(cols.dtype)
        m = tl.full([LANES // GROUP], float("-inf"), ACC_TY)
        d = tl.zeros([LANES // GROUP], ACC_TY)
        for start in tl.range(0, full, BLOCK_N):
            x = _load_body(base, tl.multiple_of(start, BLOCK_N) + q, body, col_stride, scale,
                           ACC_TY, EVICT, VEC)
            m, d = _merge_group_stats(m, d, x, GROUP)
        if LAST_N < BLOCK_N:
            q_last = (tl.arange(0, LAST_N // LANES)[:, None] * LANES + lanes).to(cols.dtype)
            for start in tl.range(full, body, LAST_N):
                x = _load_body(base, tl.multiple_of(start, LAST_N) + q_last, body, col_stride,
                               scale, ACC_TY, EVICT, VEC)
                m, d = _merge_group_stats(m, d, x, GROUP)
        m_row = tl.max(m, axis=0)
        d_row = tl.sum(d * _exp(m - _safe_shift(m_row)), axis=0)
    else:
        m_row = tl.full([], float("-inf"), ACC_TY)
        d_row = tl.zeros([], ACC_TY)
        for start in tl.range(0, full, BLOCK_N):
            x = _load_body(base, tl.multiple_of(start, BLOCK_N) + cols, body, col_stride, scale,
                           ACC_TY, EVICT, VEC)
            m_row, d_row = _merge_stats(m_row, d_row, x)
        if LAST_N < BLOCK_N:
            last = tl.arange(0, LAST_N).to(cols.dtype)
            for start in tl.range(full, body, LAST_N):
                x = _load_body(base, tl.multiple_of(start, LAST_N) + last, body, col_stride,
                               scale, ACC_TY, EVICT, VEC)
                m_row, d_row = _merge_stats(m_row, d_row, x)
    if VEC > 1:
        # The elements around the body are scaled at their merge, not at their load: compiled
        # for sm_90, the split's first pass and the float32 online kernel in chunks of 32768 or
        # 4096 had the conversion and multiply right after the load, before the loop, which
        # then waited for that load once a range (fp32 4096x50257 on the H200: 3892 -> 4030
        # GB/s). ptxas still puts a 2-byte edge's conversion there in some plans (docs/tuning.md).
        m_row, d_row = _merge_raw_stats(m_row, d_row, xe, scale, ACC_TY)
    return m_row, d_row


@triton.jit
def _store_lanes(base, start, lanes, body, y_start, x_col_stride, y_col_stride, shift, norm,
                 scale, OUT_TY: tl.constexpr, ACC_TY: tl.constexpr, LOG: tl.constexpr,
                 FOLD: tl.constexpr, EVICT: tl.constexpr, STORE_CACHE: tl.constexpr,
                 VEC: tl.constexpr, WORDS: tl.constexpr):
    # The output of lanes ``p = start + lanes`` of a range read from _range_body, lane p at
    # y_start[p * y_col_stride]. With WORDS, a bfloat16 body is read as 32-bit words
    # (``_store_words``): the caller has it 4-byte aligned, contiguous and of an even length.
    # (The dtype test named first: triton-ascend 3.2 gives a plain bool for it, with no
    # ``and``, and rejects chains of more than two operands.)
    N: tl.constexpr = lanes.shape[0]
    BF16: tl.constexpr = base.dtype.element_ty == tl.bfloat16
    if WORDS and (BF16 and N >= 2):
        _store_words(base, start, lanes, body, y_start, y_col_stride, shift, norm, scale,
                     OUT_TY, ACC_TY, LOG, FOLD, EVICT, STORE_CACHE)
    else:
        p = start + lanes
        x = _load_body(base, p, body, x_col_stride, scale, ACC_TY, EVICT, VEC)
        _store_out(x, p, body, y_start, y_col_stride, shift, norm, OUT_TY, LOG, FOLD,
                   STORE_CACHE)


@triton.jit
def _store_words(base, start, lanes, body, y_start, y_col_stride, shift, norm, scale,
                 OUT_TY: tl.constexpr, ACC_TY: tl.constexpr, LOG: tl.constexpr,
                 FOLD: tl.constexpr, EVICT: tl.constexpr, STORE_CACHE: tl.constexpr):
    # ``_store_lanes`` of a bfloat16 range (4-byte aligned, contiguous, of an even length;
    # ``start`` a multiple of the lanes) read as 32-bit words, each two elements: a bfloat16 is
    # the top half of a float32, so ``w << 16`` and ``w & 0xFFFF0000`` are the pair widened,
    # one instruction each, where the compiler widens a loaded pair in two for the upper
    # element. The outputs go back in order through tl.join, converted a pair at a time as
    # before. Compiled for sm_90, bf16 4096x50257's loop goes 215 -> 194 instructions, and the
    # kernel runs 3602 -> 3714 GB/s on the H200 (docs/tuning.md, fifty-ninth session; where
    # the launcher asks for it on aligned rows: ``Backend.word_reads``).
    N: tl.constexpr = lanes.shape[0]
    # Offsets as a [N / 2, 1] column: a 1-d arange of N / 2 would be merged with that of a
    # chunk of N / 2 elements and take its layout (one 16-byte vector of elements a thread,
    # where the words want one of words), and the output would be reordered through shared
    # memory before its store.
    q = tl.multiple_of(start // 2, N // 2) + tl.arange(0, N // 2).to(lanes.dtype)[:, None]
    w = tl.load(base.to(tl.pointer_type(tl.uint32)) + q, mask=q < body // 2,
                eviction_policy=EVICT)
    lo = _finish(_scaled((w << 16).to(tl.float32, bitcast=True), scale, ACC_TY), shift, norm,
                 LOG, FOLD)
    hi = _finish(_scaled((w & 0xFFFF0000).to(tl.float32, bitcast=True), scale, ACC_TY), shift,
                 norm, LOG, FOLD)
    p = start + lanes
    tl.store(y_start + p * y_col_stride,
             tl.reshape(tl.join(_out(lo, OUT_TY), _out(hi, OUT_TY)), [N]), mask=p < body,
             cache_modifier=STORE_CACHE)


@triton.jit
def _store_out(x, p, body, y_start, y_col_stride, shift, norm, OUT_TY: tl.constexpr,
               LOG: tl.constexpr, FOLD: tl.constexpr, STORE_CACHE: tl.constexpr):
    # ``_store_lanes`` of lanes ``x`` already read (and scaled).
    tl.store(y_start + p * y_col_stride, _out(_finish(x, shift, norm, LOG, FOLD), OUT_TY),
             mask=p < body, cache_modifier=STORE_CACHE)


@triton.jit
def _last_chunk(body, BLOCK_N: tl.constexpr):
    # Where the last BLOCK_N chunk of a range of ``body`` elements starts (0 for an empty one).
    return tl.multiple_of((tl.maximum(tl.cdiv(body, BLOCK_N), 1) - 1) * BLOCK_N, BLOCK_N)


@triton.jit
def _store_chunks(base, body, y_start, x_col_stride, y_col_stride, shift, norm, scale, cols,
                  BLOCK_N: tl.constexpr, LAST_N: tl.constexpr, OUT_TY: tl.constexpr,
                  ACC_TY: tl.constexpr, LOG: tl.constexpr, FOLD: tl.constexpr,
                  EVICT: tl.constexpr, STORE_CACHE: tl.constexpr, VEC: tl.constexpr,
                  WORDS: tl.constexpr, pre, PRE: tl.constexpr):
    # The output of a range read from _range_body in the chunks of _range_stats (whole BLOCK_N
    # chunks, then LAST_N ones), last chunk first: the chunks this program read last (for the
    # max and sum) are the likeliest to be still in cache. With ``PRE`` (whole chunks only) the
    # last chunk was read already, as loaded: ``pre`` (``_split_norm_item``).
    full = _whole_chunks(body, BLOCK_N, LAST_N)
    if LAST_N < BLOCK_N:
        last = tl.arange(0, LAST_N).to(cols.dtype)
        n_last = tl.cdiv(body - full, LAST_N)
        for k in tl.range(0, n_last):
            _store_lanes(base, tl.multiple_of(full + (n_last - 1 - k) * LAST_N, LAST_N), last,
                         body, y_start, x_col_stride, y_col_stride, shift, norm, scale, OUT_TY,
                         ACC_TY, LOG, FOLD, EVICT, STORE_CACHE, VEC, WORDS)
    n_chunks = tl.cdiv(full, BLOCK_N)
    done = 0
    if PRE:
        tl.static_assert(LAST_N == BLOCK_N)
        _store_out(_scaled(pre, scale, ACC_TY), _last_chunk(body, BLOCK_N) + cols, body,
                   y_start, y_col_stride, shift, norm, OUT_TY, LOG, FOLD, STORE_CACHE)
        done = 1
    for k in tl.range(done, n_chunks):
        _store_lanes(base, tl.multiple_of((n_chunks - 1 - k) * BLOCK_N, BLOCK_N), cols, body,
                     y_start, x_col_stride, y_col_stride, shift, norm, scale, OUT_TY, ACC_TY,
                     LOG, FOLD, EVICT, STORE_CACHE, VEC, WORDS)


@triton.jit
def _range_normalize(x_row, y_row, x_col_stride, y_col_stride, cols, lo, hi, shift, d, scale,
                     BLOCK_N: tl.constexpr, LAST_N: tl.constexpr, OUT_TY: tl.constexpr,
                     ACC_TY: tl.constexpr, LOG: tl.constexpr, EVICT: tl.constexpr,
                     STORE_CACHE: tl.constexpr, VEC: tl.constexpr, Y_LIKE_X: tl.constexpr,
                     WORDS: tl.constexpr, pre, PRE: tl.constexpr):
    """``y_row[lo:hi]`` from the row's ``shift`` (safe max) and ``d = sum(exp(x - shift))``,
    reading from ``_range_body`` in the chunks of ``_range_stats`` (``BLOCK_N``, then
    ``LAST_N``) with the eviction policy ``EVICT`` and storing with the cache modifier
    ``STORE_CACHE``. 2-byte rows take the sum off inside the exponent (``_finish``'s FOLD), a
    multiply an element fewer: they carry twice the elements of float32 rows a byte, and
    bfloat16 rows gained up to 5% so on the H200, where float32 rows ran level or lost up to 2%
    (docs/tuning.md, fifty-fifth session).

    With ``VEC`` > 1 (both rows contiguous) the body is stored as vectors where the output
    range sits at the same place in its 16-byte blocks as the input (same strides, and
    pointers aligned alike: any fresh output), element by element otherwise, and the elements
    around it apart, after it (their loads issued first, so their latency overlaps the body's).
    With ``Y_LIKE_X`` the launcher has found the output laid out so for every row, and no row
    is tested: the element stores are not compiled at all, and the kernel runs faster (bf16
    4096x50257 on the H100: 2632 -> 2800 GB/s, docs/tuning.md). With ``WORDS`` a bfloat16
    range is read as 32-bit words (``_store_words``): a body found from the row's address
    always, a whole range (``VEC`` 1) where the launcher has found every row 4-byte aligned,
    contiguous and of an even length.
    Each element is read before it is written, by this program only, so ``y`` may be ``x``.
    """
    # (Through ITEM: under triton-ascend 3.2 the bit width compared with 16 gave no bool.)
    ITEM: tl.constexpr = x_row.dtype.element_ty.primitive_bitwidth // 8
    FOLD: tl.constexpr = ITEM == 2
    norm = _norm(d, LOG, FOLD)
    base, a, body = _range_body(x_row, x_col_stride, lo, hi, VEC)
    # _store_chunks is called from three branches: the runtime test needs y's alignment, and
    # the casts that give it must not be traced where VEC is 1 (Ascend).
    if VEC > 1:
        e, e_mask = _edge_lanes(a, body, hi - lo, VEC)
        xe = _load(x_row + lo + e, e_mask, scale, ACC_TY, EVICT)
        y_body, y_a, _ = _aligned_body(y_row + lo, hi - lo, VEC)
        if Y_LIKE_X:
            # The test below is then of a value with itself, which the compiler folds away
            # with the branch it never takes.
            y_a = a
        if y_a == a:
            _store_chunks(base, body, y_body, 1, 1, shift, norm, scale, cols, BLOCK_N, LAST_N,
                          OUT_TY, ACC_TY, LOG, FOLD, EVICT, STORE_CACHE, VEC, WORDS, pre, PRE)
        else:
            _store_chunks(base, body, y_row + lo + a, 1, 1, shift, norm, scale, cols, BLOCK_N,
                          LAST_N, OUT_TY, ACC_TY, LOG, FOLD, EVICT, STORE_CACHE, VEC, WORDS, pre,
                          PRE)
        tl.store(y_row + lo + e, _out(_finish(xe, shift, norm, LOG, FOLD), OUT_TY), mask=e_mask,
                 cache_modifier=STORE_CACHE)
    else:
        _store_chunks(base, body, y_row + lo * y_col_stride, x_col_stride, y_col_stride, shift,
                      norm, scale, cols, BLOCK_N, LAST_N, OUT_TY, ACC_TY, LOG, FOLD, EVICT,
                      STORE_CACHE, VEC, WORDS, pre, PRE)


@triton.jit
def _store_row_body(y_body, x, xt, cols, n_body, n_cols, y_col_stride, shift, norm, scale,
                    BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr, INDEX_64: tl.constexpr,
                    OUT_TY: tl.constexpr, ACC_TY: tl.constexpr, LOG: tl.constexpr,
                    STORE_CACHE: tl.constexpr):
    # The row kernel's head block ``x`` and tail block ``xt`` (with TAIL_N > 0; both as
    # ``_hold`` keeps them), columns ``cols`` and BLOCK_N.. of the ``n_body`` elements at
    # ``y_body``.
    tl.store(y_body + cols * y_col_stride,
             _out(_finish(_use(x, scale, ACC_TY), shift, norm, LOG, False), OUT_TY),
             mask=cols < n_body, cache_modifier=STORE_CACHE)
    if TAIL_N > 0:
        t_cols, _ = _tail_cols(n_cols, BLOCK_N, TAIL_N, INDEX_64)
        tl.store(y_body + t_cols * y_col_stride,
                 _out(_finish(_use(xt, scale, ACC_TY), shift, norm, LOG, False), OUT_TY),
                 mask=t_cols < n_body, cache_modifier=STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_row_kernel(
    y_ptr, x_ptr, n_rows, n_cols, n_inner,
    x_outer_stride, x_inner_stride, x_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, scale,
    BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    STORE_CACHE: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr,
):
    """A row that fits on chip: one row per iteration as a 1-D block (a 2-D tile of one row
    would spread warps over its size-1 axis and load every element several times), and with
    ``TAIL_N`` > 0 a second block for columns ``BLOCK_N`` on (see ``_tail_cols``).

    With ``VEC`` > 1 (contiguous rows) the blocks hold the row's 16-byte aligned body
    (``_aligned_body``), loaded as vectors, and stored as vectors where the output row sits at
    the same place in its 16-byte blocks (any fresh output); the fewer than ``2 * VEC``
    elements around the body are loaded and stored apart. All of a row is loaded before any of
    it is stored, so ``y`` may be ``x``.
    """
    n_cols = _aligned(n_cols, ALIGN)
    OUT_TY: tl.constexpr = y_ptr.dtype.element_ty
    ACC_TY: tl.constexpr = tl.float64 if OUT_TY == tl.float64 else tl.float32
    ITEM: tl.constexpr = x_ptr.dtype.element_ty.primitive_bitwidth // 8
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = _widen(r, INDEX_64)
        x_row = x_ptr + _row_start(row, n_inner, x_outer_stride, x_inner_stride, ALIGN)
        x_body, a, n_body = _range_body(x_row, x_col_stride, 0, n_cols, VEC)
        if VEC > 1:
            e, e_mask = _edge_lanes(a, n_body, n_cols, VEC)
            xe = _load(x_row + e, e_mask, scale, ACC_TY, "")
        # 2-byte blocks stay as loaded until used (``_hold``).
        x = _hold(_load_body_raw(x_body, cols, n_body, x_col_stride, "", VEC), scale, ACC_TY)
        xt = x  # the tail block, where there is one
        m = _held_max(x, scale, ACC_TY, 0)
        if TAIL_N > 0:
            t_cols, _ = _tail_cols(n_cols, BLOCK_N, TAIL_N, INDEX_64)
            xt = _hold(_load_body_raw(x_body, t_cols, n_body, x_col_stride, "", VEC), scale,
                       ACC_TY)
            m = tl.maximum(m, _held_max(xt, scale, ACC_TY, 0))
        if VEC > 1:
            m = tl.maximum(m, tl.max(xe, axis=0))
        shift = _safe_shift(m)
        d = tl.sum(_exp(_use(x, scale, ACC_TY) - shift), axis=0)
        if TAIL_N > 0:
            d += tl.sum(_exp(_use(xt, scale, ACC_TY) - shift), axis=0)
        if VEC > 1:
            d += tl.sum(_exp(xe - shift), axis=0)
        norm = _norm(d, LOG, False)
        y_row = y_ptr + _row_start(row, n_inner, y_outer_stride, y_inner_stride, ALIGN)
        if VEC > 1:
            tl.store(y_row + e, _out(_finish(xe, shift, norm, LOG, False), OUT_TY), mask=e_mask,
                     cache_modifier=STORE_CACHE)
            y_body, y_a, _ = _aligned_body(y_row, n_cols, VEC)
            if y_a == a:
                _store_row_body(y_body, x, xt, cols, n_body, n_cols, y_col_stride, shift, norm,
                                scale, BLOCK_N, TAIL_N, INDEX_64, OUT_TY, ACC_TY, LOG,
                                STORE_CACHE)
            elif ITEM == 2:
                # An output aligned otherwise takes element stores. For 2-byte rows they are of
                # the body read again in small chunks, so that this rare path does not set the
                # kernel's registers (127 instead of 79 for 8192 + 2048 lanes on 8 warps); float32
                # rows lost that way (docs/tuning.md).
                _store_chunks(x_body, n_body, y_row + a, 1, 1, shift, norm, scale,
                              tl.arange(0, FALLBACK_CHUNK), FALLBACK_CHUNK, FALLBACK_CHUNK,
                              OUT_TY, ACC_TY, LOG, False, "", STORE_CACHE, VEC, False, 0, False)
            else:
                _store_row_body(y_row + a, x, xt, cols, n_body, n_cols, y_col_stride, shift,
                                norm, scale, BLOCK_N, TAIL_N, INDEX_64, OUT_TY, ACC_TY, LOG,
                                STORE_CACHE)
        else:
            _store_row_body(y_row, x, xt, cols, n_body, n_cols, y_col_stride, shift, norm,
                            scale, BLOCK_N, TAIL_N, INDEX_64, OUT_TY, ACC_TY, LOG, STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_tile_kernel(
    y_ptr, x_ptr, n_rows, n_cols, n_inner,
    x_outer_stride, x_inner_stride, x_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr, INDEX_64: tl.constexpr,
    LOG: tl.constexpr, STORE_CACHE: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr,
    BODY: tl.constexpr = False, Y_LIKE_X: tl.constexpr = False,
):
    """Rows that fit on chip: a ``BLOCK_M x BLOCK_N`` tile of whole rows per iteration (and a
    ``BLOCK_M x TAIL_N`` one for columns ``BLOCK_N`` on, as in the row kernel). With ``VEC`` > 1
    (contiguous rows, no tail) each row is read in 16-byte vectors:

    * through its aligned ``_window`` (``BLOCK_N`` at least ``n_cols + VEC - 1``): lane ``j`` of
      a row holds column ``j - lead``; the stores are of single elements;
    * with ``BODY``, from its aligned body (``_aligned_body``): lane ``j`` holds column
      ``a + j`` of the row's own ``a``, and the fewer than ``2 * VEC`` elements around the body
      are loaded and stored apart. With ``Y_LIKE_X`` (every output row sits in its 16-byte
      blocks as its input row does: ``launcher.rows_alike``) the body is stored as vectors too.

    A tile is loaded whole before it is stored, so ``y`` may be ``x`` (in place).
    """
    n_cols = _aligned(n_cols, ALIGN)
    tl.static_assert(VEC == 1 or TAIL_N == 0)
    OUT_TY: tl.constexpr = y_ptr.dtype.element_ty
    ACC_TY: tl.constexpr = tl.float64 if OUT_TY == tl.float64 else tl.float32
    ITEM: tl.constexpr = x_ptr.dtype.element_ty.primitive_bitwidth // 8
    lanes = _widen(tl.arange(0, BLOCK_N), INDEX_64)[None, :]
    n_blocks = tl.cdiv(n_rows, BLOCK_M)
    for block in tl.range(tl.program_id(0), n_blocks, tl.num_programs(0)):
        rows = _widen(block, INDEX_64) * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = (rows < n_rows)[:, None]
        x_start = _row_start(rows, n_inner, x_outer_stride, x_inner_stride, ALIGN)
        # 2-byte tiles stay as loaded until used (``_hold``).
        if VEC > 1 and BODY:
            # One body per row (columns of pointers and counts: multiple_of takes 1-d tensors).
            x_row = x_ptr + x_start
            x_body, a, n_body = _aligned_body(x_row, n_cols, VEC)
            cols = lanes
            mask = row_mask & (lanes < n_body[:, None])
            x = _hold(_load_raw(x_body[:, None] + lanes, mask, ""), scale, ACC_TY)
            e, e_mask = _edge_lanes(a[:, None], n_body[:, None], n_cols, VEC)
            e_mask = row_mask & e_mask
            xe = _load(x_row[:, None] + e, e_mask, scale, ACC_TY, "")
        elif VEC > 1:
            # One window per row (a column of pointers: multiple_of takes 1-d tensors).
            base, lead, span = _window(x_ptr + x_start, n_cols, VEC)
            lead = lead[:, None]
            x = tl.load(base[:, None] + lanes, mask=row_mask & (lanes < span[:, None]),
                        other=float("-inf"))
            cols = lanes - lead
            mask = row_mask & _in_window(lanes, lead, n_cols)
            x = tl.where(mask, _hold(x, scale, ACC_TY), float("-inf"))
        else:
            cols = lanes
            mask = row_mask & (cols < n_cols)
            x = _hold(_load_raw(x_ptr + x_start[:, None] + cols * x_col_stride, mask, ""), scale,
                      ACC_TY)
        m = _held_max(x, scale, ACC_TY, 1)
        if TAIL_N > 0:
            t_cols, t_mask = _tail_cols(n_cols, BLOCK_N, TAIL_N, INDEX_64)
            t_mask = row_mask & t_mask[None, :]
            xt = _hold(_load_raw(x_ptr + x_start[:, None] + t_cols[None, :] * x_col_stride,
                                 t_mask, ""), scale, ACC_TY)
            m = tl.maximum(m, _held_max(xt, scale, ACC_TY, 1))
        if VEC > 1 and BODY:
            m = tl.maximum(m, tl.max(xe, axis=1))
        shift = _safe_shift(m)[:, None]
        d = tl.sum(_exp(_use(x, scale, ACC_TY) - shift), axis=1)
        if TAIL_N > 0:
            d += tl.sum(_exp(_use(xt, scale, ACC_TY) - shift), axis=1)
        if VEC > 1 and BODY:
            d += tl.sum(_exp(xe - shift), axis=1)
        norm = _norm(d, LOG, False)[:, None]
        y_start = _row_start(rows, n_inner, y_outer_stride, y_inner_stride, ALIGN)
        if VEC > 1 and BODY:
            y_row = y_ptr + y_start
            tl.store(y_row[:, None] + e, _out(_finish(xe, shift, norm, LOG, False), OUT_TY),
                     mask=e_mask, cache_modifier=STORE_CACHE)
            y_body = y_row + a
            if Y_LIKE_X:
                y_body = tl.multiple_of(y_body, VEC * ITEM)
            y_cols = y_body[:, None] + lanes
        else:
            y_cols = y_ptr + y_start[:, None] + cols * y_col_stride
        tl.store(y_cols, _out(_finish(_use(x, scale, ACC_TY), shift, norm, LOG, False), OUT_TY),
                 mask=mask, cache_modifier=STORE_CACHE)
        if TAIL_N > 0:
            tl.store(y_ptr + y_start[:, None] + t_cols[None, :] * y_col_stride,
                     _out(_finish(_use(xt, scale, ACC_TY), shift, norm, LOG, False), OUT_TY),
                     mask=t_mask, cache_modifier=STORE_CACHE)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_online_kernel(
    y_ptr, x_ptr, n_rows, n_cols, n_inner,
    x_outer_stride, x_inner_stride, x_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, scale,
    BLOCK_N: tl.constexpr, LAST_N: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    FIRST_EVICT: tl.constexpr, SECOND_EVICT: tl.constexpr, STORE_CACHE: tl.constexpr,
    VEC: tl.constexpr, STAT_LANES: tl.constexpr, ALIGN: tl.constexpr, Y_LIKE_X: tl.constexpr,
    WORDS: tl.constexpr,
):
    """Rows longer than a block: one row per iteration, two passes over ``BLOCK_N`` chunks
    and, for what is left of the row, chunks of ``LAST_N`` (at most ``BLOCK_N``).

    The first pass reads with eviction policy ``FIRST_EVICT``, the second with
    ``SECOND_EVICT`` (on CUDA ``evict_last`` then ``evict_first``, which Triton applies to L1
    and L2: the first read's lines stay for the second, which needs them no more; on the H200
    the second read finds them in L1, or else in DRAM, docs/tuning.md, sixty-first session).
    The first keeps ``STAT_LANES`` running maxima and sums (``_range_stats``; 0: one).
    ``Y_LIKE_X`` and ``WORDS`` (the second pass reads bfloat16 rows as 32-bit words): see
    ``_range_normalize``."""
    n_cols = _aligned(n_cols, ALIGN)
    OUT_TY: tl.constexpr = y_ptr.dtype.element_ty
    ACC_TY: tl.constexpr = tl.float64 if OUT_TY == tl.float64 else tl.float32
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = _widen(r, INDEX_64)
        x_row = x_ptr + _row_start(row, n_inner, x_outer_stride, x_inner_stride, ALIGN)
        y_row = y_ptr + _row_start(row, n_inner, y_outer_stride, y_inner_stride, ALIGN)
        m, d = _range_stats(x_row, x_col_stride, cols, 0, n_cols, scale, BLOCK_N, LAST_N,
                            ACC_TY, FIRST_EVICT, VEC, STAT_LANES)
        _range_normalize(x_row, y_row, x_col_stride, y_col_stride, cols, 0, n_cols,
                         _safe_shift(m), d, scale, BLOCK_N, LAST_N, OUT_TY, ACC_TY, LOG,
                         SECOND_EVICT, STORE_CACHE, VEC, Y_LIKE_X, WORDS, 0, False)


@triton.jit(do_not_specialize=["n_rows"])
def softmax_split_stats_kernel(
    part_ptr, x_ptr, n_rows, n_cols, n_inner,
    x_outer_stride, x_inner_stride, x_col_stride, split_cols, scale,
    N_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr, INDEX_64: tl.constexpr, PDL: tl.constexpr,
    EVICT: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr,
):
    """Pass 1 of a split row: max and sum of each ``split_cols`` range into ``part_ptr``, a
    ``[2, n_rows, N_SPLITS]`` buffer (maxima, then sums; one buffer, one allocation), reading
    with the eviction policy ``EVICT`` (pass 2 reads the same ranges again).

    With ``PDL`` (CUDA) pass 2 may be launched at once; it waits for this kernel inside.
    """
    if PDL:
        gdc_launch_dependents()
    n_cols = _aligned(n_cols, ALIGN)
    ACC_TY: tl.constexpr = part_ptr.dtype.element_ty
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    n_items = n_rows * N_SPLITS
    for i in tl.range(tl.program_id(0), n_items, tl.num_programs(0)):
        item = _widen(i, INDEX_64)
        row, lo, hi = _split_range(item, split_cols, n_cols, N_SPLITS)
        x_row = x_ptr + _row_start(row, n_inner, x_outer_stride, x_inner_stride, ALIGN)
        m, d = _range_stats(x_row, x_col_stride, cols, lo, hi, scale, BLOCK_N, BLOCK_N, ACC_TY,
                            EVICT, VEC, 0)
        tl.store(part_ptr + item, m)
        tl.store(part_ptr + n_items + item, d)


@triton.jit
def _combined_parts(parts, sums):
    # The split kernels' partial results at ``parts`` (maxima; their sums ``sums`` further on),
    # combined along axis 0: the safe shift and ``sum(exp(x - shift))`` of what they cover.
    m_parts = tl.load(parts)
    d_parts = tl.load(parts + sums)
    shift = _safe_shift(tl.max(m_parts, axis=0))
    return shift, tl.sum(d_parts * _exp(m_parts - shift), axis=0)


@triton.jit
def _split_norm_item(y_ptr, part_ptr, x_ptr, item, n_items, n_cols, n_inner,
                     x_outer_stride, x_inner_stride, x_col_stride,
                     y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale, cols,
                     N_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr, LOG: tl.constexpr,
                     EVICT: tl.constexpr, STORE_CACHE: tl.constexpr, VEC: tl.constexpr,
                     ALIGN: tl.constexpr, Y_LIKE_X: tl.constexpr, pre, PRE: tl.constexpr):
    # Pass 2's work item ``item``: the row's partial max/sum combined, its range normalised
    # (``pre``: the range's last chunk, read before pass 1 ended, with ``PRE``).
    OUT_TY: tl.constexpr = y_ptr.dtype.element_ty
    ACC_TY: tl.constexpr = part_ptr.dtype.element_ty
    row, lo, hi = _split_range(item, split_cols, n_cols, N_SPLITS)
    shift, d = _combined_parts(part_ptr + row * N_SPLITS + tl.arange(0, N_SPLITS), n_items)
    x_row = x_ptr + _row_start(row, n_inner, x_outer_stride, x_inner_stride, ALIGN)
    y_row = y_ptr + _row_start(row, n_inner, y_outer_stride, y_inner_stride, ALIGN)
    _range_normalize(x_row, y_row, x_col_stride, y_col_stride, cols, lo, hi, shift, d, scale,
                     BLOCK_N, BLOCK_N, OUT_TY, ACC_TY, LOG, EVICT, STORE_CACHE, VEC, Y_LIKE_X,
                     False, pre, PRE)


@triton.jit
def _items_last_first(n_items, INDEX_64: tl.constexpr):
    """The split second passes' share of ``n_items`` work items: of ``P`` programs, program
    ``p`` takes items ``p``, ``p + P``, ``p + 2P``, ... last first, so each wave of programs
    starts on pass 1's last items, the likeliest still in L2. Returns ``(last, count, P)``:
    the program's ``k``-th item is ``last - k * P``. Pass 1's reverse order (program ``p``:
    ``n_items - 1 - p``, then ``P`` less each time) gives each wave the same items but ran up
    to 4% slower on batches of vocabulary rows on the H200 (docs/tuning.md, fifty-seventh
    session)."""
    pid = _widen(tl.program_id(0), INDEX_64)
    n_programs = tl.num_programs(0)
    count = tl.cdiv(n_items - pid, n_programs)
    return pid + (count - 1) * n_programs, count, n_programs


@triton.jit(do_not_specialize=["n_rows"])
def softmax_split_norm_kernel(
    y_ptr, part_ptr, x_ptr, n_rows, n_cols, n_inner,
    x_outer_stride, x_inner_stride, x_col_stride,
    y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale,
    N_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr, INDEX_64: tl.constexpr, LOG: tl.constexpr,
    PDL: tl.constexpr, EVICT: tl.constexpr, STORE_CACHE: tl.constexpr, VEC: tl.constexpr,
    ALIGN: tl.constexpr, Y_LIKE_X: tl.constexpr,
):
    """Pass 2 of a split row: combine the row's partial max/sum, normalise one column range
    (reading with the eviction policy ``EVICT``), items in the order of
    ``_items_last_first``.

    A program reads only the column range it writes (pass 1 has read the whole row before this
    kernel writes), so ``y`` may be ``x`` (in place). With ``PDL`` this kernel is launched
    while pass 1 runs, and waits here for pass 1 to finish and its writes to be visible; a
    program reads the last chunk of its first range before it waits (pass 1 writes only the
    partial results), so that read overlaps the end of pass 1. The launcher's grid is at most
    the items, so every program has a first one.
    """
    n_cols = _aligned(n_cols, ALIGN)
    cols = _widen(tl.arange(0, BLOCK_N), INDEX_64)
    n_items = n_rows * N_SPLITS
    last, n_mine, n_programs = _items_last_first(n_items, INDEX_64)
    first = 0
    if PDL:
        item = last
        row, lo, hi = _split_range(item, split_cols, n_cols, N_SPLITS)
        x_row = x_ptr + _row_start(row, n_inner, x_outer_stride, x_inner_stride, ALIGN)
        base, _, body = _range_body(x_row, x_col_stride, lo, hi, VEC)
        pre = _load_body_raw(base, _last_chunk(body, BLOCK_N) + cols, body, x_col_stride,
                             EVICT, VEC)
        gdc_wait()
        _split_norm_item(y_ptr, part_ptr, x_ptr, item, n_items, n_cols, n_inner,
                         x_outer_stride, x_inner_stride, x_col_stride,
                         y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale, cols,
                         N_SPLITS, BLOCK_N, LOG, EVICT, STORE_CACHE, VEC, ALIGN, Y_LIKE_X, pre,
                         True)
        first = 1
    for k in tl.range(first, n_mine):
        _split_norm_item(y_ptr, part_ptr, x_ptr, last - k * n_programs, n_items,
                         n_cols, n_inner, x_outer_stride, x_inner_stride, x_col_stride,
                         y_outer_stride, y_inner_stride, y_col_stride, split_cols, scale, cols,
                         N_SPLITS, BLOCK_N, LOG, EVICT, STORE_CACHE, VEC, ALIGN, Y_LIKE_X, 0,
                         False)
