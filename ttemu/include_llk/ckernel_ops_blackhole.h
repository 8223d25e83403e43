// Blackhole's Tensix instruction macros where they differ from Wormhole's (include_llk/ckernel_ops.h includes this
// under ARCH_BLACKHOLE): the instructions new in Blackhole (SFPARECIP, SFPGT, SFPLE) and those whose Blackhole
// semantics differ (SFPMAD / SFPADD / SFPMUL / SFPADDI / SFPMULI, SFPAND / SFPOR with a VB operand, SFPLOAD /
// SFPSTORE, SFPSHFT, SFPCAST), issued as the Blackhole model's instructions (emu/compute_sfpu_blackhole.h documents them).
#pragma once

#include "emu/compute_sfpu_blackhole.h"

#undef TT_SFPLOAD
#undef TTI_SFPLOAD
#undef TT_SFPSTORE
#undef TTI_SFPSTORE
#undef TT_SFPMAD
#undef TTI_SFPMAD
#undef TT_SFPMUL
#undef TTI_SFPMUL
#undef TT_SFPADD
#undef TTI_SFPADD
#undef TT_SFPADDI
#undef TTI_SFPADDI
#undef TT_SFPMULI
#undef TTI_SFPMULI
#undef TT_SFPAND
#undef TTI_SFPAND
#undef TT_SFPOR
#undef TTI_SFPOR
#undef TT_SFPSHFT
#undef TTI_SFPSHFT
#undef TT_SFPCAST
#undef TTI_SFPCAST

#define TT_SFPLOAD(vd, mod0, am, imm) \
    ::emu::sfpu::issue(::emu::sfpu::bh::kLoad, EMU_U(vd), EMU_U(mod0), EMU_U(am), EMU_U(imm))
#define TTI_SFPLOAD TT_SFPLOAD
#define TT_SFPSTORE(vd, mod0, am, imm) \
    ::emu::sfpu::issue(::emu::sfpu::bh::kStore, EMU_U(vd), EMU_U(mod0), EMU_U(am), EMU_U(imm))
#define TTI_SFPSTORE TT_SFPSTORE
#define TT_SFPMAD(a, b, c, d, mod1) \
    ::emu::sfpu::issue(::emu::sfpu::bh::kMad, EMU_U(a), EMU_U(b), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPMAD TT_SFPMAD
#define TT_SFPMUL TT_SFPMAD
#define TTI_SFPMUL TT_SFPMAD
#define TT_SFPADD TT_SFPMAD
#define TTI_SFPADD TT_SFPMAD
#define TT_SFPADDI(imm16, vd, mod1) ::emu::sfpu::issue(::emu::sfpu::bh::kAddI, EMU_U(imm16), EMU_U(vd), EMU_U(mod1))
#define TTI_SFPADDI TT_SFPADDI
#define TT_SFPMULI(imm16, vd, mod1) ::emu::sfpu::issue(::emu::sfpu::bh::kMulI, EMU_U(imm16), EMU_U(vd), EMU_U(mod1))
#define TTI_SFPMULI TT_SFPMULI
#define TT_SFPAND(vb, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::bh::kAnd, EMU_U(vb), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPAND TT_SFPAND
#define TT_SFPOR(vb, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::bh::kOr, EMU_U(vb), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPOR TT_SFPOR
#define TT_SFPARECIP(vb, c, d, mod1) \
    ::emu::sfpu::issue(::emu::sfpu::bh::kARecip, EMU_U(vb), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPARECIP TT_SFPARECIP
#define TT_SFPGT(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::bh::kGt, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPGT TT_SFPGT
#define TT_SFPLE(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::bh::kLe, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPLE TT_SFPLE
#define TT_SFPSHFT(imm, c, d, mod1) \
    ::emu::sfpu::issue(::emu::sfpu::bh::kShft, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPSHFT TT_SFPSHFT
#define TT_SFPCAST(c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::bh::kCast, EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPCAST TT_SFPCAST
