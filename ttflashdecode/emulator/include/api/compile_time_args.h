// Emulator implementation of api/compile_time_args.h: compile-time kernel arguments.
// The kernel build passes -DKERNEL_COMPILE_TIME_ARGS=a,b,c (the descriptor's compile_time_args) and, when the
// descriptor has named args, -DKERNEL_COMPILE_TIME_ARG_MAP='{"name",v},...', as tt-metal's JIT build does.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

#ifndef KERNEL_COMPILE_TIME_ARGS
#define KERNEL_COMPILE_TIME_ARGS
#endif

namespace emu_ct {
template <class... Ts>
constexpr std::array<uint32_t, sizeof...(Ts)> make_args(Ts... v) {
    return {static_cast<uint32_t>(v)...};
}
inline constexpr auto args = make_args(KERNEL_COMPILE_TIME_ARGS);

template <uint32_t Idx>
constexpr uint32_t get() {
    static_assert(Idx < args.size(), "get_compile_time_arg_val: index out of range of the kernel's compile_time_args");
    return args[Idx];
}

#ifdef KERNEL_COMPILE_TIME_ARG_MAP
inline constexpr std::pair<std::string_view, uint32_t> named[] = {KERNEL_COMPILE_TIME_ARG_MAP};
constexpr uint32_t get_named(std::string_view name) {
    for (const auto& kv : named)
        if (kv.first == name) return kv.second;
    // Not a constant expression: an unknown name is a compile error.
    throw "get_named_compile_time_arg_val: no named compile-time argument with this name";
}
#endif
}  // namespace emu_ct

#define get_compile_time_arg_val(arg_idx) ::emu_ct::get<(arg_idx)>()

#ifdef KERNEL_COMPILE_TIME_ARG_MAP
constexpr uint32_t get_named_compile_time_arg_val(std::string_view name) { return ::emu_ct::get_named(name); }
#endif
