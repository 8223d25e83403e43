// Emulator's ckernel_ops.h: the Tensix instruction macros (TT_* / TTI_*) that the wheel's LLK SFPU kernels issue,
// executed on the Vector Unit model (emu/compute_sfpu_isa.h) instead of being encoded into the instruction stream.
// Each macro issues one instruction through emu::sfpu::issue() (emu/compute_sfpu_isa.h, defined in the runtime's
// csrc/compute_sfpu.cpp), which also records it while a REPLAY (or lltt::record) is loading the replay buffer
// (REPLAY.md: load mode, optionally executing while loading) and runs the buffer on a replay. Instructions of the
// other Tensix units that SFPU code interleaves (STALLWAIT, SEMWAIT, NOP) have no effect on results and are accepted
// as no-ops; SFPLOADMACRO faults (the emulator builds compute kernels with DISABLE_SFPLOADMACRO, the LLK's
// instruction-by-instruction form of the same algorithms).
#pragma once

#include <cstdint>

#include "emu/compute_sfpu_isa.h"

#define EMU_U(x) static_cast<uint32_t>(x)
#define TT_SFPLOAD(vd, mod0, am, imm) ::emu::sfpu::issue(::emu::sfpu::kLoad, EMU_U(vd), EMU_U(mod0), EMU_U(am), EMU_U(imm))
#define TTI_SFPLOAD TT_SFPLOAD
#define TT_SFPSTORE(vd, mod0, am, imm) ::emu::sfpu::issue(::emu::sfpu::kStore, EMU_U(vd), EMU_U(mod0), EMU_U(am), EMU_U(imm))
#define TTI_SFPSTORE TT_SFPSTORE
#define TT_SFPLOADI(vd, mod0, imm16) ::emu::sfpu::issue(::emu::sfpu::kLoadI, EMU_U(vd), EMU_U(mod0), EMU_U(imm16))
#define TTI_SFPLOADI TT_SFPLOADI
#define TT_SFPMAD(a, b, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kMad, EMU_U(a), EMU_U(b), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPMAD TT_SFPMAD
#define TT_SFPMUL TT_SFPMAD
#define TTI_SFPMUL TT_SFPMAD
#define TT_SFPADD TT_SFPMAD
#define TTI_SFPADD TT_SFPMAD
#define TT_SFPADDI(imm16, vd, mod1) ::emu::sfpu::issue(::emu::sfpu::kAddI, EMU_U(imm16), EMU_U(vd), EMU_U(mod1))
#define TTI_SFPADDI TT_SFPADDI
#define TT_SFPMULI(imm16, vd, mod1) ::emu::sfpu::issue(::emu::sfpu::kMulI, EMU_U(imm16), EMU_U(vd), EMU_U(mod1))
#define TTI_SFPMULI TT_SFPMULI
#define TT_SFPMOV(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kMov, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPMOV TT_SFPMOV
#define TT_SFPSWAP(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kSwap, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPSWAP TT_SFPSWAP
#define TT_SFPEXEXP(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kExExp, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPEXEXP TT_SFPEXEXP
#define TT_SFPEXMAN(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kExMan, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPEXMAN TT_SFPEXMAN
#define TT_SFPSHFT(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kShft, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPSHFT TT_SFPSHFT
#define TT_SFPSHFT2(b, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kShft2, EMU_U(b), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPSHFT2 TT_SFPSHFT2
#define TT_SFPTRANSP(imm12, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kTransp, EMU_U(imm12), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPTRANSP TT_SFPTRANSP
#define TT_SFPCAST(c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kCast, EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPCAST TT_SFPCAST
#define TT_SFPSETEXP(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kSetExp, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPSETEXP TT_SFPSETEXP
#define TT_SFPSETMAN(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kSetMan, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPSETMAN TT_SFPSETMAN
#define TT_SFPSETSGN(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kSetSgn, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPSETSGN TT_SFPSETSGN
#define TT_SFPABS(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kAbs, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPABS TT_SFPABS
#define TT_SFPNOT(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kNot, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPNOT TT_SFPNOT
#define TT_SFPAND(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kAnd, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPAND TT_SFPAND
#define TT_SFPOR(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kOr, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPOR TT_SFPOR
#define TT_SFPXOR(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kXor, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPXOR TT_SFPXOR
#define TT_SFPLZ(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kLz, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPLZ TT_SFPLZ
#define TT_SFPDIVP2(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kDivP2, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPDIVP2 TT_SFPDIVP2
#define TT_SFPIADD(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kIAdd, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPIADD TT_SFPIADD
#define TT_SFP_STOCH_RND(rnd, imm8, b, c, d, mod1) \
    ::emu::sfpu::issue(::emu::sfpu::kStochRnd, EMU_U(rnd), EMU_U(imm8), EMU_U(b), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFP_STOCH_RND TT_SFP_STOCH_RND
#define TT_SFPSETCC(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kSetCC, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPSETCC TT_SFPSETCC
#define TT_SFPENCC(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kEnCC, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPENCC TT_SFPENCC
#define TT_SFPPUSHC(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kPushC, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPPUSHC TT_SFPPUSHC
#define TT_SFPPOPC(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kPopC, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPPOPC TT_SFPPOPC
#define TT_SFPCOMPC(imm, c, d, mod1) ::emu::sfpu::issue(::emu::sfpu::kCompC, EMU_U(imm), EMU_U(c), EMU_U(d), EMU_U(mod1))
#define TTI_SFPCOMPC TT_SFPCOMPC
#define TT_SFPCONFIG(imm16, dest, mod1) ::emu::sfpu::issue(::emu::sfpu::kConfig, EMU_U(imm16), EMU_U(dest), EMU_U(mod1))
#define TTI_SFPCONFIG TT_SFPCONFIG
#define TT_SFPLOADMACRO(vd, mod0, am, imm) ::emu::sfpu::issue(::emu::sfpu::kLoadMacro, EMU_U(vd), EMU_U(mod0), EMU_U(am), EMU_U(imm))
#define TTI_SFPLOADMACRO TT_SFPLOADMACRO
#define TTI_SFPNOP ::emu::sfpu::issue(::emu::sfpu::kNop)
#define TT_SFPNOP TTI_SFPNOP
#define TT_INCRWC(cr, d, b, a) ::emu::sfpu::issue(::emu::sfpu::kIncRwc, EMU_U(cr), EMU_U(d), EMU_U(b), EMU_U(a))
#define TTI_INCRWC TT_INCRWC
#define TT_SETRWC(clear_ab, cr, d, b, a, mask) \
    ::emu::sfpu::issue(::emu::sfpu::kSetRwc, EMU_U(clear_ab), EMU_U(cr), EMU_U(d), EMU_U(b), EMU_U(a), EMU_U(mask))
#define TTI_SETRWC TT_SETRWC
#define TT_REPLAY(start, len, exec, load) ::emu::sfpu::replay(EMU_U(start), EMU_U(len), EMU_U(exec), EMU_U(load))
#define TTI_REPLAY TT_REPLAY
#define TTI_STALLWAIT(a, b) ((void)0)
#define TT_STALLWAIT(a, b) ((void)0)
#define TTI_SEMWAIT(a, b, c) ((void)0)
#define TTI_NOP ((void)0)

#ifdef ARCH_BLACKHOLE
#include "ckernel_ops_blackhole.h"
#endif
