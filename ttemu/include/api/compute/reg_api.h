// Emulator implementation of api/compute/reg_api.h: the DST register ownership protocol (see emu/compute_state.h).
#pragma once

#include "api/compute/common_globals.h"
#include "emu/compute_state.h"

namespace ckernel {

// MATH takes a DST section (legacy: MATH and PACK share it until release_dst).
[[deprecated("Use tile_regs_acquire() instead")]] ALWI void acquire_dst() {
    emu::dst_math_acquire("acquire_dst");
    emu::cstate().legacy_dst = true;
}

// MATH takes a free DST section.
ALWI void tile_regs_acquire() { emu::dst_math_acquire("tile_regs_acquire"); }

// PACK takes the oldest section MATH committed.
ALWI void tile_regs_wait() { emu::dst_pack_wait("tile_regs_wait"); }

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("Use tile_regs_release() instead")]] ALWI void release_dst() {
    emu::ComputeState& s = emu::cstate();
    if (!s.legacy_dst) emu::fault("release_dst without acquire_dst");
    emu::dst_math_commit("release_dst");
    emu::dst_pack_wait("release_dst");
    emu::dst_pack_release("release_dst");
    s.legacy_dst = false;
}

// MATH hands its section to PACK.
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tile_regs_commit() {
    emu::dst_math_commit("tile_regs_commit");
}

// PACK frees its section (cleared for the next acquire).
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tile_regs_release() {
    emu::dst_pack_release("tile_regs_release");
}

}  // namespace ckernel
