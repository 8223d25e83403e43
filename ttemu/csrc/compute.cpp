// The emulated compute engine's non-template functions (include/emu/compute_state.h, compute_unpack.h,
// compute_fpu.h, compute_pack.h, compute_tilize.h, timing_hooks.h declare them and document the model), defined once
// here instead of inline in the headers, so that a compute kernel's compile generates only the kernel's own code and
// the templates it instantiates. Built into the runtime executable ttfd_emu_run (exported with -rdynamic: kernel
// libraries resolve these symbols there when dlopen'ed) and into the C++ unit tests' libraries (ttemu/tests/cxx.py).
//
// State: the compute state (cstate) is a thread_local of this file. The runtime runs one thread per (kernel, core),
// so a core's compute thread has its own state, as it had when the state was a thread_local of the kernel library
// copy each core loads; so are the SFPU kinds' memo and dst_mode_name's message buffer. Nothing here keeps any
// other static.
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>

#include "emu/compute_fpu.h"
#include "emu/compute_pack.h"
#include "emu/compute_state.h"
#include "emu/compute_tilize.h"
#include "emu/compute_unpack.h"
#include "emu/formats.h"
#include "emu/runtime.h"
#include "emu/timing_hooks.h"

namespace emu {

// ---- compute state (emu/compute_state.h)

namespace {
// cstate()'s first call on a thread, kept out of cstate() so that cstate() stays small enough for the inliner.
[[gnu::noinline, gnu::cold]] ComputeState& new_compute_state(std::unique_ptr<ComputeState>& s) {
    s.reset(new ComputeState());
    s->sections[0].clear();
    s->sections[1].clear();
    return *s;
}
}  // namespace

ComputeState& cstate() {
    // One per thread: the runtime runs each core's compute kernel on a thread of its own (csrc/runtime.cpp,
    // thread_main), so this is per core, as on silicon. Heap-allocated (128 KiB): every thread of the process, data
    // movement ones included, has a slot, and only compute threads fill it.
    static thread_local std::unique_ptr<ComputeState> s;
    return s ? *s : new_compute_state(s);
}

void compute_state_reset() {
    ComputeState& s = cstate();
    s.~ComputeState();
    new (&s) ComputeState();
    s.sections[0].clear();
    s.sections[1].clear();
}

const char* dst_mode_name() {
    static thread_local char buf[64];
    std::snprintf(buf, sizeof buf, "%s-sync, %s DST", compute_config().dst_full_sync_en ? "full" : "half",
                  dst_fp32() ? "fp32" : "bf16");
    return buf;
}

TileGeom cb_tile_geom(uint32_t cb, bool pack_side) {
    const CbTileShapes* t = cb_tile_shapes();
    if (t && cb < 32)
        return pack_side ? TileGeom{t->pack_num_faces[cb], t->pack_face_r[cb]}
                         : TileGeom{t->unpack_num_faces[cb], t->unpack_face_r[cb]};
    return TileGeom{};
}

void dst_math_acquire(const char* who) {
    ComputeState& s = cstate();
    if (s.math_section >= 0)
        fault("%s: DST already acquired by MATH (missing tile_regs_commit / release_dst before this acquire)", who);
    uint32_t held = static_cast<uint32_t>(s.num_committed) + (s.pack_section >= 0 ? 1 : 0);
    if (held >= dst_num_sections())
        fault("%s: every DST section is still owned by PACK (%u committed, pack %s) in %s mode: on silicon MATH "
              "would wait forever because PACK's tile_regs_wait/release come later in program order",
              who, s.num_committed, s.pack_section >= 0 ? "holding one" : "idle", dst_mode_name());
    int free_sec = 0;
    while (free_sec == s.pack_section || (s.num_committed > 0 && s.committed[0] == free_sec) ||
           (s.num_committed > 1 && s.committed[1] == free_sec))
        ++free_sec;
    s.math_section = free_sec;
    if (auto* tr = timing_risc()) tr->tile_regs_acquire();
}

void dst_math_commit(const char* who) {
    ComputeState& s = cstate();
    if (s.math_section < 0) fault("%s: tile_regs_commit without tile_regs_acquire", who);
    s.committed[s.num_committed++] = s.math_section;
    s.math_section = -1;
    if (auto* tr = timing_risc()) tr->tile_regs_commit();
}

void dst_pack_wait(const char* who) {
    ComputeState& s = cstate();
    if (s.pack_section >= 0) fault("%s: tile_regs_wait while PACK still holds a section (missing tile_regs_release)", who);
    if (s.num_committed == 0)
        fault("%s: tile_regs_wait with no committed DST section (missing tile_regs_commit): PACK would wait forever",
              who);
    s.pack_section = s.committed[0];
    s.committed[0] = s.committed[1];
    s.committed[1] = -1;
    --s.num_committed;
    if (auto* tr = timing_risc()) tr->tile_regs_wait();
}

void dst_pack_release(const char* who) {
    ComputeState& s = cstate();
    if (s.pack_section < 0) fault("%s: tile_regs_release without tile_regs_wait", who);
    // A timing-only run never reads DST values (TIMING.md, section 7): the 64 KiB of zeros a release writes would be
    // most of its compute thread's work, so only the section's tiles become undefined.
    if (timing_only())
        s.sections[s.pack_section].clear_defined();
    else
        s.sections[s.pack_section].clear();
    s.pack_section = -1;
    if (auto* tr = timing_risc()) tr->tile_regs_release();
}

void dst_check_index(uint32_t idx, const char* who) {
    if (idx >= dst_capacity())
        fault("%s: DST index %u out of range: %s holds %u tiles per section", who, idx, dst_mode_name(),
              dst_capacity());
}

DstSection& dst_for_math(uint32_t idx, const char* who) {
    ComputeState& s = cstate();
    if (s.math_section < 0) {
        if (s.num_committed > 0 || s.pack_section >= 0)
            fault("%s: math on DST after tile_regs_commit (DST now belongs to PACK); acquire a new section first", who);
        fault("%s: math on DST before tile_regs_acquire", who);
    }
    dst_check_index(idx, who);
    return s.sections[s.math_section];
}

DstSection& dst_for_pack(uint32_t idx, const char* who) {
    ComputeState& s = cstate();
    int sec = s.pack_section;
    if (sec < 0 && s.legacy_dst) sec = s.math_section;
    if (sec < 0) {
        if (s.math_section >= 0)
            fault("%s: pack from DST before tile_regs_commit + tile_regs_wait (MATH still owns the section)", who);
        fault("%s: pack from DST without an acquired section (missing tile_regs_wait)", who);
    }
    dst_check_index(idx, who);
    return s.sections[sec];
}

void dst_write_tile(DstSection& d, uint32_t t, const float* v) {
    for (uint32_t i = 0; i < kTileHW; ++i) d.tile[t][i] = dst_round(v[i]);
    d.defined[t] = true;
}


// ---- unpacker (emu/compute_unpack.h)

namespace {
void src_register_tile(float* v, uint32_t keep);  // below, with the FPU's vector kernels
}  // namespace

void check_unpack_format(uint32_t cb, Src s, const char* who) {
    ComputeState& st = cstate();
    if (!st.started)
        fault("%s: compute API used before compute_kernel_hw_startup (or a legacy *_init_common) configured the "
              "unpacker", who);
    DataFormat have = cb_data_format(cb);
    DataFormat cfg = s == Src::A ? st.srca_fmt : st.srcb_fmt;
    if (have != cfg)
        fault("%s: %s unpacker is configured for %s (cb %u) but cb %u holds %s: missing reconfig_data_format%s"
              "(..., %u)?",
              who, src_name(s), data_format_name(cfg), s == Src::A ? st.srca_cb : st.srcb_cb, cb,
              data_format_name(have), s == Src::A ? "_srca" : "_srcb", cb);
}

void unpack_cb_tile(uint32_t cb, uint32_t index, Src s, float* out, const char* who) {
    check_unpack_format(cb, s, who);
    if (!cb_pages_available_at_front(cb, index + 1))
        fault("%s: reads tile %u of cb %u but fewer than %u tiles are at its front (missing cb_wait_front?)", who,
              index, cb, index + 1);
    DataFormat f = cb_data_format(cb);
    TileGeom g = cb_tile_geom(cb, false);
    uint32_t page = cb_page_size(cb);
    uint32_t bytes = tile_size_bytes(f, g);
    if (page < bytes) fault("%s: cb %u page size %u is smaller than a %s tile (%u B)", who, cb, page, data_format_name(f), bytes);
    const uint8_t* p = l1(cb_read_addr(cb) + index * page, bytes);
    if (timing_only()) {  // checked, counted and timed by the caller; the values are never used
        std::fill(out, out + kTileHW, 0.0f);
        count(Counter::TilesUnpacked);
        return;
    }
    unpack_tile(f, p, out, g);
    // to_src_register of every value, with the format's choice made once per tile: Float32 keeps 10 or 7 mantissa
    // bits (truncate_mantissa), the other formats all they have
    uint32_t keep = f == DataFormat::Float32 ? ~((1u << (23 - (dst_fp32() ? 10 : 7))) - 1u) : 0xffffffffu;
    src_register_tile(out, keep);
    count(Counter::TilesUnpacked);
}

uint32_t fidelity_phases() {
    switch (compute_config().math_fidelity) {
        case 0: return 1;  // LoFi
        case 2: return 2;  // HiFi2
        case 3: return 3;  // HiFi3
        case 4: return 4;  // HiFi4
        default: fault("unsupported math_fidelity %u (expected 0 LoFi, 2 HiFi2, 3 HiFi3, 4 HiFi4)",
                       compute_config().math_fidelity);
    }
}


// ---- timing hooks (emu/timing_hooks.h)

std::string timing_demangle(const char* mangled) {
    if (!mangled) return "";
    int status = 0;
    char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string out = status == 0 && d ? d : mangled;
    std::free(d);
    return out;
}

SfpuKind timing_classify_sfpu(const std::string& name, bool binary) {
    SfpuKind k;
    auto first_template_arg_true = [&](size_t from) {
        size_t lt = name.find('<', from);
        return lt != std::string::npos && name.compare(lt + 1, 4, "true") == 0;
    };
    // The index-th template argument of the function named at `at`, if it is an integer (else `fallback`).
    auto template_int_arg = [&](size_t at, int index, uint32_t fallback) -> uint32_t {
        size_t i = name.find('<', at);
        if (i == std::string::npos) return fallback;
        for (int depth = 0, arg = 0; ++i < name.size();) {
            char c = name[i];
            if (c == '<' || c == '(') ++depth;
            else if ((c == '>' || c == ')') && depth > 0) --depth;
            else if (depth == 0 && c == ',') ++arg;
            else if (depth == 0 && c == '>') break;
            else if (depth == 0 && arg == index && c != ' ') {
                if (c < '0' || c > '9') return fallback;
                uint32_t v = std::strtoul(name.c_str() + i, nullptr, 10);
                return v > 0 ? v : fallback;
            }
        }
        return fallback;
    };
    size_t p;
    if ((p = name.find("recip")) != std::string::npos) {
        k.op = timing::Op::SfpuRecip;
        k.approx = first_template_arg_true(p);
        if ((p = name.find("calculate_reciprocal<")) != std::string::npos) k.iterations = template_int_arg(p, 2, 8);
    } else if ((p = name.find("exp")) != std::string::npos) {
        k.op = timing::Op::SfpuExp;
        k.approx = first_template_arg_true(p);
        if ((p = name.find("calculate_exponential<")) != std::string::npos) k.iterations = template_int_arg(p, 3, 8);
    } else if (binary) {
        k.op = timing::Op::SfpuBinary;
    }
    return k;
}

SfpuKind timing_sfpu_function_kind(const std::type_info& type, const void* fn, bool binary) {
    // Keyed by (function pointer type, function), as the memo was when it was a static of each instantiation of
    // timing_sfpu_kind in the kernel: the first classification of a pair is the one kept. thread_local: one memo per
    // compute thread, i.e. per core, as the static was per kernel library copy (the runtime loads one per core).
    static thread_local std::map<std::pair<const std::type_info*, const void*>, SfpuKind> memo;
    auto key = std::make_pair(&type, fn);
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
    Dl_info info{};
    std::string name = dladdr(fn, &info) && info.dli_sname ? timing_demangle(info.dli_sname) : "";
    return memo[key] = timing_classify_sfpu(name, binary);
}

void timing_matmul(uint32_t cb0, uint32_t cb1, uint32_t rt, uint32_t ct) {
    if (auto* tr = timing_risc()) {
        TileGeom g = cb_tile_geom(cb0, false);
        double rows = double(g.num_faces > 2 ? 2 : 1) * g.face_r;  // in0 rows: faces 0/1 hold rows 0-15
        uint32_t bytes = (timing_tile_bytes(cb0, false) * rt + timing_tile_bytes(cb1, false) * ct) / (rt + ct);
        tr->compute(timing::Op::Matmul, rt * ct, rt + ct, bytes, compute_config().math_fidelity, false, rows / 32.0);
    }
}


// ---- FPU (emu/compute_fpu.h)

void transpose_32x32(float* t) {
    for (uint32_t r = 0; r < 32; ++r)
        for (uint32_t c = r + 1; c < 32; ++c) std::swap(t[r * 32 + c], t[c * 32 + r]);
}

void unpack_transpose(float* t, uint32_t mode) {
    if (mode == 3) {
        transpose_32x32(t);
        return;
    }
    if (mode & 1)
        for (uint32_t r = 0; r < 16; ++r)
            for (uint32_t c = 0; c < 16; ++c) std::swap(t[r * 32 + 16 + c], t[(16 + r) * 32 + c]);
    if (mode & 2)
        for (uint32_t f = 0; f < 4; ++f) {
            float* base = t + (f / 2) * 16 * 32 + (f % 2) * 16;
            for (uint32_t r = 0; r < 16; ++r)
                for (uint32_t c = r + 1; c < 16; ++c) std::swap(base[r * 32 + c], base[c * 32 + r]);
        }
}

void fpu_copy_tile(uint32_t cb, uint32_t index, uint32_t idst, uint32_t transpose_mode, const char* who) {
    DstSection& d = dst_for_math(idst, who);
    float a[kTileHW];
    unpack_cb_tile(cb, index, Src::A, a, who);
    if (timing_only()) {
        d.defined[idst] = true;
    } else {
        unpack_transpose(a, transpose_mode);
        dst_write_tile(d, idst, a);
    }
    timing_fpu(transpose_mode ? timing::Op::Transpose : timing::Op::Copy, 1, 1, cb);
}





// ---- the FPU's arithmetic, vectorised (matmul, element-wise product)

namespace {
// W fp32 lanes (a GCC vector type): 16 = an AVX-512 register, 8 = AVX2, 4 = SSE.
template <int W>
struct Lanes {
    typedef float F __attribute__((vector_size(4 * W)));
    typedef uint32_t U __attribute__((vector_size(4 * W)));
    // W / 2 double lanes (the same register), and the W / 2 floats they widen from and narrow to
    typedef double D __attribute__((vector_size(4 * W)));
    typedef uint64_t UD __attribute__((vector_size(4 * W)));
    typedef float HalfF __attribute__((vector_size(2 * W)));
    typedef uint32_t HalfU __attribute__((vector_size(2 * W)));
};

// (By reference: a vector wider than the build's target has a target-dependent ABI when passed by value.)
template <class V>
[[gnu::always_inline]] inline void load_lanes(V& v, const float* p) {
    std::memcpy(&v, p, sizeof v);
}
template <class V>
[[gnu::always_inline]] inline void store_lanes(float* p, const V& v) {
    std::memcpy(p, &v, sizeof v);
}

// round_to_bf16 (emu/formats.h) lane by lane: nearest even; a NaN keeps its top half, made quiet.
template <int W>
[[gnu::always_inline]] inline void round_to_bf16_lanes(typename Lanes<W>::F& x) {
    typename Lanes<W>::U u;
    std::memcpy(&u, &x, sizeof u);
    typename Lanes<W>::U nearest = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    typename Lanes<W>::U quiet_nan = (u & 0xffff0000u) | 0x00400000u;
    typename Lanes<W>::U r = (u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : nearest;
    std::memcpy(&x, &r, sizeof x);
}

// z = x * y and x = x + y, lane by lane, with x the instruction's first source operand. IEEE leaves open which
// NaN's payload an operation on two NaNs returns; x86 returns the first source's, and a compiler may swap the operands
// of a commutative operation written in plain C++, so the order is fixed here: the one the scalar loop this replaced
// was compiled to (product b * a, partial sum + product, partial sum + DST).
template <int W>
[[gnu::always_inline]] inline void mul_lanes(typename Lanes<W>::F& z, const typename Lanes<W>::F& x,
                                             const typename Lanes<W>::F& y) {
#if defined(__x86_64__)
    if constexpr (W == 4) {
        z = x;
        asm("mulps %1, %0" : "+x"(z) : "x"(y));
    } else {
        asm("vmulps %2, %1, %0" : "=v"(z) : "v"(x), "v"(y));
    }
#else
    z = x * y;
#endif
}
template <int W>
[[gnu::always_inline]] inline void add_lanes(typename Lanes<W>::F& x, const typename Lanes<W>::F& y) {
#if defined(__x86_64__)
    if constexpr (W == 4) asm("addps %1, %0" : "+x"(x) : "x"(y));
    else asm("vaddps %1, %0, %0" : "+v"(x) : "v"(y));
#else
    x = x + y;
#endif
}

// x + y and x - y in single precision, x the instruction's first source operand (of two NaNs x86 returns its
// payload; see mul_lanes).
inline float add_first(float x, float y) {
#if defined(__x86_64__)
    asm("addss %1, %0" : "+x"(x) : "x"(y));
    return x;
#else
    return x + y;
#endif
}
inline float sub_first(float x, float y) {
#if defined(__x86_64__)
    asm("subss %1, %0" : "+x"(x) : "x"(y));
    return x;
#else
    return x - y;
#endif
}

// R rows of one output tile of a matmul step: out = prev (zeros when null) + A x B, phase by phase, with A's and
// B's fidelity parts split beforehand (a[h]: A's SrcB part h, b[h]: B's SrcA part h, row-major); rows[r] names the
// tile row of lane row r. Each output datum sums its 16 products of each half of k from 0 in k order, and is rounded
// into DST after each half of each phase (dst_round), as the phase-by-phase definition of the matmul does: the lanes
// are 32 outputs of a row side by side and R rows at a time, never a reordering of one output's sum, and every
// operation is a separate IEEE single-precision multiply or add (no fused multiply-add, which would round once where
// the model rounds twice), so every result is the scalar loop's bit for bit.
template <int W, int R>
[[gnu::always_inline]] inline void matmul_rows(const float* const a[2], const float* const b[2], const float* prev,
                                               float* out, uint32_t phases, bool fp32, const uint8_t* rows) {
    typedef typename Lanes<W>::F F;
    constexpr int N = 32 / W;  // vectors per row
    F acc[R][N];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int n = 0; n < N; ++n) {
            acc[r][n] = F{};
            if (prev) load_lanes(acc[r][n], prev + rows[r] * 32 + n * W);
        }
    for (uint32_t p = 0; p < phases; ++p) {
        const float* ap[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) ap[r] = a[(p >> 1) & 1] + rows[r] * 32;
        const float* bp = b[p & 1];
        for (uint32_t half = 0; half < 2; ++half) {
            F s[R][N] = {};
            for (uint32_t k = half * 16; k < half * 16 + 16; ++k) {
#pragma GCC unroll 8
                for (int n = 0; n < N; ++n) {
                    F bk;
                    load_lanes(bk, bp + k * 32 + n * W);
#pragma GCC unroll 8
                    for (int r = 0; r < R; ++r) {
                        F prod, av;
                        for (int l = 0; l < W; ++l) av[l] = ap[r][k];
                        mul_lanes<W>(prod, bk, av);
                        add_lanes<W>(s[r][n], prod);
                    }
                }
            }
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
                for (int n = 0; n < N; ++n) {
                    add_lanes<W>(s[r][n], acc[r][n]);
                    acc[r][n] = s[r][n];
                    if (!fp32) round_to_bf16_lanes<W>(acc[r][n]);
                }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int n = 0; n < N; ++n) store_lanes(out + rows[r] * 32 + n * W, acc[r][n]);
}

// matmul_rows of a row whose A parts are all zeros (either sign) against a B with no Inf or NaN: every product is a
// signed zero and every 16-product sum, begun at +0, is +0 (round to nearest: +0 + -0 = +0), so each half of each
// phase adds +0 to the running value and rounds it, without the 512 products. One such step suffices: its result
// (never -0, a NaN already quiet, a value DST's format holds) comes through another step unchanged. The add puts +0
// first as matmul_rows does (it turns a -0 into +0 and quiets a NaN).
template <int W>
[[gnu::always_inline]] inline void matmul_zero_row(const float* prev, float* out, bool fp32, uint32_t row) {
    typedef typename Lanes<W>::F F;
    constexpr int N = 32 / W;
    for (int n = 0; n < N; ++n) {
        F acc = F{};
        if (prev) load_lanes(acc, prev + row * 32 + n * W);
        F s = F{};
        add_lanes<W>(s, acc);
        if (!fp32) round_to_bf16_lanes<W>(s);
        store_lanes(out + row * 32 + n * W, s);
    }
}

// One output tile of a matmul step (matmul_rows of every row). zero_rows: a bit per tile row whose A parts are all
// zeros while B has no Inf or NaN (fpu_matmul finds them: a decode's query tile is mostly padding rows), computed as
// matmul_zero_row; the other rows R at a time, then fewer for the rest. Rows are independent, so which rows share a
// pass never changes a result.
template <int W, int R>
[[gnu::always_inline]] inline void matmul_tile_rows(const float* const a[2], const float* const b[2], const float* prev,
                                                    float* out, uint32_t phases, bool fp32, uint32_t zero_rows) {
    uint8_t rows[32];
    uint32_t m = 0;
    for (uint32_t i = 0; i < 32; ++i) {
        if (zero_rows >> i & 1) matmul_zero_row<W>(prev, out, fp32, i);
        else rows[m++] = static_cast<uint8_t>(i);
    }
    uint32_t i = 0;
    for (; i + R <= m; i += R) matmul_rows<W, R>(a, b, prev, out, phases, fp32, rows + i);
    if constexpr (R >= 8) {
        if (m - i >= 4) {
            matmul_rows<W, 4>(a, b, prev, out, phases, fp32, rows + i);
            i += 4;
        }
    }
    if constexpr (R >= 4) {
        if (m - i >= 2) {
            matmul_rows<W, 2>(a, b, prev, out, phases, fp32, rows + i);
            i += 2;
        }
    }
    if constexpr (R >= 2) {
        if (m - i >= 1) {
            matmul_rows<W, 1>(a, b, prev, out, phases, fp32, rows + i);
            i += 1;
        }
    }
}

// Element-wise product of two tiles through the fidelity phases, as fidelity_mul_into(0, a[i], b[i], phases, fp32)
// (compute_fpu.h) computes each datum, W data at a time: per phase the product of SrcB's part and SrcA's part, added
// to the running value and rounded into DST; operands in the order that scalar loop was compiled to.
template <int W>
[[gnu::always_inline]] inline void mul_tile_lanes(const float* a, const float* b, float* out, uint32_t phases,
                                                  bool fp32) {
    typedef typename Lanes<W>::F F;
    typedef typename Lanes<W>::U U;
    for (uint32_t i = 0; i < kTileHW; i += W) {
        F x, y, acc = F{};
        load_lanes(x, a + i);
        load_lanes(y, b + i);
        U ux, uy;
        std::memcpy(&ux, &x, sizeof ux);
        std::memcpy(&uy, &y, sizeof uy);
        for (uint32_t p = 0; p < phases; ++p) {
            // srca_fidelity_part(x, p) and srcb_fidelity_part(y, p) (compute_unpack.h)
            U ma = (p & 1) == 0 ? ux & 0xfff80000u : ux & 0xfff83fffu;
            U mb = (p & 2) == 0 ? uy & 0xfffe0000u : uy & 0xfffe1fffu;
            F pa, pb, prod;
            std::memcpy(&pa, &ma, sizeof pa);
            std::memcpy(&pb, &mb, sizeof pb);
            if (p & 1) pa = x - pa;
            if (p & 2) pb = y - pb;
            mul_lanes<W>(prod, pb, pa);
            add_lanes<W>(acc, prod);
            if (!fp32) round_to_bf16_lanes<W>(acc);
        }
        store_lanes(out + i, acc);
    }
}

// A matmul operand tile's two fidelity parts (srca_fidelity_part / srcb_fidelity_part of phase bits 0 and 1, as
// split_fidelity_parts), W data at a time, with what fpu_matmul's zero-row shortcut asks of the operand: in0 (SrcB)
// the bit mask of its all-zero rows, in1 (SrcA) whether it holds no Inf or NaN (1) or does (0). The part 1 is x - the
// masked x, x first as the scalar code has it (the difference is exact; a NaN x gives x's payload, quieted).
template <int W>
[[gnu::always_inline]] inline uint32_t split_operand_lanes(const float* x, float* part0, float* part1, bool srca) {
    typedef typename Lanes<W>::F F;
    typedef typename Lanes<W>::U U;
    const uint32_t keep0 = srca ? 0xfff80000u : 0xfffe0000u, cut1 = srca ? 0xfff83fffu : 0xfffe1fffu;
    uint32_t zero_rows = 0;
    U nonfinite = U{};
    for (uint32_t r = 0; r < 32; ++r) {
        U any = U{};
        for (uint32_t c = 0; c < 32; c += W) {
            F v, p0, masked;
            U u;
            load_lanes(v, x + r * 32 + c);
            std::memcpy(&u, &v, sizeof u);
            U m0 = u & keep0, m1 = u & cut1;
            std::memcpy(&p0, &m0, sizeof p0);
            std::memcpy(&masked, &m1, sizeof masked);
            F p1 = v - masked;
            store_lanes(part0 + r * 32 + c, p0);
            store_lanes(part1 + r * 32 + c, p1);
            any |= u & 0x7fffffffu;
            nonfinite |= (U)((u & 0x7f800000u) == 0x7f800000u);
        }
        uint32_t row_any = 0;
        for (int l = 0; l < W; ++l) row_any |= any[l];
        zero_rows |= static_cast<uint32_t>(row_any == 0) << r;
    }
    if (!srca) return zero_rows;
    uint32_t bad = 0;
    for (int l = 0; l < W; ++l) bad |= nonfinite[l];
    return bad == 0;
}

// The element-wise add into a BF16 DST of a tile, fpu_add_into_dst(base[i], a[i], b[i], acc, false) of every datum
// (compute_fpu.h), W / 2 data at a time in double lanes: the same double operations on the same values in the same
// order (operands widened exactly; the aligned sum's exponent e of frexp(big) is big's double exponent field - 1022,
// which for a denormal float is the one its highest set bit gives), so every result is that function's bit for bit
// (no fused multiply-add: fp-contract=off on each variant). A datum with an Inf or NaN operand (or DST value, when
// accumulating) takes fpu_add_into_dst itself, for the NaN it picks; every other sum is finite.
template <int W>
[[gnu::always_inline]] inline void add_tile_bf16_lanes(const float* a, const float* b, const float* base, float* out,
                                                       bool acc) {
    constexpr int N = W / 2;
    typedef typename Lanes<W>::HalfF F;
    typedef typename Lanes<W>::HalfU UF;
    typedef typename Lanes<W>::D D;
    typedef typename Lanes<W>::UD U;
    constexpr uint64_t kSign = 0x8000000000000000ull, kExp = 0x7ff0000000000000ull;
    constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52, as fpu_aligned_sum
    for (uint32_t i = 0; i < kTileHW; i += N) {
        F fa, fb, fbase = F{};
        load_lanes(fa, a + i);
        load_lanes(fb, b + i);
        if (acc) load_lanes(fbase, base + i);
        D da = __builtin_convertvector(fa, D), db = __builtin_convertvector(fb, D);
        D dbase = __builtin_convertvector(fbase, D);
        U ua, ub, ubase;
        std::memcpy(&ua, &da, sizeof ua);
        std::memcpy(&ub, &db, sizeof ub);
        std::memcpy(&ubase, &dbase, sizeof ubase);
        U special = (U)((ua & kExp) == kExp) | (U)((ub & kExp) == kExp) | (U)((ubase & kExp) == kExp);
        // fpu_aligned_sum: big the operand of larger magnitude (a on a tie), small the other
        U a_big = (U)((ua & ~kSign) >= (ub & ~kSign));
        U ubig = (a_big & ua) | (~a_big & ub), usmall = (a_big & ub) | (~a_big & ua);
        U exp = (ubig >> 52) & 0x7ffu;                           // e + 1022
        U ugrid = (exp - 10) << 52, uinv = (2056 - exp) << 52;  // 2^(e - 11), 2^(11 - e)
        D big, small, grid, inv;
        std::memcpy(&big, &ubig, sizeof big);
        std::memcpy(&small, &usmall, sizeof small);
        std::memcpy(&grid, &ugrid, sizeof grid);
        std::memcpy(&inv, &uinv, sizeof inv);
        D q = (small * inv + kRound) - kRound;
        D sum = big + q * grid, zero_sum = da + db;  // zero_sum: big == 0 (both operands zeros)
        U usum, uzero_sum;
        std::memcpy(&usum, &sum, sizeof usum);
        std::memcpy(&uzero_sum, &zero_sum, sizeof uzero_sum);
        U zero = (U)((ubig & ~kSign) == 0);
        usum = (zero & uzero_sum) | (~zero & usum);
        if (acc) {
            std::memcpy(&sum, &usum, sizeof sum);
            sum = sum + dbase;
            std::memcpy(&usum, &sum, sizeof usum);
        }
        // round_bf16_ties_away: 8 significant bits, ties away from zero, then to float and flush_denormal
        U ur = (usum + (uint64_t{1} << 44)) & ~((uint64_t{1} << 45) - 1);
        D r;
        std::memcpy(&r, &ur, sizeof r);
        F fr = __builtin_convertvector(r, F);
        UF u;
        std::memcpy(&u, &fr, sizeof u);
        u = (u & 0x7f800000u) == 0 ? u & 0x80000000u : u;
        store_lanes(out + i, u);
        uint64_t any = 0;
        for (int l = 0; l < N; ++l) any |= special[l];
        if (any)
            for (int l = 0; l < N; ++l)
                if (special[l]) out[i + l] = fpu_add_into_dst(acc ? base[i + l] : 0.0f, a[i + l], b[i + l], acc, false);
    }
}

// A tile's values as the unpacker leaves them in a source register (to_src_register, compute_unpack.h), W at a time:
// truncate_mantissa to the bits `keep` leaves (all ones: none cut; Inf and NaN kept), then flush_denormal.
template <int W>
[[gnu::always_inline]] inline void src_register_lanes(float* v, uint32_t keep) {
    typedef typename Lanes<W>::U U;
    for (uint32_t i = 0; i < kTileHW; i += W) {
        U u;
        std::memcpy(&u, v + i, sizeof u);
        u = (u & 0x7f800000u) == 0x7f800000u ? u : u & keep;
        u = (u & 0x7f800000u) == 0 ? u & 0x80000000u : u;
        std::memcpy(v + i, &u, sizeof u);
    }
}

using MatmulTileFn = void (*)(const float* const[2], const float* const[2], const float*, float*, uint32_t, bool,
                              uint32_t);
using MulTileFn = void (*)(const float*, const float*, float*, uint32_t, bool);
using SplitOperandFn = uint32_t (*)(const float*, float*, float*, bool);
using AddTileFn = void (*)(const float*, const float*, const float*, float*, bool);
using SrcRegisterFn = void (*)(float*, uint32_t);
struct FpuKernels {
    MatmulTileFn matmul_tile;
    MulTileFn mul_tile;
    SplitOperandFn split_operand;
    AddTileFn add_tile_bf16;
    SrcRegisterFn src_register;
};

// The widest variant the host runs (rows at a time as its registers hold). Every variant computes the same IEEE
// operations in the same order per output, so the choice never changes a result (fp-contract=off
// for the non-x86 build, where the operations are plain C++).
#define EMU_FPU_KERNELS(NAME, W, R, ...)                                                                         \
    __VA_ARGS__ void matmul_tile_##NAME(const float* const a[2], const float* const b[2], const float* prev, float* out, \
                                  uint32_t phases, bool fp32, uint32_t zero_rows) {                               \
        matmul_tile_rows<W, R>(a, b, prev, out, phases, fp32, zero_rows);                                         \
    }                                                                                                             \
    __VA_ARGS__ void mul_tile_##NAME(const float* a, const float* b, float* out, uint32_t phases, bool fp32) {          \
        mul_tile_lanes<W>(a, b, out, phases, fp32);                                                               \
    }                                                                                                             \
    __VA_ARGS__ uint32_t split_operand_##NAME(const float* x, float* part0, float* part1, bool srca) {            \
        return split_operand_lanes<W>(x, part0, part1, srca);                                                     \
    }                                                                                                             \
    __VA_ARGS__ void add_tile_bf16_##NAME(const float* a, const float* b, const float* base, float* out, bool acc) { \
        add_tile_bf16_lanes<W>(a, b, base, out, acc);                                                             \
    }                                                                                                             \
    __VA_ARGS__ void src_register_##NAME(float* v, uint32_t keep) { src_register_lanes<W>(v, keep); }
