// Test kernel (ttemu/tests/test_reconfig.py): copies tiles through a chain that switches the unpacker's SrcA and the
// packer between CBs, with the data-format reconfig form given by the `form` compile-time arg. Per tile i:
//   cb_a[i] -> cb_mid;  cb_mid -> cb_out;  cb_b[i] -> cb_out
// so cb_out receives a[0], b[0], a[1], b[1], ... (through whatever formats the CBs hold).
//
// Compile-time args: [0] form: 0 one-argument reconfigs (always reprogram), 1 (old, new) reconfigs naming the
// operand last programmed, 2 (old, new) reconfigs naming cb_stale as the old operand (a kernel's wrong claim),
// 3 as 1 with SrcA switched through the LLK API's (old, new) calls, as the wheel's reduce helpers make them
// (ttnn/kernel_lib/reduce_helpers_compute.inl reduce_init_short_with_dt); [1] num_tiles.

#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/cb_api.h"
#include "api/compute/reconfig_data_format.h"
#include "api/compute/tile_move_copy.h"

namespace {
constexpr uint32_t cb_a = 0, cb_b = 1, cb_mid = 2, cb_stale = 3, cb_out = 16;
constexpr uint32_t form = get_compile_time_arg_val(0);
constexpr uint32_t num_tiles = get_compile_time_arg_val(1);

void switch_srca(uint32_t old_cb, uint32_t new_cb) {
    if constexpr (form == 0) {
        reconfig_data_format_srca(new_cb);
    } else if constexpr (form == 3) {
        UNPACK((llk_unpack_reconfig_data_format_srca<DST_ACCUM_MODE, p_dim_stride_target::IGNORE>(old_cb, new_cb)));
        MATH((llk_math_reconfig_data_format_srca<DST_ACCUM_MODE>(old_cb, new_cb)));
    } else {
        reconfig_data_format_srca(form == 1 ? old_cb : cb_stale, new_cb);
    }
}

void switch_pack(uint32_t old_cb, uint32_t new_cb) {
    if constexpr (form == 0) {
        pack_reconfig_data_format(new_cb);
    } else {
        pack_reconfig_data_format(form == 2 ? cb_stale : old_cb, new_cb);
    }
}

// One tile from the front of `in` to the back of `out`.
void copy_one(uint32_t in, uint32_t out) {
    cb_wait_front(in, 1);
    cb_reserve_back(out, 1);
    copy_init(in);
    tile_regs_acquire();
    copy_tile(in, 0, 0);
    tile_regs_commit();
    tile_regs_wait();
    pack_tile(0, out);
    tile_regs_release();
    cb_push_back(out, 1);
    cb_pop_front(in, 1);
}
}  // namespace

void kernel_main() {
    compute_kernel_hw_startup(cb_a, cb_b, cb_out);
    for (uint32_t i = 0; i < num_tiles; ++i) {
        switch_pack(cb_out, cb_mid);
        copy_one(cb_a, cb_mid);
        switch_srca(cb_a, cb_mid);
        switch_pack(cb_mid, cb_out);
        copy_one(cb_mid, cb_out);
        switch_srca(cb_mid, cb_b);
        copy_one(cb_b, cb_out);
        switch_srca(cb_b, cb_a);
    }
}
