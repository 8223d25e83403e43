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
//
// Bodies: csrc/compute.cpp (see compute_state.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "emu/compute_pack.h"
#include "emu/compute_state.h"
#include "emu/compute_unpack.h"
#include "emu/formats.h"
#include "emu/runtime.h"

namespace emu {

uint32_t row_major_datum_bytes(DataFormat f, const char* who);
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

void tilize_block(uint32_t icb, uint32_t block, uint32_t ocb, uint32_t in_index, uint32_t out_index,
                  const char* who);

// Writes tiles (row-major 32x32 values as they leave DST) untilized: tile-row `row` of `ocb`, columns from
// `col_tile` (in tiles) of a row of `full_ct` tiles.
void untilize_write(const float* tiles, uint32_t ntiles, uint32_t ocb, uint32_t row, uint32_t col_tile,
                    uint32_t full_ct, const TileGeom& g, const char* who);

void pack_untilize_block(uint32_t icb, uint32_t block_rt, uint32_t ocb, uint32_t block_ct, uint32_t full_ct,
                         uint32_t block_c_index, const char* who);

}  // namespace emu
