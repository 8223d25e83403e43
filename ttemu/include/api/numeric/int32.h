// Emulator implementation of api/numeric/int32.h: int32 limits and "greater than" (wheel api/numeric/int32.h).
#pragma once

#include <cstdint>

inline constexpr int32_t NEG_INF_INT32 = static_cast<int32_t>(0x80000000u);
inline constexpr int32_t POS_INF_INT32 = 0x7FFFFFFF;
inline constexpr uint32_t INT32_SIGN_MASK = 0x80000000;

inline bool int32_greater(int32_t a, int32_t b) {
    if ((a ^ b) & INT32_SIGN_MASK) return (a & INT32_SIGN_MASK) == 0;
    return a > b;
}
