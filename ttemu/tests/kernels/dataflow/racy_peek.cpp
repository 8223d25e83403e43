// Test kernel with a data race, for the ThreadSanitizer build: role (CT arg 0) 0 NOC-writes 32 bytes of its CB 0 into
// CB 0 of the core at (RT args 0, 1) with no semaphore; role 1 reads its own CB 0 word meanwhile, never waiting.
// RT args: peer noc x, peer noc y.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    constexpr uint32_t role = get_compile_time_arg_val(0);
    const uint32_t l1 = get_write_ptr(0);
    if constexpr (role == 0) {
        noc_async_write(l1, get_noc_addr(get_arg_val<uint32_t>(0), get_arg_val<uint32_t>(1), l1), 32);
        noc_async_write_barrier();
    } else {
        volatile tt_l1_ptr uint32_t* word = reinterpret_cast<volatile tt_l1_ptr uint32_t*>(l1);
        uint32_t seen = 0;
        for (uint32_t i = 0; i < 2000; ++i) {
            seen += *word;
            noc_async_read_barrier();  // an API call: lets the writer's thread run
        }
        (void)seen;
    }
}
