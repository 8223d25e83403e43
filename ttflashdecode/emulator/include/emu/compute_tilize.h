// Tilize and untilize on the emulated compute engine (api/compute/tilize.h, pack_untilize.h, untilize.h).
//
//   * tilize_block(icb, block, ocb, in, out): the front of icb (from page `in`) holds a row-major block of
//     tile-height rows x block*32 columns (the reader's sticks, `block` pages of tile size); it goes through the
//     unpacker's tilize mode, a datacopy into DST and the packer into ocb tiles out .. out+block-1 (out of order, as
//     the LLK packs them).
//   * pack_untilize: block_ct tiles of a row (front of icb) are copied into DST and the packer writes them row-major
//     into ocb: tile-row R of the output (the R-th since the last cb_push_back) is tile-height rows of full_ct*32
//     datums, this block's columns at block_c_index*block_ct*32.
//   * untilize_block (unpacker untilize): full_ct tiles -> full_ct pages of row-major data, same layout.
// Row-major data is Float16_b (2 B / datum) or Float32; the tile height is the CB's tile shape (32, or a half /
// tiny tile's). Numerics: source-register conversion and DST rounding as copy_tile, then the packer.
#pragma once

#include <cstdint>
#include <cstring>

#include "emu/compute_pack.h"
#include "emu/compute_state.h"
#include "emu/compute_unpack.h"
#include "emu/formats.h"
#include "emu/runtime.h"

namespace emu {

inline uint32_t row_major_datum_bytes(DataFormat f, const char* who) {
    if (f == DataFormat::Float16_b) return 2;
    if (f == DataFormat::Float32) return 4;
    fault("%s: row-major data in %s is not modelled (Float16_b or Float32)", who, data_format_name(f));
}
inline float read_datum(DataFormat f, const uint8_t* p) {
    if (f == DataFormat::Float32) {
        float v;
        std::memcpy(&v, p, 4);
        return v;
    }
    uint16_t b;
    std::memcpy(&b, p, 2);
    return bf16_bits_to_f32(b);
}
inline void write_datum(DataFormat f, uint8_t* p, float v) {
    if (f == DataFormat::Float32) {
        std::memcpy(p, &v, 4);
        return;
    }
    uint16_t b = static_cast<uint16_t>(f32_bits(round_bf16_ties_up(v)) >> 16);  // the packer's rounding
    std::memcpy(p, &b, 2);
}
inline uint32_t tile_rows(const TileGeom& g) { return g.face_r * (g.num_faces > 2 ? 2 : 1); }

inline void tilize_block(uint32_t icb, uint32_t block, uint32_t ocb, uint32_t in_index, uint32_t out_index,
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

// Writes tiles (row-major 32x32 values as they leave DST) untilized: tile-row `row` of `ocb`, columns from
// `col_tile` (in tiles) of a row of `full_ct` tiles.
inline void untilize_write(const float* tiles, uint32_t ntiles, uint32_t ocb, uint32_t row, uint32_t col_tile,
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

inline void pack_untilize_block(uint32_t icb, uint32_t block_rt, uint32_t ocb, uint32_t block_ct, uint32_t full_ct,
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
