// SPDX-License-Identifier: Apache-2.0
//
// Rules and helpers shared by the FlashDecode reader, compute and writer kernels.
//
// The first part is plain C++ with no kernel API calls, so it compiles for the data-movement RISCs, the TRISCs and the
// host: the chunk and tree rules (the host planner, ttflashdecode/plan/rules.py, implements the identical rules with
// the same names and argument orders; tests/test_chunk_rule_parity.py checks both agree), the position contract and
// tile layout arithmetic. The second part, built only for the data-movement RISCs, is where a Q or output row lives
// (TensorPages: TILE or ROW_MAJOR pages, DRAM or L1 interleaved through a TensorAccessor, or L1 height-sharded).
//
// Kernel arguments: every compile-time argument is positional (get_compile_time_arg_val(i), as upstream's kernels read
// theirs: on a card's program-cache hit ttnn.generic_op copies a named arg's name too, on every launch) and produced by
// ONE Python definition, ttflashdecode/ops/decode/args.py, whose ordered lists READER_ARGS / COMPUTE_ARGS /
// WRITER_ARGS name arg i of each kernel; it also fixes the order of the (common) runtime args and the work table's
// layout (core_work below). CB indices come from the planner's CB table (ttflashdecode/plan/cbs.py) as the args
// "cb_<name>".
#pragma once

#include <cstdint>

