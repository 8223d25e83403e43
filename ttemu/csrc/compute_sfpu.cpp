// The Wormhole Vector Unit (SFPU) model's instructions (include/emu/compute_sfpu_isa.h declares them and documents
// their semantics), defined once here instead of inline in the header, so that a compute kernel's compile does not
// generate them again. Built into the runtime executable and the C++ unit tests' libraries, as csrc/compute.cpp.
//
// State: the SFPU machine (m) is a thread_local of this file, one per compute thread and so per core (the runtime
// runs one thread per (kernel, core)). sfpswap's lane table is the only other static, and it is constant.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "emu/compute_sfpu_blackhole.h"
#include "emu/compute_sfpu_isa.h"
#include "emu/compute_state.h"
#include "emu/formats.h"
#include "emu/runtime.h"

namespace emu::sfpu {

namespace {
// m()'s first call on a thread, kept out of m() so that m() stays small enough for the inliner (every instruction
// here reaches the machine through it, several times).
[[gnu::noinline, gnu::cold]] Machine& new_machine(std::unique_ptr<Machine>& s) {
    s.reset(new Machine());
    return *s;
}
}  // namespace

Machine& m() {
    // One per thread, i.e. per core's compute thread (see csrc/compute.cpp on cstate).
    static thread_local std::unique_ptr<Machine> s;
    return s ? *s : new_machine(s);
}


namespace {
// The Dst datums of an SFPLOAD / SFPSTORE at `addr` for the lanes `en` (not 0): lane l's is dst_ref of
// (dst_lane_row(addr, l), dst_lane_col(addr, l)). The four rows addr & ~3 .. + 3 lie in one face of one tile (a face
// is 16 rows), so dst_ref runs once, for the first enabled lane (its checks fault as they would at that lane), and
// lane l's datum is (l / 8) tile rows and (l % 8) * 2 columns on from lane 0's: lane_offset(l).
struct DstLanes {
    DstSection* sec;
    uint32_t tile, idx0;  // idx0: lane 0's row-major index in the tile
};
inline uint32_t lane_offset(uint32_t l) { return (l / 8) * 32 + (l & 7) * 2; }
inline DstLanes dst_lanes(ComputeState& cs, uint32_t addr, uint32_t en, const char* who) {
    uint32_t first = static_cast<uint32_t>(__builtin_ctz(en));
    DstRef d = dst_ref(cs, dst_lane_row(addr, first), dst_lane_col(addr, first), who);
    return {d.sec, d.tile, d.idx - lane_offset(first)};
}
}  // namespace

void sfpload(uint32_t vd, uint32_t mod0, uint32_t addr_mod, uint32_t imm10) {
    Machine& s = m();
    uint32_t fmt = resolve_fmt(mod0);
    uint32_t addr = sfp_addr(imm10);
    uint32_t en = fmt == kFmtInt32All ? kAllLanes : s.enabled();
    if (vd < 8 && en != 0) {
        DstLanes d = dst_lanes(cstate(), addr, en, "SFPLOAD");
        uint32_t raw[kLanes] = {};  // an undefined tile reads as zeros
        if (d.sec->defined[d.tile])
            for (uint32_t l = 0; l < kLanes; ++l) raw[l] = as_u(d.sec->tile[d.tile][d.idx0 + lane_offset(l)]);
        // The format's conversion of every lane's datum, chosen once per instruction (the loops vectorise).
        auto load = [&](auto convert) {
            for (uint32_t l = 0; l < kLanes; ++l)
                if (en >> l & 1) s.lreg[vd].u[l] = convert(raw[l]);
        };
        switch (fmt) {
            case kFmtFp16b: load([](uint32_t r) { return r & 0xffff0000u; }); break;  // BF16 Dst: the top 16 bits
            case kFmtFp32:
            case kFmtInt32:
            case kFmtInt32All: load([](uint32_t r) { return r; }); break;
            case kFmtInt32Sm: load([](uint32_t r) { return (r & 0x80000000u) ? (0u - (r & 0x7fffffffu)) : r; }); break;
            case kFmtZero: load([](uint32_t) { return 0u; }); break;
            case kFmtLo16:
            case kFmtUInt16: load([](uint32_t r) { return r & 0xffffu; }); break;
            case kFmtHi16: load([](uint32_t r) { return r << 16; }); break;
            default: fault("SFPLOAD: load format %u is not modelled by the emulator", fmt);
        }
    }
    apply_addr_mod(addr_mod);
}

void sfpstore(uint32_t vd, uint32_t mod0, uint32_t addr_mod, uint32_t imm10) {
    Machine& s = m();
    uint32_t fmt = resolve_fmt(mod0);
    uint32_t addr = sfp_addr(imm10);
    uint32_t en = fmt == kFmtInt32All ? kAllLanes : s.enabled();
    if (en != 0) {
        DstLanes d = dst_lanes(cstate(), addr, en, "SFPSTORE");
        // Every lane's stored bits in the format, chosen once per instruction (the loops vectorise); the enabled
        // lanes' are written below.
        uint32_t out[kLanes];
        const uint32_t* v = s.lreg[vd].u;
        auto convert = [&](auto f) {
            for (uint32_t l = 0; l < kLanes; ++l) out[l] = f(v[l]);
        };
        switch (fmt) {
            case kFmtFp16b:
                // Dst holds BF16 (16 bits): the store keeps the top half (truncation); denormals flush to zero.
                convert([](uint32_t x) { return (x & 0x7f800000u) == 0 ? (x & 0x80000000u) : (x & 0xffff0000u); });
                break;
            case kFmtFp32:
            case kFmtInt32:
            case kFmtInt32All:
                if (dst_fp32()) convert([](uint32_t x) { return x; });
                else convert([](uint32_t x) { return x & 0xffff0000u; });
                break;
            case kFmtInt32Sm:
                convert([](uint32_t x) {
                    int32_t i = static_cast<int32_t>(x);
                    return i < 0 ? (0x80000000u | static_cast<uint32_t>(-static_cast<int64_t>(i))) : x;
                });
                break;
            case kFmtLo16:
            case kFmtUInt16: convert([](uint32_t x) { return x & 0xffffu; }); break;
            default: fault("SFPSTORE: store format %u is not modelled by the emulator", fmt);
        }
        if (!d.sec->defined[d.tile]) {  // first write into an undefined tile: the rest of it reads as zero
            std::memset(d.sec->tile[d.tile], 0, sizeof d.sec->tile[d.tile]);
            d.sec->defined[d.tile] = true;
        }
        float* t = d.sec->tile[d.tile] + d.idx0;
        for (uint32_t l = 0; l < kLanes; ++l)
            if (en >> l & 1) t[lane_offset(l)] = as_f(out[l]);
    }
    apply_addr_mod(addr_mod);
}

void sfploadi(uint32_t vd, uint32_t mod0, uint32_t imm16) {
    Machine& s = m();
    imm16 &= 0xffffu;
    lanewise(vd, [&](uint32_t l) -> uint32_t {
        uint32_t old = s.lreg[vd].u[l];
        switch (mod0) {
            case 0: return bf16_imm(imm16);                        // FLOATB
            case 1: return fp16a_imm(imm16);                       // FLOATA
            case 2: return imm16;                                  // USHORT
            case 4: return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(imm16)));  // SHORT
            case 8: return (old & 0xffffu) | (imm16 << 16);        // UPPER
            case 10: return (old & 0xffff0000u) | imm16;           // LOWER
            default: fault("SFPLOADI: mode %u is not modelled by the emulator", mod0);
        }
    });
}

