// The compute side's hooks into the timing model (docs/TIMING.md, section 5): each emulated compute call records one
// event on the calling thread's timing::Risc trace (nothing when timing is off). The compute headers call these as
// one-liners next to their counters, where op, formats and tile shapes are known; fidelity comes from the kernel's
// ComputeConfig.
#pragma once

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>

#include "emu/compute_state.h"
#include "emu/runtime.h"
#include "emu/timing.h"

namespace emu {

// Bytes the unpacker reads for one tile of `cb` (its format and tile shape: half / tiny tiles are smaller).
inline uint32_t timing_tile_bytes(uint32_t cb, bool pack_side) {
    return tile_size_bytes(cb_data_format(cb), cb_tile_geom(cb, pack_side));
}

// FPU ops: `math_tiles` tiles of `op`, reading `unpack_tiles` tiles of cb's size first.
inline void timing_fpu(timing::Op op, uint32_t math_tiles, uint32_t unpack_tiles, uint32_t cb, double fraction = 1.0) {
    if (auto* tr = timing_risc())
        tr->compute(op, math_tiles, unpack_tiles, timing_tile_bytes(cb, false), compute_config().math_fidelity, false,
                    fraction);
}

// matmul_tiles / matmul_block: rt x ct products, rt + ct unpacks; in0 tiles of 16 rows (half tiles, upstream's Q)
// cost half the math: the engine takes 8 rows of in0 a cycle ([me]).
inline void timing_matmul(uint32_t cb0, uint32_t cb1, uint32_t rt, uint32_t ct) {
    if (auto* tr = timing_risc()) {
        TileGeom g = cb_tile_geom(cb0, false);
        double rows = double(g.num_faces > 2 ? 2 : 1) * g.face_r;  // in0 rows: faces 0/1 hold rows 0-15
        uint32_t bytes = (timing_tile_bytes(cb0, false) * rt + timing_tile_bytes(cb1, false) * ct) / (rt + ct);
        tr->compute(timing::Op::Matmul, rt * ct, rt + ct, bytes, compute_config().math_fidelity, false, rows / 32.0);
    }
}

inline void timing_pack(uint32_t tile_bytes) {
    if (auto* tr = timing_risc()) tr->pack(1, tile_bytes);
}

// ---- SFPU: which function a kernel runs, from its symbol (function pointers: dladdr; lambdas and functors: the
// type's name), so upstream's own SFPU functions are costed too. exp / reciprocal are costed by their measured
// per-tile cycles, the approximation mode being the function template's first argument (tt-llk's convention:
// calculate_exponential<APPROXIMATION_MODE, ...>); binary ops and everything else by the table's generic rows.
// iterations: the function's ITERATIONS template argument, the 32-lane row steps one call runs (8 cover a 16x16
// face). exp_tile<..., iterations>() passes it on (wheel: hw/inc/api/compute/eltwise_unary/exp.h, SFPU_UNARY_CALL
// -> calculate_exponential<APPROXIMATION_MODE, is_fp32_dest_acc_en, SCALE_EN, ITERATIONS, CLAMP_NEGATIVE>,
// llk_sfpu/ckernel_sfpu_exp.h; calculate_reciprocal<APPROXIMATION_MODE, is_fp32_dest_acc_en, ITERATIONS>,
// ckernel_sfpu_recip.h). Other functions: 8, the tt-llk default.
struct SfpuKind {
    timing::Op op = timing::Op::SfpuSimple;
    bool approx = false;
    uint32_t iterations = 8;
};

inline std::string timing_demangle(const char* mangled) {
    if (!mangled) return "";
    int status = 0;
    char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string out = status == 0 && d ? d : mangled;
    std::free(d);
    return out;
}

inline SfpuKind timing_classify_sfpu(const std::string& name, bool binary) {
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

template <class F>
inline SfpuKind timing_sfpu_kind(const F& f, bool binary) {
    using D = std::decay_t<F>;
    if constexpr (std::is_pointer_v<D> && std::is_function_v<std::remove_pointer_t<D>>) {
        static std::unordered_map<const void*, SfpuKind> memo;  // one compute thread per kernel library copy
        const void* key = reinterpret_cast<const void*>(f);
        auto it = memo.find(key);
        if (it != memo.end()) return it->second;
        Dl_info info{};
        std::string name = dladdr(key, &info) && info.dli_sname ? timing_demangle(info.dli_sname) : "";
        return memo[key] = timing_classify_sfpu(name, binary);
    } else {
        static const SfpuKind kind = timing_classify_sfpu(timing_demangle(typeid(D).name()), binary);
        return kind;
    }
}

// Calls of the SFPU function per tile by ckernel::VectorMode, as tt-llk's _llk_math_eltwise_sfpu_apply_vector_mode_
// makes them (tt_llk_wormhole_b0/llk_lib/llk_math_eltwise_sfpu_common.h): RC 4 (one a face), R 2 (faces 0-1),
// C 2 (faces 0 and 2), anything else (None) 1, the function then covering as many rows as its ITERATIONS say
// (upstream sdpa's exp_tile<..., 32>(j, VectorMode::None) is a whole 32x32 tile in one call).
inline uint32_t timing_vector_mode_calls(int vector_mode) {
    return vector_mode == 4 ? 4 : vector_mode == 1 || vector_mode == 2 ? 2 : 1;
}

// One SFPU op on a DST tile: charged calls x ITERATIONS / 8 faces of the tile's four (8 row steps a face).
template <class F>
inline void timing_sfpu(const F& f, int vector_mode, bool binary) {
    if (auto* tr = timing_risc()) {
        SfpuKind k = timing_sfpu_kind(f, binary);
        double faces = timing_vector_mode_calls(vector_mode) * (k.iterations / 8.0);
        tr->compute(k.op, 1, 0, 0, compute_config().math_fidelity, k.approx, faces / 4.0);
    }
}

}  // namespace emu