EMU_FPU_KERNELS(sse, 4, 1, [[gnu::optimize("fp-contract=off")]])
#if defined(__x86_64__)
EMU_FPU_KERNELS(avx2, 8, 2, [[gnu::target("avx2"), gnu::optimize("fp-contract=off")]])
EMU_FPU_KERNELS(avx512, 16, 8, [[gnu::target("avx512f"), gnu::optimize("fp-contract=off")]])
#endif
#undef EMU_FPU_KERNELS

const FpuKernels& fpu_kernels() {
#if defined(__x86_64__)
    static const FpuKernels k =
        __builtin_cpu_supports("avx512f")
            ? FpuKernels{matmul_tile_avx512, mul_tile_avx512, split_operand_avx512, add_tile_bf16_avx512,
                         src_register_avx512}
        : __builtin_cpu_supports("avx2")
            ? FpuKernels{matmul_tile_avx2, mul_tile_avx2, split_operand_avx2, add_tile_bf16_avx2, src_register_avx2}
            : FpuKernels{matmul_tile_sse, mul_tile_sse, split_operand_sse, add_tile_bf16_sse, src_register_sse};
#else
    static const FpuKernels k{matmul_tile_sse, mul_tile_sse, split_operand_sse, add_tile_bf16_sse, src_register_sse};
#endif
    return k;
}

