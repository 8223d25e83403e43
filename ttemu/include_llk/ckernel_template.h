// Emulator: tt-llk ckernel_template.h is folded into ckernel.h (see there).
#pragma once
#include "ckernel.h"
