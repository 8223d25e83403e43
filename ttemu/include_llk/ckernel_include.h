// Emulator: tt-llk ckernel_include.h is folded into ckernel.h (see there).
#pragma once
#include "ckernel.h"