void src_register_tile(float* v, uint32_t keep) { fpu_kernels().src_register(v, keep); }

// bcast_pick(b, bc, r, c, row_idx) of every output datum (r, c), the broadcast chosen once per tile.
void bcast_tile(const float* b, Bcast bc, uint32_t row_idx, float* out) {
    switch (bc) {
        case Bcast::None: std::memcpy(out, b, kTileHW * sizeof(float)); return;
        case Bcast::Col:
            for (uint32_t r = 0; r < 32; ++r) std::fill(out + r * 32, out + r * 32 + 32, b[r * 32]);
            return;
        case Bcast::Row:
            for (uint32_t r = 0; r < 32; ++r) std::memcpy(out + r * 32, b + row_idx * 32, 32 * sizeof(float));
            return;
        case Bcast::Scalar: std::fill(out, out + kTileHW, b[0]); return;
    }
}
}  // namespace

void fpu_binary_values(const float* a, const float* b, BinaryOp op, Bcast bc, uint32_t row_idx, uint32_t idst,
                       bool acc_to_dest, const char* who) {
    DstSection& d = dst_for_math(idst, who);
    float* t = d.tile[idst];
    uint32_t phases = op == BinaryOp::Mul ? fidelity_phases() : 0;
    if (timing_only()) {
        d.defined[idst] = true;
        count(Counter::FpuTiles);
        return;
    }
    const bool fp32 = dst_fp32();
    float bv[kTileHW];
    bcast_tile(b, bc, row_idx, bv);
    if (op == BinaryOp::Mul) {  // fidelity_mul_into(0, a, b, phases, fp32) of every datum, vectorised
        float acc[kTileHW];
        fpu_kernels().mul_tile(a, bv, acc, phases, fp32);
        std::memcpy(t, acc, sizeof acc);
        d.defined[idst] = true;
        count(Counter::FpuTiles);
        return;
    }
    if (!fp32) {  // add / sub into a BF16 DST: fpu_add_into_dst(base, a, +-b, acc_to_dest, false) of every datum
        float base[kTileHW];
        if (op == BinaryOp::Sub)
            for (uint32_t i = 0; i < kTileHW; ++i) bv[i] = -bv[i];
        if (acc_to_dest)
            for (uint32_t i = 0; i < kTileHW; ++i) base[i] = dst_acc_read(d, idst, i);
        fpu_kernels().add_tile_bf16(a, bv, base, t, acc_to_dest);
        d.defined[idst] = true;
        count(Counter::FpuTiles);
        return;
    }
    // add / sub into an fp32 DST (fpu_add_into_dst's a + b, + base when accumulating): a +- b, then + DST, each one
    // single-precision instruction with the operands in the order the runtime's compiler chose for that function
    // (a subtraction, not an add of -b, which would flip a NaN b's sign), fixed here as mul_lanes / add_lanes fix
    // theirs.
    for (uint32_t i = 0; i < kTileHW; ++i) {
        float v = op == BinaryOp::Sub ? sub_first(a[i], bv[i]) : add_first(a[i], bv[i]);
        t[i] = acc_to_dest ? add_first(v, dst_acc_read(d, idst, i)) : v;
    }
    d.defined[idst] = true;
    count(Counter::FpuTiles);
}

