// LLK entry points (the wheel's llk_api layer: llk_unpack_*, llk_math_*, llk_pack_*) that compute kernels call
// directly, over the emulator's unpack / math / pack model. One host thread runs UNPACK, MATH and PACK, so an
// entry point of each thread acts on the one compute state; the effects modelled are those that change results.
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "emu/compute_reconfig.h"
#include "emu/compute_state.h"
#include "emu/formats.h"
#include "llk_defs.h"

namespace ckernel {

// Unpacker A init (copy / unary / bcast paths): transpose_of_faces swaps faces 1 and 2, within_face_16x16_transpose
// transposes each face, as copy_init programs them.
template <BroadcastType BType = BroadcastType::NONE, bool acc_to_dest = false,
          EltwiseBinaryReuseDestType binary_reuse_dest = EltwiseBinaryReuseDestType::NONE, bool unpack_to_dest = false>
inline void llk_unpack_A_init(const std::uint32_t transpose_of_faces, const std::uint32_t within_face_16x16_transpose,
                              const std::uint32_t operand) {
    (void)operand;
    emu::cstate().copy_transpose = (transpose_of_faces ? 1u : 0u) | (within_face_16x16_transpose ? 2u : 0u);
}

// Math datacopy init (A2D / B2D): configuration only; datacopy numerics are copy_tile's.
template <DataCopyType type, bool is_fp32_dest_acc_en, BroadcastType src_b_bcast_type = BroadcastType::NONE,
          bool is_int_fpu_en = false, PackMode pack_mode = PackMode::Default>
inline void llk_math_eltwise_unary_datacopy_init(const std::uint32_t operand) {
    (void)operand;
}

// Packer ReLU (Packers/ReLU.md): applied to every packed datum until reconfigured.
inline void llk_pack_relu_config(const ReluConfig& relu_config) {
    emu::ComputeState& s = emu::cstate();
    s.pack_relu_mode = static_cast<std::uint8_t>(relu_config.get_mode());
    s.pack_relu_threshold = emu::bf16_bits_to_f32(static_cast<std::uint16_t>(relu_config.get_threshold()));
}

// Packer L1 accumulation: pack_tile adds to the destination tile in L1 while enabled.
inline void llk_pack_reconfig_l1_acc(const std::uint32_t enable) { emu::cstate().pack_l1_acc = enable != 0; }

}  // namespace ckernel

namespace ckernel {
// The FPU / SFPU special-value flags (NaN / Inf seen) are not modelled: reading them faults instead of returning a
// made-up value.
inline uint32_t llk_math_get_compute_special_value_flags() {
    emu::fault("get_compute_special_value_flags: the FPU/SFPU special-value flags are not modelled by the emulator");
}
template <bool isFpu>
inline uint32_t llk_math_extract_compute_special_value_flags(uint32_t) {
    emu::fault("get_compute_special_value_flags_%s: the special-value flags are not modelled by the emulator",
               isFpu ? "fpu" : "sfpu");
}
inline void llk_math_clear_compute_special_value_flags() {
    emu::fault("clear_compute_special_value_flags: the special-value flags are not modelled by the emulator");
}
}  // namespace ckernel

