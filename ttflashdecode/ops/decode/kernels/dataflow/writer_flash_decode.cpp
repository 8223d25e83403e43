// SPDX-License-Identifier: Apache-2.0
//
// FlashDecode writer, on RISCV_0 (BRISC) over NoC 1: ttnn.WriterConfigDescriptor, tt-metal's DRAM-write NoC. On a
// core whose reader reads over NoC 1 (plan/rules.py: reads_over_noc1) it runs over NoC 0, so each of the core's two
// data-movement kernels keeps a NoC of its own (dedicated-NoC mode).
// For every group (batch b, kv head h) this core serves:
//   - as a tree receiver, in each round it receives in (a prefix of the rounds), makes room for the round's active
//     children's partials in cb_partial_in, waits for the round's semaphore to count them all (one semaphore per
//     round, so an early arrival of a later round cannot be mistaken for an earlier one) and hands the slots to
//     compute, which merges them in one pass;
//   - as a sender, NOC-writes compute's (O, m, l) into its slot (send_slot: round (F - 1) + digit - 1) of its
//     parent's cb_partial_in, waits for the write to land, then increments the parent's semaphore for that round;
// The tree has radix F = merge_radix (flash_decode_common.hpp): F = 2 is the binary tree, F >= the group's cores a
// one-round gather at the root.
//   - as the group's root, scatters the normalised rows into the output tensor (zeros for a skipped user, which
//     includes a user whose cur_pos or page table broke the position contract: the reader checks them).
// Consecutive users sharing a page-table row (spec_multi_pos_tiles candidates) are one group, their rows stacked user by
// user: the root writes each user's rows, or zeros for a skipped one.
// Output rows of different groups may share a tile, so rows are written as 16-datum face rows and a core never
// touches rows it does not own. The output is TILE or ROW_MAJOR, DRAM or L1 interleaved, or height-sharded in L1:
// then shard s lives at the output's L1 address on the core whose NOC coordinates are common runtime args 2s, 2s + 1.
//
// Arguments (ttflashdecode/ops/decode/args.py): positional compile-time args for what shapes the code, arg i being
// WRITER_ARGS[i] (each read below as `constexpr ... <name> = get_compile_time_arg_val(i)`), then the output's
// TensorAccessorArgs (at out_cta_offset); common runtime args (the output's address and the run-time shape) in the
// order of kernel_args.WriterCommonArgs.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/dataflow/endpoints.h"
#include "api/dataflow/noc_semaphore.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"
#include "flash_decode_common.hpp"

using namespace flash_decode;

