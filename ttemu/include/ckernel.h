// Emulator stand-in for tt-llk's ckernel.h (tt_llk_wormhole_b0/common/inc) as data-movement kernels see it.
//
// tt-metal's JIT build puts tt-llk's common/inc on every RISC's include path, and some data-movement helpers include
// ckernel.h for its memory-ordering primitives (ttnn's data_movement/common/kernels/common.hpp and
// kernel_helper_functions/pad_tile.hpp drain their L1 stores with ckernel::load_blocking). Outside a BRISC / NCRISC
// build this header only forwards to the compute build's LLK layer (the next ckernel.h on the include path,
// include_llk/); on BRISC / NCRISC it provides the data-movement subset: load_blocking / store_blocking (a load or store that completes before the
// RISC goes on: a sequentially consistent fence here, since the emulator's RISCs are host threads sharing L1) and the
// LLK enums (ckernel.h includes llk_defs.h). A data-movement kernel that uses anything else of ckernel.h (the TRISC
// mailboxes, the instruction buffer) fails to compile rather than run something the emulator does not model.
#pragma once

#if !defined(COMPILE_FOR_BRISC) && !defined(COMPILE_FOR_NCRISC) && __has_include_next(<ckernel.h>)
#include_next <ckernel.h>
#else
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "internal/risc_attribs.h"
#include "llk_defs.h"

namespace ckernel {

// A load that completes before the RISC continues (tt-llk: lw/lhu then a dependent instruction, plus a compiler
// memory clobber).
template <typename T, typename = std::enable_if_t<std::is_trivially_copyable_v<T>>>
inline T load_blocking(volatile T* ptr) {
    static_assert(sizeof(T) == sizeof(std::uint16_t) || sizeof(T) == sizeof(std::uint32_t),
                  "load_blocking: operand must be 16-bit or 32-bit");
    T val = *ptr;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return val;
}

// A store that completes before the RISC continues (tt-llk: sw, then lw of the same address and a dependent
// instruction).
template <typename T, typename U,
          typename = std::enable_if_t<std::is_trivially_copyable_v<T> && std::is_trivially_assignable_v<T&, U>>>
inline void store_blocking(volatile T* ptr, U&& val) {
    static_assert(sizeof(T) == sizeof(std::uint32_t), "store_blocking: operand must be 32-bit");
    *ptr = static_cast<T>(std::forward<U>(val));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

}  // namespace ckernel
#endif
