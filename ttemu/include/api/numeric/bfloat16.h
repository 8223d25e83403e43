// Emulator implementation of api/numeric/bfloat16.h: bfloat16 constants, conversions (round-to-nearest-even and
// truncating) and the sign-magnitude "greater than" of two bfloat16 bit patterns (wheel api/numeric/bfloat16.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "internal/risc_attribs.h"

#ifndef FORCE_INLINE
#define FORCE_INLINE inline __attribute__((always_inline))
#endif

inline constexpr uint16_t NEG_INF_BFLOAT16 = 0xFF80;
inline constexpr uint16_t POS_INF_BFLOAT16 = 0x7F80;
inline constexpr uint16_t NAN_BFLOAT16 = 0x7FFF;
inline constexpr uint16_t BFLOAT16_SIGN_MASK = 0x8000;
inline constexpr uint16_t BFLOAT16_EXPONENT_MASK = 0x7F80;
inline constexpr uint16_t BFLOAT16_MANTISSA_MASK = 0x007F;
inline constexpr uint16_t BFLOAT16_MAGNITUDE_MASK = 0x7FFF;

FORCE_INLINE float bf16_to_fp32(std::uint16_t bf16) {
    const std::uint32_t bits = static_cast<std::uint32_t>(bf16) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Round to nearest even on the 16 dropped bits (NaN inputs are not special-cased, as in the wheel).
FORCE_INLINE std::uint16_t fp32_to_bf16(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

FORCE_INLINE std::uint16_t fp32_to_bf16_truncate(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return static_cast<std::uint16_t>(bits >> 16);
}

struct FloatBits {
    std::uint16_t high16;
    std::uint16_t low16;

    explicit FloatBits(float value) {
        std::uint32_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        high16 = static_cast<std::uint16_t>(bits >> 16);
        low16 = static_cast<std::uint16_t>(bits & 0xFFFFu);
    }
};

// a > b for bfloat16 bit patterns: differing signs -> a is greater iff a is positive; both negative -> the smaller
// pattern is greater; both positive -> the larger pattern is.
inline bool bfloat16_greater(uint16_t a, uint16_t b) {
    if ((a ^ b) & BFLOAT16_SIGN_MASK) return (a & BFLOAT16_SIGN_MASK) == 0;
    return (a & BFLOAT16_SIGN_MASK) ? a < b : a > b;
}
