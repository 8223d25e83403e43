"""THE chunk rule and the reduction tree: which KV chunks each core of a group reads, and how the group's
partials merge.

This module and the kernels' shared header (``ops/decode/kernels/flash_decode_common.hpp``, namespace
``flash_decode``) implement the same rules, function for function, under the same names and with the same
argument order, so one can be read against the other::

    window_start(cur_pos, q_len, sliding_window_size)
    chunk_range(cur_pos, k_chunk_size, core_index, num_cores_per_head, q_len, sliding_window_size)
    active_cores(cur_pos, k_chunk_size, num_cores_per_head, q_len, sliding_window_size)
    tree_rounds(num_cores, radix)
    send_round(core_index, radix)
    send_slot(core_index, radix)
    children_in_round(core_index, round, num_active, radix)
    receives_in_round(core_index, round, num_active, radix)

They differ in representation only: a skipped user is ``cur_pos == -1`` here and ``SKIPPED_USER`` (0xFFFFFFFF)
there, chunk_range returns ``(start, count)`` here and a ``ChunkRange`` there, and ``send_round(0)`` is None here
where the kernels never ask (the root does not send). tests/test_chunk_rule_parity.py compiles the header and
checks that both agree. :func:`tree_parent`, :func:`receive_rounds`, :func:`expected_partials`,
:func:`partial_slots`, :func:`default_k_chunk_size` and :func:`default_num_cores_per_head` are the host's own.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from ttflashdecode.config import TILE
from ttflashdecode.plan.shapes import is_int

if TYPE_CHECKING:
    from ttflashdecode.plan.shapes import DecodeShapes

# The group size the planner chooses when k_chunk_size is 0 (default_num_cores_per_head): max_cores_per_head_batch is
# a maximum, and more cores are not always faster. Measured, MODELLED, default (approximate) exp:
# `perf/group_size_table.py`, table in perf/out/group_size_table.md. Llama-3.1-8B's T3K per-chip shape (b1, 4 q / 1 kv
# head, d128, bfloat8_b, cur_pos kv_len - 1; the only kind of call with up to 64 cores in one group), best time per
# group size N at its best k_chunk_size, us (the rule's first kernels: before the radix merge tree, K/V read in
# parts, Q multicast and NoC 1 readers; not re-measured since, so not today's durations):
#     kv_len   N=4     N=8     N=16    N=32    N=64
#     1K       12.03   12.35   13.98   16.37   16.37
#     4K       22.33   17.14   16.40   17.45   20.02
#     8K       36.69   24.67   21.79   22.02   24.50
#     32K      123.08  67.86   49.66   49.97   52.04
#     128K     468.66  240.64  169.80  161.00  161.41
# * MIN_POSITIONS_PER_CORE: below 256 positions a core, another core's share of the reads saves less than the extra
#   tree round and the shorter chunks cost (1K-4K: fastest at 256 a core); the Llama-70B per-chip point (b8, 8 q /
#   1 kv, paged, position 127) takes 5.99 us on one core per user against 8.83 us on 8 (the same first kernels).
# * DRAM_SATURATING_CORES, MAX_POSITIONS_PER_CORE: past 32 cores another tree round pays only once each of the 32
#   would read more than 4096 positions (128K: 32 cores 161.00 us vs 64 161.41). The table above is of the first
#   kernels with the approximate exp; with the exact exp (HiFi4, math_approx_mode off) and the kernels of that time
#   (still before the radix merge tree, K/V in parts, Q multicast and NoC 1 readers), MODELLED, timing-only, same
#   shape, 8x8 grid, us (N16 at the chunk the rule gives it, N32 at the DRAM-bound chunk):
#       kv_len   N16          N32
#       4K       21.1 (k256)  20.9 (k64), 22.5 (k128)
#       8K       31.5 (k512)  27.5 (k128)
#       16K      44.7 (k512)  37.6 (k256)
#       32K      71.4 (k512)  56.1 (k128), 57.3 (k256)
#   so a group at its 64-core maximum halves to 32, not 16, from 8K on (4K still halves to 16 by
#   MIN_POSITIONS_PER_CORE).
#   Re-checked with K/V in parts, Q multicast and NoC 1 readers, MODELLED, timing-only, the same shape paged (block
#   64), at the rule's chunk for each N, us: exact exp 4K N16 k256 15.61, N32 k64 14.60 (N32 1.069x faster; 1.048x
#   with a contiguous cache), 8K N16 k512 23.73, N32 k128 18.04; the default approximate exp 4K N16 13.29, N32 13.82
#   (N16 1.040x faster), 8K N16 19.17, N32 16.94. So at 4K with the exact exp N32 would now be the faster group;
#   the constants are kept (changing them changes plans), not re-tuned.
#   Groups whose maximum is 32 (two groups on 64 cores) now keep 32 cores from 8K on instead of 16: not measured.
# The table's other shapes (the rule's range below auto's line) are all as fast or faster than with the group at its
# maximum (e.g. b1 32q/8kv 1K: 20.03 us on 4 cores a group vs 22.55 on 8).
MIN_POSITIONS_PER_CORE = 256
DRAM_SATURATING_CORES = 32
MAX_POSITIONS_PER_CORE = 4096

# Range of the planner-chosen k_chunk_size. 512 positions of a 128-wide head in bfloat16 is 128 KiB
# per K buffer: big DRAM bursts while double-buffered K and V still leave most of L1 free.
MIN_K_CHUNK_SIZE = 32
MAX_DEFAULT_K_CHUNK_SIZE = 512

# Chunks a core gets from the derived k_chunk_size when a group's query rows fill more than one tile (PNHt > 1: q_len x
# heads per kv head above 32, or spec_multi_pos_tiles candidates). Such a group is compute bound (its matmuls and exp
# grow with PNHt while its reads do not), and with one chunk a core compute waits for the whole chunk's K before its
# first matmul and the reader then sits idle; with two, compute starts on the first while the second arrives.
# MODELLED (timing-only, HiFi4, exact exp; kernels before the radix merge tree, K/V in parts, Q multicast and NoC 1
# readers), spec_multi_pos_tiles 4, b8 8q/1kv d128 paged bfloat8_b 4K, 8 cores a group: k_chunk_size 512 (one chunk
# a core) 171.8 us, 256 (two) 156.7 us, 128 (four) 161.8 us, 64 174.0 us.
COMPUTE_BOUND_CHUNKS_PER_CORE = 2

# DRAM-bound plans (a group's query rows in one tile, at least DRAM_BOUND_CORES cores reading): every core's last
# chunk arrives when the chip's DRAM bandwidth has delivered the whole cache, so what follows the last read -- that
# chunk's QK, softmax and PV, then the merge -- is the part a smaller chunk shortens. The derived chunk then gives a
# core at least two chunks, and a chunk at most DRAM_BOUND_CHUNK_TILES K and V tiles of math
# (k_chunk_size / 32 x (DHt + vDHt)), raised to DRAM_BOUND_LONG_RUN_CHUNK_TILES once a core reads more than
# DRAM_BOUND_SHORT_RUN_POSITIONS positions: with that many chunks a core, the per-chunk costs (a chunk's fixed
# reader, compute and CB handshakes) outweigh the longer math after the last read, and with K/V read in parts the
# cores' DRAM finishing times no longer spread apart with big chunks (the older kernels' reader end times spread
# 20 us, max - mean, at k256 vs 4 us at k128 at 32K, which halved the chunk to 32 tiles past 512 positions).
# MODELLED (timing-only, HiFi4, exact exp, paged block 64, bfloat8_b, every user at kv_len - 1, us; the rule's
# choice marked *; older kernels: before the radix merge tree, K/V in parts, Q multicast and NoC 1 readers):
#     shape (cores reading, positions a core)       k512    k256    k128    k64     k32
#     b8 8q/1kv d128 4K, N8 (64, 512)               52.3    46.7*   49.8    48.6    49.5
#     b1 32q/8kv d128 4K, N8 (64, 512)              52.7    47.0*   49.2
#     b8 16q/1kv MLA d576/512 4K, N8 (64, 512)              118.2   110.6   111.0   104.6*
#     b1 4q/1kv d128 32K, N16 (16: not DRAM-bound)  73.7*   74.6    82.2
# Under the no-flow-control variant the first row is 48.8 (k512) vs 48.4 (k256), the MLA row 115.5 vs 104.5.
# Past 512 positions a core, at the kernels with K/V in parts and Q multicast but before the NoC 1 readers (same
# calls; `perf/sweep.py`'s rows, the fair exp), us, nominal and the slowest of the timing model's ~30 variants (the
# rule's choice *):
#     shape (cores reading, positions a core)       k512            k256            k128
#     b8 8q/1kv d128 4K, N4 8x4 (32, 1024)          42.9*           -               43.9
#     b1 4q/1kv d128 32K, N32 (32, 1024)            45.5* / 48.3    45.8 / 48.9     46.0 / 48.6
#     b8 8q/1kv d128 16K, N8 (64, 2048)             151.9* / 153.2  153.1 / 155.6   153.1 / 155.1
#     b1 32q/8kv d128 32K, N8 (64, 4096)            296.7* / 299.5  299.4 / 301.9   299.2 / 301.2
# (k512 is no slower than k128 under any variant in the last three rows.)
DRAM_BOUND_CORES = 32
DRAM_BOUND_CHUNK_TILES = 64
DRAM_BOUND_LONG_RUN_CHUNK_TILES = 128
DRAM_BOUND_SHORT_RUN_POSITIONS = 512

# The reduction tree's radix F (default_merge_radix): the F whose critical path (merge_finish_ns) is shortest. A round
# costs its receiver the NoC write of its slowest child's partial and a semaphore (MERGE_SEND_NS, after that child's
# own merges), a merge whose fixed part (inits, format reconfigurations, the one exp of the row factors, moving the
# result to the sender's buffer) is paid once a round (MERGE_ROUND_NS), and a part per child: its row statistics
# (placing its max, taking its factor back out: MERGE_PARTIAL_STATS_NS) and the multiply-accumulates of O's row and l
# (MERGE_PARTIAL_TILE_NS a tile). So a few children a round beat both the binary tree (more rounds) and a gather
# (every partial merged on one core, in series). The constants are the least-squares fit (RMS 0.17 us) of that
# critical path, every core's own chunks done at once, to these MODELLED durations (timing-only, the fair sweep's
# calls: HiFi4, bfloat8_b, paged block 64, every user at kv_len - 1, `perf/sweep.py`'s rows with the radix forced
# through MERGE_RADIX; us, the rule's choice *; kernels before K/V in parts, Q multicast and NoC 1 readers):
#     shape (cores a group)                   F=2     F=3     F=4     F=5     F=6     F=8     F=16 or N (gather)
#     b1 4q/1kv d128 32K, k128 (32)           54.64   52.21   51.53   50.79   50.09*  50.18   51.92 (F=16)
#     b1 4q/1kv d128 4K, k256 (16)            18.55   16.81   15.37*  15.44   15.35   15.66   16.12
#     Galaxy b8 8q/1kv d128 4K, k256 (9)      46.83   44.54   44.61   44.38   44.45   44.87   43.77*
#     b8 8q/1kv d128 4K, k256 (8)             46.45   44.54   44.76   44.54   44.32   43.62*
#     b8 8q/1kv d128 1K, k128 (4)             17.64   16.14   15.95*
#     MLA b8 16q/1kv d576/512 4K, k32 (8)             101.63  102.02  101.31*         100.87
# (The MLA row was not fitted.) The split of the per-child part (80 ns + 40 ns a tile: 280 ns at d128) is assumed; it
# only matters for wide heads (MLA's 16 O tiles a row).
# A group of several query-row tiles (PNHt > 1: q_len x heads a kv head above 32) does not scale every term alike: a
# child's part is all per row tile (its statistics and multiply-accumulates run row tile by row tile), and so are the
# bytes of a partial the NoC carries and a round's row max and exp, but not the semaphore and write latency of a send
# or a round's inits and format reconfigurations. So the send and the round each split into a fixed part and a part a
# row tile (MERGE_SEND_ROW_NS: a row tile's partial, O's 4 tiles with m and l, 12 KiB at ~28 B a cycle; MERGE_ROUND_
# ROW_NS: assumed), which sum to the one-tile constants, so a one-tile group's choice is unchanged; a bigger group
# pays more per child against the fixed parts and prefers fewer children a round. MODELLED (timing-only, HiFi4, exact
# exp, the sweep's spec4-b8-4k call: spec_multi_pos_tiles 4, b8 8q/1kv d128 4K, k256, 8 cores a group, 4 row tiles;
# kernels before K/V in parts, Q multicast and NoC 1 readers), us by radix, this rule's choice *:
#     F=2     F=3     F=4     F=5     F=6     F=7     F=8 (gather)
#     146.62  140.00  140.58  139.18* 141.28  145.50  141.26
# (the model: 5 fastest, then the gather, then 3 and 4; with every term scaled alike it chose the gather.)
# With float32 intermediates a merge takes a max
# and an exp per child (MERGE_PARTIAL_STATS_EXP_NS, from the earlier kernel's fit: 500 ns a child at d128), and the
# side-by-side statistics need a child's column in one face, so F is at most 16 (plan.cbs.merge_select_tiles).
# TGV's one-round parallel reducers (R cores, each owning a slice of O's tiles and receiving every partial's slice)
# were not built: a group's rows are one tile, so each reducer would still take every child's statistics, and the
# multiply-accumulates a column split divides are 40 ns a tile; the wide rounds measured above lose more than the fit
# says (F=16: 16.12 us at 16 cores against 15.37 for two rounds of 3, 51.92 at 32 against 50.09 for two of 5).
# MERGE_RADIX (None: the model's choice) forces a radix (tests).
MERGE_SEND_NS = 1200
MERGE_SEND_ROW_NS = 440
MERGE_ROUND_NS = 700
MERGE_ROUND_ROW_NS = 300
MERGE_PARTIAL_STATS_NS = 80
MERGE_PARTIAL_STATS_EXP_NS = 300
MERGE_PARTIAL_TILE_NS = 40
MERGE_SIDE_BY_SIDE_MAX_RADIX = 16
MERGE_RADIX: int | None = None


# Readers over NoC 1 (reads_over_noc1): in a DRAM-bound plan every reading core streams from all DRAM banks (pages are
# interleaved), and on NoC 0, whose packets leave a DRAM router along +x first, the links leaving the DRAM routers
# saturate before the banks do: Llama-3.1-8B's N150 call (b1 32q/8kv d128 32K, 8 groups of 8 cores) keeps the eight
# +x links out of the DRAM columns 97-98% busy and its banks 90%. NoC 1 routes -y first, so its reads from a DRAM
# column share that column's links: every reader on NoC 1 is worse (the same call: 437 us with half the groups on
# NoC 1, four of the column's links 98% busy). A few readers on NoC 1 relieve NoC 0's DRAM links without filling NoC
# 1's: every NOC1_READER_STRIDE[chip]-th reading core, in core order, reads over NoC 1 (its reader and writer kernels
# swap NoCs; never a group's root, which multicasts Q over a NoC 0 rectangle). MODELLED at the kernels that brought
# the NoC 1 readers (timing-only, the fair sweep's calls: HiFi4, exact exp, paged block 64, bfloat8_b, every user at
# kv_len - 1), us, nominal /
# tile_op_overhead_high (the slowest variant of the first row), by stride (- : every reader on NoC 0):
#     shape (chip, plan)                        -                8                4                2
#     b1 32q/8kv d128 32K (N150, k512 N8)       296.7 / 299.5    279.3 / 282.6    (281.5 / 284.8: a group in 4)
#     b1 4q/1kv d128 32K (N150, k512 N32)       45.5 / 48.3      43.6 / 46.9
#     b8 8q/1kv d128 1K (N150, k128 N4)         14.5 / 16.0      14.1 / 15.6
#     b8 8q/1kv d128 4K (Galaxy 8x9, k256 N9)   42.8 / 44.1      40.3 / 41.7
#     b1 32q/8kv d128 32K (P150, k512 N13)      197.4 / 198.7    176.3 / 177.6    153.9 / 155.2    149.1 / 150.4
#     b1 32q/8kv d128 4K (P150, k256 N13)       33.3 / 35.5      31.0 / 33.2      28.7 / 30.8      27.4 / 29.6
# (Blackhole's NoC 1 takes more of the reads than Wormhole's: each Blackhole DRAM bank has a tile of its own for NoC 1,
# the soc descriptor's worker_endpoint per NoC. Of the strides tried there (-, 8, 4, 3, 2, 1), 2 and 3 are the fastest,
# within 0.1 us of each other; 2 beats 4 under every one of Blackhole's 36 variants, by 3.1-3.2% at 32K and 4.1-4.9% at
# 4K; every reader on NoC 1 takes 270.9 us at 32K. On the N150 a stride of 4, as whole groups, is slower than 8.)
# Swapping whole groups instead (every eighth group's cores, roots included, their Q read by every core) measured
# the same within 1 us on the N150 rows (278.3 us at 32K) and cannot split a plan of one group.
NOC1_READER_STRIDE = {"wormhole_b0": 8, "blackhole": 2}


def reads_over_noc1(reading_core: int, stride: int) -> bool:
    """Whether the ``reading_core``-th core (0-based, in core order) of a DRAM-bound plan may read over NoC 1: every
    ``stride``-th (:data:`NOC1_READER_STRIDE`), the last of each run of ``stride``; none when ``stride`` is 0."""
    return stride > 0 and reading_core % stride == stride - 1


# ---- the chunk rule ----------------------------------------------------------------------------


def window_start(cur_pos: int, q_len: int = 1, sliding_window_size: int = 0) -> int:
    """First KV position a group at ``cur_pos`` may read (0 without a window).

    ``cur_pos`` is the position of the group's newest token; with ``q_len`` tokens the oldest sits at
    ``cur_pos - q_len + 1`` and its window of W positions starts at ``cur_pos - q_len + 1 - W + 1``.
    """
    if sliding_window_size <= 0:
        return 0
    return max(0, cur_pos - q_len + 1 - sliding_window_size + 1)


def chunk_range(
    cur_pos: int,
    k_chunk_size: int,
    core_index: int,
    num_cores_per_head: int,
    q_len: int = 1,
    sliding_window_size: int = 0,
) -> tuple[int, int]:
    """The KV chunks core ``core_index`` of a group reads: ``(start_chunk, count)``.

    THE chunk rule (docs/DESIGN.md; the kernels' shared header implements the same):

    * A user's valid positions are ``[window_start, cur_pos]`` with
      ``window_start = max(0, cur_pos - q_len + 1 - W + 1)`` for sliding window W (the oldest of the
      group's q_len query tokens reaches back furthest), or 0 when W == 0.
    * With ``Sk = k_chunk_size`` the user's chunks are ``first = window_start // Sk`` to
      ``last = cur_pos // Sk``: ``n = last - first + 1`` chunks. Chunk c holds positions
      ``[c*Sk, (c+1)*Sk)``; positions outside ``[window_start, cur_pos]`` in the first and last
      chunk are masked by the kernels, never skipped.
    * Core i of the group's N cores gets a contiguous range: ``base = n // N``, ``rem = n % N``,
      ``start = first + i*base + min(i, rem)``, ``count = base + (i < rem)``.
      So the cores with work are a prefix of the group, and core 0 (the root reducer) has work
      whenever ``cur_pos >= 0``.
    * ``cur_pos == -1`` (no valid token): every core gets ``(0, 0)``; the root writes zeros.
    """
    if not is_int(cur_pos) or cur_pos < -1:
        raise ValueError(f"cur_pos={cur_pos!r}: expected an integer >= -1")
    if not is_int(k_chunk_size) or k_chunk_size <= 0:
        raise ValueError(f"k_chunk_size={k_chunk_size!r}: expected a positive integer")
    if not is_int(num_cores_per_head) or num_cores_per_head <= 0:
        raise ValueError(f"num_cores_per_head={num_cores_per_head!r}: expected a positive integer")
    if not is_int(core_index) or not 0 <= core_index < num_cores_per_head:
        raise ValueError(f"core_index={core_index!r}: expected 0..{num_cores_per_head - 1}")
    if cur_pos < 0:
        return 0, 0
    first = window_start(cur_pos, q_len, sliding_window_size) // k_chunk_size
    n = cur_pos // k_chunk_size - first + 1
    base, rem = divmod(n, num_cores_per_head)
    start = first + core_index * base + min(core_index, rem)
    count = base + (1 if core_index < rem else 0)
    return start, count


def active_cores(
    cur_pos: int, k_chunk_size: int, num_cores_per_head: int, q_len: int = 1, sliding_window_size: int = 0
) -> int:
    """How many cores of a group have chunks to read (they are cores 0..active-1)."""
    if cur_pos < 0:
        return 0
    first = window_start(cur_pos, q_len, sliding_window_size) // k_chunk_size
    n = cur_pos // k_chunk_size - first + 1
    return min(num_cores_per_head, n)


# ---- the reduction tree ------------------------------------------------------------------------
# A radix-F tree (F = merge_radix >= 2, the planner's choice): in round r, core i whose base-F digits below r are zero
# and whose digit r is d > 0 sends its merged partial to core i - d F^r, its parent, into slot r (F - 1) + d - 1 of the
# parent's partial-in buffer; the parent waits for all of the round's active children and merges them in one pass.
# F = 2 is the binary tree; F >= N is a one-round gather at the root.


def tree_rounds(num_cores: int, radix: int = 2) -> int:
    """ceil(log_F N): rounds of the radix-F reduction tree over a group of N cores (0 for a 1-core group)."""
    if radix < 2:  # a radix of 1 never reaches a second core: the loop below would not end
        raise ValueError(f"radix={radix}: a reduction tree's radix must be at least 2")
    rounds, reach = 0, 1
    while reach < num_cores:
        rounds, reach = rounds + 1, reach * radix
    return rounds


def _lowest_digit(core_index: int, radix: int) -> tuple[int, int, int]:
    """(r, d, F^r): the position r of core i's lowest non-zero base-F digit, that digit d and F^r."""
    r, stride = 0, 1
    while core_index // stride % radix == 0:
        r, stride = r + 1, stride * radix
    return r, core_index // stride % radix, stride


def send_round(core_index: int, radix: int = 2) -> int | None:
    """The round in which core i sends its partial (to :func:`tree_parent`); None for the root.

    r is the position of i's lowest non-zero base-F digit, so every non-root core sends exactly once, after merging
    everything it received in earlier rounds.
    """
    if core_index == 0:
        return None
    return _lowest_digit(core_index, radix)[0]


def send_slot(core_index: int, radix: int = 2) -> int:
    """The slot of its parent's partial-in buffer core i (> 0) writes: ``r (F - 1) + d - 1`` for its lowest non-zero
    digit d at position r. A receiver's rounds are a prefix and every round but its last has F - 1 children, so the
    slots it is sent fill 0, 1, 2, ... in the order it merges them."""
    r, d, _ = _lowest_digit(core_index, radix)
    return r * (radix - 1) + d - 1


def tree_parent(core_index: int, radix: int = 2) -> int:
    """The core i (> 0) sends to: i with its lowest non-zero base-F digit cleared."""
    _, d, stride = _lowest_digit(core_index, radix)
    return core_index - d * stride


def children_in_round(core_index: int, round: int, num_active: int, radix: int = 2) -> int:
    """How many partials core i merges in ``round`` when ``num_active`` cores work: its children ``i + d F^round``
    (d = 1..F-1) that are active, when i's base-F digits up to ``round`` are zero (0 otherwise, which includes every
    round from :func:`send_round` on)."""
    stride = radix**round
    if core_index % (stride * radix) or core_index >= num_active:
        return 0
    return min(radix - 1, (num_active - 1 - core_index) // stride)


def receives_in_round(core_index: int, round: int, num_active: int, radix: int = 2) -> bool:
    """Whether core i merges any partial in ``round`` (:func:`children_in_round` > 0)."""
    return children_in_round(core_index, round, num_active, radix) > 0


def receive_rounds(core_index: int, num_active: int, radix: int = 2) -> list[int]:
    """Rounds in which core i merges partials when ``num_active`` cores work: a prefix 0..k-1 of the rounds.
    Before merging round r's slots it waits for its round-r semaphore to count them (:func:`tree_semaphores`)."""
    return [r for r in range(tree_rounds(num_active, radix)) if receives_in_round(core_index, r, num_active, radix)]


def expected_partials(core_index: int, num_active: int, radix: int = 2) -> int:
    """Partials core i receives in total when ``num_active`` cores of its group work."""
    return sum(children_in_round(core_index, r, num_active, radix) for r in range(tree_rounds(num_active, radix)))


def merge_finish_ns(
    num_cores: int, radix: int, o_cols: int = 4, side_by_side: bool = True, row_tiles: int = 1
) -> float:
    """The modelled time from a group's last chunk to the root's merged partial under a radix-F tree, every core's own
    chunks done at once: a receiver's round starts when its slowest child's partial has landed (a send:
    :data:`MERGE_SEND_NS` at one query-row tile, after that child's own merges) and takes :data:`MERGE_ROUND_NS` at
    one row tile plus, per child and row tile, its row statistics (side by side, or one exp each: ``side_by_side``
    False) and the multiply-accumulates of ``o_cols`` + 1 tiles (O's row and l). With ``row_tiles`` (PNHt) > 1 a send
    and a round grow by :data:`MERGE_SEND_ROW_NS` and :data:`MERGE_ROUND_ROW_NS` a further row tile and a child's
    part by ``row_tiles`` times."""
    if not is_int(row_tiles) or row_tiles < 1:
        raise ValueError(f"row_tiles={row_tiles!r}: expected a positive integer (the group's query-row tiles, PNHt)")
    stats = MERGE_PARTIAL_STATS_NS if side_by_side else MERGE_PARTIAL_STATS_EXP_NS
    partial = (stats + MERGE_PARTIAL_TILE_NS * (o_cols + 1)) * row_tiles
    send = MERGE_SEND_NS + MERGE_SEND_ROW_NS * (row_tiles - 1)
    fixed = MERGE_ROUND_NS + MERGE_ROUND_ROW_NS * (row_tiles - 1)
    rounds = tree_rounds(num_cores, radix)
    done = [0.0] * num_cores
    # Children have larger indices than their parent, so a reverse pass finishes every child before its parent.
    for core in reversed(range(num_cores)):
        t = 0.0
        for r in range(rounds):
            children = children_in_round(core, r, num_cores, radix)
            if children == 0:
                break
            slowest = max(done[core + d * radix**r] for d in range(1, children + 1))
            t = max(t, slowest + send) + fixed + children * partial
        done[core] = t
    return done[0]


def default_merge_radix(
    num_cores_per_head: int, o_cols: int = 4, fp32_dest_acc: bool = False, row_tiles: int = 1
) -> int:
    """The reduction tree's radix F the planner starts from (it halves F while the partial slots do not fit L1): the
    F with the shortest :func:`merge_finish_ns` (the smallest on a tie: fewer factor tiles), at most
    :data:`MERGE_SIDE_BY_SIDE_MAX_RADIX` with 16-bit intermediates (their row statistics side by side), or
    :data:`MERGE_RADIX` when set. ``o_cols``: O's tiles a query row (vDHt); ``row_tiles``: the group's query-row
    tiles (PNHt)."""
    if MERGE_RADIX is not None:
        return MERGE_RADIX
    return _fastest_radix(num_cores_per_head, o_cols, not fp32_dest_acc, row_tiles)


@functools.lru_cache(maxsize=256)
def _fastest_radix(num_cores: int, o_cols: int, side_by_side: bool, row_tiles: int = 1) -> int:
    if num_cores <= 2:
        return 2
    widest = min(num_cores, MERGE_SIDE_BY_SIDE_MAX_RADIX) if side_by_side else num_cores
    return min(range(2, widest + 1), key=lambda f: (merge_finish_ns(num_cores, f, o_cols, side_by_side, row_tiles), f))


def partial_slots(num_cores: int, radix: int = 2) -> int:
    """Slots of cb_partial_in a core needs: the most partials any core of a group of N receives (the root's)."""
    return expected_partials(0, num_cores, radix)


# ---- k_chunk_size ------------------------------------------------------------------------------


def _next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _prev_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n.bit_length() - 1)


def default_k_chunk_size(
    shapes: DecodeShapes, num_cores_per_head: int, max_cur_pos: int | None = None, num_cores: int | None = None
) -> int:
    """k_chunk_size used when the program config says 0 (before :func:`plan` halves it to fit L1).

    With ``N = num_cores_per_head`` and ``L`` = positions a user may read: ``max_cur_pos + 1`` when the
    caller knows the batch's largest cur_pos (host positions), else ``kv_len`` (a device cur_pos tensor
    is only read by the kernels); at most ``sliding_window_size`` when a window is set::

        Sk = min(512, max(32, next_pow2(ceil(L / N))))
        Sk = min(Sk, largest power of two dividing kv_len)     # >= 32, since kv_len % 32 == 0

    i.e. the smallest power-of-two chunk, at least one tile, with which the group's N cores, one chunk
    each, cover L positions, but no more than 512 (bigger chunks only cost L1 once DRAM bursts are
    long), and a divisor of kv_len (chunks lie inside the cache: the kernels read whole chunks). A group whose
    query rows fill more than one tile (PNHt > 1) is compute bound and takes
    :data:`COMPUTE_BOUND_CHUNKS_PER_CORE` chunks a core instead of one (``L / (2 N)`` above), so its compute
    overlaps the reads of its next chunk. A DRAM-bound plan (:func:`is_dram_bound`: one tile of query rows, at least
    :data:`DRAM_BOUND_CORES` cores reading; ``num_cores`` is the grid's cores when the caller knows them) then takes
    the smaller of that and a chunk that gives each core two chunks and at most :data:`DRAM_BOUND_CHUNK_TILES` K and V
    tiles (:data:`DRAM_BOUND_LONG_RUN_CHUNK_TILES` past :data:`DRAM_BOUND_SHORT_RUN_POSITIONS` positions a core, where
    fewer per-chunk costs outweigh the longer math after the last read), at least 32, so less math follows the last
    read (the measurements are at the constants).

    As a step function of L (what a decode loop sees as positions grow; k_chunk_size is a compile-time
    kernel argument, so every change is another program): Sk is 32 for L <= 32 N, 64 for L <= 64 N,
    128 for L <= 128 N, 256 for L <= 256 N and 512 beyond. It never decreases as L grows, changes only
    when L crosses 32 N, 64 N, 128 N or 256 N (e.g. N = 16: at max_cur_pos 512, 1024, 2048 and 4096),
    so it takes at most 5 values; with L = kv_len it is the value a device cur_pos tensor gets. In the DRAM-bound
    branch (two chunks a core) it changes when L crosses 64 N, 128 N, 256 N and 512 N, and never decreases.
    """
    length = _readable_length(shapes, max_cur_pos)
    chunks_per_core = COMPUTE_BOUND_CHUNKS_PER_CORE if shapes.PNHt > 1 else 1
    sk = _next_pow2(math.ceil(length / (num_cores_per_head * chunks_per_core)))
    sk = max(MIN_K_CHUNK_SIZE, min(MAX_DEFAULT_K_CHUNK_SIZE, sk))
    if is_dram_bound(shapes, num_cores_per_head, num_cores):
        per_core = math.ceil(length / num_cores_per_head)
        sk = min(sk, _next_pow2(math.ceil(per_core / 2)))  # at least two chunks a core
        short_run = per_core <= DRAM_BOUND_SHORT_RUN_POSITIONS
        tiles = DRAM_BOUND_CHUNK_TILES if short_run else DRAM_BOUND_LONG_RUN_CHUNK_TILES
        sk = min(sk, _prev_pow2(tiles // (shapes.DHt + shapes.vDHt)) * TILE)
        sk = max(MIN_K_CHUNK_SIZE, sk)
    return min(sk, shapes.kv_len & -shapes.kv_len)  # kv_len & -kv_len: its largest power-of-two divisor


def is_dram_bound(shapes: DecodeShapes, num_cores_per_head: int, num_cores: int | None = None) -> bool:
    """Whether :func:`default_k_chunk_size` takes the DRAM-bound branch: a group's query rows fill one tile and at
    least :data:`DRAM_BOUND_CORES` cores read (``num_groups x num_cores_per_head``, at most ``num_cores``, the grid's
    cores, when given)."""
    working = shapes.num_groups * num_cores_per_head
    if num_cores is not None:
        working = min(working, num_cores)
    return shapes.PNHt == 1 and working >= DRAM_BOUND_CORES


def default_num_cores_per_head(shapes: DecodeShapes, max_cores: int, max_cur_pos: int | None = None) -> int:
    """Cores per group used when the program config says k_chunk_size 0, at most ``max_cores`` (the most the config
    and the grid allow: max_cores_per_head_batch is a maximum, as upstream names it).

    With ``L`` the positions a user may read (as :func:`default_k_chunk_size`: ``max_cur_pos + 1`` for host positions,
    else ``kv_len``; at most the sliding window), ``max_cores`` is halved while the group is bigger than
    :data:`DRAM_SATURATING_CORES` and half of it would still read at most :data:`MAX_POSITIONS_PER_CORE` positions a
    core, then while its cores would read fewer than :data:`MIN_POSITIONS_PER_CORE` positions each::

        N = max_cores
        while N > 32 and L <= N // 2 * 4096: N = halved(N)
        while N > 1 and L < N * 256: N = halved(N)

    where ``halved(N)`` is the power of two below ``N``.
    Each halving drops one round of the reduction tree and doubles the reads a core overlaps with its compute (the
    constants' measurements are at their definitions). N is ``max_cores`` or a power of two below it, so a decode loop
    with host positions sees at most log2(max_cores) + 2 group sizes, never decreasing as positions grow.
    """
    if not is_int(max_cores) or max_cores <= 0:
        raise ValueError(f"max_cores={max_cores!r}: expected a positive integer")
    length = _readable_length(shapes, max_cur_pos)
    n = max_cores
    while n > DRAM_SATURATING_CORES and length <= n // 2 * MAX_POSITIONS_PER_CORE:
        n = _halved(n)
    while n > 1 and length < n * MIN_POSITIONS_PER_CORE:
        n = _halved(n)
    return n


def _halved(n: int) -> int:
    """One halving step of the group size: the power of two below ``n`` (``n // 2`` for a power of two), so a group
    whose maximum is not a power of two (three groups on 64 cores may take 21) halves to 16, not 10."""
    return 1 << ((n - 1).bit_length() - 1)


def _readable_length(shapes: DecodeShapes, max_cur_pos: int | None) -> int:
    """L: positions a user may read, as the derived k_chunk_size and group size see them."""
    length = shapes.kv_len if max_cur_pos is None else max_cur_pos + 1
    if shapes.sliding_window_size:
        length = min(length, shapes.sliding_window_size)
    return length
