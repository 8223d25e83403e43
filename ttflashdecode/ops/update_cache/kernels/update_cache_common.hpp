// SPDX-License-Identifier: Apache-2.0
//
// Rules shared by the cache update kernels (reader, compute, writer) and mirrored by ttflashdecode/ops/update_cache.
//
// A cache update writes one row (one position) of each (user, kv head) of a KV cache: the user's new K or V for that
// head. Positions and page tables are device tensors read at run time, so one program serves every decode step.
// The row lives inside a tile of 32 positions x 32 head-dim columns; a block-float tile (bfloat8_b / bfloat4_b) keeps
// one shared exponent per 16-datum face row, i.e. per (position, half of a tile's columns), so a new row changes no
// other row's exponent. The program still re-packs the whole tile row, as upstream's paged_update_cache does: the
// cache's tile row is unpacked (pack_untilize) to bfloat16 rows, the new row replaces one of them, and the rows are
// packed (tilize) back into the cache's format. Rows that were not replaced hold values their format represents
// exactly, so re-packing leaves them as they were.
//
// The first part is plain C++ (no kernel API): it compiles for every RISC and for the host. The second, the work
// table's lookup, is built for the kernels only.
#pragma once

#include <cstdint>

namespace update_cache {

constexpr uint32_t TILE_HW = 32;
constexpr uint32_t FACE_HW = 16;

// Where a (user, kv head) row goes: the first of the head's Wt tiles holding the position, and the row inside them.
// `write` is 0 when the position (or the page-table entry it needs) is outside the cache: nothing is written.
struct RowTarget {
    uint32_t write;
    uint32_t first_tile;
    uint32_t row;
    uint32_t which;  // the reader sets it: 0 the first cache, 1 the second (a fused K/V update); 16 B in all
};

// THE run-time position contract of the update. A position p read from the device is written only when
// 0 <= p < kv_len (as uint32, every negative value, -1 for "skip this user" among them, is >= kv_len). Paged: the
// block p / block_size must be a column of the page table, and the physical block it names must exist. Anything
// else writes nothing for that (user, head): never outside the cache.
inline RowTarget locate_row(
    uint32_t position,
    uint32_t user,
    uint32_t head,
    uint32_t kv_len,
    uint32_t n_kv_heads,
    uint32_t Wt,
    bool is_paged,
    uint32_t block_size,           // paged: positions per block; else the cache's positions per user (tile-padded)
    uint32_t max_blocks_per_user,  // paged: page-table columns
    uint32_t num_blocks,           // paged: blocks of the cache tensor
    const volatile uint32_t* page_table_row) {
    RowTarget target{0, 0, 0, 0};
    if (position >= kv_len) {
        return target;
    }
    uint32_t block = user;  // unpaged: a user's whole cache is its "block"
    uint32_t in_block = position;
    if (is_paged) {
        const uint32_t virtual_block = position / block_size;
        if (virtual_block >= max_blocks_per_user) {
            return target;
        }
        block = page_table_row[virtual_block];
        if (block >= num_blocks) {
            return target;
        }
        in_block = position % block_size;
    }
    const uint32_t tiles_per_block = block_size / TILE_HW;
    const uint32_t tile_row = (block * n_kv_heads + head) * tiles_per_block + in_block / TILE_HW;
    target.write = 1;
    target.first_tile = tile_row * Wt;
    target.row = in_block % TILE_HW;
    return target;
}

// Where one tile row of a fill goes (a prefill's 32-position slice of one head): the first of its Wt tiles in the
// cache. `write` is 0 when the target is outside the cache: the user is not one of the cache's (unpaged) or the page
// table's rows (paged), the slice lies past the user's positions, or the table names a block past the cache's.
struct FillTarget {
    uint32_t write;
    uint32_t first_tile;
};

inline FillTarget locate_fill_row(
    uint32_t user,
    uint32_t head,
    uint32_t seq_tile,     // the slice's tile row among the user's positions (position seq_tile * 32)
    uint32_t users,        // unpaged: users of the cache; paged: rows of the page table
    uint32_t n_kv_heads,
    uint32_t Wt,
    bool is_paged,
    uint32_t block_size,           // paged: positions per block; unpaged: the cache's tile-padded positions per user
    uint32_t max_blocks_per_user,  // paged: page-table columns
    uint32_t num_blocks,           // paged: blocks of the cache tensor
    const volatile uint32_t* page_table_row) {
    FillTarget target{0, 0};
    const uint32_t tiles_per_block = block_size / TILE_HW;
    if (user >= users) {
        return target;
    }
    uint32_t block = user;
    uint32_t tile_in_block = seq_tile;
    if (is_paged) {
        const uint32_t virtual_block = seq_tile / tiles_per_block;
        if (virtual_block >= max_blocks_per_user) {
            return target;
        }
        block = page_table_row[virtual_block];
        if (block >= num_blocks) {
            return target;
        }
        tile_in_block = seq_tile % tiles_per_block;
    } else if (seq_tile >= tiles_per_block) {
        return target;
    }
    target.write = 1;
    target.first_tile = ((block * n_kv_heads + head) * tiles_per_block + tile_in_block) * Wt;
    return target;
}

// Byte offset of datum (row, col) in a bfloat16 tile (four row-major 16 x 16 faces).
inline uint32_t bf16_tile_offset(uint32_t row, uint32_t col) {
    const uint32_t face = (row / FACE_HW) * 2 + col / FACE_HW;
    return (face * FACE_HW * FACE_HW + (row % FACE_HW) * FACE_HW + col % FACE_HW) * 2;
}

}  // namespace update_cache

// ---- every kernel build (data movement and compute; not the host) ---------------------------------------------------
#if defined(COMPILE_FOR_BRISC) || defined(COMPILE_FOR_NCRISC) || defined(COMPILE_FOR_TRISC)

#include "flash_decode_common.hpp"  // work_table_entry

namespace update_cache {

// A core's units: [first, first + count). The kernels take no per-core runtime args (but a writer fused with
// attention, for its signals): every core finds its entry of the work table (update_cache/args.py: unit_work_table;
// flash_decode_common.hpp: work_table_entry) at common runtime arg `at`: one word a core,
// first_unit | num_units << 16.
struct UnitRange {
    uint32_t first, count;
};

inline UnitRange unit_range(uint32_t at) {
    const uint32_t units = get_common_arg_val<uint32_t>(flash_decode::work_table_entry(at, 1));
    return {units & 0xFFFF, units >> 16};
}

}  // namespace update_cache

#endif
