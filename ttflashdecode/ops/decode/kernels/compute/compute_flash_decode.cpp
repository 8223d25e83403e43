// SPDX-License-Identifier: Apache-2.0
//
// FlashDecode compute (TRISC0-2). For every group (batch b, kv head h) this core serves it runs flash attention
// over its K/V chunks with an online softmax, then takes part in the group's reduction tree:
//
//   per chunk:  S = mask + (scale * Q) . K^T             (a generated mask, or a user mask with an fp32 DST,
//                                                       preloaded in DST and the matmul accumulating on it; a user
//                                                       mask with a bfloat16 DST added after the matmul)
//               m_new = max(m, rowmax(S))                 (one block reduce over the row, seeded with m in DST)
//               P = exp(S - m_new)                        (subtract and exp in DST, one pack)
//               alpha = exp(m - m_new)
//               (with the approximate exp, the scale moves from Q into every exp: see "the exp, two ways")
//               l = l * alpha + sum_j P_j                 (elementwise: see "l" below)
//               O = O * alpha + P . V                     (rescale in DST, block matmul accumulates on it)
//   per tree round where children i = 1..c (c < merge_radix) send (O_i, m_i, l_i), merged in one pass:
//               m_new = max(m, m_1, ..., m_c);  a = exp(m - m_new);  a_i = exp(m_i - m_new)
//               (16-bit intermediates: the c + 1 maxima side by side in one tile, so one row max and one exp serve
//               them all: merge_row_factors)
//               l = l * a + sum_i l_i * a_i;  O = O * a + sum_i O_i * a_i
//   root:       [attention sinks: merge (O=0, m=sink logit, l=1) like a partner's partial; with a user mask and no
//               sinks, the same merge with m = SCORE_FLOOR, so a row the mask hides entirely comes out as zeros]
//               out = O / l          others: hand (O, m, l) to the writer, which sends it up the tree.
//               (emit_partial: the root too hands (O, m, l) to the writer, which stores it for a later merge.)
//
// m is a column vector: the row max leaves its value in column 0 of a tile, and every consumer broadcasts column 0
// (the *_bcast_cols ops), so the other columns never matter.
// l is kept UNREDUCED, as upstream's SDPA keeps its sums: a full tile whose row r holds 32 partial sums (column c sums
// the P datums of column c of every score tile), accumulated by the packer into L1 (pack_reconfig_l1_acc) while P
// leaves DST anyway. Rescaling (l * alpha, bcast cols) and merging (l * a + l_i * a_i) are elementwise, so they hold
// for the partial sums as for their row sum, and partials travel up the tree unreduced; only the root reduces its l
// to the row sum, once, before 1/l. (An attention-sink partial's l, 1 in column 0, has row sum 1 as it should.)
// DST holds at most dst_tiles tiles per acquire (a half of DST in half-sync: 4 tiles with fp32, else 8). Steps that
// work on a row of tiles (P, P . V) fill several per acquire; scores with K split in head-dim blocks (split-D) keep
// the PNHt score tiles of one position tile in DST while the K blocks of that position tile stream through, so the
// planner splits K only when PNHt fits DST.
//
// Two CB rules this file keeps. (1) The unpacker reads tile i of a CB at read pointer + i tiles with no
// wrap-around, so a CB read at an index past its front block is pushed and popped in blocks that tile its
// capacity (O and l only read their front block; the running max ping-pongs between cb_m and cb_m_next).
// (2) Unpack (TRISC0) and pack (TRISC2) run on different RISCs, so a tile packed here is unpacked only after
// wait_front on it, exactly as if another core had produced it.
//
// Arguments (ttflashdecode/ops/decode/args.py): positional compile-time args for what shapes the code, arg i being
// COMPUTE_ARGS[i] (each read below as `constexpr ... <name> = get_compile_time_arg_val(i)`); common runtime args (the
// run-time shape: nothing that changes the code) in the order of kernel_args.ComputeCommonArgs. CBs are synchronised
// through CircularBuffer; the compute API takes their indices.

#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/cb_api.h"
#include "api/compute/reg_api.h"
#include "api/compute/pack.h"
#include "api/compute/reconfig_data_format.h"
#include "api/compute/tile_move_copy.h"
#include "api/compute/matmul.h"
#include "api/compute/reduce.h"
#include "api/compute/reduce_custom.h"
#include "api/compute/bcast.h"
#include "api/compute/eltwise_binary.h"
#include "api/compute/binary_max_min.h"
#include "api/compute/eltwise_unary/exp.h"
#include "api/compute/eltwise_unary/recip.h"
#include "api/compute/eltwise_unary/threshold.h"
#include "api/dataflow/circular_buffer.h"
#include "flash_decode_common.hpp"

using namespace ckernel;
using namespace flash_decode;

