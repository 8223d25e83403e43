// SFPU ops on n tiles: out[i] = f(in0[i]) or max(in0[i], in1[i]).
// Compile-time args: 0 op (0 exp, 1 exp approx, 2 recip, 3 negative, 4 binary max, 5 copy, 6 transpose), 1 n.
// CBs: in0 = 0, in1 = 1 (op 4 only), out = 16.
#include <cstdint>

#include "api/compute/binary_max_min.h"
#include "api/compute/compute_kernel_api.h"
#include "api/compute/eltwise_unary/eltwise_unary.h"
#include "api/compute/eltwise_unary/exp.h"
#include "api/compute/eltwise_unary/negative.h"
#include "api/compute/eltwise_unary/recip.h"
#include "api/compute/tile_move_copy.h"
#include "api/compute/transpose.h"

void kernel_main() {
    constexpr uint32_t op = get_compile_time_arg_val(0);
    constexpr uint32_t n = get_compile_time_arg_val(1);
    constexpr uint32_t cb_in0 = 0, cb_in1 = 1, cb_out = 16;

    compute_kernel_hw_startup(cb_in0, cb_out);
    if constexpr (op == 6) {
        transpose_init(cb_in0);
    } else {
        copy_init(cb_in0);
    }
    if constexpr (op == 0) exp_tile_init();
    if constexpr (op == 1) exp_tile_init<true>();
    if constexpr (op == 2) recip_tile_init();
    if constexpr (op == 3) negative_tile_init();
    if constexpr (op == 4) binary_max_tile_init();
    for (uint32_t i = 0; i < n; ++i) {
        cb_wait_front(cb_in0, 1);
        tile_regs_acquire();
        if constexpr (op == 6) {
            transpose_tile(cb_in0, 0, 0);
        } else {
            copy_tile(cb_in0, 0, 0);
        }
        if constexpr (op == 0) exp_tile(0);
        if constexpr (op == 1) exp_tile<true>(0);
        if constexpr (op == 2) recip_tile(0);
        if constexpr (op == 3) negative_tile(0);
        if constexpr (op == 4) {
            cb_wait_front(cb_in1, 1);
            copy_tile(cb_in1, 0, 1);
            binary_max_tile(0, 1, 0);
            cb_pop_front(cb_in1, 1);
        }
        tile_regs_commit();
        tile_regs_wait();
        cb_reserve_back(cb_out, 1);
        pack_tile(0, cb_out);
        cb_push_back(cb_out, 1);
        tile_regs_release();
        cb_pop_front(cb_in0, 1);
    }
}
