// Packer model of the emulated compute engine: DST tile -> CB tile in the CB's data format.
//
//   * Sequential mode (pack_tile<false>): the i-th pack since the last cb_push_back on that CB writes reserved tile
//     i, ignoring output_tile_index. Out-of-order mode (pack_tile<true>) writes reserved tile output_tile_index.
//     Either must stay inside what cb_reserve_back reserved.
//   * The packer converts with the format it was configured for (compute_kernel_hw_startup's ocb,
//     pack_reconfig_data_format); a CB of another format faults (silicon would write mis-formatted bytes).
//   * After reduce_init the packer's edge mask zeroes every datum that is not part of the reduce result (reduce.h
//     contract) until reduce_uninit (or pack_init / compute_kernel_hw_startup reprogram the packer).
//   * Conversion: emu::pack_tile (bf16 round to nearest even, bfp shared exponent per face row, as ttnn's host).
//
// Bodies: csrc/compute.cpp (see compute_state.h).
#pragma once

#include <cstdint>

#include "emu/compute_state.h"
#include "emu/formats.h"
#include "emu/runtime.h"
#include "emu/timing_hooks.h"

namespace emu {

// ---- the packer's rounding (published):
//   * Wormhole's packer does not round to nearest even: ties round up in magnitude (tt-metal#15889, HW team:
//     "WH and BH both DO NOT support rounding to even, only rounding up in case of ties").
//   * A block-float output is rounded twice: the gasket first rounds each datum to the 7-bit mantissa of the pack
//     source format, then the mantissas are rounded again when shifted to the row's shared exponent (tt-metal#14822;
//     #52155 measures the effect: add / multiply / matmul to bfloat8_b round twice, typecast once). The emulator
//     models the default path (bfp8_pack_precise off).
// Host conversions (ttnn.from_torch / to_torch) keep their own rounding (formats.h pack_tile).
inline float round_bf16_ties_up(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf / nan kept
    return bits_f32((u + 0x8000u) & 0xffff0000u);
}
void packer_round(DataFormat f, float* v);
// Block-float packing of already bf16-rounded datums: each 24-bit significand shifted to the shared exponent and
// rounded to the format's width with ties up (in magnitude), saturating.
inline uint32_t bfp_encode_ties_up(uint32_t u, uint32_t shared_exp, uint32_t mbits) {
    if ((u & 0x7fffffffu) == 0) return 0;
    uint32_t exp = (u >> 23) & 0xffu, sign = u >> 31;
    uint64_t sig = (1u << 23) | (u & 0x7fffffu);
    uint32_t diff = shared_exp - exp;
    sig = diff >= 40 ? 0 : (sig >> diff);  // bits below the 24-bit window are zero after the gasket's rounding
    uint32_t shift = 24 - mbits;
    uint64_t mag = (sig + (1ull << (shift - 1))) >> shift;
    uint64_t max_mag = (1ull << mbits) - 1;
    if (mag > max_mag) mag = max_mag;
    if (mag == 0) return 0;
    return (sign << mbits) | static_cast<uint32_t>(mag);
}
void pack_tile_packer(DataFormat f, const float* v, uint8_t* dst, const TileGeom& g);

void pack_dst_tile(uint32_t idst, uint32_t cb, uint32_t out_index, bool out_of_order, const char* who);

// Packs one tile of values (row-major 32x32, as they leave DST) into `cb`; `v` is rounded in place (a timing-only
// run reads no values: nullptr there).
void pack_values(float* v, uint32_t cb, uint32_t out_index, bool out_of_order, const char* who);

}  // namespace emu
