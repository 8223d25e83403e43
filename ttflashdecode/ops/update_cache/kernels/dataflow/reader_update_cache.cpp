// SPDX-License-Identifier: Apache-2.0
//
// Cache update, reader (RISCV_1 / NCRISC, NoC 0). For each (cache, user, kv head) unit of this core, in order (one
// cache, or two updated by one launch: K and V, upstream's paged_fused_update_cache; the second cache and input have
// the first ones' shape, dtype and placement, so they share the TensorAccessorArgs and differ only in their addresses):
//   1. finds where the row goes (update_cache_common.hpp: locate_row) from the user's position in the index tensor and,
//      for a paged cache, the user's page-table row, and hands that target to the writer (cb_target);
//   2. reads the cache's tile row holding that position (Wt tiles, the cache's format) for compute to unpack;
//   3. reads the unit's new row (head `head` of user `user` in the TILE input: two 16-datum face rows per tile) into
//      cb_new_row as one bfloat16 row of head_dim datums. The input is [1, b, n_kv_heads, d] (paged_update_cache's
//      form) or, heads-major, [1, n_kv_heads, b (padded), d] (upstream update_cache's form, users from row
//      input_row_offset); DRAM or L1 interleaved, or L1 height-sharded (nlp_create_qkv_heads_decode's one user per
//      core: shard s on the core whose NOC coordinates are common runtime args 2s, 2s + 1; the second input of a
//      fused update follows the first one's input_num_shards shards).
// The cache's size (users, positions, page-table columns, blocks) comes in the common runtime args, so one build of
// the kernel serves every cache size.
// The index tensor and page table are read at run time (one page each), so the same program serves every step.
// A ring cache (cache_position_modulo > 0, upstream's: a sliding-window layer's cache smaller than the sequence)
// wraps every non-negative position it reads, p % cache_position_modulo, before the page-table lookup, as upstream's
// reader and writer do; a modulo that is a multiple of block_size keeps the position's place in its block.
// A unit whose position is outside the cache still streams through compute (the CBs stay in step), but its tiles
// are not read (the writer writes nothing for it).
//
// Arguments (ttflashdecode/ops/update_cache/args.py): compile-time args in the order of READER_ARGS, then the
// TensorAccessorArgs at the "*_cta_offset" offsets; common runtime args: the shard table (work_args_at args), the
// fields of ReaderCommonArgs in order, then the work table (unit_range). No per-core runtime args.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"
#include "update_cache_common.hpp"
#include "flash_decode_common.hpp"  // TensorPages: interleaved or height-sharded pages

using namespace update_cache;

namespace {

constexpr uint32_t cb_cache = get_compile_time_arg_val(0);
constexpr uint32_t cb_new_row = get_compile_time_arg_val(1);
constexpr uint32_t cb_index = get_compile_time_arg_val(2);
constexpr uint32_t cb_page_table = get_compile_time_arg_val(3);
constexpr uint32_t cb_target = get_compile_time_arg_val(4);

constexpr uint32_t Wt = get_compile_time_arg_val(5);  // head_dim in tiles
constexpr uint32_t n_kv_heads = get_compile_time_arg_val(6);
constexpr uint32_t input_row_tiles = get_compile_time_arg_val(7);  // tile rows per dim-1 entry
constexpr bool input_heads_major = get_compile_time_arg_val(8) == 1;
constexpr uint32_t input_row_offset = get_compile_time_arg_val(9);
constexpr auto input_placement = static_cast<flash_decode::Placement>(get_compile_time_arg_val(10));
constexpr uint32_t input_shard_pages = get_compile_time_arg_val(11);
constexpr uint32_t input_num_shards = get_compile_time_arg_val(12);
constexpr uint32_t input_page_bytes = get_compile_time_arg_val(13);
constexpr uint32_t cache_position_modulo = get_compile_time_arg_val(14);  // 0: no ring
constexpr bool is_paged = get_compile_time_arg_val(15) == 1;
constexpr uint32_t block_size = get_compile_time_arg_val(16);

constexpr uint32_t cache_cta_offset = get_compile_time_arg_val(17);
constexpr auto cache_args = TensorAccessorArgs<cache_cta_offset>();
constexpr uint32_t input_cta_offset = get_compile_time_arg_val(18);
constexpr auto input_args = TensorAccessorArgs<input_cta_offset>();
constexpr uint32_t index_cta_offset = get_compile_time_arg_val(19);
constexpr auto index_args = TensorAccessorArgs<index_cta_offset>();
constexpr uint32_t page_table_cta_offset = get_compile_time_arg_val(20);
constexpr auto page_table_args = TensorAccessorArgs<page_table_cta_offset>();
constexpr uint32_t work_args_at = get_compile_time_arg_val(21);  // the shard table's length

constexpr uint32_t cache_tile_bytes = get_tile_size(cb_cache);
constexpr uint32_t FACE_ROW_BYTES = FACE_HW * 2;  // 16 bfloat16 datums

// The position a read entry addresses. Upstream wraps every entry but -1 as uint32; here a negative entry stays
// negative (>= kv_len as uint32: nothing written, as without a ring) instead of landing on an arbitrary ring row.
inline uint32_t ring_position(uint32_t raw) {
    if constexpr (cache_position_modulo > 0) {
        return static_cast<int32_t>(raw) >= 0 ? raw % cache_position_modulo : raw;
    }
    return raw;
}

}  // namespace

