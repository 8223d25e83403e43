// A data-movement kernel that does nothing: built by the format probe (tests/runtime/programs.py) for its
// chlkc_descriptors.h, the data-movement view of the same CBs.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {}
