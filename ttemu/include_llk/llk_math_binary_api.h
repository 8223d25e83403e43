// Emulator: the wheel's llk_math_binary_api.h (FPU / debug LLK layer) is modelled at the compute API level (include/api/compute,
// emu/compute_fpu.h) and by llk_emu_api.h; this header exists so the wheel's compute API headers that include it
// (compute_kernel_api.h and the SFPU op headers) compile against the emulator's LLK layer.
#pragma once
#include "llk_emu_api.h"
