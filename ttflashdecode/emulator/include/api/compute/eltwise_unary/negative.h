// Emulator implementation of api/compute/eltwise_unary/negative.h: DST[idst] = -DST[idst].
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "emu/compute_sfpu.h"

namespace ckernel {

ALWI void negative_tile_init() {}

ALWI void negative_tile(uint32_t idst) {
    emu::sfpu_unary(idst, static_cast<uint8_t>(VectorMode::RC), "negative_tile", [](float x) { return -x; });
}

}  // namespace ckernel
