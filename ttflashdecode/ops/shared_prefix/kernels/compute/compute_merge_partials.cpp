// SPDX-License-Identifier: Apache-2.0
//
// Shared-prefix decode, merge of the two levels' partials: compute (TRISC0-2). For each tile row (32 q heads of one
// user) it combines the prefix level's partial (O_a, m_a, l_a) with the suffix level's (O_b, m_b, l_b) exactly as the
// decode's tree merges two cores' partials, then normalises:
//
//   m = max(m_a, m_b);  a = exp(m_a - m), b = exp(m_b - m)     (times the softmax scale when m is in q.k units)
//   l = rowsum(l_a * a + l_b * b)                              (l arrives unreduced: 32 partial sums a row)
//   out = O_a * (a / l) + O_b * (b / l)
//
// m, the factors and 1/l are column vectors (column 0 of a tile, broadcast by the *_bcast_cols ops), as in the decode.
// The inputs and every intermediate are float32 (the program runs with fp32 DST); out is the output's dtype.
//
// Arguments (ttflashdecode/ops/shared_prefix/args.py): compile-time args in the order of MERGE_COMPUTE_ARGS (CB
// indices, vDHt, scale_in_exp, factor_scale_bf16); runtime arg num_rows.

#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/cb_api.h"
#include "api/compute/reg_api.h"
#include "api/compute/pack.h"
#include "api/compute/reconfig_data_format.h"
#include "api/compute/tile_move_copy.h"
#include "api/compute/reduce.h"
#include "api/compute/bcast.h"
#include "api/compute/eltwise_binary.h"
#include "api/compute/binary_max_min.h"
#include "api/compute/eltwise_unary/exp.h"
#include "api/compute/eltwise_unary/recip.h"
#include "api/dataflow/circular_buffer.h"

using namespace ckernel;

namespace {

constexpr uint32_t cb_a = get_compile_time_arg_val(0);  // prefix partial: O, m, l
constexpr uint32_t cb_b = get_compile_time_arg_val(1);  // suffix partial: O, m, l
constexpr uint32_t cb_ones = get_compile_time_arg_val(2);  // reduce scaler
constexpr uint32_t cb_m = get_compile_time_arg_val(3);  // max(m_a, m_b)
constexpr uint32_t cb_f = get_compile_time_arg_val(4);  // [a, b] factors, then [a / l, b / l]
constexpr uint32_t cb_t = get_compile_time_arg_val(5);  // two products to add
constexpr uint32_t cb_l = get_compile_time_arg_val(6);  // l_a * a + l_b * b, then 1/rowsum
constexpr uint32_t cb_out = get_compile_time_arg_val(7);
constexpr uint32_t vDHt = get_compile_time_arg_val(8);
// m in q.k units (the levels ran the approximate exp with the scale fused into it): the factors' exp takes the
// softmax scale as its multiplier, as the decode's own merge does; else m is in softmax units.
constexpr bool scale_in_exp = get_compile_time_arg_val(9) == 1;
constexpr uint16_t factor_scale_bf16 = get_compile_time_arg_val(10);
constexpr uint32_t M = vDHt;      // m's tile in a partial row
constexpr uint32_t L = vDHt + 1;  // l's tile
constexpr uint32_t row_tiles = vDHt + 2;

void configure(uint32_t in0, uint32_t in1, uint32_t out) {
    reconfig_data_format(in0, in1);
    pack_reconfig_data_format(out);
}

void pack_to(uint32_t dst, uint32_t out) { pack_tile(dst, out); }

// Packs DST tiles 0..n-1 to the back of `out` and pushes them.
void commit_and_push(uint32_t out, uint32_t n) {
    CircularBuffer(out).reserve_back(n);
    tile_regs_commit();
    tile_regs_wait();
    for (uint32_t i = 0; i < n; ++i) {
        pack_to(i, out);
    }
    tile_regs_release();
    CircularBuffer(out).push_back(n);
}

void factor_exp(uint32_t dst) {
    if constexpr (scale_in_exp) {
        exp_tile<false, true>(dst, VectorMode::C, factor_scale_bf16);
    } else {
        exp_tile<false>(dst, VectorMode::C);
    }
}

// tiles 0 and 1 of cb_t added, packed to `out`; pops cb_t.
void add_pair_to(uint32_t out) {
    CircularBuffer(cb_t).wait_front(2);
    configure(cb_t, cb_t, out);
    add_init(cb_t, cb_t);
    tile_regs_acquire();
    add_tiles(cb_t, cb_t, 0, 1, 0);
    commit_and_push(out, 1);
    CircularBuffer(cb_t).pop_front(2);
}

}  // namespace

