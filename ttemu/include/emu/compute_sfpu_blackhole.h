// The Blackhole Vector Unit (SFPU): what differs from the Wormhole model (emu/compute_sfpu_isa.h) in the instructions
// the wheel's Blackhole LLK (tt_llk_blackhole, hw/ckernels/blackhole/metal/llk_api/llk_sfpu) issues. Semantics:
// tt-isa-documentation BlackholeA0/TensixTile/TensixCoprocessor (the per-instruction pages named below).
//
// A compute kernel built for Blackhole (ARCH_BLACKHOLE) issues these through include_llk/ckernel_ops_blackhole.h and
// the host SFPI library's Blackhole arithmetic (include_llk/sfpi.h); the machine state is the Wormhole model's
// (m(): LRegs, lane flags, flag stack, Dst counter, replay buffer), which both chips share. Instructions whose
// Blackhole page describes the Wormhole behaviour for every mode the LLK uses (SFPLOADI, SFPSWAP, SFPEXEXP, SFPEXMAN,
// SFPSETEXP / MAN / SGN, SFPSETCC, SFPENCC, SFPPUSHC / POPC / COMPC, SFPCAST SM32 -> FP32, SFPSTOCHRND
// round to nearest, SFPIADD, SFPABS, SFPLZ, SFPDIVP2, SFPCONFIG constants) stay the Wormhole model's.
//
// New in Blackhole:
//   * SFPARECIP (SFPARECIP.md): lanewise approximate reciprocal (a 128-entry mantissa table, exact exponent) or
//     approximate e^x on [0, 2) (an 896-entry table); mod1 0 RECIP keeps the sign, 1 COND_RECIP replaces VD only in
//     lanes where LReg[VB] is negative and drops the sign, 2 EXP.
//   * SFPGT / SFPLE (SFPGT.md, SFPLE.md): VD > VC / VD <= VC over sign-magnitude integers (the FP32 total order
//     -NaN < -Inf < ... < -0 < +0 < ... < +NaN), written to VD (all ones / zero; mod1 8), to the lane flags
//     (mod1 1) and / or and-ed or or-ed into the flag stack's top (mod1 2, 2|4).
// Changed in Blackhole:
//   * SFPMAD (and SFPADD, SFPMUL, SFPADDI, SFPMULI: the same MAD sub-unit; SFPMAD.md): mod1 1 negates VA, 2
//     negates VC, 4 takes VA and 8 VD from the low four bits of LReg[7] (per lane; SFPADDI / SFPMULI: 2 and 8); a denormal result is flushed to
//     zero KEEPING its sign (Wormhole: +0), -0 results are kept, and every NaN result is the canonical 0x7fc00000.
//     Denormal inputs still read as zero; one rounding to nearest even, as the Wormhole model (an exact fused
//     multiply-add; silicon keeps the product wider than fp32 but not exact, so the last bit can differ).
//   * SFPAND / SFPOR (SFPAND.md, SFPOR.md): mod1 1 (USE_VB) computes VD = LReg[VB] op LReg[VC]; else VD op= VC.
//   * SFPSHFT (SFPSHFT.md): shifts LReg[VD] by LReg[VC] or (mod1 1) by Imm12; with mod1 1 | 4 (ARG_IMM_USE_VC) it
//     shifts LReg[VC] by Imm12 instead; mod1 2 (ARITHMETIC) makes a right shift arithmetic; the amount is taken
//     modulo 32 (Wormhole model: 32 or more shifts everything out).
//   * SFPCAST (SFPCAST_IntFloat.md, _IntInt.md, _IntAbs.md): mod1 0 / 1 sign-magnitude int32 -> fp32 as on Wormhole;
//     new: 2 (INT32_ABS) two's complement |x| (-2^31 kept), 3 (INT32_SM32) two's complement <-> sign-magnitude.
//   * SFPLOAD / SFPSTORE (SFPLOAD.md, SFPSTORE.md): INT32_SM (12) and INT8_COMP (13) no longer convert between
//     sign-magnitude and two's complement (12 moves the 32 bits as INT32 does); a store to an FP32 or BF16 Dst
//     flushes a denormal to zero keeping its sign.
#pragma once

#include <cmath>
#include <cstdint>

#include "emu/compute_sfpu_isa.h"

namespace emu::sfpu::bh {

// Op codes of the Blackhole instructions (after the Wormhole model's Op values; exec() hands these to exec_bh).
enum Op : uint8_t {
    kFirst = 64,
    kMad = kFirst,  // SFPMAD / SFPADD / SFPMUL
    kAddI,
    kMulI,
    kARecip,
    kGt,
    kLe,
    kAnd,
    kOr,
    kLoad,
    kStore,
    kShft,
    kCast,
};

// ---- numerics
// MAD result on Blackhole: canonical NaN, denormal flushed to sign-preserved zero (SFPMAD.md).
inline uint32_t mad_out(float r) {
    uint32_t u = as_u(r);
    if (std::isnan(r)) return 0x7fc00000u;
    if ((u & 0x7f800000u) == 0) return u & 0x80000000u;
    return u;
}
inline uint32_t mad(uint32_t a, uint32_t b, uint32_t c) {
    return mad_out(std::fma(mad_in(a), mad_in(b), mad_in(c)));
}

// SFPARECIP.md ApproxRecip / ApproxExp: x is the FP32 bit pattern with the sign already removed.
uint32_t approx_recip(uint32_t x);
uint32_t approx_exp(uint32_t x);

enum : uint32_t { kARecipRecip = 0, kARecipCondRecip = 1, kARecipExp = 2 };
enum : uint32_t { kCmpSetCC = 1, kCmpMutateStack = 2, kCmpMutateOr = 4, kCmpSetVD = 8 };

// ---- instructions
void sfpmad(uint32_t va, uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1);
// SFPADDI / SFPMULI (SFPADDI.md, SFPMULI.md): VD = bf16(Imm16) + (+-)VD / bf16(Imm16) * (+-)VD; mod1 2 negates VD's
// value, 8 writes the lane's LReg[LReg[7] & 15] instead.
void sfpaddi(uint32_t imm16, uint32_t vd, uint32_t mod1);
void sfpmuli(uint32_t imm16, uint32_t vd, uint32_t mod1);
void sfparecip(uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1);
// SFPGT (greater = true) / SFPLE (greater = false).
void sfpcmp(uint32_t vc, uint32_t vd, uint32_t mod1, bool greater);
void sfpbitop(uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1, int op);  // 0 and, 1 or
void sfpshft(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1);
void sfpcast(uint32_t vc, uint32_t vd, uint32_t mod1);
void sfpload(uint32_t vd, uint32_t mod0, uint32_t addr_mod, uint32_t imm10);
void sfpstore(uint32_t vd, uint32_t mod0, uint32_t addr_mod, uint32_t imm10);

// Runs one Blackhole instruction (op >= kFirst); emu::sfpu::exec hands them here.
void exec(const Instr& i);

}  // namespace emu::sfpu::bh
