// Vector unit (SFPU) operations of the emulated compute engine: they read DST tiles, compute in fp32 and write
// back with DST rounding (bf16 round-to-nearest-even when fp32_dest_acc_en is off; the upstream exp and recip
// kernels round explicitly the same way).
//
// vector_mode selects the faces processed (LLK _llk_math_eltwise_sfpu_apply_vector_mode_): RC all four faces,
// R faces 0 and 1 (rows 0-15), C faces 0 and 2 (columns 0-15), anything else face 0 only.
//
// exp: exact mode = std::exp (the silicon's non-approximate paths are bf16/fp32 accurate). Approximate mode with
// input clamping models the LLK's Schraudolph-style kernel: x clamped to >= -88.5, t = x * 256/ln2 + 32500.818359375
// rounded to an unsigned 16-bit integer, result bits = t << 15 (relative error about 2-4%, exact at the breakpoints).
// Approximate mode without clamping is modelled the same way without the clamp.
// recip: 1/x (exact then DST rounding) in every approximation mode.
#pragma once

#include <cmath>
#include <cstdint>

#include "emu/compute_state.h"
#include "emu/runtime.h"

namespace emu {

// Face mask from a ckernel::VectorMode value (None 0, R 1, C 2, RC 4, RC_custom 6).
inline uint32_t sfpu_face_mask(uint8_t vector_mode) {
    switch (vector_mode) {
        case 4: return 0xf;
        case 1: return 0x3;
        case 2: return 0x5;
        default: return 0x1;
    }
}

template <typename F>
inline void sfpu_unary(uint32_t idst, uint8_t vector_mode, const char* who, F f) {
    DstSection& d = dst_for_math(idst, who);
    uint32_t faces = sfpu_face_mask(vector_mode);
    float* t = d.tile[idst];
    for (uint32_t r = 0; r < 32; ++r)
        for (uint32_t c = 0; c < 32; ++c) {
            uint32_t face = (r / 16) * 2 + c / 16;
            if (!(faces & (1u << face))) continue;
            t[r * 32 + c] = dst_round(f(t[r * 32 + c]));
        }
    d.defined[idst] = true;
    count(Counter::SfpuTiles);
}

template <typename F>
inline void sfpu_binary(uint32_t i0, uint32_t i1, uint32_t iout, uint8_t vector_mode, const char* who, F f) {
    DstSection& d = dst_for_math(i0, who);
    dst_check_index(i1, who);
    dst_check_index(iout, who);
    uint32_t faces = sfpu_face_mask(vector_mode);
    for (uint32_t r = 0; r < 32; ++r)
        for (uint32_t c = 0; c < 32; ++c) {
            uint32_t face = (r / 16) * 2 + c / 16;
            if (!(faces & (1u << face))) continue;
            uint32_t i = r * 32 + c;
            d.tile[iout][i] = dst_round(f(d.tile[i0][i], d.tile[i1][i]));
        }
    d.defined[iout] = true;
    count(Counter::SfpuTiles);
}

inline float exp_approx_schraudolph(float x, bool clamp) {
    if (std::isnan(x)) return x;
    if (clamp && x < -88.5f) x = -88.5f;
    constexpr float kA = 256.0f * 1.4426950408889634f;
    constexpr float kBminusC = 32500.818359375f;
    float t = std::fma(x, kA, kBminusC);
    float rt = std::nearbyint(t);
    uint32_t u16 = rt <= 0.0f ? 0u : rt >= 65535.0f ? 65535u : static_cast<uint32_t>(rt);
    return bits_f32(u16 << 15);
}

inline float sfpu_exp(float x, bool approx, bool clamp) {
    if (approx) return exp_approx_schraudolph(x, clamp);
    return std::exp(x);
}

}  // namespace emu
