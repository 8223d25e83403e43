// Unpacker and source-register (SrcA / SrcB) model of the emulated compute engine.
//
//   * A tile is read from a CB at (read pointer + index * page size) and decoded with emu::unpack_tile using the
//     CB's data format. Reading tile i requires cb_wait_front(cb, n > i) first, else emu::fault.
//   * The unpacker decodes with the format it was configured for (compute_kernel_hw_startup, reconfig_data_format*,
//     with SrcOrder). If that differs from the CB's format silicon would misread the bytes; the emulator faults and
//     names the missing reconfig call.
//   * SrcA/SrcB hold 19-bit values (tt-isa-documentation WormholeB0 SrcASrcB.md). bf16 and bfp formats unpack
//     exactly; a Float32 CB unpacks to TF32 (10 mantissa bits) when fp32_dest_acc_en, else to BF16 (7 bits). The
//     ISA documentation describes the fp32->TF32 conversion as throwing away the low mantissa bits, so the model
//     truncates (toward zero). Denormals are flushed to zero (FPU behaviour).
//   * Math fidelity (ELWMUL / MVMUL functional model, ELWMUL.md): the multipliers take at most 5 bits of SrcA
//     (implicit one + 4) and 7 bits of SrcB (implicit one + 6) per phase. Phase p uses
//       SrcA part = (p & 1) ? mantissa bits 18..14 (next 5) : sign/exponent/implicit one + bits 22..19,
//       SrcB part = (p & 2) ? mantissa bits 16..13 (next 4) : sign/exponent/implicit one + bits 22..17,
//     LoFi runs phase 0, HiFi2 phases 0-1, HiFi3 phases 0-2, HiFi4 phases 0-3; each phase's products are added
//     into DST (rounded to the DST format) in turn. The least significant TF32 bit of SrcA is never used.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "emu/compute_state.h"
#include "emu/formats.h"
#include "emu/runtime.h"

namespace emu {

enum class Src : uint8_t { A, B };

inline float flush_denormal(float v) {
    uint32_t u = f32_bits(v);
    if ((u & 0x7f800000u) == 0) return bits_f32(u & 0x80000000u);
    return v;
}
inline float truncate_mantissa(float v, uint32_t keep_bits) {
    uint32_t u = f32_bits(v);
    if ((u & 0x7f800000u) == 0x7f800000u) return v;  // inf / nan
    uint32_t mask = ~((1u << (23 - keep_bits)) - 1u);
    return bits_f32(u & mask);
}

// Value a datum of a tile of format f takes in a source register.
inline float to_src_register(DataFormat f, float v) {
    if (f == DataFormat::Float32) v = truncate_mantissa(v, dst_fp32() ? 10 : 7);
    return flush_denormal(v);
}

inline const char* src_name(Src s) { return s == Src::A ? "SrcA" : "SrcB"; }

inline void check_unpack_format(uint32_t cb, Src s, const char* who) {
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

// Read tile `index` of the front of `cb` into `out` (row-major) as it lands in source register `s`.
inline void unpack_cb_tile(uint32_t cb, uint32_t index, Src s, float* out, const char* who) {
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
    for (uint32_t i = 0; i < kTileHW; ++i) out[i] = to_src_register(f, out[i]);
    count(Counter::TilesUnpacked);
}

// Moving DST contents into a source register (dest-reuse ops): same 19-bit limit.
inline float dst_to_src_register(float v) { return flush_denormal(dst_fp32() ? truncate_mantissa(v, 10) : v); }

// ---- math fidelity
inline uint32_t fidelity_phases() {
    switch (compute_config().math_fidelity) {
        case 0: return 1;  // LoFi
        case 2: return 2;  // HiFi2
        case 3: return 3;  // HiFi3
        case 4: return 4;  // HiFi4
        default: fault("unsupported math_fidelity %u (expected 0 LoFi, 2 HiFi2, 3 HiFi3, 4 HiFi4)",
                       compute_config().math_fidelity);
    }
}
inline float srca_fidelity_part(float x, uint32_t phase) {
    uint32_t u = f32_bits(x);
    if ((phase & 1) == 0) return bits_f32(u & 0xfff80000u);
    return x - bits_f32(u & 0xfff83fffu);
}
inline float srcb_fidelity_part(float x, uint32_t phase) {
    uint32_t u = f32_bits(x);
    if ((phase & 2) == 0) return bits_f32(u & 0xfffe0000u);
    return x - bits_f32(u & 0xfffe1fffu);
}

}  // namespace emu
