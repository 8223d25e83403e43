// SPDX-License-Identifier: Apache-2.0
//
// Tile format conversion, reader (RISCV_1 / NCRISC, NoC 0): streams tiles [first_tile, first_tile + num_tiles) of an
// interleaved tensor into cb_in, one tile per page, so compute can unpack them in their stored format.
//
// Arguments (ttflashdecode/ops/convert/factory.py: READER_ARGS): compile-time args cb_in and src_cta_offset, then the
// source's TensorAccessorArgs; runtime args src_addr, first_tile, num_tiles.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"

namespace {
constexpr uint32_t cb_in = get_compile_time_arg_val(0);
constexpr uint32_t src_cta_offset = get_compile_time_arg_val(1);
}  // namespace

void kernel_main() {
    constexpr auto src_args = TensorAccessorArgs<src_cta_offset>();
    constexpr uint32_t tile_bytes = get_tile_size(cb_in);

    uint32_t arg = 0;
    const uint32_t src_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t first_tile = get_arg_val<uint32_t>(arg++);
    const uint32_t num_tiles = get_arg_val<uint32_t>(arg++);

    Noc noc;
    CircularBuffer in_buf(cb_in);
    const auto src = TensorAccessor(src_args, src_addr);
    for (uint32_t tile = first_tile; tile < first_tile + num_tiles; ++tile) {
        in_buf.reserve_back(1);
        noc.async_read(src, in_buf, tile_bytes, {.page_id = tile}, {});
        noc.async_read_barrier();
        in_buf.push_back(1);
    }
}
