// Emulator implementation of api/compute/transpose.h: DST[idst] = transpose(CB tile) through SrcA.
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_fpu.h"

namespace ckernel {

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void transpose_init(uint32_t icb, uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)icb;
    (void)call_line;
}

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void transpose_tile(uint32_t icb, uint32_t itile, uint32_t idst) {
    emu::fpu_copy_tile(icb, itile, idst, 3, "transpose_tile");
}

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void transpose_block(uint32_t icb, uint32_t start_itile, uint32_t start_idst, uint32_t ntiles) {
    for (uint32_t i = 0; i < ntiles; ++i) emu::fpu_copy_tile(icb, start_itile + i, start_idst + i, 3, "transpose_block");
}

}  // namespace ckernel
