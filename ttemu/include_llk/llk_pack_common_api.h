// Emulator: the wheel's llk_pack_common_api.h (unpack / pack LLK layer) is modelled at the compute API level (include/api/compute,
// emu/compute_unpack.h, emu/compute_pack.h) and by llk_emu_api.h; this header lets the wheel's compute API
// headers that include it compile against the emulator's LLK layer.
#pragma once
#include "llk_emu_api.h"