namespace {

// ---- circular buffers (the planner's CB table, ttflashdecode/plan/cbs.py)
constexpr uint32_t cb_q = get_compile_time_arg_val(0);
constexpr uint32_t cb_k = get_compile_time_arg_val(1);
constexpr uint32_t cb_v = get_compile_time_arg_val(2);
constexpr uint32_t cb_mask = get_compile_time_arg_val(3);
constexpr uint32_t cb_scale = get_compile_time_arg_val(4);
constexpr uint32_t cb_ones = get_compile_time_arg_val(5);
constexpr uint32_t cb_cur_pos = get_compile_time_arg_val(6);
// partials sent by tree partners, one slot per round
constexpr uint32_t cb_partial_in = get_compile_time_arg_val(7);
// this core's (O, m, l) for the writer to send
constexpr uint32_t cb_partial_out = get_compile_time_arg_val(8);
constexpr uint32_t cb_out = get_compile_time_arg_val(9);  // normalised output (root only)
constexpr uint32_t cb_q_scaled = get_compile_time_arg_val(10);
constexpr uint32_t cb_scores = get_compile_time_arg_val(11);  // S of one chunk
constexpr uint32_t cb_probs = get_compile_time_arg_val(12);  // P of one chunk
constexpr uint32_t cb_o = get_compile_time_arg_val(13);  // running O: old block at the front, new one behind
// running max: CB cb_max_cur holds it, a new max goes to cb_max_next, then the two swap (see rule 1 above); they start
// as cb_m and cb_m_next.
constexpr uint32_t cb_m = get_compile_time_arg_val(14);
constexpr uint32_t cb_m_next = get_compile_time_arg_val(15);
uint32_t cb_max_cur = cb_m;
uint32_t cb_max_next = cb_m_next;
constexpr uint32_t cb_l = get_compile_time_arg_val(16);  // running sum, same old/new discipline
constexpr uint32_t cb_row_stat = get_compile_time_arg_val(17);  // rowmax / rowsum of one chunk
// rescale factors exp(m - m_new), one block at a time
constexpr uint32_t cb_alpha = get_compile_time_arg_val(18);
// a merge's two row factors [a_i = exp(m_i - m_new), a = exp(m - m_new)], pushed and popped as one block
constexpr uint32_t cb_merge_factors = get_compile_time_arg_val(19);
// attention sinks as a partial: m tiles, then l tiles
constexpr uint32_t cb_sink = get_compile_time_arg_val(20);

// ---- compile-time shape
constexpr uint32_t DHt = get_compile_time_arg_val(21);
constexpr uint32_t vDHt = get_compile_time_arg_val(22);
constexpr uint32_t Sk_t = get_compile_time_arg_val(23);
constexpr uint32_t PNHt = get_compile_time_arg_val(24);
// Rows of the tiles holding the group's rows (Q, S, P, m, l, O, partials; plan/shapes.py: q_tile_rows). With 16, every
// such tile is 16 x 32 (upstream's half tiles): the matmuls take half the math, and the SFPU ops below run on the two
// faces that hold rows 0-15 only (VectorMode::R); K and V stay 32 x 32.
constexpr uint32_t q_tile_rows = get_compile_time_arg_val(25);
constexpr VectorMode row_vector_mode = q_tile_rows == FACE_HW ? VectorMode::R : VectorMode::RC;
// The faces holding column 0, where the row statistics live (m, alpha, merge factors, 1/l): face 0 of a 16-row tile
// (VectorMode::None: one 8-iteration pass over face 0), faces 0 and 2 of a 32-row one (VectorMode::C). SFPU ops on them
// touch only those faces, as upstream's first-column exp / recip do.
constexpr VectorMode col0_vector_mode = q_tile_rows == FACE_HW ? VectorMode::None : VectorMode::C;
static_assert(q_tile_rows == TILE_HW || (q_tile_rows == FACE_HW && PNHt == 1), "16-row tiles hold a whole group");
constexpr uint32_t q_len = get_compile_time_arg_val(26);
constexpr uint32_t num_kv_heads = get_compile_time_arg_val(27);
// Consecutive users sharing a page-table row (spec_multi_pos_tiles candidates) are one group: its rows are theirs, user
// by user, each at its own causal bound, and its chunks run up to the newest bound (group_bounds).
constexpr uint32_t users_per_page_row = get_compile_time_arg_val(28);
constexpr uint32_t users_per_group = users_per_page_row;
constexpr bool exp_approx = get_compile_time_arg_val(29) == 1;
// float32 bits of the softmax scale where the approximate exp takes it (scale_in_exp below: exp_tile_init's template
// argument, as upstream's); elsewhere the reader's cb_scale tile carries the scale and this is 0, so the scale alone
// never makes another build.
constexpr uint32_t scale_bits = get_compile_time_arg_val(30);
constexpr bool use_attn_mask = get_compile_time_arg_val(31) == 1;  // a user mask with every chunk
constexpr bool use_sink = get_compile_time_arg_val(32) == 1;
constexpr bool is_causal = get_compile_time_arg_val(33) == 1;  // else all positions up to cur_pos
// The root hands its merged partial (O unnormalised, m, l: the tree's partial) to the writer through cb_out instead of
// normalising it, for a later merge with another level's partial (shared-prefix decode: ttflashdecode/ops/shared_prefix).
constexpr bool emit_partial = get_compile_time_arg_val(34) == 1;
// The reduction tree's radix F (plan.merge_radix): a core merges up to F - 1 partials a round, in one pass.
constexpr uint32_t merge_radix = get_compile_time_arg_val(35);
// A merge's row statistics side by side (merge_row_factors) when the planner gave the one-hot tiles (plan/cbs.py
// merge_select_tiles: 2 R - 1 of them for merges of up to R partials with ours; 0: one max and one exp a partial).
constexpr uint32_t cb_merge_select = get_compile_time_arg_val(36);
constexpr uint32_t cb_merge_rows = get_compile_time_arg_val(37);
constexpr uint32_t merge_select_tiles = get_compile_time_arg_val(38);
constexpr uint32_t select_radix = (merge_select_tiles + 1) / 2;
// The placing and extracting matmuls carry a max or a factor on SrcB times 1.0 on SrcA, exact only when the fidelity
// phases take SrcB's low mantissa bits too (HiFi3, HiFi4); LoFi and HiFi2 keep one exp a partial.
constexpr bool merge_side_by_side = merge_select_tiles > 0 && static_cast<uint32_t>(MATH_FIDELITY) >= 3;
// Head-dim tiling (FFPA's split-D): K arrives one position tile at a time in blocks of k_head_block head-dim
// tiles, V one column block of v_head_block tiles of the whole chunk at a time (see the reader).
constexpr uint32_t k_head_block = get_compile_time_arg_val(39);
constexpr uint32_t v_head_block = get_compile_time_arg_val(40);
constexpr uint32_t k_blocks_per_row = DHt / k_head_block;
constexpr uint32_t v_blocks = vDHt / v_head_block;
static_assert(DHt % k_head_block == 0 && vDHt % v_head_block == 0, "head blocks must tile the head dims");
constexpr uint32_t k_chunk_size = Sk_t * TILE_HW;
constexpr uint32_t q_tiles = PNHt * DHt;
constexpr uint32_t o_tiles = PNHt * vDHt;
constexpr uint32_t s_tiles = PNHt * Sk_t;
constexpr uint32_t partial_tiles = o_tiles + 2 * PNHt;  // O, then m, then l
// A user mask may hold -inf (padding masks do): S = -inf + q.k, and a row of them makes exp(S - max) NaN. Scores at
// or below MASKED_SCORE are selected to MASKED_SCORE itself, the value the generated masks use, so every hidden
// score is the same finite number and a hidden position weighs exp(MASKED_SCORE - m) == 0 next to a visible one.
constexpr uint32_t masked_score_bits = __builtin_bit_cast(uint32_t, MASKED_SCORE);
// The root merges one extra (m, l) partial: the attention sinks, or with a user mask the score floor.
constexpr bool merge_sink_partial = use_sink || use_attn_mask;
// Where a user mask joins the scores. Preloaded in DST, the matmul accumulates every q.k partial sum on top of it, and
// a bfloat16 DST rounds each of those sums at the mask's magnitude: with a finite mask of the scores' own size the
// error was 2-3x upstream's (docs/PRECISION.md). With a bfloat16 DST the mask is therefore added to the packed scores
// after the matmul, one rounding per score, as upstream's add_block_inplace adds it; an fp32 DST keeps the partial
// sums to fp32 and takes the preload (the round trip would unpack the scores to SrcA's 19 bits). The generated causal
// masks hold 0 or MASKED_SCORE, so they are always preloaded.
constexpr bool mask_after_matmul = use_attn_mask && !DST_ACCUM_MODE;

// ---- the exp, two ways (exp_approx).
// Exact (exp_approx 0): Q is scaled once per group (cb_q_scaled), so S, m and every exp argument are in softmax
// units, and every exp is exp_tile's accurate one with its negative clamp.
// Approximate (exp_approx 1) computes as upstream's sdpa_decode does (compute_common.hpp:
// sub_exp_block_bcast_cols_inplace, sub_exp_block): P = exp((S - m) * scale) with the scale fused into the
// approximate exp's multiplier (exp_tile_init<true, scale, InputClamping::None>: one MAD, round, shift a datum, no
// clamp), whose outputs for arguments below about -88 come out negative and are cleared by the packer's ReLU; the
// row factors exp((m_a - m_b) * scale) (rescale and merge) take the accurate exp with the bfloat16 scale, as
// upstream's first-column exp does in either mode. So Q is not scaled and S and m stay in q.k units. With a user mask
// or attention sinks, whose values are in softmax units (a mask adds to the scaled scores), Q is scaled as in the
// exact path and the same approximate exp runs with multiplier 1.
constexpr bool scale_in_exp = exp_approx && !use_attn_mask && !use_sink;
constexpr uint32_t cb_q_mm = scale_in_exp ? cb_q : cb_q_scaled;  // the matmul's in0: Q, scaled or not
constexpr uint32_t ONE_FP32_BITS = 0x3F800000;
constexpr uint32_t probs_exp_scale_bits = scale_in_exp ? scale_bits : ONE_FP32_BITS;
constexpr uint16_t factor_exp_scale_bf16 = scale_bits >> 16;  // upstream's scale_bf16: the top half of scale_fp32
// The approximate exp over a 16-row tile's two faces (VectorMode::R, 8 rows of lanes a face), or over a whole tile in
// one 32-iteration pass (VectorMode::None), as upstream runs it.
constexpr VectorMode probs_exp_mode = q_tile_rows == FACE_HW ? VectorMode::R : VectorMode::None;
constexpr int probs_exp_iterations = q_tile_rows == FACE_HW ? 8 : 32;

// ---- DST blocking
constexpr uint32_t dst_tiles = DST_ACCUM_MODE ? 4 : 8;  // one half of DST (half-sync), fp32 or 16-bit
constexpr uint32_t largest_divisor_at_most(uint32_t n, uint32_t cap) {
    for (uint32_t d = n < cap ? n : cap; d > 1; --d) {
        if (n % d == 0) {
            return d;
        }
    }
    return 1;
}
constexpr uint32_t probs_block = largest_divisor_at_most(Sk_t, dst_tiles);     // P tiles per acquire
constexpr uint32_t scores_block = largest_divisor_at_most(Sk_t, dst_tiles);    // score tiles per acquire (QK)
constexpr uint32_t o_block = largest_divisor_at_most(v_head_block, dst_tiles);  // O tiles per acquire (P . V)
// The row max as upstream takes it: reduce_block_max_row over a row's Sk_t score tiles at once, seeded with the running
// max copied into DST (transposed within faces, the block reduce's accumulator layout). That LLK takes bfloat16
// operands only; with fp32 accumulation the scores are float32 (plan/cbs.py), and the max is reduce_tile per tile,
// then an SFPU max with the running one.
constexpr bool block_row_max = !DST_ACCUM_MODE;
constexpr uint32_t q_faces = q_tile_rows == FACE_HW ? 2 : 4;

// Selects hidden scores in DST tile `dst` (user masks only; the generated masks are finite already).
void select_hidden_scores(uint32_t dst) {
    if constexpr (use_attn_mask) {
        threshold_tile_init();
        threshold_tile(dst, masked_score_bits, masked_score_bits);
    }
}

// ---- one-tile building blocks: DST slot 0 holds the result, which is packed to the back of `out`.
void pack_result(uint32_t out) {
    tile_regs_commit();
    tile_regs_wait();
    pack_tile(0, out);
    tile_regs_release();
}

void configure(uint32_t in0, uint32_t in1, uint32_t out) {
    reconfig_data_format(in0, in1);
    pack_reconfig_data_format(out);
}

// P's exp on DST tile `dst` (see "the exp, two ways"); probs_exp_init() programs it once for a run of tiles.
void probs_exp_init() {
    if constexpr (exp_approx) {
        exp_tile_init<true, probs_exp_scale_bits, InputClamping::None>();
    } else {
        exp_tile_init<false>();
    }
}

void probs_exp(uint32_t dst) {
    if constexpr (exp_approx) {
        exp_tile<true, false, InputClamping::None, probs_exp_iterations>(dst, probs_exp_mode);
    } else {
        exp_tile<false>(dst, row_vector_mode);
    }
}

// A row factor exp((m_a - m_b) [* scale]) on column 0 of DST tile `dst`: always the accurate exp, programmed by
// factor_exp_init() for a run of factors.
void factor_exp_init() { exp_tile_init<false>(); }

void factor_exp(uint32_t dst) {
    if constexpr (scale_in_exp) {
        exp_tile<false, true>(dst, col0_vector_mode, factor_exp_scale_bf16);
    } else {
        exp_tile<false>(dst, col0_vector_mode);
    }
}

// out[i] = in[i] * (scalar in tile 0 of `scalar_cb`), i < n
void scale_tiles(uint32_t in, uint32_t scalar_cb, uint32_t out, uint32_t n) {
    configure(in, scalar_cb, out);
    mul_bcast_scalar_init(in, scalar_cb);
    CircularBuffer(out).reserve_back(n);
    for (uint32_t i = 0; i < n; ++i) {
        tile_regs_acquire();
        mul_tiles_bcast_scalar(in, scalar_cb, i, 0, 0);
        pack_result(out);
    }
    CircularBuffer(out).push_back(n);
}

// scores = [mask +] q . k^T for one chunk. K comes one position tile j at a time, as k_blocks_per_row blocks of
// k_head_block head-dim tiles; score tile (r, j) lands at r * Sk_t + j of cb_scores (packed out of order).
void chunk_scores(bool masked) {
    masked = masked && !mask_after_matmul;  // that mask comes in add_user_mask
    if (masked) {
        CircularBuffer(cb_mask).wait_front(s_tiles);
    }
    CircularBuffer(cb_scores).reserve_back(s_tiles);
    for (uint32_t j = 0; j < Sk_t; ++j) {
        if constexpr (k_blocks_per_row == 1) {
            // Whole K rows: the reader pushes the chunk's K as one block (reader_flash_decode.cpp), tile (j, d) at
            // j * DHt + d. scores_block score tiles of a row per DST section: one init and one DST hand-off to the
            // packer serve them all.
            if (j % scores_block != 0) {
                continue;
            }
            if (j == 0) {
                CircularBuffer(cb_k).wait_front(Sk_t * DHt);
            }
            for (uint32_t r = 0; r < PNHt; ++r) {
                tile_regs_acquire();
                if (masked) {
                    reconfig_data_format_srca(cb_mask);
                    pack_reconfig_data_format(cb_scores);
                    copy_init(cb_mask);
                    for (uint32_t jj = 0; jj < scores_block; ++jj) {
                        copy_tile(cb_mask, r * Sk_t + j + jj, jj);
                    }
                }
                configure(cb_k, cb_q_mm, cb_scores);  // matmul unpacks in1 to SrcA, in0 to SrcB
                matmul_init(cb_q_mm, cb_k, /*transpose=*/1);
                for (uint32_t jj = 0; jj < scores_block; ++jj) {
                    for (uint32_t d = 0; d < DHt; ++d) {
                        matmul_tiles(cb_q_mm, cb_k, r * DHt + d, (j + jj) * DHt + d, jj);
                    }
                }
                if (masked) {
                    for (uint32_t jj = 0; jj < scores_block; ++jj) {
                        select_hidden_scores(jj);
                    }
                }
                tile_regs_commit();
                tile_regs_wait();
                for (uint32_t jj = 0; jj < scores_block; ++jj) {
                    pack_tile<true>(jj, cb_scores, r * Sk_t + j + jj);
                }
                tile_regs_release();
            }
            if (j + scores_block == Sk_t) {
                CircularBuffer(cb_k).pop_front(Sk_t * DHt);
            }
        } else {
            // Narrow K blocks: the PNHt score tiles of position tile j stay in DST (the planner keeps PNHt within
            // DST's capacity) while the blocks of the row stream through.
            tile_regs_acquire();
            if (masked) {
                reconfig_data_format_srca(cb_mask);
                pack_reconfig_data_format(cb_scores);
                copy_init(cb_mask);
                for (uint32_t r = 0; r < PNHt; ++r) {
                    copy_tile(cb_mask, r * Sk_t + j, r);
                }
            }
            configure(cb_k, cb_q_mm, cb_scores);
            matmul_init(cb_q_mm, cb_k, /*transpose=*/1);
            for (uint32_t block = 0; block < k_blocks_per_row; ++block) {
                CircularBuffer(cb_k).wait_front(k_head_block);
                for (uint32_t r = 0; r < PNHt; ++r) {
                    for (uint32_t d = 0; d < k_head_block; ++d) {
                        matmul_tiles(cb_q_mm, cb_k, r * DHt + block * k_head_block + d, d, r);
                    }
                }
                CircularBuffer(cb_k).pop_front(k_head_block);
            }
            if (masked) {
                for (uint32_t r = 0; r < PNHt; ++r) {
                    select_hidden_scores(r);
                }
            }
            tile_regs_commit();
            tile_regs_wait();
            for (uint32_t r = 0; r < PNHt; ++r) {
                pack_tile<true>(r, cb_scores, r * Sk_t + j);
            }
            tile_regs_release();
        }
    }
    CircularBuffer(cb_scores).push_back(s_tiles);
    if (masked) {
        CircularBuffer(cb_mask).pop_front(s_tiles);
    }
}

// S += the user mask, after the matmul (mask_after_matmul): each score tile taken from the front of cb_scores, the
// mask's tile added, hidden scores selected, and the sum packed to the back, s_tiles times (upstream's
// add_block_inplace), so cb_scores ends in its own order.
void add_user_mask() {
    CircularBuffer(cb_scores).wait_front(s_tiles);
    CircularBuffer(cb_mask).wait_front(s_tiles);
    configure(cb_scores, cb_mask, cb_scores);
    for (uint32_t i = 0; i < s_tiles; ++i) {
        tile_regs_acquire();
        add_init(cb_scores, cb_mask);  // again each tile: the hidden scores' select reprograms the math thread
        add_tiles(cb_scores, cb_mask, 0, i, 0);
        select_hidden_scores(0);
        tile_regs_commit();
        CircularBuffer(cb_scores).pop_front(1);
        CircularBuffer(cb_scores).reserve_back(1);
        tile_regs_wait();
        pack_tile(0, cb_scores);
        tile_regs_release();
        CircularBuffer(cb_scores).push_back(1);
    }
    CircularBuffer(cb_mask).pop_front(s_tiles);
}

// out[r] = reduce over the Sk_t tiles of row block r of `in` (column 0 of each row holds the result)
template <PoolType pool>
void row_reduce(uint32_t in, uint32_t out) {
    if constexpr (pool == PoolType::MAX) {
        configure(in, cb_ones, out);
    } else {
        configure(cb_ones, in, out);  // REDUCE_ROW SUM runs as a matmul with the scaler in SrcA
    }
    reduce_init<pool, ReduceDim::REDUCE_ROW>(in, cb_ones, out);
    CircularBuffer(in).wait_front(s_tiles);
    CircularBuffer(out).reserve_back(PNHt);
    for (uint32_t r = 0; r < PNHt; ++r) {
        tile_regs_acquire();
        for (uint32_t j = 0; j < Sk_t; ++j) {
            reduce_tile<pool, ReduceDim::REDUCE_ROW>(in, cb_ones, r * Sk_t + j, 0, 0);
        }
        pack_result(out);
    }
    CircularBuffer(out).push_back(PNHt);
    reduce_uninit();
}

// Pushes PNHt tiles max(a[a_first + r], b[b_first + r]) to cb_max_next.
void push_max(uint32_t a, uint32_t a_first, uint32_t b, uint32_t b_first) {
    CircularBuffer(a).wait_front(a_first + PNHt);
    CircularBuffer(b).wait_front(b_first + PNHt);
    CircularBuffer(cb_max_next).reserve_back(PNHt);
    for (uint32_t r = 0; r < PNHt; ++r) {
        tile_regs_acquire();
        reconfig_data_format_srca(a);
        pack_reconfig_data_format(cb_max_next);
        copy_init(a);
        copy_tile(a, a_first + r, 0);
        reconfig_data_format_srca(b);
        copy_init(b);
        copy_tile(b, b_first + r, 1);
        binary_max_tile_init();
        binary_max_tile(0, 1, 0, col0_vector_mode);
        pack_result(cb_max_next);
    }
    CircularBuffer(cb_max_next).push_back(PNHt);
}

// Pushes PNHt tiles max([m_cur,] rowmax(S)) to `out`: the running max is the reduce's seed unless `first`.
// `to_partial`: the new max also goes to its place in the partial this core sends (pack_new_max).
void push_row_max(bool first, uint32_t out, bool to_partial) {
    CircularBuffer(cb_scores).wait_front(s_tiles);
    CircularBuffer(out).reserve_back(PNHt);
    for (uint32_t r = 0; r < PNHt; ++r) {
        tile_regs_acquire();
        // cb_m and cb_scores share the intermediates' format (plan/cbs.py): one SrcA configuration serves the copy of
        // the running max and the reduce
        reconfig_data_format(cb_scores, cb_ones);
        pack_reconfig_data_format(out);
        if (!first) {
            copy_init(cb_max_cur, /*transpose=*/0, /*transpose_within_16x16_face=*/1);
            copy_tile(cb_max_cur, r, 0);
        }
        reduce_block_max_row_init<Sk_t, false, q_faces>(out);
        reduce_block_max_row<Sk_t, false, q_faces>(cb_scores, cb_ones, r * Sk_t, 0);
        reduce_block_max_row_uninit(cb_scores);
        tile_regs_commit();
        tile_regs_wait();
        if (to_partial) {
            pack_tile<true>(0, cb_partial_out, o_tiles + r);  // cb_partial_out has cb_m's format: no reconfiguration
        }
        pack_tile(0, out);
        tile_regs_release();
    }
    CircularBuffer(out).push_back(PNHt);
}

// The new max becomes the running max: drops the old one and swaps the roles of the two CBs.
void advance_max() {
    CircularBuffer(cb_max_cur).pop_front(PNHt);
    const uint32_t old = cb_max_cur;
    cb_max_cur = cb_max_next;
    cb_max_next = old;
    CircularBuffer(cb_max_cur).wait_front(PNHt);
}

// Pushes PNHt tiles exp(in[in_first + r] - m_new[r]) to cb_alpha, m_new being the block in cb_max_next.
void push_rescale(uint32_t in, uint32_t in_first) {
    CircularBuffer(in).wait_front(in_first + PNHt);
    CircularBuffer(cb_max_next).wait_front(PNHt);
    configure(in, cb_max_next, cb_alpha);
    CircularBuffer(cb_alpha).reserve_back(PNHt);
    for (uint32_t r = 0; r < PNHt; ++r) {
        tile_regs_acquire();
        sub_init(in, cb_max_next);
        sub_tiles(in, cb_max_next, in_first + r, r, 0);
        factor_exp_init();
        factor_exp(0);
        pack_result(cb_alpha);
    }
    CircularBuffer(cb_alpha).push_back(PNHt);
}

// DST tile 0 = l[r] * alpha[alpha_index] (bcast cols): the running sum rescaled in a chunk. The unpacker and packer are
// on the intermediates' format already (push_rescale's configuration; cb_l and cb_alpha share it, plan/cbs.py).
void rescaled_l_in_dst(uint32_t r, uint32_t alpha_index) {
    mul_bcast_cols_init(cb_l, cb_alpha);
    mul_tiles_bcast_cols(cb_l, cb_alpha, r, alpha_index, 0);
}

// probs = exp((scores - m) [* scale]), m being the running max (already updated with this chunk), and a new l behind
// the old one: [l * alpha (bcast cols, alpha the front block of cb_alpha) +] sum_j P_j. Each DST block of P is packed
// twice: to cb_probs, and (packer L1 accumulation) onto row r's l tile, which a first chunk's first P tile starts.
// `to_partial`: the new l goes to its place in the partial this core sends (tiles o_tiles + PNHt.. of cb_partial_out,
// reserved by the caller) instead of cb_l.
void chunk_probs_and_sum(bool first, bool to_partial) {
    const uint32_t l_cb = to_partial ? cb_partial_out : cb_l;
    const uint32_t l_first = to_partial ? o_tiles + PNHt : 0;
    CircularBuffer(cb_scores).wait_front(s_tiles);
    CircularBuffer(cb_max_cur).wait_front(PNHt);
    if (!first) {
        CircularBuffer(cb_l).wait_front(PNHt);
        CircularBuffer(cb_alpha).wait_front(PNHt);
    }
    CircularBuffer(cb_probs).reserve_back(s_tiles);
    if (!to_partial) {
        CircularBuffer(cb_l).reserve_back(PNHt);
    }
    // S, m, P and l share the intermediates' format (plan/cbs.py). A later chunk follows push_rescale, which left the
    // unpacker and packer on it; a first chunk follows the row max, whose SrcB held the reduce scaler.
    if (first) {
        configure(cb_scores, cb_max_cur, cb_probs);
    }
    for (uint32_t r = 0; r < PNHt; ++r) {
        if (!first) {
            tile_regs_acquire();
            rescaled_l_in_dst(r, r);
            tile_regs_commit();
            tile_regs_wait();
            pack_tile<true>(0, l_cb, l_first + r);
            tile_regs_release();
        }
        sub_bcast_cols_init(cb_scores, cb_max_cur);
        probs_exp_init();
        if constexpr (exp_approx) {
            pack_relu_config(ReluConfig::zero());  // the unclamped approximate exp's negative outputs are exp(-inf) = 0
        }
        for (uint32_t j0 = 0; j0 < Sk_t; j0 += probs_block) {
            tile_regs_acquire();
            for (uint32_t jj = 0; jj < probs_block; ++jj) {
                sub_tiles_bcast_cols(cb_scores, cb_max_cur, r * Sk_t + j0 + jj, r, jj);
                probs_exp(jj);
            }
            tile_regs_commit();
            tile_regs_wait();
            for (uint32_t jj = 0; jj < probs_block; ++jj) {
                pack_tile<true>(jj, cb_probs, r * Sk_t + j0 + jj);
            }
            uint32_t jj = 0;
            if (first && j0 == 0) {
                pack_tile<true>(0, l_cb, l_first + r);  // starts the row's sum
                jj = 1;
            }
            pack_reconfig_l1_acc(1);
            for (; jj < probs_block; ++jj) {
                pack_tile<true>(jj, l_cb, l_first + r);
            }
            pack_reconfig_l1_acc(0);
            tile_regs_release();
        }
        if constexpr (exp_approx) {
            pack_relu_config(ReluConfig::none());
        }
    }
    CircularBuffer(cb_probs).push_back(s_tiles);
    if (!to_partial) {
        CircularBuffer(cb_l).push_back(PNHt);
    }
    if (!first) {
        CircularBuffer(cb_l).pop_front(PNHt);
    }
    if (!to_partial) {
        CircularBuffer(cb_l).wait_front(PNHt);
    }
}

// Pushes the PNHt x tiles_per_row block at in[in_first..] to `out`, row block r scaled by the column vector in
// column 0 of col[r] (a per-row factor: exp(m_i - m_new) when merging, 1/l when normalising).
void push_rows_scaled(uint32_t in, uint32_t in_first, uint32_t tiles_per_row, uint32_t col, uint32_t out) {
    configure(in, col, out);
    mul_bcast_cols_init(in, col);
    CircularBuffer(out).reserve_back(PNHt * tiles_per_row);
    for (uint32_t r = 0; r < PNHt; ++r) {
        for (uint32_t c = 0; c < tiles_per_row; ++c) {
            tile_regs_acquire();
            mul_tiles_bcast_cols(in, col, in_first + r * tiles_per_row + c, r, 0);
            pack_result(out);
        }
    }
    CircularBuffer(out).push_back(PNHt * tiles_per_row);
}

// Packs DST tile 0, the new row max of row tile r, to the back of cb_max_next and, when `to_partial`, to its place in the
// partial this core sends (cb_partial_out, the same format: no reconfiguration).
void pack_new_max(uint32_t r, bool to_partial) {
    tile_regs_commit();
    tile_regs_wait();
    if (to_partial) {
        pack_tile<true>(0, cb_partial_out, o_tiles + r);
    }
    pack_tile(0, cb_max_next);
    tile_regs_release();
}

// Copies tiles in[0..n) to out[out_first..), `out` reserved by the caller (no push, no pop).
void copy_tiles_to(uint32_t in, uint32_t n, uint32_t out, uint32_t out_first) {
    CircularBuffer(in).wait_front(n);
    reconfig_data_format_srca(in);
    pack_reconfig_data_format(out);
    copy_init(in);
    for (uint32_t i = 0; i < n; ++i) {
        tile_regs_acquire();
        copy_tile(in, i, 0);
        tile_regs_commit();
        tile_regs_wait();
        pack_tile<true>(0, out, out_first + i);
        tile_regs_release();
    }
}

// Moves n tiles from the front of `in` to the back of `out`.
void move_tiles(uint32_t in, uint32_t out, uint32_t n) {
    CircularBuffer(in).wait_front(n);
    reconfig_data_format_srca(in);
    pack_reconfig_data_format(out);
    copy_init(in);
    CircularBuffer(out).reserve_back(n);
    for (uint32_t i = 0; i < n; ++i) {
        tile_regs_acquire();
        copy_tile(in, i, 0);
        pack_result(out);
    }
    CircularBuffer(out).push_back(n);
    CircularBuffer(in).pop_front(n);
}

// Flash attention over one chunk. `first` is this core's first chunk of the group: no running state yet.
// `to_partial`: the chunk is the last of a core that sends its partial without merging any (a leaf of the tree): the
// new O, m and l are packed straight to their places in cb_partial_out ([O, m, l], pushed whole), so what follows the
// last read is the chunk's P . V alone, not P . V and then a copy of the partial through DST. m is copied as soon as it
// is known, while V is still arriving. The running state is consumed: cb_max_cur is left for the caller to pop.
void process_chunk(bool first, bool masked, bool to_partial) {
    if (to_partial) {
        CircularBuffer(cb_partial_out).reserve_back(partial_tiles);
    }
    chunk_scores(masked);
    if constexpr (mask_after_matmul) {
        add_user_mask();
    }

    // m_new = max(m, rowmax(S)) (into cb_max_cur on a first chunk), then alpha = exp(m - m_new)
    if constexpr (block_row_max) {
        push_row_max(first, first ? cb_max_cur : cb_max_next, to_partial);
    } else {
        row_reduce<PoolType::MAX>(cb_scores, cb_row_stat);
        if (first) {
            move_tiles(cb_row_stat, cb_max_cur, PNHt);
        } else {
            push_max(cb_max_cur, 0, cb_row_stat, 0);
            CircularBuffer(cb_row_stat).pop_front(PNHt);
        }
    }
    if (!first) {
        push_rescale(cb_max_cur, 0);
        advance_max();
    }
    CircularBuffer(cb_max_cur).wait_front(PNHt);
    if constexpr (!block_row_max) {
        if (to_partial) {
            copy_tiles_to(cb_max_cur, PNHt, cb_partial_out, o_tiles);
        }
    }

    chunk_probs_and_sum(first, to_partial);
    CircularBuffer(cb_scores).pop_front(s_tiles);
    CircularBuffer(cb_probs).wait_front(s_tiles);

    // O = O * alpha + P . V, one V column block ([Sk_t x v_head_block] tiles) at a time, o_block output tiles of a row
    // per DST section: one matmul_block per position tile unpacks P's tile once for all of them. O tile (r, c) lands
    // at r * vDHt + c of cb_o (packed out of order when there are several blocks).
    if (!first) {
        CircularBuffer(cb_alpha).wait_front(PNHt);
    }
    const uint32_t o_out = to_partial ? cb_partial_out : cb_o;  // O's first tile is the partial's first
    if (!to_partial) {
        CircularBuffer(cb_o).reserve_back(o_tiles);
    }
    // V arrives in v_fetch_parts(Sk_t) pushes (flash_decode_common.hpp): the first DST section waits for each part
    // just before its first position tile, so the matmuls of the parts that landed run while the rest arrive.
    constexpr uint32_t v_part_tiles = Sk_t / v_fetch_parts(Sk_t);
    for (uint32_t block = 0; block < v_blocks; ++block) {
        for (uint32_t r = 0; r < PNHt; ++r) {
            for (uint32_t c0 = 0; c0 < v_head_block; c0 += o_block) {
                const uint32_t c = block * v_head_block + c0;
                tile_regs_acquire();
                if (!first) {
                    // the first section follows the softmax, which left every operand on the intermediates' format
                    if (block != 0 || r != 0 || c0 != 0) {
                        configure(cb_o, cb_alpha, cb_o);
                    }
                    mul_bcast_cols_init(cb_o, cb_alpha);
                    for (uint32_t cc = 0; cc < o_block; ++cc) {
                        mul_tiles_bcast_cols(cb_o, cb_alpha, r * vDHt + c + cc, r, cc);
                    }
                }
                configure(cb_v, cb_probs, cb_o);  // matmul unpacks in1 to SrcA, in0 to SrcB
                matmul_block_init(cb_probs, cb_v, /*transpose=*/0, o_block, /*rt_dim=*/1, Sk_t);
                for (uint32_t j = 0; j < Sk_t; ++j) {
                    if (r == 0 && c0 == 0 && j % v_part_tiles == 0) {
                        CircularBuffer(cb_v).wait_front((j + v_part_tiles) * v_head_block);
                    }
                    matmul_block(cb_probs, cb_v, r * Sk_t + j, j * v_head_block + c0, 0, /*transpose=*/0, o_block,
                                 /*rt_dim=*/1, Sk_t);
                }
                tile_regs_commit();
                tile_regs_wait();
                for (uint32_t cc = 0; cc < o_block; ++cc) {
                    pack_tile<true>(cc, o_out, r * vDHt + c + cc);
                }
                tile_regs_release();
            }
        }
        CircularBuffer(cb_v).pop_front(Sk_t * v_head_block);
    }
    if (to_partial) {
        CircularBuffer(cb_partial_out).push_back(partial_tiles);
    } else {
        CircularBuffer(cb_o).push_back(o_tiles);
    }
    CircularBuffer(cb_probs).pop_front(s_tiles);
    if (!first) {
        CircularBuffer(cb_o).pop_front(o_tiles);
        CircularBuffer(cb_alpha).pop_front(PNHt);
    }
}

// A merge's m_next and row factors with one exp for all of them (merge_side_by_side): its maxima side by side in one
// tile M (column 0 and the columns past `count`: ours; column k: partial k's), placed by matmuls with the one-hot
// tiles of cb_merge_select (m_k . P_k copies m_k's column 0 to column k: exact, every other product is 0); m_next =
// the row max of M; F = exp(M - m_next) over the face columns that hold the count + 1 <= 16 of them, one SFPU pass
// (a per-partial exp costs that pass for each); factor k = F . P_k^T, column k of F moved to column 0, packed where
// merge_partials' muls read it (tile k * PNHt + r of cb_merge_factors).
void merge_row_factors(uint32_t in, uint32_t count, uint32_t m_in, uint32_t stride, bool to_partial, bool after_merge) {
    CircularBuffer(cb_merge_rows).reserve_back(2 * PNHt);
    for (uint32_t r = 0; r < PNHt; ++r) {  // M
        tile_regs_acquire();
        // Every operand of a side-by-side merge is bfloat16 (16-bit intermediates, the bfloat16 select and ones
        // tiles: plan/cbs.py, merge_select_tiles), so past its first configuration a merge reprograms only SrcA, and
        // only where it moves between the full select tiles and the query-row tiles; after another such merge
        // (`after_merge`) SrcB and the packer hold already.
        if (after_merge) {
            reconfig_data_format_srca(cb_merge_select);
        } else {
            configure(cb_merge_select, cb_max_cur, cb_merge_rows);  // matmul unpacks in1 to SrcA, in0 to SrcB
        }
        matmul_init(cb_max_cur, cb_merge_select);
        matmul_tiles(cb_max_cur, cb_merge_select, r, select_radix - 1 + count, 0);  // T_count: ours, and the tail
        for (uint32_t k = 1; k <= count; ++k) {
            matmul_tiles(in, cb_merge_select, (k - 1) * stride + m_in + r, k, 0);
        }
        tile_regs_commit();
        tile_regs_wait();
        pack_tile<true>(0, cb_merge_rows, r);
        tile_regs_release();
    }
    CircularBuffer(cb_merge_rows).push_back(PNHt);
    CircularBuffer(cb_merge_rows).wait_front(PNHt);
    CircularBuffer(cb_max_next).reserve_back(PNHt);
    reconfig_data_format_srca(cb_merge_rows);  // SrcB: cb_ones is a bfloat16 query-row tile as cb_m
    reduce_block_max_row_init<1, false, q_faces>(cb_max_next);
    for (uint32_t r = 0; r < PNHt; ++r) {  // m_next = rowmax(M)
        tile_regs_acquire();
        reduce_block_max_row<1, false, q_faces>(cb_merge_rows, cb_ones, r, 0);
        pack_new_max(r, to_partial);
    }
    reduce_block_max_row_uninit(cb_merge_rows);
    CircularBuffer(cb_max_next).push_back(PNHt);
    CircularBuffer(cb_max_next).wait_front(PNHt);
    for (uint32_t r = 0; r < PNHt; ++r) {  // F = exp(M - m_next)
        tile_regs_acquire();
        sub_bcast_cols_init(cb_merge_rows, cb_max_next);
        sub_tiles_bcast_cols(cb_merge_rows, cb_max_next, r, r, 0);
        factor_exp_init();
        factor_exp(0);
        tile_regs_commit();
        tile_regs_wait();
        pack_tile<true>(0, cb_merge_rows, r);  // behind M: the write pointer moved past it
        tile_regs_release();
    }
    CircularBuffer(cb_merge_rows).push_back(PNHt);
    CircularBuffer(cb_merge_rows).wait_front(2 * PNHt);  // F sits past M: the block is popped whole (CB rule 1)
    constexpr uint32_t factor_tiles = merge_radix * PNHt;
    CircularBuffer(cb_merge_factors).reserve_back(factor_tiles);
    reconfig_data_format_srca(cb_merge_select);
    // factor k = F . P_k^T: the P_k are consecutive tiles of cb_merge_select, so one block product per DST section
    // unpacks F once for all of its factors (one init per block width)
    for (uint32_t k0 = 0; k0 <= count; k0 += dst_tiles) {
        const uint32_t k_end = k0 + dst_tiles < count + 1 ? k0 + dst_tiles : count + 1;
        matmul_block_init(cb_merge_rows, cb_merge_select, /*transpose=*/1, k_end - k0, /*rt_dim=*/1, /*kt_dim=*/1);
        for (uint32_t r = 0; r < PNHt; ++r) {
            tile_regs_acquire();
            matmul_block(cb_merge_rows, cb_merge_select, PNHt + r, k0, 0, /*transpose=*/1, k_end - k0, /*rt_dim=*/1,
                         /*kt_dim=*/1);
            tile_regs_commit();
            tile_regs_wait();
            for (uint32_t k = k0; k < k_end; ++k) {
                pack_tile<true>(k - k0, cb_merge_factors, k * PNHt + r);
            }
            tile_regs_release();
        }
    }
    CircularBuffer(cb_merge_rows).pop_front(2 * PNHt);
    CircularBuffer(cb_merge_factors).push_back(factor_tiles);
    CircularBuffer(cb_merge_factors).wait_front(factor_tiles);
    advance_max();
}

// Merges `count` partials (O_i, m_i, l_i) from the front of `in` into the running (O, m, l) in one pass: the round's
// children, consecutive slots of cb_partial_in ([O_i, m_i, l_i] each), or the attention sinks (cb_sink: [m_i, l_i],
// O_i = 0, count 1).
//   m_new = max(m, m_1, ..., m_count)                      (merge_row_factors, or one SFPU max chain per query-row
//   cb_merge_factors = [a = exp(m - m_new), a_1 = exp(m_1 - m_new), ...]  tile and an exp per factor; PNHt tiles each)
//   O = O * a + sum_i O_i * a_i,  l = l * a + sum_i l_i * a_i
// O and l are one row of vDHt + 1 tiles scaled by the same row factors, so each DST section takes a block of that row:
// ours times a, packed in place, then each partial's times a_i, accumulated onto it by the packer (L1 accumulation,
// as l's sums in a chunk). Merging a round's partials together (rather than one merge each) takes one exp per
// partial instead of two and one set of inits and format reconfigurations per round.
// `to_partial`: the round is the last of a core that then sends its partial: the merged O, m and l are packed straight
// to their places in cb_partial_out ([O, m, l], pushed whole) instead of the running state's CBs, as process_chunk's
// last chunk on a leaf; cb_max_cur is left for the caller to pop.
void merge_partials(uint32_t in, uint32_t count, bool has_o, bool to_partial, bool after_merge) {
    const uint32_t m_in = has_o ? o_tiles : 0;
    const uint32_t l_in = m_in + PNHt;
    const uint32_t stride = l_in + PNHt;  // one partial's tiles
    // The factors CB is read past its front block, so it is always pushed and popped whole (CB rule 1).
    constexpr uint32_t factor_tiles = merge_radix * PNHt;
    CircularBuffer(in).wait_front(count * stride);
    CircularBuffer(cb_max_cur).wait_front(PNHt);
    if (to_partial) {
        CircularBuffer(cb_partial_out).reserve_back(partial_tiles);
    }
    if constexpr (merge_side_by_side) {
        merge_row_factors(in, count, m_in, stride, to_partial, after_merge);
    } else {
        CircularBuffer(cb_max_next).reserve_back(PNHt);
        for (uint32_t r = 0; r < PNHt; ++r) {  // m_next = max(m, m_1, ..., m_count)
            tile_regs_acquire();
            reconfig_data_format_srca(cb_max_cur);
            pack_reconfig_data_format(cb_max_next);
            copy_init(cb_max_cur);
            copy_tile(cb_max_cur, r, 0);
            reconfig_data_format_srca(in);
            copy_init(in);
            binary_max_tile_init();  // programs the SFPU only: the copies' unpack and math stay as copy_init set them
            for (uint32_t i = 0; i < count; ++i) {
                copy_tile(in, i * stride + m_in + r, 1);
                binary_max_tile(0, 1, 0, col0_vector_mode);
            }
            pack_new_max(r, to_partial);
        }
        CircularBuffer(cb_max_next).push_back(PNHt);
        CircularBuffer(cb_max_next).wait_front(PNHt);
        CircularBuffer(cb_merge_factors).reserve_back(factor_tiles);
        for (uint32_t r = 0; r < PNHt; ++r) {
            // factor k of row r (k = 0: ours) in DST slot k % dst_tiles, packed to factor tile k * PNHt + r
            for (uint32_t k0 = 0; k0 <= count; k0 += dst_tiles) {
                const uint32_t k_end = k0 + dst_tiles < count + 1 ? k0 + dst_tiles : count + 1;
                tile_regs_acquire();
                // m_k - m_new: ours from cb_max_cur, the partials' from `in` (one init per source)
                for (uint32_t k = k0; k < k_end; ++k) {
                    const uint32_t src = k == 0 ? cb_max_cur : in;
                    if (k == k0 || k == 1) {
                        configure(src, cb_max_next, cb_merge_factors);
                        sub_init(src, cb_max_next);
                    }
                    sub_tiles(src, cb_max_next, k == 0 ? r : (k - 1) * stride + m_in + r, r, k - k0);
                }
                factor_exp_init();
                for (uint32_t k = k0; k < k_end; ++k) {
                    factor_exp(k - k0);
                }
                tile_regs_commit();
                tile_regs_wait();
                for (uint32_t k = k0; k < k_end; ++k) {
                    pack_tile<true>(k - k0, cb_merge_factors, k * PNHt + r);
                }
                tile_regs_release();
            }
        }
        CircularBuffer(cb_merge_factors).push_back(factor_tiles);
        CircularBuffer(cb_merge_factors).wait_front(factor_tiles);
        advance_max();
    }

    // Tile j of row r: O's column j for j < vDHt, l for j == vDHt; a sinks partial has no O_i.
    constexpr uint32_t row_tiles = vDHt + 1;
    CircularBuffer(cb_o).wait_front(o_tiles);
    CircularBuffer(cb_l).wait_front(PNHt);
    if (!to_partial) {
        CircularBuffer(cb_o).reserve_back(o_tiles);
        CircularBuffer(cb_l).reserve_back(PNHt);
    }
    // where the merged O tile (r, j) and l tile r go
    const uint32_t o_out = to_partial ? cb_partial_out : cb_o;
    const uint32_t l_out = to_partial ? cb_partial_out : cb_l;
    const uint32_t l_out_first = to_partial ? o_tiles + PNHt : 0;
    if constexpr (merge_side_by_side) {
        reconfig_data_format_srca(cb_o);  // from the select tiles; SrcB and the packer hold (merge_row_factors)
    } else {
        configure(cb_o, cb_merge_factors, cb_o);  // cb_l has cb_o's format (plan/cbs.py): one unpack and pack config
    }
    mul_bcast_cols_init(cb_o, cb_merge_factors);
    for (uint32_t r = 0; r < PNHt; ++r) {
        for (uint32_t j0 = 0; j0 < row_tiles; j0 += dst_tiles) {
            const uint32_t j_end = j0 + dst_tiles < row_tiles ? j0 + dst_tiles : row_tiles;
            // ours: O * a, l * a, packed to the new block
            tile_regs_acquire();
            for (uint32_t j = j0; j < j_end; ++j) {
                if (j < vDHt) {
                    mul_tiles_bcast_cols(cb_o, cb_merge_factors, r * vDHt + j, r, j - j0);
                } else {
                    mul_tiles_bcast_cols(cb_l, cb_merge_factors, r, r, j - j0);
                }
            }
            tile_regs_commit();
            tile_regs_wait();
            for (uint32_t j = j0; j < j_end; ++j) {
                if (j < vDHt) {
                    pack_tile<true>(j - j0, o_out, r * vDHt + j);
                } else {
                    pack_tile<true>(j - j0, l_out, l_out_first + r);
                }
            }
            tile_regs_release();
            // each partial's: O_i * a_i, l_i * a_i, accumulated onto them
            reconfig_data_format_srca(cb_o, in);
            pack_reconfig_l1_acc(1);
            for (uint32_t i = 0; i < count; ++i) {
                const uint32_t at = i * stride;
                const uint32_t factor = (i + 1) * PNHt + r;
                tile_regs_acquire();
                for (uint32_t j = j0; j < j_end; ++j) {
                    if (j < vDHt) {
                        if (has_o) {
                            mul_tiles_bcast_cols(in, cb_merge_factors, at + r * vDHt + j, factor, j - j0);
                        }
                    } else {
                        mul_tiles_bcast_cols(in, cb_merge_factors, at + l_in + r, factor, j - j0);
                    }
                }
                tile_regs_commit();
                tile_regs_wait();
                for (uint32_t j = j0; j < j_end; ++j) {
                    if (j < vDHt) {
                        if (has_o) {
                            pack_tile<true>(j - j0, o_out, r * vDHt + j);
                        }
                    } else {
                        pack_tile<true>(j - j0, l_out, l_out_first + r);
                    }
                }
                tile_regs_release();
            }
            pack_reconfig_l1_acc(0);
            reconfig_data_format_srca(in, cb_o);
        }
    }
    if (to_partial) {
        CircularBuffer(cb_partial_out).push_back(partial_tiles);
    } else {
        CircularBuffer(cb_o).push_back(o_tiles);
        CircularBuffer(cb_l).push_back(PNHt);
    }
    CircularBuffer(cb_o).pop_front(o_tiles);
    CircularBuffer(cb_l).pop_front(PNHt);
    CircularBuffer(in).pop_front(count * stride);
    CircularBuffer(cb_merge_factors).pop_front(factor_tiles);
}

// out = O / l, consuming the running state.
// `after_merge`: a merge came last, so with side-by-side statistics every operand is bfloat16 already.
void write_normalised_output(bool after_merge) {
    CircularBuffer(cb_l).wait_front(PNHt);
    CircularBuffer(cb_o).wait_front(o_tiles);
    // 1/l into cb_row_stat: l's row sum (the one reduction of the unreduced l), then its reciprocal
    if (!(merge_side_by_side && after_merge)) {
        configure(cb_ones, cb_l, cb_row_stat);  // REDUCE_ROW SUM runs as a matmul with the scaler in SrcA
    }
    reduce_init<PoolType::SUM, ReduceDim::REDUCE_ROW>(cb_l, cb_ones, cb_row_stat);
    CircularBuffer(cb_row_stat).reserve_back(PNHt);
    for (uint32_t r = 0; r < PNHt; ++r) {
        tile_regs_acquire();
        reduce_tile<PoolType::SUM, ReduceDim::REDUCE_ROW>(cb_l, cb_ones, r, 0, 0);
        recip_tile_init();
        recip_tile(0, col0_vector_mode);
        pack_result(cb_row_stat);
    }
    reduce_uninit();
    CircularBuffer(cb_row_stat).push_back(PNHt);
    CircularBuffer(cb_row_stat).wait_front(PNHt);

    push_rows_scaled(cb_o, 0, vDHt, cb_row_stat, cb_out);
    CircularBuffer(cb_row_stat).pop_front(PNHt);
}

}  // namespace

