// The Wormhole Vector Unit (SFPU) at instruction level, for the emulator's host SFPI library (include_llk/sfpi.h)
// and the TTI_SFP* instruction macros (include_llk/ckernel_ops.h) the wheel's LLK SFPU kernels use. Semantics:
// tt-isa-documentation WormholeB0/TensixTile/TensixCoprocessor (VectorUnit.md and the per-instruction pages).
//
// State (one per compute thread): 17 LRegs of 32 lanes (0-7 general, 8-15 constants, 16 the staging register),
// the per-lane flags with UseLaneFlagsForLaneEnable and an 8-deep flag stack, the Dst row counter (RWC) of the
// math thread, the ADDR_MOD table (dest increments), and the replay buffer.
//
// Lanes and Dst (SFPLOAD.md): an address A selects Dst rows (A & ~3) .. +3; lane l reads row (A & ~3) + l / 8,
// column (l % 8) * 2 + ((A >> 1) & 1). A Dst tile is 64 rows (four 16x16 faces, face-major), so SFPI's dst_reg[i]
// (two rows per index) spans 32 indices per tile. The emulator's DST tiles are row-major 32x32 floats; row R of
// the section is tile R / 64, face (R % 64) / 16, face row R % 16.
//
// Arithmetic: SFPMAD (and SFPADD / SFPMUL / SFPADDI / SFPMULI, the same MAD unit) is fp32 a * b + c with
// denormal inputs read as zero, one rounding to nearest even, and a denormal or negative-zero result flushed to
// +0 (SFPMAD.md). The MAD is partially fused on silicon (the product is kept wider than fp32 but not exactly);
// the emulator uses an exact fused multiply-add, which can differ from silicon in the last bit when the product's
// discarded bits decide the rounding (the ISA's bit-exact FMA model is not reproduced). SFPSTOCHRND rounds to
// nearest with ties AWAY from zero (the non-stochastic mode every kernel modelled here uses); stochastic mode is
// modelled deterministically the same way. SFPSTORE to a BF16 Dst keeps the top 16 bits (truncation), which is
// why the LLK rounds explicitly before storing.
//
// The instructions and the machine state m() (one per thread, so per core's compute thread) are defined once in
// csrc/compute_sfpu.cpp, built into the runtime executable, not inline in every kernel; the per-lane helpers the host
// SFPI library (include_llk/sfpi.h) calls in its loops stay inline here.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "emu/compute_state.h"
#include "emu/formats.h"
#include "emu/runtime.h"

namespace emu::sfpu {

constexpr uint32_t kLanes = 32;
constexpr uint32_t kAllLanes = 0xffffffffu;

struct Vec {
    uint32_t u[kLanes];
};

inline float as_f(uint32_t u) { return bits_f32(u); }
inline uint32_t as_u(float f) { return f32_bits(f); }

// fp32 value as the MAD unit reads it: denormals are zero.
inline float mad_in(uint32_t u) {
    if ((u & 0x7f800000u) == 0) return 0.0f;
    return as_f(u);
}
// MAD result: denormal or negative zero becomes +0.
inline uint32_t mad_out(float r) {
    uint32_t u = as_u(r);
    if ((u & 0x7f800000u) == 0) return 0u;
    if (std::isnan(r)) return u | 1u;  // "least significant bit of the mantissa is guaranteed to be set"
    return u;
}
inline uint32_t mad(uint32_t a, uint32_t b, uint32_t c) {
    return mad_out(std::fma(mad_in(a), mad_in(b), mad_in(c)));
}

struct Instr {  // one recorded Tensix instruction (replay buffer)
    uint8_t op;
    uint32_t a0, a1, a2, a3, a4, a5;
};

struct FlagEntry {
    bool use;
    uint32_t flags;
};

struct Machine {
    Vec lreg[17];
    bool use_flags = false;  // UseLaneFlagsForLaneEnable
    uint32_t flags = kAllLanes;
    std::vector<FlagEntry> stack;
    uint32_t dst_rwc = 0;        // math thread's Dst RWC, in Dst rows, relative to the tile base
    uint32_t dst_cr = 0;         // its carriage-return register (SETRWC with CR_D counts from it; INCRWC does not
                                 // move it), so the LLK's per-face advance is relative to the face start
    uint32_t dst_base = 0;       // first row of the tile the current SFPU op addresses
    uint32_t addr_mod_dest[8] = {};  // ADDR_MOD_n dest increment (addr_mod_t::set)
    bool addr_mod_base = true;   // set_addr_mod_base: SFPU's ADDR_MOD 0-3 select 4-7
    // replay buffer (REPLAY.md): 32 slots
    Instr replay[32];
    int rec_pos = -1, rec_left = 0;
    bool rec_exec = true;
    bool replaying = false;

