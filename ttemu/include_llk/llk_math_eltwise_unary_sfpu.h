// Emulator's tt-llk llk_math_eltwise_unary_sfpu.h: unary SFPU op init. The generic init configures ADDR_MOD_7 with
// no auto-increment (tt-llk eltwise_unary_sfpu_configure_addrmod) and resets the counters.
#pragma once

#include <cstdint>

#include "ckernel.h"
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_sfpu_types.h"

// The address modifiers an SFPU op's kernel relies on (tt-llk eltwise_unary_sfpu_configure_addrmod): ADDR_MOD_7
// without increment for every op; ADDR_MOD_6 stepping Dst by 32 rows (topk) or 2 rows (the ops whose kernels
// store through ADDR_MOD_2, i.e. 6 after set_addr_mod_base).
template <SfpuType sfpu_op>
inline void eltwise_unary_sfpu_configure_addrmod() {
    ckernel::addr_mod_t{.srca = {.incr = 0}, .srcb = {.incr = 0}, .dest = {.incr = 0}}.set(ckernel::ADDR_MOD_7);
    if constexpr (sfpu_op == SfpuType::topk_local_sort)
        ckernel::addr_mod_t{.srca = {.incr = 0}, .srcb = {.incr = 0}, .dest = {.incr = 32}}.set(ckernel::ADDR_MOD_6);
    if constexpr (sfpu_op == SfpuType::typecast || sfpu_op == SfpuType::unary_max || sfpu_op == SfpuType::unary_min ||
                  sfpu_op == SfpuType::unary_max_int32 || sfpu_op == SfpuType::unary_min_int32 ||
                  sfpu_op == SfpuType::unary_max_uint32 || sfpu_op == SfpuType::unary_min_uint32 ||
                  sfpu_op == SfpuType::signbit || sfpu_op == SfpuType::not_equal_zero ||
                  sfpu_op == SfpuType::equal_zero || sfpu_op == SfpuType::less_than_zero ||
                  sfpu_op == SfpuType::greater_than_equal_zero || sfpu_op == SfpuType::greater_than_zero ||
                  sfpu_op == SfpuType::less_than_equal_zero)
        ckernel::addr_mod_t{.srca = {.incr = 0}, .srcb = {.incr = 0}, .dest = {.incr = 2}}.set(ckernel::ADDR_MOD_6);
}

template <SfpuType sfpu_op>
inline void _llk_math_eltwise_unary_sfpu_init_() {
    emu::timing_config(emu::kLaneMath);
    ckernel::sfpu::_init_sfpu_config_reg();
    eltwise_unary_sfpu_configure_addrmod<sfpu_op>();
    ckernel::math::reset_counters(ckernel::p_setrwc::SET_ABD_F);
}

inline void _llk_math_eltwise_unary_sfpu_init_once_() {
    ckernel::addr_mod_t{.srca = {.incr = 0}, .srcb = {.incr = 0}, .dest = {.incr = 0}}.set(ckernel::ADDR_MOD_7);
}
