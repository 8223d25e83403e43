// Blackhole Vector Unit checks: one tile (float32 CB -> fp32 DST) through a sequence of Blackhole SFPU instructions
// (issued with the TTI_* macros as the Blackhole LLK issues them), run by the LLK SFPU frame, packed to a float32
// CB. Built with ARCH_BLACKHOLE against the wheel's Blackhole LLK trees. Compile-time arg 0 selects the sequence
// (x = the DST datum, c = 0.5):
//   0: SFPARECIP RECIP x                               1: SFPARECIP EXP x
//   2: SFPARECIP COND_RECIP (VB = x, VD holds x)       3: (SFPGT x > c, SET_VD) & 1.0 by SFPAND USE_VB
//   4: (SFPLE x <= c, SET_VD) & 2.0 by SFPAND USE_VB   5: SFPOR USE_VB: x | sign bit, into a register holding 3.0
//   6: SFPGT x > c SET_CC, then 7.0 in the flagged lanes
//   7: flags = x < 0, pushed; SFPGT x > c MUTATE_STACK | MUTATE_OR; pop; 7.0 in the flagged lanes
//   8: SFPMAD NEGATE_VA | NEGATE_VC: (-x) * c + (-2.0)
//   9: SFPMAD INDIRECT_VD (LReg[7] = 2): x * c lands in LReg[2], not in LReg[3] (the named VD, holding 5.0);
//      then LReg[2] - LReg[3] (NEGATE_VC)
//  10: SFPMAD x * 2^-126: a denormal product, flushed to zero with x's sign
//  11: SFPLE x <= c SET_CC, then 7.0 in the flagged lanes
//  12: SFPSHFT ARG_IMM | ARG_IMM_USE_VC: x's bits >> 16 (logical) into a register holding 3.0, then | 1.0's bits
//  13: SFPSHFT ARG_IMM | ARITHMETIC: x's bits >> 1, arithmetic
//  14: SFPCAST INT32_ABS of x's bits      15: SFPCAST INT32_SM32 of x's bits
//  16: SFPADDI 1.0 NEGATE_VC | INDIRECT_VD (LReg[7] = 2): 1.0 - x lands in LReg[2]; LReg[0] keeps x
//  17: SFPMULI 0.5 NEGATE_VC: 0.5 * -x
// Sequences 12-15 store with INT32 (no float conversion on the way to DST).
// CBs: in = 0, out = 16.
#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/tile_move_copy.h"
#include "llk_math_eltwise_unary_sfpu_params.h"
#include "sfpi.h"

using namespace ckernel;

constexpr uint32_t kGtSetCC = 1, kMutateStack = 2, kMutateOr = 4, kSetVD = 8;

