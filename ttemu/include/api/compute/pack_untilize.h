// Emulator implementation of api/compute/pack_untilize.h (model: emu/compute_tilize.h).
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_tilize.h"

#ifndef TILE_C_DIM
#define TILE_C_DIM 32
#endif

namespace ckernel {

template <uint32_t block_ct_dim = 8, uint32_t full_ct_dim = block_ct_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_untilize_init(uint32_t icb, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLanePack);
    static_assert(full_ct_dim % block_ct_dim == 0, "full_ct_dim must be a multiple of block_ct_dim");
    (void)icb, (void)ocb, (void)call_line;
}
template <uint32_t block_ct_dim = 8, uint32_t full_ct_dim = block_ct_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_untilize_init_skip_remap(uint32_t icb, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    pack_untilize_init<block_ct_dim, full_ct_dim, is_fp32_dest_acc_en>(icb, ocb, call_line);
}
template <uint32_t block_ct_dim = 8, uint32_t full_ct_dim = block_ct_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_untilize_block(uint32_t icb, uint32_t block_rt_dim, uint32_t ocb, uint32_t block_c_index = 0) {
    emu::pack_untilize_block(icb, block_rt_dim, ocb, block_ct_dim, full_ct_dim, block_c_index, "pack_untilize_block");
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_untilize_uninit(uint32_t ocb) {
    (void)ocb;
}

// Untilize straight from DST: tiles 0 .. block_ct_dim-1 of each of block_rt_dim DST rows (tile_dst_rt_offset
// onward) are written row-major into ocb.
template <uint32_t block_ct_dim = 8, uint32_t full_ct_dim = block_ct_dim, bool narrow_row = false,
          std::uint32_t row_num_datums = TILE_C_DIM, bool dense = false, bool configure_remap = true,
          bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_untilize_dest_init(uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLanePack);
    static_assert(!narrow_row && row_num_datums == TILE_C_DIM && !dense,
                  "pack_untilize_dest_init: narrow / dense rows are not modelled by the emulator");
    (void)ocb, (void)call_line;
}
template <uint32_t block_ct_dim = 8, uint32_t full_ct_dim = block_ct_dim, bool diagonal = false,
          bool narrow_row = false, std::uint32_t row_num_datums = TILE_C_DIM, uint32_t tile_dst_ct_offset = 0,
          bool dense = false>
ALWI void pack_untilize_dest(uint32_t ocb, uint32_t block_rt_dim = 1, uint32_t block_c_index = 0,
                             uint32_t tile_dst_rt_offset = 0) {
    static_assert(!diagonal && !narrow_row && row_num_datums == TILE_C_DIM && !dense,
                  "pack_untilize_dest: diagonal / narrow / dense modes are not modelled by the emulator");
    emu::ComputeState& s = emu::cstate();
    emu::TileGeom g = emu::cb_tile_geom(ocb, true);
    std::unique_ptr<float[]> tiles(new float[block_ct_dim * emu::kTileHW]);
    for (uint32_t r = 0; r < block_rt_dim; ++r) {
        for (uint32_t c = 0; c < block_ct_dim; ++c) {
            uint32_t idst = (tile_dst_rt_offset + r) * block_ct_dim + tile_dst_ct_offset + c;
            emu::DstSection& d = emu::dst_for_pack(idst, "pack_untilize_dest");
            std::memcpy(&tiles[c * emu::kTileHW], d.tile[idst], sizeof(float) * emu::kTileHW);
        }
        emu::untilize_write(tiles.get(), block_ct_dim, ocb, s.pack_seq[ocb], block_c_index * block_ct_dim,
                            full_ct_dim, g, "pack_untilize_dest");
        if (block_c_index + 1 >= full_ct_dim / block_ct_dim) ++s.pack_seq[ocb];
    }
}

}  // namespace ckernel