namespace flash_decode {

constexpr uint32_t TILE_HW = 32;               // a tile is 32 x 32 datums
constexpr uint32_t FACE_HW = 16;               // made of four 16 x 16 faces
constexpr uint32_t SKIPPED_USER = 0xFFFFFFFF;  // cur_pos == -1: the user takes no part in this step
constexpr uint32_t NO_USER = 0xFFFFFFFF;       // a padding slot of a slot-to-user map (slot_users)

// Additive mask value for positions a query may not see. Finite rather than -inf: a row whose every
// position in this core's chunks is masked then gets a finite running max, and its (meaningless) partial
// is weighted by exp(m_masked - m_real) == 0 when the group's partials are merged, instead of NaN.
constexpr float MASKED_SCORE = -1.0e30f;

// Floor of the running max at a group's root when a user mask can hide every position of a row. Merged like an
// attention sink with logit SCORE_FLOOR and weight 1, it leaves a row with any visible position unchanged (its
// weight exp(SCORE_FLOOR - m) is exactly 0, since a visible score is far above it) and turns a row that sees
// nothing (m ~ MASKED_SCORE) into O = 0, l = 1: an output row of zeros instead of the mean of hidden V rows.
constexpr float SCORE_FLOOR = -1.0e29f;

// THE run-time position contract (docs/DESIGN.md). A cur_pos read from the device is used only when it names a
// position of the cache at which all q_len query tokens fit: q_len - 1 <= cur_pos < kv_len. Every other value
// (-1 by design; anything below -1, past the cache or too small for q_len by mistake) skips the user: its output
// rows are zeros and nothing of its cache is read. As uint32, every negative value is >= kv_len.
inline uint32_t checked_cur_pos(uint32_t cur_pos, uint32_t kv_len, uint32_t q_len) {
    return (cur_pos < kv_len && cur_pos + 1 >= q_len) ? cur_pos : SKIPPED_USER;
}

// Positions a group must attend to: [window_start, cur_pos] where cur_pos is the position of the group's last
// query token. With q_len tokens the first query sits at cur_pos - q_len + 1, and a sliding window of W
// positions reaches back to (that position) - W + 1.
inline uint32_t window_start(uint32_t cur_pos, uint32_t q_len, uint32_t sliding_window) {
    if (sliding_window == 0) {
        return 0;
    }
    const int64_t first_query_pos = int64_t(cur_pos) - int64_t(q_len) + 1;
    const int64_t start = first_query_pos - int64_t(sliding_window) + 1;
    return start > 0 ? uint32_t(start) : 0;
}

struct ChunkRange {
    uint32_t start;  // first K chunk index this core processes
    uint32_t count;  // number of consecutive chunks (0: the core is idle for this user)
};

// THE chunk rule. Chunks of k_chunk_size positions that hold [window_start, cur_pos] are numbered
// first..last and dealt out to the num_cores_per_head cores of a group as contiguous, balanced ranges;
// the remainder goes to the lowest core indices, so the active cores are always a prefix of the group and
// core 0 (the group's root) is active whenever the user is not skipped.
inline ChunkRange chunk_range(
    uint32_t cur_pos,
    uint32_t k_chunk_size,
    uint32_t core_index,
    uint32_t num_cores_per_head,
    uint32_t q_len,
    uint32_t sliding_window) {
    if (cur_pos == SKIPPED_USER) {
        return {0, 0};
    }
    const uint32_t first = window_start(cur_pos, q_len, sliding_window) / k_chunk_size;
    const uint32_t last = cur_pos / k_chunk_size;
    const uint32_t num_chunks = last - first + 1;
    const uint32_t base = num_chunks / num_cores_per_head;
    const uint32_t rem = num_chunks % num_cores_per_head;
    const uint32_t start = first + core_index * base + (core_index < rem ? core_index : rem);
    const uint32_t count = base + (core_index < rem ? 1 : 0);
    return {start, count};
}

// Number of cores of a group that get at least one chunk (a prefix of the group).
inline uint32_t active_cores(
    uint32_t cur_pos, uint32_t k_chunk_size, uint32_t num_cores_per_head, uint32_t q_len, uint32_t sliding_window) {
    if (cur_pos == SKIPPED_USER) {
        return 0;
    }
    const uint32_t first = window_start(cur_pos, q_len, sliding_window) / k_chunk_size;
    const uint32_t num_chunks = cur_pos / k_chunk_size - first + 1;
    return num_chunks < num_cores_per_head ? num_chunks : num_cores_per_head;
}

// Whether some position of chunk `chunk` is hidden from some query row of the group, so the chunk needs an
// additive mask: it reaches past the first query's position, or starts before the last query's window.
inline bool chunk_needs_mask(
    uint32_t chunk, uint32_t k_chunk_size, uint32_t cur_pos, uint32_t q_len, uint32_t sliding_window) {
    const uint32_t chunk_first_pos = chunk * k_chunk_size;
    const uint32_t chunk_last_pos = chunk_first_pos + k_chunk_size - 1;
    const uint32_t first_query_pos = cur_pos - (q_len - 1);
    if (chunk_last_pos > first_query_pos) {
        return true;
    }
    if (sliding_window != 0) {
        const int64_t last_query_window_start = int64_t(cur_pos) - int64_t(sliding_window) + 1;
        return int64_t(chunk_first_pos) < last_query_window_start;
    }
    return false;
}

// Whether chunk `chunk` gets an additive mask. Causal: chunk_needs_mask. Non-causal, every query sees every position
// up to cur_pos (the cache's last position, which need not end a tile or a chunk: a cache of 1000 positions is
// stored tile-padded to 1024), so only a chunk reaching past cur_pos is masked.
inline bool chunk_is_masked(
    bool is_causal, uint32_t chunk, uint32_t k_chunk_size, uint32_t cur_pos, uint32_t q_len, uint32_t sliding_window) {
    return is_causal ? chunk_needs_mask(chunk, k_chunk_size, cur_pos, q_len, sliding_window)
                     : chunk_needs_mask(chunk, k_chunk_size, cur_pos, 1, 0);
}

// Position of query row `row` of a group's Q tiles. Rows are token-major: row = token * heads_per_group + head,
// and token t of q_len sits at cur_pos - q_len + 1 + t.
inline uint32_t query_position(uint32_t row, uint32_t cur_pos, uint32_t q_len, uint32_t heads_per_group) {
    const uint32_t token = row / heads_per_group;
    return cur_pos - (q_len - 1) + token;
}

// What the chunk and mask rules need of a group: `last`, the newest query position (SKIPPED_USER: the group has no
// live query), and `span`, the positions from the oldest query to it (last - span + 1 is the oldest). A group of one
// user is its cur_pos and q_len. A group of several users (consecutive users sharing a page-table row, whose cache
// is read once for all of them: upstream's spec_multi_pos_tiles candidates) spans from its oldest live user's first
// token to its newest user's cur_pos; a skipped user takes no part. The chunk rule then deals out the chunks up to
// the newest bound, and a chunk needs a mask when it reaches past the oldest query, exactly as for q_len = span.
struct GroupBounds {
    uint32_t last;
    uint32_t span;
};

// `cur_pos_of(u)`: the checked cur_pos of user u.
template <typename CurPosOf>
inline GroupBounds group_bounds(const CurPosOf& cur_pos_of, uint32_t first_user, uint32_t users, uint32_t q_len) {
    uint32_t newest = 0;
    uint32_t oldest = SKIPPED_USER;
    for (uint32_t u = first_user; u < first_user + users; ++u) {
        const uint32_t pos = cur_pos_of(u);
        if (pos == SKIPPED_USER) {
            continue;
        }
        newest = pos > newest ? pos : newest;
        const uint32_t first_query = pos - (q_len - 1);
        oldest = first_query < oldest ? first_query : oldest;
    }
    if (oldest == SKIPPED_USER) {
        return {SKIPPED_USER, q_len};
    }
    return {newest, newest - oldest + 1};
}

// ---- Reduction tree over the active cores of a group (see docs/DESIGN.md), radix F = merge_radix >= 2.
// In round r, core i whose base-F digits below r are zero and whose digit r is d > 0 sends its merged partial to core
// i - d F^r (into slot r (F - 1) + d - 1 of that core's partial-in buffer); core i whose digits up to r are zero
// receives from its active children i + d F^r, d = 1..F-1, all in one round. F = 2: the binary tree; F >= N: a gather.

// The position of core i's (> 0) lowest non-zero base-F digit: the round in which it sends.
inline uint32_t send_round(uint32_t core_index, uint32_t radix = 2) {
    uint32_t round = 0;
    while (core_index % radix == 0) {
        core_index /= radix;
        ++round;
    }
    return round;
}

// The slot of its parent's partial-in buffer core i (> 0) writes: r (F - 1) + d - 1, d its digit at r = send_round.
inline uint32_t send_slot(uint32_t core_index, uint32_t radix = 2) {
    uint32_t round = 0;
    while (core_index % radix == 0) {
        core_index /= radix;
        ++round;
    }
    return round * (radix - 1) + core_index % radix - 1;
}

// Partials core i merges in `round` when num_active cores work (0 from its send round on).
inline uint32_t children_in_round(uint32_t core_index, uint32_t round, uint32_t num_active, uint32_t radix = 2) {
    uint32_t stride = 1;
    for (uint32_t r = 0; r < round; ++r) {
        stride *= radix;
    }
    if (core_index % (stride * radix) != 0 || core_index >= num_active) {
        return 0;
    }
    const uint32_t children = (num_active - 1 - core_index) / stride;
    return children < radix - 1 ? children : radix - 1;
}

inline bool receives_in_round(uint32_t core_index, uint32_t round, uint32_t num_active, uint32_t radix = 2) {
    return children_in_round(core_index, round, num_active, radix) > 0;
}

// Rounds the tree needs for a group of n cores: ceil(log_F(n)).
inline uint32_t tree_rounds(uint32_t num_cores, uint32_t radix = 2) {
    uint32_t rounds = 0;
    for (uint32_t reach = 1; reach < num_cores; reach *= radix) {
        ++rounds;
    }
    return rounds;
}

// A chunk's V (each V column block of it) arrives in v_fetch_parts(Sk_t) parts of consecutive position tiles, each read
// behind its own transaction id and pushed as soon as it lands, so compute's P . V starts on the first positions while
// the rest are in flight (the part count divides Sk_t, at most MAX_V_PARTS). The reader and compute take it from here.
constexpr uint32_t MAX_V_PARTS = 4;
constexpr uint32_t v_fetch_parts(uint32_t Sk_t) {
    for (uint32_t parts = MAX_V_PARTS; parts > 1; --parts) {
        if (Sk_t % parts == 0) {
            return parts;
        }
    }
    return 1;
}

// Rows from `row` on that one NOC transfer can move per face column: consecutive query rows of one token land on
// consecutive rows of the tensor (Q or the output), and inside one 16-row face of both the group's tile (row
// `row % tile_rows`) and the tensor's tile (row `tensor_row`, tile layout) consecutive rows are consecutive 16-datum
// face rows in memory. So a run ends at the token's last head, at a face edge on either side, or at q_rows.
inline uint32_t face_row_run(uint32_t row, uint32_t q_rows, uint32_t heads_per_group, uint32_t tile_rows,
                             uint32_t tensor_row, bool tensor_tiled) {
    uint32_t n = heads_per_group - row % heads_per_group;
    const uint32_t left = q_rows - row;
    n = n < left ? n : left;
    const uint32_t src_face_left = FACE_HW - (row % tile_rows) % FACE_HW;
    n = n < src_face_left ? n : src_face_left;
    if (!tensor_tiled) {
        return 1;  // row-major pages: one row a page
    }
    const uint32_t dst_face_left = FACE_HW - (tensor_row % TILE_HW) % FACE_HW;
    return n < dst_face_left ? n : dst_face_left;
}

// Byte offset of datum (row, col) inside a 32 x 32 tile of `datum_bytes`-wide values stored as four
// row-major 16 x 16 faces (the tile layout of bfloat16 / float32 tiles in L1 and DRAM).
inline uint32_t tile_datum_offset(uint32_t row, uint32_t col, uint32_t datum_bytes) {
    const uint32_t face = (row / FACE_HW) * 2 + (col / FACE_HW);
    return (face * FACE_HW * FACE_HW + (row % FACE_HW) * FACE_HW + (col % FACE_HW)) * datum_bytes;
}

// Converts a float to bfloat16 bits by round-to-nearest-even (used to fill constant and mask tiles).
inline uint16_t float_to_bfloat16(float value) {
    union {
        float f;
        uint32_t u;
    } bits{value};
    const uint32_t rounding = 0x7FFFu + ((bits.u >> 16) & 1u);
    return uint16_t((bits.u + rounding) >> 16);
}

// float value of bfloat16 bits (exact: bfloat16 is the top half of a float32).
inline float bfloat16_to_float(uint16_t bits) {
    union {
        uint32_t u;
        float f;
    } value{uint32_t(bits) << 16};
    return value.f;
}

}  // namespace flash_decode

