// Test kernel for the timing model: tt-metal's DRAM packet-size benchmark shape on one RISC: `count` reads of
// `nbytes` from DRAM bank 0 at the source buffer's address into CB 0, back to back, then one read barrier.
// RT args: src address, nbytes, count.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t nbytes = get_arg_val<uint32_t>(1);
    const uint32_t count = get_arg_val<uint32_t>(2);
    constexpr uint32_t cb = 0;
    const uint64_t src = get_noc_addr_from_bank_id<true>(0, src_addr);
    const uint32_t dst = get_write_ptr(cb);
    for (uint32_t i = 0; i < count; ++i) noc_async_read(src, dst, nbytes);
    noc_async_read_barrier();
}
