// The compute side's hooks into the timing model (docs/TIMING.md, section 5): each emulated compute call records one
// event on the calling thread's timing::Risc trace (nothing when timing is off). The compute headers call these as
// one-liners next to their counters, where op, formats and tile shapes are known; fidelity comes from the kernel's
// ComputeConfig.
//
// The SFPU classification (symbol demangling, its per-thread memo) and timing_matmul are defined in csrc/compute.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <typeinfo>

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
void timing_matmul(uint32_t cb0, uint32_t cb1, uint32_t rt, uint32_t ct);

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

std::string timing_demangle(const char* mangled);

SfpuKind timing_classify_sfpu(const std::string& name, bool binary);

// The kind of SFPU function `fn` (a function pointer of type `type`), classified from its symbol (dladdr) the first
// time this thread sees that (type, function) pair and remembered per thread (defined in csrc/compute.cpp).
SfpuKind timing_sfpu_function_kind(const std::type_info& type, const void* fn, bool binary);

template <class F>
inline SfpuKind timing_sfpu_kind(const F& f, bool binary) {
    using D = std::decay_t<F>;
    if constexpr (std::is_pointer_v<D> && std::is_function_v<std::remove_pointer_t<D>>) {
        return timing_sfpu_function_kind(typeid(D), reinterpret_cast<const void*>(f), binary);
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