// ---- every kernel build (data movement and compute; not the host) ---------------------------------------------------
#if defined(COMPILE_FOR_BRISC) || defined(COMPILE_FOR_NCRISC) || defined(COMPILE_FOR_TRISC)

namespace flash_decode {

// A work table (ttflashdecode/ops/descriptors.py: work_table; the decode and the cache update kernels take no per-core
// runtime args): at common runtime arg `at`, the box of the kernel's cores (x0, y0, width), then the same number of
// words per core of the box, row by row. Each core finds its entry by its logical coordinates.
struct WorkTableBox {
    uint32_t index;  // this core's place in the box, row by row
    uint32_t width;
};

inline WorkTableBox work_table_box(uint32_t at) {
    const uint32_t x0 = get_common_arg_val<uint32_t>(at);
    const uint32_t y0 = get_common_arg_val<uint32_t>(at + 1);
    const uint32_t width = get_common_arg_val<uint32_t>(at + 2);
    return {(get_absolute_logical_y() - y0) * width + (get_absolute_logical_x() - x0), width};
}

// The common runtime arg of this core's first word in the work table at `at` (`words` a core).
inline uint32_t work_table_entry(uint32_t at, uint32_t words) { return at + 3 + words * work_table_box(at).index; }

// A core's work (kernel_args.CoreWork), its entry of the decode kernels' work table (kernel_args.core_work_table; the
// reader's box under Q multicast: every busy core's, factory.py): two words,
// first_group | num_groups << 16 and core_index | num_cores_per_head << 8 | parent_noc_x << 16 | parent_noc_y << 24.
struct CoreWork {
    uint32_t first_group, num_groups, core_index, num_cores_per_head, parent_noc_x, parent_noc_y;
};

inline CoreWork core_work(uint32_t at) {
    const uint32_t entry = work_table_entry(at, 2);
    const uint32_t groups = get_common_arg_val<uint32_t>(entry);
    const uint32_t tree = get_common_arg_val<uint32_t>(entry + 1);
    return {groups & 0xFFFF, groups >> 16, tree & 0xFF, (tree >> 8) & 0xFF, (tree >> 16) & 0xFF, tree >> 24};
}

}  // namespace flash_decode

