// Emulator implementation of api/compute/eltwise_unary/recip.h: DST[idst] = 1 / DST[idst] (exact, then DST rounding,
// in every approximation mode).
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "emu/compute_sfpu.h"

namespace ckernel {

enum class ReciprocalDestAcc { BF16, FP32 };
enum class ReciprocalApproxMode { Default, Precise, Approximate };

template <ReciprocalDestAcc dest_acc = DST_ACCUM_MODE ? ReciprocalDestAcc::FP32 : ReciprocalDestAcc::BF16,
          ReciprocalApproxMode approximation = ReciprocalApproxMode::Default>
ALWI void recip_tile_init() {}

template <ReciprocalDestAcc dest_acc = DST_ACCUM_MODE ? ReciprocalDestAcc::FP32 : ReciprocalDestAcc::BF16,
          ReciprocalApproxMode approximation = ReciprocalApproxMode::Default>
ALWI void recip_tile(uint32_t idst, VectorMode vector_mode = VectorMode::RC) {
    if ((dest_acc == ReciprocalDestAcc::FP32) != emu::dst_fp32())
        emu::fault("recip_tile: dest_acc template argument says %s DST but fp32_dest_acc_en=%d",
                   dest_acc == ReciprocalDestAcc::FP32 ? "fp32" : "bf16", int(emu::dst_fp32()));
    emu::sfpu_unary(idst, static_cast<uint8_t>(vector_mode), "recip_tile", [](float x) { return 1.0f / x; });
}

}  // namespace ckernel
