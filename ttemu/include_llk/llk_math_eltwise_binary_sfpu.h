// Emulator's tt-llk llk_math_eltwise_binary_sfpu.h: binary SFPU op init; the address modifiers as tt-llk's
// eltwise_binary_sfpu_configure_addrmod (ADDR_MOD_6 steps Dst by 2 rows for the ops that store through it).
#pragma once

#include "llk_math_eltwise_unary_sfpu.h"

template <SfpuType sfpu_op>
inline void eltwise_binary_sfpu_configure_addrmod() {
    ckernel::addr_mod_t{.srca = {.incr = 0}, .srcb = {.incr = 0}, .dest = {.incr = 0}}.set(ckernel::ADDR_MOD_7);
    if constexpr (sfpu_op == SfpuType::mul_int32 || sfpu_op == SfpuType::mul_uint16 || sfpu_op == SfpuType::max ||
                  sfpu_op == SfpuType::min || sfpu_op == SfpuType::max_int32 || sfpu_op == SfpuType::min_int32 ||
                  sfpu_op == SfpuType::max_uint32 || sfpu_op == SfpuType::min_uint32 || sfpu_op == SfpuType::lt_int ||
                  sfpu_op == SfpuType::gt_int || sfpu_op == SfpuType::le_int || sfpu_op == SfpuType::ge_int ||
                  sfpu_op == SfpuType::eq_int || sfpu_op == SfpuType::ne_int || sfpu_op == SfpuType::lt ||
                  sfpu_op == SfpuType::gt || sfpu_op == SfpuType::le || sfpu_op == SfpuType::ge ||
                  sfpu_op == SfpuType::eq || sfpu_op == SfpuType::ne)
        ckernel::addr_mod_t{.srca = {.incr = 0}, .srcb = {.incr = 0}, .dest = {.incr = 2}}.set(ckernel::ADDR_MOD_6);
}

template <SfpuType sfpu_op>
inline void _llk_math_eltwise_binary_sfpu_init_() {
    emu::timing_config(emu::kLaneMath);
    ckernel::sfpu::_init_sfpu_config_reg();
    eltwise_binary_sfpu_configure_addrmod<sfpu_op>();
    ckernel::math::reset_counters(ckernel::p_setrwc::SET_ABD_F);
}