#endif

// ---- data movement only -------------------------------------------------------------------------------------------
#if defined(COMPILE_FOR_BRISC) || defined(COMPILE_FOR_NCRISC)

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/endpoints.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"

namespace flash_decode {

// Where a tensor's pages live (ttflashdecode/ops/decode/args.py: PLACEMENTS mirrors these values).
enum class Placement : uint32_t {
    DRAM = 0,               // interleaved over the DRAM banks
    L1 = 1,                 // interleaved over the L1 banks
    L1_HEIGHT_SHARDED = 2,  // shard s (a run of whole pages) at the buffer address on one core per shard
};

// Page and byte offset of datum (row, col) of a tensor seen as [rows, width] datums. TILE pages are 32 x 32 tiles in
// row-major tile order (each of four 16 x 16 faces); ROW_MAJOR pages are single rows of `width` datums.
struct PageOffset {
    uint32_t page;
    uint32_t offset;
};

template <bool tiled>
inline PageOffset datum_page(uint32_t row, uint32_t col, uint32_t width, uint32_t datum_bytes) {
    if constexpr (tiled) {
        return {(row / TILE_HW) * (width / TILE_HW) + col / TILE_HW,
                tile_datum_offset(row % TILE_HW, col % TILE_HW, datum_bytes)};
    } else {
        return {row, col * datum_bytes};
    }
}

// The pages of Q or the output. Interleaved (DRAM or L1): `pages`, a TensorAccessor, finds page p in its bank.
// Height-sharded: shard s (shard_pages pages) sits at `base` on the core whose NOC coordinates are common runtime
// args first_core_arg + 2s and + 2s + 1 (the same list on every core); `pages` is then never used.
template <Placement placement, uint32_t shard_pages, typename Accessor>
struct TensorPages {
    Accessor pages;
    uint32_t base;        // buffer address: in every bank, or on every shard core
    uint32_t page_bytes;  // one page
    uint32_t first_core_arg = 0;

