// Test kernel: misuses an L1 sharded buffer, selected by CT arg 0:
//   0 = NOC-writes one page from CB 0 to (noc x, noc y, addr) (e.g. just past a shard's end),
//   1 = stores through the plain L1 offset `addr` as if it were a pointer (valid on silicon, not in the emulator).
// RT args: noc x, noc y, addr, bytes.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t x = get_arg_val<uint32_t>(0);
    const uint32_t y = get_arg_val<uint32_t>(1);
    const uint32_t addr = get_arg_val<uint32_t>(2);
    const uint32_t bytes = get_arg_val<uint32_t>(3);
    constexpr uint32_t mode = get_compile_time_arg_val(0);
    if constexpr (mode == 0) {
        noc_async_write(get_write_ptr(0), get_noc_addr(x, y, addr), bytes);
        noc_async_write_barrier();
    } else {
        *reinterpret_cast<volatile tt_l1_ptr uint32_t*>(uintptr_t(addr)) = 0xBAD;
    }
}
