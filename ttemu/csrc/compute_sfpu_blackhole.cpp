// The Blackhole Vector Unit instructions (include/emu/compute_sfpu_blackhole.h declares them and documents their
// semantics), over the SFPU machine shared with the Wormhole model (csrc/compute_sfpu.cpp). Built into the runtime
// executable and the C++ unit tests' libraries, as compute_sfpu.cpp.
#include "emu/compute_sfpu_blackhole.h"

#include <cmath>
#include <cstdint>

#include "emu/compute_sfpu_isa.h"
#include "emu/runtime.h"

namespace emu::sfpu::bh {

namespace {

// SFPARECIP.md, ApproxRecip: 7 bits of the reciprocal's mantissa from the input's top 7 mantissa bits.
constexpr uint8_t kRecipLut[128] = {
    127, 125, 123, 121, 119, 117, 116, 114, 112, 110, 109, 107, 105, 104, 102, 100, 99, 97, 96, 94, 93, 91,
    90,  88,  87,  85,  84,  83,  81,  80,  79,  77,  76,  75,  74,  72,  71,  70,  69, 68, 66, 65, 64, 63,
    62,  61,  60,  59,  58,  57,  56,  55,  54,  53,  52,  51,  50,  49,  48,  47,  46, 45, 44, 43, 42, 41,
    40,  40,  39,  38,  37,  36,  35,  35,  34,  33,  32,  31,  31,  30,  29,  28,  28, 27, 26, 25, 25, 24,
    23,  23,  22,  21,  21,  20,  19,  19,  18,  17,  17,  16,  15,  15,  14,  14,  13, 12, 12, 11, 11, 10,
    9,   9,   8,   8,   7,   7,   6,   5,   5,   4,   4,   3,   3,   2,   2,   1,   1,  0};

// SFPARECIP.md, ApproxExp: the result's mantissa bits 22..16 for inputs 0.015625 <= x < 2, indexed by the input's
// top 16 bits minus 0x3c80 (exponents 121..127: 7 x 128 entries).
constexpr uint8_t kExpLut[896] = {
      2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,
      2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,
      2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   2,   3,   3,   3,   3,   3,   3,   3,
      3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,
      3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   3,
      3,   3,   3,   3,   3,   3,   3,   3,   3,   3,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,
      4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   4,   5,   5,   5,   5,
      5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,
      5,   5,   5,   5,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,
      6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   6,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,
      7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   8,   8,   8,   8,
      8,   8,   8,   8,   8,   8,   8,   8,   8,   8,   8,   8,   8,   8,   8,   9,   9,   9,   9,   9,   9,   9,   9,
      9,   9,   9,   9,   9,   9,   9,  10,  10,  10,  10,  10,  10,  10,  10,  10,  10,  10,  10,  10,  10,  11,  11,
     11,  11,  11,  11,  11,  11,  11,  11,  11,  11,  11,  11,  11,  12,  12,  12,  12,  12,  12,  12,  12,  12,  12,
     12,  12,  12,  12,  12,  13,  13,  13,  13,  13,  13,  13,  13,  13,  13,  13,  13,  13,  13,  14,  14,  14,  14,
     14,  14,  14,  14,  14,  14,  14,  14,  14,  14,  15,  15,  15,  15,  15,  15,  15,  15,  15,  15,  15,  15,  15,
     15,  15,  16,  16,  16,  16,  16,  16,  16,  16,  16,  16,  16,  16,  16,  16,  17,  17,  17,  17,  17,  17,  17,
     18,  18,  18,  18,  18,  18,  18,  19,  19,  19,  19,  19,  19,  19,  20,  20,  20,  20,  20,  20,  20,  21,  21,
     21,  21,  21,  21,  21,  22,  22,  22,  22,  22,  22,  22,  23,  23,  23,  23,  23,  23,  24,  24,  24,  24,  24,
     24,  24,  25,  25,  25,  25,  25,  25,  25,  26,  26,  26,  26,  26,  26,  27,  27,  27,  27,  27,  27,  27,  28,
     28,  28,  28,  28,  28,  28,  29,  29,  29,  29,  29,  29,  30,  30,  30,  30,  30,  30,  30,  31,  31,  31,  31,
     31,  31,  32,  32,  32,  32,  32,  32,  33,  33,  33,  33,  33,  33,  33,  34,  34,  34,  34,  34,  34,  35,  35,
     35,  35,  35,  35,  36,  36,  36,  36,  36,  37,  37,  37,  38,  38,  38,  39,  39,  39,  40,  40,  40,  41,  41,
     41,  42,  42,  42,  43,  43,  43,  44,  44,  44,  45,  45,  45,  46,  46,  46,  47,  47,  47,  48,  48,  49,  49,
     49,  50,  50,  50,  51,  51,  51,  52,  52,  52,  53,  53,  53,  54,  54,  54,  55,  55,  56,  56,  56,  57,  57,
     57,  58,  58,  58,  59,  59,  60,  60,  60,  61,  61,  61,  62,  62,  63,  63,  63,  64,  64,  64,  65,  65,  66,
     66,  66,  67,  67,  67,  68,  68,  69,  69,  69,  70,  70,  71,  71,  71,  72,  72,  72,  73,  73,  74,  74,  74,
     75,  75,  76,  76,  76,  77,  77,  78,  78,  78,  79,  79,  80,  80,  80,  81,  81,  82,  82,  83,  83,  84,  85,
     86,  87,  88,  88,  89,  90,  91,  92,  93,  94,  94,  95,  96,  97,  98,  99, 100, 101, 101, 102, 103, 104, 105,
    106, 107, 108, 109, 110, 111, 112, 113, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127,
      0,   0,   1,   1,   2,   2,   3,   3,   4,   4,   5,   5,   6,   6,   7,   8,   8,   9,   9,  10,  10,  11,  11,
     12,  12,  13,  13,  14,  15,  15,  16,  16,  17,  17,  18,  19,  19,  20,  20,  21,  21,  22,  23,  23,  24,  24,
     25,  26,  26,  27,  27,  28,  29,  29,  30,  31,  31,  32,  32,  33,  34,  34,  35,  36,  36,  37,  38,  38,  39,
     39,  40,  41,  41,  42,  43,  43,  44,  45,  45,  47,  48,  50,  51,  52,  54,  55,  57,  58,  60,  61,  63,  64,
     66,  67,  69,  70,  72,  73,  75,  76,  78,  80,  81,  83,  85,  86,  88,  90,  91,  93,  95,  97,  98, 100, 102,
    104, 106, 107, 109, 111, 113, 115, 117, 119, 121, 123, 125, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137,
    139, 140, 141, 142, 143, 144, 145, 146, 147, 149, 150, 151, 152, 153, 155, 156, 157, 158, 159, 161, 162, 163, 165,
    166, 167, 168, 170, 171, 172, 174, 175, 177, 178, 179, 181, 182, 184, 185, 187, 188, 189, 191, 192, 194, 196, 197,
    199, 200, 202, 203, 205, 207, 208, 210, 211, 213, 215, 216, 218, 220, 222, 223, 225, 227, 229, 230, 232, 234};

inline void set_lane_flag(Machine& s, uint32_t l, bool f) { s.flags = f ? (s.flags | (1u << l)) : (s.flags & ~(1u << l)); }

// A store's float conversion on Blackhole (SFPSTORE.md ToFP32 / ToBF16): a denormal becomes zero of its sign.
inline uint32_t flush_denormal_signed(uint32_t x) { return (x & 0x7f800000u) == 0 ? (x & 0x80000000u) : x; }

}  // namespace

uint32_t approx_recip(uint32_t x) {
    if (x < 0x00800000u) return 0x7f800000u;  // below 2^-126 (zero, denormal): +Inf
    if (x < 0x7e800000u) return ((253u - (x >> 23)) << 23) | (uint32_t(kRecipLut[(x >> 16) & 0x7fu]) << 16);
    return 0u;  // 2^126 and above (Inf, NaN): 0
}

uint32_t approx_exp(uint32_t x) {
    if (x < 0x00800000u) return 0x3f800000u;                     // below 2^-126: 1.0
    if (x < 0x3c800000u) return 0x3f810000u | (x & 0xffffu);      // below 0.015625
    uint32_t lut = (x < 0x40000000u) ? uint32_t(kExpLut[(x >> 16) - 0x3c80u]) << 16 : 0u;
    if (x < 0x3f320000u) return 0x3f800000u | lut | (x & 0xffffu);  // below 0.6953125
    if (x < 0x40000000u) return 0x40000000u | lut | (x & 0xffffu);  // below 2
    return 0x40800000u | (x & 0xffffu);
}

void sfpmad(uint32_t va, uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    if (vd >= 12 && vd != 16) return;  // VD 12-15 with the backdoor load: a LoadMacro template (not modelled)
    Vec a = s.lreg[va], b = s.lreg[vb], c = s.lreg[vc], sel = s.lreg[7];
    uint32_t en = s.enabled();
    for (uint32_t l = 0; l < kLanes; ++l) {
        if (!(en >> l & 1)) continue;
        uint32_t av = (mod1 & 4) ? s.lreg[sel.u[l] & 15u].u[l] : a.u[l];
        uint32_t cv = c.u[l];
        if (mod1 & 1) av ^= 0x80000000u;
        if (mod1 & 2) cv ^= 0x80000000u;
        uint32_t d = mad(av, b.u[l], cv);
        uint32_t target = ((mod1 & 8) && vd != 16) ? (sel.u[l] & 15u) : vd;
        if (target < 8 || target == 16) s.lreg[target].u[l] = d;
    }
}

namespace {
// SFPADDI / SFPMULI: d = f(LReg[VD], lane) in enabled lanes, into VD or (mod1 8) LReg[LReg[7] & 15].
template <typename F>
void imm_mad(uint32_t vd, uint32_t mod1, F f) {
    Machine& s = m();
    if (vd >= 12 && vd != 16) return;  // VD 12-15 with the backdoor load: a LoadMacro template (not modelled)
    Vec c = s.lreg[vd], sel = s.lreg[7];
    uint32_t en = s.enabled();
    for (uint32_t l = 0; l < kLanes; ++l) {
        if (!(en >> l & 1)) continue;
        uint32_t cv = (mod1 & 2) ? c.u[l] ^ 0x80000000u : c.u[l];
        uint32_t target = ((mod1 & 8) && vd != 16) ? (sel.u[l] & 15u) : vd;
        if (target < 8 || target == 16) s.lreg[target].u[l] = f(cv);
    }
}
}  // namespace

void sfpaddi(uint32_t imm16, uint32_t vd, uint32_t mod1) {
    imm_mad(vd, mod1, [&](uint32_t c) { return mad(bf16_imm(imm16), as_u(1.0f), c); });
}

void sfpmuli(uint32_t imm16, uint32_t vd, uint32_t mod1) {
    imm_mad(vd, mod1, [&](uint32_t c) { return mad(bf16_imm(imm16), c, 0u); });
}

void sfparecip(uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec b = s.lreg[vb], c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        uint32_t x = c.u[l], sign = x & 0x80000000u;
        switch (mod1) {
            case kARecipRecip: return sign + approx_recip(x - sign);
            case kARecipCondRecip:
                return static_cast<int32_t>(b.u[l]) < 0 ? approx_recip(x - sign) : s.lreg[vd].u[l];
            default: return sign + approx_exp(x - sign);  // kARecipExp (and, per the page, any other mode)
        }
    });
}

