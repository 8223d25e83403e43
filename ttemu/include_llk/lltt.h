// Emulator's lltt.h (sfpi): the replay buffer helpers over the REPLAY model of ckernel_ops.h. record<E> loads the
// next `length` instructions into slots start..; with Exec they also execute while loading (default: NoExec).
#pragma once

#include <cstdint>

#include "ckernel_ops.h"

namespace lltt {
enum ExecBool : bool { NoExec, Exec };

template <ExecBool E = NoExec>
inline void record(unsigned start, unsigned length) {
    ::emu::sfpu::replay(start, length, E == Exec ? 1u : 0u, 1u);
}
inline void replay(unsigned start, unsigned length) { ::emu::sfpu::replay(start, length, 0u, 0u); }
}  // namespace lltt
