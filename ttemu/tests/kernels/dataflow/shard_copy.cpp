// Test kernel: moves pages between a DRAM-interleaved tensor and an L1 height-sharded tensor (TILE or ROW_MAJOR) over
// the NOC, staging each page in CB 0. The shard of page i is on the core given by runtime args, which need not be this
// core; inside its shard, page i starts at shard addr + (i % pages per shard) * shard page stride (the buffer's aligned
// page size: a tile, or a ROW_MAJOR row rounded up to the 16-B L1 alignment). Each transfer moves the page's bytes.
// CT args: [0] direction (0: DRAM -> shards, 1: shards -> DRAM), [1..] TensorAccessorArgs of the DRAM tensor.
// RT args: DRAM addr, shard L1 addr (plain offset), pages per shard, first page, page count, page bytes,
//          shard page stride, then (noc x, noc y) of each shard core in shard order.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t dram_addr = get_arg_val<uint32_t>(0);
    const uint32_t shard_addr = get_arg_val<uint32_t>(1);
    const uint32_t per_shard = get_arg_val<uint32_t>(2);
    const uint32_t first = get_arg_val<uint32_t>(3);
    const uint32_t n = get_arg_val<uint32_t>(4);
    const uint32_t page = get_arg_val<uint32_t>(5);
    const uint32_t stride = get_arg_val<uint32_t>(6);
    constexpr uint32_t to_dram = get_compile_time_arg_val(0);
    constexpr auto args = TensorAccessorArgs<1>();
    const auto dram = TensorAccessor(args, dram_addr, page);

    for (uint32_t i = first; i < first + n; ++i) {
        const uint32_t shard = i / per_shard;
        const uint64_t shard_noc = get_noc_addr(get_arg_val<uint32_t>(7 + 2 * shard),
                                                get_arg_val<uint32_t>(8 + 2 * shard),
                                                shard_addr + (i % per_shard) * stride);
        cb_reserve_back(0, 1);
        const uint32_t l1 = get_write_ptr(0);
        if constexpr (to_dram) {
            noc_async_read(shard_noc, l1, page);
            noc_async_read_barrier();
            noc_async_write_page(i, dram, l1);
        } else {
            noc_async_read_page(i, dram, l1);
            noc_async_read_barrier();
            noc_async_write(l1, shard_noc, page);
        }
        noc_async_write_barrier();
        cb_push_back(0, 1);
        cb_wait_front(0, 1);
        cb_pop_front(0, 1);
    }
}
