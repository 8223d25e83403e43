// Emulator implementation of api/compute/tile_move_copy.h: CB tile -> SrcA -> DST.
#pragma once

#include "api/compute/common.h"  // as the wheel's API headers: the whole common compute API
#include <cstdint>

#include "api/compute/common_globals.h"
#include "api/compute/reconfig_data_format.h"
#include "emu/compute_fpu.h"
#include "emu/compute_state.h"

namespace ckernel {

// Init for copy_tile / copy_block. As in the Wormhole unpacker (llk_unpack_A init): transpose != 0 reorders the
// faces (face 1 <-> face 2), transpose_within_16x16_face != 0 transposes each 16x16 face; both = 32x32 transpose.
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void copy_init(std::uint32_t cbid, std::uint32_t transpose = 0, std::uint32_t transpose_within_16x16_face = false,
                    std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)cbid;
    (void)call_line;
    emu::cstate().copy_transpose = (transpose ? 1u : 0u) | (transpose_within_16x16_face ? 2u : 0u);
}

ALWI void dummy_unpack(std::uint32_t cb_id) { (void)cb_id; }

// Tile in_tile_index of the front of in_cb_id -> DST tile dst_tile_index.
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void copy_tile(std::uint32_t in_cb_id, std::uint32_t in_tile_index, std::uint32_t dst_tile_index) {
    emu::fpu_copy_tile(in_cb_id, in_tile_index, dst_tile_index, emu::cstate().copy_transpose, "copy_tile");
}

// ntiles tiles from start_in_tile_index -> DST tiles from start_dst_tile_index.
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void copy_block(std::uint32_t in_cb_id, std::uint32_t start_in_tile_index, std::uint32_t start_dst_tile_index,
                     std::uint32_t ntiles) {
    for (std::uint32_t i = 0; i < ntiles; ++i)
        emu::fpu_copy_tile(in_cb_id, start_in_tile_index + i, start_dst_tile_index + i,
                           emu::cstate().copy_transpose, "copy_block");
}

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("Renamed to copy_init(). This will be removed after 20-09-2026.")]] ALWI void copy_tile_init(
    std::uint32_t cbid, std::uint32_t call_line = __builtin_LINE()) {
    copy_init<is_fp32_dest_acc_en>(cbid, 0, false, call_line);
}

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("Renamed to copy_init(). This will be removed after 20-09-2026.")]] ALWI void copy_tile_to_dst_init_short(
    std::uint32_t cbid, std::uint32_t transpose = 0, std::uint32_t transpose_within_16x16_face = false,
    std::uint32_t call_line = __builtin_LINE()) {
    copy_init<is_fp32_dest_acc_en>(cbid, transpose, transpose_within_16x16_face, call_line);
}

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("Call reconfig_data_format_srca(old, new) then copy_init(new, transpose). This will be removed after "
             "20-09-2026.")]] ALWI void
copy_tile_to_dst_init_short_with_dt(std::uint32_t old_cbid, std::uint32_t new_cbid, std::uint32_t transpose = 0) {
    reconfig_data_format_srca(old_cbid, new_cbid);
    copy_init<is_fp32_dest_acc_en>(new_cbid, transpose);
}

}  // namespace ckernel
