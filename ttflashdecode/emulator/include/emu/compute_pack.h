// Packer model of the emulated compute engine: DST tile -> CB tile in the CB's data format.
//
//   * Sequential mode (pack_tile<false>): the i-th pack since the last cb_push_back on that CB writes reserved tile
//     i, ignoring output_tile_index. Out-of-order mode (pack_tile<true>) writes reserved tile output_tile_index.
//     Either must stay inside what cb_reserve_back reserved.
//   * The packer converts with the format it was configured for (compute_kernel_hw_startup's ocb,
//     pack_reconfig_data_format); a CB of another format faults (silicon would write mis-formatted bytes).
//   * After reduce_init the packer's edge mask zeroes every datum that is not part of the reduce result (reduce.h
//     contract) until reduce_uninit (or pack_init / compute_kernel_hw_startup reprogram the packer).
//   * Conversion: emu::pack_tile (bf16 round to nearest even, bfp shared exponent per face row, as ttnn's host).
#pragma once

#include <cstdint>

#include "emu/compute_state.h"
#include "emu/formats.h"
#include "emu/runtime.h"

namespace emu {

inline void pack_dst_tile(uint32_t idst, uint32_t cb, uint32_t out_index, bool out_of_order, const char* who) {
    ComputeState& s = cstate();
    DstSection& d = dst_for_pack(idst, who);
    if (cb >= kNumCbs) fault("%s: cb %u out of range", who, cb);
    DataFormat f = cb_data_format(cb);
    if (f != s.pack_fmt)
        fault("%s: packer is configured for %s (cb %u) but cb %u holds %s: missing pack_reconfig_data_format(%u)?",
              who, data_format_name(s.pack_fmt), s.pack_cb, cb, data_format_name(f), cb);
    uint32_t index = out_of_order ? out_index : s.pack_seq[cb];
    if (!cb_pages_reservable_at_back(cb, index + 1))
        fault("%s: packs tile %u of cb %u but fewer than %u tiles are reserved (missing cb_reserve_back?)", who,
              index, cb, index + 1);
    float v[kTileHW];
    const float* src = d.tile[idst];
    for (uint32_t i = 0; i < kTileHW; ++i) v[i] = src[i];
    if (s.reduce_mask != ReduceMask::None) {
        for (uint32_t r = 0; r < 32; ++r)
            for (uint32_t c = 0; c < 32; ++c) {
                bool keep = s.reduce_mask == ReduceMask::Row   ? c == 0
                            : s.reduce_mask == ReduceMask::Col ? r == 0
                                                               : (r == 0 && c == 0);
                if (!keep) v[r * 32 + c] = 0.0f;
            }
    }
    uint32_t page = cb_page_size(cb);
    uint32_t bytes = tile_size_bytes(f);
    if (page < bytes) fault("%s: cb %u page size %u is smaller than a %s tile (%u B)", who, cb, page, data_format_name(f), bytes);
    pack_tile(f, v, l1(cb_write_addr(cb) + index * page, bytes));
    if (!out_of_order) ++s.pack_seq[cb];
    count(Counter::TilesPacked);
}

}  // namespace emu
