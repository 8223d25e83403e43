// Matrix unit (FPU) operations of the emulated compute engine: datacopy, element-wise binary ops with broadcast,
// tile matmul and reduce. Inputs come from CBs through the unpacker model (compute_unpack.h), results go to DST
// with DST rounding (compute_state.h).
//
// Accumulation order (the ISA's functional model, which it calls a rough guide): an FPU instruction adds the
// products of one 16-wide slice of the inner dimension into DST, so matmul and reduce SUM add two rounded partial
// sums per output datum and fidelity phase (phase-major, then inner-dimension halves); inside a slice products are
// summed in fp32.
//
// Bodies: csrc/compute.cpp (see compute_state.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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

void transpose_32x32(float* t);

// Unpacker transposes: bit 0 = transpose of faces (face 1 <-> face 2), bit 1 = transpose within each 16x16 face.
void unpack_transpose(float* t, uint32_t mode);

// copy_tile: CB -> SrcA -> DST, with the unpacker transpose mode of copy_init.
void fpu_copy_tile(uint32_t cb, uint32_t index, uint32_t idst, uint32_t transpose_mode, const char* who);

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
// opposite-sign 1-ULP rates (4M random pairs each; ttemu/tests/test_fpu_rounding.py checks the points).
//
// Both steps in bit operations on the doubles (frexp, ldexp, nearbyint and floor are library calls in this build; the
// element-wise add is a decode's most frequent FPU op): every value below is exact, so the results are the formulas'
// in the comments bit for bit, under the default round-to-nearest mode as the rest of the model.
inline double f64_of_bits(uint64_t u) {
    double d;
    std::memcpy(&d, &u, sizeof d);
    return d;
}
inline uint64_t f64_bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}
inline double fpu_aligned_sum(float a, float b) {
    float big = std::fabs(a) >= std::fabs(b) ? a : b;
    float small = std::fabs(a) >= std::fabs(b) ? b : a;
    if (big == 0.0f || !std::isfinite(big) || !std::isfinite(small)) {
        // a + b; of two NaNs a's, as x86 returns its first operand's, whichever order the compiler puts them in
        if (std::isnan(a)) return static_cast<double>(a);
        if (std::isnan(b)) return static_cast<double>(b);
        return static_cast<double>(a) + b;
    }
    // e of frexp(big) (big = m * 2^e, m in [0.5, 1)); a denormal's from its highest set bit
    uint32_t u = f32_bits(big) & 0x7fffffffu;
    int e = u >= 0x00800000u ? static_cast<int>(u >> 23) - 126 : (32 - __builtin_clz(u)) - 149;
    double grid = f64_of_bits(static_cast<uint64_t>(e - 11 + 1023) << 52);  // ldexp(1.0, e - 1 - 10)
    double inv = f64_of_bits(static_cast<uint64_t>(11 - e + 1023) << 52);   // 1 / grid
    // nearbyint(small / grid): the quotient is exact and below 2^11 in magnitude, so adding and subtracting 1.5 * 2^52
    // rounds it to an integer, ties to even (a -0 result comes out +0: added to a nonzero big, the same sum).
    constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
    double q = (static_cast<double>(small) * inv + kRound) - kRound;
    return static_cast<double>(big) + q * grid;
}
inline float round_bf16_ties_away(double v) {
    if (!std::isfinite(v) || v == 0.0) return round_to_bf16(static_cast<float>(v));
    // copysign(floor(|m| * 256 + 0.5), m) * 2^(e - 8) for v = m * 2^e: v (a normal double, as any sum of two floats
    // and a DST value is) rounded to 8 significant bits, ties away from zero: add half a unit of the eighth bit to the
    // magnitude and cut the bits below it (a carry into the exponent is the rounding up to the next power of two).
    double r = f64_of_bits((f64_bits(v) + (uint64_t{1} << 44)) & ~((uint64_t{1} << 45) - 1));
    return flush_denormal(static_cast<float>(r));
}
// fp32: dst_fp32(), passed in (a tile's loop reads the compute config once). A BF16 DST's tile is computed by
// add_tile_bf16_lanes (csrc/compute.cpp), these formulas in vector lanes: a change here is a change there.
inline float fpu_add_into_dst(float base, float a, float b, bool acc, bool fp32) {
    if (fp32) return acc ? (base + (a + b)) : (a + b);
    double s = fpu_aligned_sum(a, b);
    if (acc) s += base;
    return round_bf16_ties_away(s);
}

