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
inline void packer_round(DataFormat f, float* v) {
    if (f == DataFormat::Float16_b || f == DataFormat::Bfp8_b || f == DataFormat::Bfp4_b)
        for (uint32_t i = 0; i < kTileHW; ++i) v[i] = round_bf16_ties_up(v[i]);
}
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
inline void pack_tile_packer(DataFormat f, const float* v, uint8_t* dst, const TileGeom& g) {
    if (f != DataFormat::Bfp8_b && f != DataFormat::Bfp4_b) return pack_tile(f, v, dst, g);
    uint32_t mbits = f == DataFormat::Bfp8_b ? 7 : 3, n = g.datums();
    uint8_t* mant = dst + (g.full() ? kBfpExpBytes : g.exp_bytes());
    for (uint32_t row = 0; row < n / 16; ++row) {
        uint32_t u[16], shared = 0;
        for (uint32_t j = 0; j < 16; ++j) {
            u[j] = f32_bits(v[g.full() ? tile_row_major_index(row * 16 + j) : tile_row_major_index(row * 16 + j, g)]);
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

inline void pack_values(float* v, uint32_t cb, uint32_t out_index, bool out_of_order, const char* who);

inline void pack_dst_tile(uint32_t idst, uint32_t cb, uint32_t out_index, bool out_of_order, const char* who) {
    DstSection& d = dst_for_pack(idst, who);
    float v[kTileHW];
    const float* src = d.tile[idst];
    for (uint32_t i = 0; i < kTileHW; ++i) v[i] = src[i];
    pack_values(v, cb, out_index, out_of_order, who);
}

// Packs one tile of values (row-major 32x32, as they leave DST) into `cb`.
inline void pack_values(float* v, uint32_t cb, uint32_t out_index, bool out_of_order, const char* who) {
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
    // the configured threshold.
    if (s.pack_relu_mode != 0) {
        for (uint32_t i = 0; i < kTileHW; ++i) {
            float x = v[i];
            if (s.pack_relu_mode == 1) v[i] = x > 0.0f ? x : 0.0f;
            else if (s.pack_relu_mode == 2) v[i] = x > s.pack_relu_threshold ? x : 0.0f;
            else if (s.pack_relu_mode == 3) v[i] = x > s.pack_relu_threshold ? s.pack_relu_threshold : (x > 0.0f ? x : 0.0f);
        }
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

}  // namespace emu
