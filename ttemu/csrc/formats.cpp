// Tile data formats (emu/formats.h): the conversions between a tile's bytes and 1024 row-major floats, defined once
// here rather than in the header so that no kernel compiles them again. Built into the runtime executable (kernels
// resolve these symbols there when they are dlopen'ed), into libttfd_host.so (the Python driver's conversions) and
// into the C++ unit tests' libraries (ttemu/tests/cxx.py); every one of them runs this same code.
#include "emu/formats.h"

#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace emu {

uint32_t tile_size_bytes(DataFormat f) {
    switch (f) {
        case DataFormat::Float32:
        case DataFormat::Int32:
        case DataFormat::UInt32: return 4 * kTileHW;
        case DataFormat::Float16:
        case DataFormat::Float16_b:
        case DataFormat::UInt16: return 2 * kTileHW;
        case DataFormat::Bfp8:
        case DataFormat::Bfp8_b: return kBfpExpBytes + kTileHW;
        case DataFormat::Bfp4:
        case DataFormat::Bfp4_b: return kBfpExpBytes + kTileHW / 2;
        case DataFormat::Bfp2:
        case DataFormat::Bfp2_b: return kBfpExpBytes + kTileHW / 4;
        case DataFormat::Int8:
        case DataFormat::UInt8:
        case DataFormat::Lf8:
        case DataFormat::Fp8_e4m3: return kTileHW;  // tt-metal Tile::get_tile_size: one byte per datum
        default: fault("tile_size_bytes: unsupported data format %u", static_cast<unsigned>(f));
    }
}

const char* data_format_name(DataFormat f) {
    switch (f) {
        case DataFormat::Float32: return "Float32";
        case DataFormat::Float16: return "Float16";
        case DataFormat::Bfp8: return "Bfp8";
        case DataFormat::Bfp4: return "Bfp4";
        case DataFormat::Float16_b: return "Float16_b";
        case DataFormat::Bfp8_b: return "Bfp8_b";
        case DataFormat::Bfp4_b: return "Bfp4_b";
        case DataFormat::Int32: return "Int32";
        case DataFormat::UInt16: return "UInt16";
        case DataFormat::UInt32: return "UInt32";
        case DataFormat::Bfp2: return "Bfp2";
        case DataFormat::Bfp2_b: return "Bfp2_b";
        case DataFormat::Lf8: return "Lf8";
        case DataFormat::Int8: return "Int8";
        case DataFormat::UInt8: return "UInt8";
        case DataFormat::Tf32: return "Tf32";
        case DataFormat::Fp8_e4m3: return "Fp8_e4m3";
        default: return "Invalid";
    }
}

