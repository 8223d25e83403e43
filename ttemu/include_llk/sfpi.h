// Host implementation of the SFPI C++ library (tenstorrent/sfpi include/sfpi.h, sfpi_lib.h; the interface the
// wheel's tt-llk / llk_api SFPU kernels are written in), over the emulator's Vector Unit model
// (emu/compute_sfpu_isa.h). Vectors are 32 lanes of 32 bits; every operation is the SFPU instruction the SFPI
// compiler emits for it, with the instruction's documented numerics:
//   * vFloat + - * : SFPMAD (fp32, denormal inputs read as zero, RNE, denormal / -0 results flushed to +0). As
//     sfpi-gcc does, `a * b + c` (and `c + a * b`, `a * b - c`) is ONE fused SFPMAD: operator* returns a product
//     expression that fuses into a following + / -, and rounds on its own only when used as a vFloat.
//   * assignment to a vector, and stores to dst_reg, happen only in enabled lanes (v_if / v_elseif / v_else /
//     v_endif / v_and run on the SFPU's lane flags and flag stack, shared with the TTI_SFP* macros); a new
//     vector (construction, function argument, return value) takes every lane, as a fresh LReg does.
//   * comparisons are the instruction sequences sfpi uses on Wormhole: vFloat against 0 tests the sign / zero bits
//     (SFPSETCC), against anything else the sign of the SFPMAD difference; vInt the sign of the two's complement
//     difference (SFPIADD, which wraps).
//   * dst_reg[i] is Dst address 2*i past the current RWC (SFP_DESTREG_STRIDE), dst_reg++ advances it by 2 rows.
// Conversions follow SFPSTOCHRND / SFPCAST (round to nearest = ties away from zero for SFPSTOCHRND).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "emu/compute_sfpu_isa.h"
#ifdef ARCH_BLACKHOLE
#include "emu/compute_sfpu_blackhole.h"
#endif

#ifndef sfpi_inline
#define sfpi_inline inline __attribute__((always_inline))
#endif

namespace sfpi {

constexpr unsigned SFP_LREG_COUNT = 8;
constexpr unsigned SFP_DESTREG_STRIDE = 2;  // Dst rows per dst_reg index

// Instruction mode constants (sfpi_constants.h, Wormhole) that LLK TTI code names.
constexpr unsigned SFPLOADI_MOD0_FLOATB = 0, SFPLOADI_MOD0_FLOATA = 1, SFPLOADI_MOD0_USHORT = 2,
                   SFPLOADI_MOD0_SHORT = 4, SFPLOADI_MOD0_UPPER = 8, SFPLOADI_MOD0_LOWER = 10;
constexpr unsigned SFPSTOCHRND_RND_EVEN = 0, SFPSTOCHRND_RND_STOCH = 1;
constexpr unsigned SFPSTOCHRND_MOD1_FP32_TO_FP16A = 0, SFPSTOCHRND_MOD1_FP32_TO_FP16B = 1,
                   SFPSTOCHRND_MOD1_FP32_TO_UINT8 = 2, SFPSTOCHRND_MOD1_FP32_TO_INT8 = 3,
                   SFPSTOCHRND_MOD1_FP32_TO_UINT16 = 6, SFPSTOCHRND_MOD1_FP32_TO_INT16 = 7;
constexpr unsigned SFPCAST_MOD1_INT32_TO_FP32_RNE = 0, SFPCAST_MOD1_INT32_TO_FP32_RNS = 1,
                   SFPCAST_MOD1_SM32_TO_FP32_RNE = 0;
constexpr unsigned SFPEXMAN_MOD1_PAD8 = 0, SFPEXMAN_MOD1_PAD9 = 1;
constexpr unsigned SFPEXEXP_MOD1_DEBIAS = 0, SFPEXEXP_MOD1_NODEBIAS = 1, SFPEXEXP_MOD1_SET_CC_SGN_EXP = 2,
                   SFPEXEXP_MOD1_SET_CC_COMP_EXP = 8, SFPEXEXP_MOD1_SET_CC_SGN_COMP_EXP = 10;
constexpr unsigned SFPSWAP_MOD1_SWAP = 0, SFPSWAP_MOD1_VEC_MIN_MAX = 1;
constexpr unsigned SFPSETCC_MOD1_LREG_LT0 = 0, SFPSETCC_MOD1_IMM_BIT0 = 1, SFPSETCC_MOD1_LREG_NE0 = 2,
                   SFPSETCC_MOD1_LREG_GTE0 = 4, SFPSETCC_MOD1_LREG_EQ0 = 6, SFPSETCC_MOD1_COMP = 8;
constexpr unsigned SFPENCC_IMM12_NEITHER = 0, SFPENCC_IMM12_BOTH = 3;
constexpr unsigned SFPENCC_MOD1_EU_R1 = 0, SFPENCC_MOD1_EC_R1 = 1, SFPENCC_MOD1_EI_R1 = 2, SFPENCC_MOD1_EU_RI = 8,
                   SFPENCC_MOD1_EC_RI = 9, SFPENCC_MOD1_EI_RI = 10;
constexpr unsigned SFPIADD_MOD1_ARG_LREG_DST = 0, SFPIADD_MOD1_ARG_IMM = 1, SFPIADD_MOD1_ARG_2SCOMP_LREG_DST = 2,
                   SFPIADD_MOD1_CC_LT0 = 0, SFPIADD_MOD1_CC_NONE = 4, SFPIADD_MOD1_CC_GTE0 = 8;
constexpr unsigned SFPSHFT2_MOD1_SHFT_LREG = 5, SFPSHFT_MOD1_ARG_IMM = 1;
constexpr unsigned SFPSETEXP_MOD1_ARG_IMM = 1, SFPSETEXP_MOD1_ARG_EXPONENT = 2;
constexpr unsigned SFPSETSGN_MOD1_ARG_IMM = 1, SFPSETMAN_MOD1_ARG_IMM = 1;
constexpr unsigned SFPLZ_MOD1_CC_NONE = 0, SFPLZ_MOD1_CC_NE0 = 2, SFPLZ_MOD1_NOSGN_CC_NONE = 4;
constexpr unsigned SFPABS_MOD1_INT = 0, SFPABS_MOD1_FLOAT = 1;
constexpr unsigned SFPMOV_MOD1_COMPSIGN = 1;
constexpr unsigned SFPPUSHC_MOD1_PUSH = 0, SFPPUSHC_MOD1_REPLACE = 1;
constexpr unsigned SFPSDIVP2_MOD1_ADD = 1;

namespace impl_ {

using emu::sfpu::Vec;
using emu::sfpu::kLanes;
namespace isa = emu::sfpu;

// The chip's MAD unit and Dst moves: on Blackhole its own numerics (canonical NaN, denormal results flushed to
// signed zero; float stores flush denormals the same way; emu/compute_sfpu_blackhole.h), else Wormhole's.
#ifdef ARCH_BLACKHOLE
inline uint32_t mad(uint32_t a, uint32_t b, uint32_t c) { return isa::bh::mad(a, b, c); }
inline void sfpload(uint32_t vd, uint32_t mod0, uint32_t am, uint32_t imm) { isa::bh::sfpload(vd, mod0, am, imm); }
inline void sfpstore(uint32_t vd, uint32_t mod0, uint32_t am, uint32_t imm) { isa::bh::sfpstore(vd, mod0, am, imm); }
#else
using isa::mad;
using isa::sfpload;
using isa::sfpstore;
#endif

inline Vec splat(uint32_t u) {
    Vec v;
    for (uint32_t l = 0; l < kLanes; ++l) v.u[l] = u;
    return v;
}
template <typename F>
inline Vec map1(const Vec& a, F f) {
    Vec r;
    for (uint32_t l = 0; l < kLanes; ++l) r.u[l] = f(a.u[l]);
    return r;
}
template <typename F>
inline Vec map2(const Vec& a, const Vec& b, F f) {
    Vec r;
    for (uint32_t l = 0; l < kLanes; ++l) r.u[l] = f(a.u[l], b.u[l]);
    return r;
}

// Base of every vector type: 32 lanes; assignment writes the enabled lanes only.
class vVal {
   public:
    Vec v;
    vVal() { std::memset(&v, 0, sizeof v); }
    explicit vVal(const Vec& x) : v(x) {}
    vVal(const vVal&) = default;
    vVal& operator=(const vVal& o) {
        assign(o.v);
        return *this;
    }
    void assign(const Vec& x) {
        uint32_t en = isa::m().enabled();
        for (uint32_t l = 0; l < kLanes; ++l)
            if (en >> l & 1) v.u[l] = x.u[l];
    }
    const Vec& get() const { return v; }
};

}  // namespace impl_

class vFloat;
class vInt;
class vUInt;

// A product not yet rounded: fuses into the next + / - as one SFPMAD (sfpi-gcc's MAD combining). Declared in
// namespace sfpi so that argument-dependent lookup finds its operators from the LLK's namespaces.
struct MulExpr {
    impl_::Vec a, b;
    impl_::Vec round() const {
        return impl_::map2(a, b, [](uint32_t x, uint32_t y) { return impl_::mad(x, y, 0u); });
    }
};
namespace impl_ {
using sfpi::MulExpr;
}  // namespace impl_

class sFloat16a {
    uint16_t val;