namespace {

// ---- circular buffers (the planner's CB table, ttflashdecode/plan/cbs.py)
constexpr uint32_t cb_partial_in = get_compile_time_arg_val(0);
constexpr uint32_t cb_partial_out = get_compile_time_arg_val(1);
constexpr uint32_t cb_writer_cur_pos = get_compile_time_arg_val(2);
constexpr uint32_t cb_zeros = get_compile_time_arg_val(3);
constexpr uint32_t cb_out = get_compile_time_arg_val(4);

// ---- compile-time shape
constexpr uint32_t vDHt = get_compile_time_arg_val(5);
constexpr uint32_t PNHt = get_compile_time_arg_val(6);
// Rows of compute's output and partial tiles: 16 (a 16 x 32 tile: the first two faces of a 32 x 32 one) or 32.
constexpr uint32_t q_tile_rows = get_compile_time_arg_val(7);
constexpr uint32_t Sk_t = get_compile_time_arg_val(8);
constexpr uint32_t q_len = get_compile_time_arg_val(9);
constexpr uint32_t heads_per_group = get_compile_time_arg_val(10);
constexpr uint32_t NQt = get_compile_time_arg_val(11);
constexpr uint32_t num_kv_heads = get_compile_time_arg_val(12);
constexpr uint32_t n_q_heads = get_compile_time_arg_val(13);
constexpr uint32_t users_per_page_row = get_compile_time_arg_val(14);
constexpr uint32_t users_per_group = users_per_page_row;
// Semaphore of tree round r: sem_partial_arrived + r (the planner's per-round semaphores, plan/search.py).
constexpr uint32_t sem_partial_arrived = get_compile_time_arg_val(15);
constexpr uint32_t merge_radix = get_compile_time_arg_val(16);  // the tree's radix F
// Where the output lives (flash_decode_common.hpp: TensorPages): its placement, pages per shard when height-sharded,
// TILE or ROW_MAJOR pages (row-major follows a row-major Q, as upstream), and one page's bytes.
constexpr auto out_placement = static_cast<Placement>(get_compile_time_arg_val(17));
constexpr uint32_t out_shard_pages = get_compile_time_arg_val(18);
constexpr bool out_tiled = get_compile_time_arg_val(19) == 1;
constexpr uint32_t out_page_bytes = get_compile_time_arg_val(20);
constexpr uint32_t out_cta_offset = get_compile_time_arg_val(21);
constexpr auto out_args = TensorAccessorArgs<out_cta_offset>();
// The group's rows are whole tile rows of the output (q_len 1, one kv head, TILE layout: a user's heads and their
// padding rows belong to this group alone), so the output is written as whole tiles, one write per tile instead of
// two per row and tile (small DRAM writes keep a channel busy as long as a 128 B one).
constexpr bool out_whole_tiles = get_compile_time_arg_val(22) == 1;
static_assert(!out_whole_tiles || (out_tiled && q_len == 1 && num_kv_heads == 1), "whole tiles need one group a user");
static_assert(!out_whole_tiles || users_per_group == 1 || PNHt == users_per_group * NQt,
              "users of one group own whole tiles only when their heads fill them");

// Shared-prefix decode (ttflashdecode/ops/shared_prefix). emit_partial: the root writes the group's partial (O
// unnormalised, m, l: compute pushes them to cb_out one after another, O's PNHt x vDHt tiles, then the PNHt m tiles,
// then the PNHt l tiles) as rows of vDHt + 2 tiles, O's columns then m's tile then l's, into an output
// [1, b, n_q_heads, v_head_dim + 64]; a skipped user's rows are zeros (l = 0: no partial). slot_users: the group's
// users are slots and slot s writes the rows of user get_common_arg_val(s) (NO_USER: a padding slot, nothing written).
constexpr bool emit_partial = get_compile_time_arg_val(23) == 1;
constexpr bool slot_users = get_compile_time_arg_val(24) == 1;
// Common runtime args before this kernel's own (the shard table or the slot map): its addresses start there.
constexpr uint32_t work_args_at = get_compile_time_arg_val(25);
static_assert(!emit_partial || !out_whole_tiles, "a partial is written row by row");
static_assert(!slot_users || (q_len == 1 && !out_whole_tiles && out_placement != Placement::L1_HEIGHT_SHARDED),
              "slots mapped to users: one token, rows written one by one, the map in the common runtime args");

constexpr uint32_t k_chunk_size = Sk_t * TILE_HW;
constexpr uint32_t o_tiles = PNHt * vDHt;
constexpr uint32_t partial_tiles = o_tiles + 2 * PNHt;
constexpr uint32_t row_tiles = emit_partial ? vDHt + 2 : vDHt;  // an output row, in tiles
constexpr uint32_t user_rows = q_len * heads_per_group;  // a user's rows in the group: token-major
constexpr uint32_t q_rows = users_per_group * user_rows;
constexpr uint32_t out_tile_bytes = get_tile_size(cb_out);  // an output tile in cb_out / cb_zeros
constexpr uint32_t out_datum_bytes = out_tile_bytes / (q_tile_rows * TILE_HW);  // bfloat16 or float32
constexpr uint32_t face_row_bytes = FACE_HW * out_datum_bytes;

}  // namespace