void fpu_binary_tiles(uint32_t cb0, uint32_t cb1, uint32_t i0, uint32_t i1, uint32_t idst, BinaryOp op,
                      Bcast bc, uint32_t row_idx, const char* who) {
    dst_for_math(idst, who);
    if (row_idx >= 32) fault("%s: bcast_row_idx %u out of range", who, row_idx);
    float a[kTileHW], b[kTileHW];
    unpack_cb_tile(cb0, i0, Src::A, a, who);
    unpack_cb_tile(cb1, i1, Src::B, b, who);
    fpu_binary_values(a, b, op, bc, row_idx, idst, op != BinaryOp::Mul && cstate().binary_acc_to_dest, who);
    timing_fpu(op == BinaryOp::Mul ? timing::Op::EltwiseMul : timing::Op::EltwiseAdd, 1, 2, cb0);
}

void fpu_binary_reuse_dest(uint32_t cb, uint32_t index, uint32_t idst, BinaryOp op, bool dest_to_srca,
                           const char* who) {
    DstSection& d = dst_for_math(idst, who);
    float from_dst[kTileHW], from_cb[kTileHW];
    for (uint32_t i = 0; i < kTileHW; ++i) from_dst[i] = dst_to_src_register(dst_acc_read(d, idst, i));
    unpack_cb_tile(cb, index, dest_to_srca ? Src::B : Src::A, from_cb, who);
    const float* a = dest_to_srca ? from_dst : from_cb;
    const float* b = dest_to_srca ? from_cb : from_dst;
    fpu_binary_values(a, b, op, Bcast::None, 0, idst, false, who);
    timing_fpu(op == BinaryOp::Mul ? timing::Op::EltwiseMul : timing::Op::EltwiseAdd, 1, 1, cb);
}