// One element-wise product through the fidelity phases, accumulated into `acc` with DST rounding per phase.
inline float fidelity_mul_into(float acc, float a, float b, uint32_t phases, bool fp32) {
    for (uint32_t p = 0; p < phases; ++p) {
        float v = acc + srca_fidelity_part(a, p) * srcb_fidelity_part(b, p);
        acc = fp32 ? v : round_to_bf16(v);  // dst_round
    }
    return acc;
}

// Element-wise a (SrcA) op b (SrcB) with b broadcast; add/sub accumulate into DST when `acc_to_dest`.
void fpu_binary_values(const float* a, const float* b, BinaryOp op, Bcast bc, uint32_t row_idx, uint32_t idst,
                       bool acc_to_dest, const char* who);

void fpu_binary_tiles(uint32_t cb0, uint32_t cb1, uint32_t i0, uint32_t i1, uint32_t idst, BinaryOp op,
                      Bcast bc, uint32_t row_idx, const char* who);

// Dest-reuse binary: one operand is DST tile idst moved into SrcA (dest_to_srca) or SrcB, the other comes from cb
// into the other source register; the result overwrites DST tile idst.
void fpu_binary_reuse_dest(uint32_t cb, uint32_t index, uint32_t idst, BinaryOp op, bool dest_to_srca,
                           const char* who);

// C[idst + r*ct + c] += A[in0 + r*kt] @ op(B[in1 + c]) for r < rt, c < ct; op = transpose when `transpose`.
// in0 (A) goes to SrcB and in1 (B) to SrcA, so fidelity splits B with the SrcA rule and A with the SrcB rule.
void fpu_matmul(uint32_t cb0, uint32_t cb1, uint32_t in0, uint32_t in1, uint32_t idst, bool transpose,
                uint32_t ct, uint32_t rt, uint32_t kt, const char* who);

// The reduce scaler: the emulator models the documented usage, the first row of every face of the scaler tile
// holding one value s. Anything else is reported rather than silently given an unverified meaning.
float reduce_scaler_value(const float* s, const char* who, uint32_t num_faces = 4);

// reduce_tile. SUM/AVG: sum of (x * s) along the reduced dimension added into DST. MAX: max of x scaled by the
// power of two of s's exponent (GMPOOL uses only SrcB's exponent) with DST's current value (undefined = -inf).
// Result: REDUCE_ROW at column 0 of each row, REDUCE_COL at row 0 of each column, REDUCE_SCALAR at [0][0]; all other
// datums of the DST tile become 0.
void fpu_reduce(uint32_t cb, uint32_t cb_scaler, uint32_t index, uint32_t index_scaler, uint32_t idst,
                ReduceOp op, ReduceAxis axis, const char* who);

// reduce_block_max_row (api/compute/reduce_custom.h): DST[idst] row r = max(previous, max over the row of block_ct
// tiles from page row_start of icb, each datum scaled as reduce MAX scales it). The LLK keeps this accumulator in
// DST transposed within faces (the SDPA kernels load a previous max with copy_tile after
// llk_unpack_A_init(..., within_face_16x16_transpose=1) for that reason), so the previous value of row r is read
// at the face-transposed position of (r, 0); the result is written at column 0, as reduce_tile leaves it.
void fpu_reduce_block_max_row(uint32_t icb, uint32_t icb_scaler, uint32_t row_start, uint32_t idst,
                              uint32_t block_ct, const char* who);

}  // namespace emu