void sfpcmp(uint32_t vc, uint32_t vd, uint32_t mod1, bool greater) {
    Machine& s = m();
    if (vd >= 12 && vd != 16) return;  // VD 12-15 with the backdoor load: a LoadMacro template (not modelled)
    uint32_t en = s.enabled();
    Vec c = s.lreg[vc], d = s.lreg[vd];
    for (uint32_t l = 0; l < kLanes; ++l) {
        bool vc_smaller = signmag_smaller(c.u[l], d.u[l]);
        bool r = greater ? vc_smaller : !vc_smaller;  // SFPGT: VD > VC; SFPLE: VD <= VC
        if (en >> l & 1) {
            if ((mod1 & kCmpSetVD) && (vd < 8 || vd == 16)) s.lreg[vd].u[l] = r ? 0xffffffffu : 0u;
            if (mod1 & kCmpSetCC) set_lane_flag(s, l, r);
        }
        if ((mod1 & kCmpMutateStack) && !s.stack.empty()) {  // every lane, enabled or not
            uint32_t& top = s.stack.back().flags;
            if (mod1 & kCmpMutateOr)
                top |= uint32_t(r) << l;
            else
                top &= ~(uint32_t(!r) << l);
        }
    }
}

void sfpbitop(uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1, int op) {
    Machine& s = m();
    Vec b = s.lreg[(mod1 & 1) ? vb : vd], c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) { return op == 0 ? (b.u[l] & c.u[l]) : (b.u[l] | c.u[l]); });
}

