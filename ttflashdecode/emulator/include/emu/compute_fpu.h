// Matrix unit (FPU) operations of the emulated compute engine: datacopy, element-wise binary ops with broadcast,
// tile matmul and reduce. Inputs come from CBs through the unpacker model (compute_unpack.h), results go to DST
// with DST rounding (compute_state.h).
//
// Accumulation order (the ISA's functional model, which it calls a rough guide): an FPU instruction adds the
// products of one 16-wide slice of the inner dimension into DST, so matmul and reduce SUM add two rounded partial
// sums per output datum and fidelity phase (phase-major, then inner-dimension halves); inside a slice products are
// summed in fp32.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "emu/compute_state.h"
#include "emu/compute_unpack.h"
#include "emu/runtime.h"
#include "emu/timing_hooks.h"

namespace emu {

enum class BinaryOp : uint8_t { Add, Sub, Mul };
enum class Bcast : uint8_t { None, Col, Row, Scalar };
enum class ReduceOp : uint8_t { Sum, Avg, Max };
enum class ReduceAxis : uint8_t { Row, Col, Scalar };

inline void transpose_32x32(float* t) {
    for (uint32_t r = 0; r < 32; ++r)
        for (uint32_t c = r + 1; c < 32; ++c) std::swap(t[r * 32 + c], t[c * 32 + r]);
}

// Unpacker transposes: bit 0 = transpose of faces (face 1 <-> face 2), bit 1 = transpose within each 16x16 face.
inline void unpack_transpose(float* t, uint32_t mode) {
    if (mode == 3) {
        transpose_32x32(t);
        return;
    }
    if (mode & 1)
        for (uint32_t r = 0; r < 16; ++r)
            for (uint32_t c = 0; c < 16; ++c) std::swap(t[r * 32 + 16 + c], t[(16 + r) * 32 + c]);
    if (mode & 2)
        for (uint32_t f = 0; f < 4; ++f) {
            float* base = t + (f / 2) * 16 * 32 + (f % 2) * 16;
            for (uint32_t r = 0; r < 16; ++r)
                for (uint32_t c = r + 1; c < 16; ++c) std::swap(base[r * 32 + c], base[c * 32 + r]);
        }
}

// copy_tile: CB -> SrcA -> DST, with the unpacker transpose mode of copy_init.
inline void fpu_copy_tile(uint32_t cb, uint32_t index, uint32_t idst, uint32_t transpose_mode, const char* who) {
    DstSection& d = dst_for_math(idst, who);
    float a[kTileHW];
    unpack_cb_tile(cb, index, Src::A, a, who);
    if (timing_only()) {
        d.defined[idst] = true;
    } else {
        unpack_transpose(a, transpose_mode);
        dst_write_tile(d, idst, a);
    }
    timing_fpu(transpose_mode ? timing::Op::Transpose : timing::Op::Copy, 1, 1, cb);
}

// B operand datum for output (r, c) under a broadcast.
inline float bcast_pick(const float* b, Bcast bc, uint32_t r, uint32_t c, uint32_t row_idx) {
    switch (bc) {
        case Bcast::None: return b[r * 32 + c];
        case Bcast::Col: return b[r * 32];
        case Bcast::Row: return b[row_idx * 32 + c];
        case Bcast::Scalar: return b[0];
    }
    return 0.0f;
}

// ELWADD / ELWSUB into a BF16 Dst (fp32_dest_acc_en off). The ISA's functional model (ELWADD.md, "a rough guide")
// rounds the sum to BF16; silicon does not round to nearest even. Published silicon results:
//   tt-metal#34664 (bf16 ttnn.add, Wormhole): 1 + {0.00341796875, 0.003448486328, 0.00373840332, 0.01129150391,
//   0.01953125} = {1.0078125, 1.0078125, 1.0078125, 1.015625, 1.0234375} (round-to-nearest-even gives 1.0, 1.0,
//   1.0, 1.0078125, 1.015625);
//   tt-metal#50425 (exhaustive bf16 add on the FPU): 0.7694% of same-sign pairs and 0.4895% of opposite-sign pairs
//   are 1 ULP off round-to-nearest-even, none more.
// Model (fits those points): the smaller-magnitude operand is aligned to the larger one's exponent with 10 fraction
// bits (the source registers' 19-bit width), rounded to nearest even there, added exactly, and the sum is rounded
// to BF16 with ties away from zero. It reproduces the five #34664 points exactly and 0.767% same-sign / 0.63%
// opposite-sign 1-ULP rates (4M random pairs each; tests/emulator/test_fpu_rounding.py checks the points).
inline double fpu_aligned_sum(float a, float b) {
    float big = std::fabs(a) >= std::fabs(b) ? a : b;
    float small = std::fabs(a) >= std::fabs(b) ? b : a;
    if (big == 0.0f || !std::isfinite(big) || !std::isfinite(small)) return static_cast<double>(a) + b;
    int e = 0;
    std::frexp(big, &e);                                   // big = m * 2^e, m in [0.5, 1)
    double grid = std::ldexp(1.0, e - 1 - 10);             // 10 fraction bits at big's exponent
    double q = std::nearbyint(static_cast<double>(small) / grid);  // round to nearest even
    return static_cast<double>(big) + q * grid;
}
inline float round_bf16_ties_away(double v) {
    if (!std::isfinite(v) || v == 0.0) return round_to_bf16(static_cast<float>(v));
    int e = 0;
    double m = std::frexp(v, &e);                          // |m| in [0.5, 1): 8 significant bits = m * 2^8
    double r = std::copysign(std::floor(std::fabs(m) * 256.0 + 0.5), m);
    float out = static_cast<float>(std::ldexp(r / 256.0, e));
    return flush_denormal(out);
}
inline float fpu_add_into_dst(float base, float a, float b, bool acc) {
    if (dst_fp32()) return acc ? (base + (a + b)) : (a + b);
    double s = fpu_aligned_sum(a, b);
    if (acc) s += base;
    return round_bf16_ties_away(s);
}

// One element-wise product through the fidelity phases, accumulated into `acc` with DST rounding per phase.
inline float fidelity_mul_into(float acc, float a, float b, uint32_t phases) {
    for (uint32_t p = 0; p < phases; ++p) acc = dst_round(acc + srca_fidelity_part(a, p) * srcb_fidelity_part(b, p));
    return acc;
}

// Element-wise a (SrcA) op b (SrcB) with b broadcast; add/sub accumulate into DST when `acc_to_dest`.
inline void fpu_binary_values(const float* a, const float* b, BinaryOp op, Bcast bc, uint32_t row_idx, uint32_t idst,
                              bool acc_to_dest, const char* who) {
    DstSection& d = dst_for_math(idst, who);
    float* t = d.tile[idst];
    uint32_t phases = op == BinaryOp::Mul ? fidelity_phases() : 0;
    if (timing_only()) {
        d.defined[idst] = true;
        count(Counter::FpuTiles);
        return;
    }
    for (uint32_t r = 0; r < 32; ++r) {
        for (uint32_t c = 0; c < 32; ++c) {
            uint32_t i = r * 32 + c;
            float bv = bcast_pick(b, bc, r, c, row_idx);
            float base = acc_to_dest ? dst_acc_read(d, idst, i) : 0.0f;
            float v = 0.0f;
            switch (op) {
                case BinaryOp::Add: v = fpu_add_into_dst(base, a[i], bv, acc_to_dest); break;
                case BinaryOp::Sub: v = fpu_add_into_dst(base, a[i], -bv, acc_to_dest); break;
                case BinaryOp::Mul: v = fidelity_mul_into(0.0f, a[i], bv, phases); break;
            }
            t[i] = v;
        }
    }
    d.defined[idst] = true;
    count(Counter::FpuTiles);
}

inline void fpu_binary_tiles(uint32_t cb0, uint32_t cb1, uint32_t i0, uint32_t i1, uint32_t idst, BinaryOp op,
                             Bcast bc, uint32_t row_idx, const char* who) {
    dst_for_math(idst, who);
    if (row_idx >= 32) fault("%s: bcast_row_idx %u out of range", who, row_idx);
    float a[kTileHW], b[kTileHW];
    unpack_cb_tile(cb0, i0, Src::A, a, who);
    unpack_cb_tile(cb1, i1, Src::B, b, who);
    fpu_binary_values(a, b, op, bc, row_idx, idst, op != BinaryOp::Mul && cstate().binary_acc_to_dest, who);
    timing_fpu(op == BinaryOp::Mul ? timing::Op::EltwiseMul : timing::Op::EltwiseAdd, 1, 2, cb0);
}

// Dest-reuse binary: one operand is DST tile idst moved into SrcA (dest_to_srca) or SrcB, the other comes from cb
// into the other source register; the result overwrites DST tile idst.
inline void fpu_binary_reuse_dest(uint32_t cb, uint32_t index, uint32_t idst, BinaryOp op, bool dest_to_srca,
                                  const char* who) {
    DstSection& d = dst_for_math(idst, who);
    float from_dst[kTileHW], from_cb[kTileHW];
    for (uint32_t i = 0; i < kTileHW; ++i) from_dst[i] = dst_to_src_register(dst_acc_read(d, idst, i));
    unpack_cb_tile(cb, index, dest_to_srca ? Src::B : Src::A, from_cb, who);
    const float* a = dest_to_srca ? from_dst : from_cb;
    const float* b = dest_to_srca ? from_cb : from_dst;
    fpu_binary_values(a, b, op, Bcast::None, 0, idst, false, who);
    timing_fpu(op == BinaryOp::Mul ? timing::Op::EltwiseMul : timing::Op::EltwiseAdd, 1, 1, cb);
}

// C[idst + r*ct + c] += A[in0 + r*kt] @ op(B[in1 + c]) for r < rt, c < ct; op = transpose when `transpose`.
// in0 (A) goes to SrcB and in1 (B) to SrcA, so fidelity splits B with the SrcA rule and A with the SrcB rule.
inline void fpu_matmul(uint32_t cb0, uint32_t cb1, uint32_t in0, uint32_t in1, uint32_t idst, bool transpose,
                       uint32_t ct, uint32_t rt, uint32_t kt, const char* who) {
    if (ct == 0 || rt == 0) fault("%s: ct_dim=%u rt_dim=%u must be >= 1", who, ct, rt);
    DstSection& d = dst_for_math(idst, who);
    dst_check_index(idst + rt * ct - 1, who);
    uint32_t phases = fidelity_phases();
    std::unique_ptr<float[]> A(new float[rt * kTileHW]), B(new float[ct * kTileHW]);
    for (uint32_t r = 0; r < rt; ++r) unpack_cb_tile(cb0, in0 + r * kt, Src::B, &A[r * kTileHW], who);
    for (uint32_t c = 0; c < ct; ++c) {
        float* b = &B[c * kTileHW];
        unpack_cb_tile(cb1, in1 + c, Src::A, b, who);
        if (transpose) transpose_32x32(b);
    }
    timing_matmul(cb0, cb1, rt, ct);
    if (timing_only()) {
        for (uint32_t t = idst; t < idst + rt * ct; ++t) d.defined[t] = true;
        count(Counter::MatmulTiles, rt * ct);
        return;
    }
    // Each operand's fidelity parts depend only on the phase's bit (SrcA: bit 0, SrcB: bit 1), so both parts of
    // every datum are split once here rather than once per output datum. A row's 32 outputs are then computed side by
    // side (the j loops vectorise); each output still sums its own 16 products per half in k order and rounds into
    // DST after each half of each phase, as the phase-by-phase definition does, so every result is bit for bit the
    // same.
    std::unique_ptr<float[]> Ap(new float[2 * rt * kTileHW]), Bp(new float[2 * ct * kTileHW]);
    for (uint32_t h = 0; h < 2; ++h) {
        for (uint32_t i = 0; i < rt * kTileHW; ++i) Ap[h * rt * kTileHW + i] = srcb_fidelity_part(A[i], h << 1);
        for (uint32_t i = 0; i < ct * kTileHW; ++i) Bp[h * ct * kTileHW + i] = srca_fidelity_part(B[i], h);
    }
    const bool fp32 = dst_fp32();
    for (uint32_t r = 0; r < rt; ++r) {
        for (uint32_t c = 0; c < ct; ++c) {
            uint32_t t = idst + r * ct + c;
            float* out = d.tile[t];
            for (uint32_t i = 0; i < 32; ++i) {
                float acc[32];
                for (uint32_t j = 0; j < 32; ++j) acc[j] = dst_acc_read(d, t, i * 32 + j);
                for (uint32_t p = 0; p < phases; ++p) {
                    const float* a = &Ap[((p >> 1) & 1) * rt * kTileHW + r * kTileHW + i * 32];
                    const float* b = &Bp[((p & 1) * ct + c) * kTileHW];
                    for (uint32_t half = 0; half < 2; ++half) {
                        float s[32] = {};
                        for (uint32_t k = half * 16; k < half * 16 + 16; ++k)
                            for (uint32_t j = 0; j < 32; ++j) s[j] += a[k] * b[k * 32 + j];
                        for (uint32_t j = 0; j < 32; ++j)
                            acc[j] = fp32 ? acc[j] + s[j] : round_to_bf16(acc[j] + s[j]);  // dst_round
                    }
                }
                for (uint32_t j = 0; j < 32; ++j) out[i * 32 + j] = acc[j];
            }
            d.defined[t] = true;
            count(Counter::MatmulTiles);
        }
    }
}

// The reduce scaler: the emulator models the documented usage, the first row of every face of the scaler tile
// holding one value s. Anything else is reported rather than silently given an unverified meaning.
inline float reduce_scaler_value(const float* s, const char* who, uint32_t num_faces = 4) {
    float v = s[0];
    // Faces the scaler CB's tile has (a half tile has faces 0 and 1 only).
    for (uint32_t face = 0; face < num_faces; ++face) {
        uint32_t r0 = (face / 2) * 16, c0 = (face % 2) * 16;
        for (uint32_t c = 0; c < 16; ++c) {
            float x = s[r0 * 32 + c0 + c];
            if (f32_bits(x) != f32_bits(v))
                fault("%s: reduce scaler tile is not uniform on the first row of each face (face %u col %u = %g, "
                      "face 0 col 0 = %g); the emulator models only the documented uniform scaler",
                      who, face, c, static_cast<double>(x), static_cast<double>(v));
        }
    }
    return v;
}

// reduce_tile. SUM/AVG: sum of (x * s) along the reduced dimension added into DST. MAX: max of x scaled by the
// power of two of s's exponent (GMPOOL uses only SrcB's exponent) with DST's current value (undefined = -inf).
// Result: REDUCE_ROW at column 0 of each row, REDUCE_COL at row 0 of each column, REDUCE_SCALAR at [0][0]; all other
// datums of the DST tile become 0.
inline void fpu_reduce(uint32_t cb, uint32_t cb_scaler, uint32_t index, uint32_t index_scaler, uint32_t idst,
                       ReduceOp op, ReduceAxis axis, const char* who) {
    DstSection& d = dst_for_math(idst, who);
    // REDUCE_ROW SUM/AVG runs as MVMUL with the scaler in SrcA and the data in SrcB; the other forms put the data
    // in SrcA and the scaler in SrcB.
    bool swapped = axis == ReduceAxis::Row && op != ReduceOp::Max;
    float x[kTileHW], sc[kTileHW];
    unpack_cb_tile(cb, index, swapped ? Src::B : Src::A, x, who);
    unpack_cb_tile(cb_scaler, index_scaler, swapped ? Src::A : Src::B, sc, who);
    if (timing_only()) {
        d.defined[idst] = true;
        count(Counter::FpuTiles);
        timing_fpu(op == ReduceOp::Max ? timing::Op::ReduceMax : timing::Op::ReduceSum, 1, 2, cb);
        return;
    }
    float s = reduce_scaler_value(sc, who, cb_tile_geom(cb_scaler, false).num_faces);
    float* out = d.tile[idst];
    float res[kTileHW];
    for (uint32_t i = 0; i < kTileHW; ++i) res[i] = 0.0f;
    auto at = [&](uint32_t r, uint32_t c) { return x[r * 32 + c]; };
    if (op == ReduceOp::Max) {
        float scale = 0.0f;
        if (s != 0.0f && std::isfinite(s)) scale = std::ldexp(1.0f, std::ilogb(s));
        auto scaled = [&](float v) {
            return s == 0.0f ? -std::numeric_limits<float>::infinity() : v * scale;
        };
        auto init = [&](uint32_t i) {
            return d.defined[idst] ? out[i] : -std::numeric_limits<float>::infinity();
        };
        if (axis == ReduceAxis::Row) {
            for (uint32_t r = 0; r < 32; ++r) {
                float m = init(r * 32);
                for (uint32_t c = 0; c < 32; ++c) m = std::max(m, scaled(at(r, c)));
                res[r * 32] = m;
            }
        } else if (axis == ReduceAxis::Col) {
            for (uint32_t c = 0; c < 32; ++c) {
                float m = init(c);
                for (uint32_t r = 0; r < 32; ++r) m = std::max(m, scaled(at(r, c)));
                res[c] = m;
            }
        } else {
            float m = init(0);
            for (uint32_t i = 0; i < kTileHW; ++i) m = std::max(m, scaled(x[i]));
            res[0] = m;
        }
    } else {
        uint32_t phases = fidelity_phases();
        // data is in the operand slot that gets the SrcA (or SrcB) fidelity split, scaler in the other
        auto prod = [&](float v, uint32_t p) {
            return swapped ? srcb_fidelity_part(v, p) * srca_fidelity_part(s, p)
                           : srca_fidelity_part(v, p) * srcb_fidelity_part(s, p);
        };
        auto reduce_line = [&](float acc, auto get) {
            for (uint32_t p = 0; p < phases; ++p)
                for (uint32_t half = 0; half < 2; ++half) {
                    float sum = 0.0f;
                    for (uint32_t k = half * 16; k < half * 16 + 16; ++k) sum += prod(get(k), p);
                    acc = dst_round(acc + sum);
                }
            return acc;
        };
        if (axis == ReduceAxis::Row) {
            for (uint32_t r = 0; r < 32; ++r)
                res[r * 32] = reduce_line(dst_acc_read(d, idst, r * 32), [&](uint32_t k) { return at(r, k); });
        } else if (axis == ReduceAxis::Col) {
            for (uint32_t c = 0; c < 32; ++c)
                res[c] = reduce_line(dst_acc_read(d, idst, c), [&](uint32_t k) { return at(k, c); });
        } else {
            // Column sums first (into row 0), then the sum of row 0; both stages multiply by the scaler, which is
            // why reduce.h asks for 1/sqrt(N) as the AVG scaler of REDUCE_SCALAR. Each stage rounds into DST.
            float colsum[32];
            for (uint32_t c = 0; c < 32; ++c) colsum[c] = reduce_line(0.0f, [&](uint32_t k) { return at(k, c); });
            res[0] = reduce_line(dst_acc_read(d, idst, 0), [&](uint32_t k) { return dst_to_src_register(colsum[k]); });
        }
    }
    dst_write_tile(d, idst, res);
    count(Counter::FpuTiles);
    timing_fpu(op == ReduceOp::Max ? timing::Op::ReduceMax : timing::Op::ReduceSum, 1, 2, cb);
}

// reduce_block_max_row (api/compute/reduce_custom.h): DST[idst] row r = max(previous, max over the row of block_ct
// tiles from page row_start of icb, each datum scaled as reduce MAX scales it). The LLK keeps this accumulator in
// DST transposed within faces (the SDPA kernels load a previous max with copy_tile after
// llk_unpack_A_init(..., within_face_16x16_transpose=1) for that reason), so the previous value of row r is read
// at the face-transposed position of (r, 0); the result is written at column 0, as reduce_tile leaves it.
inline void fpu_reduce_block_max_row(uint32_t icb, uint32_t icb_scaler, uint32_t row_start, uint32_t idst,
                                     uint32_t block_ct, const char* who) {
    DstSection& d = dst_for_math(idst, who);
    float sc[kTileHW];
    unpack_cb_tile(icb_scaler, 0, Src::B, sc, who);
    if (timing_only()) {
        float x[kTileHW];
        for (uint32_t t = 0; t < block_ct; ++t) unpack_cb_tile(icb, row_start + t, Src::A, x, who);  // checks only
        d.defined[idst] = true;
        count(Counter::FpuTiles, block_ct);
        timing_fpu(timing::Op::ReduceMax, block_ct, block_ct + 1, icb);
        return;
    }
    float s = reduce_scaler_value(sc, who, cb_tile_geom(icb_scaler, false).num_faces);
    float scale = (s != 0.0f && std::isfinite(s)) ? std::ldexp(1.0f, std::ilogb(s)) : 0.0f;
    float m[32];
    for (uint32_t r = 0; r < 32; ++r)
        m[r] = d.defined[idst] ? d.tile[idst][(r / 16) * 16 * 32 + r % 16] : -std::numeric_limits<float>::infinity();
    float x[kTileHW];
    for (uint32_t t = 0; t < block_ct; ++t) {
        unpack_cb_tile(icb, row_start + t, Src::A, x, who);
        for (uint32_t r = 0; r < 32; ++r)
            for (uint32_t c = 0; c < 32; ++c) {
                float v = s == 0.0f ? -std::numeric_limits<float>::infinity() : x[r * 32 + c] * scale;
                m[r] = std::max(m[r], v);
            }
    }
    float res[kTileHW] = {};
    for (uint32_t r = 0; r < 32; ++r) res[r * 32] = m[r];
    dst_write_tile(d, idst, res);
    count(Counter::FpuTiles, block_ct);
    timing_fpu(timing::Op::ReduceMax, block_ct, block_ct + 1, icb);
}

}  // namespace emu
