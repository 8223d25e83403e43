// A compute kernel that does nothing: the format probe (tests/runtime/programs.py) only needs the JIT to build it,
// so that the build folder's chlkc_descriptors.h shows how tt-metal describes each CB's formats and tile shape.
#include "api/compute/common.h"

void kernel_main() {}