void sfpshft(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc], d = s.lreg[vd];
    int32_t imm = static_cast<int32_t>(static_cast<int16_t>((imm12 & 0xfffu) << 4) >> 4);
    lanewise(vd, [&](uint32_t l) {
        uint32_t x = d.u[l];
        int32_t amount = static_cast<int32_t>(c.u[l]);
        if (mod1 & 1) {
            if (mod1 & 4) x = c.u[l];  // ARG_IMM_USE_VC: the value is LReg[VC], the amount Imm12
            amount = imm;
        }
        if (amount >= 0) return x << (amount & 31);
        if (mod1 & 2) return static_cast<uint32_t>(static_cast<int32_t>(x) >> ((-amount) & 31));
        return x >> ((-amount) & 31);
    });
}

void sfpcast(uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    switch (mod1 & 3) {
        case 2:  // INT32_ABS
            lanewise(vd, [&](uint32_t l) { return c.u[l] >= 0x80000000u ? 0u - c.u[l] : c.u[l]; });
            break;
        case 3:  // INT32_SM32: either direction, the same bit operation
            lanewise(vd, [&](uint32_t l) {
                uint32_t sign = c.u[l] & 0x80000000u;
                return sign | (sign ? 0u - c.u[l] : c.u[l]);
            });
            break;
        default: emu::sfpu::sfpcast(vc, vd, mod1);  // sign-magnitude -> FP32, as on Wormhole
    }
}