void sfpmad(uint32_t va, uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    if (mod1 & 0xc) fault("SFPMAD: indirect register modes (mod1 %u) are not modelled by the emulator", mod1);
    Vec a = s.lreg[va], b = s.lreg[vb], c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) { return mad(a.u[l], b.u[l], c.u[l]); });
}

void sfpaddi(uint32_t imm16, uint32_t vd) {
    Machine& s = m();
    lanewise(vd, [&](uint32_t l) { return mad(s.lreg[vd].u[l], as_u(1.0f), bf16_imm(imm16)); });
}

void sfpmuli(uint32_t imm16, uint32_t vd) {
    Machine& s = m();
    lanewise(vd, [&](uint32_t l) { return mad(s.lreg[vd].u[l], bf16_imm(imm16), 0u); });
}

void sfpmov(uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    if (mod1 == 2) {  // all lanes, ignoring LaneEnabled
        if (vd < 8 || vd == 16) s.lreg[vd] = c;
        return;
    }
    lanewise(vd, [&](uint32_t l) { return mod1 == 1 ? c.u[l] ^ 0x80000000u : c.u[l]; });
}

void sfpswap(uint32_t vc, uint32_t vd, uint32_t mod1) {
    static const uint32_t kGetsMin[10] = {0, 0xffffffffu, 0x0000ffffu, 0x00ff00ffu, 0xff0000ffu,
                                          0x000000ffu, 0x0000ff00u, 0x00ff0000u, 0xff000000u, 0};
    Machine& s = m();
    uint32_t en = s.enabled();
    uint32_t getsmin = mod1 < 10 ? kGetsMin[mod1] : 0;
    for (uint32_t l = 0; l < kLanes; ++l) {
        if (!(en >> l & 1)) continue;
        uint32_t cv = s.lreg[vc].u[l], dv = s.lreg[vd].u[l];
        bool swap = mod1 == 0 ? true : ((getsmin >> l & 1) ? signmag_smaller(cv, dv) : !signmag_smaller(cv, dv));
        if (swap) {
            if (vc < 8) s.lreg[vc].u[l] = dv;
            if (vd < 8) s.lreg[vd].u[l] = cv;
        }
    }
}