namespace {

// Encode one fp32 value against a shared exponent into a sign + `mbits`-bit magnitude code.
inline uint32_t bfp_encode(uint32_t u, uint32_t shared_exp, uint32_t mbits) {
    if ((u & 0x7fffffffu) == 0) return 0;
    uint32_t exp = (u >> 23) & 0xffu;
    uint32_t sign = u >> 31;
    uint64_t sig = (1u << 23) | (u & 0x7fffffu);  // 24 bits, hidden one explicit
    uint32_t diff = shared_exp - exp;              // shared_exp >= exp by construction
    sig = diff >= 40 ? 0 : (sig >> diff);
    uint32_t shift = 24 - mbits;
    uint64_t rem = sig & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    uint64_t mag = sig >> shift;
    if (rem > half || (rem == half && (mag & 1))) mag += 1;
    uint64_t max_mag = (1ull << mbits) - 1;
    if (mag > max_mag) mag = max_mag;
    if (mag == 0) return 0;
    return (sign << mbits) | static_cast<uint32_t>(mag);
}

// Decode a sign + `mbits`-bit magnitude code with a shared exponent.
inline float bfp_decode(uint32_t code, uint32_t shared_exp, uint32_t mbits) {
    uint32_t mag = code & ((1u << mbits) - 1);
    uint32_t sign = (code >> mbits) & 1u;
    if (mag == 0) return 0.0f;
    if (shared_exp == 0xffu) {
        // Inf / NaN row: the leading one at the top bit means Inf, anything else NaN-like; follow fp32 bit layout.
        int lead = 31 - __builtin_clz(mag);
        uint32_t man = (mag << (23 - lead)) & 0x7fffffu;
        return bits_f32((sign << 31) | (0xffu << 23) | man);
    }
    float v = std::ldexp(static_cast<float>(mag), static_cast<int>(shared_exp) - 127 - static_cast<int>(mbits - 1));
    return sign ? -v : v;
}

// Packs with one rounding (nearest, ties to even) of each value to the shared exponent of its 16-value row. That is
// silicon's bfp8_pack_precise path (pack source format fp16/fp32, as ttnn.typecast uses); the default packer path
// rounds to 7 bits in the gasket first and again when aligning mantissas (tt-metal #14032), which is not modelled.
inline void bfp_pack(const float* src, uint8_t* dst, uint32_t mbits) {
    uint8_t* exps = dst;
    uint8_t* mant = dst + kBfpExpBytes;
    for (uint32_t row = 0; row < 64; ++row) {  // 64 face rows of 16 values, in stream order
        uint32_t u[16];
        uint32_t shared = 0;
        const float* in = src + tile_row_major_index(row * 16);  // a face row: 16 neighbours of a tile row
        for (uint32_t j = 0; j < 16; ++j) {
            u[j] = f32_bits(in[j]);
            uint32_t e = (u[j] >> 23) & 0xffu;
            if (e > shared) shared = e;
        }
        exps[row] = static_cast<uint8_t>(shared);
        for (uint32_t j = 0; j < 16; ++j) {
            uint32_t code = bfp_encode(u[j], shared, mbits);
            uint32_t i = row * 16 + j;
            if (mbits == 7) {
                mant[i] = static_cast<uint8_t>(code);
            } else {  // bfp4: two values per byte, earlier value in the low nibble
                if (i % 2 == 0)
                    mant[i / 2] = static_cast<uint8_t>(code & 0xfu);
                else
                    mant[i / 2] = static_cast<uint8_t>(mant[i / 2] | ((code & 0xfu) << 4));
            }
        }
    }
}

// Every value a bfp row can decode to, per shared exponent: decode_table(mbits)[exp * 256 + code] is
// bfp_decode(code, exp, mbits), computed by bfp_decode itself once per process, so a table look-up is that function's
// result bit for bit (a tile decodes 1,024 values against 64 exponents; ldexp per value was most of unpacking).
const float* decode_table(uint32_t mbits) {
    struct Table {
        std::vector<float> v;
        explicit Table(uint32_t mbits) : v(256 * 256) {
            for (uint32_t e = 0; e < 256; ++e)
                for (uint32_t code = 0; code < 256; ++code) v[e * 256 + code] = bfp_decode(code, e, mbits);
        }
    };
    if (mbits == 7) {
        static const Table bfp8(7);
        return bfp8.v.data();
    }
    static const Table bfp4(3);
    return bfp4.v.data();
}
// Decodes the n values (a multiple of 16: whole exponent rows) of a bfp tile whose faces have face_r rows into dst,
// row-major 32 wide. A row of 16 values in the stream is 16 neighbours in one row of the 32x32 form
// (tile_row_major_index), so each lands with one index computation per row.
#if defined(__x86_64__)
// bfp8's 16 look-ups of a row in one AVX-512 gather (the same table entries; a tile's rows were most of unpacking).
[[gnu::target("avx512f")]] void bfp8_rows_avx512(const uint8_t* exps, const uint8_t* mant, uint32_t n,
                                                  uint32_t face_r, const float* table, float* dst) {
    for (uint32_t row = 0; row < n / 16; ++row) {
        uint32_t face = row / face_r, r = (face / 2) * face_r + row % face_r;
        __m512i codes = _mm512_maskz_cvtepu8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(mant + row * 16)));
        __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xffff, codes, table + exps[row] * 256u, 4);
        _mm512_storeu_ps(dst + r * 32 + (face % 2) * 16, v);
    }
}
bool host_has_avx512f() {
    static const bool yes = __builtin_cpu_supports("avx512f");
    return yes;
}
#endif

