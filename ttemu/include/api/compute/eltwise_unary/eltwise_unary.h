// Emulator implementation of api/compute/eltwise_unary/eltwise_unary.h (deprecated all-in-one inits).
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/tile_move_copy.h"

namespace ckernel {

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("Use compute_kernel_hw_startup(icb, ocb) once at kernel start, then copy_init(icb). This will be removed "
             "after 20-09-2026.")]] ALWI void
unary_op_init_common(uint32_t icb, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    compute_kernel_hw_startup(icb, ocb);
    copy_init<is_fp32_dest_acc_en>(icb, 0, 0, call_line);
}

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("Use compute_kernel_hw_startup(icb, ocb) once at kernel start, then copy_init(icb). This will be removed "
             "after 20-09-2026.")]] ALWI void
init_sfpu(uint32_t icb, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    compute_kernel_hw_startup(icb, ocb);
    copy_init<is_fp32_dest_acc_en>(icb, 0, 0, call_line);
}

}  // namespace ckernel
