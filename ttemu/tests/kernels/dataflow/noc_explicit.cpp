// Test kernel for explicit NoC arguments: one page from DRAM bank 0 into CB 0 and back out to another buffer's bank 0,
// every call naming its NoC (the kernel's default, noc_index, is the program's choice).
// RT args: src address, dst address, page bytes, count (reads of the page, back to back), read NoC, NoC the source
// address is built for, barrier NoC (read and write barriers), write NoC.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t dst_addr = get_arg_val<uint32_t>(1);
    const uint32_t page_bytes = get_arg_val<uint32_t>(2);
    const uint32_t count = get_arg_val<uint32_t>(3);
    const uint8_t read_noc = uint8_t(get_arg_val<uint32_t>(4));
    const uint8_t addr_noc = uint8_t(get_arg_val<uint32_t>(5));
    const uint8_t barrier_noc = uint8_t(get_arg_val<uint32_t>(6));
    const uint8_t write_noc = uint8_t(get_arg_val<uint32_t>(7));
    constexpr uint32_t cb = 0;

    cb_reserve_back(cb, 1);
    const uint32_t l1 = get_write_ptr(cb);
    const uint64_t src = get_noc_addr_from_bank_id<true>(0, src_addr, addr_noc);
    for (uint32_t i = 0; i < count; ++i) noc_async_read(src, l1, page_bytes, read_noc);
    noc_async_read_barrier(barrier_noc);
    cb_push_back(cb, 1);

    cb_wait_front(cb, 1);
    noc_async_write(get_read_ptr(cb), get_noc_addr_from_bank_id<true>(0, dst_addr, write_noc), page_bytes, write_noc);
    noc_async_write_barrier(barrier_noc);
    cb_pop_front(cb, 1);
}