void kernel_main() {
    // ---- common runtime args (kernel_args.WriterCommonArgs) after the shard table / slot map, then the work table
    uint32_t arg = work_args_at;
    const uint32_t out_addr = get_common_arg_val<uint32_t>(arg++);
    // the run-time shape: not compile-time, so one build serves every batch and window of a head configuration
    const uint32_t batch = get_common_arg_val<uint32_t>(arg++);
    const uint32_t sliding_window = get_common_arg_val<uint32_t>(arg++);  // positions (0: none)
    const CoreWork work = core_work(arg);
    const uint32_t first_group = work.first_group;
    const uint32_t num_groups = work.num_groups;
    const uint32_t core_index = work.core_index;
    const uint32_t num_cores_per_head = work.num_cores_per_head;
    const uint32_t parent_noc_x = work.parent_noc_x;  // the tree parent (plan.rules.tree_parent; unused by roots)
    const uint32_t parent_noc_y = work.parent_noc_y;

    Noc noc;
    CircularBuffer partial_in_buf(cb_partial_in);
    CircularBuffer partial_out_buf(cb_partial_out);
    CircularBuffer writer_cur_pos_buf(cb_writer_cur_pos);
    CircularBuffer zeros_buf(cb_zeros);
    CircularBuffer out_buf(cb_out);
    const TensorPages<out_placement, out_shard_pages, decltype(TensorAccessor(out_args, out_addr))> out_pages{
        TensorAccessor(out_args, out_addr), out_addr, out_page_bytes};

    // A partial is O, m and l in the partial CBs' format (the intermediates' format).
    const uint32_t partial_bytes = num_cores_per_head > 1 ? partial_tiles * get_tile_size(cb_partial_in) : 0;
    // Slot s of cb_partial_in sits at base + s * partial_bytes on every core (CBs share addresses across cores).
    // Capture the base before this core pushes any slot of its own. A core in a tree serves exactly one group
    // (the planner only forms groups of several cores when every core has one group), the rounds it receives in
    // are a prefix 0..k-1 and each but the last brings F - 1 children, so its pushes fill slots 0, 1, ... in the
    // order of its children's send_slot. The CB exists only when
    // groups have more than one core.
    const uint32_t partial_in_base = num_cores_per_head > 1 ? partial_in_buf.get_write_ptr() : 0;

    // The reader's checked copy of every user's cur_pos (an out-of-contract value arrives as SKIPPED_USER).
    writer_cur_pos_buf.wait_front(1);
    const CoreLocalMem<volatile uint32_t> cur_pos_of_user(writer_cur_pos_buf.get_read_ptr());

    // One tile of zeros to write a skipped user's rows from.
    zeros_buf.reserve_back(1);
    noc.async_write_zeros(zeros_buf, out_tile_bytes);
    noc.write_zeros_l1_barrier();

    const CoreLocalMem<uint8_t> zeros(zeros_buf.get_write_ptr());
    // Writes the group's rows of the output block at the read pointer of `src` (o_tiles tiles, rows user-major then
    // token-major; `first_user` the group's first user), or, with same_tile_for_all, its first tile for every row.
    // A skipped user's rows come from the zero tile.
    // `first_col`, `cols`: the block holds the output's tile columns [first_col, first_col + cols) (emit_partial writes
    // O, m and l as three blocks; otherwise one block, the whole row).
    auto write_rows = [&](uint32_t first_user, uint32_t kv_head, const CoreLocalMem<uint8_t>& src,
                          bool same_tile_for_all, uint32_t first_col = 0, uint32_t cols = row_tiles) {
        auto skipped = [&](uint32_t user) { return users_per_group > 1 && cur_pos_of_user[user] == SKIPPED_USER; };
        if constexpr (out_whole_tiles) {
            // Compute's tile (r, c) is output page (first_user * NQt + r) * vDHt + c; tile row r is user r / NQt's.
            for (uint32_t t = 0; t < o_tiles; ++t) {
                const bool zero = skipped(first_user + t / vDHt / NQt);
                const bool first_tile = same_tile_for_all || zero;
                out_pages.write(noc, zero ? zeros : src, first_tile ? 0 : t * out_tile_bytes, out_tile_bytes,
                                {.page = first_user * NQt * vDHt + t, .offset = 0});
            }
            noc.async_write_barrier();
            return;
        }
        // A run of rows (face_row_run: consecutive heads of one token inside one face on both sides) goes as one
        // write per face column: 4 heads a group write 128 B at once instead of four 32 B writes, and each small DRAM
        // write keeps its channel as busy as a 128 B one.
        for (uint32_t row = 0; row < q_rows;) {
            const uint32_t slot = first_user + row / user_rows;
            const uint32_t b = slot_users ? get_common_arg_val<uint32_t>(slot) : slot;
            const uint32_t token = row % user_rows / heads_per_group;
            const uint32_t q_head = kv_head * heads_per_group + row % heads_per_group;
            // Row of the output's [q_len * b * heads, v_head_dim] view (tile layout pads each user's heads to tiles).
            const uint32_t dst_row = (token * batch + b) * (out_tiled ? NQt * TILE_HW : n_q_heads) + q_head;
            const uint32_t run = face_row_run(row, q_rows, heads_per_group, q_tile_rows, dst_row, out_tiled);
            if (slot_users && b == NO_USER) {  // a padding slot: no rows of its own (a run never spans two slots)
                row += run;
                continue;
            }
            const bool zero = skipped(slot);
            for (uint32_t c = 0; c < cols; ++c) {
                const uint32_t src_tile = same_tile_for_all || zero ? 0 : (row / q_tile_rows) * cols + c;
                for (uint32_t col = 0; col < TILE_HW; col += FACE_HW) {
                    const uint32_t src_offset =
                        src_tile * out_tile_bytes + tile_datum_offset(row % q_tile_rows, col, out_datum_bytes);
                    const PageOffset at = datum_page<out_tiled>(dst_row, (first_col + c) * TILE_HW + col,
                                                                row_tiles * TILE_HW, out_datum_bytes);
                    out_pages.write(noc, zero ? zeros : src, src_offset, run * face_row_bytes, at);
                }
            }
            row += run;
        }
        noc.async_write_barrier();
    };

    const uint32_t rounds = tree_rounds(num_cores_per_head, merge_radix);
    for (uint32_t group = first_group; group < first_group + num_groups; ++group) {
        const uint32_t b = group / num_kv_heads * users_per_group;  // the group's first user
        const uint32_t kv_head = group % num_kv_heads;
        const GroupBounds bounds =
            group_bounds([&](uint32_t u) { return uint32_t(cur_pos_of_user[u]); }, b, users_per_group, q_len);
        const uint32_t cur_pos = bounds.last;

        if (cur_pos == SKIPPED_USER) {
            if (core_index == 0) {
                write_rows(b, kv_head, zeros, /*same_tile_for_all=*/true);
            }
            continue;
        }
        const ChunkRange chunks =
            chunk_range(cur_pos, k_chunk_size, core_index, num_cores_per_head, bounds.span, sliding_window);
        if (chunks.count == 0) {
            continue;
        }
        const uint32_t num_active = active_cores(cur_pos, k_chunk_size, num_cores_per_head, bounds.span, sliding_window);

        for (uint32_t round = 0; round < rounds; ++round) {
            const uint32_t children = children_in_round(core_index, round, num_active, merge_radix);
            if (children == 0) {
                break;  // no later round brings any (from its send round on, this core's partial goes up)
            }
            partial_in_buf.reserve_back(children * partial_tiles);
            Semaphore<> arrived(sem_partial_arrived + round);
            arrived.wait(children);
            arrived.set(0);
            partial_in_buf.push_back(children * partial_tiles);
        }

        if (core_index == 0) {
            out_buf.wait_front(o_tiles);
            write_rows(b, kv_head, CoreLocalMem<uint8_t>(out_buf.get_read_ptr()), /*same_tile_for_all=*/false, 0, vDHt);
            out_buf.pop_front(o_tiles);
            if constexpr (emit_partial) {
                for (uint32_t stat = 0; stat < 2; ++stat) {  // m, then l: one tile column each
                    out_buf.wait_front(PNHt);
                    write_rows(b, kv_head, CoreLocalMem<uint8_t>(out_buf.get_read_ptr()), false, vDHt + stat, 1);
                    out_buf.pop_front(PNHt);
                }
            }
        } else {
            const uint32_t round = send_round(core_index, merge_radix);
            const uint32_t slot = partial_in_base + send_slot(core_index, merge_radix) * partial_bytes;
            // O's tiles go as soon as compute pushed them, while it still moves the row statistics (m, l) after them.
            const uint32_t o_bytes = o_tiles * get_tile_size(cb_partial_out);
            partial_out_buf.wait_front(o_tiles);
            noc.async_write(partial_out_buf, UnicastEndpoint{}, o_bytes, {},
                            {.noc_x = parent_noc_x, .noc_y = parent_noc_y, .addr = slot});
            partial_out_buf.wait_front(partial_tiles);
            noc.async_write(partial_out_buf, UnicastEndpoint{}, partial_bytes - o_bytes, {.offset_bytes = o_bytes},
                            {.noc_x = parent_noc_x, .noc_y = parent_noc_y, .addr = slot + o_bytes});
            noc.async_write_barrier();  // the partial must land before the parent is told it is there
            Semaphore<>(sem_partial_arrived + round).up(noc, parent_noc_x, parent_noc_y, 1);
            noc.async_atomic_barrier();
            partial_out_buf.pop_front(partial_tiles);
        }
    }
    writer_cur_pos_buf.pop_front(1);
}