inline void bfp_decode_rows(const uint8_t* exps, const uint8_t* mant, uint32_t n, uint32_t face_r, uint32_t mbits,
                            float* dst) {
    const float* table = decode_table(mbits);
#if defined(__x86_64__)
    if (mbits == 7 && host_has_avx512f()) return bfp8_rows_avx512(exps, mant, n, face_r, table, dst);
#endif
    for (uint32_t row = 0; row < n / 16; ++row) {
        const float* of = table + exps[row] * 256u;
        uint32_t face = row / face_r, r = (face / 2) * face_r + row % face_r;
        float* out = dst + r * 32 + (face % 2) * 16;
        if (mbits == 7) {
            const uint8_t* m = mant + row * 16;
            for (uint32_t j = 0; j < 16; ++j) out[j] = of[m[j]];
        } else {  // bfp4: two values per byte, earlier value in the low nibble
            const uint8_t* m = mant + row * 8;
            for (uint32_t j = 0; j < 8; ++j) {
                out[2 * j] = of[m[j] & 0xfu];
                out[2 * j + 1] = of[m[j] >> 4];
            }
        }
    }
}
// A face row of 16 bf16 values to floats (bf16_bits_to_f32 of each), through a local copy so the loop vectorises.
inline void bf16_row_to_f32(const uint8_t* src, float* out) {
    uint16_t b[16];
    uint32_t u[16];
    std::memcpy(b, src, sizeof b);
    for (uint32_t j = 0; j < 16; ++j) u[j] = static_cast<uint32_t>(b[j]) << 16;
    std::memcpy(out, u, sizeof u);
}
// A face row of 16 floats to bf16 (f32_to_bf16_bits of each), through local copies so the loop vectorises (the
// packer's most frequent conversion in a decode).
inline void f32_row_to_bf16(const float* in, uint8_t* dst) {
    float f[16];
    uint16_t b[16];
    std::memcpy(f, in, sizeof f);
    for (uint32_t j = 0; j < 16; ++j) b[j] = f32_to_bf16_bits(f[j]);
    std::memcpy(dst, b, sizeof b);
}
inline void bfp_unpack(const uint8_t* src, float* dst, uint32_t mbits) {
    bfp_decode_rows(src, src + kBfpExpBytes, kTileHW, 16, mbits, dst);
}
}  // namespace

// dst: 1024 floats, row-major 32x32.
void unpack_tile(DataFormat f, const uint8_t* src, float* dst) {
    switch (f) {
        case DataFormat::Float32:
        case DataFormat::Int32:
        case DataFormat::UInt32:  // raw 32-bit copy (integers keep their bit pattern inside the float slot)
            for (uint32_t row = 0; row < kTileHW / 16; ++row)  // a face row: 16 neighbours of a tile row
                std::memcpy(&dst[tile_row_major_index(row * 16)], src + 64 * row, 64);
            return;
        case DataFormat::Float16_b:
            for (uint32_t row = 0; row < kTileHW / 16; ++row) {  // a face row: 16 neighbours of a tile row
                bf16_row_to_f32(src + 32 * row, dst + tile_row_major_index(row * 16));
            }
            return;
        case DataFormat::UInt16:  // integer value as float
            for (uint32_t i = 0; i < kTileHW; ++i) {
                uint16_t b;
                std::memcpy(&b, src + 2 * i, 2);
                dst[tile_row_major_index(i)] = static_cast<float>(b);
            }
            return;
        case DataFormat::Bfp8_b: bfp_unpack(src, dst, 7); return;
        case DataFormat::Bfp4_b: bfp_unpack(src, dst, 3); return;
        default: fault("unpack_tile: unsupported data format %s", data_format_name(f));
    }
}

// src: 1024 floats, row-major 32x32.
void pack_tile(DataFormat f, const float* src, uint8_t* dst) {
    switch (f) {
        case DataFormat::Float32:
        case DataFormat::Int32:
        case DataFormat::UInt32:
            for (uint32_t row = 0; row < kTileHW / 16; ++row)  // a face row: 16 neighbours of a tile row
                std::memcpy(dst + 64 * row, &src[tile_row_major_index(row * 16)], 64);
            return;
        case DataFormat::Float16_b:
            for (uint32_t row = 0; row < kTileHW / 16; ++row)  // a face row: 16 neighbours of a tile row
                f32_row_to_bf16(src + tile_row_major_index(row * 16), dst + 32 * row);
            return;
        case DataFormat::UInt16:
            for (uint32_t i = 0; i < kTileHW; ++i) {
                float v = src[tile_row_major_index(i)];
                uint16_t b = v <= 0.0f ? 0 : v >= 65535.0f ? 65535 : static_cast<uint16_t>(std::nearbyint(v));
                std::memcpy(dst + 2 * i, &b, 2);
            }
            return;
        case DataFormat::Bfp8_b: bfp_pack(src, dst, 7); return;
        case DataFormat::Bfp4_b: bfp_pack(src, dst, 3); return;
        default: fault("pack_tile: unsupported data format %s", data_format_name(f));
    }
}

