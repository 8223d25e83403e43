// Emulator's tt-llk llk_math_eltwise_ternary_sfpu.h: ternary SFPU op init, address modifiers as tt-llk's
// eltwise_ternary_sfpu_configure_addrmod (where: ADDR_MOD_6 steps Dst by 2 rows).
#pragma once

#include "llk_math_eltwise_unary_sfpu.h"

template <SfpuType sfpu_op>
inline void _llk_math_eltwise_ternary_sfpu_init_() {
    emu::timing_config(emu::kLaneMath);
    ckernel::sfpu::_init_sfpu_config_reg();
    ckernel::addr_mod_t{.srca = {.incr = 0}, .srcb = {.incr = 0}, .dest = {.incr = 0}}.set(ckernel::ADDR_MOD_7);
    if constexpr (sfpu_op == SfpuType::where)
        ckernel::addr_mod_t{.srca = {.incr = 0}, .srcb = {.incr = 0}, .dest = {.incr = 2}}.set(ckernel::ADDR_MOD_6);
    ckernel::math::reset_counters(ckernel::p_setrwc::SET_ABD_F);
}
