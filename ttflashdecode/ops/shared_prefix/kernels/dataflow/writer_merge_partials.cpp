// SPDX-License-Identifier: Apache-2.0
//
// Shared-prefix decode, merge of the two levels' partials: writer (RISCV_0 / BRISC, NoC 1). Writes compute's normalised
// output tiles, tile row by tile row ([1, b, n_q_heads, v_head_dim], TILE, interleaved: tile row r, column c is page
// r * vDHt + c), whole tiles: a tile row is 32 q heads of one user, which no other row touches.
//
// Arguments (ttflashdecode/ops/shared_prefix/args.py): compile-time args in the order of MERGE_WRITER_ARGS (cb_out,
// vDHt, out_cta_offset), then the output's TensorAccessorArgs; runtime args out_addr, first_row, num_rows (tile
// rows).

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"

namespace {
constexpr uint32_t cb_out = get_compile_time_arg_val(0);
constexpr uint32_t vDHt = get_compile_time_arg_val(1);
constexpr uint32_t out_cta_offset = get_compile_time_arg_val(2);
}  // namespace

void kernel_main() {
    constexpr auto out_args = TensorAccessorArgs<out_cta_offset>();
    constexpr uint32_t tile_bytes = get_tile_size(cb_out);

    uint32_t arg = 0;
    const uint32_t out_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t first_row = get_arg_val<uint32_t>(arg++);
    const uint32_t num_rows = get_arg_val<uint32_t>(arg++);

    Noc noc;
    CircularBuffer out_buf(cb_out);
    const auto out_pages = TensorAccessor(out_args, out_addr);
    for (uint32_t r = first_row; r < first_row + num_rows; ++r) {
        for (uint32_t c = 0; c < vDHt; ++c) {
            out_buf.wait_front(1);
            noc.async_write(out_buf, out_pages, tile_bytes, {}, {.page_id = r * vDHt + c});
            noc.async_write_barrier();
            out_buf.pop_front(1);
        }
    }
}