void sfpexexp(uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    uint32_t en = s.enabled();
    lanewise(vd, [&](uint32_t l) {
        uint32_t e = (c.u[l] >> 23) & 0xffu;
        return (mod1 & 1) ? e : static_cast<uint32_t>(static_cast<int32_t>(e) - 127);
    });
    if (mod1 & 0xa) {  // SET_CC_SGN_EXP (2) / COMP (8)
        for (uint32_t l = 0; l < kLanes; ++l) {
            if (!(en >> l & 1)) continue;
            bool neg = static_cast<int32_t>(s.lreg[vd].u[l]) < 0;
            bool f = (mod1 & 2) ? neg : true;
            if (mod1 & 8) f = !f;
            s.flags = f ? (s.flags | (1u << l)) : (s.flags & ~(1u << l));
        }
    }
}

void sfpexman(uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) { return (c.u[l] & 0x7fffffu) | ((mod1 & 1) ? 0u : 0x800000u); });
}

void sfpshft(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        int32_t amt = (mod1 & 1) ? static_cast<int32_t>(static_cast<int16_t>(imm12 << 4) >> 4)
                                 : static_cast<int32_t>(c.u[l]);
        uint32_t x = s.lreg[vd].u[l];
        if (amt >= 0) return amt >= 32 ? 0u : x << amt;
        return -amt >= 32 ? 0u : x >> -amt;
    });
}

void sfpshft2(uint32_t vb, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    if (mod1 != 5) fault("SFPSHFT2: mode %u (lane movement) is not modelled by the emulator", mod1);
    Vec b = s.lreg[vb], c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        int32_t amt = static_cast<int32_t>(c.u[l]);
        uint32_t x = b.u[l];
        if (amt >= 0) return amt >= 32 ? 0u : x << amt;
        return -amt >= 32 ? 0u : x >> -amt;
    });
}

void sfptransp(uint32_t vd) {
    Machine& s = m();
    if (vd >= 12) fault("SFPTRANSP: VD %u (LoadMacro instruction template backdoor) is not modelled by the emulator", vd);
    uint32_t en = s.enabled();
    for (uint32_t base : {0u, 4u}) {
        for (uint32_t col = 0; col < 8; ++col) {
            for (uint32_t i = 0; i < 4; ++i) {
                for (uint32_t j = 0; j < i; ++j) {
                    uint32_t ij = s.lreg[base + i].u[j * 8 + col], ji = s.lreg[base + j].u[i * 8 + col];
                    if (en >> (j * 8 + col) & 1) s.lreg[base + i].u[j * 8 + col] = ji;
                    if (en >> (i * 8 + col) & 1) s.lreg[base + j].u[i * 8 + col] = ij;
                }
            }
        }
    }
}

void sfpcast(uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    (void)mod1;
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) { return sm32_to_fp32(c.u[l]); });
}