void fpu_matmul(uint32_t cb0, uint32_t cb1, uint32_t in0, uint32_t in1, uint32_t idst, bool transpose,
                uint32_t ct, uint32_t rt, uint32_t kt, const char* who) {
    if (ct == 0 || rt == 0) fault("%s: ct_dim=%u rt_dim=%u must be >= 1", who, ct, rt);
    DstSection& d = dst_for_math(idst, who);
    dst_check_index(idst + rt * ct - 1, who);
    uint32_t phases = fidelity_phases();
    if (timing_only()) {  // every operand checked, counted and timed; its values are never used
        float scratch[kTileHW];
        for (uint32_t r = 0; r < rt; ++r) unpack_cb_tile(cb0, in0 + r * kt, Src::B, scratch, who);
        for (uint32_t c = 0; c < ct; ++c) unpack_cb_tile(cb1, in1 + c, Src::A, scratch, who);
        timing_matmul(cb0, cb1, rt, ct);
        for (uint32_t t = idst; t < idst + rt * ct; ++t) d.defined[t] = true;
        count(Counter::MatmulTiles, rt * ct);
        return;
    }
    std::unique_ptr<float[]> A(new float[rt * kTileHW]), B(new float[ct * kTileHW]);
    for (uint32_t r = 0; r < rt; ++r) unpack_cb_tile(cb0, in0 + r * kt, Src::B, &A[r * kTileHW], who);
    for (uint32_t c = 0; c < ct; ++c) {
        float* b = &B[c * kTileHW];
        unpack_cb_tile(cb1, in1 + c, Src::A, b, who);
        if (transpose) transpose_32x32(b);
    }
    timing_matmul(cb0, cb1, rt, ct);
    // Each operand's fidelity parts depend only on the phase's bit (SrcA: bit 0, SrcB: bit 1), so both parts of
    // every datum are split once here rather than once per output datum; the split also finds the zero-row
    // shortcut's conditions (matmul_zero_row): in0's all-zero rows (their parts are zeros too) and whether in1 holds
    // an Inf or NaN (its parts are finite if it does not).
    const FpuKernels& k = fpu_kernels();
    std::unique_ptr<float[]> Ap(new float[2 * rt * kTileHW]), Bp(new float[2 * ct * kTileHW]);
    std::unique_ptr<uint32_t[]> zero_rows(new uint32_t[rt]), finite(new uint32_t[ct]);
    for (uint32_t r = 0; r < rt; ++r)
        zero_rows[r] = k.split_operand(&A[r * kTileHW], &Ap[r * kTileHW], &Ap[(rt + r) * kTileHW], false);
    for (uint32_t c = 0; c < ct; ++c)
        finite[c] = k.split_operand(&B[c * kTileHW], &Bp[c * kTileHW], &Bp[(ct + c) * kTileHW], true);
    const bool fp32 = dst_fp32();
    for (uint32_t r = 0; r < rt; ++r) {
        for (uint32_t c = 0; c < ct; ++c) {
            uint32_t t = idst + r * ct + c;
            const float* a[2] = {&Ap[r * kTileHW], &Ap[(rt + r) * kTileHW]};
            const float* b[2] = {&Bp[c * kTileHW], &Bp[(ct + c) * kTileHW]};
            k.matmul_tile(a, b, d.defined[t] ? d.tile[t] : nullptr, d.tile[t], phases, fp32, finite[c] ? zero_rows[r] : 0);
            d.defined[t] = true;
            count(Counter::MatmulTiles);
        }
    }
}

