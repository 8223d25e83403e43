// Emulator implementation of api/compute/reconfig_data_format.h: reprogram the unpacker (SrcA/SrcB) and packer
// data formats. The one-argument forms always reprogram; the (old, new) forms reprogram only what the LLK API's
// comparison of the old and new operands asks for (emu/compute_reconfig.h), so a call whose operands agree costs
// nothing and changes nothing, and a wrong `old` can leave a stale format programmed, as on silicon.
// Timing: kReconfigCycles once per call on each lane (unpack, math, pack) that reprograms. The unpack lane counts
// SrcA and SrcB together, as one call's register writes and config stall. reconfig_full_operand (dim_stride_target
// FACE_ROW_MAJOR) always reprograms the unpacker; its math half compares as reconfig_data_format's does.
// Tile-shape variants are accepted (the emulator supports 32x32 tiles only).
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "api/compute/src_order.h"
#include "emu/compute_reconfig.h"
#include "emu/compute_state.h"

namespace ckernel {

namespace detail {

inline void charge_reconfig(unsigned lanes) {
    if (lanes) emu::timing_config(lanes, true);
}

// One source, new operand only: the unpacker and the math thread always reprogram.
inline unsigned reconfig_srca_lanes(uint32_t new_operand) {
    emu::configure_srca(new_operand);
    return emu::kLaneUnpack | emu::kLaneMath;
}
inline unsigned reconfig_srcb_lanes(uint32_t new_operand) {
    emu::configure_srcb(new_operand);
    return emu::kLaneUnpack | emu::kLaneMath;
}

// One source, (old, new): the lanes that reprogram (tile_dim: reconfig_full_operand's FACE_ROW_MAJOR target).
template <bool tile_dim>
inline unsigned reconfig_srca_lanes(uint32_t old_operand, uint32_t new_operand) {
    unsigned lanes = emu::reconfig_srca(old_operand, new_operand, tile_dim) ? emu::kLaneUnpack : 0u;
    return lanes | (emu::math_reconfig_needed(old_operand, new_operand) ? emu::kLaneMath : 0u);
}
template <bool tile_dim>
inline unsigned reconfig_srcb_lanes(uint32_t old_operand, uint32_t new_operand) {
    unsigned lanes = emu::reconfig_srcb(old_operand, new_operand, tile_dim) ? emu::kLaneUnpack : 0u;
    return lanes | (emu::math_reconfig_needed(old_operand, new_operand) ? emu::kLaneMath : 0u);
}

template <SrcOrder src_order>
inline void reconfig_both(uint32_t icb0_new, uint32_t icb1_new) {
    constexpr bool reverse = src_order == SrcOrder::Reverse;
    charge_reconfig(reconfig_srca_lanes(reverse ? icb1_new : icb0_new) |
                    reconfig_srcb_lanes(reverse ? icb0_new : icb1_new));
}
template <SrcOrder src_order, bool tile_dim>
inline void reconfig_both(uint32_t icb0_old, uint32_t icb0_new, uint32_t icb1_old, uint32_t icb1_new) {
    constexpr bool reverse = src_order == SrcOrder::Reverse;
    charge_reconfig(reconfig_srca_lanes<tile_dim>(reverse ? icb1_old : icb0_old, reverse ? icb1_new : icb0_new) |
                    reconfig_srcb_lanes<tile_dim>(reverse ? icb0_old : icb1_old, reverse ? icb0_new : icb1_new));
}

}  // namespace detail

// ---- reconfig_data_format: data format (and tile size), tile geometry unchanged.
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_data_format(const uint32_t icb0_new_operand, const uint32_t icb1_new_operand) {
    detail::reconfig_both<src_order>(icb0_new_operand, icb1_new_operand);
}
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_data_format(const uint32_t icb0_old_operand, const uint32_t icb0_new_operand,
                               const uint32_t icb1_old_operand, const uint32_t icb1_new_operand) {
    detail::reconfig_both<src_order, false>(icb0_old_operand, icb0_new_operand, icb1_old_operand, icb1_new_operand);
}
ALWI void reconfig_data_format_srca(const uint32_t srca_new_operand) {
    detail::charge_reconfig(detail::reconfig_srca_lanes(srca_new_operand));
}
ALWI void reconfig_data_format_srca(const uint32_t srca_old_operand, const uint32_t srca_new_operand) {
    detail::charge_reconfig(detail::reconfig_srca_lanes<false>(srca_old_operand, srca_new_operand));
}
ALWI void reconfig_data_format_srcb(const uint32_t srcb_new_operand) {
    detail::charge_reconfig(detail::reconfig_srcb_lanes(srcb_new_operand));
}
ALWI void reconfig_data_format_srcb(const uint32_t srcb_old_operand, const uint32_t srcb_new_operand) {
    detail::charge_reconfig(detail::reconfig_srcb_lanes<false>(srcb_old_operand, srcb_new_operand));
}

// ---- _skip_int8: the same formats (the int8 / unsigned state they skip re-deriving is not modelled).
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

// ---- reconfig_full_operand: data format and tile geometry (the unpacker always reprograms).
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_full_operand(const uint32_t icb0_new_operand, const uint32_t icb1_new_operand) {
    reconfig_data_format<src_order>(icb0_new_operand, icb1_new_operand);
}
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_full_operand(const uint32_t icb0_old_operand, const uint32_t icb0_new_operand,
                                const uint32_t icb1_old_operand, const uint32_t icb1_new_operand) {
    detail::reconfig_both<src_order, true>(icb0_old_operand, icb0_new_operand, icb1_old_operand, icb1_new_operand);
}
ALWI void reconfig_full_operand_srca(const uint32_t n) { reconfig_data_format_srca(n); }
ALWI void reconfig_full_operand_srca(const uint32_t o, const uint32_t n) {
    detail::charge_reconfig(detail::reconfig_srca_lanes<true>(o, n));
}
ALWI void reconfig_full_operand_srcb(const uint32_t n) { reconfig_data_format_srcb(n); }
ALWI void reconfig_full_operand_srcb(const uint32_t o, const uint32_t n) {
    detail::charge_reconfig(detail::reconfig_srcb_lanes<true>(o, n));
}

// ---- packer output format := new_cb_id's format. is_tile_dim_reconfig_en adds an llk_pack_init(new_cb_id), which
// runs whether or not the format is reprogrammed: an init on the pack lane.
template <bool is_tile_dim_reconfig_en = false>
ALWI void pack_reconfig_data_format(const uint32_t new_cb_id) {
    emu::timing_config(emu::kLanePack, true);
    emu::configure_pack(new_cb_id);
    if constexpr (is_tile_dim_reconfig_en) emu::timing_config(emu::kLanePack);
}
template <bool is_tile_dim_reconfig_en = false>
ALWI void pack_reconfig_data_format(const uint32_t old_cb_id, const uint32_t new_cb_id) {
    if (emu::reconfig_pack(old_cb_id, new_cb_id)) emu::timing_config(emu::kLanePack, true);
    if constexpr (is_tile_dim_reconfig_en) emu::timing_config(emu::kLanePack);
}

}  // namespace ckernel