void kernel_main() {
    const uint32_t num_rows = get_arg_val<uint32_t>(0);
    compute_kernel_hw_startup(cb_a, cb_b, cb_out);
    CircularBuffer(cb_ones).wait_front(1);

    for (uint32_t r = 0; r < num_rows; ++r) {
        CircularBuffer(cb_a).wait_front(row_tiles);
        CircularBuffer(cb_b).wait_front(row_tiles);

        // m = max(m_a, m_b)
        tile_regs_acquire();
        configure(cb_a, cb_b, cb_m);
        copy_init(cb_a);
        copy_tile(cb_a, M, 0);
        reconfig_data_format_srca(cb_b);
        copy_init(cb_b);
        copy_tile(cb_b, M, 1);
        binary_max_tile_init();
        binary_max_tile(0, 1, 0, VectorMode::C);
        commit_and_push(cb_m, 1);
        CircularBuffer(cb_m).wait_front(1);

        // [a, b] = [exp(m_a - m), exp(m_b - m)]
        tile_regs_acquire();
        configure(cb_a, cb_m, cb_f);
        sub_init(cb_a, cb_m);
        sub_tiles(cb_a, cb_m, M, 0, 0);
        configure(cb_b, cb_m, cb_f);
        sub_init(cb_b, cb_m);
        sub_tiles(cb_b, cb_m, M, 0, 1);
        exp_tile_init<false>();
        factor_exp(0);
        factor_exp(1);
        commit_and_push(cb_f, 2);
        CircularBuffer(cb_m).pop_front(1);
        CircularBuffer(cb_f).wait_front(2);

        // l = l_a * a + l_b * b (elementwise on the unreduced sums)
        tile_regs_acquire();
        configure(cb_a, cb_f, cb_t);
        mul_bcast_cols_init(cb_a, cb_f);
        mul_tiles_bcast_cols(cb_a, cb_f, L, 0, 0);
        configure(cb_b, cb_f, cb_t);
        mul_bcast_cols_init(cb_b, cb_f);
        mul_tiles_bcast_cols(cb_b, cb_f, L, 1, 1);
        commit_and_push(cb_t, 2);
        add_pair_to(cb_l);

        // 1/l: the row sum (a reduce against the ones scaler), then its reciprocal, into a second cb_l tile
        CircularBuffer(cb_l).wait_front(1);
        configure(cb_ones, cb_l, cb_l);
        reduce_init<PoolType::SUM, ReduceDim::REDUCE_ROW>(cb_l, cb_ones, cb_l);
        tile_regs_acquire();
        reduce_tile<PoolType::SUM, ReduceDim::REDUCE_ROW>(cb_l, cb_ones, 0, 0, 0);
        recip_tile_init();
        recip_tile(0, VectorMode::C);
        commit_and_push(cb_l, 1);
        reduce_uninit();
        CircularBuffer(cb_l).pop_front(1);
        CircularBuffer(cb_l).wait_front(1);

        // [a / l, b / l]
        tile_regs_acquire();
        configure(cb_f, cb_l, cb_f);
        mul_bcast_cols_init(cb_f, cb_l);
        mul_tiles_bcast_cols(cb_f, cb_l, 0, 0, 0);
        mul_tiles_bcast_cols(cb_f, cb_l, 1, 0, 1);
        commit_and_push(cb_f, 2);
        CircularBuffer(cb_f).pop_front(2);
        CircularBuffer(cb_l).pop_front(1);
        CircularBuffer(cb_f).wait_front(2);

        // out = O_a * (a / l) + O_b * (b / l), column tile by column tile
        for (uint32_t c = 0; c < vDHt; ++c) {
            tile_regs_acquire();
            configure(cb_a, cb_f, cb_t);
            mul_bcast_cols_init(cb_a, cb_f);
            mul_tiles_bcast_cols(cb_a, cb_f, c, 0, 0);
            configure(cb_b, cb_f, cb_t);
            mul_bcast_cols_init(cb_b, cb_f);
            mul_tiles_bcast_cols(cb_b, cb_f, c, 1, 1);
            commit_and_push(cb_t, 2);
            add_pair_to(cb_out);
        }
        CircularBuffer(cb_f).pop_front(2);
        CircularBuffer(cb_a).pop_front(row_tiles);
        CircularBuffer(cb_b).pop_front(row_tiles);
    }
    CircularBuffer(cb_ones).pop_front(1);
}
