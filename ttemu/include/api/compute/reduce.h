// Emulator implementation of api/compute/reduce.h (numerics and scaler model: emu/compute_fpu.h fpu_reduce).
// reduce_tile accumulates into DST (SUM/AVG add, MAX takes the max with DST's current value), so a row of tiles
// can be reduced into one DST tile. After reduce_init the packer zeroes everything but the result (column 0 for
// REDUCE_ROW, row 0 for REDUCE_COL, [0][0] for REDUCE_SCALAR) until reduce_uninit.
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_fpu.h"
#include "emu/compute_state.h"

namespace ckernel {

namespace detail {
constexpr emu::ReduceOp to_emu_reduce_op(PoolType t) {
    return t == PoolType::SUM ? emu::ReduceOp::Sum : t == PoolType::AVG ? emu::ReduceOp::Avg : emu::ReduceOp::Max;
}
constexpr emu::ReduceAxis to_emu_reduce_axis(ReduceDim d) {
    return d == ReduceDim::REDUCE_ROW ? emu::ReduceAxis::Row
           : d == ReduceDim::REDUCE_COL ? emu::ReduceAxis::Col
                                        : emu::ReduceAxis::Scalar;
}
}  // namespace detail

template <PoolType reduce_type, ReduceDim reduce_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void reduce_init(std::uint32_t icb, std::uint32_t icb_scaler, std::uint32_t ocb,
                      std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath | emu::kLanePack);
    static_assert(reduce_type != PoolType::MIN, "PoolType::MIN reduce is not modelled by the emulator");
    (void)icb;
    (void)icb_scaler;
    (void)ocb;
    (void)call_line;
    emu::cstate().reduce_mask = reduce_dim == ReduceDim::REDUCE_ROW   ? emu::ReduceMask::Row
                                : reduce_dim == ReduceDim::REDUCE_COL ? emu::ReduceMask::Col
                                                                      : emu::ReduceMask::Scalar;
}

ALWI void reduce_uninit(std::uint32_t icb = 0) {
    (void)icb;
    emu::cstate().reduce_mask = emu::ReduceMask::None;
}

template <PoolType reduce_type, ReduceDim reduce_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void reduce_tile(std::uint32_t icb, std::uint32_t icb_scaler, std::uint32_t itile, std::uint32_t itile_scaler,
                      std::uint32_t idst) {
    static_assert(reduce_type != PoolType::MIN, "PoolType::MIN reduce is not modelled by the emulator");
    emu::fpu_reduce(icb, icb_scaler, itile, itile_scaler, idst, detail::to_emu_reduce_op(reduce_type),
                    detail::to_emu_reduce_axis(reduce_dim), "reduce_tile");
}

template <PoolType reduce_type, ReduceDim reduce_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void reduce_block(std::uint32_t icb, std::uint32_t icb_scaler, std::uint32_t start_itile,
                       std::uint32_t itile_scaler, std::uint32_t start_idst, std::uint32_t ntiles) {
    for (std::uint32_t i = 0; i < ntiles; ++i)
        reduce_tile<reduce_type, reduce_dim, is_fp32_dest_acc_en>(icb, icb_scaler, start_itile + i, itile_scaler,
                                                                  start_idst + i);
}

}  // namespace ckernel
