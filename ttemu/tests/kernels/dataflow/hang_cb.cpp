// Test kernel: waits for a page in CB 3 that nobody ever pushes (deliberate deadlock).
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    cb_wait_front(3, 1);
    cb_pop_front(3, 1);
}
