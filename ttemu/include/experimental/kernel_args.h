// Emulator implementation of experimental/kernel_args.h: the Metal 2.0 named-argument accessors (wheel
// experimental/kernel_args.h:130-173). RtaArg / CrtaArg hold the byte offset of a runtime / common runtime argument
// in the kernel's argument buffer, CtaVal a compile-time value; get_arg() reads them (uint32_t only, as there). The
// constants themselves (args::name) are generated per kernel by tt-metal's ProgramSpec host API
// (kernel_args_generated.h), which ttnn's ProgramDescriptor does not reach.
#pragma once

#include <cstdint>

#ifdef COMPILE_FOR_TRISC
#include "api/compute/common.h"
#endif
#include "emu/kernel_args.h"

#ifndef FORCE_INLINE
#define FORCE_INLINE inline __attribute__((always_inline))
#endif

#define TT_KERNEL static FORCE_INLINE

namespace experimental {

template <typename T>
struct RtaArg {
    uint32_t byte_offset;
};

template <typename T>
struct CrtaArg {
    uint32_t byte_offset;
};

template <typename T>
struct CtaVal {
    T value;
};

template <typename T>
FORCE_INLINE T get_arg(RtaArg<T> arg) {
    static_assert(sizeof(T) == 4, "Only uint32_t args are currently supported.");
    return get_arg_val<T>(int(arg.byte_offset / sizeof(uint32_t)));
}

template <typename T>
FORCE_INLINE T get_arg(CrtaArg<T> arg) {
    static_assert(sizeof(T) == 4, "Only uint32_t args are currently supported.");
    return get_common_arg_val<T>(int(arg.byte_offset / sizeof(uint32_t)));
}

template <typename T>
FORCE_INLINE constexpr T get_arg(CtaVal<T> arg) {
    return arg.value;
}

}  // namespace experimental
