// Emulator: tt-llk ckernel_defs.h is folded into ckernel.h (see there).
#pragma once
#include "ckernel.h"
