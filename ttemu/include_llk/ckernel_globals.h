// Emulator: tt-llk ckernel_globals.h is folded into ckernel.h (see there).
#pragma once
#include "ckernel.h"