namespace ckernel {

// tt-llk llk_unpack_common.h: what a data-format reconfig does to the unpacker's dim / stride registers.
enum class p_dim_stride_target { IGNORE, FACE_ROW_MAJOR };

// Data-format reconfiguration of SrcA / SrcB by the LLK API's (old, new) forms (llk_unpack_common_api.h,
// llk_math_common_api.h), as the reduce helpers call them around an init: each thread's half reprograms only when its
// comparison of the two operands asks for it (emu/compute_reconfig.h), and charges kReconfigCycles on its lane when
// it does. The math half programs the ALU's source format, which the emulator's FPU model takes from the unpacked
// operands: it changes only the timing.
template <bool is_fp32_dest_acc_en, p_dim_stride_target dim_stride_target = p_dim_stride_target::IGNORE,
          bool skip_int8 = false>
inline void llk_unpack_reconfig_data_format_srca(const std::uint32_t srca_old_operand,
                                                 const std::uint32_t srca_new_operand) {
    if (emu::reconfig_srca(srca_old_operand, srca_new_operand, dim_stride_target != p_dim_stride_target::IGNORE))
        emu::timing_config(emu::kLaneUnpack, true);
}
template <bool is_fp32_dest_acc_en, p_dim_stride_target dim_stride_target = p_dim_stride_target::IGNORE,
          bool skip_int8 = false>
inline void llk_unpack_reconfig_data_format_srcb(const std::uint32_t srcb_old_operand,
                                                 const std::uint32_t srcb_new_operand) {
    if (emu::reconfig_srcb(srcb_old_operand, srcb_new_operand, dim_stride_target != p_dim_stride_target::IGNORE))
        emu::timing_config(emu::kLaneUnpack, true);
}
template <bool is_fp32_dest_acc_en, bool to_from_int8 = false>
inline void llk_math_reconfig_data_format_srca(const std::uint32_t srca_old_operand,
                                               const std::uint32_t srca_new_operand) {
    if (emu::math_reconfig_needed(srca_old_operand, srca_new_operand)) emu::timing_config(emu::kLaneMath, true);
}
template <bool is_fp32_dest_acc_en, bool to_from_int8 = false>
inline void llk_math_reconfig_data_format_srcb(const std::uint32_t srcb_old_operand,
                                               const std::uint32_t srcb_new_operand) {
    if (emu::math_reconfig_needed(srcb_old_operand, srcb_new_operand)) emu::timing_config(emu::kLaneMath, true);
}

// Reduce inits of the unpack and math threads (llk_unpack_AB_reduce_api.h, llk_math_reduce_api.h): they program
// address modes and MOPs for reduce_tile; reduce_tile's numerics (emu/compute_fpu.h fpu_reduce) need nothing from
// them. The packer's part, the reduce mask, is llk_pack_reduce_mask_config below.
template <PoolType type, ReduceDim dim>
inline void llk_unpack_AB_reduce_init(const std::uint32_t operandA, const std::uint32_t operandB) {
    (void)operandA;
    (void)operandB;
}
template <PoolType type, ReduceDim dim, bool is_fp32_dest_acc_en, MathFidelity math_fidelity>
inline void llk_math_reduce_init(const std::uint32_t operandA, const std::uint32_t operandB) {
    (void)operandA;
    (void)operandB;
}

// Packer reduce mask (llk_pack_reduce_api.h): while set, the packer writes only the reduced row / column / datum
// of each tile and zeros elsewhere, as reduce_init leaves it; cleared by llk_pack_reduce_mask_clear.
template <ReduceDim dim, PackMode pack_mode = PackMode::Default>
inline void llk_pack_reduce_mask_config(const std::uint32_t ocb) {
    (void)ocb;
    emu::cstate().reduce_mask = dim == ReduceDim::REDUCE_ROW   ? emu::ReduceMask::Row
                                : dim == ReduceDim::REDUCE_COL ? emu::ReduceMask::Col
                                                               : emu::ReduceMask::Scalar;
}
inline void llk_pack_reduce_mask_clear() { emu::cstate().reduce_mask = emu::ReduceMask::None; }

}  // namespace ckernel

namespace ckernel {

// Eltwise binary inits of the math and unpack threads (llk_math_binary_api.h, llk_unpack_AB_api.h), as the eltwise
// helper library calls them for a broadcast operand: they program the FPU op, broadcast and fidelity for the
// *_tiles_bcast calls that follow, which carry those themselves here (api/compute/bcast.h). What an init leaves
// behind that changes a result is the accumulate-into-DEST flag of add / sub, as binary_tiles_init sets it.
template <EltwiseBinaryType eltwise_binary_type, BroadcastType src_b_bcast_type, MathFidelity math_fidelity,
          EltwiseBinaryReuseDestType binary_reuse_dest = EltwiseBinaryReuseDestType::NONE>
inline void llk_math_eltwise_binary_init(const std::uint32_t operand_A, const std::uint32_t operand_B,
                                         const std::uint32_t acc_to_dest = 0) {
    (void)operand_A;
    (void)operand_B;
    emu::cstate().binary_acc_to_dest = acc_to_dest != 0 && eltwise_binary_type != EltwiseBinaryType::ELWMUL;
}
template <BroadcastType BType = BroadcastType::NONE>
inline void llk_unpack_AB_init(const std::uint32_t operandA, const std::uint32_t operandB,
                               const Transpose transpose = Transpose::None) {
    (void)operandA;
    (void)operandB;
    if (transpose != Transpose::None)
        emu::fault("llk_unpack_AB_init: a transposed SrcA unpack is not modelled by the emulator");
}

}  // namespace ckernel