uint32_t tile_size_bytes(DataFormat f, const TileGeom& g) {
    if (g.full()) return tile_size_bytes(f);
    switch (f) {
        case DataFormat::Float32:
        case DataFormat::Int32:
        case DataFormat::UInt32: return 4 * g.datums();
        case DataFormat::Float16_b:
        case DataFormat::Float16:
        case DataFormat::UInt16: return 2 * g.datums();
        case DataFormat::Bfp8_b: return g.exp_bytes() + g.datums();
        case DataFormat::Bfp4_b: return g.exp_bytes() + g.datums() / 2;
        default: fault("tile_size_bytes: %s tiles of %u faces x %u rows are not modelled", data_format_name(f),
                       g.num_faces, g.face_r);
    }
}

void unpack_tile(DataFormat f, const uint8_t* src, float* dst, const TileGeom& g) {
    if (g.full()) return unpack_tile(f, src, dst);
    for (uint32_t i = 0; i < kTileHW; ++i) dst[i] = 0.0f;
    uint32_t n = g.datums();
    switch (f) {
        case DataFormat::Float32:
        case DataFormat::Int32:
        case DataFormat::UInt32:
            for (uint32_t row = 0; row < n / 16; ++row)  // a face row: 16 neighbours of a tile row
                std::memcpy(&dst[tile_row_major_index(row * 16, g)], src + 64 * row, 64);
            return;
        case DataFormat::Float16_b:
            for (uint32_t row = 0; row < n / 16; ++row) {
                bf16_row_to_f32(src + 32 * row, dst + tile_row_major_index(row * 16, g));
            }
            return;
        case DataFormat::Bfp8_b:
        case DataFormat::Bfp4_b: {
            uint32_t mbits = f == DataFormat::Bfp8_b ? 7 : 3;
            bfp_decode_rows(src, src + g.exp_bytes(), n, g.face_r, mbits, dst);
            return;
        }
        default: fault("unpack_tile: %s tiles of %u faces x %u rows are not modelled", data_format_name(f),
                       g.num_faces, g.face_r);
    }
}

void pack_tile(DataFormat f, const float* src, uint8_t* dst, const TileGeom& g) {
    if (g.full()) return pack_tile(f, src, dst);
    uint32_t n = g.datums();
    switch (f) {
        case DataFormat::Float32:
        case DataFormat::Int32:
        case DataFormat::UInt32:
            for (uint32_t row = 0; row < n / 16; ++row)  // a face row: 16 neighbours of a tile row
                std::memcpy(dst + 64 * row, &src[tile_row_major_index(row * 16, g)], 64);
            return;
        case DataFormat::Float16_b:
            for (uint32_t row = 0; row < n / 16; ++row)
                f32_row_to_bf16(src + tile_row_major_index(row * 16, g), dst + 32 * row);
            return;
        case DataFormat::Bfp8_b:
        case DataFormat::Bfp4_b: {
            uint32_t mbits = f == DataFormat::Bfp8_b ? 7 : 3;
            uint8_t* mant = dst + g.exp_bytes();
            std::memset(dst, 0, g.exp_bytes());
            for (uint32_t row = 0; row < n / 16; ++row) {
                uint32_t u[16], shared = 0;
                const float* in = src + tile_row_major_index(row * 16, g);
                for (uint32_t j = 0; j < 16; ++j) {
                    u[j] = f32_bits(in[j]);
                    uint32_t e = (u[j] >> 23) & 0xffu;
                    if (e > shared) shared = e;
                }
                dst[row] = static_cast<uint8_t>(shared);
                for (uint32_t j = 0; j < 16; ++j) {
                    uint32_t code = bfp_encode(u[j], shared, mbits), i = row * 16 + j;
                    if (mbits == 7) mant[i] = static_cast<uint8_t>(code);
                    else if (i % 2 == 0) mant[i / 2] = static_cast<uint8_t>(code & 0xfu);
                    else mant[i / 2] = static_cast<uint8_t>(mant[i / 2] | ((code & 0xfu) << 4));
                }
            }
            return;
        }
        default: fault("pack_tile: %s tiles of %u faces x %u rows are not modelled", data_format_name(f), g.num_faces,
                       g.face_r);
    }
}

}  // namespace emu
