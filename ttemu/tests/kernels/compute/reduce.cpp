// Reduce each row of Wt tiles (Ht rows) into one output tile: reduce_tile accumulates the Wt tiles into DST 0.
// Compile-time args: 0 pool (0 sum, 2 max), 1 dim (0 row, 1 col, 2 scalar), 2 Ht, 3 Wt.
// CBs: in = 0 (Ht*Wt tiles, row-major), scaler = 2 (1 tile), out = 16 (Ht tiles).
#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/reduce.h"

void kernel_main() {
    constexpr uint32_t pool = get_compile_time_arg_val(0);
    constexpr uint32_t dim = get_compile_time_arg_val(1);
    constexpr uint32_t Ht = get_compile_time_arg_val(2);
    constexpr uint32_t Wt = get_compile_time_arg_val(3);
    constexpr PoolType P = pool == 0 ? PoolType::SUM : PoolType::MAX;
    constexpr ReduceDim D = dim == 0 ? ReduceDim::REDUCE_ROW : dim == 1 ? ReduceDim::REDUCE_COL : ReduceDim::REDUCE_SCALAR;
    constexpr uint32_t cb_in = 0, cb_scaler = 2, cb_out = 16;
    // REDUCE_ROW SUM puts the scaler in SrcA and the data in SrcB.
    constexpr bool swapped = D == ReduceDim::REDUCE_ROW && P != PoolType::MAX;

    if constexpr (swapped) {
        compute_kernel_hw_startup(cb_scaler, cb_in, cb_out);
    } else {
        compute_kernel_hw_startup(cb_in, cb_scaler, cb_out);
    }
    reduce_init<P, D>(cb_in, cb_scaler, cb_out);
    cb_wait_front(cb_scaler, 1);
    for (uint32_t h = 0; h < Ht; ++h) {
        tile_regs_acquire();
        for (uint32_t w = 0; w < Wt; ++w) {
            cb_wait_front(cb_in, 1);
            reduce_tile<P, D>(cb_in, cb_scaler, 0, 0, 0);
            cb_pop_front(cb_in, 1);
        }
        tile_regs_commit();
        tile_regs_wait();
        cb_reserve_back(cb_out, 1);
        pack_tile(0, cb_out);
        cb_push_back(cb_out, 1);
        tile_regs_release();
    }
    reduce_uninit();
}
