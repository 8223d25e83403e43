// SPDX-License-Identifier: Apache-2.0
//
// Tile format conversion, reader (RISCV_0 / BRISC): streams tiles [first_tile, first_tile + num_tiles) of a
// DRAM-interleaved tensor into cb_in, one tile per page, so compute can unpack them in their stored format.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    constexpr uint32_t cb_in = tt::CBIndex::c_0;
    constexpr uint32_t tile_bytes = get_compile_time_arg_val(0);

    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t first_tile = get_arg_val<uint32_t>(1);
    const uint32_t num_tiles = get_arg_val<uint32_t>(2);

    const InterleavedAddrGenFast<true> src = {
        .bank_base_address = src_addr, .page_size = tile_bytes, .data_format = get_dataformat(cb_in)};
    for (uint32_t tile = first_tile; tile < first_tile + num_tiles; ++tile) {
        cb_reserve_back(cb_in, 1);
        noc_async_read_tile(tile, src, get_write_ptr(cb_in));
        noc_async_read_barrier();
        cb_push_back(cb_in, 1);
    }
}
