// Emulator: tt-llk cmath_common.h is folded into ckernel.h (see there).
#pragma once
#include "ckernel.h"
