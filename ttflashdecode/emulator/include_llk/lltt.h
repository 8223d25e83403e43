// Emulator's lltt.h (sfpi): the replay buffer helpers over the REPLAY model of ckernel_ops.h.
#pragma once
#include <cstdint>
#include "ckernel_ops.h"
namespace lltt {
inline void record(uint32_t start, uint32_t len) { ::emu::sfpu::replay(start, len, 0, 1); }  // load only
inline void replay(uint32_t start, uint32_t len) { ::emu::sfpu::replay(start, len, 0, 0); }
}  // namespace lltt
