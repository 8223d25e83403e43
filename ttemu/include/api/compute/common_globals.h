// Emulator implementation of api/compute/common_globals.h: macros, the compute kernel's compile-time configuration
// and the LLK enums (tt-llk llk_defs.h values) that compute kernels name.
//
// One host thread runs the unpack, math and pack TRISC programs of a core as one program, so UNPACK(x), MATH(x)
// and PACK(x) all expand to x.
//
// Compile-time configuration. On silicon the JIT build generates DST_ACCUM_MODE, APPROX, MATH_FIDELITY and
// DST_SYNC_MODE from the program's ComputeConfig. The emulator's kernel build passes them as
//   -DEMU_DST_ACCUM_MODE=<fp32_dest_acc_en 0/1> -DEMU_MATH_APPROX_MODE=<0/1> -DEMU_MATH_FIDELITY=<0|2|3|4>
//   -DEMU_DST_FULL_SYNC_EN=<0/1>
// (defaults: 0, 0, 4, 0); compute_kernel_hw_startup checks them against the runtime's emu::compute_config().
#pragma once

#include <cstdint>

#include "emu/runtime.h"
#include "hostdevcommon/kernel_structs.h"

#define ALWI inline __attribute__((always_inline))
#ifndef FORCE_INLINE
#define FORCE_INLINE inline __attribute__((always_inline))
#endif
#ifndef tt_l1_ptr
#define tt_l1_ptr
#endif

#define MATH(...) __VA_ARGS__
#define PACK(...) __VA_ARGS__
#define UNPACK(...) __VA_ARGS__

#ifndef EMU_DST_ACCUM_MODE
#define EMU_DST_ACCUM_MODE 0
#endif
#ifndef EMU_MATH_APPROX_MODE
#define EMU_MATH_APPROX_MODE 0
#endif
#ifndef EMU_MATH_FIDELITY
#define EMU_MATH_FIDELITY 4
#endif
#ifndef EMU_DST_FULL_SYNC_EN
#define EMU_DST_FULL_SYNC_EN 0
#endif

// tt::DataFormat (tensix_types.h) is a global enum on silicon; same numeric values here.
using DataFormat = ::emu::DataFormat;

namespace ckernel {

enum class VectorMode : std::uint8_t { None = 0, R = 1, C = 2, RC = 4, RC_custom = 6, Invalid = 0xFF };
enum class ReduceDim : std::uint8_t { REDUCE_ROW, REDUCE_COL, REDUCE_SCALAR };
enum class PoolType : std::uint8_t { SUM, AVG, MAX, MIN };
enum class DataCopyType : std::uint8_t { A2D, B2D };
enum class EltwiseBinaryType : std::uint8_t { ELWMUL, ELWDIV, ELWADD, ELWSUB, ELWLESS };
enum class EltwiseBinaryReuseDestType { NONE = 0, DEST_TO_SRCA = 1, DEST_TO_SRCB = 2 };
enum class DstSync : std::uint8_t { SyncHalf = 0, SyncFull = 1 };
enum class BroadcastType : std::uint8_t { NONE = 0x0, COL = 0x1, ROW = 0x2, SCALAR = 0x3 };
enum class Transpose : std::uint8_t { None = 0, IntraFace = 1, InterFace = 2, Both = 3 };
enum class MathFidelity : std::uint8_t { LoFi = 0, HiFi2 = 2, HiFi3 = 3, HiFi4 = 4 };

namespace p_sfpu {
constexpr std::uint16_t kCONST_1_FP16B = 0x3F80;
}

}  // namespace ckernel

constexpr bool DST_ACCUM_MODE = EMU_DST_ACCUM_MODE != 0;
constexpr bool APPROX = EMU_MATH_APPROX_MODE != 0;
constexpr ckernel::MathFidelity MATH_FIDELITY = static_cast<ckernel::MathFidelity>(EMU_MATH_FIDELITY);
// A macro, as the JIT build's chlkc_descriptors.h defines it (genfiles.cpp emit_compute_scalar_descriptors:
// "#define DST_SYNC_MODE DstSync::Sync{Full|Half}"); ttnn's kernel_lib tests `#if defined(DST_SYNC_MODE)`.
#define DST_SYNC_MODE (EMU_DST_FULL_SYNC_EN ? ckernel::DstSync::SyncFull : ckernel::DstSync::SyncHalf)

// Compute kernels call the compute API unqualified (tt-metal's compute firmware brings ckernel into scope).
using namespace ckernel;
