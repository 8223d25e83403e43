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
//
// Bodies: csrc/compute.cpp (see compute_state.h).
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

void check_unpack_format(uint32_t cb, Src s, const char* who);

// Read tile `index` of the front of `cb` into `out` (row-major) as it lands in source register `s`.
void unpack_cb_tile(uint32_t cb, uint32_t index, Src s, float* out, const char* who);

// Moving DST contents into a source register (dest-reuse ops): same 19-bit limit.
inline float dst_to_src_register(float v) { return flush_denormal(dst_fp32() ? truncate_mantissa(v, 10) : v); }

// ---- math fidelity
uint32_t fidelity_phases();
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
