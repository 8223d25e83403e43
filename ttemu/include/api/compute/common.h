// Emulator implementation of api/compute/common.h: the compute API's common includes, plus kernel arguments.
// Runtime / compile-time argument access (get_arg_val, get_compile_time_arg_val, ...) is the runtime's: it comes from
// api/compile_time_args.h and emu/kernel_args.h when those exist.
#pragma once

#include "api/compute/common_globals.h"
#include "api/debug/assert.h"
#include "api/compute/reg_api.h"
#include "api/compute/pack.h"
#include "api/compute/reconfig_data_format.h"
#include "api/compute/cb_api.h"
#include "api/compute/compute_kernel_hw_startup.h"
// The LLK entry points kernels call directly (include_llk/, on compute kernels' include path).
#if __has_include("llk_emu_api.h")
#include "llk_emu_api.h"
#endif

#if __has_include("api/compile_time_args.h")
#include "api/compile_time_args.h"
#endif
#if __has_include("emu/kernel_args.h")
#include "emu/kernel_args.h"
#endif

// The calling core's logical coordinates, as tt-metal's api/compute/common.h gives a compute kernel (the firmware's
// my_logical_x_ / my_logical_y_; relative = absolute: the emulator has no sub-devices).
inline uint8_t get_absolute_logical_x() { return static_cast<uint8_t>(emu::my_logical_x()); }
inline uint8_t get_absolute_logical_y() { return static_cast<uint8_t>(emu::my_logical_y()); }
inline uint8_t get_relative_logical_x() { return static_cast<uint8_t>(emu::my_logical_x()); }
inline uint8_t get_relative_logical_y() { return static_cast<uint8_t>(emu::my_logical_y()); }
