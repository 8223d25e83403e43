// Deliberate DST / configuration misuse; every mode must end in emu::fault with a clear message.
// Compile-time arg 0 mode: 0 pack before tile_regs_wait, 1 math before tile_regs_acquire, 2 DST index beyond
// capacity, 3 double tile_regs_acquire, 4 unpack a CB of another format without reconfig, 5 pack to a CB of
// another format without pack_reconfig_data_format, 6 math after commit.
// CBs: in0 = 0 (one tile), in1 = 1 (one tile, other format), out = 16, out2 = 17 (other format).
#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/tile_move_copy.h"

void kernel_main() {
    constexpr uint32_t mode = get_compile_time_arg_val(0);
    constexpr uint32_t cb_in0 = 0, cb_in1 = 1, cb_out = 16, cb_out2 = 17;
    compute_kernel_hw_startup(cb_in0, cb_out);
    copy_init(cb_in0);
    cb_wait_front(cb_in0, 1);
    cb_wait_front(cb_in1, 1);
    cb_reserve_back(cb_out, 1);
    cb_reserve_back(cb_out2, 1);
    if constexpr (mode == 1) copy_tile(cb_in0, 0, 0);
    tile_regs_acquire();
    if constexpr (mode == 3) tile_regs_acquire();
    if constexpr (mode == 2) copy_tile(cb_in0, 0, DST_ACCUM_MODE ? 4 : 8);
    if constexpr (mode == 4) copy_tile(cb_in1, 0, 0);
    copy_tile(cb_in0, 0, 0);
    if constexpr (mode == 0) pack_tile(0, cb_out);
    tile_regs_commit();
    if constexpr (mode == 6) copy_tile(cb_in0, 0, 1);
    tile_regs_wait();
    if constexpr (mode == 5) pack_tile(0, cb_out2);
    pack_tile(0, cb_out);
    tile_regs_release();
    cb_push_back(cb_out, 1);
}
