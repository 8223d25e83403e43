// Emulator implementation of api/compute/eltwise_unary/exp.h (model: emu/compute_sfpu.h). The template parameter
// `approx` selects the approximate kernel (independent of the ComputeConfig's math_approx_mode, as upstream).
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "emu/compute_sfpu.h"

namespace ckernel {

enum class InputClamping : uint8_t { ClampToNegative = 1, None = 0 };

template <bool approx = false, uint32_t scale = 0x3F800000, InputClamping input_clamping = InputClamping::ClampToNegative,
          bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void exp_tile_init() {}

// DST[idst] = exp(scale * DST[idst]) (scale, a bf16 bit pattern, applies only when scale_en).
template <bool approx = false, bool scale_en = false, InputClamping input_clamping = InputClamping::ClampToNegative,
          int iterations = 8, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void exp_tile(uint32_t idst, VectorMode vector_mode = VectorMode::RC, uint16_t scale = p_sfpu::kCONST_1_FP16B) {
    static_assert(iterations == 8, "the emulator models exp_tile over whole faces (iterations == 8) only");
    const float s = scale_en ? emu::bf16_bits_to_f32(scale) : 1.0f;
    emu::sfpu_unary(idst, static_cast<uint8_t>(vector_mode), "exp_tile", [&](float x) {
        return emu::sfpu_exp(x * s, approx, input_clamping == InputClamping::ClampToNegative);
    });
}

template <bool approx = false, uint32_t scale = 0x3F800000, InputClamping input_clamping = InputClamping::ClampToNegative,
          bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void exp_packthread_tile_init() {}

template <bool approx = false, bool scale_en = false, InputClamping input_clamping = InputClamping::ClampToNegative,
          int iterations = 8, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void exp_packthread_tile(uint32_t idst, VectorMode vector_mode = VectorMode::RC,
                              uint16_t scale = p_sfpu::kCONST_1_FP16B) {
    exp_tile<approx, scale_en, input_clamping, iterations, is_fp32_dest_acc_en>(idst, vector_mode, scale);
}

}  // namespace ckernel
