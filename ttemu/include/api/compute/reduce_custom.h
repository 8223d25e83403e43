// Emulator implementation of api/compute/reduce_custom.h: reduce_block_max_row (model: emu/compute_fpu.h
// fpu_reduce_block_max_row); the packer keeps column 0 (REDUCE_ROW mask) between init and uninit.
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_fpu.h"
#include "llk_defs.h"

namespace ckernel {

namespace detail {
inline void block_max_row_init() { emu::cstate().reduce_mask = emu::ReduceMask::Row; }
}  // namespace detail

template <std::uint32_t block_ct_dim, bool respect_trigger = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void reduce_block_max_row_init(const ckernel::TensorShape& tensor_shape, std::uint32_t ocb) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)tensor_shape, (void)ocb;
    detail::block_max_row_init();
}
template <std::uint32_t block_ct_dim, bool respect_trigger = false, std::uint32_t num_faces = 4>
ALWI void reduce_block_max_row_init(std::uint32_t ocb) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)ocb;
    detail::block_max_row_init();
}
template <std::uint32_t block_ct_dim, bool respect_trigger = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void reduce_block_max_row(const ckernel::TensorShape& tensor_shape, std::uint32_t icb, std::uint32_t icb_scaler,
                               std::uint32_t row_start_index, std::uint32_t idst) {
    (void)tensor_shape;
    emu::fpu_reduce_block_max_row(icb, icb_scaler, row_start_index, idst, block_ct_dim, "reduce_block_max_row");
}
template <std::uint32_t block_ct_dim, bool respect_trigger = false, std::uint32_t num_faces = 4>
ALWI void reduce_block_max_row(std::uint32_t icb, std::uint32_t icb_scaler, std::uint32_t row_start_index,
                               std::uint32_t idst) {
    emu::fpu_reduce_block_max_row(icb, icb_scaler, row_start_index, idst, block_ct_dim, "reduce_block_max_row");
}
template <std::uint32_t block_ct_dim, bool respect_trigger = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void reduce_block_max_row_reinit_short(const ckernel::TensorShape& tensor_shape, std::uint32_t ocb) {
    (void)tensor_shape, (void)ocb;
    detail::block_max_row_init();
}
template <std::uint32_t block_ct_dim, bool respect_trigger = false, std::uint32_t num_faces = 4>
ALWI void reduce_block_max_row_reinit_short(std::uint32_t ocb) {
    (void)ocb;
    detail::block_max_row_init();
}
template <bool respect_trigger = false>
ALWI void reduce_block_max_row_uninit(std::uint32_t icb) {
    (void)icb;
    emu::cstate().reduce_mask = emu::ReduceMask::None;
}
ALWI void reduce_block_max_row_init_runtime(std::uint32_t ocb, std::uint32_t block_ct_dim, std::uint32_t icb,
                                            std::uint32_t icb_scaler, bool respect_trigger = false,
                                            std::uint32_t num_faces = 4) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)ocb, (void)block_ct_dim, (void)icb, (void)icb_scaler, (void)respect_trigger, (void)num_faces;
    detail::block_max_row_init();
}
ALWI void reduce_block_max_row_runtime(std::uint32_t icb, std::uint32_t icb_scaler, std::uint32_t row_start_index,
                                       std::uint32_t idst, bool respect_trigger = false,
                                       bool overlap_first_half = false, std::uint32_t num_faces = 4) {
    (void)respect_trigger, (void)overlap_first_half, (void)num_faces;
    emu::fpu_reduce_block_max_row(icb, icb_scaler, row_start_index, idst, 1, "reduce_block_max_row_runtime");
}
ALWI void reduce_block_max_row_uninit_runtime(std::uint32_t icb, bool respect_trigger = false,
                                              bool overlap_first_half = false) {
    (void)icb, (void)respect_trigger, (void)overlap_first_half;
    emu::cstate().reduce_mask = emu::ReduceMask::None;
}

}  // namespace ckernel