    // Reads `size` bytes at `at` into L1 at `dst` (tagged with transaction id `trid` when opts is TXN_ID).
    template <NocOptions opts = NocOptions::DEFAULT, typename Dst>
    void read(const Noc& noc, const Dst& dst, uint32_t dst_offset, uint32_t size, PageOffset at,
              uint32_t trid = 0) const {
        if constexpr (placement == Placement::L1_HEIGHT_SHARDED) {
            noc.async_read<opts>(UnicastEndpoint{}, dst, size, shard_endpoint<Unicast::src_args_type>(at),
                                 {.offset_bytes = dst_offset}, {.trid = trid});
        } else {
            noc.async_read<opts>(pages, dst, size, {.page_id = at.page, .offset_bytes = at.offset},
                                 {.offset_bytes = dst_offset}, {.trid = trid});
        }
    }

    // Writes `size` bytes from L1 at `src` to `at`.
    template <typename Src>
    void write(const Noc& noc, const Src& src, uint32_t src_offset, uint32_t size, PageOffset at) const {
        if constexpr (placement == Placement::L1_HEIGHT_SHARDED) {
            noc.async_write(src, UnicastEndpoint{}, size, {.offset_bytes = src_offset},
                            shard_endpoint<Unicast::dst_args_type>(at));
        } else {
            noc.async_write(src, pages, size, {.offset_bytes = src_offset},
                            {.page_id = at.page, .offset_bytes = at.offset});
        }
    }

private:
    using Unicast = noc_traits_t<UnicastEndpoint>;

    // The shard core and L1 address of `at` ({.noc_x, .noc_y, .addr} of a UnicastEndpoint).
    template <typename Args>
    Args shard_endpoint(PageOffset at) const {
        static_assert(placement != Placement::L1_HEIGHT_SHARDED || shard_pages > 0,
                      "a height-sharded tensor needs its pages per shard");
        const uint32_t shard = at.page / shard_pages;
        return {.noc_x = get_common_arg_val<uint32_t>(first_core_arg + 2 * shard),
                .noc_y = get_common_arg_val<uint32_t>(first_core_arg + 2 * shard + 1),
                .addr = base + (at.page % shard_pages) * page_bytes + at.offset};
    }
};

}  // namespace flash_decode

#endif  // COMPILE_FOR_BRISC || COMPILE_FOR_NCRISC
