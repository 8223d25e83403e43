// SPDX-License-Identifier: Apache-2.0
//
// Tile format conversion, compute: unpacks each tile of cb_in in its format and packs it into cb_out in cb_out's
// format. The packer does the conversion (e.g. bfloat16 or float32 -> bfloat8_b with shared exponents per
// 16-datum row), exactly as any op producing that dtype would.
//
// Arguments (ttflashdecode/ops/convert/factory.py: COMPUTE_ARGS, also fill_cache's): compile-time args cb_in, cb_out;
// runtime arg num_tiles.

#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/cb_api.h"
#include "api/compute/reg_api.h"
#include "api/compute/pack.h"
#include "api/compute/tile_move_copy.h"
#include "api/dataflow/circular_buffer.h"

namespace {
constexpr uint32_t cb_in = get_compile_time_arg_val(0);
constexpr uint32_t cb_out = get_compile_time_arg_val(1);
}  // namespace

void kernel_main() {
    const uint32_t num_tiles = get_arg_val<uint32_t>(0);

    CircularBuffer in_buf(cb_in);
    CircularBuffer out_buf(cb_out);
    compute_kernel_hw_startup(cb_in, cb_out);
    copy_init(cb_in);
    for (uint32_t i = 0; i < num_tiles; ++i) {
        in_buf.wait_front(1);
        out_buf.reserve_back(1);
        tile_regs_acquire();
        copy_tile(cb_in, 0, 0);
        tile_regs_commit();
        tile_regs_wait();
        pack_tile(0, cb_out);
        tile_regs_release();
        out_buf.push_back(1);
        in_buf.pop_front(1);
    }
}
