// Emulator implementation of api/compute/compute_kernel_hw_startup.h: one-time unpacker/math/packer configuration.
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "api/compute/src_order.h"
#include "emu/compute_state.h"

namespace emu {

// Checks that the kernel was compiled for the program's ComputeConfig (DST_ACCUM_MODE etc. are constexpr).
inline void check_compile_time_config() {
    const ComputeConfig& c = compute_config();
    if (DST_ACCUM_MODE != c.fp32_dest_acc_en || APPROX != c.math_approx_mode ||
        static_cast<uint8_t>(MATH_FIDELITY) != c.math_fidelity ||
        (DST_SYNC_MODE == ckernel::DstSync::SyncFull) != c.dst_full_sync_en)
        fault("compute kernel compiled with DST_ACCUM_MODE=%d APPROX=%d MATH_FIDELITY=%d full_sync=%d but the "
              "program's ComputeConfig has fp32_dest_acc_en=%d math_approx_mode=%d math_fidelity=%d "
              "dst_full_sync_en=%d (pass -DEMU_DST_ACCUM_MODE etc. when building the kernel)",
              int(DST_ACCUM_MODE), int(APPROX), int(MATH_FIDELITY), int(DST_SYNC_MODE == ckernel::DstSync::SyncFull),
              int(c.fp32_dest_acc_en), int(c.math_approx_mode), int(c.math_fidelity), int(c.dst_full_sync_en));
}

}  // namespace emu

namespace ckernel {

// Must be the first compute API call of the kernel. Resets the emulated engine (DST, configuration) and programs
// SrcA/SrcB formats from (icb0, icb1) per src_order, and the packer from ocb.
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath | emu::kLanePack);
    emu::check_compile_time_config();
    emu::compute_state_reset();
    constexpr bool reverse = src_order == SrcOrder::Reverse;
    emu::configure_srca(reverse ? icb1 : icb0);
    emu::configure_srcb(reverse ? icb0 : icb1);
    emu::configure_pack(ocb);
    emu::cstate().started = true;
}

ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t ocb) { compute_kernel_hw_startup(icb0, icb0, ocb); }

}  // namespace ckernel
