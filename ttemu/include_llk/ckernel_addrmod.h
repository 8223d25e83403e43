// Emulator: tt-llk ckernel_addrmod.h is folded into ckernel.h (see there).
#pragma once
#include "ckernel.h"
