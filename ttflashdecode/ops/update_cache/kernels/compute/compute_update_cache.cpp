// SPDX-License-Identifier: Apache-2.0
//
// Cache update, compute. For each unit: unpacks the cache's tile row (Wt tiles in the cache's format) into 32
// bfloat16 rows (pack_untilize), hands them to the writer, which replaces the unit's row with the new one, and packs
// the rows back into tiles of the cache's format (tilize): the packer re-derives each face row's shared exponent, as
// upstream's paged_update_cache does (untilize, replace the row, tilize).
//
// cb_rows and cb_patched are two indices over ONE buffer: compute pushes the unpacked rows on cb_rows, the writer
// patches them in place, pops cb_rows and pushes cb_patched (no copy), and compute tilizes from cb_patched. The two
// indices advance by Wt pages per unit in lockstep, so their pointers always name the same bytes.
//
// Arguments (ttflashdecode/ops/update_cache/args.py): compile-time args in the order of COMPUTE_ARGS; common runtime
// args: the work table (unit_range), nothing else.

#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/cb_api.h"
#include "api/compute/pack_untilize.h"
#include "api/compute/tilize.h"
#include "api/compute/reconfig_data_format.h"
#include "api/dataflow/circular_buffer.h"
#include "update_cache_common.hpp"

namespace {
constexpr uint32_t cb_cache = get_compile_time_arg_val(0);
constexpr uint32_t cb_rows = get_compile_time_arg_val(1);
constexpr uint32_t cb_patched = get_compile_time_arg_val(2);
constexpr uint32_t cb_out = get_compile_time_arg_val(3);
constexpr uint32_t Wt = get_compile_time_arg_val(4);
// Tiles per pack_untilize call: a divisor of Wt that fits DST (8 tiles, 4 with an fp32 DST).
constexpr uint32_t untilize_block = get_compile_time_arg_val(5);
static_assert(Wt % untilize_block == 0, "untilize_block must divide Wt");
}  // namespace

void kernel_main() {
    const uint32_t num_units = update_cache::unit_range(0).count;

    CircularBuffer cache_buf(cb_cache);
    CircularBuffer rows_buf(cb_rows);
    CircularBuffer patched_buf(cb_patched);
    CircularBuffer out_buf(cb_out);
    compute_kernel_hw_startup(cb_cache, cb_rows);
    for (uint32_t unit = 0; unit < num_units; ++unit) {
        // Cache tiles -> 32 bfloat16 rows of Wt * 32 datums.
        reconfig_data_format_srca(cb_cache);
        pack_reconfig_data_format(cb_rows);
        pack_untilize_init<untilize_block, Wt>(cb_cache, cb_rows);
        rows_buf.reserve_back(Wt);
        for (uint32_t block = 0; block < Wt / untilize_block; ++block) {
            cache_buf.wait_front(untilize_block);
            pack_untilize_block<untilize_block, Wt>(cb_cache, 1, cb_rows, block);
            cache_buf.pop_front(untilize_block);
        }
        rows_buf.push_back(Wt);
        pack_untilize_uninit(cb_rows);

        // Patched rows -> tiles of the cache's format.
        reconfig_data_format_srca(cb_patched);
        pack_reconfig_data_format(cb_out);
        tilize_init(cb_patched, Wt, cb_out);
        patched_buf.wait_front(Wt);
        out_buf.reserve_back(Wt);
        tilize_block(cb_patched, Wt, cb_out);
        out_buf.push_back(Wt);
        patched_buf.pop_front(Wt);
        tilize_uninit(cb_patched, cb_out);
    }
}
