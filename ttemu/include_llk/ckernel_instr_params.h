// Emulator: tt-llk ckernel_instr_params.h (p_sfpu, p_setrwc, p_stall, ...) is folded into ckernel.h.
#pragma once
#include "ckernel.h"
