// Test kernel: waits for semaphore CT arg 0 to reach 1; nobody increments it (deliberate deadlock).
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    noc_semaphore_wait(reinterpret_cast<volatile tt_l1_ptr uint32_t*>(get_semaphore(get_compile_time_arg_val(0))), 1);
}
