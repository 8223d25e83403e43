// Emulator implementation of api/compute/reconfig_data_format.h: reprogram the unpacker (SrcA/SrcB) and packer
// data formats. The (old, new) forms reconfigure only when the formats differ, which has the same effect here.
// Tile-shape variants are accepted (the emulator supports 32x32 tiles only).
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "api/compute/src_order.h"
#include "emu/compute_state.h"

namespace ckernel {

template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_data_format(const uint32_t icb0_new_operand, const uint32_t icb1_new_operand) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath, true);
    constexpr bool reverse = src_order == SrcOrder::Reverse;
    emu::configure_srca(reverse ? icb1_new_operand : icb0_new_operand);
    emu::configure_srcb(reverse ? icb0_new_operand : icb1_new_operand);
}

template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_data_format(const uint32_t icb0_old_operand, const uint32_t icb0_new_operand,
                               const uint32_t icb1_old_operand, const uint32_t icb1_new_operand) {
    (void)icb0_old_operand;
    (void)icb1_old_operand;
    reconfig_data_format<src_order>(icb0_new_operand, icb1_new_operand);
}

ALWI void reconfig_data_format_srca(const uint32_t srca_new_operand) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath, true);
    emu::configure_srca(srca_new_operand);
}
ALWI void reconfig_data_format_srca(const uint32_t srca_old_operand, const uint32_t srca_new_operand) {
    (void)srca_old_operand;
    reconfig_data_format_srca(srca_new_operand);
}
ALWI void reconfig_data_format_srcb(const uint32_t srcb_new_operand) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath, true);
    emu::configure_srcb(srcb_new_operand);
}
ALWI void reconfig_data_format_srcb(const uint32_t srcb_old_operand, const uint32_t srcb_new_operand) {
    (void)srcb_old_operand;
    reconfig_data_format_srcb(srcb_new_operand);
}

template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_data_format_skip_int8(const uint32_t icb0_new_operand, const uint32_t icb1_new_operand) {
    reconfig_data_format<src_order>(icb0_new_operand, icb1_new_operand);
}
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_data_format_skip_int8(const uint32_t icb0_old_operand, const uint32_t icb0_new_operand,
                                         const uint32_t icb1_old_operand, const uint32_t icb1_new_operand) {
    reconfig_data_format<src_order>(icb0_old_operand, icb0_new_operand, icb1_old_operand, icb1_new_operand);
}
ALWI void reconfig_data_format_srca_skip_int8(const uint32_t n) { reconfig_data_format_srca(n); }
ALWI void reconfig_data_format_srca_skip_int8(const uint32_t o, const uint32_t n) { reconfig_data_format_srca(o, n); }
ALWI void reconfig_data_format_srcb_skip_int8(const uint32_t n) { reconfig_data_format_srcb(n); }
ALWI void reconfig_data_format_srcb_skip_int8(const uint32_t o, const uint32_t n) { reconfig_data_format_srcb(o, n); }

template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_full_operand(const uint32_t icb0_new_operand, const uint32_t icb1_new_operand) {
    reconfig_data_format<src_order>(icb0_new_operand, icb1_new_operand);
}
ALWI void reconfig_full_operand_srca(const uint32_t n) { reconfig_data_format_srca(n); }
ALWI void reconfig_full_operand_srcb(const uint32_t n) { reconfig_data_format_srcb(n); }

// Packer output format := new_cb_id's format.
template <bool is_tile_dim_reconfig_en = false>
ALWI void pack_reconfig_data_format(const uint32_t new_cb_id) {
    emu::timing_config(emu::kLanePack, true);
    emu::configure_pack(new_cb_id);
}
template <bool is_tile_dim_reconfig_en = false>
ALWI void pack_reconfig_data_format(const uint32_t old_cb_id, const uint32_t new_cb_id) {
    (void)old_cb_id;
    pack_reconfig_data_format<is_tile_dim_reconfig_en>(new_cb_id);
}

}  // namespace ckernel
