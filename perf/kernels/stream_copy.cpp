// Throughput kernel: copies pages [start, start+n) of a DRAM-interleaved tensor through CB 0 of this core, the
// reader half (RISCV_0) and writer half (RISCV_1) selected by CT arg 0. CT: [0] is_writer, [1..] TA args.
// RT: tensor address, start page, count.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t addr = get_arg_val<uint32_t>(0);
    const uint32_t start = get_arg_val<uint32_t>(1);
    const uint32_t n = get_arg_val<uint32_t>(2);
    constexpr bool is_writer = get_compile_time_arg_val(0) != 0;
    constexpr auto args = TensorAccessorArgs<1>();
    const uint32_t page = args.get_aligned_page_size();
    const auto t = TensorAccessor(args, addr, page);
    constexpr uint32_t block = 4;
    for (uint32_t i = 0; i < n; i += block) {
        const uint32_t m = n - i < block ? n - i : block;
        if constexpr (!is_writer) {
            cb_reserve_back(0, block);
            uint32_t l1 = get_write_ptr(0);
            for (uint32_t j = 0; j < m; ++j) noc_async_read_page(start + i + j, t, l1 + j * page);
            noc_async_read_barrier();
            cb_push_back(0, block);
        } else {
            cb_wait_front(0, block);
            uint32_t l1 = get_read_ptr(0);
            for (uint32_t j = 0; j < m; ++j) noc_async_write_page(start + i + j, t, l1 + j * page);
            noc_async_writes_flushed();
            cb_pop_front(0, block);
        }
    }
    noc_async_write_barrier();
}
