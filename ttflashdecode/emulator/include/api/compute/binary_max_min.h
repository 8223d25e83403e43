// Emulator implementation of api/compute/binary_max_min.h (float variants): DST[odst] = max/min(DST[idst0],
// DST[idst1]) on the SFPU.
#pragma once

#include <algorithm>
#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_sfpu.h"

namespace ckernel {

ALWI void binary_max_tile_init() {}
ALWI void binary_min_tile_init() {}

ALWI void binary_max_tile(uint32_t idst0, uint32_t idst1, uint32_t odst, VectorMode vector_mode = VectorMode::RC) {
    emu::sfpu_binary(idst0, idst1, odst, static_cast<uint8_t>(vector_mode), "binary_max_tile",
                     [](float a, float b) { return std::max(a, b); });
}

ALWI void binary_min_tile(uint32_t idst0, uint32_t idst1, uint32_t odst, VectorMode vector_mode = VectorMode::RC) {
    emu::sfpu_binary(idst0, idst1, odst, static_cast<uint8_t>(vector_mode), "binary_min_tile",
                     [](float a, float b) { return std::min(a, b); });
}

}  // namespace ckernel