template <int OP>
void body() {
    for (int d = 0; d < 8; d++) {
        TTI_SFPLOAD(p_sfpu::LREG0, 0, ADDR_MOD_7, 0);
        TTI_SFPLOADI(p_sfpu::LREG1, sfpi::SFPLOADI_MOD0_FLOATB, 0x3f00);  // c = 0.5
        uint32_t out = p_sfpu::LREG0;
        if constexpr (OP == 0) {
            TTI_SFPARECIP(0, p_sfpu::LREG0, p_sfpu::LREG0, sfpi::SFPARECIP_MOD1_RECIP);
        } else if constexpr (OP == 1) {
            TTI_SFPARECIP(0, p_sfpu::LREG0, p_sfpu::LREG0, sfpi::SFPARECIP_MOD1_EXP);
        } else if constexpr (OP == 2) {
            TTI_SFPARECIP(p_sfpu::LREG0, p_sfpu::LREG0, p_sfpu::LREG0, sfpi::SFPARECIP_MOD1_COND_RECIP);
        } else if constexpr (OP == 3 || OP == 4) {
            TTI_SFPLOADI(p_sfpu::LREG2, sfpi::SFPLOADI_MOD0_FLOATB, OP == 3 ? 0x3f80 : 0x4000);  // 1.0 / 2.0
            if constexpr (OP == 3) {
                TTI_SFPGT(0, p_sfpu::LREG1, p_sfpu::LREG0, kSetVD);
            } else {
                TTI_SFPLE(0, p_sfpu::LREG1, p_sfpu::LREG0, kSetVD);
            }
            TTI_SFPLOADI(p_sfpu::LREG3, sfpi::SFPLOADI_MOD0_FLOATB, 0x4040);  // 3.0: overwritten, not read
            TTI_SFPAND(p_sfpu::LREG0, p_sfpu::LREG2, p_sfpu::LREG3, sfpi::SFPAND_MOD1_USE_VB);
            out = p_sfpu::LREG3;
        } else if constexpr (OP == 5) {
            TTI_SFPLOADI(p_sfpu::LREG2, sfpi::SFPLOADI_MOD0_UPPER, 0x8000);
            TTI_SFPLOADI(p_sfpu::LREG2, sfpi::SFPLOADI_MOD0_LOWER, 0x0000);
            TTI_SFPLOADI(p_sfpu::LREG3, sfpi::SFPLOADI_MOD0_FLOATB, 0x4040);  // 3.0: overwritten, not read
            TTI_SFPOR(p_sfpu::LREG0, p_sfpu::LREG2, p_sfpu::LREG3, sfpi::SFPOR_MOD1_USE_VB);
            out = p_sfpu::LREG3;
        } else if constexpr (OP == 6 || OP == 11) {
            if constexpr (OP == 6) {
                TTI_SFPGT(0, p_sfpu::LREG1, p_sfpu::LREG0, kGtSetCC);
            } else {
                TTI_SFPLE(0, p_sfpu::LREG1, p_sfpu::LREG0, kGtSetCC);
            }
            TTI_SFPLOADI(p_sfpu::LREG0, sfpi::SFPLOADI_MOD0_FLOATB, 0x40e0);  // 7.0 where flagged
            TTI_SFPENCC(0, 0, 0, 0);
        } else if constexpr (OP == 7) {
            TTI_SFPSETCC(0, p_sfpu::LREG0, 0, sfpi::SFPSETCC_MOD1_LREG_LT0);
            TTI_SFPPUSHC(0, 0, 0, 0);
            TTI_SFPGT(0, p_sfpu::LREG1, p_sfpu::LREG0, kMutateStack | kMutateOr);
            TTI_SFPPOPC(0, 0, 0, 0);
            TTI_SFPLOADI(p_sfpu::LREG0, sfpi::SFPLOADI_MOD0_FLOATB, 0x40e0);
            TTI_SFPENCC(0, 0, 0, 0);
        } else if constexpr (OP == 8) {
            TTI_SFPLOADI(p_sfpu::LREG2, sfpi::SFPLOADI_MOD0_FLOATB, 0x4000);  // 2.0
            TTI_SFPMAD(p_sfpu::LREG0, p_sfpu::LREG1, p_sfpu::LREG2, p_sfpu::LREG0, 1 | 2);
        } else if constexpr (OP == 9) {
            TTI_SFPLOADI(p_sfpu::LREG7, sfpi::SFPLOADI_MOD0_USHORT, 2);
            TTI_SFPLOADI(p_sfpu::LREG2, sfpi::SFPLOADI_MOD0_FLOATB, 0x40a0);  // 5.0
            TTI_SFPLOADI(p_sfpu::LREG3, sfpi::SFPLOADI_MOD0_FLOATB, 0x40a0);
            TTI_SFPMAD(p_sfpu::LREG0, p_sfpu::LREG1, p_sfpu::LCONST_0, p_sfpu::LREG3, 8);
            TTI_SFPMAD(p_sfpu::LREG2, p_sfpu::LCONST_1, p_sfpu::LREG3, p_sfpu::LREG2, 2);  // - LReg[3] (5.0)
            out = p_sfpu::LREG2;
        } else if constexpr (OP == 12) {
            TTI_SFPLOADI(p_sfpu::LREG3, sfpi::SFPLOADI_MOD0_FLOATB, 0x4040);  // 3.0: not the shifted value
            TTI_SFPSHFT((-16) & 0xfff, p_sfpu::LREG0, p_sfpu::LREG3, 1 | 4);
            TTI_SFPLOADI(p_sfpu::LREG2, sfpi::SFPLOADI_MOD0_FLOATB, 0x3f80);
            TTI_SFPOR(p_sfpu::LREG3, p_sfpu::LREG2, p_sfpu::LREG3, sfpi::SFPOR_MOD1_USE_VB);
            out = p_sfpu::LREG3;
        } else if constexpr (OP == 13) {
            TTI_SFPSHFT((-1) & 0xfff, 0, p_sfpu::LREG0, 1 | 2);
        } else if constexpr (OP == 14 || OP == 15) {
            TTI_SFPCAST(p_sfpu::LREG0, p_sfpu::LREG0, OP == 14 ? 2 : 3);
        } else if constexpr (OP == 16) {
            TTI_SFPLOADI(p_sfpu::LREG7, sfpi::SFPLOADI_MOD0_USHORT, 2);
            TTI_SFPLOADI(p_sfpu::LREG2, sfpi::SFPLOADI_MOD0_FLOATB, 0x40a0);  // 5.0: overwritten
            TTI_SFPADDI(0x3f80, p_sfpu::LREG0, 2 | 8);
            TTI_SFPMAD(p_sfpu::LREG2, p_sfpu::LCONST_1, p_sfpu::LREG0, p_sfpu::LREG2, 0);  // + x (LReg[0] kept)
            out = p_sfpu::LREG2;
        } else if constexpr (OP == 17) {
            TTI_SFPMULI(0x3f00, p_sfpu::LREG0, 2);
        } else {
            TTI_SFPLOADI(p_sfpu::LREG1, sfpi::SFPLOADI_MOD0_UPPER, 0x0080);  // 2^-126
            TTI_SFPLOADI(p_sfpu::LREG1, sfpi::SFPLOADI_MOD0_LOWER, 0x0000);
            TTI_SFPMAD(p_sfpu::LREG0, p_sfpu::LREG1, p_sfpu::LCONST_0, p_sfpu::LREG0, 0);
        }
        TTI_SFPSTORE(out, OP >= 12 && OP <= 15 ? 4u : 0u, ADDR_MOD_7, 0);  // 4: INT32
        sfpi::dst_reg++;
    }
}

void kernel_main() {
    constexpr int op = get_compile_time_arg_val(0);
    constexpr uint32_t cb_in = 0, cb_out = 16;
    compute_kernel_hw_startup(cb_in, cb_out);
    copy_init(cb_in);
    cb_wait_front(cb_in, 1);
    tile_regs_acquire();
    copy_tile(cb_in, 0, 0);
    _llk_math_eltwise_unary_sfpu_params_(body<op>, 0, VectorMode::RC);
    tile_regs_commit();
    cb_reserve_back(cb_out, 1);
    tile_regs_wait();
    pack_tile(0, cb_out);
    tile_regs_release();
    cb_push_back(cb_out, 1);
    cb_pop_front(cb_in, 1);
}