void sfpsetexp(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        uint32_t b = s.lreg[vd].u[l];
        uint32_t e = (mod1 & 1) ? (imm12 & 0xffu) : (mod1 & 2) ? ((b >> 23) & 0xffu) : (b & 0xffu);
        return (c.u[l] & 0x807fffffu) | (e << 23);
    });
}

void sfpsetman(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        uint32_t man = (mod1 & 1) ? ((imm12 & 0xfffu) << 11) : (s.lreg[vd].u[l] & 0x7fffffu);
        return (c.u[l] & 0xff800000u) | man;
    });
}

void sfpsetsgn(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        uint32_t sign = (mod1 & 1) ? ((imm12 & 1u) << 31) : (s.lreg[vd].u[l] & 0x80000000u);
        return (c.u[l] & 0x7fffffffu) | sign;
    });
}

void sfpabs(uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        uint32_t x = c.u[l];
        if (mod1 & 1) return std::isnan(as_f(x)) ? x : (x & 0x7fffffffu);
        int32_t i = static_cast<int32_t>(x);
        return i == INT32_MIN ? x : static_cast<uint32_t>(i < 0 ? -i : i);
    });
}

void sfpnot(uint32_t vc, uint32_t vd) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) { return ~c.u[l]; });
}

void sfpbitop(uint32_t vc, uint32_t vd, int op) {  // 0 and, 1 or, 2 xor: VD op= VC
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        uint32_t d = s.lreg[vd].u[l];
        return op == 0 ? (d & c.u[l]) : op == 1 ? (d | c.u[l]) : (d ^ c.u[l]);
    });
}

void sfplz(uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    uint32_t en = s.enabled();
    lanewise(vd, [&](uint32_t l) {
        uint32_t x = (mod1 & 4) ? (c.u[l] & 0x7fffffffu) : c.u[l];
        return x == 0 ? 32u : static_cast<uint32_t>(__builtin_clz(x));
    });
    if (mod1 & 2) {
        for (uint32_t l = 0; l < kLanes; ++l) {
            if (!(en >> l & 1)) continue;
            uint32_t x = (mod1 & 4) ? (c.u[l] & 0x7fffffffu) : c.u[l];
            bool f = x != 0;
            if (mod1 & 8) f = !f;
            s.flags = f ? (s.flags | (1u << l)) : (s.flags & ~(1u << l));
        }
    }
}

void sfpdivp2(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) {
        uint32_t x = c.u[l];
        uint32_t e = (x >> 23) & 0xffu;
        if (mod1 & 1) {
            if (e == 0xffu) return x;
            e = (e + imm12) & 0xffu;
        } else {
            e = imm12 & 0xffu;
        }
        return (x & 0x807fffffu) | (e << 23);
    });
}

void sfpiadd(uint32_t imm12, uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    uint32_t en = s.enabled();
    int32_t imm = static_cast<int32_t>(static_cast<int16_t>((imm12 & 0xfffu) << 4) >> 4);
    lanewise(vd, [&](uint32_t l) {
        if (mod1 & 1) return c.u[l] + static_cast<uint32_t>(imm);
        if (mod1 & 2) return c.u[l] - s.lreg[vd].u[l];
        return c.u[l] + s.lreg[vd].u[l];
    });
    if (vd < 8) {
        for (uint32_t l = 0; l < kLanes; ++l) {
            if (!(en >> l & 1)) continue;
            bool f = (s.flags >> l) & 1;
            if (!(mod1 & 4)) f = static_cast<int32_t>(s.lreg[vd].u[l]) < 0;
            if (mod1 & 8) f = !f;
            s.flags = f ? (s.flags | (1u << l)) : (s.flags & ~(1u << l));
        }
    }
}


void sfpstochrnd(uint32_t vc, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    Vec c = s.lreg[vc];
    lanewise(vd, [&](uint32_t l) { return stochrnd(c.u[l], mod1); });
}



void sfpsetcc(uint32_t imm12, uint32_t vc, uint32_t mod1) {
    Machine& s = m();
    uint32_t en = s.enabled();
    for (uint32_t l = 0; l < kLanes; ++l) {
        if (!(en >> l & 1)) continue;
        bool f = setcc_test(s.lreg[vc].u[l], imm12, mod1);
        if (mod1 & 8) f = !f;
        set_flag(l, f);
    }
}