float reduce_scaler_value(const float* s, const char* who, uint32_t num_faces) {
    float v = s[0];
    // Faces the scaler CB's tile has (a half tile has faces 0 and 1 only).
    for (uint32_t face = 0; face < num_faces; ++face) {
        uint32_t r0 = (face / 2) * 16, c0 = (face % 2) * 16;
        for (uint32_t c = 0; c < 16; ++c) {
            float x = s[r0 * 32 + c0 + c];
            if (f32_bits(x) != f32_bits(v))
                fault("%s: reduce scaler tile is not uniform on the first row of each face (face %u col %u = %g, "
                      "face 0 col 0 = %g); the emulator models only the documented uniform scaler",
                      who, face, c, static_cast<double>(x), static_cast<double>(v));
        }
    }
    return v;
}

void fpu_reduce(uint32_t cb, uint32_t cb_scaler, uint32_t index, uint32_t index_scaler, uint32_t idst,
                ReduceOp op, ReduceAxis axis, const char* who) {
    DstSection& d = dst_for_math(idst, who);
    // REDUCE_ROW SUM/AVG runs as MVMUL with the scaler in SrcA and the data in SrcB; the other forms put the data
    // in SrcA and the scaler in SrcB.
    bool swapped = axis == ReduceAxis::Row && op != ReduceOp::Max;
    float x[kTileHW], sc[kTileHW];
    unpack_cb_tile(cb, index, swapped ? Src::B : Src::A, x, who);
    unpack_cb_tile(cb_scaler, index_scaler, swapped ? Src::A : Src::B, sc, who);
    if (timing_only()) {
        d.defined[idst] = true;
        count(Counter::FpuTiles);
        timing_fpu(op == ReduceOp::Max ? timing::Op::ReduceMax : timing::Op::ReduceSum, 1, 2, cb);
        return;
    }
    float s = reduce_scaler_value(sc, who, cb_tile_geom(cb_scaler, false).num_faces);
    float* out = d.tile[idst];
    float res[kTileHW];
    for (uint32_t i = 0; i < kTileHW; ++i) res[i] = 0.0f;
    auto at = [&](uint32_t r, uint32_t c) { return x[r * 32 + c]; };
    if (op == ReduceOp::Max) {
        float scale = 0.0f;
        if (s != 0.0f && std::isfinite(s)) scale = std::ldexp(1.0f, std::ilogb(s));
        auto scaled = [&](float v) {
            return s == 0.0f ? -std::numeric_limits<float>::infinity() : v * scale;
        };
        auto init = [&](uint32_t i) {
            return d.defined[idst] ? out[i] : -std::numeric_limits<float>::infinity();
        };
        if (axis == ReduceAxis::Row) {
            for (uint32_t r = 0; r < 32; ++r) {
                float m = init(r * 32);
                for (uint32_t c = 0; c < 32; ++c) m = std::max(m, scaled(at(r, c)));
                res[r * 32] = m;
            }
        } else if (axis == ReduceAxis::Col) {
            for (uint32_t c = 0; c < 32; ++c) {
                float m = init(c);
                for (uint32_t r = 0; r < 32; ++r) m = std::max(m, scaled(at(r, c)));
                res[c] = m;
            }
        } else {
            float m = init(0);
            for (uint32_t i = 0; i < kTileHW; ++i) m = std::max(m, scaled(x[i]));
            res[0] = m;
        }
    } else {
        uint32_t phases = fidelity_phases();
        // data is in the operand slot that gets the SrcA (or SrcB) fidelity split, scaler in the other
        auto prod = [&](float v, uint32_t p) {
            return swapped ? srcb_fidelity_part(v, p) * srca_fidelity_part(s, p)
                           : srca_fidelity_part(v, p) * srcb_fidelity_part(s, p);
        };
        auto reduce_line = [&](float acc, auto get) {
            for (uint32_t p = 0; p < phases; ++p)
                for (uint32_t half = 0; half < 2; ++half) {
                    float sum = 0.0f;
                    for (uint32_t k = half * 16; k < half * 16 + 16; ++k) sum += prod(get(k), p);
                    acc = dst_round(acc + sum);
                }
            return acc;
        };
        if (axis == ReduceAxis::Row) {
            for (uint32_t r = 0; r < 32; ++r)
                res[r * 32] = reduce_line(dst_acc_read(d, idst, r * 32), [&](uint32_t k) { return at(r, k); });
        } else if (axis == ReduceAxis::Col) {
            for (uint32_t c = 0; c < 32; ++c)
                res[c] = reduce_line(dst_acc_read(d, idst, c), [&](uint32_t k) { return at(k, c); });
        } else {
            // Column sums first (into row 0), then the sum of row 0; both stages multiply by the scaler, which is
            // why reduce.h asks for 1/sqrt(N) as the AVG scaler of REDUCE_SCALAR. Each stage rounds into DST.
            float colsum[32];
            for (uint32_t c = 0; c < 32; ++c) colsum[c] = reduce_line(0.0f, [&](uint32_t k) { return at(k, c); });
            res[0] = reduce_line(dst_acc_read(d, idst, 0), [&](uint32_t k) { return dst_to_src_register(colsum[k]); });
        }
    }
    dst_write_tile(d, idst, res);
    count(Counter::FpuTiles);
    timing_fpu(op == ReduceOp::Max ? timing::Op::ReduceMax : timing::Op::ReduceSum, 1, 2, cb);
}

