// Emulator implementation of api/compute/pack.h (see emu/compute_pack.h for the packer model).
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "emu/compute_pack.h"
#include "emu/compute_state.h"

namespace ckernel {

// Packer init for ocb without an op init: programs the output format and clears reduce edge masks.
ALWI void pack_init(std::uint32_t ocb, std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLanePack);
    (void)call_line;
    emu::configure_pack(ocb);
    emu::cstate().reduce_mask = emu::ReduceMask::None;
}

// DST tile ifrom_dst -> next reserved tile of icb (sequential), or reserved tile output_tile_index when
// out_of_order_output.
template <bool out_of_order_output = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_tile(std::uint32_t ifrom_dst, std::uint32_t icb, std::uint32_t output_tile_index = 0) {
    emu::pack_dst_tile(ifrom_dst, icb, output_tile_index, out_of_order_output, "pack_tile");
}

// ntiles consecutive DST tiles from ifrom_dst -> the next ntiles reserved tiles of icb.
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_block(std::uint32_t ifrom_dst, std::uint32_t icb, std::uint32_t ntiles) {
    for (std::uint32_t i = 0; i < ntiles; ++i) emu::pack_dst_tile(ifrom_dst + i, icb, 0, false, "pack_block");
}

ALWI void dummy_pack(std::uint32_t cb_id) { (void)cb_id; }

// Packer L1 accumulation: while enabled, pack_tile adds the DST tile to the tile already at the destination in L1.
ALWI void pack_reconfig_l1_acc(const std::uint32_t l1_acc_en) { emu::cstate().pack_l1_acc = l1_acc_en != 0; }

}  // namespace ckernel

#if __has_include("llk_emu_api.h")
#include "llk_emu_api.h"
namespace ckernel {
// Packer ReLU (wheel api/compute/pack.h): applied to every packed datum until reconfigured.
ALWI void pack_relu_config(const ReluConfig& config) { llk_pack_relu_config(config); }
}  // namespace ckernel
#endif