void sfpload(uint32_t vd, uint32_t mod0, uint32_t addr_mod, uint32_t imm10) {
    // INT32_SM / INT8_COMP are deprecated on Blackhole and convert nothing: the INT32 move (INT8_COMP's
    // sign-magnitude 11-bit read is not used by the LLK and is not modelled).
    if (mod0 == kFmtInt8Comp) fault("SFPLOAD: INT8_COMP is not modelled by the emulator on Blackhole");
    emu::sfpu::sfpload(vd, mod0 == kFmtInt32Sm ? kFmtInt32 : mod0, addr_mod, imm10);
}

void sfpstore(uint32_t vd, uint32_t mod0, uint32_t addr_mod, uint32_t imm10) {
    if (mod0 == kFmtInt8Comp) fault("SFPSTORE: INT8_COMP is not modelled by the emulator on Blackhole");
    uint32_t fmt = resolve_fmt(mod0 == kFmtInt32Sm ? kFmtInt32 : mod0);
    Machine& s = m();
    if ((fmt == kFmtFp32 || fmt == kFmtFp16b) && (vd < 8 || vd == 16)) {
        // The float stores flush denormals to signed zero: store a flushed copy, keep the register as it was.
        Vec keep = s.lreg[vd];
        for (uint32_t l = 0; l < kLanes; ++l) s.lreg[vd].u[l] = flush_denormal_signed(keep.u[l]);
        emu::sfpu::sfpstore(vd, fmt, addr_mod, imm10);
        s.lreg[vd] = keep;
        return;
    }
    emu::sfpu::sfpstore(vd, fmt, addr_mod, imm10);
}

void exec(const Instr& i) {
    switch (i.op) {
        case kMad: sfpmad(i.a0, i.a1, i.a2, i.a3, i.a4); break;
        case kAddI: sfpaddi(i.a0, i.a1, i.a2); break;
        case kMulI: sfpmuli(i.a0, i.a1, i.a2); break;
        case kARecip: sfparecip(i.a0, i.a1, i.a2, i.a3); break;
        case kGt: sfpcmp(i.a1, i.a2, i.a3, true); break;
        case kLe: sfpcmp(i.a1, i.a2, i.a3, false); break;
        case kAnd: sfpbitop(i.a0, i.a1, i.a2, i.a3, 0); break;
        case kOr: sfpbitop(i.a0, i.a1, i.a2, i.a3, 1); break;
        case kLoad: sfpload(i.a0, i.a1, i.a2, i.a3); break;
        case kStore: sfpstore(i.a0, i.a1, i.a2, i.a3); break;
        case kShft: sfpshft(i.a0, i.a1, i.a2, i.a3); break;
        case kCast: sfpcast(i.a0, i.a1, i.a2); break;
        default: fault("SFPU: instruction %u is not a Blackhole instruction the emulator models", unsigned(i.op));
    }
}

}  // namespace emu::sfpu::bh
