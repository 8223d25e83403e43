// Emulator's tt-llk llk_defs.h for compute kernels: the LLK enums (defined with the compute globals in
// api/compute/common_globals.h) plus the packer ReLU configuration, PackMode and the unpack-to-dest flags.
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"

namespace ckernel {

enum class ReluType : std::uint8_t { NO_RELU = 0, ZERO_RELU, MIN_THRESHOLD_RELU, MAX_THRESHOLD_RELU };

// Packer ReLU config: mode + 16-bit threshold (a bf16 bit pattern).
struct ReluConfig {
    static constexpr ReluConfig none() { return {ReluType::NO_RELU}; }
    static constexpr ReluConfig zero() { return {ReluType::ZERO_RELU}; }
    static constexpr ReluConfig min_threshold(std::uint32_t t) { return {ReluType::MIN_THRESHOLD_RELU, t}; }
    static constexpr ReluConfig max_threshold(std::uint32_t t) { return {ReluType::MAX_THRESHOLD_RELU, t}; }
    static constexpr ReluConfig from_packed(std::uint32_t packed) {
        return {static_cast<ReluType>(packed & 0x3), (packed >> 16) & 0xFFFF};
    }
    constexpr ReluType get_mode() const { return mode; }
    constexpr std::uint32_t get_threshold() const { return threshold; }

   private:
    constexpr ReluConfig(ReluType m, std::uint32_t t = 0) : mode(m), threshold(t) {}
    ReluType mode = ReluType::NO_RELU;
    std::uint32_t threshold = 0;
};

enum class PackMode : std::uint8_t { Default = 0, Untilize = 1, Tilize = 2 };

constexpr bool UnpackToDestEn = true;
constexpr bool UnpackToDestDis = false;

constexpr std::uint32_t MAX_FACE_R_DIM = 16;

// tt-llk TensorShape: the geometry of an operand's tile (face rows, face columns, faces per row / column).
struct TensorShape {
    std::uint8_t face_r_dim = 16;
    std::uint8_t face_c_dim = 16;
    std::uint8_t num_faces_r_dim = 2;
    std::uint8_t num_faces_c_dim = 2;
    constexpr std::uint32_t total_num_faces() const { return num_faces_r_dim * num_faces_c_dim; }
};
constexpr TensorShape tensor_shape_from_num_faces(std::uint32_t face_r_dim, std::uint32_t num_faces) {
    return TensorShape{static_cast<std::uint8_t>(face_r_dim), 16, static_cast<std::uint8_t>(num_faces > 2 ? 2 : 1),
                       static_cast<std::uint8_t>(num_faces > 1 ? 2 : 1)};
}

}  // namespace ckernel
