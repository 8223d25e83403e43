// Emulator implementation of api/compute/untilize.h (the unpacker-based untilize, deprecated upstream): full_ct_dim
// tiles from the front of icb become one tile-row of row-major data in ocb (model: emu/compute_tilize.h).
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_tilize.h"

namespace ckernel {

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("unpack-based untilize is deprecated; use pack_untilize instead. Scheduled for removal, see "
             "tt-metal#22904.")]] ALWI void
untilize_init(uint32_t icb, uint32_t call_line = __builtin_LINE()) {
    (void)icb, (void)call_line;
}
template <uint32_t block_ct_dim = 1, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("unpack-based untilize is deprecated; use pack_untilize instead. Scheduled for removal, see "
             "tt-metal#22904.")]] ALWI void
untilize_block(uint32_t icb, uint32_t full_ct_dim, uint32_t ocb) {
    emu::pack_untilize_block(icb, 1, ocb, full_ct_dim, full_ct_dim, 0, "untilize_block");
}
[[deprecated("unpack-based untilize is deprecated; use pack_untilize instead. Scheduled for removal, see "
             "tt-metal#22904.")]] ALWI void
untilize_uninit(uint32_t icb) {
    (void)icb;
}

}  // namespace ckernel