void kernel_main() {
    // ---- common runtime args (kernel_args.ComputeCommonArgs: the run-time shape), then the work table
    uint32_t arg = 0;
    const uint32_t sliding_window = get_common_arg_val<uint32_t>(arg++);  // positions (0: none)
    const CoreWork work = core_work(arg);
    const uint32_t first_group = work.first_group;
    const uint32_t num_groups = work.num_groups;
    const uint32_t core_index = work.core_index;
    const uint32_t num_cores_per_head = work.num_cores_per_head;

    compute_kernel_hw_startup(cb_q, cb_k, cb_scores);

    CircularBuffer(cb_scale).wait_front(1);
    CircularBuffer(cb_ones).wait_front(1);
    CircularBuffer(cb_cur_pos).wait_front(1);
    if constexpr (merge_select_tiles > 0) {
        CircularBuffer(cb_merge_select).wait_front(merge_select_tiles);
    }

    const uint32_t rounds = tree_rounds(num_cores_per_head, merge_radix);
    for (uint32_t group = first_group; group < first_group + num_groups; ++group) {
        const uint32_t first_user = group / num_kv_heads * users_per_group;
        const GroupBounds bounds = group_bounds(
            [](uint32_t u) { return CircularBuffer(cb_cur_pos).read_tile_value(0, u); }, first_user, users_per_group,
            q_len);
        const uint32_t cur_pos = bounds.last;
        const ChunkRange chunks =
            chunk_range(cur_pos, k_chunk_size, core_index, num_cores_per_head, bounds.span, sliding_window);
        if (chunks.count == 0) {
            continue;  // the writer handles skipped users; idle cores take no part in the tree
        }

        CircularBuffer(cb_q).wait_front(q_tiles);
        if constexpr (!scale_in_exp) {
            scale_tiles(cb_q, cb_scale, cb_q_scaled, q_tiles);
            CircularBuffer(cb_q).pop_front(q_tiles);
            CircularBuffer(cb_q_scaled).wait_front(q_tiles);
        }

        const uint32_t num_active = active_cores(cur_pos, k_chunk_size, num_cores_per_head, bounds.span, sliding_window);
        // A leaf of the tree (not the root, no children in its first round, so none in any) sends its state as it
        // leaves the last chunk: that chunk packs it straight into cb_partial_out (process_chunk's to_partial).
        const bool leaf = core_index != 0 && children_in_round(core_index, 0, num_active, merge_radix) == 0;
        for (uint32_t i = 0; i < chunks.count; ++i) {
            const uint32_t chunk = chunks.start + i;
            const bool edge = chunk_is_masked(is_causal, chunk, k_chunk_size, cur_pos, bounds.span, sliding_window);
            const bool to_partial = leaf && i + 1 == chunks.count;
            process_chunk(i == 0, use_attn_mask || edge, to_partial);
            CircularBuffer(cb_max_cur).wait_front(PNHt);
            if (!to_partial) {
                CircularBuffer(cb_l).wait_front(PNHt);
                CircularBuffer(cb_o).wait_front(o_tiles);
            }
        }
        CircularBuffer(cb_q_mm).pop_front(q_tiles);

        bool merged = false;  // whether a merge came last (its configuration holds: see merge_row_factors)
        // The rounds a core receives in are a prefix; from its send round on its partial travels up the tree.
        for (uint32_t round = 0; round < rounds; ++round) {
            const uint32_t children = children_in_round(core_index, round, num_active, merge_radix);
            if (children == 0) {
                break;
            }
            // A non-root core's last round (none in the next) merges straight into the partial it sends.
            const bool last_round =
                round + 1 == rounds || children_in_round(core_index, round + 1, num_active, merge_radix) == 0;
            const bool to_partial = core_index != 0 && last_round;
            merge_partials(cb_partial_in, children, /*has_o=*/true, to_partial, /*after_merge=*/round > 0);
            merged = true;
            CircularBuffer(cb_max_cur).wait_front(PNHt);
            if (!to_partial) {
                CircularBuffer(cb_l).wait_front(PNHt);
                CircularBuffer(cb_o).wait_front(o_tiles);
            }
        }
        if (core_index != 0) {
            // Its (O, m, l) went to the writer, in the slot layout of cb_partial_in, with its last chunk (a leaf) or
            // its last round; m's copy there leaves the running max spent.
            CircularBuffer(cb_max_cur).pop_front(PNHt);
            continue;
        }

        // the root
        if constexpr (merge_sink_partial) {
            merge_partials(cb_sink, 1, /*has_o=*/false, /*to_partial=*/false, merged);
            merged = true;
            CircularBuffer(cb_max_cur).wait_front(PNHt);
            CircularBuffer(cb_l).wait_front(PNHt);
            CircularBuffer(cb_o).wait_front(o_tiles);
        }
        if constexpr (emit_partial) {
            // [O, m, l] in cb_out (partial_tiles pages), in the slot layout of cb_partial_in
            move_tiles(cb_o, cb_out, o_tiles);
            move_tiles(cb_max_cur, cb_out, PNHt);
            move_tiles(cb_l, cb_out, PNHt);
        } else {
            write_normalised_output(merged);
            CircularBuffer(cb_o).pop_front(o_tiles);
            CircularBuffer(cb_max_cur).pop_front(PNHt);
            CircularBuffer(cb_l).pop_front(PNHt);
        }
    }

    CircularBuffer(cb_cur_pos).pop_front(1);
    if constexpr (merge_select_tiles > 0) {
        CircularBuffer(cb_merge_select).pop_front(merge_select_tiles);
    }
    CircularBuffer(cb_ones).pop_front(1);
    CircularBuffer(cb_scale).pop_front(1);
}
