// Runtime arguments of the calling kernel (get_arg_val / get_common_arg_val and their addresses), shared by the
// data-movement and compute API headers. Arguments live in the core's L1 (kernel-config region) as on silicon;
// an index past the number of args set for this kernel on this core is reported as a kernel fault.
#pragma once

#include <cstdint>
#include <cstring>

#include "emu/runtime.h"

// The runtime looks the entry point up by name in every kernel library.
__attribute__((visibility("default"))) void kernel_main();

inline uintptr_t get_arg_addr(int arg_idx) { return emu::arg_addr(static_cast<uint32_t>(arg_idx)); }
inline uintptr_t get_common_arg_addr(int arg_idx) { return emu::common_arg_addr(static_cast<uint32_t>(arg_idx)); }

template <typename T>
inline T get_arg_val(int arg_idx) {
    static_assert(sizeof(T) == 4, "only 4-byte runtime args are supported");
    T v;
    std::memcpy(&v, reinterpret_cast<const void*>(get_arg_addr(arg_idx)), 4);
    return v;
}

template <typename T>
inline T get_common_arg_val(int arg_idx) {
    static_assert(sizeof(T) == 4, "only 4-byte runtime args are supported");
    T v;
    std::memcpy(&v, reinterpret_cast<const void*>(get_common_arg_addr(arg_idx)), 4);
    return v;
}
