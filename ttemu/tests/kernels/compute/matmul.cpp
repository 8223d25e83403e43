// C (Mt x Nt tiles) = A (Mt x Kt) @ B (Kt x Nt), or A @ B^T with B given as Nt x Kt tiles when transposed.
// Compile-time args: 0 Mt, 1 Kt, 2 Nt, 3 transpose_b, 4 use matmul_block (one block of rt=Mt x ct=Nt).
// CBs: A = 0 (all Mt*Kt tiles, row-major), B = 1 (all tiles, row-major), out = 16 (row-major tiles).
#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/matmul.h"

void kernel_main() {
    constexpr uint32_t Mt = get_compile_time_arg_val(0);
    constexpr uint32_t Kt = get_compile_time_arg_val(1);
    constexpr uint32_t Nt = get_compile_time_arg_val(2);
    constexpr uint32_t transpose = get_compile_time_arg_val(3);
    constexpr uint32_t use_block = get_compile_time_arg_val(4);
    constexpr uint32_t cb_a = 0, cb_b = 1, cb_out = 16;

    compute_kernel_hw_startup<SrcOrder::Reverse>(cb_a, cb_b, cb_out);
    cb_wait_front(cb_a, Mt * Kt);
    cb_wait_front(cb_b, Kt * Nt);
    cb_reserve_back(cb_out, Mt * Nt);
    if constexpr (use_block) {
        matmul_block_init(cb_a, cb_b, transpose, Nt, Mt, Kt);
        tile_regs_acquire();
        for (uint32_t k = 0; k < Kt; ++k) matmul_block(cb_a, cb_b, k, k * Nt, 0, transpose, Nt, Mt, Kt);
        tile_regs_commit();
        tile_regs_wait();
        for (uint32_t i = 0; i < Mt * Nt; ++i) pack_tile(i, cb_out);
        tile_regs_release();
    } else {
        matmul_init(cb_a, cb_b, transpose);
        for (uint32_t m = 0; m < Mt; ++m) {
            for (uint32_t n = 0; n < Nt; ++n) {
                tile_regs_acquire();
                for (uint32_t k = 0; k < Kt; ++k) {
                    uint32_t b_index = transpose ? n * Kt + k : k * Nt + n;
                    matmul_tiles(cb_a, cb_b, m * Kt + k, b_index, 0);
                }
                tile_regs_commit();
                tile_regs_wait();
                pack_tile<true>(0, cb_out, m * Nt + n);
                tile_regs_release();
            }
        }
    }
    cb_push_back(cb_out, Mt * Nt);
    cb_pop_front(cb_a, Mt * Kt);
    cb_pop_front(cb_b, Kt * Nt);
}
