// Element-wise binary op of n tile pairs: out[i] = in0[i] op bcast(in1[i]).
// Compile-time args: 0 op (0 add, 1 sub, 2 mul), 1 bcast (0 none, 1 cols, 2 rows, 3 scalar), 2 n tiles.
// CBs: in0 = 0, in1 = 1, out = 16.
#include <cstdint>

#include "api/compute/bcast.h"
#include "api/compute/compute_kernel_api.h"
#include "api/compute/eltwise_binary.h"

void kernel_main() {
    constexpr uint32_t op = get_compile_time_arg_val(0);
    constexpr uint32_t bcast = get_compile_time_arg_val(1);
    constexpr uint32_t n = get_compile_time_arg_val(2);
    constexpr uint32_t cb_in0 = 0, cb_in1 = 1, cb_out = 16;

    compute_kernel_hw_startup(cb_in0, cb_in1, cb_out);
    if constexpr (bcast == 0) {
        if constexpr (op == 0) add_init(cb_in0, cb_in1);
        if constexpr (op == 1) sub_init(cb_in0, cb_in1);
        if constexpr (op == 2) mul_init(cb_in0, cb_in1);
    } else {
        constexpr BroadcastType dim = bcast == 1 ? BroadcastType::COL : bcast == 2 ? BroadcastType::ROW : BroadcastType::SCALAR;
        constexpr EltwiseBinaryType t = op == 0 ? EltwiseBinaryType::ELWADD : op == 1 ? EltwiseBinaryType::ELWSUB : EltwiseBinaryType::ELWMUL;
        bcast_init<t, dim>(cb_in0, cb_in1);
    }
    for (uint32_t i = 0; i < n; ++i) {
        cb_wait_front(cb_in0, 1);
        cb_wait_front(cb_in1, 1);
        tile_regs_acquire();
        if constexpr (bcast == 0) {
            if constexpr (op == 0) add_tiles(cb_in0, cb_in1, 0, 0, 0);
            if constexpr (op == 1) sub_tiles(cb_in0, cb_in1, 0, 0, 0);
            if constexpr (op == 2) mul_tiles(cb_in0, cb_in1, 0, 0, 0);
        } else if constexpr (bcast == 1) {
            if constexpr (op == 0) add_tiles_bcast_cols(cb_in0, cb_in1, 0, 0, 0);
            if constexpr (op == 1) sub_tiles_bcast_cols(cb_in0, cb_in1, 0, 0, 0);
            if constexpr (op == 2) mul_tiles_bcast_cols(cb_in0, cb_in1, 0, 0, 0);
        } else if constexpr (bcast == 2) {
            if constexpr (op == 0) add_tiles_bcast_rows(cb_in0, cb_in1, 0, 0, 0);
            if constexpr (op == 1) sub_tiles_bcast_rows(cb_in0, cb_in1, 0, 0, 0);
            if constexpr (op == 2) mul_tiles_bcast_rows(cb_in0, cb_in1, 0, 0, 0);
        } else {
            if constexpr (op == 0) add_tiles_bcast_scalar(cb_in0, cb_in1, 0, 0, 0);
            if constexpr (op == 1) sub_tiles_bcast_scalar(cb_in0, cb_in1, 0, 0, 0);
            if constexpr (op == 2) mul_tiles_bcast_scalar(cb_in0, cb_in1, 0, 0, 0);
        }
        tile_regs_commit();
        tile_regs_wait();
        cb_reserve_back(cb_out, 1);
        pack_tile(0, cb_out);
        cb_push_back(cb_out, 1);
        tile_regs_release();
        cb_pop_front(cb_in0, 1);
        cb_pop_front(cb_in1, 1);
    }
}
