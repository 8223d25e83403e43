// Emulator's ckernel_ops.h: the Tensix instruction macros (TT_* / TTI_*) that the wheel's LLK SFPU kernels issue,
// executed on the Vector Unit model (emu/compute_sfpu_isa.h) instead of being encoded into the instruction stream.
// Each macro issues one instruction through emu::sfpu::issue(), which also records it while a REPLAY (or
// lltt::record) is loading the replay buffer (REPLAY.md: load mode, optionally executing while loading) and runs
// the buffer on a replay. Instructions of the other Tensix units that SFPU code interleaves (STALLWAIT, SEMWAIT,
// NOP) have no effect on results and are accepted as no-ops; SFPLOADMACRO faults (the emulator builds compute
// kernels with DISABLE_SFPLOADMACRO, the LLK's instruction-by-instruction form of the same algorithms).
#pragma once

#include <cstdint>

#include "emu/compute_sfpu_isa.h"

namespace emu::sfpu {

enum Op : uint8_t {
    kLoad, kStore, kLoadI, kMad, kAddI, kMulI, kMov, kSwap, kExExp, kExMan, kShft, kShft2, kCast, kSetExp, kSetMan,
    kSetSgn, kAbs, kNot, kAnd, kOr, kXor, kLz, kDivP2, kIAdd, kStochRnd, kSetCC, kEnCC, kPushC, kPopC, kCompC,
    kConfig, kNop, kIncRwc, kSetRwc, kLoadMacro, kTransp,
};

inline void exec(const Instr& i) {
    switch (i.op) {
        case kLoad: sfpload(i.a0, i.a1, i.a2, i.a3); break;
        case kStore: sfpstore(i.a0, i.a1, i.a2, i.a3); break;
        case kLoadI: sfploadi(i.a0, i.a1, i.a2); break;
        case kMad: sfpmad(i.a0, i.a1, i.a2, i.a3, i.a4); break;
        case kAddI: sfpaddi(i.a0, i.a1); break;
        case kMulI: sfpmuli(i.a0, i.a1); break;
        case kMov: sfpmov(i.a1, i.a2, i.a3); break;
        case kSwap: sfpswap(i.a1, i.a2, i.a3); break;
        case kExExp: sfpexexp(i.a1, i.a2, i.a3); break;
        case kExMan: sfpexman(i.a1, i.a2, i.a3); break;
        case kShft: sfpshft(i.a0, i.a1, i.a2, i.a3); break;
        case kShft2: sfpshft2(i.a0, i.a1, i.a2, i.a3); break;
        case kCast: sfpcast(i.a0, i.a1, i.a2); break;
        case kSetExp: sfpsetexp(i.a0, i.a1, i.a2, i.a3); break;
        case kSetMan: sfpsetman(i.a0, i.a1, i.a2, i.a3); break;
        case kSetSgn: sfpsetsgn(i.a0, i.a1, i.a2, i.a3); break;
        case kAbs: sfpabs(i.a1, i.a2, i.a3); break;
        case kNot: sfpnot(i.a1, i.a2); break;
        case kAnd: sfpbitop(i.a1, i.a2, 0); break;
        case kOr: sfpbitop(i.a1, i.a2, 1); break;
        case kXor: sfpbitop(i.a1, i.a2, 2); break;
        case kLz: sfplz(i.a1, i.a2, i.a3); break;
        case kDivP2: sfpdivp2(i.a0, i.a1, i.a2, i.a3); break;
        case kIAdd: sfpiadd(i.a0, i.a1, i.a2, i.a3); break;
        case kStochRnd: sfpstochrnd(i.a3, i.a4, i.a5); break;
        case kSetCC: sfpsetcc(i.a0, i.a1, i.a3); break;
        case kEnCC: sfpencc(i.a0, i.a3); break;
        case kPushC: sfppushc(i.a3); break;
        case kPopC: sfppopc(i.a3); break;
        case kCompC: sfpcompc(); break;
        case kConfig: sfpconfig(i.a0, i.a1, i.a2); break;
        case kTransp: sfptransp(i.a2); break;
        case kNop: break;
        case kIncRwc: inc_dst_rwc(i.a1); break;
        case kSetRwc:  // p_setrwc::SET_D; with CR_D the new value counts from the current one (LLK inc_dst_addr)
            if (i.a5 & 4) set_dst_rwc(i.a2, (i.a1 & 4) != 0);
            break;
        case kLoadMacro:
            fault("SFPLOADMACRO: macro scheduling is not modelled (compute kernels build with DISABLE_SFPLOADMACRO)");
    }
}

inline void issue(uint8_t op, uint32_t a0 = 0, uint32_t a1 = 0, uint32_t a2 = 0, uint32_t a3 = 0, uint32_t a4 = 0,
                  uint32_t a5 = 0) {
    Instr ins{op, a0, a1, a2, a3, a4, a5};
    Machine& s = m();
    if (s.rec_left > 0) {
        s.replay[s.rec_pos++ & 31] = ins;
        --s.rec_left;
        if (!s.rec_exec) return;
    }
    exec(ins);
}

// REPLAY (REPLAY.md): load_mode 1 records the next `len` instructions into slots start.. (executing them too when
// exec_while_loading); load_mode 0 executes slots start .. start+len-1.
inline void replay(uint32_t start, uint32_t len, uint32_t exec_while_loading, uint32_t load_mode) {
    Machine& s = m();
    if (load_mode) {
        s.rec_pos = static_cast<int>(start);
        s.rec_left = static_cast<int>(len);
        s.rec_exec = exec_while_loading != 0;
        return;
    }
    for (uint32_t k = 0; k < len; ++k) exec(s.replay[(start + k) & 31]);
}

}  // namespace emu::sfpu

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
