// Emulator implementation of api/compute/eltwise_binary.h: DST[idst] = A op B with A from icb0 (SrcA) and B from
// icb1 (SrcB). add/sub accumulate into DST when their init had acc_to_dest; mul overwrites DST (its fidelity
// phases accumulate into a cleared tile). Numerics: emu/compute_fpu.h.
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_fpu.h"
#include "emu/compute_state.h"

namespace ckernel {

namespace detail {
inline emu::BinaryOp to_emu(EltwiseBinaryType t, const char* who) {
    switch (t) {
        case EltwiseBinaryType::ELWADD: return emu::BinaryOp::Add;
        case EltwiseBinaryType::ELWSUB: return emu::BinaryOp::Sub;
        case EltwiseBinaryType::ELWMUL: return emu::BinaryOp::Mul;
        default: emu::fault("%s: eltwise binary type %d is not modelled by the emulator", who, static_cast<int>(t));
    }
}
}  // namespace detail

template <bool full_init, EltwiseBinaryType eltwise_binary_type>
ALWI void binary_tiles_init(std::uint32_t icb0, std::uint32_t icb1, bool acc_to_dest = false,
                            std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)icb0;
    (void)icb1;
    (void)call_line;
    emu::cstate().binary_acc_to_dest = acc_to_dest && eltwise_binary_type != EltwiseBinaryType::ELWMUL;
}

ALWI void add_init(std::uint32_t icb0, std::uint32_t icb1, bool acc_to_dest = false,
                   std::uint32_t call_line = __builtin_LINE()) {
    binary_tiles_init<true, EltwiseBinaryType::ELWADD>(icb0, icb1, acc_to_dest, call_line);
}
ALWI void sub_init(std::uint32_t icb0, std::uint32_t icb1, bool acc_to_dest = false,
                   std::uint32_t call_line = __builtin_LINE()) {
    binary_tiles_init<true, EltwiseBinaryType::ELWSUB>(icb0, icb1, acc_to_dest, call_line);
}
// acc_to_dest is unused on Wormhole for mul (header note); mul_tiles overwrites DST.
ALWI void mul_init(std::uint32_t icb0, std::uint32_t icb1, bool acc_to_dest = true,
                   std::uint32_t call_line = __builtin_LINE()) {
    binary_tiles_init<true, EltwiseBinaryType::ELWMUL>(icb0, icb1, acc_to_dest, call_line);
}

template <EltwiseBinaryReuseDestType reuse_dest>
ALWI void add_reuse_dest_init(std::uint32_t icb, std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    static_assert(reuse_dest != EltwiseBinaryReuseDestType::NONE, "reuse_dest must be DEST_TO_SRCA or DEST_TO_SRCB");
    (void)icb;
    (void)call_line;
}
template <EltwiseBinaryReuseDestType reuse_dest>
ALWI void sub_reuse_dest_init(std::uint32_t icb, std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    static_assert(reuse_dest != EltwiseBinaryReuseDestType::NONE, "reuse_dest must be DEST_TO_SRCA or DEST_TO_SRCB");
    (void)icb;
    (void)call_line;
}
template <EltwiseBinaryReuseDestType reuse_dest>
ALWI void mul_reuse_dest_init(std::uint32_t icb, std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    static_assert(reuse_dest != EltwiseBinaryReuseDestType::NONE, "reuse_dest must be DEST_TO_SRCA or DEST_TO_SRCB");
    (void)icb;
    (void)call_line;
}

template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_tiles(std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1,
                    std::uint32_t idst) {
    emu::fpu_binary_tiles(icb0, icb1, itile0, itile1, idst, emu::BinaryOp::Mul, emu::Bcast::None, 0, "mul_tiles");
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_tiles(std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1,
                    std::uint32_t idst) {
    emu::fpu_binary_tiles(icb0, icb1, itile0, itile1, idst, emu::BinaryOp::Add, emu::Bcast::None, 0, "add_tiles");
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_tiles(std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1,
                    std::uint32_t idst) {
    emu::fpu_binary_tiles(icb0, icb1, itile0, itile1, idst, emu::BinaryOp::Sub, emu::Bcast::None, 0, "sub_tiles");
}

#define EMU_BINARY_BLOCK(NAME, OP)                                                                                \
    template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>                                                          \
    ALWI void NAME(std::uint32_t icb0, std::uint32_t icb1, std::uint32_t start_itile0, std::uint32_t start_itile1, \
                   std::uint32_t start_idst, std::uint32_t ntiles) {                                              \
        for (std::uint32_t i = 0; i < ntiles; ++i)                                                                \
            emu::fpu_binary_tiles(icb0, icb1, start_itile0 + i, start_itile1 + i, start_idst + i, OP,             \
                                  emu::Bcast::None, 0, #NAME);                                                    \
    }
EMU_BINARY_BLOCK(mul_block, emu::BinaryOp::Mul)
EMU_BINARY_BLOCK(add_block, emu::BinaryOp::Add)
EMU_BINARY_BLOCK(sub_block, emu::BinaryOp::Sub)
#undef EMU_BINARY_BLOCK

// DST[dst_tile_index] = (DST op CB) for DEST_TO_SRCA, (CB op DST) for DEST_TO_SRCB.
template <EltwiseBinaryType eltwise_binary_type, EltwiseBinaryReuseDestType reuse_dest,
          bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void binary_reuse_dest_tiles(std::uint32_t in_cb_id, std::uint32_t in_tile_index, std::uint32_t dst_tile_index) {
    static_assert(reuse_dest != EltwiseBinaryReuseDestType::NONE, "reuse_dest must be DEST_TO_SRCA or DEST_TO_SRCB");
    emu::fpu_binary_reuse_dest(in_cb_id, in_tile_index, dst_tile_index,
                               detail::to_emu(eltwise_binary_type, "binary_reuse_dest_tiles"),
                               reuse_dest == EltwiseBinaryReuseDestType::DEST_TO_SRCA, "binary_reuse_dest_tiles");
}
template <EltwiseBinaryReuseDestType reuse_dest, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_reuse_dest_tiles(std::uint32_t in_cb_id, std::uint32_t in_tile_index, std::uint32_t dst_tile_index) {
    binary_reuse_dest_tiles<EltwiseBinaryType::ELWADD, reuse_dest>(in_cb_id, in_tile_index, dst_tile_index);
}
template <EltwiseBinaryReuseDestType reuse_dest, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_reuse_dest_tiles(std::uint32_t in_cb_id, std::uint32_t in_tile_index, std::uint32_t dst_tile_index) {
    binary_reuse_dest_tiles<EltwiseBinaryType::ELWSUB, reuse_dest>(in_cb_id, in_tile_index, dst_tile_index);
}
template <EltwiseBinaryReuseDestType reuse_dest, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_reuse_dest_tiles(std::uint32_t in_cb_id, std::uint32_t in_tile_index, std::uint32_t dst_tile_index) {
    binary_reuse_dest_tiles<EltwiseBinaryType::ELWMUL, reuse_dest>(in_cb_id, in_tile_index, dst_tile_index);
}

}  // namespace ckernel
