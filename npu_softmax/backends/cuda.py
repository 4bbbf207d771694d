"""NVIDIA (and AMD, through Triton's HIP backend) GPUs: register tiles, occupancy-sized grids."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, NamedTuple

import triton

from .. import _compat
from ..layout import RowLayout
from .base import Backend, head_tail, stat_lanes_per_vector, window_lanes

if TYPE_CHECKING:
    from ..launcher import Plan


class ShortTile(NamedTuple):
    """The forward's tile of short rows that are not 16-byte aligned, elements next to each
    other (``_short_tile``)."""

    #: Rows a tile; 0 for none.
    rows: int = 0
    warps: int = 0
    #: Each row read and written from its aligned body (``CudaBackend.body_rows``).
    bodies: bool = False


#: No such tile.
NO_SHORT_TILE = ShortTile()
#: Threads of the warps every warp count below is in (NVIDIA's). Where a target's warps are
#: wider (AMD CDNA's wavefronts of 64), a program gets as many threads, in fewer warps: the
#: elements a thread holds stay as tuned, and a program of 32 such warps, 2048 threads, would
#: be more than a block may have (1024).
TUNED_WARP_SIZE = 32
#: Programs of 16 or more warps (a row or chunk of 8192+ elements each) are launched this many
#: times over what the SMs hold at once; each still loops, but the hardware scheduler, not the
#: fixed round-robin, then evens out the last rows. Measured through the API on the H100
#: (2026-11-22, docs/tuning.md): 4096x8192 fp32 2738 -> 2825 GB/s, bf16 2573 -> 2701, 4096x32768
#: fp32 2817 -> 2926; tiles of short rows gained nothing from 16 waves (their grids: below).
WIDE_PROGRAM_WAVES = 16
#: Programs of fewer warps of the row kernels (tiles of short rows, rows of up to 4096
#: elements, one-warp 2-byte rows, 8-warp chunks) are launched at least this many per SM, more
#: than an SM keeps at once, so a grid of small work items is mostly one item per program and
#: the hardware scheduler evens out the last ones. Through the API on the H100 (2026-11-26,
#: twenty-seventh session, docs/tuning.md), best of 3, against 32 (64 for one warp): fp32
#: 65536x333 2603 -> 2727 GB/s, 32768x777 2672 -> 2771, 65536x700 2787 -> 2874, 131072x50
#: 2061 -> 2128, 16384x3000 2827 -> 2897; bf16 16384x4096 2781 -> 2860, 65536x200 2139 ->
#: 2205, 32768x777 (one warp) 2311 -> 2379, 16384x20001 (8-warp chunks) 2642 -> 2798; the
#: backward of fp32 65536x333 2742 -> 2817, bf16 2226 -> 2393. One item per program, with no
#: floor at all, lost on some (fp32 65536x100 2263 -> 2190, bf16 65536x333 2220 -> 1971).
MIN_PROGRAMS_PER_SM = 128
#: ... and the ``cols`` kernels' programs of fewer warps at least this many, the floor their
#: sizes were measured with (fifteenth session on): 128 moved none of the benchmark's other
#: dims past noise (2026-11-26; bf16 dim 1 of 512x21x4096 2186 -> 2089 GB/s).
COLUMN_PROGRAMS_PER_SM = 32
#: Row programs of this many warps with a tail (2-byte rows of a head of 8192 and a tail,
#: 8193-10240 elements) are launched only as many as the SMs hold at once, each looping over
#: rows. Through the API on the H100 (2026-11-24, tenth session, docs/tuning.md), two rounds,
#: against the floor of 32 an SM: bf16 4096x8448 2355 -> 2406 GB/s, 4096x9472 2366 -> 2406,
#: 8192x9000 2423 -> 2475, unaligned 4096x8500 2199 -> 2292, 4096x9001 2216 -> 2291, 2048x9472
#: 2114 -> 2181; 4096x10240 level. Heads of 4096 on 4 warps were mixed (4096x4352 2321 ->
#: 2222, 4096x7168 2616 -> 2667) and float32 rows of 4096 on 8 warps lost (4096x3000 2537 ->
#: 2427), so they keep the floor.
RESIDENT_ROW_WARPS = 8
#: Row blocks per SM (``CudaBackend.row_blocks``) of forward float32 rows in 1024-lane blocks
#: (513-1024 elements) that are 16-byte aligned: at least this many, 4 before, so that a tensor
#: of up to 16 such rows an SM goes in tiles of 2 rows (1 up to 8 an SM) rather than 4 (2),
#: twice as many 4-warp programs. Through the API on the H100 (2026-11-26, twenty-eighth
#: session, docs/tuning.md), two runs, best of 3 each: fp32 2048x1000 1566 -> 1610 and 1561 ->
#: 1605 GB/s, 1500x1000 1289 -> 1354 and 1280 -> 1349, 2000x800 1356 -> 1434 and 1361 -> 1434,
#: 600x1024 721 -> 744 and 714 -> 728, 800x600 585 -> 600 and 574 -> 594; 1024x1024 level. Rows
#: in 2048-lane blocks lost so (1024x2048 2009 -> 1971 and 1993 -> 1956), and rows of 512 lanes
#: or fewer were mixed (4096x256 1106 -> 1036, 2048x512 1057 -> 1135). On a GPU of fast memory
#: such rows go one to a program instead (``FAST_FLOAT_ROW_LANES``).
ALIGNED_FLOAT_ROW_BLOCKS = 8
ALIGNED_FLOAT_ROW_BLOCK_LANES = 1024
#: Most elements of a tile of several rows that are not 16-byte aligned (4096 for aligned rows).
UNALIGNED_TILE_ELEMS = 1024
#: Most elements of a tile of such float32 rows of 512- and 1024-lane blocks (4 or 2 rows).
UNALIGNED_FLOAT_TILE_ELEMS = 2048
#: Float32 rows of whole vectors whose length is not a multiple of 16 (``ALIGN`` > 1), in blocks
#: of at most this many lanes, go in tiles of at most ``HINTED_FLOAT_TILE_ELEMS`` elements, 8 a
#: thread, in the forward (``CudaBackend.rows_per_block``). Through the API on the H100
#: (2026-11-24, twelfth session, docs/tuning.md), two runs, best of each, against tiles of 4096
#: elements on 4 warps: fp32 65536x100 2169 -> 2238 GB/s, 16384x100 1313 -> 1412, 131072x100
#: 2494 -> 2550, 32768x60 1425 -> 1541, 65536x200 2530 -> 2584, 8192x200 level; rows of 512
#: and 1024 lanes lost so (16384x300 2090 -> 1908, 4096x1000 2077 -> 2004) and keep theirs.
HINTED_FLOAT_TILE_LANES = 256
HINTED_FLOAT_TILE_ELEMS = 2048
#: Widest block of a tile row read through aligned windows, by input element size (others: none;
#: nor float32 rows of 512-lane blocks, ``CudaBackend.windows``; nor the forward's float32 rows
#: of up to ``PLAIN_FLOAT_TILE_COLS``, ``CudaBackend.window_vec``).
WINDOW_TILE_LANES = {4: 1024, 2: 128}
#: Float32 rows of up to 24 elements go in the forward's tiles as they are, element by element:
#: their windows cost more lanes and index work than the vector loads save. Through the API on
#: the H100 (2026-11-28, forty-eighth session, docs/tuning.md), windows against none, best of 3,
#: tensors of 16/64/128 MB: rows of 5 1247 -> 1359, 2088 -> 2354 (128 MB) GB/s; 9 1147 -> 1266,
#: 1931 -> 2262; 13 2331 -> 2418; 17 1115 -> 1190, 1590 -> 1797, 1834 -> 2036; 21 1794 -> 1921;
#: 23 2206 -> 2279. Rows of 25-29 (32-lane blocks too) were level to 6% slower so.
PLAIN_FLOAT_TILE_COLS = 24
#: Lanes of the 2-byte rows that are not 16-byte aligned (or held as a head and a tail) which
#: the forward runs one to a program, with one warp: more than 256 and at most 1024 (head and
#: tail included), ...
ONE_WARP_ROW_LANES = (257, 1024)
#: ... but the unaligned ones in blocks of 512 lanes (257-512 elements), and those of 129-256
#: elements (256 lanes), go this many to a one-warp tile of 1024 lanes, by their block's lanes,
#: each read and written from its aligned body (``CudaBackend.body_rows``).
BODY_TILE_ROWS = {256: 4, 512: 2}
#: On a GPU of fast memory the forward's 16-byte aligned 2-byte rows in blocks of this many lanes
#: (776-1024 elements, no tail) go one to a one-warp program too (``ONE_WARP_ROW_LANES``): tiles of
#: 4 rows on 8 warps before. Through the API on the H200 (2026-11-29, sixty-sixth session,
#: docs/tuning.md), forms alternating in one process, two rounds: of 64 MB, bf16 41237x776 2918 ->
#: 3422-3431 GB/s (copy 3347-3404), 40000x800 3115-3170 -> 3431-3506, 35714x896 3317-3381 ->
#: 3500-3571, 32000x1000 3265-3317 -> 3490-3493, 31250x1024 3457-3527 -> 3594-3600, fp16 32000x1000
#: 3239-3336 -> 3419-3512; of 8 MB and less, level or faster (bf16 4096x1024 1808-1814 -> 1802-1971,
#: 2048x1000 1076-1191 -> 1085-1213); of 512 MB level (262144x1000 3844-3853 -> 3846-3855). 2 warps
#: ran as fast, 4 slower. Rows of 392-512 elements (blocks of 512) kept their tiles: one to a
#: program they lost (bf16 62500x512 3552-3556 -> 3413-3478, 16384x448 2164-2271 -> 1896-1990) or
#: ran level (80000x400).
FAST_HALF_ROW_LANES = 1024
#: The forward's 2-byte rows of 1025-2048 elements that are not 16-byte aligned (blocks of
#: this many lanes) go one to a program of two warps, which reads each row's aligned body as
#: vectors, rather than two to a tile read element by element
#: (``CudaBackend._two_warp_row``). Through the API on the H100 (2026-11-27, fortieth session,
#: docs/tuning.md), best of 2: bf16 31220x1025 1704 -> 2528 GB/s, 29091x1100 2290 -> 2581,
#: 24006x1333 2043 -> 2640, 18008x1777 2311 -> 2640, 15633x2047 2386 -> 2648, 16384x1111 1676
#: -> 2363, 4096x1025 1074 -> 1379, fp16 31220x1025 1719 -> 2581, 8192x1333 1630 -> 2104; rows
#: of runs of 4 elements too (21333x1500 2550 -> 2603). Few rows, already one to a program of 4
#: warps, level or faster (1000x1025 540 -> 599, 1823x1500 1237 -> 1225, 200x1999 259 -> 263);
#: 4 warps lost to 2 on most (31220x1025 2346, 16384x1111 2147). On a GPU of fast memory the
#: 16-byte aligned ones too: through the API on the H200 (2026-11-29, sixty-fifth session,
#: docs/tuning.md), forms alternating in one process, two rounds, against two rows a tile on 8
#: warps: bf16 30075x1064 2676-2719 -> 3425, 20833x1536 3367-3370 -> 3540-3546, 15625x2048
#: 3506 -> 3571-3650, 4096x2048 2399-2411 -> 2444-2583 (4 warps between, 8 slower). Float32
#: rows ran within 3% either way one to a program (7812x2048 3648-3653 -> 3587-3666,
#: 131072x2048 3964-3967 -> 3923-3929) and keep their tiles.
TWO_WARP_ROW_LANES = 2048
#: Warps of the forward's rows that are not 16-byte aligned held one to a program in one
#: block of 8192 lanes (float32 rows of 4097-8192 elements; 2-byte ones of 5121-8192, those
#: that take no tail): 16 before. Through the API on the H100 (2026-11-27,
#: fortieth session, docs/tuning.md), best of 2, tensors of 128 MB: fp32 3905x4097 2249 -> 2604
#: GB/s, 3199x5001 2451 -> 2641, 2605x6143 2557 -> 2637, 2057x7777 and 1953x8191 level (2614
#: -> 2600, 2609 -> 2597); bf16 5332x6001 1958 -> 2634, 4115x7777 2197 -> 2648, 3907x8191 2235
#: -> 2651, fp16 4571x7001 2133 -> 2657; of 16 MB: fp32 488x4097 1277 -> 1437, 257x7777 1477 ->
#: 1491, bf16 667x6001 1123 -> 1405, 514x7777 1292 -> 1450, fp16 571x7001 1219 -> 1500. 4 warps
#: ran as fast on the large tensors and were mixed on the small ones. Aligned rows keep 16 (4
#: warps lost on them in the seventh session: 4096x5000 2505 -> 2447).
UNALIGNED_ROW_8192_WARPS = 8
#: Warps of the forward's tiles of rows of one element (``softmax(x, dim)`` over a dim of size
#: 1), where a tile holds at least ``SINGLE_COLUMN_TILE_ROWS`` of them: 4 before (2 for 2-byte
#: ones, counted as rows that are not 16-byte aligned). Through the API
#: on the H100 (2026-11-27, fortieth session, docs/tuning.md), best of 2: fp32 16000000x1 2046
#: -> 2665 GB/s, bf16 32000000x1 971 -> 2527, 4194304x1 715 -> 1511, fp16 16777216x1 931 ->
#: 2277 (torch.softmax 2256, 1590, 1152, 1511). Smaller tiles, of fewer rows, lost so
#: (100000x1, 64 rows a tile: 152 -> 144).
SINGLE_COLUMN_TILE_ROWS = 1024
SINGLE_COLUMN_TILE_WARPS = 8
#: The forward's float32 rows of odd length (runs of one element, ``RowLayout.row_align`` 1)
#: of at most ``PADDED_ODD_ROW_MOST_COLS`` elements by block (``CudaBackend.short_tile``)
#: go in tiles of ``PADDED_ODD_TILE_ROWS`` rows on one warp. In blocks of 128 and 256 lanes,
#: rows that leave at least a quarter of a block of 128 lanes empty, or a third of 256: tiles of
#: 8 rows of 128 lanes on 4 warps before, of 4 of 256 on 4. Through the
#: API on the H100 (2026-11-27, forty-second session, docs/tuning.md), best of 2, before -> after in
#: one run each, tensors of 128 MB: fp32 246154x65 1803 -> 2483 GB/s, 231884x69 1912 -> 2510,
#: 197531x81 2174 -> 2562, 179775x89 2286 -> 2533, 164948x97 2432 -> 2579, 124031x129 2126 ->
#: 2574, 122137x131 2152 -> 2575, 113475x141 2256 -> 2619, 99379x161 2430 -> 2638
#: (torch.softmax 2355-2567: under it before on every one); of 24 MB: 46154x65 1334 ->
#: 1612, 43478x69 1389 -> 1700, 37037x81 1553 -> 1735, 33708x89 1550 -> 1721, 30928x97 1667 ->
#: 1735, 23256x129 1475 -> 1733, 18634x161 1561 -> 1793; of 8 MB level or faster (11236x89
#: 900 -> 1009, 10309x97 1014 -> 1012, 7752x129 836 -> 987, 6211x161 1002 -> 1009). Fuller rows
#: were mixed: of 128 lanes, 105-127 (125984x127 2459 -> 2500, but 7874x127 973 -> 899 and
#: 23622x127 1611 -> 1584); of 256 lanes, 171-255, slower at 8 MB (5848x171 993 -> 932, 5236x191
#: 1014 -> 930). Rows of 8-byte runs were mixed on fewer warps (8 rows on 2: 242424x66 2274 ->
#: 2474, but 15152x66 860 -> 468), and 8 rows of 128 lanes on 2 warps ran between (246154x65
#: 2255).
#:
#: Rows of 33-63 elements (blocks of 64 lanes) go 8 to such a tile (512 elements, as 4 rows of
#: 128): tiles of 16 rows on 4 warps before. Through the API on the H200 (2026-11-28,
#: fifty-second session, docs/tuning.md), best of 2, forms alternating in one process: of 128
#: MB, fp32 484848x33 1797-1799 -> 2405-2410 GB/s, 410256x39 2050-2066 -> 2786-2787, 355555x45
#: 2299-2317 -> 3147-3162, 301886x53 2626-2630 -> 3425-3428, 262295x61 2835-2886 -> 3487-3493,
#: 253968x63 2597-2609 -> 3135-3185 (torch.softmax 1897-3106: under it before on each); of 24
#: MB, 90909x33 1293-1344 -> 1708-1712, 61224x49 1701 -> 2083-2089, 47619x63 1645-1720 ->
#: 1918-1928; of 8 MB mostly faster (30303x33 820-877 -> 926, 25641x39 933 -> 1092), 16393x61
#: slower (1147 -> 1055-1059). Even rows (8-byte runs) of 34-62 lost so at 128 MB (470588x34
#: 2948-2998 -> 2603-2606, 258064x62 3396-3401 -> 3276-3281); rows of 17-31 (blocks of 32)
#: were mixed. Not measured on the H100, whose 2-byte rows of 33-64 gained from the same tiles.
PADDED_ODD_ROW_MOST_COLS = {64: 63, 128: 96, 256: 170}
#: ... and on a GPU of fast memory (``CudaBackend.fast_memory``) the fuller rows too, up to
#: 127 elements in 128 lanes and 241 in 256. Through the API on the H200 (2026-11-28,
#: fifty-second session), as above: of 128 MB, fp32 164948x97 2503 -> 3342-3404 GB/s,
#: 144144x111 2736-2772 -> 3441-3442, 125984x127 2716-2721 -> 3268-3322, 93567x171 2654-2661 ->
#: 3524, 79601x201 2974-2981 -> 3506-3575, 66390x241 3292-3333 -> 3633-3640 (torch.softmax
#: 3110-3398: under it before on all but 241, level); of 24 MB, 30927x97 1756-1761 -> 2119,
#: 23622x127 1705-1777 -> 1969; of 8 MB within what they ran from round to round. 62745x255
#: was level (3469-3481 -> 3454-3460). On the H100 (forty-second session) rows of 105-127 were
#: mixed so.
FAST_PADDED_ODD_ROW_MOST_COLS = {**PADDED_ODD_ROW_MOST_COLS, 128: 127, 256: 241}
PADDED_ODD_TILE_ROWS = {64: 8, 128: 4, 256: 4}
#: On a GPU of fast memory the forward's short rows that are not 16-byte aligned, elements next to
#: each other, of at most this many elements by item size and block (lanes), go in their one-warp
#: tiles (``CudaBackend.short_tile``) read and written from their aligned bodies (``body_rows``:
#: vector loads, and vector stores where the output sits in its 16-byte blocks as the input does,
#: the few elements around the body apart), not through windows, which store single elements:
#: 2-byte rows of 65-127 elements but those of 8-byte runs (4 a tile; such runs ran level so on a
#: tensor of 6.5 MB, bf16 32768x100, and lost 26% in 64 lanes), float32 rows of odd length of
#: 33-47 (8) and 65-127 (``FAST_FLOAT_BODY_TILE_ROWS``); so do rows of odd length whose windows do
#: not fit in their block, which the tile would read element by element (2-byte rows of 59-63,
#: float32 rows of 63). Those tiles are close to issue-bound (Nsight Compute: every scheduler
#: issues on 79% of the cycles of fp32 231884x69, 3 warps eligible), and the body form's loop
#: takes fewer instructions a row (sm_90: 345 against 552 a tile of 4 fp32 rows of 69; 101 against
#: 127 a bf16 row of 69). Through the API on the H200, forms alternating in one process, best of 2
#: (docs/tuning.md): sixty-second session (2026-11-29), fp32 231884x69 2825 -> 3367 GB/s (3317 the
#: copy), 200000x65 2647 -> 3140, 131072x77 2848 -> 3134, 164948x97 3356 -> 3460, 16384x69 1071 ->
#: 1183; 125984x127 3241 -> 3537, 23622x127 1870 -> 2273, 144144x111 and 11236x89 level;
#: sixty-third (same day), bf16 231884x69 1522 -> 2012 (the copy 2734-2815), 484848x66 1836 ->
#: 2066, 359550x89 2029 -> 2615, 288288x111 2461 -> 2941, 252000x127 2617 -> 3150, 164948x97 2016
#: -> 2491, fp16 231884x69 1517 -> 2045, column slices (231884 rows of 69 of 78, element stores)
#: 1495 -> 1625; fp32 484848x33 2430 -> 2863, 90909x33 1689 -> 1799, 400000x41 2958 -> 3241,
#: 355555x45 3094 -> 3255, 4096x37 184 -> 207; without windows, bf16 542372x59 2046 -> 2274,
#: 524590x61 2116 -> 2334, 507936x63 2182 -> 2402, 31746x63 859 -> 947, fp32 253968x63 3190 ->
#: 3404. Rows that windows take lost or ran level so: float32 of 49-61 (320000x51 3358 -> 3278,
#: 290909x59 3500 -> 3368, 262295x61 3484 -> 3401, 16393x61 1131 -> 1037), 2-byte of 33-57 (bf16
#: 421052x38 1629 -> 1466, 711111x45 1952 -> 1807, 640000x50 2193 -> 1990, 561403x57 2365 ->
#: 2198), float32 of 129-241 (4 or 8 rows a tile: fp32 65536x201 3470 -> 3456, 72000x233 3644 ->
#: 3548), as did 2-byte rows of 8-byte runs (262144x60 2900 -> 2137) and 4-byte runs in 64 lanes
#: (551724x58 2385 -> 2257, 516129x62 2474 -> 2395) and 2-byte tiles of 8 or 16 rows: those keep
#: their plans.
FAST_BODY_TILE_MOST_COLS = {2: {128: 127}, 4: {64: 47, 128: 127}}
#: ... the float32 rows of 65-127 8 to a tile, where windows took 4 (4 rows a tile read from
#: their bodies ran fp32 231884x69 at 3182 GB/s).
FAST_FLOAT_BODY_TILE_ROWS = {128: 8}
#: The forward's 2-byte rows that are not 16-byte aligned, elements next to each other, in
#: blocks of 64 or 128 lanes (33-128 elements, ``CudaBackend.short_tile``), go this many
#: to a tile on one warp, 512 elements (16 a thread): tiles of 1024 elements on 2 warps before.
#: Through the API on the H100 (2026-11-27, forty-third session, docs/tuning.md), best of 2,
#: forms forced in one run each (before -> after): of 128 MB, bf16 969697x33 1102 -> 1478 GB/s,
#: 507937x63 1495 -> 2000 (torch.softmax 1745), 492308x65 1472 -> 1547, 484848x66 1454 -> 1756,
#: 251969x127 2030 -> 2197 (torch.softmax 2066), fp16 251969x127 2020 -> 2217; of 24 MB, bf16
#: 181818x33 862 -> 1111, 95238x63 1048 -> 1409 (torch.softmax 1310), 47244x127 1270 -> 1516
#: (1385), 85714x70 1059 -> 1331; of 8 MB, bf16 31746x63 636 -> 784 (torch.softmax 857),
#: 15748x127 813 -> 921, 30303x66 643 -> 788. A few lost, most by 4% or less; by more, bf16
#: 19048x105 at 8 MB (970 -> 855 and 947 -> 892), 88235x68 at 24 MB (1539 -> 1447) and
#: 640000x50 at 128 MB (2154 -> 1938). Rows of 129-255 (256 lanes) were mixed on one warp and
#: fewer rows (8 MB bf16 15504x129 799 -> 781, 128 MB 248062x129 1766 -> 1808, 198758x161
#: 2088 -> 1969) and keep their tiles.
HALF_ONE_WARP_TILE_ROWS = {64: 8, 128: 4}
#: Longest 2-byte row the online kernel reads in chunks of 16384 rather than 32768 elements.
MAX_HALF_CHUNK_COLS = 5 * 16384
#: Longest 2-byte row the forward's online kernel reads in chunks of ``SHORT_HALF_CHUNK``
#: elements on 8 warps (with a last chunk, at most ``TWO_PROGRAM_REGS`` registers), rather than
#: 16384 on 16. Through the API on the H100 (2026-11-25, twenty-first session,
#: docs/tuning.md), best of 3: bf16 2048x20001 2274 -> 2430 GB/s, 4096x20001 2415 -> 2615,
#: 1342x17001 1922 -> 2144, 4096x16385 2567 -> 2785, fp16 2048x20001 2251 -> 2504; longer rows
#: lost (bf16 4096x24001 2724 -> 2648, 1024x30001 2406 -> 2178, 2048x32001 2700 -> 2336).
MAX_SHORT_HALF_CHUNK_COLS = 20480
SHORT_HALF_CHUNK = 8192
#: ... but 16-byte aligned rows up to this many elements (three whole chunks). Through the API
#: on the H100 (2026-11-26, twenty-ninth session, docs/tuning.md), one process, best of 2,
#: against chunks of 16384 on 16 warps: bf16 4096x22528 2652 -> 2817 GB/s, 4096x20608 2470 ->
#: 2782, 2048x24576 2597 -> 2703, 2048x21000 2352 -> 2586, 4096x24576 2790 -> 2832; longer
#: aligned rows lost so (4096x26624 2832 -> 2775, 4096x32000 2909 -> 2710).
MAX_ALIGNED_SHORT_HALF_CHUNK_COLS = 3 * SHORT_HALF_CHUNK
#: Rows held one to a program (the row kernel) in more lanes than this, head and tail, read
#: their aligned body as vectors when they are not 16-byte aligned (``CudaBackend.windows``).
MIN_WINDOW_ROW_LANES = 1024
#: ... and on a GPU of fast memory 2-byte rows in more than this many (one-warp rows of 513-1023
#: elements, in a block of 1024 or of 512 and a tail), which compiled for sm_90 under Triton
#: 3.6 load 32 elements a thread one at a time (bf16 777: 490 instructions a row, 80
#: registers, 24 programs an SM) and from their bodies in 4 vectors (about 410, 62 registers,
#: 32 programs). Through the API on the H200 (2026-11-29, sixty-fourth session,
#: docs/tuning.md), best of 2, element loads against bodies: bf16 41184x777 3019 -> 3433 GB/s
#: (copy 3433), 31968x1001 3147 -> 3497, 39950x801 3014 -> 3425, 49921x641 3001 -> 3390,
#: 62378x513 3048 -> 3314, fp16 41184x777 3012 -> 3422, 262144x777 3332 -> 3776, 8192x777
#: 1756 -> 2083, 1823x781 836 -> 881. Rows of 4-byte runs gained less in blocks of 1024 (bf16
#: 31311x1022 3457 -> 3500, 41131x778 3303 -> 3384, 35476x902 level) and lost 1-2% in blocks
#: of 512 and a tail (62256x514 3331 -> 3255, 60377x530 3298 -> 3265), which keep their pairs
#: (``ALIGN`` 2, ``CudaBackend.window_vec``); rows of 8-byte runs keep theirs (``window_fit``).
FAST_HALF_MIN_WINDOW_ROW_LANES = 512
#: The head and tail of the forward's 2-byte rows of 9217-10240 elements (``tail_block``).
WIDE_TAIL_HEAD, WIDE_TAIL = 8192, 2048
#: Warps of the forward's 2-byte rows held as a head of ``WIDE_TAIL_HEAD`` and a tail
#: (``CudaBackend._wide_tail``): 64 elements a thread of the head. Rows that are not 16-byte
#: aligned take them with a tail of ``WIDE_TAIL`` only, launched as other programs of few
#: warps (at least ``MIN_PROGRAMS_PER_SM`` an SM). Through the API on the H100 (2026-11-26,
#: twenty-eighth session, docs/tuning.md), two runs, best of 3 each, against one block of 16384
#: on 16 warps: bf16 4096x10001 2354 -> 2562 and 2358 -> 2536 GB/s, 2048x10001 2104 -> 2309
#: and 2137 -> 2311, 1024x10001 1773 -> 1902, 16384x9999 2609 -> 2835, 4096x9300 2334 -> 2465,
#: fp16 4096x10001 2355 -> 2563. The same head and tail on 8 warps (resident), on 16 or on 2
#: lost to the block of 16384 (4096x10001: 2298, 1833, 2287), and 4 warps for those of
#: 8193-9216, with tails of up to 1024, were mixed against their 8 (``RESIDENT_ROW_WARPS``:
#: bf16 8192x9001 2668 -> 2599, 4096x8500 2460 -> 2437; twenty-ninth session, 2026-11-26,
#: launched ``ALIGNED_WIDE_TAIL_WAVES`` times what the SMs hold: 4096x8500 2450 -> 2523,
#: 2048x9001 2199 -> 2156).
WIDE_TAIL_WARPS = 4
#: 16-byte aligned rows take ``WIDE_TAIL_WARPS`` with every tail; those of 8193-9216 elements
#: (tails of up to 1024, which only they take on these warps) are launched this many times what
#: the SMs hold at once, those of 9217-10240 as the unaligned ones. Through the API on the
#: H100 (2026-11-26, twenty-ninth session, docs/tuning.md), one process, two runs, best of 2
#: each, against 8 warps resident: bf16 4096x8448 2502 -> 2655 and 2499 -> 2654 GB/s, 4096x8704
#: 2506 -> 2632 and 2488 -> 2625, 16384x8200 2652 -> 2796 and 2658 -> 2802, 2048x8448 2200 ->
#: 2328 and 2207 -> 2328, 8192x9000 2661 -> 2717 and 2654 -> 2719, fp16 4096x9216 2533 -> 2597
#: and 2534 -> 2594; at least ``MIN_PROGRAMS_PER_SM`` an SM, 8192x9000 2654 -> 2643 and
#: 16384x8200 2658 -> 2923. Rows of 9217-10240, at least ``MIN_PROGRAMS_PER_SM`` an SM:
#: 4096x10240 2590 -> 2647 and 2590 -> 2637, 4096x9728 2533 -> 2582, 4096x9472 2532 -> 2529
#: (launched 4 times what the SMs hold: 2645, 2639, 2587, 2562), 1024x10240 2038 -> 2026 and
#: 1968 -> 1953.
ALIGNED_WIDE_TAIL_WAVES = 4
#: 2-byte rows longer than this (a block of 32768) run the online kernel rather than the row
#: kernel in the forward (``CudaBackend.online_rows``).
MAX_HALF_TILE_COLS = 16384
#: DRAM bytes a second per SM (``memory_bytes_per_sm``) from which a GPU counts as one of fast
#: memory (``CudaBackend.fast_memory``): 25e9 on the H100 SXM (3.35 TB/s over 132 SMs), 36e9 on
#: the lent H200 (4.8 TB/s); 19e9 on an A100 80GB and 17e9 on an H100 PCIe, which keep the other
#: rules, measured on the H100 SXM before the rules of fast memory. Those were measured on the
#: H200; the H100 SXM ran them too (2026-12-07, seventy-second session, docs/tuning.md): two
#: benchmarks of 74 shapes, its own rules and then every rule of fast memory forced, bf16
#: 231884x69 1536 -> 1901 GB/s, 253968x63 1819 -> 2096, 164948x97 1949 -> 2114, 32768x777 2377
#: -> 2520, fp32 164948x97 2465 -> 2606, 64x151936 1793 -> 1907, 32x151936 1663 -> 1729, a
#: median of 0.998; they lost on 2-byte rows of 16385-40960 (``FASTEST_MEMORY_BYTES_PER_SM``).
FAST_MEMORY_BYTES_PER_SM = 24e9
#: ... and from which it counts as one of the fastest memory (``CudaBackend.fastest_memory``):
#: the H200, not the H100 SXM, whose 2-byte rows of 16385-40960 elements lost 7% in chunks of
#: ``SHORT_HALF_CHUNK`` (``MAX_FAST_SHORT_HALF_CHUNK_COLS``) in those benchmarks (bf16
#: 4096x32000 2928 -> 2714, 4096x32768 2942 -> 2731; in a lab, 2048x40000 2805-2814 ->
#: 2459-2469).
FASTEST_MEMORY_BYTES_PER_SM = 32e9
#: Longest float32 row the forward holds in the row kernel on a GPU of fast memory: longer ones
#: run the online kernel (``CudaBackend.online_rows``).
MAX_FAST_FLOAT_TILE_COLS = 16384
#: Longest float32 row the forward's online kernel reads in chunks of ``SHORT_HALF_CHUNK``
#: elements, not 16384, on a GPU of fast memory (``CudaBackend.online_rows``).
MAX_FAST_FLOAT_SHORT_CHUNK_COLS = 24576
#: Warps of those chunks of ``SHORT_HALF_CHUNK`` where a row has a last chunk (``last_chunk``:
#: rows of 16400-20480 elements) and the rows number at least
#: ``FAST_FLOAT_NARROW_CHUNK_MIN_ROWS`` (``CudaBackend.narrow_float_chunks``): 16 otherwise.
#: Through the API on the H200 (2026-11-28, fifty-fourth session, docs/tuning.md), one process,
#: best of 2, against 16 warps: fp32 2048x16400 3502 -> 3740 GB/s, 4096x16400 3804 -> 3990,
#: 1024x18000 3148 -> 3332, 2048x18000 3355 -> 3664, 4096x18000 3604 -> 3933, 2048x20001 3536
#: -> 3639, 4096x20001 3731 -> 3856, 2048x20480 3628 -> 3730, 4096x20480 3845 -> 3939. With 512
#: rows they lost (512x16400 2723 -> 2698, 512x18000 2803 -> 2707, 512x20001 2906 -> 2715,
#: 512x20480 3031 -> 2852), as did rows of whole chunks at every count (2048x22000 3725 ->
#: 3382, 2048x24576 3869 -> 3370, 512x22000 3061 -> 2816); a cap of 64 registers did not help.
FAST_FLOAT_NARROW_CHUNK_WARPS = 8
FAST_FLOAT_NARROW_CHUNK_MIN_ROWS = 1024
#: Longest 2-byte row the forward's online kernel reads in chunks of ``SHORT_HALF_CHUNK``
#: elements on 8 warps, 16-byte aligned or not, on a GPU of the fastest memory (``chunk_elems``).
#: Through the API on the H200 (2026-11-28, fiftieth session, docs/tuning.md), one process, two
#: rounds, against chunks of 16384 on 16 warps: bf16 4096x21001 2750 -> 3370 GB/s, 4096x24001
#: 3063 -> 3637, 4096x24800 2979 -> 3556, 1024x26000 2598 -> 2919, 4096x30001 3253 -> 3546,
#: 4096x32768 3644 -> 3780, 4096x36000 3304 -> 3520, 4096x38000 3257 -> 3494, 4096x40000 3389
#: -> 3508, fp16 2048x28672 3221 -> 3507; 4096x40001 and 4096x42000 level (3373 -> 3410, 3373
#: -> 3397), longer rows lost (4096x45000 3558 -> 3345, 4096x50257 3405 -> 3219, 1024x65536
#: 3432 -> 2918).
MAX_FAST_SHORT_HALF_CHUNK_COLS = 5 * SHORT_HALF_CHUNK
#: On a GPU of fast memory, the forward's 2-byte rows of more than ``MIN_FAST_SMALL_CHUNK_COLS``
#: elements, up to ``MAX_FASTEST_SMALL_CHUNK_COLS`` on one of the fastest memory (the H200) and
#: ``MAX_FAST_SMALL_CHUNK_COLS`` on others, run the online kernel in chunks of
#: ``FAST_SMALL_CHUNK`` on ``FAST_SMALL_CHUNK_WARPS`` warps rather than the row kernel (a head
#: of 8192 and a tail on 4 or 8 warps, or one block of 16384 on 16). Through the API on the
#: H200 (2026-11-28, fiftieth session, docs/tuning.md), one process, two rounds: bf16 4096x9216
#: 2981-3031 -> 3291-3344 GB/s, 8192x9001 3113-3117 -> 3460-3481, 4096x10001 2960-2965 ->
#: 3274-3280, 16384x9999 3310-3314 -> 3817-3820, 4096x11001 2700-2703 -> 3273-3277, 4096x12288
#: 3039-3069 -> 3482-3486, 4096x12345 2906-2930 -> 3314, 4096x13001 3046-3048 -> 3332-3335,
#: 4096x14001 3176-3206 -> 3386-3388, 1024x12345 2132-2192 -> 2473-2477, fp16 4096x10001
#: 3024-3025 -> 3339-3342, 4096x12288 3056-3057 -> 3453-3482; level at 15001 (3286-3308 ->
#: 3315-3338) and 16001 (3419-3445 -> 3390-3411); lost where the tail is short, 4096x8448
#: 3242-3288 -> 3183-3238, 4096x8200 3433-3522 -> 2841-2885; chunks of 8192 on 8 warps lost
#: (4096x10001 2823-2832, 4096x12345 2870-2874).
MIN_FAST_SMALL_CHUNK_COLS = 8704
MAX_FASTEST_SMALL_CHUNK_COLS = 15360
#: ... and on a GPU of fast memory short of the fastest (the H100 SXM) up to this many: its rows
#: of 12288 elements and more lost in those chunks. Through the API on the H100 (2026-12-07,
#: seventy-eighth session, docs/tuning.md), these chunks and then the row kernel in alternating
#: processes, two rounds each, twice: bf16 1156x13935 2059-2061 -> 2250-2257 GB/s, 2862x13897
#: 2492-2515 -> 2617-2632, 3913x12735 2605-2607 -> 2645-2652, fp16 4096x12288 2608-2609 ->
#: 2694-2706, bf16 4096x12345 level (2616-2631 -> 2635-2637); rows of up to 10001 gained from
#: the chunks (bf16 4096x9216 2570-2595 -> 2629-2659, 4096x10001 2562 -> 2660, 16384x9999
#: 2827-2828 -> 2898-2907). Rows of 10241-12287 were not measured there.
MAX_FAST_SMALL_CHUNK_COLS = 10240
FAST_SMALL_CHUNK, FAST_SMALL_CHUNK_WARPS = 4096, 4
#: On a GPU of fast memory, the forward's float32 rows of 513-1024 elements (a block of 1024
#: lanes) that are 16-byte aligned go one to a program on ``FAST_FLOAT_ROW_WARPS`` warps
#: (``CudaBackend._fast_float_row``): tiles of 2 or 4 rows on 4 warps before. Through the API
#: on the H200 (2026-11-28, fifty-third session, docs/tuning.md), forms alternating in one
#: process, best of 2-3 rounds: of 128 MB, fp32 30769x520 3203-3273 -> 3475-3540 GB/s,
#: 26666x600 3330-3373 -> 3503-3587, 25000x640 3425-3487 -> 3636, 22857x700 3401-3409 ->
#: 3527-3597, 20833x768 3562-3565 -> 3581-3663, 17777x900 3527-3530 -> 3574-3653, 16384x1024
#: 3542-3606 -> 3682-3745; of 63-67 MB, 8192x960 2965-3077 -> 3121-3244, 8192x1024 3039-3144
#: -> 3212-3216; of 24-34 MB, 5769x520 1765-1781 -> 2199-2206, 5000x600 1790-1794 ->
#: 2219-2226, 3906x768 2055-2193 -> 2336-2344, 3333x900 2021-2124 -> 2161-2174, 4096x1024
#: 2589-2602 -> 2602-2738 (torch.compile 2724-2767); 4687x640 level (2180-2206 -> 2130-2266),
#: as were 2048x1024 and 2048x1000 (16-17 MB). One warp ran as fast at 128 MB and mostly
#: slower at 24 MB. Rows that are not 16-byte aligned keep their tiles (fifty-second session:
#: 32768x777 lost in every other form).
FAST_FLOAT_ROW_LANES, FAST_FLOAT_ROW_WARPS = 1024, 2
#: On a GPU of fast memory, the forward's float32 rows of 257 to ``FAST_FLOAT_PAIR_MOST_COLS``
#: elements that are not 16-byte aligned (runs of one or two elements), elements next to each
#: other, go ``FAST_FLOAT_PAIR_TILE`` (rows, warps) to a tile of 512 lanes: 4 rows on 4 warps
#: before. Through the API on the H200 (2026-11-28, fifty-third session, docs/tuning.md), as
#: above, best of 2: of 128 MB, fp32 62256x257 3026-3030 -> 3292-3370 GB/s, 59040x271
#: 3167-3172 -> 3333-3404, 56939x281 3170-3182 -> 3339-3433, 53156x301 3239-3336 -> 3441-3451,
#: 51446x311 3252-3306 -> 3457, 49844x321 3333-3344 -> 3396-3457, 62015x258 2912-2970 ->
#: 3478-3481, 60150x266 2959-2962 -> 3428-3484, 55172x290 3046 -> 3515-3516, 50314x318
#: 3165-3228 -> 3457-3460 (torch.softmax 3046-3281); of 24 MB, 11673x257 1818-1923 -> 2083,
#: 10309x291 1870-1989 -> 2095, 9966x301 1889-1894 -> 2101-2118, 9345x321 2043-2049 ->
#: 1984-2118. Longer rows gained less or nothing (48484x330 3252-3279 -> 3537-3540, 46920x341
#: 3401-3404 -> 3404-3463; 48048x333 level in the fifty-second session); 4 rows on 2 warps ran
#: between, 2 rows on one warp level with 4 on 4; aligned rows (8 to a tile on 4 warps) within
#: 3% (61538x260 3425-3500 -> 3457-3521).
FAST_FLOAT_PAIR_MOST_COLS = 320
FAST_FLOAT_PAIR_TILE = ShortTile(2, 2)
#: On a GPU of fast memory, the forward's float32 rows of 1025-2048 elements (a block of 2048
#: lanes) in runs of one element (``RowLayout.row_align`` 1: odd lengths or odd row
#: strides), elements next to each other, go one to a program on ``FAST_ODD_FLOAT_ROW_WARPS``
#: warps, each row read and written as vectors from its aligned body (``CudaBackend.odd_rows``):
#: tiles of 2 rows on 4 warps before, which read them one element at a time (``windows``).
#: Through the API on the H200 (2026-11-29, sixty-fifth session, docs/tuning.md), forms
#: alternating in one process, two rounds: of 128 MB, fp32 15609x1025 3192-3344 -> 3487-3490
#: GB/s, 11967x1337 3487-3490 -> 3552, 9003x1777 3427-3493 -> 3490-3496, 7816x2047 3416-3483
#: -> 3512; of 1.4 GB, 131072x1337 3880-3888 -> 3913-3919; of 49 MB, 4096x1501 2701-2795 ->
#: 2841-2846; and 2048x1999 (33 MB, one row a 4-warp program already) 2369-2496 -> 2598-2604.
#: 4 warps ran between (faster on 9003x1777 and 131072x1337, 3549 and 3959), 8 slower. Rows of
#: 8-byte runs (runs of two), which the tiles read as pairs (``ALIGN``), were level or slower
#: one to a program (fp32 15594x1026, 10652x1502, 7820x2046, 4096x1502) and keep their tiles,
#: as odd rows of 1023 (+1%) and of 257-511 in tiles of 512 lanes (lost one to a program on
#: one or two warps, and in tiles from their bodies) do.
FAST_ODD_FLOAT_ROW_LANES, FAST_ODD_FLOAT_ROW_WARPS = 2048, 2
#: Warps of the forward's split variant for float32 rows on a GPU of fast memory: 8 before
#: (as 2-byte rows keep). Through the API on the H200 (2026-11-28, fifty-third session,
#: docs/tuning.md), as above, best of 3: fp32 16x262144 1862 -> 2013-2028 GB/s, 64x65536
#: 1903-1907 -> 2044-2048, 32x131072 1900-1903 -> 2032-2036, 16x151936 1369-1378 -> 1450,
#: 8x151936 904-913 -> 953-956, 64x128256 2235-2243 -> 2303-2306, 128x151936 2320-2322 ->
#: 2360-2365, 64x151936 2222-2230 -> 2245-2249, 4x1048576 1811-1827 -> 1833-1843; 32x151936
#: and 1x151936 level; 48x100000 1920-1926 -> 1899-1905 and 2x262144 (4 MB) 518-520 ->
#: 498-512. 16 warps lost on every one (64x151936 2154-2159); 2-byte rows gained on none
#: (fifty-second session).
FAST_FLOAT_SPLIT_WARPS = 4
#: Chunks of the forward's split variant on a GPU of fast memory where a work item's range
#: holds more than one chunk of ``chunk_elems`` (4096): this many elements, on the warps of
#: 4096 (float32 ``FAST_FLOAT_SPLIT_WARPS``, 2-byte rows 8). Through the API on the H200
#: (2026-11-28, fifty-fourth session, docs/tuning.md), one process, best of 2: fp32 4x1048576
#: 1853 -> 2001 GB/s, 1x2000000 1031 -> 1176, 1x1048576 802 -> 883, 32x151936 1932 -> 1999,
#: 100x151936 2246 -> 2337, 48x100000 1923 -> 2039, 96x65536 2114 -> 2222, 64x128256 2303 ->
#: 2335, 64x151936 level; bf16 4x1048576 1285 -> 1425, 1x2000000 611 -> 740, 48x151936 1574
#: -> 1654, 100x151936 1989 -> 2103, 32x262144 1869 -> 1935, 64x151936 1836 -> 1882, 8x1048576
#: level, 1x1048576 (4 MB) 465 -> 434. Where a range is one chunk, longer chunks (fewer
#: splits) lost (fp32 16x262144 2024 -> 1964, 1x131072 151 -> 140; bf16 64x65536 1406 ->
#: 1355), as did 16 warps for 2-byte chunks of 8192 (bf16 32x151936 1345 -> 1290).
FAST_SPLIT_LONG_CHUNK = 8192
#: Work items an SM the forward's split variant aims for with float32 rows on a GPU of fast
#: memory (``split_items_per_core``, 4, otherwise). Chunks of ``FAST_SPLIT_LONG_CHUNK`` leave
#: fewer ranges a row holding anything (fp32 48x151936: 10 of 16), so fewer items than aimed
#: for. Through the API on the H200 (2026-11-28, fifty-fourth session, docs/tuning.md), one
#: process, best of 2, against 4: fp32 48x151936 2081-2084 -> 2243-2248 GB/s, 64x151936
#: 2249-2251 -> 2329, 128x50257 2105-2111 -> 2150-2156, 64x128256 2335 -> 2361-2367,
#: 100x151936 2339-2340 -> 2362-2370, 32x262144 2330-2333 -> 2346-2354, 32x151936 2002-2006
#: -> 2012, 96x65536 2225-2228 -> 2215, 48x100000 2034 -> 2027-2030; 2-byte rows lost where
#: more items took their chunks back to 4096 (bf16 32x151936 1372-1378 -> 1282-1288).
FAST_FLOAT_SPLIT_ITEMS = 8
#: Rows of more than ``MAX_HALF_TILE_COLS`` elements (a block of 32768) that number at most
#: this fraction of the SMs run the split variant in the forward, rather than one block a row
#: (``CudaBackend.split_rows``). Through the API on the H100 (2026-11-26, twenty-ninth
#: session, docs/tuning.md), one process, best of 2, one block a row against split: bf16 1x32000
#: 16 -> 20 GB/s, 16x32000 230 -> 282, 64x32000 815 -> 924, 100x32000 1117 -> 1238, 64x20001 526
#: -> 558, 64x32768 832 -> 904; fp32 1x32000 29 -> 38, 16x32000 418 -> 557, 64x32000 1213 ->
#: 1455, 100x32000 1623 -> 1684, 32x20001 481 -> 606, 100x20001 1168 -> 1337. With 128 rows
#: (of 132 SMs) float32 lost (128x32000 1838 -> 1712, 128x32768 1869 -> 1702), as did bf16
#: 128x20001 (920 -> 901); rows of up to 16384 were mixed (bf16 64x8192 336 -> 290, fp32
#: 64x16384 904 -> 960).
SPLIT_FITTING_ROWS_PER_SM = 0.8
#: ``cols`` groups (``launcher.column_plan``): at least this many neighbouring rows, in tiles
#: and chunks of this many elements (of each tensor the kernel reads). Through the API on the
#: H100 (2026-11-24, fifteenth session, docs/tuning.md), against 16 rows and chunks of 4096:
#: fp32 dim 0 of 4096x4096 1512 -> 1659 GB/s, 16384x1024 1449 -> 1614, dim 1 of 4x8192x1024
#: 1527 -> 1715; bf16 dim 0 of 4096x4096 1071 -> 1280, dim 1 of 4x8192x1024 1041 -> 1349; lower
#: on transposed inputs (fp32 8192x1000 1267 -> 1137, bf16 1133 -> 753). Tiles of 2048 lost on
#: bf16 rows of 3 (dim 1 of 16x3x50176: 1190 -> 477).
COLUMN_LANES = 32
COLUMN_TILE_ELEMS = 4096
COLUMN_CHUNK_ELEMS = 8192
#: Float32 groups of ``FLOAT_WIDE_WHOLE_LANES`` interleaved rows whose runs are not aligned
#: vectors (``aligned_columns`` false: an inner dim such as 49, 77 or 196) hold rows of up to
#: 1024 whole in chunks of this many elements (16 warps) where 32-row groups would be split, in
#: the forward; 8-row groups did before. Through the API on the H100 (2026-11-26,
#: twenty-seventh session, docs/tuning.md), two runs, best of 3, dim 1 of: 256x1000x49 1406 ->
#: 1511 and 1409 -> 1506 GB/s, 64x1000x196 1542 -> 1655 and 1553 -> 1669, 16x1000x1000 1711 ->
#: 1842 and 1727 -> 1851, 128x600x121 1141 -> 1275. Chunks of 16384 for every such group were
#: mixed (dim 1 of 8x8192x100 1183 -> 1353, of 32x700x1000 1976 -> 1709).
UNALIGNED_FLOAT_WHOLE_CHUNK_ELEMS = 16384
#: Elements a thread holds of the forward's 2-byte ``cols`` tiles
#: (``CudaBackend._wide_column_threads``).
HALF_COLUMN_THREAD_ELEMS = 64
#: Fewest warps of such a tile: 2 where it holds whole rows of at least
#: ``HALF_COLUMN_FEW_WARPS_MIN_COLS`` lanes and its runs are aligned vectors or its output
#: transposed, 4 otherwise (``CudaBackend._wide_column_min_warps``).
HALF_COLUMN_FEW_WARPS = 2
HALF_COLUMN_FEW_WARPS_MIN_COLS = 8
#: The forward's 2-byte ``cols`` tiles of ``COLUMN_LANES`` rows of ``HALF_WHOLE_COLUMN_COLS``
#: lanes (whole rows of 257-512 elements), aligned runs, not a transposed input, run on 4 warps,
#: ``HALF_WHOLE_COLUMN_THREAD_ELEMS`` a thread (8 before): at 254 registers two such programs
#: share an SM, so one loads while the other reduces. Such tiles served few groups only (where
#: 32-row groups would be split); where the groups are many they now also take rows of up to
#: ``HALF_WHOLE_LOOPED_MOST_COLS``, which were looped in 32x256 chunks (read twice), as longer
#: rows still are (``CudaBackend._half_whole_columns``, ``column_holds_whole``).
HALF_WHOLE_COLUMN_COLS = 512
HALF_WHOLE_COLUMN_THREAD_ELEMS = 128
HALF_WHOLE_LOOPED_MOST_COLS = 352
#: The forward's ``cols`` tiles that hold whole rows of at most ``SHORT_COLUMN_LANES`` lanes,
#: with aligned runs, hold ``SHORT_COLUMN_THREAD_BYTES`` of input a thread (one warp at least):
#: float32 tiles of 4096 elements on 2 warps, 2-byte ones on one, and smaller tiles (a short
#: inner dim) on one; but 2-byte tiles of 4096 elements whose rows take fewer than
#: ``SHORT_HALF_COLUMN_MIN_LANES`` lanes keep the 2-byte rule (``CudaBackend._short_columns``).
SHORT_COLUMN_LANES = 32
SHORT_COLUMN_THREAD_BYTES = 256
SHORT_HALF_COLUMN_MIN_LANES = 16
#: ``cols`` groups of a transposed input, whose output rows are contiguous (stored across the
#: groups), narrow down to this many rows where that holds whole rows in a chunk
#: (``Backend.column_min_lanes``). Through the API on the H100 (2026-11-25, sixteenth session,
#: docs/tuning.md), 8192 rows of 1000, transposed, 8 rows a group against 32: fp32 1381 -> 2079
#: GB/s, bf16 624 -> 1191 (one read instead of a loop split four ways).
TRANSPOSED_MIN_LANES = 8
#: The float32 forward's groups of a transposed input narrow further, down to
#: ``TRANSPOSED_FLOAT_MIN_LANES`` rows (16-byte runs), and groups of at most
#: ``TRANSPOSED_WHOLE_LANES`` rows hold their rows whole in chunks of ``SPLIT_WHOLE_CHUNK_ELEMS``
#: (16 warps, one program an SM), but in at most ``FEW_GROUPS_CHUNK_ELEMS`` where those groups
#: would be fewer than the SMs and a narrower group is allowed. Through the API on the H100
#: (2026-11-25, twenty-sixth session, docs/tuning.md), best of 3, against split 32-row groups
#: (rows x columns of ``randn(columns, rows).t()``): 1000x8192 1156 -> 1564 GB/s (4x8192),
#: 4096x4096 1711 -> 1915 (8x4096), 4096x2048 1551 -> 1684 (8x2048), 1000x4096 1251 -> 1461
#: (4x4096: in 8x4096 tiles, 125 groups for 132 SMs, 1172), 300x4096 776 -> 949 (8x4096: 541).
TRANSPOSED_FLOAT_MIN_LANES = 4
TRANSPOSED_WHOLE_LANES = 8
FEW_GROUPS_CHUNK_ELEMS = 16384
#: Interleaved rows whose output is interleaved too narrow where groups of ``COLUMN_LANES``
#: would be split between programs: float32 down to 8 rows (forward and backward), 2-byte rows
#: in the backward to 16, whose 16-row groups take chunks of ``HALF_BACKWARD_CHUNK_ELEMS`` (of
#: each tensor). Through the API on the H100 (2026-11-25, seventeenth session, docs/tuning.md),
#: best of 3: fp32 dim 0 of 1024x16384 1692 -> 2052 GB/s, dim 1 of 16x1000x1024 1705 -> 2118,
#: its backward 1614 -> 2160; bf16 backward of dim 0 of 1024x16384 1309 -> 1819, of dim 1 of
#: 4096x1024x16 (16-row groups, not split) 2484 -> 2866. The bf16 forward gains nothing so
#: (1306 -> 1266 in 16-row groups, 798 in 8), nor does either dtype where groups are not split
#: (fp32 dim 0 of 512x65536 2600 -> 2399 in 16-row groups, sixteenth session).
SPLIT_MIN_LANES = {4: 8}
HALF_BACKWARD_SPLIT_MIN_LANES = 16
HALF_BACKWARD_CHUNK_ELEMS = 16384
#: In the forward, such groups hold their rows whole in chunks of ``SPLIT_WHOLE_CHUNK_ELEMS``
#: (16 warps) where the tile's runs are aligned (``aligned_columns``): float32 groups of 8 rows
#: (rows of up to 4096), 2-byte groups of 32 or, narrowed, 16 rows (up to 1024 or 2048). Through
#: the API on the H100 (2026-11-25, seventeenth session, docs/tuning.md), best of 3, against
#: split 32-row groups: fp32 dim 0 of 4096x4096 1655 -> 1783 GB/s, dim 1 of 4x4096x1024 1692
#: -> 1800; bf16 dim 0 of 1024x16384 1313 -> 1578, of 1000x8192 1120 -> 1446, of 2048x2048 886
#: -> 1239. Unaligned runs load element by element: bf16 dim 1 of 256x1000x49 fell from 1028
#: to 340 in 32x1024 tiles, so those keep the chunks above.
SPLIT_WHOLE_CHUNK_ELEMS = 32768
SPLIT_WHOLE_LANES = {4: 8, 2: 32}
#: ... and float32 groups of ``FLOAT_WIDE_WHOLE_LANES`` rows of 1025-2048 elements (a whole
#: chunk) where those groups number at least half the SMs: through the API on the H100
#: (2026-11-25, twenty-sixth session, docs/tuning.md), best of 3, against 8-row groups: dim 0 of
#: 2048x2048 1335 -> 1543 GB/s, 2048x1280 1045 -> 1237, 1025x4096 1205 -> 1352, 1800x8192 1855
#: -> 1974, dim 1 of 32x2000x64 1371 -> 1546 (13 cases, 1.03-1.18x); 16-row groups of rows of
#: up to 1024 were mixed (dim 0 of 1024x16384 1.09x, dim 1 of 4x1024x1024 0.97x), and 32 such
#: groups lost (dim 0 of 2048x512 781 -> 680).
FLOAT_WIDE_WHOLE_LANES = 16
#: ... and such groups of rows of ``FLOAT_WIDE_SHORT_MIN_COLS``-1024 elements (tiles of 16x1024,
#: 64-byte runs where 8-row groups have 32) where those groups number at least
#: ``split_items_per_core`` an SM. Through the API on the H100 (2026-11-28, forty-seventh session,
#: docs/tuning.md), the package before and after in two processes each, eager best of 3, against
#: 8-row groups: dim 0 of 1000x16384 1983, 1991 -> 2157, 2155 GB/s, 1024x16384 1993, 1995 ->
#: 2171, 2166, 1000x12288 1900, 1921 -> 2025, 2025, 900x12288 1863, 1896 -> 1943, 1913, dim 1 of
#: 16x1000x1024 2112, 2118 -> 2272, 2267, 4x1000x4096 2078, 2063 -> 2235, 2231. In a lab of the
#: same tiles rows of 520-777 lost (dim 0 of 520x16384 1734 -> 1551, 700x8192 1673 -> 1562, dim
#: 1 of 64x600x256 1919 -> 1738; 777x16384 level), and fewer groups gained 0-2% (1000x8192, 512
#: groups: 1824 -> 1852) or lost in CUDA graphs (1024x4096, 256: 1960 -> 1842).
FLOAT_WIDE_SHORT_COLS = 1024
FLOAT_WIDE_SHORT_MIN_COLS = 897
#: The float32 forward's interleaved rows whose runs are not aligned vectors, too long for any
#: group to hold whole, in groups of this many rows (runs of 256 bytes; in chunks of
#: ``COLUMN_CHUNK_ELEMS``, tiles of 64x128) where 32-row groups would be split, split for
#: ``LOOPED_FLOAT_SPLIT_ITEMS`` work items an SM rather than ``split_items_per_core``: mostly
#: as many ranges a group as the 32-row groups had, half as many work items
#: (``CudaBackend.column_loop_groups``). Through the API on the H100 (2026-11-27, forty-third
#: session, docs/tuning.md), best of 2, two runs, against 32-row groups in 32x256 tiles: dim 0
#: of 27586x507 1137 -> 1216 and 1129 -> 1216 GB/s, 4096x4095 1272 -> 1441 and 1283 -> 1444,
#: 5003x1999 1286 -> 1338 and 1278 -> 1337, 2049x3001 1257 -> 1374, 30001x401 1102 -> 1178, dim
#: 1 of 16x2047x255 1395 -> 1464 and 1389 -> 1451, 4x4001x1023 1373 -> 1441, 2x1500x4097 1417 ->
#: 1523, 64x3001x63 1462 -> 1577. 64-row groups with 4 work items an SM (twice the ranges) lost
#: on half of them (16x2047x255 1389 -> 1261), and aligned runs lost either way (dim 1 of
#: 4x8192x1024 1762 -> 1627, dim 0 of 16384x1024 1675 -> 1581). 2-byte groups of 64 rows were
#: mixed: see ``LOOPED_HALF_RANGE_CHUNKS``.
LOOPED_LANES = 64
LOOPED_FLOAT_SPLIT_ITEMS = 2
#: 2-byte rows of the forward so looped, aligned runs or not, take such groups, split for
#: ``split_items_per_core`` work items an SM, where each split range then holds at least this
#: many chunks (128 rows each). Through the API on the H100 (2026-11-27, forty-third session,
#: docs/tuning.md), best of 2, 64-row groups against 32: where ranges held 256 rows or more,
#: faster on all seven (bf16 dim 0 of 3626x8695 911 -> 1038 GB/s, 4096x4095 1056 -> 1127,
#: 4096x4096 1465 -> 1520, 16384x1024 1416 -> 1521, dim 1 of 3x3201x3169 934 -> 1008,
#: 4x8192x1024 1491 -> 1614, fp16 2x26338x557 868 -> 977); where they held 62-250 rows, level
#: or slower on all ten (bf16 dim 0 of 2049x3001 859 -> 815, 5003x1999 955 -> 910, 4000x2000
#: 1303 -> 1211, dim 1 of 8x1000x999 1092 -> 1042, 4x4001x1023 1170 -> 1181).
LOOPED_HALF_RANGE_CHUNKS = 2
#: Registers a thread of an online program of 2-byte rows with a last chunk may use
#: (``CudaBackend.options``): two 16-warp programs fit an SM's 65536, four of 8 warps.
TWO_PROGRAM_REGS = 64
#: Warps from which the online kernel's second pass reads whole bfloat16 rows (``VEC`` 1: rows
#: 16-byte or 8-byte aligned) as 32-bit words, as it reads every body found from a row's
#: address (``CudaBackend.whole_row_words``). On the H200 (2026-11-29, fifty-ninth session,
#: lab 59d, docs/tuning.md), three rounds, against element loads on 16-byte aligned rows: 16
#: warps, bf16 2048x50304 3528 -> 3609 GB/s, 4096x49152 3987 -> 4036, 1024x65536 3551 -> 3548;
#: 32 warps, 1024x102400 3225 -> 3345, 512x131072 3296 -> 3316, 256x151936 2915 -> 2927. Plans
#: of 8 warps lost 5-5.5% (4096x32000 3783 -> 3576, 4096x40960 3545 -> 3367): 48 registers a thread
#: instead of 60 let an SM hold a fifth program, which shrinks every program's share of L1,
#: where the second read likely finds the first's last chunks (sixtieth session, lab 60c: 4
#: programs an SM with L1 cut to 50 KB by reserved shared memory ran 10-13% slower).
WORD_ROW_WARPS = 16


def _dependent_launch(name: str, arch: str | int) -> bool:
    # Hopper (sm_90) and later, through upstream Triton's launch_pdl option.
    return (name == "cuda" and _compat.HAS_DEPENDENT_LAUNCH
            and str(arch).isdigit() and int(arch) >= 90)


def memory_bytes_per_sm(props: dict[str, Any]) -> float:
    """Peak DRAM bytes a second per SM from a Triton driver's device properties (memory clock in
    kHz, double data rate, bus width in bits); 0 where the driver does not say."""
    clock_khz, bus_bits = props.get("mem_clock_rate", 0), props.get("mem_bus_width", 0)
    return 2 * clock_khz * 1e3 * bus_bits / 8 / max(1, props["multiprocessor_count"])


def _short_tile(layout: RowLayout, itemsize: int, fast_memory: bool) -> ShortTile:
    # The tile of the forward's rows that are not 16-byte aligned, elements next to each
    # other: one warp (``PADDED_ODD_ROW_MOST_COLS``, ``FAST_PADDED_ODD_ROW_MOST_COLS``,
    # ``HALF_ONE_WARP_TILE_ROWS``; from their bodies ``FAST_BODY_TILE_MOST_COLS``) or two
    # (``FAST_FLOAT_PAIR_MOST_COLS``).
    block = triton.next_power_of_2(layout.n_cols)
    # Rows of odd length whose windows do not fit in their block (``base.window_fit``), which
    # the tile would read element by element, also go from their bodies; rows of 8-byte runs,
    # which the tile reads as such (``ALIGN``), do not.
    align = layout.row_align(itemsize)
    windowless = align == 1 and window_lanes(layout.n_cols, itemsize) > block
    most_body = FAST_BODY_TILE_MOST_COLS.get(itemsize, {}).get(block, 0)
    bodies = fast_memory and align * itemsize < 8 and (layout.n_cols <= most_body or windowless)
    if itemsize == 2 and block in HALF_ONE_WARP_TILE_ROWS:
        return ShortTile(HALF_ONE_WARP_TILE_ROWS[block], 1, bodies)
    if itemsize != 4:
        return NO_SHORT_TILE
    most = FAST_PADDED_ODD_ROW_MOST_COLS if fast_memory else PADDED_ODD_ROW_MOST_COLS
    if align == 1 and layout.n_cols <= most.get(block, 0):
        rows = FAST_FLOAT_BODY_TILE_ROWS.get(block, 0) if bodies else 0
        return ShortTile(rows or PADDED_ODD_TILE_ROWS[block], 1, bodies)
    if fast_memory and block == 512 and layout.n_cols <= FAST_FLOAT_PAIR_MOST_COLS:
        return FAST_FLOAT_PAIR_TILE
    return NO_SHORT_TILE


class CudaBackend(Backend):
    """Tiles live in registers; the grid is sized from how many programs the SMs keep
    resident."""

    #: Tail blocks for 2-byte rows of more than 4096 elements (``tail_block``).
    tail_from = 4097
    #: The online kernel takes what is left of a row after its whole chunks in a chunk of the
    #: power of two that holds it, at least this many columns (``Backend.last_chunk``), rather
    #: than in a whole chunk mostly masked. Through the API on the H100 (2026-11-24, eleventh
    #: session, docs/tuning.md), two runs, best of each, against whole chunks: fp32 4096x33000
    #: 2753 -> 2943 GB/s, 2048x36000 2748 -> 2866, 4096x40001 2878 -> 2931, 512x100003 2164 ->
    #: 2202; bf16 1000x100003 2054 -> 2189. 2-byte rows in chunks of 16384 lost alone (bf16
    #: 4096x40001 2479 -> 2292, 4096x50257 2294 -> 2165) and gain with ``TWO_PROGRAM_REGS``.
    min_last_chunk = 1024
    #: The looped kernels' first read of a row keeps its lines (Triton's eviction policies set
    #: L1's and L2's), the second lets them go. The online kernel's second read is served from
    #: L1 (Nsight Compute on the H200, 2026-11-29: all of it where a row fits the program's
    #: share of L1, 40-88% where not, and what L1 misses L2 misses too); the split's second
    #: pass, on other SMs, partly from L2.
    #: Through the API on the H100 (docs/tuning.md): online kernel (2026-11-23, chunks of 8192
    #: then) 4096x65536 fp32 2049 -> 2186 GB/s, bf16 2149 -> 2380; split kernels (2026-11-23,
    #: with streaming stores) 8x151936 fp32 798 -> 915, bf16 16x262144 1104 -> 1260, 4x1048576
    #: fp32 1492 -> 1613.
    reread_eviction = ("evict_last", "evict_first")
    #: Outputs are stored streaming (``.cs``, evict first): this call never reads them back, so
    #: their lines should not push out of L2 the input lines a second read still needs. Through
    #: the API on the H100 (2026-11-23, docs/tuning.md): 1024x65536 fp32 2656 -> 2775 GB/s,
    #: bf16 2486 -> 2660; 4096x65536 bf16 2651 -> 2838; rows that fit a block gain 0-1%.
    output_cache = ".cs"
    #: Float32 (and float64) ``cols`` kernels are compiled for the one form a call's rows take:
    #: with both forms in one kernel the whole rows' tiles spilled or held more registers.
    #: Through the API on the H100 (2026-11-26, thirty-sixth session, docs/tuning.md), forward
    #: against both forms compiled in: float32 dim 1 of 256x1000x49 1467-1472 -> 1653 GB/s
    #: (16 spilled registers -> 2), transposed 100x16384 1174-1177 -> 1272-1365 (156 registers
    #: -> 79), transposed 8192x1000 1505-1532 -> 1550-1579; 128-row tiles of 32 columns lost
    #: (dim 1 of 512x21x4096 2731 -> 2661: 96 registers -> 105, a program fewer an SM). The
    #: backward op, dim 1 of 512x21x4096 2298-2304 -> 2476-2481. Bfloat16 tiles, which did not
    #: spill, moved both ways (dim 1 of 64x512x512 1910-1940 -> 2007-2042, transposed
    #: 1000x8192 1438 -> 1335-1378) and keep both forms.
    column_forms_from = 4
    #: Every kernel is compiled with floating-point fusion (``x * scale - max`` as one fused
    #: multiply-add), asked for explicitly: upstream Triton took it by default up to 3.9, which
    #: warns where a kernel leaves it to ``TRITON_DEFAULT_FP_FUSION``, and 3.10 turns that
    #: default off. So the binaries, and the outputs bit for bit, stay those every speed in
    #: docs/tuning.md was measured with, whatever the Triton release or that variable
    #: (Triton 3.9's ``TRITON_FORCE_DISABLE_FP_FUSION`` still turns it off).
    fp_fusion = True

    def __init__(self, name: str = "cuda", arch: str | int = 0,
                 unaligned_rows: bool = False, streams: int = 1,
                 hinted_rows: bool = False, transposed_output: bool = False,
                 aligned_columns: bool = False, strided_rows: bool = False,
                 short_tile: ShortTile = NO_SHORT_TILE, warp_size: int = TUNED_WARP_SIZE,
                 fast_memory: bool = False, narrow_float_chunks: bool = False,
                 odd_rows: bool = False, fastest_memory: bool = False) -> None:
        self.name = name
        self.arch = arch
        #: Threads of the target's warps (``GPUTarget.warp_size``).
        self.warp_size = warp_size
        self.dependent_launch = _dependent_launch(name, arch)
        #: Rows that are not 16-byte aligned whole vectors (``for_layout``).
        self.unaligned_rows = unaligned_rows
        #: Tensors the kernels read per element (``for_layout``).
        self.streams = streams
        #: Rows of whole vectors whose counts are not all multiples of 16, so that Triton
        #: proves them aligned only through ``ALIGN`` (``for_layout``).
        self.hinted_rows = hinted_rows
        #: Output rows whose neighbours are apart, as a transposed input's are (``for_layout``).
        self.transposed_output = transposed_output
        #: Outer and column strides of both tensors (``RowLayout.columns``) that Triton proves
        #: multiples of 16 elements, so that a ``cols`` tile's runs load as aligned vectors.
        self.aligned_columns = aligned_columns
        #: Rows whose elements are apart in either tensor (a column stride other than 1), which
        #: no kernel reads as vectors (``for_layout``).
        self.strided_rows = strided_rows
        #: The forward's tiles of short rows that are not 16-byte aligned, elements next to
        #: each other (``for_layout``): float32 rows of odd length on one warp
        #: (``PADDED_ODD_ROW_MOST_COLS``, ``FAST_PADDED_ODD_ROW_MOST_COLS``,
        #: ``FAST_FLOAT_BODY_TILE_ROWS``), float32 rows of 257-320 elements on two
        #: (``FAST_FLOAT_PAIR_MOST_COLS``), 2-byte rows in short blocks on one
        #: (``HALF_ONE_WARP_TILE_ROWS``); on fast memory some read from their bodies
        #: (``FAST_BODY_TILE_MOST_COLS``).
        self.short_tile = short_tile
        #: A device of fast memory (``FAST_MEMORY_BYTES_PER_SM``, ``for_device``).
        self.fast_memory = fast_memory
        #: A device of the fastest memory (``FASTEST_MEMORY_BYTES_PER_SM``, ``for_device``).
        self.fastest_memory = fastest_memory
        #: The forward's float32 rows of 16385-24576 elements on fast memory, at least
        #: ``FAST_FLOAT_NARROW_CHUNK_MIN_ROWS`` of them (``for_layout``).
        self.narrow_float_chunks = narrow_float_chunks
        #: The forward's rows in runs of one element (``RowLayout.row_align`` 1), elements next
        #: to each other (``for_layout``); float32 ones in blocks of 2048 lanes, which tiles read
        #: one element at a time, go one to a program on fast memory (``FAST_ODD_FLOAT_ROW_LANES``).
        self.odd_rows = odd_rows

    def for_device(self, device_index: int) -> CudaBackend:
        props = _compat.device_properties(device_index)
        memory = memory_bytes_per_sm(props)
        fast, fastest = memory >= FAST_MEMORY_BYTES_PER_SM, memory >= FASTEST_MEMORY_BYTES_PER_SM
        # A CUDA device's own arch: an Ampere card beside a Hopper one must not get the
        # dependent launch (HIP's arch names no such rule).
        arch = _compat.cuda_arch(device_index) if self.name == "cuda" else self.arch
        # A HIP device's own warps: an RDNA card (32 threads) beside a CDNA one (64) has
        # programs of twice the threads if sized by the other's (2048: past a workgroup's 1024).
        warp_size = (int(props.get("warpSize") or self.warp_size) if self.name == "hip"
                     else self.warp_size)
        if (fast, fastest, str(arch), warp_size) == (
                self.fast_memory, self.fastest_memory, str(self.arch), self.warp_size):
            return self
        twin = copy.copy(self)  # every other rule as it is
        twin.fast_memory, twin.fastest_memory = fast, fastest
        twin.arch, twin.dependent_launch = arch, _dependent_launch(self.name, arch)
        twin.warp_size = warp_size
        return twin

    def for_layout(self, layout: RowLayout, itemsize: int, streams: int = 1) -> CudaBackend:
        unaligned = not layout.vector_rows(itemsize)
        hinted = not unaligned and self.row_align(layout, itemsize) > 1
        cols = layout.columns()
        transposed = cols.y_strides[1] != 1
        aligned = all(s % 16 == 0 for s in (*cols.x_strides[::2], *cols.y_strides[::2]))
        strided = layout.strided_rows()
        short = (_short_tile(layout, itemsize, self.fast_memory)
                 if streams == 1 and unaligned and not strided else NO_SHORT_TILE)
        narrow = (self.fast_memory and streams == 1 and itemsize == 4
                  and layout.n_rows >= FAST_FLOAT_NARROW_CHUNK_MIN_ROWS
                  and MAX_FAST_FLOAT_TILE_COLS < layout.n_cols <= MAX_FAST_FLOAT_SHORT_CHUNK_COLS)
        odd = streams == 1 and not strided and layout.row_align(itemsize) == 1
        if (unaligned, streams, hinted, transposed, aligned, strided, short, narrow, odd) == (
                self.unaligned_rows, self.streams, self.hinted_rows, self.transposed_output,
                self.aligned_columns, self.strided_rows, self.short_tile,
                self.narrow_float_chunks, self.odd_rows):
            return self
        return CudaBackend(self.name, self.arch, unaligned, streams, hinted, transposed, aligned,
                           strided, short, self.warp_size, self.fast_memory, narrow, odd,
                           self.fastest_memory)

    def row_blocks(self, block_n: int, itemsize: int) -> int:
        # Several programs share an SM, so short rows are cut into at least 4 row blocks per
        # SM (through the API on the H100, 2026-11-22: 4096x128 fp32 512 -> 683 GB/s, 4096x256
        # 923 -> 1074, 1000x300 325 -> 369, against torch's 636, 975 and 347), and into 16,
        # smaller tiles, where a row moves fewer bytes per load: rows that are not 16-byte
        # aligned, and 2-byte rows of 512+ elements. Through the API on the H100 (2026-11-23,
        # docs/tuning.md), with windows: fp32 8192x200 1021 -> 1330, 8192x333 1371 -> 1590;
        # bf16 8192x200 486 -> 794, 4096x768 1143 -> 1281, 16384x512 1786 -> 1986. Aligned
        # float32 rows lose with 16 (65536x64 2110 -> 2056), bf16 4096x128 392 -> 345.
        if self.unaligned_rows or (itemsize == 2 and block_n >= 512):
            return 16
        if self.streams == 1 and itemsize == 4 and block_n == ALIGNED_FLOAT_ROW_BLOCK_LANES:
            return ALIGNED_FLOAT_ROW_BLOCKS
        return 4

    def window_vec(self, layout: RowLayout, plan: Plan, itemsize: int) -> int:
        # The row length decides these (``PLAIN_FLOAT_TILE_COLS``, the runs of
        # ``FAST_HALF_MIN_WINDOW_ROW_LANES``'s rows), so they sit here rather than in
        # ``windows``, which sees the plan's blocks only.
        if (itemsize == 4 and self.streams == 1 and plan.variant == "tile" and plan.block_m > 1
                and layout.n_cols <= PLAIN_FLOAT_TILE_COLS):
            return 1
        if (itemsize == 2 and plan.variant == "tile" and plan.block_m == 1 and plan.tail_n
                and plan.block_n + plan.tail_n <= MIN_WINDOW_ROW_LANES
                and layout.row_align(itemsize) > 1):
            return 1
        return super().window_vec(layout, plan, itemsize)

    def windows(self, plan: Plan, itemsize: int) -> bool:
        # Tiles of several rows through windows: float32 rows of up to 1024 elements, through
        # the API on the H100 (2026-11-23, docs/tuning.md): fp32 4096x1000 1958 -> 2067 GB/s;
        # tiles of 2048-element rows lost (fp32 4096x1500 2169 -> 1645). 2-byte tiles only for
        # rows of up to 128 elements (2026-11-23, fifth session): bf16 65536x100 1174 -> 1489
        # GB/s, 131072x50 942 -> 1151, but 65536x333 1904 -> 1673, 8192x333 1089 -> 904,
        # 8192x200 797 -> 756. Float32 tiles of four 512-lane rows lose with windows (sixth
        # session): fp32 65536x333 2686 without against 2594 with, 16384x300 2323 against 2018.
        # Rows of more than 1024 lanes one to a program (the row kernel) read their aligned
        # body as vectors. Through the API on the H100 (2026-11-24, eighth session), 3 rounds,
        # against element loads: fp32 2048x20001 2053 -> 2666 GB/s, 2048x32001 2435 -> 2815,
        # 4096x2049 2199 -> 2363, 8192x9001 2193 -> 2260; bf16 4096x2049 1401 -> 1492,
        # 8192x3001 2152 -> 2305, 4096x10001 1658 -> 1722, 64x20001 456 -> 499. Rows of up to
        # 1024 lanes (one-warp 2-byte rows, few float32 rows of 781-1000) lost: bf16 65536x333
        # 2181 -> 1916. Tiles of unaligned 2-byte rows of 129-512 elements, each read from
        # its body, gain (``body_rows``), as do one-warp 2-byte rows of 513-1023 on fast memory
        # (``FAST_HALF_MIN_WINDOW_ROW_LANES``).
        if plan.variant == "tile" and plan.block_m == 1:
            least = (FAST_HALF_MIN_WINDOW_ROW_LANES if self.fast_memory and itemsize == 2
                     else MIN_WINDOW_ROW_LANES)
            return itemsize <= 4 and plan.block_n + plan.tail_n > least
        if plan.variant == "tile":
            if self.tile_bodies(plan, itemsize):
                return True
            if itemsize == 4 and plan.block_n == 512:
                return False
            return plan.block_n <= WINDOW_TILE_LANES.get(itemsize, 0)
        # The looped kernels read the aligned body of every range. The online kernel, through
        # windows then (2026-11-23, third session), with whole-vector stores: fp32 4096x50257
        # 2489 -> 2919 GB/s, bf16 1345 -> 2118; the aligned body against windows (eighth
        # session): fp32 4096x40001 2584 -> 2897, bf16 4096x50257 2193 -> 2405 (with pairs
        # per lane, ``stat_lanes``). The split kernels (eighth session), 3 rounds, against
        # element loads: bf16 64x151937 1169 -> 1470 GB/s, 128x50257 1091 -> 1323, 48x100003
        # 993 -> 1207, 16x262147 861 -> 986; fp32 64x151937 1508 -> 1655, 48x100003 1453 ->
        # 1561; bf16 8x50257 fell 202 -> 173 (a 0.8 MB tensor), 4x262147 and 8x151937 by 1-3%.
        return itemsize <= 4

    def online_rows(self, n_cols: int, itemsize: int) -> bool:
        # 2-byte rows of more than 16384 elements (a block of 32768), in the forward. The
        # eighth session drew the line at 12288 for rows that are not 16-byte aligned: through
        # the API on the H100 (2026-11-24, docs/tuning.md), 3 rounds, against the row kernel
        # reading the aligned body: bf16 4096x12345 1616 -> 1800 GB/s, 4096x16001 1941 -> 2157,
        # 2048x20001 1588 -> 1664, 1024x30001 1954 -> 2072, 2048x32001 2248 -> 2308, fp16
        # 4096x12345 1608 -> 1815; rows of a head of 8192 and a tail lost (bf16 4096x10001 1722
        # -> 1516, 8192x9001 1743 -> 1427), and float32 rows (2048x20001 2680 -> 2422). Since
        # the row kernel holds 2-byte blocks as loaded (``kernels._hold``: 64 registers a
        # thread for 16384 lanes on 16 warps, 98 before, so two programs share an SM), rows of
        # up to 16384 elements run faster in it (2026-11-25, twenty-first session, two runs,
        # best of 3 each): bf16 4096x12345 2214-2234 -> 2691-2693, 4096x16001 2535-2552 ->
        # 2801-2819, 2048x13001 2121 -> 2567, 1024x16383 2080 -> 2527, 4096x14001 2389 -> 2797,
        # fp16 4096x12345 2213 -> 2700. Aligned rows longer than 16384 (a head of 16384 and a
        # tail, or a block of 32768) run faster online too: 16385-20480 through the API on the
        # H100 (2026-11-26, twenty-eighth session), best of 3, bf16 2048x20000 2277 -> 2564
        # GB/s, 4096x18432 2426 -> 2783, 8192x18000 2447 -> 2886, fp16 2048x20000 2289 -> 2577,
        # but 4096x16400 (a tail of 16) 2801 -> 2773; 20481-32768 (twenty-ninth session,
        # 2026-11-26), one process, best of 2, against a block of 32768 on 32 warps: bf16
        # 4096x20608 2188 -> 2782, 4096x24576 2440 -> 2832, 4096x28672 2658 -> 2880, 4096x32000
        # 2775 -> 2909, 4096x32768 2791 -> 2925, 256x32000 1598 -> 2052, 1024x32000 2394 ->
        # 2524, fp16 4096x32000 2783 -> 2913.
        if self._fast_float_forward(itemsize):
            # On fast memory, float32 rows of more than 16384 elements too (the row kernel holds
            # them in a block of 32768 on 32 warps, one program an SM, which loads nothing while
            # it reduces a row), in chunks of 8192 up to 24576 elements, of 16384 above
            # (``chunk_elems``). Through the API on the H200 (2026-11-28, forty-ninth session,
            # docs/tuning.md), one process, two rounds, against the row kernel: 2048x16400 2941
            # -> 3509 GB/s, 8192x16400 3334 -> 4046, 512x20001 2399 -> 2899, 2048x20001 3089 ->
            # 3539, 8192x20001 3407 -> 3993, 160x22000 1530 -> 1969, 2048x24576 3689 -> 3878;
            # in chunks of 16384, 512x26000 2857 -> 3215, 2048x26000 3709 -> 3898, 2048x28672
            # 3848 -> 3967, 512x32768 3105 -> 3410, 8192x32768 4015 -> 4118; 2048x30001 and
            # 8192x30001 level (3650 -> 3647, 3886 -> 3897). Chunks of 16384 lost on rows of up
            # to 24576 (2048x20001 2817), chunks of 8192 on those of 26000 (2048x26000 3626).
            return n_cols > MAX_FAST_FLOAT_TILE_COLS
        if self.streams != 1 or itemsize != 2:
            return False
        return n_cols > MAX_HALF_TILE_COLS or self._fast_small_chunk_row(n_cols, itemsize)

    def _fast_forward(self) -> bool:
        # The forward on a GPU of fast memory (``FAST_MEMORY_BYTES_PER_SM``).
        return self.fast_memory and self.streams == 1

    def _fast_float_forward(self, itemsize: int) -> bool:
        # The forward's float32 rows on a GPU of fast memory (``MAX_FAST_FLOAT_TILE_COLS``).
        return self._fast_forward() and itemsize == 4

    def _fast_small_chunk_row(self, n_cols: int, itemsize: int) -> bool:
        # The forward's 2-byte rows that fast memory reads in chunks of ``FAST_SMALL_CHUNK``.
        most = MAX_FASTEST_SMALL_CHUNK_COLS if self.fastest_memory else MAX_FAST_SMALL_CHUNK_COLS
        return (self._fast_forward() and itemsize == 2
                and MIN_FAST_SMALL_CHUNK_COLS < n_cols <= most)

    def split_rows(self, n_rows: int, n_cols: int, n_cores: int) -> bool:
        # A few rows of 16385-32768 elements (``SPLIT_FITTING_ROWS_PER_SM``): one 32-warp
        # program a row leaves SMs idle and the rest short of loads in flight. (Only the
        # forward's fit a tile: the backward's two tensors share it.)
        return n_cols > MAX_HALF_TILE_COLS and n_rows <= SPLIT_FITTING_ROWS_PER_SM * n_cores

    def stat_lanes(self, plan: Plan, itemsize: int) -> int:
        # The online kernel's first pass reads chunks as rows of these lanes; each thread's
        # 16-byte vector of them keeps one running max and sum (``kernels._range_stats``). One per
        # lane, as before, took an exp for every 4 elements to rescale the sums; one per vector
        # runs bf16 4096x50257 3453 -> 3600 GB/s, 2048x20001 3208 -> 3318, 256x151936 2822 ->
        # 2911 on the H200, float32 within 1% (2026-11-29, fifty-eighth session). A lab copy of
        # the kernel, one process per form, two rounds, through the API on the H100
        # (2026-11-23, seventh session, docs/tuning.md), against one reduced at every chunk:
        # fp32 4096x50257 2672 -> 2822 GB/s, 4096x40000 2739 -> 2949, 441x151936 2084 -> 2118;
        # bf16 256x151936 2045 -> 2162, 441x151936 2007 -> 2124, 4096x40000 2548 -> 2664,
        # 1024x65536 2611 -> 2572. On 2-byte rows that are not 16-byte aligned, read from their
        # aligned body (2026-11-24, eighth session), against a pair per thread: bf16 4096x50257
        # 2008 -> 2400, 4096x40001 2050 -> 2520, 1000x100003 1920 -> 2072. The split kernels'
        # first pass lost with pairs per lane (bf16 16x262144 1241 -> 1155) and keeps one.
        return stat_lanes_per_vector(plan, itemsize,
                                     TUNED_WARP_SIZE * self._warps(plan, itemsize))

    def whole_row_words(self, plan: Plan) -> bool:
        return self._warps(plan, 2) >= WORD_ROW_WARPS

    # Sizes below come from scripts/tune.py on an H100 (2026-11-22): a row of up to 32768
    # elements held in registers by one program (32 warps from 32768) runs at 95-99% of the
    # copy roof (65536 falls to 66%: longer rows loop); short rows do
    # best in tiles of about 4096 elements; the split kernels in chunks of 4096 (8 warps),
    # longer on fast memory (``split_chunk``).
    def tile_elems(self, itemsize: int) -> int:
        # Where warps are wider (AMD CDNA), Triton's AMD backend gives a 2-byte block of 32768
        # 128 KB of shared memory (the row kernel compiled for gfx942 offline, 2026-11-27),
        # twice the 64 KB a CDNA workgroup may have; one of 16384 takes 32 KB (float32 blocks
        # of 32768: 64 KB).
        if itemsize == 2 and self.warp_size > TUNED_WARP_SIZE:
            return 16384
        return 32768

    def rows_tile_elems(self, itemsize: int) -> int:
        return 4096

    def column_lanes(self, itemsize: int) -> int:
        return COLUMN_LANES

    def column_min_lanes(self, itemsize: int, split: bool) -> int:
        if self.transposed_output:
            return (TRANSPOSED_FLOAT_MIN_LANES if self._transposed_float_forward(itemsize)
                    else TRANSPOSED_MIN_LANES)
        if not split:
            return COLUMN_LANES
        if itemsize == 2:
            return (HALF_BACKWARD_SPLIT_MIN_LANES if self.streams == 2 or self.aligned_columns
                    else COLUMN_LANES)
        return SPLIT_MIN_LANES.get(itemsize, COLUMN_LANES)

    def column_tile_elems(self, itemsize: int, lanes: int) -> int:
        return COLUMN_TILE_ELEMS

    def column_chunk_elems(self, itemsize: int, lanes: int) -> int:
        if (itemsize == 2 and self.streams == 2 and not self.transposed_output
                and lanes == HALF_BACKWARD_SPLIT_MIN_LANES):
            return HALF_BACKWARD_CHUNK_ELEMS
        return COLUMN_CHUNK_ELEMS

    def column_holds_whole(self, itemsize: int, lanes: int, cols: int, split: bool,
                           groups: int, n_cores: int, n_cols: int) -> bool:
        elems = lanes * cols
        if (not split and self._half_whole_columns(itemsize, lanes, cols)
                and n_cols <= HALF_WHOLE_LOOPED_MOST_COLS):
            return True
        if self._transposed_float_forward(itemsize) and lanes <= TRANSPOSED_WHOLE_LANES:
            few = groups < n_cores and lanes > TRANSPOSED_FLOAT_MIN_LANES
            return elems <= (FEW_GROUPS_CHUNK_ELEMS if few else SPLIT_WHOLE_CHUNK_ELEMS)
        if split and self._interleaved_forward():
            if self.aligned_columns and lanes <= SPLIT_WHOLE_LANES.get(itemsize, 0):
                return elems <= SPLIT_WHOLE_CHUNK_ELEMS
            if self._float_wide_whole(itemsize, lanes, cols, groups, n_cores, n_cols):
                return True
        return super().column_holds_whole(itemsize, lanes, cols, split, groups, n_cores,
                                          n_cols)

    def _float_wide_whole(self, itemsize: int, lanes: int, cols: int, groups: int,
                          n_cores: int, n_cols: int) -> bool:
        # Float32 16-row groups holding their rows whole where 32-row groups would be split:
        # runs that are not aligned vectors in chunks of ``UNALIGNED_FLOAT_WHOLE_CHUNK_ELEMS``;
        # aligned runs, rows of 1025-2048 (``FLOAT_WIDE_WHOLE_LANES``) and of 897-1024
        # (``FLOAT_WIDE_SHORT_COLS``), each where such groups are many enough.
        if itemsize != 4 or lanes != FLOAT_WIDE_WHOLE_LANES:
            return False
        if not self.aligned_columns:
            return lanes * cols <= UNALIGNED_FLOAT_WHOLE_CHUNK_ELEMS
        if lanes * cols == SPLIT_WHOLE_CHUNK_ELEMS:
            return 2 * groups >= n_cores
        return (cols == FLOAT_WIDE_SHORT_COLS and n_cols >= FLOAT_WIDE_SHORT_MIN_COLS
                and groups >= self.split_items_per_core * n_cores)

    def column_loop_groups(self, itemsize: int, split: bool) -> tuple[int, int, int]:
        if split and self._interleaved_forward():
            if itemsize == 4 and not self.aligned_columns:
                return LOOPED_LANES, LOOPED_FLOAT_SPLIT_ITEMS, 0
            if itemsize == 2:
                return LOOPED_LANES, self.split_items_per_core, LOOPED_HALF_RANGE_CHUNKS
        return super().column_loop_groups(itemsize, split)

    def _transposed_float_forward(self, itemsize: int) -> bool:
        # The forward of float32 rows of a transposed input (``TRANSPOSED_FLOAT_MIN_LANES``).
        return self.transposed_output and self.streams == 1 and itemsize == 4

    def rows_per_block(self, block_n: int, n_rows: int, n_cores: int, itemsize: int) -> int:
        # Tiles of at most 1024 elements for rows that are not 16-byte aligned, float32 rows of
        # 512- and 1024-lane blocks at most 2048: through the API on the H100 (2026-11-23,
        # docs/tuning.md), fifth session: fp32 65536x333 2007 -> 2522 GB/s (8 rows of 512 lanes
        # before, 2), 32768x777 2491 -> 2670 (4 rows before); bf16 65536x333 1557 -> 1574;
        # sixth session, four 512-lane rows without windows against two with, two runs:
        # fp32 65536x333 2626 -> 2664 and 2547 -> 2592, 16384x300 2090 -> 2323 and
        # 1982 -> 2051, 32768x500 2722 -> 2773 and 2546 -> 2631 (tiles of 2048 elements lost
        # for 256-lane rows: 65536x200 2486 -> 2179).
        if self.body_rows(block_n, itemsize):
            return self.short_tile.rows or BODY_TILE_ROWS[block_n]
        if (self._one_warp_row(block_n, itemsize) or self._two_warp_row(block_n, itemsize)
                or self._fast_float_row(block_n, itemsize)
                or self._fast_odd_float_row(block_n, itemsize)):
            return 1
        rows = super().rows_per_block(block_n, n_rows, n_cores, itemsize)
        if self.unaligned_rows and itemsize == 4 and block_n in (512, 1024):
            rows = min(rows, UNALIGNED_FLOAT_TILE_ELEMS // block_n)
        elif self.unaligned_rows and block_n < UNALIGNED_TILE_ELEMS:
            rows = min(rows, UNALIGNED_TILE_ELEMS // block_n)
        elif self._hinted_float_tile(block_n, itemsize):
            rows = max(1, min(rows, HINTED_FLOAT_TILE_ELEMS // block_n))
        if self.short_tile.rows:
            rows = min(rows, self.short_tile.rows)
        return rows

    def _fast_float_row(self, block_n: int, itemsize: int) -> bool:
        # The forward's 16-byte aligned float32 rows of 513-1024 elements on a GPU of fast
        # memory (``FAST_FLOAT_ROW_LANES``).
        return (self._fast_float_forward(itemsize) and not self.unaligned_rows
                and block_n == FAST_FLOAT_ROW_LANES)

    def _fast_odd_float_row(self, block_n: int, itemsize: int) -> bool:
        # The forward's float32 rows of 1025-2048 elements in runs of one on a GPU of fast
        # memory (``FAST_ODD_FLOAT_ROW_LANES``).
        return (self._fast_float_forward(itemsize) and self.odd_rows
                and block_n == FAST_ODD_FLOAT_ROW_LANES)

    def _hinted_float_tile(self, block_n: int, itemsize: int) -> bool:
        # Forward float32 rows aligned through ``ALIGN`` in blocks of at most 256 lanes
        # (``HINTED_FLOAT_TILE_LANES``).
        return (self.hinted_rows and self.streams == 1 and itemsize == 4
                and block_n <= HINTED_FLOAT_TILE_LANES)

    def chunk_elems(self, itemsize: int, variant: str, n_cols: int) -> int:
        if variant != "online":
            return 4096
        # The online kernel moves a chunk per load, and its second read of a row should hit the
        # cache (L1, measured on the H200): big chunks, few rows an SM in flight. A sweep of
        # 8192-32768 elements with 16/32 warps over rows of 36000-262144 (H100, 2026-11-23,
        # docs/tuning.md): float32 at 32768, 90-96% of the copy roof for rows of 40000-65536
        # (72-77% with 8192); 2-byte rows at 16384 up to 81920 elements (86% at 65536, 82-84%
        # with 32768) and at 32768 above; those of up to 20480 elements in the forward at 8192
        # (``MAX_SHORT_HALF_CHUNK_COLS``), aligned ones of up to 24576
        # (``MAX_ALIGNED_SHORT_HALF_CHUNK_COLS``), all of up to 40960 on the fastest memory
        # (``MAX_FAST_SHORT_HALF_CHUNK_COLS``).
        if self._fast_small_chunk_row(n_cols, itemsize):
            return FAST_SMALL_CHUNK
        if itemsize == 2 and self.streams == 1 and n_cols <= self._most_short_half_chunk_cols():
            return SHORT_HALF_CHUNK
        if self._fast_float_forward(itemsize) and n_cols <= 32768:
            # Float32 rows of 16385-32768 elements on fast memory (``online_rows``).
            return SHORT_HALF_CHUNK if n_cols <= MAX_FAST_FLOAT_SHORT_CHUNK_COLS else 16384
        return 32768 if itemsize >= 4 or n_cols > MAX_HALF_CHUNK_COLS else 16384

    def split_items(self, itemsize: int) -> int:
        # ``FAST_FLOAT_SPLIT_ITEMS``: the forward's float32 rows on fast memory.
        if self._fast_float_forward(itemsize):
            return FAST_FLOAT_SPLIT_ITEMS
        return super().split_items(itemsize)

    def split_chunk(self, chunk: int, range_cols: int, itemsize: int) -> int:
        # ``FAST_SPLIT_LONG_CHUNK``: the forward's float32 and 2-byte rows on fast memory.
        if self._fast_forward() and itemsize <= 4 and range_cols > chunk:
            return max(chunk, FAST_SPLIT_LONG_CHUNK)
        return chunk

    def _most_short_half_chunk_cols(self) -> int:
        # The forward's 2-byte rows read in chunks of ``SHORT_HALF_CHUNK`` (``chunk_elems``).
        if self.fastest_memory:
            return MAX_FAST_SHORT_HALF_CHUNK_COLS
        return (MAX_SHORT_HALF_CHUNK_COLS if self.unaligned_rows
                else MAX_ALIGNED_SHORT_HALF_CHUNK_COLS)

    def core_count(self, device_index: int) -> int:
        return _compat.device_properties(device_index)["multiprocessor_count"]

    def tail_block(self, n_cols: int, itemsize: int) -> int:
        # A tail of at most a quarter of the head, for 2-byte dtypes only. Measured through the
        # API on the H100 (2026-11-22, docs/tuning.md), rows of 4096 bf16: 8448-10240 columns
        # 77-87% of the copy roof as one block, 88-92% as head and tail; 18432 and 20480
        # 69-74% against 82-87%. Larger tails, float32 rows and heads under 4096 lose.
        # Unaligned 2-byte rows of 257-1024 elements, one to a program, take any tail that
        # saves lanes (333: 256 + 128, 600: 512 + 128), measured with them below.
        # Unaligned 2-byte rows of 9217-10240 elements (8192 + 2048) run faster in one block
        # of 16384 with 16 warps: through the API on the H100 (2026-11-24, tenth session,
        # docs/tuning.md), bf16 4096x10001 1980 -> 2313 GB/s, 1024x10001 1584 -> 1705, fp16
        # 4096x10001 2055 -> 2304; smaller tails lost so (bf16 8192x9001 2430 -> 2266, 4096x8500
        # 2250 -> 2120), as did 4096 + 1024 (4096x5001 2062 -> 1937). With 2-byte blocks held
        # as loaded (twenty-first session, 2026-11-25), 8192 + 2048 still lost (bf16 4096x10001
        # 2349 -> 2296, 4096x9500 2361 -> 2276; fp16 4096x10001 2342 -> 2303), and one block of
        # 16384 lost to a head of 8192 and a tail (bf16 4096x8448 2492 -> 2180, 4096x10240 2581
        # -> 2482, unaligned 4096x8500 2456 -> 2199). On 4 warps, though, 8192 + 2048 beats the
        # block of 16384 (``WIDE_TAIL_WARPS``, twenty-eighth session, 2026-11-26), so
        # unaligned rows take tails of up to an eighth too. (Only the forward takes tails.)
        block = triton.next_power_of_2(n_cols)
        if self._short_half_row(block, itemsize):
            return 0 if self.body_rows(block, itemsize) else head_tail(n_cols)
        tail = super().tail_block(n_cols, itemsize)
        return tail if itemsize == 2 and tail <= block // 8 else 0

    def _wide_tail(self, block_n: int, tail_n: int, itemsize: int) -> bool:
        # A forward 2-byte row held as a head of 8192 and a tail on ``WIDE_TAIL_WARPS``: every
        # tail where the row is 16-byte aligned, one of 2048 (9217-10240 elements) where not.
        return (self.streams == 1 and itemsize == 2 and block_n == WIDE_TAIL_HEAD and tail_n > 0
                and (not self.unaligned_rows or tail_n == WIDE_TAIL))

    def _short_half_row(self, lanes: int, itemsize: int) -> bool:
        # A 2-byte row of 257-1024 lanes in the forward (``_one_warp_row``).
        low, high = ONE_WARP_ROW_LANES
        return self.streams == 1 and itemsize == 2 and low <= lanes <= high

    def _one_warp_row(self, lanes: int, itemsize: int) -> bool:
        # 2-byte rows of 257-1024 elements (``lanes``: their block, head and tail included) that are
        # not 16-byte aligned, or that are held as a head and a tail, go one to a program with one
        # warp (at least ``MIN_PROGRAMS_PER_SM`` an SM), in the forward; since the thirty-ninth
        # session unaligned ones of 257-512 elements go to body tiles instead (``body_rows``,
        # which ``rows_per_block`` asks first). Through the API on the H100
        # (docs/tuning.md), sixth session (2026-11-23), against two rows a tile with 2 warps: bf16
        # 65536x333 1935 -> 2177 GB/s, 131072x300 1895 -> 2271, 16384x300 1353 -> 1484, 32768x500
        # 2071 -> 2158, 8192x333 1066 -> 1086, 4096x333 735 -> 722 (a 3 MB tensor); seventh session
        # (2026-11-23), 513-1024 lanes against a row of 4 warps: bf16 32768x600 1663 -> 2246,
        # 8192x600 1193 -> 1491, 32768x777 2038 -> 2260, 16384x1000 2086 -> 2169, fp16 65536x900
        # 2332 -> 2485; with few rows a little lower (1823x781 784 -> 757, 2048x1000 985 -> 959: 2-4
        # MB tensors, where one-warp programs leave SMs short of warps; 2 warps lost on the large
        # ones). The backward (two streams) lost on small tensors (8192x333 364 -> 205, 4096x333 294
        # -> 171) and keeps its tiles. Rows that are whole vectors with a tail (twelfth session,
        # 2026-11-24), against tiles of several rows, two runs: bf16 32768x600 2065 -> 2361 GB/s,
        # 32768x576 2020 -> 2355, 32768x608 2096 -> 2379, 16384x528 1609 -> 1959, 32768x304 1766 ->
        # 1955; those without one (a block of 1024 lanes, as 1000 elements) ran level (32768x1000
        # 2621 -> 2646) and keep their tiles but on fast memory (``FAST_HALF_ROW_LANES``).
        return self._short_half_row(lanes, itemsize) and (
            self.unaligned_rows or lanes & (lanes - 1) != 0
            or self.fast_memory and lanes == FAST_HALF_ROW_LANES)

    def _unaligned_bodies(self) -> bool:
        # The forward's rows that are not 16-byte aligned but whose elements are next to each
        # other, so that a kernel can read each row's aligned body as vectors: the rows the
        # body rules below take (``body_rows``, ``_two_warp_row``, ``UNALIGNED_ROW_8192_WARPS``).
        return self.streams == 1 and self.unaligned_rows and not self.strided_rows

    def _two_warp_row(self, lanes: int, itemsize: int) -> bool:
        # The forward's 2-byte rows of 1025-2048 elements that are not 16-byte aligned, with
        # their elements next to each other, and on a GPU of fast memory those that are
        # (``TWO_WARP_ROW_LANES``).
        return itemsize == 2 and lanes == TWO_WARP_ROW_LANES and (
            self._unaligned_bodies() or self._fast_forward() and not self.unaligned_rows)

    def body_rows(self, block_n: int, itemsize: int) -> bool:
        # The forward's 2-byte rows of 129-512 elements that are not 16-byte aligned (a block of
        # ``block_n`` lanes, no tail; runs of 2-4 elements too) go ``BODY_TILE_ROWS`` to a one-warp
        # tile, each row read and written as vectors from its aligned body (``tile_bodies``),
        # rather than one to a one-warp program with element loads and stores
        # (``_one_warp_row``). Through the API on the H100 (2026-11-27, thirty-ninth session,
        # docs/tuning.md), two runs of alternating processes, best of 3 each, against the
        # one-warp rows: bf16 65536x333 2241 -> 2414 and 2237 -> 2386 GB/s, 16384x300 1337 ->
        # 1603 and 1333 -> 1616, 131072x300 2431 -> 2556 and 2430 -> 2583, 65536x257 2087 ->
        # 2281 and 2082 -> 2215, 16384x511 1846 -> 1967 and 1843 -> 1982, 262144x333 2461 ->
        # 2676 and 2459 -> 2668, fp16 65536x333 2212 -> 2410 and 2210 -> 2418; 3 MB and smaller
        # tensors level (bf16 1000x333 251 -> 242 and 246 -> 247). In a lab sweep (same day)
        # such tiles lost on rows of 513-1024 lanes (bf16 8192x600 1640 -> 1392, 2048x1000 1061
        # -> 933), on rows of up to 128 against their windows (bf16 131072x50 1492 -> 1155) and
        # on float32 rows (fp32 65536x333 2712 -> 2643). Rows whose elements are apart keep
        # the one-warp rows: read element by element in such tiles, they lost (2026-11-27,
        # fortieth session, rows of x[:, ::2], two processes each: bf16 65536x333 1630, 1651 ->
        # 1577, 1560; 16384x300 1173, 1178 -> 1059, 1026; 131072x300 1761, 1762 -> 1641, 1630).
        # Rows of 129-256 elements, four to such a tile (forty-fifth session, 2026-11-28), against
        # four to a two-warp tile read through their windows: bf16 124031x129 1642 -> 2160 GB/s,
        # 131072x150 2102 -> 2363, 98304x170 2125 -> 2331, 262144x199 2351 -> 2605, 65536x250
        # 2283 -> 2309, 32768x129 1172 -> 1420, 16384x250 1399 -> 1528, fp16 124031x129 1663 ->
        # 2188; a second set: bf16 200000x131 1765 -> 2326, 262144x129 1782 -> 2384, 65536x140
        # 1732 -> 1918, fp16 65536x129 1403 -> 1758, within 2% on the rest (bf16 32768x220 1850
        # -> 1820, tensors of 3 MB and less); column slices (rows of n of n + 9), whose body
        # stores are of single elements, bf16 124031x129 1635 -> 1797, 65536x200 1871 -> 2063.
        # On fast memory the one-warp tiles of shorter rows too (``FAST_BODY_TILE_MOST_COLS``).
        return self._unaligned_bodies() and (
            itemsize == 2 and block_n in BODY_TILE_ROWS or self.short_tile.bodies)

    def options(self, plan: Plan, itemsize: int) -> dict[str, Any]:
        # One stage: the persistent loop keeps enough rows in flight through occupancy instead.
        warps = max(1, self._warps(plan, itemsize) * TUNED_WARP_SIZE // self.warp_size)
        options = {"num_warps": warps, "num_stages": 1, "enable_fp_fusion": self.fp_fusion}
        # 2-byte online rows with a last chunk (``last_chunk``) on 16 warps: at most 64
        # registers a thread (80-116 otherwise, one program an SM), so two programs share an
        # SM. Through the API on the H100 (2026-11-24, eleventh session, docs/tuning.md), two
        # runs, best of each, against whole chunks without the cap: bf16 2048x20001 1852 ->
        # 2115 GB/s, 2048x36000 2335 -> 2551, 1342x50000 2288 -> 2416, 4096x40001 2479 -> 2608,
        # 4096x40000 2670 -> 2759, 4096x50257 2294 -> 2325, fp16 4096x50257 2387 -> 2413. The
        # cap alone, on whole chunks, gained nothing (bf16 2048x20001 1844, 1024x65536 2617 ->
        # 2594, fp16 4096x50257 2290), nor did it on the row kernel's 2-byte rows of 16384
        # lanes (bf16 4096x10001 2323 -> 2212, 4096x11001 2477 -> 2368).
        # The 8-warp programs of rows of up to 20480 elements (``SHORT_HALF_CHUNK``) gain from
        # the same cap: through the API on the H100 (2026-11-26, twenty-ninth session,
        # docs/tuning.md), against none: bf16 2048x20001 2429 -> 2507 GB/s, 4096x20001 2607 ->
        # 2685, 1342x17001 2150 -> 2249, 1024x20001 2211 -> 2232; 2048x20000 and fp16
        # 2048x20001 level; 48 lost (2048x20001 2021).
        if (self.name == "cuda" and plan.variant == "online" and plan.last_n and itemsize == 2
                and options["num_warps"] in (8, 16)):
            options["maxnreg"] = TWO_PROGRAM_REGS
        return options

    def _warps(self, plan: Plan, itemsize: int) -> int:
        # From a sweep of warps (4-32), waves and tails over rows of 256-32768 elements, M=4096,
        # float32/bfloat16/float16 (H100, 2026-11-22, docs/tuning.md). What sets the speed is how
        # many programs an SM keeps (registers) against how many bytes each has in flight.
        block_m, block_n, tail_n = plan.block_m, plan.block_n, plan.tail_n
        if plan.variant == "cols":
            elems = block_m * block_n * self.streams
            if self._half_whole_columns(itemsize, plan.block_m, plan.block_n):
                return elems // (TUNED_WARP_SIZE * HALF_WHOLE_COLUMN_THREAD_ELEMS)
            if self._short_columns(plan, itemsize):
                return max(1, elems * itemsize // (TUNED_WARP_SIZE * SHORT_COLUMN_THREAD_BYTES))
            if self._wide_column_threads(plan, itemsize):
                return max(self._wide_column_min_warps(plan),
                           elems // (TUNED_WARP_SIZE * HALF_COLUMN_THREAD_ELEMS))
            # 32 elements a thread at most, of each tensor read (the backward reads two).
            return 4 if elems <= 4096 else 8 if elems <= 8192 else 16
        if plan.variant == "tile" and block_m == 1 and self._one_warp_row(block_n + tail_n,
                                                                           itemsize):
            return 1
        if self.tile_bodies(plan, itemsize):
            return 1
        if plan.variant == "tile" and block_m == 1:
            if self._two_warp_row(block_n + tail_n, itemsize):
                return 2
            if self._fast_float_row(block_n, itemsize):
                return FAST_FLOAT_ROW_WARPS
            if self._fast_odd_float_row(block_n, itemsize):
                return FAST_ODD_FLOAT_ROW_WARPS
        if plan.variant == "split" and self._fast_float_forward(itemsize):
            return FAST_FLOAT_SPLIT_WARPS
        if plan.variant == "split" and plan.block_n == FAST_SPLIT_LONG_CHUNK:
            return 8  # 2-byte rows (``split_chunk``): 32 elements a thread, as 4096 on 8
        if plan.variant == "online" and self.narrow_float_chunks and plan.last_n:
            return FAST_FLOAT_NARROW_CHUNK_WARPS
        if plan.variant == "online" and itemsize == 2 and self.streams == 1:
            if block_n == SHORT_HALF_CHUNK:
                return 8  # 32 elements a thread (``MAX_SHORT_HALF_CHUNK_COLS``)
            if block_n == FAST_SMALL_CHUNK and self.fast_memory:
                return FAST_SMALL_CHUNK_WARPS
        if plan.variant == "tile" and block_m == 1 and block_n >= 4096:
            if block_n == 8192 and not tail_n and self._unaligned_bodies():
                return UNALIGNED_ROW_8192_WARPS
            if itemsize == 4 and block_n == 4096:
                # Float32 rows of 2049-4096 elements: 8 warps, 16 elements a thread. Through the
                # API on the H100 (2026-11-23, seventh session, docs/tuning.md), against 16:
                # 4096x2049 1901 -> 2202 GB/s, 4096x2500 2216 -> 2424, 4096x3000 2432 -> 2603,
                # 8192x3000 2649 -> 2758, 4096x4000 level; the backward level or faster
                # (4096x2500 2432 -> 2581). Blocks of 8192 lost with 8 (4096x5000 2505 -> 2447).
                return 8
            if itemsize == 4 and block_n == 16384 and self.unaligned_rows and self.streams == 1:
                # Float32 rows of 8193-16384 elements that are not 16-byte aligned (their
                # aligned body as vectors) keep 16. The row kernel launched directly on the
                # H100 (2026-11-24, eighth session, docs/tuning.md), against 32 warps:
                # 4096x10001 2279 -> 2795 GB/s, 4096x12345 2557 -> 2808.
                return 16
            if itemsize >= 4:
                # 16 elements a thread: 16384 with 16 warps needs 72 registers, one program an
                # SM, 79-97% of the roof (rows of 8448-16384); with 32 warps 98-99%.
                return 16 if block_n <= 8192 else 32
            if tail_n:
                if self._wide_tail(block_n, tail_n, itemsize):
                    return WIDE_TAIL_WARPS
                return block_n // 1024  # 4096 + tail: 4, 8192 + tail: 8, 16384 + tail: 16
            return 4 if block_n == 4096 else 16 if block_n <= 16384 else 32
        # Tiles of several short rows, and chunks: by tile size, but 4 warps for float32 tiles
        # of up to 4096 elements (32768x128 2106 against 1876 GB/s with 8; bfloat16 tiles do
        # better with 8).
        elems = block_m * (block_n + tail_n)
        warps = 4 if elems < 4096 else 8 if elems < 8192 else 16 if elems < 32768 else 32
        if block_m > 1 and itemsize >= 4 and elems <= 4096:
            warps = 4
        if block_m > 1 and self._hinted_float_tile(block_n, itemsize):
            warps = max(1, elems // 256)  # 8 elements a thread (HINTED_FLOAT_TILE_ELEMS)
        # 2 warps for 2-byte tiles of unaligned rows: through the API on the H100 (2026-11-23,
        # fifth session), bf16 65536x333 1796 -> 1920 GB/s, 8192x200 661 -> 803 (float32 lost:
        # 65536x333 2549 -> 2342).
        if block_m > 1 and itemsize == 2 and self.unaligned_rows and elems <= UNALIGNED_TILE_ELEMS:
            warps = 2
        if plan.variant == "tile" and block_m == self.short_tile.rows:
            warps = self.short_tile.warps
        if block_n == 1 and block_m >= SINGLE_COLUMN_TILE_ROWS and self.streams == 1:
            warps = SINGLE_COLUMN_TILE_WARPS
        return warps

    def _wide_column_threads(self, plan: Plan, itemsize: int) -> bool:
        # 2-byte ``cols`` tiles of the forward, in groups of the target's width or of a
        # transposed input, hold 64 elements a thread (``HALF_COLUMN_THREAD_ELEMS``), on half
        # the warps. Through the API on the H100 (2026-11-25, twenty-second session,
        # docs/tuning.md), one process, best of 3, against 32 elements a thread: bf16 dim 1 of
        # 64x256x1024 1704 -> 2106 GB/s, of 64x512x512 1745 -> 1917, of 4x8192x1024 1388 ->
        # 1508, dim 0 of 4096x4096 1341 -> 1474, of 16384x1024 1276 -> 1425; transposed inputs,
        # 1000 rows of 8192 967 -> 1051, 8192 rows of 1000 1181 -> 1432 (1412 -> 1426 between
        # two benchmark runs). Narrow groups of interleaved rows lost (dim 0 of 131072x8, 8-row
        # groups split 128 ways: 471 -> 397), as did float32 (dim 1 of 256x1000x49 1402 -> 944,
        # of 64x512x512 2597 -> 2395).
        return (itemsize == 2 and self.streams == 1
                and (plan.block_m >= COLUMN_LANES or self.transposed_output))

    def _wide_column_min_warps(self, plan: Plan) -> int:
        # A tile of 4096 elements (whole rows of up to 128 lanes in 32-row groups, of up to 512
        # in a transposed input's 8-row ones) on 2 warps, not 4, so it too holds 64 elements a
        # thread. Through the API on the H100 (2026-11-25, twenty-fifth session,
        # docs/tuning.md), one process, best of 3, bf16 (fp16 alike): dim 1 of 8x19x262144 996
        # -> 2020 GB/s, of 512x21x4096 1095 -> 2188, of 2048x5x1024 928 -> 2080, of 128x32x8192
        # 1562 -> 2620, of 32x64x4096 1702 -> 1960, of 4x100x65536 2164 -> 2353; transposed
        # 16384 rows of 100 617 -> 742. Tiles of 4 lanes lost (dim 1 of 16x3x50176 1173 ->
        # 1117, fp16 1188 -> 1121), as did runs loaded element by element (dim 1 of
        # 64x7x20001 1542 -> 1249). Float32 tiles on 2 warps moved by -3% to +14%: not taken.
        if plan.block_n >= HALF_COLUMN_FEW_WARPS_MIN_COLS and (self.aligned_columns
                                                                or self.transposed_output):
            return HALF_COLUMN_FEW_WARPS
        return 4

    def _interleaved_forward(self) -> bool:
        # The forward of interleaved rows whose output is interleaved too (not a transposed
        # input's): the layouts the ``cols`` group rules above serve.
        return self.streams == 1 and not self.transposed_output

    def _aligned_interleaved_forward(self) -> bool:
        # ... whose runs are aligned vectors: the layouts the ``cols`` warp rules below serve.
        return self._interleaved_forward() and self.aligned_columns

    def _half_whole_columns(self, itemsize: int, lanes: int, cols: int) -> bool:
        # 2-byte 32x512 tiles of the forward, aligned runs (``HALF_WHOLE_COLUMN_COLS``).
        # Through the API on the H100 (2026-11-28, forty-sixth session, docs/tuning.md), the
        # package before and after in two processes each, eager GB/s, best of 3, dim 1 of: few
        # groups (8 warps before) bf16 16x400x1024 1068, 1110 -> 1386, 1388; 8x512x2048 1247,
        # 1282 -> 1538, 1547; 4x400x4096 1086, 1088 -> 1386, 1343; 2x400x1024 and 1x512x4096
        # level. Many groups (looped before): bf16 128x333x1024 1739, 1741 -> 1866, 1867;
        # 256x300x512 1593, 1603 -> 1695, 1700; 32x257x2048 1297, 1317 -> 1391, 1395. Whole
        # against looped in one process, two runs each, dim 1 of 64xNx512: bf16 N = 350 1407,
        # 1410 -> 1442, 1448; 384 1532, 1563 -> 1578, 1574; 400 +0-3%; 448-500 -1-4%; 512 1938,
        # 1936 -> 1883, 1883; fp16 N = 300 1300, 1303 -> 1339, 1336; 384 1603, 1590 -> 1539,
        # 1541; 400 1614, 1643 -> 1554, 1589.
        return (itemsize == 2 and self._aligned_interleaved_forward() and lanes == COLUMN_LANES
                and cols == HALF_WHOLE_COLUMN_COLS)

    def _short_columns(self, plan: Plan, itemsize: int) -> bool:
        # Float32 and 2-byte tiles of whole interleaved rows of up to ``SHORT_COLUMN_LANES``
        # lanes, aligned runs, in the forward (``SHORT_COLUMN_THREAD_BYTES``). Through the API
        # on the H100 (2026-11-28, forty-fifth session, docs/tuning.md), one run each, best of
        # 2, dim 1 of, against 4 warps (float32) or the 2-byte rule (2 warps, 4 where rows take
        # under 8 lanes): fp32 8x19x262144 2495 -> 2680 GB/s, 512x21x4096 2672 -> 2802,
        # 2x17x1048576 2322 -> 2534, 64x24x8192 2452 -> 2578, 64x19x4096 1797 -> 1980,
        # 8192x16x128 2550 -> 2670, 1024x7x512 1886 -> 2124, and tiles of 256-512 elements
        # (4-8 a thread on 4 warps before) on one warp 65536x3x64 966 -> 2342, 16384x2x256 1350
        # -> 2328; bf16 8x19x262144 2021 -> 2357, 512x21x4096 2194 -> 2488, 1024x9x4096 1402 ->
        # 2559, 2x17x1048576 1870 -> 2208, 32x25x16384 1898 -> 2069, 64x19x4096 1211 -> 1405,
        # 65536x3x64 482 -> 1704, 16384x2x256 690 -> 1872, 8192x8x128 1205 -> 1942; the rest
        # level (fp32 4096x4x1024 2660 -> 2635). 2-byte tiles of 4096 elements of rows of 4-8
        # lanes lost on one warp (bf16 4096x4x1024 2391 -> 2087, 2048x6x2048 2511 -> 2420) and
        # keep the 2-byte rule. In the same labs float32 rows of 33-64 lanes lost on 2 warps
        # (32x64x4096 2433 -> 2372), as did runs not whole vectors (512x13x1000 2098 -> 1813);
        # the twenty-fifth session had found float32 tiles of up to 128 lanes on 2 warps mixed.
        if not (itemsize in (2, 4) and self._aligned_interleaved_forward()
                and plan.block_n <= SHORT_COLUMN_LANES):
            return False
        return (itemsize == 4 or plan.block_n >= SHORT_HALF_COLUMN_MIN_LANES
                or plan.block_m * plan.block_n < COLUMN_TILE_ELEMS)

    def max_programs(self, kernel: Any, args: tuple, constexprs: dict[str, Any],
                     options: dict[str, Any], device_index: int) -> int:
        # As the upstream fused-softmax tutorial: compile once, then read how many programs of
        # this register and shared-memory footprint fit on one SM.
        props = _compat.device_properties(device_index)
        n_regs, smem = _compat.compile_for_occupancy(kernel, args, constexprs, options)
        threads = options["num_warps"] * props["warpSize"]
        occupancy = min(props["max_num_regs"] // max(1, n_regs * threads),
                        _compat.max_threads_per_sm(device_index) // threads)
        if smem > 0:
            occupancy = min(occupancy, props["max_shared_mem"] // smem)
        # What the SMs hold at once, one program an SM at least.
        resident = props["multiprocessor_count"] * max(1, occupancy)
        warps = threads // TUNED_WARP_SIZE  # as the rules count them
        if warps >= 16:
            return resident * WIDE_PROGRAM_WAVES
        if constexprs.get("TAIL_N", 0) > 0:
            # Rows held as a head and a tail (2-byte rows of the forward only).
            if warps == RESIDENT_ROW_WARPS:
                return resident
            if (warps == WIDE_TAIL_WARPS and constexprs["BLOCK_N"] == WIDE_TAIL_HEAD
                    and constexprs["TAIL_N"] < WIDE_TAIL):
                # Aligned rows of 8193-9216 (``ALIGNED_WIDE_TAIL_WAVES``).
                return resident * ALIGNED_WIDE_TAIL_WAVES
        # The ``cols`` kernels are the ones whose tiles hold groups of rows (``BLOCK_I``).
        floor = COLUMN_PROGRAMS_PER_SM if "BLOCK_I" in constexprs else MIN_PROGRAMS_PER_SM
        return props["multiprocessor_count"] * max(occupancy, floor)
