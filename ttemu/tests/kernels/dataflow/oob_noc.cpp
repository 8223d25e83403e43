// Test kernel: NOC misuse selected by CT arg 0: 0 = DRAM read past the end of the source buffer's pages,
// 1 = write to a NOC node that is neither a worker nor a DRAM bank, 2 = remote L1 write past the end of L1.
// RT args: src addr, number of pages of the source.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t npages = get_arg_val<uint32_t>(1);
    constexpr uint32_t mode = get_compile_time_arg_val(0);
    const uint32_t l1 = get_write_ptr(0);
    if constexpr (mode == 0) {
        const InterleavedAddrGenFast<true> src = {
            .bank_base_address = src_addr, .page_size = 2048, .data_format = DataFormat::Float16_b};
        noc_async_read_tile(npages + 12 * 4, src, l1);
        noc_async_read_barrier();
    } else if constexpr (mode == 1) {
        noc_async_write(l1, get_noc_addr(3, 3, 0x20000), 64);
        noc_async_write_barrier();
    } else {
        noc_async_write(l1, get_noc_addr(my_x[noc_index], my_y[noc_index], 1464 * 1024 - 32), 64);
        noc_async_write_barrier();
    }
}