   public:
    explicit sFloat16a(uint32_t v) : val(static_cast<uint16_t>(v)) {}
    explicit sFloat16a(int32_t v) : val(static_cast<uint16_t>(v)) {}
    uint32_t get() const { return val; }
};
class sFloat16b {
    uint16_t val;

   public:
    explicit sFloat16b(float f) : val(static_cast<uint16_t>(emu::f32_bits(f) >> 16)) {}  // truncates
    explicit sFloat16b(double f) : sFloat16b(static_cast<float>(f)) {}
    explicit sFloat16b(int32_t v) : val(static_cast<uint16_t>(v)) {}
    explicit sFloat16b(uint32_t v) : val(static_cast<uint16_t>(v)) {}
    uint32_t get() const { return val; }
};
using s2vFloat16a = sFloat16a;
using s2vFloat16b = sFloat16b;

class vFloat : public impl_::vVal {
   public:
    vFloat() = default;
    vFloat(const vFloat&) = default;
    vFloat& operator=(const vFloat&) = default;
    vFloat(const impl_::Vec& x) : vVal(x) {}
    vFloat(int i) : vFloat(static_cast<float>(i)) {}
    vFloat(unsigned i) : vFloat(static_cast<float>(i)) {}
    vFloat(float f) : vVal(impl_::splat(emu::f32_bits(f))) {}
    vFloat(double f) : vFloat(static_cast<float>(f)) {}
    vFloat(sFloat16a f) : vVal(impl_::splat(emu::sfpu::fp16a_imm(f.get()))) {}
    vFloat(sFloat16b f) : vVal(impl_::splat(f.get() << 16)) {}
    vFloat(const impl_::MulExpr& e) : vVal(e.round()) {}
    vFloat& operator=(const impl_::MulExpr& e) {
        assign(e.round());
        return *this;
    }
    vFloat& operator+=(const vFloat& o);
    vFloat& operator-=(const vFloat& o);
    vFloat& operator*=(const vFloat& o);
};

// ---- vFloat arithmetic (SFPMAD)
namespace impl_ {
inline Vec fadd(const Vec& a, const Vec& b) {
    return map2(a, b, [](uint32_t x, uint32_t y) { return impl_::mad(x, 0x3f800000u, y); });
}
inline Vec fsub(const Vec& a, const Vec& b) {
    return map2(a, b, [](uint32_t x, uint32_t y) { return impl_::mad(x, 0x3f800000u, y ^ 0x80000000u); });
}
inline Vec fma3(const Vec& a, const Vec& b, const Vec& c, bool neg_c) {
    Vec r;
    for (uint32_t l = 0; l < kLanes; ++l) r.u[l] = impl_::mad(a.u[l], b.u[l], neg_c ? c.u[l] ^ 0x80000000u : c.u[l]);
    return r;
}
}  // namespace impl_

inline impl_::MulExpr operator*(const vFloat& a, const vFloat& b) { return {a.v, b.v}; }
inline impl_::MulExpr operator*(float a, const vFloat& b) { return {impl_::splat(emu::f32_bits(a)), b.v}; }
inline impl_::MulExpr operator*(const vFloat& a, float b) { return {a.v, impl_::splat(emu::f32_bits(b))}; }
inline vFloat operator*(const impl_::MulExpr& a, const vFloat& b) { return vFloat(a) * b; }
inline vFloat operator*(const vFloat& a, const impl_::MulExpr& b) { return a * vFloat(b); }
inline vFloat operator*(const impl_::MulExpr& a, const impl_::MulExpr& b) { return vFloat(a) * vFloat(b); }
inline vFloat operator*(const impl_::MulExpr& a, float b) { return vFloat(a) * b; }
inline vFloat operator*(float a, const impl_::MulExpr& b) { return a * vFloat(b); }

inline vFloat operator+(const vFloat& a, const vFloat& b) { return vFloat(impl_::fadd(a.v, b.v)); }
inline vFloat operator-(const vFloat& a, const vFloat& b) { return vFloat(impl_::fsub(a.v, b.v)); }
inline vFloat operator+(const vFloat& a, float b) { return a + vFloat(b); }
inline vFloat operator+(float a, const vFloat& b) { return vFloat(a) + b; }
inline vFloat operator-(const vFloat& a, float b) { return a - vFloat(b); }
inline vFloat operator-(float a, const vFloat& b) { return vFloat(a) - b; }
inline vFloat operator-(const vFloat& a) {  // SFPMOV with sign complement
    return vFloat(impl_::map1(a.v, [](uint32_t x) { return x ^ 0x80000000u; }));
}
inline vFloat operator+(const vFloat& a) { return a; }

inline vFloat operator+(const impl_::MulExpr& m, const vFloat& c) { return vFloat(impl_::fma3(m.a, m.b, c.v, false)); }
inline vFloat operator+(const vFloat& c, const impl_::MulExpr& m) { return m + c; }
inline vFloat operator-(const impl_::MulExpr& m, const vFloat& c) { return vFloat(impl_::fma3(m.a, m.b, c.v, true)); }
inline vFloat operator-(const vFloat& c, const impl_::MulExpr& m) {  // c - a*b = (-a)*b + c
    impl_::Vec na = impl_::map1(m.a, [](uint32_t x) { return x ^ 0x80000000u; });
    return vFloat(impl_::fma3(na, m.b, c.v, false));
}
inline vFloat operator+(const impl_::MulExpr& m, float c) { return m + vFloat(c); }
inline vFloat operator+(float c, const impl_::MulExpr& m) { return m + vFloat(c); }
inline vFloat operator-(const impl_::MulExpr& m, float c) { return m - vFloat(c); }
inline vFloat operator-(float c, const impl_::MulExpr& m) { return vFloat(c) - m; }
inline vFloat operator+(const impl_::MulExpr& a, const impl_::MulExpr& b) { return a + vFloat(b); }
inline vFloat operator-(const impl_::MulExpr& a, const impl_::MulExpr& b) { return a - vFloat(b); }
inline vFloat operator-(const impl_::MulExpr& m) { return -vFloat(m); }

inline vFloat& vFloat::operator+=(const vFloat& o) { return *this = *this + o; }
inline vFloat& vFloat::operator-=(const vFloat& o) { return *this = *this - o; }
inline vFloat& vFloat::operator*=(const vFloat& o) { return *this = vFloat(*this * o); }

// ---- piecewise-linear tables (SFPLUT / SFPLUTFP32; tt-isa-documentation SFPLUT.md, SFPLUTFP32.md)
namespace impl_ {
// fp32 -> the 8-bit LUT format (sign, 3-bit exponent 127-E for E in 0..7, 4-bit mantissa; 0xff = 0), nearest.
inline uint32_t to_lut8(float f) {
    if (f == 0.0f) return 0xffu;
    uint32_t u = emu::f32_bits(f), sign = u >> 31;
    int e = static_cast<int>((u >> 23) & 0xffu) - 127;
    uint32_t man = ((u & 0x7fffffu) + (1u << 18)) >> 19;  // round to 4 bits
    if (man == 16) man = 0, e += 1;
    if (e > 0) e = 0, man = 15;                            // largest: 1.9375
    if (e < -7) return 0xffu;                              // below 2^-7: zero
    return (sign << 7) | (static_cast<uint32_t>(-e) << 4) | man;
}
inline uint32_t lut8_to_fp32(uint32_t x) {
    x &= 0xffu;
    if (x == 0xffu) return 0;
    return ((x >> 7) << 31) | ((127u - ((x >> 4) & 7u)) << 23) | ((x & 0xfu) << 19);
}
// fp32 -> the 16-bit LUT format (IEEE half layout, exponent 0 read as a normal number), nearest.
inline uint32_t to_lut16(float f) {
    uint32_t u = emu::f32_bits(f), sign = u >> 31;
    if ((u & 0x7fffffffu) == 0) return (sign << 15) | (0x1fu << 10);  // exponent 31 reads as 0
    int e = static_cast<int>((u >> 23) & 0xffu) - 112;
    uint32_t man = ((u & 0x7fffffu) + (1u << 12)) >> 13;
    if (man == 1024) man = 0, e += 1;
    if (e > 30) e = 30, man = 1023;
    if (e < 0) return (sign << 15) | (0x1fu << 10);
    return (sign << 15) | (static_cast<uint32_t>(e) << 10) | man;
}
inline uint32_t lut16_to_fp32(uint32_t x) {
    x &= 0xffffu;
    uint32_t sign = x >> 15, exp = (x >> 10) & 0x1fu, man = x & 0x3ffu;
    return (sign << 31) | ((exp == 0x1f ? 0u : 112u + exp) << 23) | (man << 13);
}
}  // namespace impl_

// ---- integer vectors
class vInt : public impl_::vVal {
   public:
    vInt() = default;
    vInt(const vInt&) = default;
    vInt& operator=(const vInt&) = default;
    vInt(const impl_::Vec& x) : vVal(x) {}
    vInt(int32_t i) : vVal(impl_::splat(static_cast<uint32_t>(i))) {}
    vInt(uint32_t i) : vVal(impl_::splat(i)) {}
    vInt(int16_t i) : vInt(static_cast<int32_t>(i)) {}
    vInt(uint16_t i) : vVal(impl_::splat(i)) {}
    explicit vInt(const vUInt& u);
    vInt& operator+=(const vInt& o);
    vInt& operator-=(const vInt& o);
    vInt& operator&=(const vInt& o);
    vInt& operator|=(const vInt& o);
    vInt& operator^=(const vInt& o);
    vInt& operator<<=(unsigned n);
    operator vUInt() const;
};
class vUInt : public impl_::vVal {
   public:
    vUInt() = default;
    vUInt(const vUInt&) = default;
    vUInt& operator=(const vUInt&) = default;
    vUInt(const impl_::Vec& x) : vVal(x) {}
    vUInt(int32_t i) : vVal(impl_::splat(static_cast<uint32_t>(i))) {}
    vUInt(uint32_t i) : vVal(impl_::splat(i)) {}
    vUInt(int16_t i) : vUInt(static_cast<int32_t>(i)) {}
    vUInt(uint16_t i) : vVal(impl_::splat(i)) {}
    explicit vUInt(const vInt& i) : vVal(i.v) {}
    vUInt& operator+=(const vUInt& o);
    vUInt& operator-=(const vUInt& o);
    vUInt& operator&=(const vUInt& o);
    vUInt& operator|=(const vUInt& o);
    vUInt& operator^=(const vUInt& o);
    vUInt& operator<<=(unsigned n);
    vUInt& operator>>=(unsigned n);
};
inline vInt::vInt(const vUInt& u) : vVal(u.v) {}
inline vInt::operator vUInt() const { return vUInt(v); }

// Sign-magnitude and narrow containers (same 32-bit lanes, distinct types for convert<>).
class vSMag : public impl_::vVal {
   public:
    vSMag() = default;
    vSMag(const vSMag&) = default;
    vSMag& operator=(const vSMag&) = default;
    explicit vSMag(const impl_::Vec& x) : vVal(x) {}
    explicit vSMag(uint32_t u) : vVal(impl_::splat(u)) {}
};
class vMag : public impl_::vVal {
   public:
    vMag() = default;
    vMag(const vMag&) = default;
    vMag& operator=(const vMag&) = default;
    explicit vMag(const impl_::Vec& x) : vVal(x) {}
    vMag(const vInt& i) : vVal(i.v) {}
    operator vInt() const { return vInt(v); }
};
class vSMag16 : public vSMag {
   public:
    using vSMag::vSMag;
    vSMag16() = default;
};
class vSMag8 : public vSMag {
   public:
    using vSMag::vSMag;
    vSMag8() = default;
};
class vFloat16a : public vFloat {
   public:
    using vFloat::vFloat;
    vFloat16a() = default;
};
class vFloat16b : public vFloat {
   public:
    using vFloat::vFloat;
    vFloat16b() = default;
};
class vUInt16 : public vUInt {
   public:
    using vUInt::vUInt;
    vUInt16() = default;
};
class vUInt8 : public vUInt {
   public:
    using vUInt::vUInt;
    vUInt8() = default;
};

// LUT coefficient containers (one 32-bit register of packed coefficients, every lane the same).
class vLut8si : public vUInt {  // 8-bit slope (bits 15..8) and intercept (7..0): SFPLUT
   public:
    using vUInt::vUInt;
    vLut8si() = default;
    vLut8si(float slope, float intercept) : vUInt((impl_::to_lut8(slope) << 8) | impl_::to_lut8(intercept)) {}
};
class vLut16si : public vUInt {  // 16-bit slope (31..16) and intercept (15..0): SFPLUTFP32 3-entry fp16 table
   public:
    using vUInt::vUInt;
    vLut16si() = default;
    vLut16si(float slope, float intercept) : vUInt((impl_::to_lut16(slope) << 16) | impl_::to_lut16(intercept)) {}
};
class vLut16ss : public vUInt {  // two 16-bit slopes (second in 31..16): 6-entry fp16 table
   public:
    using vUInt::vUInt;
    vLut16ss() = default;
    vLut16ss(float s0, float s1) : vUInt((impl_::to_lut16(s1) << 16) | impl_::to_lut16(s0)) {}
};
class vLut16ii : public vUInt {  // two 16-bit intercepts
   public:
    using vUInt::vUInt;
    vLut16ii() = default;
    vLut16ii(float i0, float i1) : vUInt((impl_::to_lut16(i1) << 16) | impl_::to_lut16(i0)) {}
};

#define SFPI_EMU_IBIN(T, OP, EXPR)                                                              \
    inline T operator OP(const T& a, const T& b) {                                              \
        return T(impl_::map2(a.v, b.v, [](uint32_t x, uint32_t y) -> uint32_t { return EXPR; })); \
    }
SFPI_EMU_IBIN(vInt, +, x + y)
SFPI_EMU_IBIN(vInt, -, x - y)
SFPI_EMU_IBIN(vInt, &, x & y)
SFPI_EMU_IBIN(vInt, |, x | y)
SFPI_EMU_IBIN(vInt, ^, x ^ y)
SFPI_EMU_IBIN(vUInt, +, x + y)
SFPI_EMU_IBIN(vUInt, -, x - y)
SFPI_EMU_IBIN(vUInt, &, x & y)
SFPI_EMU_IBIN(vUInt, |, x | y)
SFPI_EMU_IBIN(vUInt, ^, x ^ y)
#undef SFPI_EMU_IBIN
inline vInt operator+(const vInt& a, int32_t b) { return a + vInt(b); }
inline vInt operator-(const vInt& a, int32_t b) { return a - vInt(b); }
inline vInt operator&(const vInt& a, int32_t b) { return a & vInt(b); }
inline vInt operator|(const vInt& a, int32_t b) { return a | vInt(b); }
inline vInt operator^(const vInt& a, int32_t b) { return a ^ vInt(b); }
inline vInt operator&(const vInt& a, unsigned b) { return a & vInt(b); }
inline vInt operator|(const vInt& a, unsigned b) { return a | vInt(b); }
inline vInt operator+(int32_t a, const vInt& b) { return b + a; }
inline vInt operator-(int32_t a, const vInt& b) { return vInt(a) - b; }
inline vInt operator+(const vInt& a, const vMag& b) { return a + vInt(b.v); }
inline vInt operator+(const vMag& a, const vInt& b) { return vInt(a.v) + b; }
inline vInt operator-(const vInt& a, const vMag& b) { return a - vInt(b.v); }
inline vInt operator-(const vInt& a) { return vInt(0) - a; }
inline vInt operator~(const vInt& a) { return vInt(impl_::map1(a.v, [](uint32_t x) { return ~x; })); }
inline vInt operator<<(const vInt& a, unsigned n) {
    return vInt(impl_::map1(a.v, [n](uint32_t x) { return n >= 32 ? 0u : x << n; }));
}
inline vUInt operator+(const vUInt& a, int32_t b) { return a + vUInt(b); }
inline vUInt operator-(const vUInt& a, int32_t b) { return a - vUInt(b); }
inline vUInt operator&(const vUInt& a, uint32_t b) { return a & vUInt(b); }
inline vUInt operator|(const vUInt& a, uint32_t b) { return a | vUInt(b); }
inline vUInt operator^(const vUInt& a, uint32_t b) { return a ^ vUInt(b); }
inline vUInt operator&(const vUInt& a, int b) { return a & vUInt(b); }
inline vUInt operator|(const vUInt& a, int b) { return a | vUInt(b); }
inline vUInt operator^(const vUInt& a, int b) { return a ^ vUInt(b); }
inline vUInt operator~(const vUInt& a) { return vUInt(impl_::map1(a.v, [](uint32_t x) { return ~x; })); }
inline vUInt operator<<(const vUInt& a, unsigned n) {
    return vUInt(impl_::map1(a.v, [n](uint32_t x) { return n >= 32 ? 0u : x << n; }));
}
inline vUInt operator>>(const vUInt& a, unsigned n) {
    return vUInt(impl_::map1(a.v, [n](uint32_t x) { return n >= 32 ? 0u : x >> n; }));
}
inline vUInt operator<<(const vUInt& a, const vUInt& n) {
    return vUInt(impl_::map2(a.v, n.v, [](uint32_t x, uint32_t s) { return s >= 32 ? 0u : x << s; }));
}
inline vUInt operator>>(const vUInt& a, const vUInt& n) {
    return vUInt(impl_::map2(a.v, n.v, [](uint32_t x, uint32_t s) { return s >= 32 ? 0u : x >> s; }));
}
inline vInt operator<<(const vInt& a, const vUInt& n) {
    return vInt(impl_::map2(a.v, n.v, [](uint32_t x, uint32_t s) { return s >= 32 ? 0u : x << s; }));
}
inline vUInt operator&(const vUInt& a, const vInt& b) { return a & vUInt(b); }
inline vUInt operator|(const vUInt& a, const vInt& b) { return a | vUInt(b); }
inline vUInt operator&(const vInt& a, const vUInt& b) { return vUInt(a) & b; }
inline vUInt operator|(const vInt& a, const vUInt& b) { return vUInt(a) | b; }
inline vUInt operator-(const vUInt& a, const vInt& b) { return a - vUInt(b); }
inline vInt& vInt::operator+=(const vInt& o) { return *this = *this + o; }
inline vInt& vInt::operator-=(const vInt& o) { return *this = *this - o; }
inline vInt& vInt::operator&=(const vInt& o) { return *this = *this & o; }
inline vInt& vInt::operator|=(const vInt& o) { return *this = *this | o; }
inline vInt& vInt::operator^=(const vInt& o) { return *this = *this ^ o; }
inline vInt& vInt::operator<<=(unsigned n) { return *this = *this << n; }
inline vUInt& vUInt::operator+=(const vUInt& o) { return *this = *this + o; }
inline vUInt& vUInt::operator-=(const vUInt& o) { return *this = *this - o; }
inline vUInt& vUInt::operator&=(const vUInt& o) { return *this = *this & o; }
inline vUInt& vUInt::operator|=(const vUInt& o) { return *this = *this | o; }
inline vUInt& vUInt::operator^=(const vUInt& o) { return *this = *this ^ o; }
inline vUInt& vUInt::operator<<=(unsigned n) { return *this = *this << n; }
inline vUInt& vUInt::operator>>=(unsigned n) { return *this = *this >> n; }

// ---- conditions
class vBool {
   public:
    uint32_t mask;
    explicit vBool(uint32_t m) : mask(m) {}
};
inline vBool operator&&(const vBool& a, const vBool& b) { return vBool(a.mask & b.mask); }
inline vBool operator||(const vBool& a, const vBool& b) { return vBool(a.mask | b.mask); }
inline vBool operator!(const vBool& a) { return vBool(~a.mask); }
inline vBool nearby(const vBool& a) { return a; }

namespace impl_ {
template <typename P>
inline vBool lanes(const Vec& a, P p) {
    uint32_t m = 0;
    for (uint32_t l = 0; l < kLanes; ++l)
        if (p(a.u[l])) m |= 1u << l;
    return vBool(m);
}
enum class Cmp { EQ, NE, LT, LE, GT, GE };
inline bool test(uint32_t x, Cmp op) {
    bool neg = (x >> 31) != 0;
    switch (op) {
        case Cmp::EQ: return x == 0;
        case Cmp::NE: return x != 0;
        case Cmp::LT: return neg;
        case Cmp::GE: return !neg;
        case Cmp::LE: return neg || x == 0;
        case Cmp::GT: return !neg && x != 0;
    }
    return false;
}
// vFloat against 0: SFPSETCC on the value's bits; otherwise on the SFPMAD difference a - b.
inline vBool fcmp(const Vec& a, const Vec& b, Cmp op) { return lanes(fsub(a, b), [op](uint32_t x) { return test(x, op); }); }
inline vBool fcmp0(const Vec& a, Cmp op) { return lanes(a, [op](uint32_t x) { return test(x, op); }); }
// vInt / vUInt: the two's complement difference (SFPIADD; wraps as on silicon).
inline vBool icmp(const Vec& a, const Vec& b, Cmp op) {
    return lanes(map2(a, b, [](uint32_t x, uint32_t y) { return x - y; }), [op](uint32_t x) { return test(x, op); });
}
}  // namespace impl_

#define SFPI_EMU_CMP(OP, C)                                                                                         \
    inline vBool operator OP(const vFloat& a, const vFloat& b) { return impl_::fcmp(a.v, b.v, impl_::Cmp::C); }     \
    inline vBool operator OP(const vFloat& a, float b) {                                                            \
        return b == 0.0f ? impl_::fcmp0(a.v, impl_::Cmp::C) : impl_::fcmp(a.v, impl_::splat(emu::f32_bits(b)), impl_::Cmp::C); \
    }                                                                                                               \
    inline vBool operator OP(const vInt& a, const vInt& b) { return impl_::icmp(a.v, b.v, impl_::Cmp::C); }         \
    inline vBool operator OP(const vInt& a, int32_t b) { return impl_::icmp(a.v, impl_::splat(static_cast<uint32_t>(b)), impl_::Cmp::C); } \
    inline vBool operator OP(const vInt& a, unsigned b) { return a OP static_cast<int32_t>(b); }                   \
    inline vBool operator OP(const vUInt& a, const vUInt& b) { return impl_::icmp(a.v, b.v, impl_::Cmp::C); }       \
    inline vBool operator OP(const vUInt& a, uint32_t b) { return impl_::icmp(a.v, impl_::splat(b), impl_::Cmp::C); } \
    inline vBool operator OP(const vUInt& a, int b) { return a OP static_cast<uint32_t>(b); }
SFPI_EMU_CMP(==, EQ)
SFPI_EMU_CMP(!=, NE)
SFPI_EMU_CMP(<, LT)
SFPI_EMU_CMP(<=, LE)
SFPI_EMU_CMP(>, GT)
SFPI_EMU_CMP(>=, GE)
#undef SFPI_EMU_CMP
inline vBool operator==(float a, const vFloat& b) { return b == a; }
inline vBool operator!=(float a, const vFloat& b) { return b != a; }
inline vBool operator<(float a, const vFloat& b) { return b > a; }
inline vBool operator>(float a, const vFloat& b) { return b < a; }
inline vBool operator<=(float a, const vFloat& b) { return b >= a; }
inline vBool operator>=(float a, const vFloat& b) { return b <= a; }
inline vBool operator<(const impl_::MulExpr& a, const vFloat& b) { return vFloat(a) < b; }
inline vBool operator>(const impl_::MulExpr& a, const vFloat& b) { return vFloat(a) > b; }
// A vector as a condition: lanes != 0.
inline vBool operator!(const vInt& a) { return impl_::fcmp0(a.v, impl_::Cmp::EQ); }

namespace impl_ {
// The v_if machinery on the SFPU's flags (SFPPUSHC / SFPENCC / SFPSETCC / SFPCOMPC / SFPPOPC).
class CC {
    int pushes = 0;

