// SPDX-License-Identifier: Apache-2.0
//
// Tile format conversion, writer (RISCV_1 / NCRISC): writes the converted tiles from cb_out to tiles
// [first_tile, first_tile + num_tiles) of a DRAM-interleaved tensor.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    constexpr uint32_t cb_out = tt::CBIndex::c_16;
    constexpr uint32_t tile_bytes = get_compile_time_arg_val(0);

    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t first_tile = get_arg_val<uint32_t>(1);
    const uint32_t num_tiles = get_arg_val<uint32_t>(2);

    const InterleavedAddrGenFast<true> dst = {
        .bank_base_address = dst_addr, .page_size = tile_bytes, .data_format = get_dataformat(cb_out)};
    for (uint32_t tile = first_tile; tile < first_tile + num_tiles; ++tile) {
        cb_wait_front(cb_out, 1);
        noc_async_write_tile(tile, dst, get_read_ptr(cb_out));
        noc_async_write_barrier();  // the page must leave L1 before the CB slot is reused
        cb_pop_front(cb_out, 1);
    }
}