void fpu_reduce_block_max_row(uint32_t icb, uint32_t icb_scaler, uint32_t row_start, uint32_t idst,
                              uint32_t block_ct, const char* who) {
    DstSection& d = dst_for_math(idst, who);
    float sc[kTileHW];
    unpack_cb_tile(icb_scaler, 0, Src::B, sc, who);
    if (timing_only()) {
        float x[kTileHW];
        for (uint32_t t = 0; t < block_ct; ++t) unpack_cb_tile(icb, row_start + t, Src::A, x, who);  // checks only
        d.defined[idst] = true;
        count(Counter::FpuTiles, block_ct);
        timing_fpu(timing::Op::ReduceMax, block_ct, block_ct + 1, icb);
        return;
    }
    float s = reduce_scaler_value(sc, who, cb_tile_geom(icb_scaler, false).num_faces);
    float scale = (s != 0.0f && std::isfinite(s)) ? std::ldexp(1.0f, std::ilogb(s)) : 0.0f;
    float m[32];
    for (uint32_t r = 0; r < 32; ++r)
        m[r] = d.defined[idst] ? d.tile[idst][(r / 16) * 16 * 32 + r % 16] : -std::numeric_limits<float>::infinity();
    float x[kTileHW];
    for (uint32_t t = 0; t < block_ct; ++t) {
        unpack_cb_tile(icb, row_start + t, Src::A, x, who);
        for (uint32_t r = 0; r < 32; ++r)
            for (uint32_t c = 0; c < 32; ++c) {
                float v = s == 0.0f ? -std::numeric_limits<float>::infinity() : x[r * 32 + c] * scale;
                m[r] = std::max(m[r], v);
            }
    }
    float res[kTileHW] = {};
    for (uint32_t r = 0; r < 32; ++r) res[r * 32] = m[r];
    dst_write_tile(d, idst, res);
    count(Counter::FpuTiles, block_ct);
    timing_fpu(timing::Op::ReduceMax, block_ct, block_ct + 1, icb);
}


// ---- packer (emu/compute_pack.h)

void packer_round(DataFormat f, float* v) {
    if (f == DataFormat::Float16_b || f == DataFormat::Bfp8_b || f == DataFormat::Bfp4_b)
        for (uint32_t i = 0; i < kTileHW; ++i) v[i] = round_bf16_ties_up(v[i]);
}


void pack_tile_packer(DataFormat f, const float* v, uint8_t* dst, const TileGeom& g) {
    if (f != DataFormat::Bfp8_b && f != DataFormat::Bfp4_b) return pack_tile(f, v, dst, g);
    uint32_t mbits = f == DataFormat::Bfp8_b ? 7 : 3, n = g.datums();
    uint8_t* mant = dst + (g.full() ? kBfpExpBytes : g.exp_bytes());
    for (uint32_t row = 0; row < n / 16; ++row) {
        uint32_t u[16], shared = 0;
        const float* in = v + tile_row_major_index(row * 16, g);  // a face row: 16 neighbours of a tile row
        for (uint32_t j = 0; j < 16; ++j) {
            u[j] = f32_bits(in[j]);
            uint32_t e = (u[j] >> 23) & 0xffu;
            if (e > shared) shared = e;
        }
        dst[row] = static_cast<uint8_t>(shared);
        for (uint32_t j = 0; j < 16; ++j) {
            uint32_t code = bfp_encode_ties_up(u[j], shared, mbits), i = row * 16 + j;
            if (mbits == 7) mant[i] = static_cast<uint8_t>(code);
            else if (i % 2 == 0) mant[i / 2] = static_cast<uint8_t>(code & 0xfu);
            else mant[i / 2] = static_cast<uint8_t>(mant[i / 2] | ((code & 0xfu) << 4));
        }
    }
    if (!g.full())  // zero the padding of the exponent section
        for (uint32_t row = n / 16; row < g.exp_bytes(); ++row) dst[row] = 0;
}

void pack_dst_tile(uint32_t idst, uint32_t cb, uint32_t out_index, bool out_of_order, const char* who) {
    DstSection& d = dst_for_pack(idst, who);
    if (timing_only()) return pack_values(nullptr, cb, out_index, out_of_order, who);  // no values are read
    float v[kTileHW];
    std::memcpy(v, d.tile[idst], sizeof v);  // pack_values rounds, masks and clamps its input in place
    pack_values(v, cb, out_index, out_of_order, who);
}

