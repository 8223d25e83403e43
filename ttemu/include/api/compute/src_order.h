// Emulator implementation of api/compute/src_order.h: how (icb0, icb1) map onto SrcA / SrcB.
#pragma once

#include <cstdint>

namespace ckernel {

// Regular: icb0 -> SrcA, icb1 -> SrcB (every op but matmul). Reverse: icb0 -> SrcB, icb1 -> SrcA (matmul).
enum class SrcOrder : std::uint8_t { Regular = 0, Reverse = 1 };

}  // namespace ckernel
