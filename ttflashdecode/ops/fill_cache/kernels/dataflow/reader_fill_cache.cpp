// SPDX-License-Identifier: Apache-2.0
//
// Cache fill, reader (RISCV_1 / NCRISC, NoC 0). A fill copies a prefill's K or V, [input_batch, n_kv_heads, seq_len,
// head_dim] in TILE layout, into users' caches from position 0: tile row (b, h, t) of the input (Wt tiles, one
// 32-position slice of one head) becomes tile row t of head h of cache user user(b). The work units are the input's
// tile rows; for each unit of this core, in order, the reader
//   1. finds where the tile row goes (update_cache_common.hpp: locate_fill_row): unpaged, tile row
//      first_seq_tile + t of user(b)'s cache; paged, the tile row inside the block page_table[user(b)][t*32 / block]
//      holding position t*32; and hands that target to the writer (cb_target);
//   2. reads the unit's Wt input tiles into cb_in, one at a time, for compute to unpack (any format; the packer
//      writes the cache's format).
// user(b) is `batch_idx` (a runtime arg: upstream's scalar batch_idx) or, with batch_from_tensor, entry b of the
// batch index tensor, read at run time (upstream's batch_idx_tensor), as is the page table, so one program serves
// every user of a paged fill with a device batch index.
// A ring cache (ring_tiles > 0: upstream's cache_position_modulo / 32, a multiple of the block's tiles) keeps only
// the prefill's last ring_tiles tile rows ending at `end`: tile row t in [end - ring_tiles, end) goes to ring tile row
// t % ring_tiles (before the page-table lookup, as upstream's writer wraps seq_tile_id), every other one writes
// nothing. `end` is seq_tiles or, with valid_from_tensor, upstream's valid_seq_len read at run time: that many
// positions in tiles, rounded up to whole blocks, when that is above 0 and below seq_tiles (so the padding tail
// never wraps over the prompt's last real positions).
// A tile row whose target is outside the cache (a batch index past the page table's rows, a table entry past the
// cache's blocks, a position past the user's blocks) still streams through compute (the CBs stay in step); the
// writer writes nothing for it.
//
// Arguments (ttflashdecode/ops/fill_cache/args.py): compile-time args in the order of READER_ARGS, then the
// TensorAccessorArgs at the "*_cta_offset" offsets; runtime args in the order of fill_cache.args.ReaderRuntimeArgs.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"
#include "update_cache_common.hpp"

using namespace update_cache;

namespace {

constexpr uint32_t cb_in = get_compile_time_arg_val(0);
constexpr uint32_t cb_index = get_compile_time_arg_val(1);
constexpr uint32_t cb_page_table = get_compile_time_arg_val(2);
constexpr uint32_t cb_target = get_compile_time_arg_val(3);

constexpr uint32_t Wt = get_compile_time_arg_val(4);  // head_dim in tiles
constexpr uint32_t n_kv_heads = get_compile_time_arg_val(5);
constexpr uint32_t seq_tiles = get_compile_time_arg_val(6);  // input tile rows per head
constexpr uint32_t cache_users = get_compile_time_arg_val(7);  // unpaged: cache users; paged: table rows
constexpr uint32_t first_seq_tile = get_compile_time_arg_val(8);  // unpaged: update_idx / 32
constexpr bool is_paged = get_compile_time_arg_val(9) == 1;
constexpr uint32_t block_size = get_compile_time_arg_val(10);
constexpr uint32_t max_blocks_per_user = get_compile_time_arg_val(11);
constexpr uint32_t num_blocks = get_compile_time_arg_val(12);
constexpr bool batch_from_tensor = get_compile_time_arg_val(13) == 1;
constexpr uint32_t ring_tiles = get_compile_time_arg_val(14);  // 0: no ring
constexpr bool valid_from_tensor = get_compile_time_arg_val(15) == 1;
constexpr uint32_t index_page_bytes = get_compile_time_arg_val(16);
constexpr uint32_t page_table_page_bytes = get_compile_time_arg_val(17);
constexpr uint32_t valid_page_bytes = get_compile_time_arg_val(18);
constexpr uint32_t cb_valid_len = get_compile_time_arg_val(19);

constexpr uint32_t input_cta_offset = get_compile_time_arg_val(20);

constexpr auto input_args = TensorAccessorArgs<input_cta_offset>();
constexpr uint32_t index_cta_offset = get_compile_time_arg_val(21);
constexpr auto index_args = TensorAccessorArgs<index_cta_offset>();
constexpr uint32_t page_table_cta_offset = get_compile_time_arg_val(22);
constexpr auto page_table_args = TensorAccessorArgs<page_table_cta_offset>();
constexpr uint32_t valid_cta_offset = get_compile_time_arg_val(23);
constexpr auto valid_args = TensorAccessorArgs<valid_cta_offset>();

constexpr uint32_t input_tile_bytes = get_tile_size(cb_in);

}  // namespace