void pack_values(float* v, uint32_t cb, uint32_t out_index, bool out_of_order, const char* who) {
    ComputeState& s = cstate();
    if (cb >= kNumCbs) fault("%s: cb %u out of range", who, cb);
    DataFormat f = cb_data_format(cb);
    if (f != s.pack_fmt)
        fault("%s: packer is configured for %s (cb %u) but cb %u holds %s: missing pack_reconfig_data_format(%u)?",
              who, data_format_name(s.pack_fmt), s.pack_cb, cb, data_format_name(f), cb);
    uint32_t index = out_of_order ? out_index : s.pack_seq[cb];
    // The packer writes at the write pointer + index pages without looking at reservations. Besides reserved
    // pages, the emulator accepts one idiom upstream kernels rely on (sdpa's add_block_inplace): a CB that is
    // exactly full has its write pointer on its read pointer, so packing tile i overwrites front tile i, which this
    // core has waited on (the kernel pops and re-pushes the tiles afterwards).
    uint32_t page_bytes = cb_page_size(cb);
    uint32_t target = cb_write_addr(cb) + index * page_bytes, front = cb_read_addr(cb);
    bool overwrites_front = target >= front && (target - front) % page_bytes == 0 &&
                            cb_pages_available_at_front(cb, (target - front) / page_bytes + 1);
    if (!overwrites_front && !cb_pages_reservable_at_back(cb, index + 1)) {
        uint32_t pages = cb_total_size(cb) / cb_page_size(cb), free_pages = 0;
        while (free_pages < pages && cb_pages_reservable_at_back(cb, free_pages + 1)) ++free_pages;
        fault("%s: packs tile %u of cb %u but fewer than %u tiles are reserved (missing cb_reserve_back?): %u of its "
              "%u pages are free", who, index, cb, index + 1, free_pages, pages);
    }
    if (timing_only()) {  // where and how much is packed is checked and timed; the bytes are not converted
        TileGeom g = cb_tile_geom(cb, true);
        uint32_t bytes = tile_size_bytes(f, g);
        if (cb_page_size(cb) < bytes)
            fault("%s: cb %u page size %u is smaller than a %s tile (%u B)", who, cb, cb_page_size(cb),
                  data_format_name(f), bytes);
        if (!out_of_order) ++s.pack_seq[cb];
        count(Counter::TilesPacked);
        timing_pack(bytes);
        return;
    }
    if (s.reduce_mask != ReduceMask::None) {
        for (uint32_t r = 0; r < 32; ++r)
            for (uint32_t c = 0; c < 32; ++c) {
                bool keep = s.reduce_mask == ReduceMask::Row   ? c == 0
                            : s.reduce_mask == ReduceMask::Col ? r == 0
                                                               : (r == 0 && c == 0);
                if (!keep) v[r * 32 + c] = 0.0f;
            }
    }
    // ReLU in the packer (Packers/ReLU.md): ZERO_RELU clamps negatives to 0; the threshold modes compare against
    // the configured threshold. The mode is chosen once per tile (the loops vectorise: a decode packs its
    // probabilities through ZERO_RELU).
    const float threshold = s.pack_relu_threshold;
    switch (s.pack_relu_mode) {
        case 1:
            for (uint32_t i = 0; i < kTileHW; ++i) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
            break;
        case 2:
            for (uint32_t i = 0; i < kTileHW; ++i) v[i] = v[i] > threshold ? v[i] : 0.0f;
            break;
        case 3:
            for (uint32_t i = 0; i < kTileHW; ++i) v[i] = v[i] > threshold ? threshold : (v[i] > 0.0f ? v[i] : 0.0f);
            break;
        default: break;  // 0: off
    }
    TileGeom g = cb_tile_geom(cb, true);
    uint32_t page = cb_page_size(cb);
    uint32_t bytes = tile_size_bytes(f, g);
    if (page < bytes) fault("%s: cb %u page size %u is smaller than a %s tile (%u B)", who, cb, page, data_format_name(f), bytes);
    uint8_t* dst = l1(cb_write_addr(cb) + index * page, bytes);
    if (s.pack_l1_acc) {
        // L1 accumulation: the packer adds the tile already in L1 (decoded from the CB's format) to the DST data in
        // fp32, then packs the sum in the CB's format.
        float prev[kTileHW];
        unpack_tile(f, dst, prev, g);
        for (uint32_t i = 0; i < kTileHW; ++i) v[i] += prev[i];
    }
    packer_round(f, v);
    pack_tile_packer(f, v, dst, g);
    if (!out_of_order) ++s.pack_seq[cb];
    count(Counter::TilesPacked);
    timing_pack(bytes);
}


// ---- tilize / untilize (emu/compute_tilize.h)

uint32_t row_major_datum_bytes(DataFormat f, const char* who) {
    if (f == DataFormat::Float16_b) return 2;
    if (f == DataFormat::Float32) return 4;
    fault("%s: row-major data in %s is not modelled (Float16_b or Float32)", who, data_format_name(f));
}

void tilize_block(uint32_t icb, uint32_t block, uint32_t ocb, uint32_t in_index, uint32_t out_index,
                  const char* who) {
    check_unpack_format(icb, Src::A, who);
    DataFormat f = cb_data_format(icb);
    uint32_t es = row_major_datum_bytes(f, who);
    TileGeom g = cb_tile_geom(ocb, true);
    uint32_t rows = tile_rows(g), cols = g.num_faces > 1 ? 32u : 16u;
    uint32_t page = cb_page_size(icb);
    uint32_t width = block * cols;
    if (!cb_pages_available_at_front(icb, in_index + block))
        fault("%s: tilizes %u pages from page %u of cb %u but fewer are at its front (missing cb_wait_front?)", who,
              block, in_index, icb);
    const uint8_t* base = l1(cb_read_addr(icb) + in_index * page, rows * width * es);
    // Timing: the unpacker reads each tile's rows out of the row-major block (kTilizeUnpackFactor times a plain
    // unpack), the math copies it to DST; the pack is recorded by pack_values.
    if (auto* tr = timing_risc())
        tr->compute(timing::Op::Copy, block, block, rows * cols * es, compute_config().math_fidelity, false, 1.0, true);
    for (uint32_t t = 0; t < block; ++t) {
        float v[kTileHW] = {};
        for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < cols; ++c)
                v[r * 32 + c] = dst_round(to_src_register(f, read_datum(f, base + (r * width + t * cols + c) * es)));
        pack_values(v, ocb, out_index + t, true, who);
    }
    count(Counter::TilesUnpacked, block);
}

void untilize_write(const float* tiles, uint32_t ntiles, uint32_t ocb, uint32_t row, uint32_t col_tile,
                    uint32_t full_ct, const TileGeom& g, const char* who) {
    ComputeState& s = cstate();
    DataFormat f = cb_data_format(ocb);
    if (f != s.pack_fmt)
        fault("%s: packer is configured for %s (cb %u) but cb %u holds %s: missing pack_reconfig_data_format(%u)?",
              who, data_format_name(s.pack_fmt), s.pack_cb, ocb, data_format_name(f), ocb);
    uint32_t es = row_major_datum_bytes(f, who);
    uint32_t rows = tile_rows(g), cols = g.num_faces > 1 ? 32u : 16u;
    uint32_t page = cb_page_size(ocb);
    if (!cb_pages_reservable_at_back(ocb, (row + 1) * full_ct))
        fault("%s: writes untilized tile-row %u (%u pages each) of cb %u but fewer pages are reserved", who, row,
              full_ct, ocb);
    uint32_t width = full_ct * cols;
    uint8_t* base = l1(cb_write_addr(ocb) + row * full_ct * page, rows * width * es);
    // Timing: the packer writes each tile's rows into the row-major block (kTilizeUnpackFactor times a plain pack).
    if (auto* tr = timing_risc()) tr->pack(ntiles, rows * cols * es, true);
    for (uint32_t t = 0; t < ntiles; ++t)
        for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < cols; ++c)
                write_datum(f, base + (r * width + (col_tile + t) * cols + c) * es, tiles[t * kTileHW + r * 32 + c]);
    count(Counter::TilesPacked, ntiles);
}

void pack_untilize_block(uint32_t icb, uint32_t block_rt, uint32_t ocb, uint32_t block_ct, uint32_t full_ct,
                         uint32_t block_c_index, const char* who) {
    ComputeState& s = cstate();
    TileGeom g = cb_tile_geom(icb, false);
    std::unique_ptr<float[]> tiles(new float[block_ct * kTileHW]);
    uint32_t blocks_per_row = full_ct / block_ct;
    for (uint32_t r = 0; r < block_rt; ++r) {
        // Timing: each tile comes through the unpacker and math (a copy into DST) before the untilizing pack.
        if (auto* tr = timing_risc())
            tr->compute(timing::Op::Copy, block_ct, block_ct, timing_tile_bytes(icb, false),
                        compute_config().math_fidelity);
        for (uint32_t c = 0; c < block_ct; ++c) {
            float* t = &tiles[c * kTileHW];
            unpack_cb_tile(icb, r * block_ct + c, Src::A, t, who);
            for (uint32_t i = 0; i < kTileHW; ++i) t[i] = dst_round(t[i]);
        }
        uint32_t row = s.pack_seq[ocb];
        untilize_write(tiles.get(), block_ct, ocb, row, block_c_index * block_ct, full_ct, g, who);
        if (block_c_index + 1 >= blocks_per_row) ++s.pack_seq[ocb];  // the tile-row is complete
    }
}

}  // namespace emu