    Machine() { reset(); }
    void reset() {
        std::memset(lreg, 0, sizeof lreg);
        auto fill = [&](int r, float v) {
            for (uint32_t l = 0; l < kLanes; ++l) lreg[r].u[l] = as_u(v);
        };
        fill(8, 0.8373f);
        fill(9, 0.0f);
        fill(10, 1.0f);
        fill(11, -1.0f);
        for (uint32_t l = 0; l < kLanes; ++l) lreg[15].u[l] = l * 2;  // LReg[15]: lane index * 2 (TileId)
        use_flags = false;
        flags = kAllLanes;
        stack.clear();
        dst_rwc = dst_cr = dst_base = 0;
        rec_pos = -1;
        rec_left = 0;
    }
    uint32_t enabled() const { return use_flags ? flags : kAllLanes; }
};

Machine& m();

// ---- Dst access
struct DstRef {
    DstSection* sec;
    uint32_t tile, idx;  // row-major index inside the tile
};

// `s`: the calling thread's compute state (cstate()), which SFPLOAD / SFPSTORE look up once for their 32 lanes.
inline DstRef dst_ref(ComputeState& s, uint32_t row, uint32_t col, const char* who) {
    int sec = s.math_section;
    if (sec < 0) fault("%s: SFPU access to DST outside tile_regs_acquire / tile_regs_commit", who);
    uint32_t tile = row / 64, face = (row % 64) / 16, fr = row % 16;
    if (tile >= dst_capacity())
        fault("%s: SFPU addresses DST row %u (tile %u) but %s holds %u tiles per section", who, row, tile,
              dst_mode_name(), dst_capacity());
    uint32_t r = (face / 2) * 16 + fr, c = (face % 2) * 16 + col;
    return {&s.sections[sec], tile, r * 32 + c};
}

inline uint32_t dst_lane_row(uint32_t addr, uint32_t lane) { return (addr & ~3u) + lane / 8; }
inline uint32_t dst_lane_col(uint32_t addr, uint32_t lane) { return (lane & 7) * 2 + ((addr >> 1) & 1); }

// SFPLOAD / SFPSTORE formats (InstrModLoadStore): DEFAULT 0 resolves by the Dst mode.
enum : uint32_t { kFmtDefault = 0, kFmtFp16a = 1, kFmtFp16b = 2, kFmtFp32 = 3, kFmtInt32 = 4, kFmtInt8 = 5,
                  kFmtUInt16 = 6, kFmtHi16 = 7, kFmtInt16 = 8, kFmtLo16 = 9, kFmtInt32All = 10, kFmtZero = 11,
                  kFmtInt32Sm = 12, kFmtInt8Comp = 13, kFmtLo16Only = 14, kFmtHi16Only = 15 };

inline uint32_t resolve_fmt(uint32_t mod0) {
    if (mod0 == kFmtDefault) return dst_fp32() ? kFmtFp32 : kFmtFp16b;
    return mod0;
}

inline uint32_t sfp_addr(uint32_t imm10) { return m().dst_base + m().dst_rwc + imm10; }

inline void apply_addr_mod(uint32_t addr_mod) {
    Machine& s = m();
    uint32_t slot = (addr_mod & 3) + (s.addr_mod_base ? 4 : 0);
    s.dst_rwc += s.addr_mod_dest[slot];
}

void sfpload(uint32_t vd, uint32_t mod0, uint32_t addr_mod, uint32_t imm10);

void sfpstore(uint32_t vd, uint32_t mod0, uint32_t addr_mod, uint32_t imm10);

// ---- lanewise helpers
template <typename F>
inline void lanewise(uint32_t vd, F f) {
    Machine& s = m();
    if (vd >= 8 && vd != 16) return;  // constant registers are written only by SFPCONFIG
    uint32_t en = s.enabled();
    for (uint32_t l = 0; l < kLanes; ++l)
        if (en >> l & 1) s.lreg[vd].u[l] = f(l);
}

inline uint32_t bf16_imm(uint32_t imm16) { return (imm16 & 0xffffu) << 16; }
inline uint32_t fp16a_imm(uint32_t x) {  // SFPLOADI FLOATA: IEEE half -> fp32
    uint32_t sign = (x >> 15) & 1, exp = (x >> 10) & 0x1f, man = x & 0x3ff;
    if (exp == 0) return sign << 31;
    return (sign << 31) | ((exp + 112) << 23) | (man << 13);
}

void sfploadi(uint32_t vd, uint32_t mod0, uint32_t imm16);

void sfpmad(uint32_t va, uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1);

void sfpaddi(uint32_t imm16, uint32_t vd);
void sfpmuli(uint32_t imm16, uint32_t vd);

void sfpmov(uint32_t vc, uint32_t vd, uint32_t mod1);

inline bool signmag_smaller(uint32_t c, uint32_t d) {
    c ^= static_cast<uint32_t>(static_cast<int32_t>(c) >> 30) >> 1;
    d ^= static_cast<uint32_t>(static_cast<int32_t>(d) >> 30) >> 1;
    return static_cast<int32_t>(c) < static_cast<int32_t>(d);
}

void sfpswap(uint32_t vc, uint32_t vd, uint32_t mod1);

// SFPEXEXP: VD = exponent field (mod1 bit 0: no debias), optionally setting the flags from its sign.
void sfpexexp(uint32_t vc, uint32_t vd, uint32_t mod1);

// SFPEXMAN: mod1 0 (PAD8): mantissa with the implicit one at bit 23; mod1 1 (PAD9): mantissa only.
void sfpexman(uint32_t vc, uint32_t vd, uint32_t mod1);

// SFPSHFT: VD = VD << amount (right for a negative amount); mod1 bit 0: amount = Imm12, else LReg[VC].
void sfpshft(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1);

// SFPSHFT2 mode 5 (SHFT_LREG): VD = LReg[VB] shifted by LReg[VC] (per lane).
void sfpshft2(uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1);

// SFPTRANSP (tt-isa-documentation WormholeB0 SFPTRANSP.md): LReg[0:4] stacked into a 4x4x8 tensor (register,
// lane row, lane column) have their two length-4 axes swapped, and the same for LReg[4:8]; a lane that is not
// enabled keeps its value. VD >= 12 with the backdoor load enabled writes a LoadMacro template instead (not
// modelled: SFPLOADMACRO is not either).
void sfptransp(uint32_t vd);

// SFPCAST: sign-magnitude int32 -> fp32, round to nearest even (stochastic mode modelled the same way).
inline uint32_t sm32_to_fp32(uint32_t x) {
    uint32_t mag = x & 0x7fffffffu;
    float f = static_cast<float>(mag);  // host conversion: round to nearest even
    uint32_t u = as_u(f);
    if (mag == 0) return 0u;
    return u | (x & 0x80000000u);
}
void sfpcast(uint32_t vc, uint32_t vd, uint32_t mod1);

// SFPSETEXP (SFPSETEXP.md).
void sfpsetexp(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1);
// SFPSETMAN: mod1 bit 0: mantissa = Imm12 << 11, else the mantissa of VD (the old value).
void sfpsetman(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1);
// SFPSETSGN: mod1 bit 0: sign = Imm bit 0, else the sign of VD.
void sfpsetsgn(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1);
// SFPABS: mod1 1 float (NaN kept), 0 int (two's complement; -2^31 kept).
void sfpabs(uint32_t vc, uint32_t vd, uint32_t mod1);
void sfpnot(uint32_t vc, uint32_t vd);
void sfpbitop(uint32_t vc, uint32_t vd, int op);
// SFPLZ: count leading zeros (mod1 bit 2: ignoring the sign bit); flags on != 0 / == 0 (mod1 2 / 10).
void sfplz(uint32_t vc, uint32_t vd, uint32_t mod1);
// SFPDIVP2: mod1 1 (ADD): exponent += Imm8 (NaN/Inf kept); else exponent = Imm8.
void sfpdivp2(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1);

// SFPIADD (SFPIADD.md).
void sfpiadd(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1);

// SFPSTOCHRND (SFPSTOCHRND_FloatFloat.md, _FloatInt.md): round to nearest, ties away from zero.
inline uint32_t stochrnd(uint32_t x, uint32_t mod1) {
    switch (mod1) {
        case 0:    // FP32 -> FP16A precision (10 mantissa bits)
        case 1: {  // FP32 -> BF16 precision (7 mantissa bits)
            uint32_t e = (x >> 23) & 0xffu;
            if (e == 0) return 0u;
            if (e == 0xffu) return x & 0xff800000u;
            uint32_t keep = mod1 == 0 ? 0x1fffu : 0xffffu;
            uint32_t half = mod1 == 0 ? 0x1000u : 0x8000u;
            uint32_t disc = x & keep;
            x -= disc;
            if (disc >= half) x += keep + 1;
            return x;
        }
        case 2:
        case 3:
        case 6:
        case 7: {
            bool keep_sign = mod1 == 3 || mod1 == 7;
            uint32_t maxmag = mod1 == 3 ? 127u : mod1 == 2 ? 255u : mod1 == 7 ? 32767u : 65535u;
            uint32_t sign = keep_sign ? (x & 0x80000000u) : 0u;
            int32_t e = static_cast<int32_t>((x >> 23) & 0xffu) - 127;
            uint64_t mag;
            if (e < -1) {
                mag = 0;
                sign = 0;
            } else if (e >= 16) {
                mag = maxmag;
            } else {
                mag = 0x800000u | (x & 0x7fffffu);
                mag = e >= 0 ? mag << e : mag >> -e;
                mag = (mag >> 23) + ((mag & 0x7fffffu) >= 0x400000u);
                if (mag > maxmag) mag = maxmag;
                if (mag == 0) sign = 0;
            }
            return sign + static_cast<uint32_t>(mag);
        }
        default: fault("SFPSTOCHRND: mode %u (int->int) is not modelled by the emulator", mod1);
    }
}
void sfpstochrnd(uint32_t vc, uint32_t vd, uint32_t mod1);

// ---- conditional execution
inline void set_flag(uint32_t l, bool f) {
    Machine& s = m();
    s.flags = f ? (s.flags | (1u << l)) : (s.flags & ~(1u << l));
}
// SFPSETCC: mod1 0 LT0, 1 IMM bit 0, 2 NE0, 4 GTE0, 6 EQ0, (8: complement). Only enabled lanes change.
inline bool setcc_test(uint32_t x, uint32_t imm12, uint32_t mod1) {
    switch (mod1 & 7) {
        case 0: return (x & 0x80000000u) != 0;
        case 1: return imm12 & 1;
        case 2: return x != 0;
        case 4: return (x & 0x80000000u) == 0;
        case 6: return x == 0;
        default: fault("SFPSETCC: mode %u is not modelled by the emulator", mod1);
    }
}
void sfpsetcc(uint32_t imm12, uint32_t vc, uint32_t mod1);
// SFPENCC: mod1 bits 0-1: enable unchanged (0) / complemented (1) / from Imm bit 0 (2); bit 3: flags from Imm
// bit 1, else all set. Runs on every lane.
void sfpencc(uint32_t imm12, uint32_t mod1);
void sfppushc(uint32_t mod1);
void sfppopc(uint32_t mod1);
// SFPCOMPC: the else of if/else: flags = !flags within the lanes the enclosing level (stack top) enables.
void sfpcompc();

// SFPCONFIG: VD 11-14 (programmable constants) = broadcast of lanes 0-7 of LReg[0] (SFPCONFIG.md); other
// destinations (macro / lane configuration) are accepted and not modelled (the emulator does not run
// SFPLOADMACRO sequences; kernels are built with DISABLE_SFPLOADMACRO).
void sfpconfig(uint32_t imm16, uint32_t vd, uint32_t mod1);

// ---- the SFPU's part of an LLK op: where it starts in DST
void start_tile(uint32_t dst_index, const char* who);
void done();
// INCRWC: Dst counter += rows (the carriage-return register stays). SETRWC: Dst = (CR_D ? CR + rows : rows),
// and CR takes the new value.
inline void inc_dst_rwc(uint32_t rows) { m().dst_rwc += rows; }
inline void set_dst_rwc(uint32_t rows, bool from_cr = false) {
    Machine& s = m();
    s.dst_rwc = from_cr ? s.dst_cr + rows : rows;
    s.dst_cr = s.dst_rwc;
}

// ---- instructions
enum Op : uint8_t {
    kLoad, kStore, kLoadI, kMad, kAddI, kMulI, kMov, kSwap, kExExp, kExMan, kShft, kShft2, kCast, kSetExp, kSetMan,
    kSetSgn, kAbs, kNot, kAnd, kOr, kXor, kLz, kDivP2, kIAdd, kStochRnd, kSetCC, kEnCC, kPushC, kPopC, kCompC,
    kConfig, kNop, kIncRwc, kSetRwc, kLoadMacro, kTransp,
};

// The instruction set the TT_* / TTI_* macros of include_llk/ckernel_ops.h issue, and its interpreter: exec runs one
// instruction, issue() one instruction as a macro issues it (recorded too while the replay buffer loads).
void exec(const Instr& i);

void issue(uint8_t op, uint32_t a0 = 0, uint32_t a1 = 0, uint32_t a2 = 0, uint32_t a3 = 0, uint32_t a4 = 0,
    uint32_t a5 = 0);

// REPLAY (REPLAY.md): load_mode 1 records the next `len` instructions into slots start.. (executing them too when
// exec_while_loading); load_mode 0 executes slots start .. start+len-1.
void replay(uint32_t start, uint32_t len, uint32_t exec_while_loading, uint32_t load_mode);

}  // namespace emu::sfpu