   public:
    CC() = default;
    CC(const CC&) = delete;
    ~CC() {
        while (pushes-- > 0) isa::sfppopc(0);
    }
    CC& push() {
        isa::sfppushc(0);
        ++pushes;
        return *this;
    }
    CC& if_() {
        isa::Machine& s = isa::m();
        if (!s.use_flags) {
            s.use_flags = true;
            s.flags = isa::kAllLanes;
        }
        return *this;
    }
    CC& cond(const vBool& b) {
        isa::m().flags &= b.mask;
        return *this;
    }
    CC& cond(const vInt& b) { return cond(!(!b)); }
    CC& else_() {
        isa::sfpcompc();
        return *this;
    }
};
}  // namespace impl_

#define v_if(x)                    \
    {                              \
        sfpi::impl_::CC __cc;      \
        __cc.push().if_().cond(x); \
        {
#define v_elseif(x) \
    }               \
    __cc.else_().push().if_().cond(x); {
#define v_else  \
    }           \
    __cc.else_(); {
#define v_endif \
    }           \
    }
#define v_block               \
    {                         \
        sfpi::impl_::CC __cc; \
        __cc.push();
#define v_and(x) __cc.if_().cond(x)
#define v_endblock }

// DataLayout of a dst_reg access (dst_reg[i].mode<DataLayout::X>()): the SFPLOAD / SFPSTORE format.
// M32 (Blackhole's SFPI: a sign-magnitude 32-bit integer, e.g. abs(vInt)) moves the 32 bits unconverted (INT32).
enum class DataLayout { Default, F32, I32, F16a, F16b, U16, I16, U8, I8, SM32, M32 };
namespace impl_ {
constexpr uint32_t layout_fmt(DataLayout l) {
    return l == DataLayout::F32 ? isa::kFmtFp32 : l == DataLayout::I32 ? isa::kFmtInt32
         : l == DataLayout::F16a ? isa::kFmtFp16a : l == DataLayout::F16b ? isa::kFmtFp16b
         : l == DataLayout::U16 ? isa::kFmtUInt16 : l == DataLayout::M32 ? isa::kFmtInt32
         : l == DataLayout::SM32 ? isa::kFmtInt32Sm : isa::kFmtDefault;
}
Vec dst_load(uint32_t addr, uint32_t fmt, uint32_t addr_mod = 0);
void dst_store(uint32_t addr, uint32_t fmt, const Vec& v, uint32_t addr_mod = 0);
// A dst_reg access with an explicit load / store format.
class DRegMode {
    int idx;
    uint32_t fmt;

   public:
    DRegMode(int i, uint32_t f) : idx(i), fmt(f) {}
    operator vFloat() const { return vFloat(dst_load(static_cast<uint32_t>(idx * 2), fmt)); }
    operator vInt() const { return vInt(dst_load(static_cast<uint32_t>(idx * 2), fmt)); }
    operator vUInt() const { return vUInt(dst_load(static_cast<uint32_t>(idx * 2), fmt)); }
    template <typename T, typename = std::enable_if_t<std::is_base_of_v<vVal, T>>>
    const DRegMode& operator=(const T& v) const {
        dst_store(static_cast<uint32_t>(idx * 2), fmt, v.v);
        return *this;
    }
};
// A dst_reg access issued with an explicit address mode (dst_reg[i].mode(ADDR_MOD_n)): the SFPLOAD / SFPSTORE
// carries that ADDR_MOD, so the Dst counter advances by the mode's increment after the access.
class DRegAddrMode {
    int idx;
    uint32_t addr_mod;

   public:
    DRegAddrMode(int i, uint32_t am) : idx(i), addr_mod(am) {}
    operator vFloat() const { return vFloat(dst_load(static_cast<uint32_t>(idx * 2), isa::kFmtDefault, addr_mod)); }
    operator vInt() const { return vInt(dst_load(static_cast<uint32_t>(idx * 2), isa::kFmtInt32, addr_mod)); }
    operator vUInt() const { return vUInt(dst_load(static_cast<uint32_t>(idx * 2), isa::kFmtInt32, addr_mod)); }
    const DRegAddrMode& operator=(const vFloat& v) const {
        dst_store(static_cast<uint32_t>(idx * 2), isa::kFmtDefault, v.v, addr_mod);
        return *this;
    }
    const DRegAddrMode& operator=(const vInt& v) const {
        dst_store(static_cast<uint32_t>(idx * 2), isa::kFmtInt32, v.v, addr_mod);
        return *this;
    }
    const DRegAddrMode& operator=(const vUInt& v) const {
        dst_store(static_cast<uint32_t>(idx * 2), isa::kFmtInt32, v.v, addr_mod);
        return *this;
    }
};
}  // namespace impl_

// ---- Dst register file
namespace impl_ {
class DReg {
    int idx;

   public:
    explicit DReg(int i) : idx(i) {}
    uint32_t addr() const { return static_cast<uint32_t>(idx * 2); }
    operator vFloat() const;
    operator vInt() const;
    operator vUInt() const;
    const DReg& operator=(const vFloat& v) const;
    const DReg& operator=(const vInt& v) const;
    const DReg& operator=(const vUInt& v) const;
    const DReg& operator=(const DReg& o) const { return *this = vFloat(o); }
    const DReg& operator=(const MulExpr& e) const { return *this = vFloat(e); }
    const DReg& operator=(float f) const { return *this = vFloat(f); }
    template <DataLayout L>
    DRegMode mode() const { return DRegMode(idx, layout_fmt(L)); }
    DRegAddrMode mode(uint32_t addr_mod) const { return DRegAddrMode(idx, addr_mod); }
};

// Loads and stores go through an LReg of the model so that lane enables and Dst addressing are the instruction's.
inline Vec dst_load(uint32_t addr, uint32_t fmt, uint32_t addr_mod) {
    isa::Machine& s = isa::m();
    Vec keep = s.lreg[7];
    bool use = s.use_flags;
    s.use_flags = false;  // a new vector: every lane loaded
    impl_::sfpload(7, fmt, addr_mod, addr);
    s.use_flags = use;
    Vec r = s.lreg[7];
    s.lreg[7] = keep;
    return r;
}
inline void dst_store(uint32_t addr, uint32_t fmt, const Vec& v, uint32_t addr_mod) {
    isa::Machine& s = isa::m();
    Vec keep = s.lreg[7];
    s.lreg[7] = v;
    impl_::sfpstore(7, fmt, addr_mod, addr);
    s.lreg[7] = keep;
}
inline DReg::operator vFloat() const { return vFloat(dst_load(addr(), isa::kFmtDefault)); }
inline DReg::operator vInt() const { return vInt(dst_load(addr(), isa::kFmtInt32)); }
inline DReg::operator vUInt() const { return vUInt(dst_load(addr(), isa::kFmtInt32)); }
inline const DReg& DReg::operator=(const vFloat& v) const {
    dst_store(addr(), isa::kFmtDefault, v.v);
    return *this;
}
inline const DReg& DReg::operator=(const vInt& v) const {
    dst_store(addr(), isa::kFmtInt32, v.v);
    return *this;
}
inline const DReg& DReg::operator=(const vUInt& v) const {
    dst_store(addr(), isa::kFmtInt32, v.v);
    return *this;
}

class DstRegFile {
   public:
    constexpr DstRegFile() = default;
    DReg operator[](int i) const { return DReg(i); }
    void operator++(int) const { isa::inc_dst_rwc(2); }
    void operator++() const { isa::inc_dst_rwc(2); }
    void operator+=(int n) const { isa::inc_dst_rwc(2 * n); }
};

// Named LRegs and the constant registers.
class LRegRef {
    int idx;

   public:
    explicit LRegRef(int i) : idx(i) {}
    operator vFloat() const { return vFloat(isa::m().lreg[idx]); }
    operator vInt() const { return vInt(isa::m().lreg[idx]); }
    operator vUInt() const { return vUInt(isa::m().lreg[idx]); }
    // Liveness hint for the SFPI compiler (the register holds a value TTI code set): no effect here.
    void in_use() const {}
    template <typename T, typename = std::enable_if_t<std::is_base_of_v<vVal, T>>>
    const LRegRef& operator=(const T& v) const {
        isa::lanewise(idx, [&](uint32_t l) { return v.v.u[l]; });
        return *this;
    }
};
class LRegFile {
   public:
    constexpr LRegFile() = default;
    template <typename E>
    LRegRef operator[](E e) const { return LRegRef(static_cast<int>(e)); }
    template <typename T>
    class vCReg {
        int idx;

       public:
        constexpr explicit vCReg(int i) : idx(i) {}
        operator T() const { return T(isa::m().lreg[idx]); }
        T get_value() const { return T(isa::m().lreg[idx]); }
        // Programming a constant register (SFPLOADI + SFPCONFIG): every lane.
        const vCReg& operator=(const T& v) const {
            for (uint32_t l = 0; l < kLanes; ++l) isa::m().lreg[idx].u[l] = v.v.u[l];
            return *this;
        }
        const vCReg& operator=(float f) const { return *this = T(f); }
        const vCReg& operator=(int i) const { return *this = T(i); }
        const vCReg& operator=(uint32_t i) const { return *this = T(i); }
    };
};
}  // namespace impl_

enum class LRegs : uint8_t { LReg0, LReg1, LReg2, LReg3, LReg4, LReg5, LReg6, LReg7, LRegCount = 8 };
inline const impl_::LRegFile l_reg;
inline const impl_::DstRegFile dst_reg;

constexpr int CREG_IDX_0P837300003 = 8, CREG_IDX_0 = 9, CREG_IDX_1 = 10, CREG_IDX_NEG_1 = 11, CREG_IDX_PRGM1 = 12,
              CREG_IDX_PRGM2 = 13, CREG_IDX_PRGM3 = 14, CREG_IDX_TILEID = 15;
inline const impl_::LRegFile::vCReg<vFloat> vConst0(CREG_IDX_0);
inline const impl_::LRegFile::vCReg<vFloat> vConst1(CREG_IDX_1);
inline const impl_::LRegFile::vCReg<vFloat> vConstNeg1(CREG_IDX_NEG_1);
inline const impl_::LRegFile::vCReg<vFloat> vConst0p8373(CREG_IDX_0P837300003);
inline const impl_::LRegFile::vCReg<vFloat> vConstFloatPrgm0(CREG_IDX_PRGM1);
inline const impl_::LRegFile::vCReg<vFloat> vConstFloatPrgm1(CREG_IDX_PRGM2);
inline const impl_::LRegFile::vCReg<vFloat> vConstFloatPrgm2(CREG_IDX_PRGM3);
inline const impl_::LRegFile::vCReg<vInt> vConstIntPrgm0(CREG_IDX_PRGM1);
inline const impl_::LRegFile::vCReg<vInt> vConstIntPrgm1(CREG_IDX_PRGM2);
inline const impl_::LRegFile::vCReg<vInt> vConstIntPrgm2(CREG_IDX_PRGM3);
inline const impl_::LRegFile::vCReg<vInt> vConstTileId(CREG_IDX_TILEID);

constexpr unsigned SFPMAD_MOD1_OFFSET_NONE = 0, SFPMAD_MOD1_NEGATE_VA = 1, SFPMAD_MOD1_NEGATE_VC = 2;




// Compiler register-pressure hint: no effect on results.
class lreg_pressure {
   public:
    explicit lreg_pressure(bool = true) {}
};

inline vBool is_nan(const vFloat& v) {
    return impl_::lanes(v.v, [](uint32_t x) { return (x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0; });
}
inline vBool is_inf(const vFloat& v) {
    return impl_::lanes(v.v, [](uint32_t x) { return (x & 0x7fffffffu) == 0x7f800000u; });
}
inline vBool is_pos(const vFloat& v) {
    return impl_::lanes(v.v, [](uint32_t x) { return (x >> 31) == 0; });
}
inline vBool is_neg(const vFloat& v) {
    return impl_::lanes(v.v, [](uint32_t x) { return (x >> 31) != 0; });
}
inline vBool is_finite(const vFloat& v) {
    return impl_::lanes(v.v, [](uint32_t x) { return (x & 0x7f800000u) != 0x7f800000u; });
}
// setsgn2(v, i): the sign of v becomes bit 0 of the integer i (SFPSETSGN from a shifted register).
template <typename V, typename W,
          typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, V> && std::is_base_of_v<impl_::vVal, W>>>
inline V setsgn2(const V& v, const W& i) {
    return V(impl_::map2(v.v, i.v, [](uint32_t x, uint32_t s) { return (x & 0x7fffffffu) | (s << 31); }));
}
template <typename W, typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, W>>>
inline vFloat copysgn(const MulExpr& v, const W& sgn) {
    return copysgn(vFloat(v), sgn);
}
inline vUInt operator&(const vSMag& a, int b) { return vUInt(a.v) & vUInt(b); }

// ---- the library (sfpi_lib.h): one SFPU instruction each
enum class ExponentMode { Debias, NoDebias, Biased = NoDebias, Unbiased = Debias };
enum class MantissaMode { FractionOnly, WithUnitBit, ImplicitOne = WithUnitBit };
enum class ShiftMode { Logical, Arithmetic };
enum class RoundMode { NearestEven, Stochastic, Even = NearestEven, Nearest = NearestEven, NearestStochastic = Stochastic };

inline vInt exexp(const vFloat& v, ExponentMode mode = ExponentMode::Debias) {
    bool debias = mode == ExponentMode::Debias;
    return vInt(impl_::map1(v.v, [debias](uint32_t x) {
        uint32_t e = (x >> 23) & 0xffu;
        return debias ? static_cast<uint32_t>(static_cast<int32_t>(e) - 127) : e;
    }));
}
inline vInt exexp_nodebias(const vFloat& v) { return exexp(v, ExponentMode::NoDebias); }
inline vInt exman(const vFloat& v, MantissaMode mode = MantissaMode::FractionOnly) {
    bool one = mode == MantissaMode::WithUnitBit;
    return vInt(impl_::map1(v.v, [one](uint32_t x) { return (x & 0x7fffffu) | (one ? 0x800000u : 0u); }));
}
inline vInt exman8(const vFloat& v) { return exman(v, MantissaMode::WithUnitBit); }
inline vInt exman9(const vFloat& v) { return exman(v, MantissaMode::FractionOnly); }
inline vFloat setexp(const vFloat& v, int exp) {
    uint32_t e = static_cast<uint32_t>(exp) & 0xffu;
    return vFloat(impl_::map1(v.v, [e](uint32_t x) { return (x & 0x807fffffu) | (e << 23); }));
}
inline vFloat setexp(const vFloat& v, const impl_::vVal& exp) {  // exponent from the integer's low 8 bits
    return vFloat(impl_::map2(v.v, exp.v, [](uint32_t x, uint32_t e) { return (x & 0x807fffffu) | ((e & 0xffu) << 23); }));
}
inline vFloat copyexp(const vFloat& v, const vFloat& exp) {
    return vFloat(impl_::map2(v.v, exp.v, [](uint32_t x, uint32_t e) { return (x & 0x807fffffu) | (e & 0x7f800000u); }));
}
inline vFloat setman(const vFloat& v, int man) {
    uint32_t mm = static_cast<uint32_t>(man) & 0x7fffffu;
    return vFloat(impl_::map1(v.v, [mm](uint32_t x) { return (x & 0xff800000u) | mm; }));
}
inline vFloat setman(const vFloat& v, const impl_::vVal& man) {
    return vFloat(impl_::map2(v.v, man.v, [](uint32_t x, uint32_t mm) { return (x & 0xff800000u) | (mm & 0x7fffffu); }));
}
inline vFloat copyman(const vFloat& v, const vFloat& man) { return setman(v, static_cast<const impl_::vVal&>(man)); }
inline vFloat addexp(const vFloat& in, int exp) {
    return vFloat(impl_::map1(in.v, [exp](uint32_t x) {
        uint32_t e = (x >> 23) & 0xffu;
        if (e == 0xffu) return x;
        return (x & 0x807fffffu) | (((e + static_cast<uint32_t>(exp)) & 0xffu) << 23);
    }));
}
template <typename V, typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, V>>>
inline V setsgn(const V& v, int32_t sgn) {
    uint32_t sb = (static_cast<uint32_t>(sgn) & 1u) << 31;
    return V(impl_::map1(v.v, [sb](uint32_t x) { return (x & 0x7fffffffu) | sb; }));
}
template <typename V, typename W,
          typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, V> && std::is_base_of_v<impl_::vVal, W>>>
inline V copysgn(const V& v, const W& sgn) {
    return V(impl_::map2(v.v, sgn.v, [](uint32_t x, uint32_t s) { return (x & 0x7fffffffu) | (s & 0x80000000u); }));
}
template <typename V, typename W,
          typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, V> && std::is_base_of_v<impl_::vVal, W>>>
inline V setsgn(const V& v, const W& sgn) {
    return copysgn(v, sgn);
}
template <typename V, typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, V>>>
inline vInt lz(const V& v) {
    return vInt(impl_::map1(v.v, [](uint32_t x) { return x == 0 ? 32u : static_cast<uint32_t>(__builtin_clz(x)); }));
}
template <typename V, typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, V>>>
inline vInt lz_nosgn(const V& v) {
    return vInt(impl_::map1(v.v, [](uint32_t x) {
        x &= 0x7fffffffu;
        return x == 0 ? 32u : static_cast<uint32_t>(__builtin_clz(x));
    }));
}
inline vFloat abs(const vFloat& v) {
    return vFloat(impl_::map1(v.v, [](uint32_t x) { return std::isnan(emu::bits_f32(x)) ? x : (x & 0x7fffffffu); }));
}
inline vInt abs(const vInt& v) {
    return vInt(impl_::map1(v.v, [](uint32_t x) {
        int32_t i = static_cast<int32_t>(x);
        return i == INT32_MIN ? x : static_cast<uint32_t>(i < 0 ? -i : i);
    }));
}
inline vUInt shft(const vUInt& v, const vInt& amt) {
    return vUInt(impl_::map2(v.v, amt.v, [](uint32_t x, uint32_t a) {
        int32_t s = static_cast<int32_t>(a);
        if (s >= 0) return s >= 32 ? 0u : x << s;
        return -s >= 32 ? 0u : x >> -s;
    }));
}
inline vUInt shft(const vUInt& v, int amt) { return shft(v, vInt(amt)); }
inline vUInt shft(const vUInt& v, const vInt& amt, ShiftMode mode) {
    if (mode != ShiftMode::Logical) emu::fault("sfpi::shft: arithmetic shifts do not exist on Wormhole");
    return shft(v, amt);
}
inline vInt shft(const vInt& v, const vInt& amt, ShiftMode mode) {
    if (mode != ShiftMode::Logical) emu::fault("sfpi::shft: arithmetic shifts do not exist on Wormhole");
    return vInt(shft(vUInt(v), amt).v);
}
template <typename T, typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, T>>>
inline T reinterpret(const impl_::vVal& v) {
    return T(v.v);
}
template <typename T, typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, T>>>
inline T as(const impl_::vVal& v) {
    return T(v.v);
}
template <typename T, typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, T>>>
inline T as(const impl_::MulExpr& e) {
    return T(vFloat(e).v);
}

namespace impl_ {
inline Vec stoch(const Vec& v, unsigned mod1) {
    return map1(v, [mod1](uint32_t x) { return isa::stochrnd(x, mod1); });
}
inline Vec cast_sm(const Vec& v) { return map1(v, [](uint32_t x) { return isa::sm32_to_fp32(x); }); }
}  // namespace impl_

// convert<To>(from, round): the SFPSTOCHRND / SFPCAST conversions (rounding to nearest is ties away from zero for
// SFPSTOCHRND; SFPCAST rounds to nearest even).
template <typename To, typename From,
          typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, To> && std::is_base_of_v<impl_::vVal, From>>>
inline To convert(const From& val, RoundMode round = RoundMode::Stochastic) {
    (void)round;
    if constexpr (std::is_same_v<To, From>) {
        return val;
    } else if constexpr (std::is_base_of_v<vFloat, From>) {
        if constexpr (std::is_same_v<To, vFloat16b>) return To(impl_::stoch(val.v, SFPSTOCHRND_MOD1_FP32_TO_FP16B));
        else if constexpr (std::is_same_v<To, vFloat16a>) return To(impl_::stoch(val.v, SFPSTOCHRND_MOD1_FP32_TO_FP16A));
        else if constexpr (std::is_same_v<To, vSMag16>) return To(impl_::stoch(val.v, SFPSTOCHRND_MOD1_FP32_TO_INT16));
        else if constexpr (std::is_same_v<To, vSMag8>) return To(impl_::stoch(val.v, SFPSTOCHRND_MOD1_FP32_TO_INT8));
        else if constexpr (std::is_same_v<To, vUInt16>) return To(impl_::stoch(val.v, SFPSTOCHRND_MOD1_FP32_TO_UINT16));
        else if constexpr (std::is_same_v<To, vUInt8>) return To(impl_::stoch(val.v, SFPSTOCHRND_MOD1_FP32_TO_UINT8));
        else if constexpr (std::is_same_v<To, vFloat>) return To(val.v);
        else static_assert(!sizeof(To), "sfpi::convert: conversion from vFloat not modelled");
    } else if constexpr (std::is_base_of_v<vSMag, From> || std::is_same_v<From, vMag>) {
        if constexpr (std::is_base_of_v<vFloat, To>) return To(impl_::cast_sm(val.v));
        else if constexpr (std::is_same_v<To, vInt>) {
            return To(impl_::map1(val.v, [](uint32_t x) {
                return (x & 0x80000000u) ? static_cast<uint32_t>(-static_cast<int64_t>(x & 0x7fffffffu)) : x;
            }));
        } else static_assert(!sizeof(To), "sfpi::convert: conversion from a sign-magnitude vector not modelled");
    } else if constexpr (std::is_same_v<From, vInt>) {
        if constexpr (std::is_same_v<To, vSMag>) {
            return To(impl_::map1(val.v, [](uint32_t x) {
                int32_t i = static_cast<int32_t>(x);
                if (i >= 0) return x;
                if (i == INT32_MIN) return 0xffffffffu;
                return 0x80000000u | static_cast<uint32_t>(-i);
            }));
        } else if constexpr (std::is_base_of_v<vFloat, To>) {
            return To(impl_::cast_sm(val.v));
        } else static_assert(!sizeof(To), "sfpi::convert: conversion from vInt not modelled");
    } else {
        static_assert(!sizeof(To), "sfpi::convert: conversion not modelled");
    }
}
template <typename To, typename From, typename = std::enable_if_t<std::is_base_of_v<impl_::vVal, To>>>
inline To convert(const impl_::MulExpr& e, RoundMode round = RoundMode::Stochastic) {
    return convert<To>(vFloat(e), round);
}

inline vFloat int32_to_float(const vInt& in, RoundMode = RoundMode::Stochastic) { return vFloat(impl_::cast_sm(in.v)); }
inline vFloat float_to_fp16a(const vFloat& in, RoundMode = RoundMode::Stochastic) {
    return vFloat(impl_::stoch(in.v, SFPSTOCHRND_MOD1_FP32_TO_FP16A));
}
inline vFloat float_to_fp16b(const vFloat& in, RoundMode = RoundMode::Stochastic) {
    return vFloat(impl_::stoch(in.v, SFPSTOCHRND_MOD1_FP32_TO_FP16B));
}
inline vUInt float_to_uint8(const vFloat& in, RoundMode = RoundMode::Stochastic) {
    return vUInt(impl_::stoch(in.v, SFPSTOCHRND_MOD1_FP32_TO_UINT8));
}
inline vInt float_to_int8(const vFloat& in, RoundMode = RoundMode::Stochastic) {
    return vInt(impl_::stoch(in.v, SFPSTOCHRND_MOD1_FP32_TO_INT8));
}
inline vUInt float_to_uint16(const vFloat& in, RoundMode = RoundMode::Stochastic) {
    return vUInt(impl_::stoch(in.v, SFPSTOCHRND_MOD1_FP32_TO_UINT16));
}
inline vInt float_to_int16(const vFloat& in, RoundMode = RoundMode::Stochastic) {
    return vInt(impl_::stoch(in.v, SFPSTOCHRND_MOD1_FP32_TO_INT16));
}

enum class LutSign { Update, Retain };

namespace impl_ {
// SFPLUT: |x| < 1, < 2, >= 2 select the coefficient register; sign retained from x when `retain`.
inline Vec sfplut(const Vec& x, const Vec& l0, const Vec& l1, const Vec& l2, bool retain) {
    Vec r;
    for (uint32_t l = 0; l < kLanes; ++l) {
        uint32_t b = x.u[l] & 0x7fffffffu;
        uint32_t c = b < 0x3f800000u ? l0.u[l] : b < 0x40000000u ? l1.u[l] : l2.u[l];
        uint32_t d = impl_::mad(lut8_to_fp32(c >> 8), b, lut8_to_fp32(c));
        r.u[l] = retain ? ((d & 0x7fffffffu) | (x.u[l] & 0x80000000u)) : d;
    }
    return r;
}
// SFPLUTFP32 with fp16 tables: 3-entry (slope / intercept per register) or 6-entry (slopes in a01..a45,
// intercepts in b01..b45, split at 0.5 / 1 / 1.5 / 2 / `cut`).
inline Vec sfplut16(const Vec& x, const Vec* a, const Vec* b, bool six, float cut, bool retain) {
    Vec r;
    for (uint32_t l = 0; l < kLanes; ++l) {
        float bf = std::fabs(emu::bits_f32(x.u[l]));
        uint32_t i = bf < 1.0f ? 0 : bf < 2.0f ? 1 : 2, slope, icpt;
        if (!six) {
            slope = lut16_to_fp32(a[i].u[l] >> 16);
            icpt = lut16_to_fp32(a[i].u[l]);
        } else {
            uint32_t j = bf < 0.5f ? 0 : bf < 1.0f ? 16 : bf < 1.5f ? 0 : bf < 2.0f ? 16 : bf < cut ? 0 : 16;
            slope = lut16_to_fp32(a[i].u[l] >> j);
            icpt = lut16_to_fp32(b[i].u[l] >> j);
        }
        uint32_t d = impl_::mad(slope, x.u[l] & 0x7fffffffu, icpt);
        r.u[l] = retain ? ((d & 0x7fffffffu) | (x.u[l] & 0x80000000u)) : d;
    }
    return r;
}
}  // namespace impl_

// lut: SFPLUT with the input's sign retained; lut_sign: the computed sign.
inline vFloat lut(const vFloat& v, const vUInt& l0, const vUInt& l1, const vUInt& l2) {
    return vFloat(impl_::sfplut(v.v, l0.v, l1.v, l2.v, true));
}
inline vFloat lut_sign(const vFloat& v, const vUInt& l0, const vUInt& l1, const vUInt& l2) {
    return vFloat(impl_::sfplut(v.v, l0.v, l1.v, l2.v, false));
}
inline vFloat lut2(const vFloat& v, const vUInt& l0, const vUInt& l1, const vUInt& l2) {
    impl_::Vec a[3] = {l0.v, l1.v, l2.v};
    return vFloat(impl_::sfplut16(v.v, a, a, false, 0.0f, true));
}
inline vFloat lut2_sign(const vFloat& v, const vUInt& l0, const vUInt& l1, const vUInt& l2) {
    impl_::Vec a[3] = {l0.v, l1.v, l2.v};
    return vFloat(impl_::sfplut16(v.v, a, a, false, 0.0f, false));
}
inline vFloat lut2(const vFloat& v, const vUInt& a01, const vUInt& a23, const vUInt& a45, const vUInt& b01,
                   const vUInt& b23, const vUInt& b45, int mode = 1) {
    impl_::Vec a[3] = {a01.v, a23.v, a45.v}, b[3] = {b01.v, b23.v, b45.v};
    return vFloat(impl_::sfplut16(v.v, a, b, true, mode == 1 ? 3.0f : 4.0f, true));
}
inline vFloat lut2_sign(const vFloat& v, const vUInt& a01, const vUInt& a23, const vUInt& a45, const vUInt& b01,
                        const vUInt& b23, const vUInt& b45, int mode = 1) {
    impl_::Vec a[3] = {a01.v, a23.v, a45.v}, b[3] = {b01.v, b23.v, b45.v};
    return vFloat(impl_::sfplut16(v.v, a, b, true, mode == 1 ? 3.0f : 4.0f, false));
}
// The 6-entry fp16 table with (slope, intercept) pairs interleaved as the newer sfpi spells it.
inline vFloat lut(const vFloat& v, const vLut16ss& s01, const vLut16ii& i01, const vLut16ss& s23, const vLut16ii& i23,
                  const vLut16ss& s45, const vLut16ii& i45, LutSign sign = LutSign::Retain, int mode = 1) {
    impl_::Vec a[3] = {s01.v, s23.v, s45.v}, b[3] = {i01.v, i23.v, i45.v};
    return vFloat(impl_::sfplut16(v.v, a, b, true, mode == 1 ? 3.0f : 4.0f, sign == LutSign::Retain));
}

// min / max / clamp: SFPSWAP's sign-magnitude total order.
inline vFloat max(const vFloat& a, const vFloat& b) {
    return vFloat(impl_::map2(a.v, b.v, [](uint32_t x, uint32_t y) { return emu::sfpu::signmag_smaller(x, y) ? y : x; }));
}
inline vFloat min(const vFloat& a, const vFloat& b) {
    return vFloat(impl_::map2(a.v, b.v, [](uint32_t x, uint32_t y) { return emu::sfpu::signmag_smaller(x, y) ? x : y; }));
}
inline vFloat max(const vFloat& a, float b) { return max(a, vFloat(b)); }
inline vFloat min(const vFloat& a, float b) { return min(a, vFloat(b)); }
inline vFloat clamp(const vFloat& v, const vFloat& lo, const vFloat& hi) { return min(max(v, lo), hi); }
// clamp to [-limit, limit] (SFPSWAP min / max against the bound and its negation)
inline vFloat symmetric_clamp(const vFloat& v, float limit) { return clamp(v, vFloat(-limit), vFloat(limit)); }
// {min, max} of two vectors in one SFPSWAP (VEC_MIN_MAX)
struct MinMax {
    vFloat min, max;
};
inline MinMax min_max(const vFloat& a, const vFloat& b) { return {min(a, b), max(a, b)}; }
inline void vec_min_max(vFloat& a, vFloat& b) {  // a = min, b = max
    vFloat lo = min(a, b), hi = max(a, b);
    a = lo;
    b = hi;
}

#ifdef ARCH_BLACKHOLE
// Blackhole's SFPI additions (sfpi_lib.h for Blackhole): SFPARECIP's modes and its reciprocal as a library call.
constexpr unsigned SFPARECIP_MOD1_RECIP = 0, SFPARECIP_MOD1_COND_RECIP = 1, SFPARECIP_MOD1_EXP = 2;
constexpr unsigned SFPGT_MOD1_SET_CC = 1, SFPGT_MOD1_MUTATE_STACK = 2, SFPGT_MOD1_MUTATE_OR = 4, SFPGT_MOD1_SET_VD = 8;
constexpr unsigned SFPLE_MOD1_SET_CC = 1, SFPLE_MOD1_MUTATE_STACK = 2, SFPLE_MOD1_MUTATE_OR = 4, SFPLE_MOD1_SET_VD = 8;
constexpr unsigned SFPAND_MOD1_USE_VB = 1, SFPOR_MOD1_USE_VB = 1;
// approx_recip(x): SFPARECIP RECIP, ~7-bit 1/x with x's sign; +-0 for |x| >= 2^126 or Inf / NaN, +-Inf for
// |x| < 2^-126.
inline vFloat approx_recip(const vFloat& x) {
    return vFloat(impl_::map1(x.v, [](uint32_t u) {
        uint32_t sign = u & 0x80000000u;
        return sign + emu::sfpu::bh::approx_recip(u - sign);
    }));
}
#endif

}  // namespace sfpi

// The SFPMAD builtin (global, as the compiler's builtins), for kernels that call it directly (mod1 OFFSET_NONE:
// plain a * b + c).
inline sfpi::impl_::Vec __builtin_rvtt_sfpmad(const sfpi::impl_::Vec& a, const sfpi::impl_::Vec& b,
                                              const sfpi::impl_::Vec& c, unsigned mod1) {
    if (mod1 != 0) emu::fault("__builtin_rvtt_sfpmad: mode %u is not modelled by the emulator", mod1);
    return sfpi::impl_::fma3(a, b, c, false);
}

// The SFPU kernels are written for the RISC-V toolchain, whose <math.h> does not define M_LN2 under the kernel
// build; they use the name for their own constants.
#undef M_LN2

#ifdef ARCH_BLACKHOLE
// The SFPGT builtin (Blackhole) as the Blackhole LLK calls it: __builtin_rvtt_sfpgt(vd, vc, SFPGT_MOD1_SET_VD) is the
// new VD, all ones in lanes where vd > vc in the sign-magnitude (FP32 total) order, else zero (SFPGT.md).
inline sfpi::impl_::Vec __builtin_rvtt_sfpgt(const sfpi::impl_::Vec& vd, const sfpi::impl_::Vec& vc, unsigned mod1) {
    if (mod1 != sfpi::SFPGT_MOD1_SET_VD)
        emu::fault("__builtin_rvtt_sfpgt: mode %u (lane flags / flag stack) is not modelled by the emulator", mod1);
    return sfpi::impl_::map2(vd, vc, [](uint32_t d, uint32_t c) { return emu::sfpu::signmag_smaller(c, d) ? ~0u : 0u; });
}
#endif
