// Emulator implementation of api/compute/tilize.h (model: emu/compute_tilize.h). The fast_tilize_* variants produce
// the same tiles as tilize_* (they differ on silicon only in speed), so they share the model.
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_tilize.h"

namespace ckernel {

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tilize_init(uint32_t icb, uint32_t block, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath | emu::kLanePack);
    (void)icb, (void)block, (void)ocb, (void)call_line;
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
// As the wheel's: the math datacopy, unpack tilize and pack inits always run; between them the (old, new) SrcA
// reconfig of the LLK API reprograms only what the operands' comparison asks for (emu/compute_reconfig.h).
ALWI void tilize_init_short_with_dt(uint32_t old_icb, uint32_t new_icb, uint32_t block, uint32_t ocb) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath | emu::kLanePack);
    (void)block, (void)ocb;
    llk_unpack_reconfig_data_format_srca<is_fp32_dest_acc_en>(old_icb, new_icb);
    llk_math_reconfig_data_format_srca<is_fp32_dest_acc_en>(old_icb, new_icb);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tilize_block(uint32_t icb, uint32_t block, uint32_t ocb, uint32_t input_tile_index = 0,
                       uint32_t output_tile_index = 0) {
    emu::tilize_block(icb, block, ocb, input_tile_index, output_tile_index, "tilize_block");
}
ALWI void tilize_uninit(uint32_t icb, uint32_t ocb) { (void)icb, (void)ocb; }
// An older wheel's: the LLK API's (old, new) SrcA reconfig, as tilize_init_short_with_dt's.
ALWI void tilize_uninit_with_dt(uint32_t old_icb, uint32_t new_icb, uint32_t ocb) {
    (void)ocb;
    llk_unpack_reconfig_data_format_srca<DST_ACCUM_MODE>(old_icb, new_icb);
    llk_math_reconfig_data_format_srca<DST_ACCUM_MODE>(old_icb, new_icb);
}

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_tilize_init(uint32_t icb, uint32_t full_dim, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath | emu::kLanePack);
    (void)icb, (void)full_dim, (void)ocb, (void)call_line;
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_tilize_init_skip_remap(uint32_t icb, uint32_t full_dim, uint32_t ocb,
                                      uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath | emu::kLanePack);
    (void)icb, (void)full_dim, (void)ocb, (void)call_line;
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_tilize_init_with_dt(uint32_t icb, uint32_t full_dim, uint32_t ocb) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath | emu::kLanePack);
    (void)full_dim, (void)ocb;
    emu::configure_srca(icb);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_tilize_init_with_dt_skip_remap(uint32_t icb, uint32_t full_dim, uint32_t ocb) {
    fast_tilize_init_with_dt<is_fp32_dest_acc_en>(icb, full_dim, ocb);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_tilize_uninit(uint32_t icb, uint32_t ocb, uint32_t full_dim = 0) {
    (void)icb, (void)ocb, (void)full_dim;
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_tilize_block(uint32_t icb, uint32_t block, uint32_t ocb, uint32_t input_tile_index = 0,
                            uint32_t output_tile_index = 0) {
    emu::tilize_block(icb, block, ocb, input_tile_index, output_tile_index, "fast_tilize_block");
}

}  // namespace ckernel
