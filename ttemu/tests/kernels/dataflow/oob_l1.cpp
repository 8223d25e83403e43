// Test kernel: stores through an L1 pointer 64 KiB past the end of CB 0 (unallocated L1).
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    volatile tt_l1_ptr uint32_t* p =
        reinterpret_cast<volatile tt_l1_ptr uint32_t*>(get_write_ptr(0) + get_arg_val<uint32_t>(0) + 64 * 1024);
    *p = 0xBAD;
}