void kernel_main() {
    uint32_t arg = 0;
    const uint32_t input_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t index_addr = get_arg_val<uint32_t>(arg++);       // batch_from_tensor only
    const uint32_t page_table_addr = get_arg_val<uint32_t>(arg++);  // paged only
    const uint32_t valid_len_addr = get_arg_val<uint32_t>(arg++);   // valid_from_tensor only
    const uint32_t batch_idx = get_arg_val<uint32_t>(arg++);        // the user, without a batch index tensor
    const uint32_t first_unit = get_arg_val<uint32_t>(arg++);       // unit = (b * n_kv_heads + h) * seq_tiles + t
    const uint32_t num_units = get_arg_val<uint32_t>(arg++);

    Noc noc;
    CircularBuffer in_buf(cb_in);
    CircularBuffer index_buf(cb_index);
    CircularBuffer page_table_buf(cb_page_table);
    CircularBuffer target_buf(cb_target);
    const auto input = TensorAccessor(input_args, input_addr);
    const auto index = TensorAccessor(index_args, index_addr);
    const auto page_table = TensorAccessor(page_table_args, page_table_addr);

    // The batch index tensor (one row-major page) and the current user's page-table row: this RISC's scratch.
    index_buf.reserve_back(1);
    if constexpr (batch_from_tensor) {
        noc.async_read(index, index_buf, index_page_bytes, {.page_id = 0}, {});
        noc.async_read_barrier();
    }
    const CoreLocalMem<volatile uint32_t> batch_indices(index_buf.get_write_ptr());
    if constexpr (is_paged) {
        page_table_buf.reserve_back(1);
    }
    const CoreLocalMem<volatile uint32_t> table_row(page_table_buf.get_write_ptr());

    // A ring's surviving tile rows [first_kept, end).
    uint32_t end = seq_tiles;
    if constexpr (valid_from_tensor) {
        CircularBuffer valid_buf(cb_valid_len);
        valid_buf.reserve_back(1);  // scratch
        noc.async_read(TensorAccessor(valid_args, valid_len_addr), valid_buf, valid_page_bytes, {.page_id = 0}, {});
        noc.async_read_barrier();
        const uint32_t valid_len = CoreLocalMem<volatile uint32_t>(valid_buf.get_write_ptr())[0];
        constexpr uint32_t tiles_per_block = block_size / TILE_HW;
        const uint32_t valid_tiles = valid_len / TILE_HW + (valid_len % TILE_HW != 0);
        const uint32_t valid_blocks = valid_tiles / tiles_per_block + (valid_tiles % tiles_per_block != 0);
        if (valid_blocks > 0 && valid_blocks * tiles_per_block < seq_tiles) {
            end = valid_blocks * tiles_per_block;
        }
    }
    const uint32_t first_kept = ring_tiles > 0 && end > ring_tiles ? end - ring_tiles : 0;

    uint32_t table_user = 0xFFFFFFFF;
    for (uint32_t unit = first_unit; unit < first_unit + num_units; ++unit) {
        const uint32_t b = unit / (n_kv_heads * seq_tiles);
        const uint32_t head = unit / seq_tiles % n_kv_heads;
        const uint32_t seq_tile = unit % seq_tiles;
        const uint32_t user = batch_from_tensor ? batch_indices[b] : batch_idx;
        if constexpr (is_paged) {
            if (user < cache_users && user != table_user) {
                noc.async_read(page_table, page_table_buf, page_table_page_bytes, {.page_id = user}, {});
                noc.async_read_barrier();
                table_user = user;
            }
        }
        const bool kept = ring_tiles == 0 || (seq_tile >= first_kept && seq_tile < end);
        const uint32_t cache_tile = ring_tiles > 0 ? seq_tile % ring_tiles : first_seq_tile + seq_tile;
        const FillTarget target = kept ? locate_fill_row(user, head, cache_tile, cache_users, n_kv_heads, Wt, is_paged,
                                                         block_size, max_blocks_per_user, num_blocks,
                                                         table_row.get_unsafe_ptr())
                                       : FillTarget{0, 0};
        target_buf.reserve_back(1);
        const CoreLocalMem<volatile uint32_t> record(target_buf.get_write_ptr());
        record[0] = target.write;
        record[1] = target.first_tile;
        target_buf.push_back(1);

        const uint32_t first_input_tile = unit * Wt;  // the input's tile rows in unit order
        for (uint32_t t = 0; t < Wt; ++t) {
            in_buf.reserve_back(1);
            if (target.write) {
                noc.async_read(input, in_buf, input_tile_bytes, {.page_id = first_input_tile + t}, {});
                noc.async_read_barrier();
            }
            in_buf.push_back(1);
        }
    }
}
