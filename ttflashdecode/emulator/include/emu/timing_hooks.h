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
struct SfpuKind {
    timing::Op op = timing::Op::SfpuSimple;
    bool approx = false;
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
    size_t p;
    if ((p = name.find("recip")) != std::string::npos) {
        k.op = timing::Op::SfpuRecip;
        k.approx = first_template_arg_true(p);
    } else if ((p = name.find("exp")) != std::string::npos) {
        k.op = timing::Op::SfpuExp;
        k.approx = first_template_arg_true(p);
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

// Faces an SFPU call covers by ckernel::VectorMode (None 0: one face, R 1: faces 0-1, C 2: faces 0 and 2, RC 4: all).
inline uint32_t timing_vector_mode_faces(int vector_mode) {
    return vector_mode == 4 ? 4 : vector_mode == 1 || vector_mode == 2 ? 2 : 1;
}

// One SFPU call over `faces` of a tile's four faces (VectorMode RC: 4, R / C: 2).
template <class F>
inline void timing_sfpu(const F& f, uint32_t faces, bool binary) {
    if (auto* tr = timing_risc()) {
        SfpuKind k = timing_sfpu_kind(f, binary);
        tr->compute(k.op, 1, 0, 0, compute_config().math_fidelity, k.approx, faces / 4.0);
    }
}

}  // namespace emu
