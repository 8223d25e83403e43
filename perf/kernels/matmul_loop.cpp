// Throughput kernel (compute): `count` tile products C += A_k @ B_k over Kt tiles held in CBs 0 and 1, packing one
// output tile to CB 16 per Kt products. CT: [0] Kt, [1] number of output tiles.
#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/matmul.h"

void kernel_main() {
    constexpr uint32_t Kt = get_compile_time_arg_val(0);
    constexpr uint32_t outs = get_compile_time_arg_val(1);
    compute_kernel_hw_startup(0, 1, 16);
    matmul_init(0, 1);
    cb_wait_front(0, Kt);
    cb_wait_front(1, Kt);
    for (uint32_t o = 0; o < outs; ++o) {
        tile_regs_acquire();
        for (uint32_t k = 0; k < Kt; ++k) matmul_tiles(0, 1, k, k, 0);
        tile_regs_commit();
        tile_regs_wait();
        cb_reserve_back(16, 1);
        pack_tile(0, 16);
        cb_push_back(16, 1);
        tile_regs_release();
        cb_wait_front(16, 1);
        cb_pop_front(16, 1);
    }
}