void sfpencc(uint32_t imm12, uint32_t mod1) {
    Machine& s = m();
    switch (mod1 & 3) {
        case 1: s.use_flags = !s.use_flags; break;
        case 2: s.use_flags = imm12 & 1; break;
        default: break;
    }
    s.flags = (mod1 & 8) ? ((imm12 & 2) ? kAllLanes : 0u) : kAllLanes;
}

void sfppushc(uint32_t mod1) {
    Machine& s = m();
    if (mod1 == 1) {
        if (s.stack.empty()) fault("SFPPUSHC: replace on an empty flag stack");
        s.stack.back() = {s.use_flags, s.flags};
        return;
    }
    if (s.stack.size() >= 8) fault("SFPPUSHC: flag stack overflow (8 entries)");
    s.stack.push_back({s.use_flags, s.flags});
}

void sfppopc(uint32_t mod1) {
    Machine& s = m();
    FlagEntry top = s.stack.empty() ? FlagEntry{false, 0u} : s.stack.back();
    if (mod1 == 0) {
        if (s.stack.empty()) fault("SFPPOPC: pop from an empty flag stack");
        s.stack.pop_back();
        s.use_flags = top.use;
        s.flags = top.flags;
        return;
    }
    if (mod1 <= 12) {
        s.use_flags = top.use;
        uint32_t a = s.flags, b = top.flags, r = 0;
        switch (mod1) {
            case 1: r = b; break;
            case 2: r = ~b; break;
            case 3: r = a & b; break;
            case 4: r = a | b; break;
            case 5: r = a & ~b; break;
            case 6: r = a | ~b; break;
            case 7: r = ~a & b; break;
            case 8: r = ~a | b; break;
            case 9: r = ~a & ~b; break;
            case 10: r = ~a | ~b; break;
            case 11: r = a ^ b; break;
            case 12: r = ~(a ^ b); break;
        }
        s.flags = r;
    } else if (mod1 == 13) {
        s.flags = ~s.flags;
    } else {
        s.use_flags = true;
        s.flags = mod1 == 14 ? kAllLanes : 0u;
    }
}

void sfpcompc() {
    Machine& s = m();
    if (!s.use_flags) return;
    FlagEntry top = s.stack.empty() ? FlagEntry{false, kAllLanes} : s.stack.back();
    uint32_t outer = top.use ? top.flags : kAllLanes;
    s.flags = ~s.flags & outer;
}

void sfpconfig(uint32_t imm16, uint32_t vd, uint32_t mod1) {
    Machine& s = m();
    (void)imm16;
    (void)mod1;
    if (vd >= 11 && vd <= 14)
        for (uint32_t l = 0; l < kLanes; ++l) s.lreg[vd].u[l] = s.lreg[0].u[l & 7];
}

void start_tile(uint32_t dst_index, const char* who) {
    dst_for_math(dst_index, who);
    Machine& s = m();
    s.dst_base = dst_index * 64;
    s.dst_rwc = s.dst_cr = 0;
    s.use_flags = true;  // the LLK's SFPU programs run with conditional execution enabled, all lanes set
    s.flags = kAllLanes;
    s.stack.clear();
}

void done() {
    Machine& s = m();
    s.dst_base = 0;
    s.dst_rwc = s.dst_cr = 0;
    count(Counter::SfpuTiles);
}


// ---- instruction issue and replay (include_llk/ckernel_ops.h's TT_* / TTI_* macros)

void exec(const Instr& i) {
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
        default:  // a Blackhole instruction (csrc/compute_sfpu_blackhole.cpp)
            bh::exec(i);
    }
}

void issue(uint8_t op, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t a4,
           uint32_t a5) {
    Instr ins{op, a0, a1, a2, a3, a4, a5};
    Machine& s = m();
    if (s.rec_left > 0) {
        s.replay[s.rec_pos++ & 31] = ins;
        --s.rec_left;
        if (!s.rec_exec) return;
    }
    exec(ins);
}

void replay(uint32_t start, uint32_t len, uint32_t exec_while_loading, uint32_t load_mode) {
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