void kernel_main() {
    // ---- common runtime args (update_cache.ReaderCommonArgs) after the shard table, then the work table
    uint32_t arg = work_args_at;
    const uint32_t cache_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t input_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t cache2_addr = get_common_arg_val<uint32_t>(arg++);  // fused K/V update only
    const uint32_t input2_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t index_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t page_table_addr = get_common_arg_val<uint32_t>(arg++);  // paged only
    const uint32_t batch = get_common_arg_val<uint32_t>(arg++);               // users of the input
    const uint32_t kv_len = get_common_arg_val<uint32_t>(arg++);              // positions a user may write
    const uint32_t max_blocks_per_user = get_common_arg_val<uint32_t>(arg++);  // paged: page-table columns
    const uint32_t num_blocks = get_common_arg_val<uint32_t>(arg++);          // paged: blocks of the cache
    const uint32_t index_page_bytes = get_common_arg_val<uint32_t>(arg++);
    const uint32_t page_table_page_bytes = get_common_arg_val<uint32_t>(arg++);  // paged only
    const UnitRange units = unit_range(arg);
    const uint32_t first_unit = units.first;
    const uint32_t num_units = units.count;

    Noc noc;
    CircularBuffer cache_buf(cb_cache);
    CircularBuffer new_row_buf(cb_new_row);
    CircularBuffer index_buf(cb_index);
    CircularBuffer page_table_buf(cb_page_table);
    CircularBuffer target_buf(cb_target);
    const decltype(TensorAccessor(cache_args, 0u)) caches[2] = {TensorAccessor(cache_args, cache_addr),
                                                                 TensorAccessor(cache_args, cache2_addr)};
    using InputPages = flash_decode::TensorPages<input_placement, input_shard_pages, decltype(TensorAccessor(input_args, 0u))>;
    const InputPages inputs[2] = {
        InputPages{TensorAccessor(input_args, input_addr), input_addr, input_page_bytes, 0},
        InputPages{TensorAccessor(input_args, input2_addr), input2_addr, input_page_bytes, 2 * input_num_shards}};
    const auto index = TensorAccessor(index_args, index_addr);
    const auto page_table = TensorAccessor(page_table_args, page_table_addr);

    // Every user's position: one row-major int32 page, read once. The CB is this RISC's scratch (never pushed).
    index_buf.reserve_back(1);
    noc.async_read(index, index_buf, index_page_bytes, {.page_id = 0}, {});
    noc.async_read_barrier();
    const CoreLocalMem<volatile uint32_t> positions(index_buf.get_write_ptr());
    if constexpr (is_paged) {
        page_table_buf.reserve_back(1);  // scratch too: the current user's page-table row
    }
    const CoreLocalMem<volatile uint32_t> table_row(page_table_buf.get_write_ptr());

    uint32_t table_user = 0xFFFFFFFF;
    for (uint32_t unit = first_unit; unit < first_unit + num_units; ++unit) {
        const uint32_t which = unit / (batch * n_kv_heads);  // 0: the first cache, 1: the second
        const uint32_t user = unit % (batch * n_kv_heads) / n_kv_heads;
        const uint32_t head = unit % n_kv_heads;
        const auto& cache = caches[which];
        const auto& input = inputs[which];
        const uint32_t position = ring_position(positions[user]);
        if constexpr (is_paged) {
            // Only a position inside the cache needs the table; its row is read once per user.
            if (position < kv_len && user != table_user) {
                noc.async_read(page_table, page_table_buf, page_table_page_bytes, {.page_id = user}, {});
                noc.async_read_barrier();
                table_user = user;
            }
        }
        const RowTarget target = locate_row(position, user, head, kv_len, n_kv_heads, Wt, is_paged, block_size,
                                            max_blocks_per_user, num_blocks, table_row.get_unsafe_ptr());

        target_buf.reserve_back(1);
        const CoreLocalMem<volatile uint32_t> record(target_buf.get_write_ptr());
        record[0] = target.write;
        record[1] = target.first_tile;
        record[2] = target.row;
        record[3] = which;
        target_buf.push_back(1);

        cache_buf.reserve_back(Wt);
        if (target.write) {
            for (uint32_t t = 0; t < Wt; ++t) {
                noc.async_read(cache, cache_buf, cache_tile_bytes, {.page_id = target.first_tile + t},
                               {.offset_bytes = t * cache_tile_bytes});
            }
        }
        // The new row: columns 0-15 and 16-31 of each tile are face rows of the left and right faces.
        new_row_buf.reserve_back(1);
        const uint32_t outer = input_heads_major ? head : user;  // the input's dim 1
        const uint32_t inner = input_heads_major ? input_row_offset + user : head;  // its dim 2
        const uint32_t input_tile_row = outer * input_row_tiles + inner / TILE_HW;
        const uint32_t input_row = inner % TILE_HW;
        for (uint32_t t = 0; t < Wt; ++t) {
            for (uint32_t half = 0; half < 2; ++half) {
                input.read(noc, new_row_buf, (t * 2 + half) * FACE_ROW_BYTES, FACE_ROW_BYTES,
                           {input_tile_row * Wt + t, bf16_tile_offset(input_row, half * FACE_HW)});
            }
        }
        noc.async_read_barrier();
        cache_buf.push_back(Wt);
        new_row_buf.push_back(1);
    }
}
