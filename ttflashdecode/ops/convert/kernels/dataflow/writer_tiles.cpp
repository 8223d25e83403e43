// SPDX-License-Identifier: Apache-2.0
//
// Tile format conversion, writer (RISCV_0 / BRISC, NoC 1): writes the converted tiles from cb_out to tiles
// [first_tile, first_tile + num_tiles) of an interleaved tensor.
//
// Arguments (ttflashdecode/ops/convert/factory.py: WRITER_ARGS): compile-time args cb_out and dst_cta_offset, then
// the destination's TensorAccessorArgs; runtime args dst_addr, first_tile, num_tiles.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"

namespace {
constexpr uint32_t cb_out = get_compile_time_arg_val(0);
constexpr uint32_t dst_cta_offset = get_compile_time_arg_val(1);
}  // namespace

void kernel_main() {
    constexpr auto dst_args = TensorAccessorArgs<dst_cta_offset>();
    constexpr uint32_t tile_bytes = get_tile_size(cb_out);

    uint32_t arg = 0;
    const uint32_t dst_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t first_tile = get_arg_val<uint32_t>(arg++);
    const uint32_t num_tiles = get_arg_val<uint32_t>(arg++);

    Noc noc;
    CircularBuffer out_buf(cb_out);
    const auto dst = TensorAccessor(dst_args, dst_addr);
    for (uint32_t tile = first_tile; tile < first_tile + num_tiles; ++tile) {
        out_buf.wait_front(1);
        noc.async_write(out_buf, dst, tile_bytes, {}, {.page_id = tile});
        noc.async_write_barrier();  // the page must leave L1 before the CB slot is reused
        out_buf.pop_front(1);
    }
}
