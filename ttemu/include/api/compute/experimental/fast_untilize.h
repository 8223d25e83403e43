// Emulator implementation of api/compute/experimental/fast_untilize.h (ttnn 0.81.1 wheel).
//
// Blackhole's fast untilize (tt_llk_blackhole llk_lib/experimental: llk_unpack / llk_math / llk_pack
// _fast_untilize) is the row-major counterpart of fast tilize: unpack and math place a row of 2, 3 or 4 tiles in
// DST in the order the packer needs, and the packer writes whole row-major strips with all four interfaces active.
// What lands in L1 is what pack_untilize_block writes for the same tiles: full_ct_dim tiles read from the front of
// icb (starting input_tile_index tiles in), copied through DST (rounded to its format) and written row-major as one
// tile-row of ocb (starting output_tile_index pages past its write pointer). Both indices are explicit on silicon
// (get_output_tile_address / the unpacker's fifo_rd_ptr + index), so the sequential pack counter is not used.
// The LLK splits a row wider than DST into 2/3/4-tile units; the emulator's untilize has no DST capacity to
// respect, so a row is one step. On Wormhole (no ARCH_BLACKHOLE) the wheel's header falls back to
// pack_untilize_init / _block / _uninit with block = full row; this one does the same.
//
// Timing: modelled as pack_untilize_block's (one copy through math per tile, then an untilizing pack); the fast
// path's fewer, wider PACRs are not modelled, so a Blackhole untilize is modelled at the regular path's cost.
#pragma once

#include <cstdint>
#include <memory>

#include "api/compute/pack_untilize.h"
#include "api/compute/reconfig_data_format.h"
#include "emu/compute_tilize.h"
#include "emu/compute_unpack.h"
#include "emu/timing_hooks.h"

namespace ckernel {

#ifdef ARCH_BLACKHOLE
namespace emu_fast_untilize {
inline void block(uint32_t icb, uint32_t ocb, uint32_t full_ct, uint32_t input_tile_index,
                  uint32_t output_tile_index) {
    constexpr const char* who = "fast_untilize_block";
    if (output_tile_index % full_ct != 0)
        emu::fault("%s: output_tile_index %u is not a multiple of the row's %u tiles (a row starting mid-row of the "
                   "output block is not modelled by the emulator)",
                   who, output_tile_index, full_ct);
    emu::TileGeom g = emu::cb_tile_geom(icb, false);
    if (auto* tr = emu::timing_risc())
        tr->compute(timing::Op::Copy, full_ct, full_ct, emu::timing_tile_bytes(icb, false),
                    emu::compute_config().math_fidelity);
    std::unique_ptr<float[]> tiles(new float[full_ct * emu::kTileHW]);
    for (uint32_t c = 0; c < full_ct; ++c) {
        float* t = &tiles[c * emu::kTileHW];
        emu::unpack_cb_tile(icb, input_tile_index + c, emu::Src::A, t, who);
        for (uint32_t i = 0; i < emu::kTileHW; ++i) t[i] = emu::dst_round(t[i]);
    }
    emu::untilize_write(tiles.get(), full_ct, ocb, output_tile_index / full_ct, 0, full_ct, g, who);
}
}  // namespace emu_fast_untilize
#endif

template <std::uint32_t full_ct_dim, bool configure_remap, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_untilize_init_impl(uint32_t icb, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    static_assert(full_ct_dim > 0, "fast_untilize full_ct_dim must be greater than 0");
    pack_untilize_init<full_ct_dim, full_ct_dim, is_fp32_dest_acc_en>(icb, ocb, call_line);
#ifdef ARCH_BLACKHOLE
    if constexpr (full_ct_dim > 1) pack_reconfig_data_format(ocb);  // the LLK's llk_pack_reconfig_data_format(ocb)
#endif
}

template <std::uint32_t full_ct_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_untilize_init(uint32_t icb, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    fast_untilize_init_impl<full_ct_dim, true, is_fp32_dest_acc_en>(icb, ocb, call_line);
}

template <std::uint32_t full_ct_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_untilize_init_skip_remap(uint32_t icb, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    fast_untilize_init_impl<full_ct_dim, false, is_fp32_dest_acc_en>(icb, ocb, call_line);
}

template <std::uint32_t full_ct_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_untilize_block(uint32_t icb, uint32_t ocb, uint32_t input_tile_index = 0,
                              uint32_t output_tile_index = 0) {
    static_assert(full_ct_dim > 0, "fast_untilize full_ct_dim must be greater than 0");
#ifdef ARCH_BLACKHOLE
    if constexpr (full_ct_dim == 1) {
        pack_untilize_block<1, 1, is_fp32_dest_acc_en>(icb, 1, ocb, 0);
    } else {
        emu_fast_untilize::block(icb, ocb, full_ct_dim, input_tile_index, output_tile_index);
    }
#else
    (void)input_tile_index, (void)output_tile_index;
    pack_untilize_block<full_ct_dim, full_ct_dim, is_fp32_dest_acc_en>(icb, 1, ocb, 0);
#endif
}

template <std::uint32_t full_ct_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fast_untilize_uninit(uint32_t ocb) {
    static_assert(full_ct_dim > 0, "fast_untilize full_ct_dim must be greater than 0");
    pack_untilize_uninit<is_fp32_dest_acc_en>(ocb);
#ifdef ARCH_BLACKHOLE
    if constexpr (full_ct_dim > 1) pack_reconfig_data_format(ocb);  // the LLK's llk_pack_reconfig_data_format(ocb)
#endif
}

}  // namespace ckernel
