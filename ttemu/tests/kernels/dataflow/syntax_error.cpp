// Test kernel with a deliberate C++ syntax error.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    uint32_t x = 1 +;
}
