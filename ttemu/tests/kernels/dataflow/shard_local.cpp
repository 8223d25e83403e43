// Test kernel: a shard core moves its own shard to or from a DRAM-interleaved tensor with the shard's plain L1
// offset as the local side of the NOC transfer (how silicon kernels use a sharded buffer_address()), no staging CB.
// CT args: [0] direction (0: DRAM -> own shard, 1: own shard -> DRAM), [1..] TensorAccessorArgs of the DRAM tensor.
// RT args: DRAM addr, shard L1 addr, first page of this shard, page count, page bytes.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t dram_addr = get_arg_val<uint32_t>(0);
    const uint32_t shard_addr = get_arg_val<uint32_t>(1);
    const uint32_t first = get_arg_val<uint32_t>(2);
    const uint32_t n = get_arg_val<uint32_t>(3);
    constexpr uint32_t to_dram = get_compile_time_arg_val(0);
    constexpr auto args = TensorAccessorArgs<1>();
    const uint32_t page = get_arg_val<uint32_t>(4);
    const auto dram = TensorAccessor(args, dram_addr, page);
    for (uint32_t j = 0; j < n; ++j) {
        if constexpr (to_dram) {
            noc_async_write_page(first + j, dram, shard_addr + j * page);
        } else {
            noc_async_read_page(first + j, dram, shard_addr + j * page);
        }
    }
    noc_async_read_barrier();
    noc_async_write_barrier();
}
