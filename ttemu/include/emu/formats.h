// Tile data formats: byte size of a 32x32 tile and conversion between a tile's bytes (as they sit in DRAM / L1 on
// a Wormhole) and 1024 row-major floats, shared by the runtime, the host library and the compute API headers. The
// conversions are defined once in csrc/formats.cpp (built into the runtime executable, libttfd_host.so and the C++
// test libraries), so no kernel compiles them again; the small per-datum helpers stay inline here.
//
// Tile byte layout (tt-metal / ttnn TILE layout): four 16x16 faces in the order
//   face 0 = rows 0-15, cols 0-15;  face 1 = rows 0-15, cols 16-31;  face 2 = rows 16-31, cols 0-15;  face 3 = rows
//   16-31, cols 16-31; values row-major inside a face.
// Block-float formats (Bfp8_b, Bfp4_b) put the 64 shared exponents first (one byte per 16-value face row, faces in
// order, rows in order: byte i belongs to face i/16, face row i%16), then the mantissa bytes in the same value order:
//   Bfp8_b: one byte per value: bit 7 = sign, bits 6..0 = magnitude with the leading (formerly hidden) one explicit.
//   Bfp4_b: one nibble per value, the EARLIER value in the LOW nibble: bit 3 = sign, bits 2..0 = magnitude.
// A value decodes as (-1)^sign * magnitude * 2^(shared_exp - 127 - (mantissa_bits - 1)).
// Encoding follows ttnn's host conversion (tt-metal blockfloat_common): the shared exponent is the largest biased
// fp32 exponent field of the 16 values; each value's 24-bit significand (hidden one made explicit) is shifted right
// by (shared_exp - own_exp) and rounded to the format's width with round-to-nearest, ties-to-even on the discarded
// bits, saturating at the largest magnitude; an exact zero (either sign) and any value that rounds to magnitude zero
// encode as +0.
// Float16_b (bfloat16) rounds fp32 to nearest even like torch's .to(torch.bfloat16) (NaN stays NaN).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "emu/runtime.h"

namespace emu {

constexpr uint32_t kTileHW = 1024;    // values per 32x32 tile
constexpr uint32_t kFaceHW = 256;     // values per 16x16 face
constexpr uint32_t kBfpExpBytes = 64; // shared exponents of a bfp tile

inline uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float bits_f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// fp32 -> bfloat16 bits, round to nearest even; NaN kept quiet NaN.
inline uint16_t f32_to_bf16_bits(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }
inline float round_to_bf16(float f) { return bf16_bits_to_f32(f32_to_bf16_bits(f)); }

uint32_t tile_size_bytes(DataFormat f);
const char* data_format_name(DataFormat f);

// Position in the tile's value stream (face order) of row-major element (r, c).
inline uint32_t tile_stream_index(uint32_t r, uint32_t c) {
    uint32_t face = (r / 16) * 2 + (c / 16);
    return face * kFaceHW + (r % 16) * 16 + (c % 16);
}
// Row-major index of the element at stream position i.
inline uint32_t tile_row_major_index(uint32_t i) {
    uint32_t face = i / kFaceHW, in_face = i % kFaceHW;
    uint32_t r = (face / 2) * 16 + in_face / 16, c = (face % 2) * 16 + in_face % 16;
    return r * 32 + c;
}

// dst: 1024 floats, row-major 32x32.
void unpack_tile(DataFormat f, const uint8_t* src, float* dst);
// src: 1024 floats, row-major 32x32.
void pack_tile(DataFormat f, const float* src, uint8_t* dst);

// ---- tiles of other shapes (tt-metal Tile: half tiles 16x32, tiny tiles 1..8 x 32, 16x16): `num_faces` faces of
// `face_r` rows x 16 columns in face order, faces 0 / 1 side by side (row 0 of the tile), faces 2 / 3 below; a
// block-float tile keeps one shared exponent per face row, the exponent section padded to 16 bytes
// (Tile::get_tile_size). In the emulator's 32x32 row-major form the tile occupies rows
// 0 .. face_r * (num_faces > 2 ? 2 : 1) - 1 and columns 0 .. (num_faces > 1 ? 31 : 15); everything else is 0.
struct TileGeom {
    uint32_t num_faces = 4;
    uint32_t face_r = 16;
    bool full() const { return num_faces == 4 && face_r == 16; }
    uint32_t datums() const { return num_faces * face_r * 16; }
    uint32_t exp_bytes() const { return (num_faces * face_r + 15) / 16 * 16; }
};

uint32_t tile_size_bytes(DataFormat f, const TileGeom& g);

// Row-major index in the 32x32 form of stream position i of a tile of geometry g.
inline uint32_t tile_row_major_index(uint32_t i, const TileGeom& g) {
    uint32_t per_face = g.face_r * 16;
    uint32_t face = i / per_face, in_face = i % per_face;
    uint32_t r = (face / 2) * g.face_r + in_face / 16, c = (face % 2) * 16 + in_face % 16;
    return r * 32 + c;
}

void unpack_tile(DataFormat f, const uint8_t* src, float* dst, const TileGeom& g);
void pack_tile(DataFormat f, const float* src, uint8_t* dst, const TileGeom& g);

}  // namespace emu
