// Emulator implementation of api/compile_time_args.h: compile-time kernel arguments, with the wheel's names
// (kernel_compile_time_args, get_ct_arg, named_args_map, get_named_ct_arg; wheel api/compile_time_args.h:14-83).
// The kernel build passes -DKERNEL_COMPILE_TIME_ARGS=a,b,c (the descriptor's compile_time_args) and, when the
// descriptor has named args, force-includes named_ct_arg_map_generated.h, which defines
// KERNEL_COMPILE_TIME_ARG_MAP as {"name",v},... in ascending name order, as tt-metal's JIT build does.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

#include "emu/runtime.h"

#ifndef FORCE_INLINE
#define FORCE_INLINE inline __attribute__((always_inline))
#endif

template <class T, class... Ts>
FORCE_INLINE constexpr std::array<T, sizeof...(Ts)> make_array(Ts... values) {
    return {T(values)...};
}

#ifndef KERNEL_COMPILE_TIME_ARGS
#define KERNEL_COMPILE_TIME_ARGS
#endif

constexpr auto kernel_compile_time_args = make_array<std::uint32_t>(KERNEL_COMPILE_TIME_ARGS);

template <uint32_t Idx>
constexpr uint32_t get_ct_arg() {
    static_assert(Idx < kernel_compile_time_args.size(),
                  "get_compile_time_arg_val: index out of range of the kernel's compile_time_args");
    return kernel_compile_time_args[Idx];
}

#ifdef KERNEL_COMPILE_TIME_ARG_MAP
namespace {
constexpr std::pair<std::string_view, uint32_t> named_args_map[] = {KERNEL_COMPILE_TIME_ARG_MAP};
}

// The wheel ends an unknown name in __builtin_unreachable() ("compilation should fail" when the value is stored in a
// constexpr variable, as the wheel's documentation asks). Here the call to emu::fault makes it a non-constant
// expression (a compile error in a constexpr context) and, evaluated at run time, a kernel fault naming the argument.
constexpr uint32_t get_named_ct_arg(std::string_view name) {
    for (const auto& [arg_name, arg_value] : named_args_map) {
        if (name == arg_name) {
            return arg_value;
        }
    }
    ::emu::fault("get_named_compile_time_arg_val(\"%.*s\"): no named compile-time argument with this name",
                 int(name.size()), name.data());
}
#endif

#define get_compile_time_arg_val(arg_idx) get_ct_arg<arg_idx>()

#ifdef KERNEL_COMPILE_TIME_ARG_MAP
constexpr uint32_t get_named_compile_time_arg_val(std::string_view name) { return get_named_ct_arg(name); }
#endif
