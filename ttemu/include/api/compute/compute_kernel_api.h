// Emulator implementation of api/compute/compute_kernel_api.h: the umbrella of the compute API, plus the SFPU ops
// the wheel's umbrella defines itself (log). Those call the wheel's SFPU kernels (ckernel_sfpu_*.h) through the
// LLK SFPU macros, as the wheel's header does, on the emulator's LLK layer and host SFPI (include_llk/).
#pragma once

#include <cstdint>

#include "api/compute/common.h"

#if __has_include("llk_emu_api.h")
#include "ckernel_sfpu_abs.h"
#include "ckernel_sfpu_log.h"
#include "ckernel_sfpu_sign.h"
#include "ckernel_sfpu_square.h"
#include "ckernel_sfpu_unary_power.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"

namespace ckernel {

// DST[idst] = ln(DST[idst]) (the wheel's calculate_log).
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void log_tile_init() {
    MATH(SFPU_UNARY_INIT_FN(log, sfpu::log_init, (APPROX, fast_and_approx, is_fp32_dest_acc_en)));
}
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void log_tile(uint32_t idst) {
    MATH(SFPU_UNARY_CALL(DST_SYNC_MODE, is_fp32_dest_acc_en, calculate_log,
                         (APPROX, fast_and_approx, false /* HAS_BASE_SCALING */, is_fp32_dest_acc_en), idst,
                         VectorMode::RC, 0));
}

// |x|, sign(x), x*x, x^p (the wheel's calculate_abs / calculate_sign / calculate_square / calculate_unary_power /
// calculate_unary_power_iterative), called as the wheel's compute_kernel_api.h calls them.
ALWI void abs_tile(uint32_t idst) {
    MATH(SFPU_UNARY_CALL(DST_SYNC_MODE, DST_ACCUM_MODE, calculate_abs, (APPROX), idst, VectorMode::RC));
}
ALWI void abs_tile_init() { MATH(SFPU_UNARY_INIT(abs)); }
ALWI void sign_tile(uint32_t idst) {
    MATH(SFPU_UNARY_CALL(DST_SYNC_MODE, DST_ACCUM_MODE, calculate_sign, (APPROX), idst, VectorMode::RC,
                         1 /* exponent_size_8 */));
}
ALWI void sign_tile_init() { MATH(SFPU_UNARY_INIT(sign)); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void square_tile(uint32_t idst) {
    MATH(SFPU_UNARY_CALL(DST_SYNC_MODE, is_fp32_dest_acc_en, calculate_square, (APPROX, is_fp32_dest_acc_en), idst,
                         VectorMode::RC));
}
ALWI void square_tile_init() { MATH(SFPU_UNARY_INIT(square)); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void power_tile(uint32_t idst, uint32_t param0) {
    MATH(SFPU_UNARY_CALL(DST_SYNC_MODE, is_fp32_dest_acc_en, calculate_unary_power,
                         (APPROX, is_fp32_dest_acc_en, 8 /* ITERATIONS */), idst, VectorMode::RC, param0));
}
ALWI void power_tile_init() {
    MATH(llk_math_eltwise_unary_sfpu_init<SfpuType::power>(ckernel::sfpu::sfpu_unary_pow_init));
}
ALWI void power_iterative_tile(uint32_t idst, uint32_t param0) {
    MATH(SFPU_UNARY_CALL(DST_SYNC_MODE, DST_ACCUM_MODE, calculate_unary_power_iterative, (APPROX, 8 /* ITERATIONS */),
                         idst, VectorMode::RC, param0));
}
ALWI void power_iterative_tile_init() { MATH(SFPU_UNARY_INIT(power)); }

// SFPU reduce (the wheel's calculate_reduce in ckernel_sfpu_reduce.h, for Int32 / UInt and accurate-fp32 reductions)
// is not modelled: reaching it faults with its name instead of computing something else. The FPU reduce
// (reduce_tile) is; compute_kernel_lib::reduce takes the SFPU path only for those formats.
template <PoolType pool_type, DataFormat format, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sfpu_reduce_init() {
    emu::fault("sfpu_reduce_init: the SFPU reduce (ckernel_sfpu_reduce.h) is not modelled by the emulator");
}
template <PoolType pool_type, DataFormat format, ReduceDim reduce_dim = ReduceDim::REDUCE_COL,
          bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sfpu_reduce(uint32_t idst, uint32_t ct_dim = 1, uint32_t rt_dim = 1) {
    (void)idst;
    (void)ct_dim;
    (void)rt_dim;
    emu::fault("sfpu_reduce: the SFPU reduce (ckernel_sfpu_reduce.h) is not modelled by the emulator");
}

}  // namespace ckernel
#endif
