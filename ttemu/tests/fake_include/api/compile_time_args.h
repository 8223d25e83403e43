// Test-only stand-in for the runtime's api/compile_time_args.h (used by the fake-runtime unit tests):
// compile-time args come from -DKERNEL_COMPILE_TIME_ARGS=a,b,c as in tt-metal.
#pragma once
#include <cstdint>
#ifndef KERNEL_COMPILE_TIME_ARGS
#define KERNEL_COMPILE_TIME_ARGS 0
#endif
constexpr uint32_t emu_fake_ct_args[] = {KERNEL_COMPILE_TIME_ARGS};
#define get_compile_time_arg_val(i) (emu_fake_ct_args[(i)])
