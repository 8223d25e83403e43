// Emulator copy of the wheel's internal/llk_metadata.h layout: the LLK operand metadata a Metal 2.0 binding token
// carries (format 0xFF = none; 16x16 faces, 2x2 of them by default).
#pragma once

#include <cstdint>

namespace binding_details {

struct LLKMetadata {
    static constexpr uint8_t kNoFormat = 0xFF;

    uint8_t format = kNoFormat;
    uint8_t face_r_dim = 16;
    uint8_t face_c_dim = 16;
    uint8_t num_faces_r_dim = 2;
    uint8_t num_faces_c_dim = 2;
};

}  // namespace binding_details
