// Emulator implementation of api/numeric/float32.h: float32 bit-pattern constants and "greater than" (NaN is never
// greater, +0 and -0 are equal, otherwise sign-magnitude order) as the wheel's api/numeric/float32.h.
#pragma once

#include <cstdint>

inline constexpr uint32_t NEG_INF_FLOAT32 = 0xFF800000;
inline constexpr uint32_t POS_INF_FLOAT32 = 0x7F800000;
inline constexpr uint32_t NAN_FLOAT32 = 0x7FFFFFFF;
inline constexpr uint32_t FLOAT32_SIGN_MASK = 0x80000000;
inline constexpr uint32_t FLOAT32_EXPONENT_MASK = 0x7F800000;
inline constexpr uint32_t FLOAT32_MANTISSA_MASK = 0x007FFFFF;
inline constexpr uint32_t FLOAT32_MAGNITUDE_MASK = 0x7FFFFFFF;

inline bool float32_greater(uint32_t a, uint32_t b) {
    auto is_nan = [](uint32_t v) {
        return (v & FLOAT32_EXPONENT_MASK) == FLOAT32_EXPONENT_MASK && (v & FLOAT32_MANTISSA_MASK) != 0;
    };
    if (is_nan(a) || is_nan(b)) return false;
    if ((a & FLOAT32_MAGNITUDE_MASK) == 0 && (b & FLOAT32_MAGNITUDE_MASK) == 0) return false;
    if ((a ^ b) & FLOAT32_SIGN_MASK) return (a & FLOAT32_SIGN_MASK) == 0;
    return (a & FLOAT32_SIGN_MASK) ? a < b : a > b;
}
