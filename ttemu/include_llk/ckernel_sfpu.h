// Emulator: tt-llk ckernel_sfpu.h is folded into ckernel.h (see there).
#pragma once
#include "ckernel.h"
