// Emulator stand-in for tt-llk's llk_lib/llk_defs.h (tt_llk_wormhole_b0), which tt-metal's JIT build puts on the
// include path of every RISC: data-movement kernels reach it through ttnn's kernel_lib (reduce_helpers_dataflow.hpp
// names ckernel::PoolType / ckernel::ReduceDim when it builds a reduce scaler tile).
//
// Outside a BRISC / NCRISC build (a compute kernel) this header forwards to the next llk_defs.h on the include path,
// the emulator's LLK layer (include_llk/); on BRISC / NCRISC it defines the enums itself, with tt-llk's values.
#pragma once

#if !defined(COMPILE_FOR_BRISC) && !defined(COMPILE_FOR_NCRISC) && __has_include_next(<llk_defs.h>)
#include_next <llk_defs.h>  // the compute build's LLK layer (include_llk/) has its own
#else
#include <cstdint>

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
}  // namespace ckernel
#endif
