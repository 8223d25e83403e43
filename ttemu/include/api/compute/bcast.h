// Emulator implementation of api/compute/bcast.h: DST[idst] = A op bcast(B), A from icb0 (SrcA), B from icb1
// (SrcB). COL: B[r][0] for every column; ROW: B[bcast_row_idx][c] for every row; SCALAR: B[0][0].
// Broadcast ops overwrite DST. Numerics: emu/compute_fpu.h.
#pragma once

#include <cstdint>

#include "api/compute/common.h"
#include "emu/compute_fpu.h"
#include "emu/compute_state.h"

namespace ckernel {

namespace detail {
constexpr emu::Bcast to_emu_bcast(BroadcastType b) {
    return b == BroadcastType::COL ? emu::Bcast::Col
           : b == BroadcastType::ROW ? emu::Bcast::Row
           : b == BroadcastType::SCALAR ? emu::Bcast::Scalar
                                        : emu::Bcast::None;
}
inline emu::BinaryOp to_emu_bcast_op(EltwiseBinaryType t) {
    switch (t) {
        case EltwiseBinaryType::ELWADD: return emu::BinaryOp::Add;
        case EltwiseBinaryType::ELWSUB: return emu::BinaryOp::Sub;
        case EltwiseBinaryType::ELWMUL: return emu::BinaryOp::Mul;
        default: emu::fault("bcast: eltwise binary type %d is not modelled by the emulator", static_cast<int>(t));
    }
}
inline void bcast_tiles(EltwiseBinaryType op, BroadcastType dim, uint32_t icb0, uint32_t icb1, uint32_t itile0,
                        uint32_t itile1, uint32_t idst, uint32_t row_idx, const char* who) {
    emu::dst_for_math(idst, who);
    if (row_idx >= 32) emu::fault("%s: bcast_row_idx %u out of range", who, row_idx);
    float a[emu::kTileHW], b[emu::kTileHW];
    emu::unpack_cb_tile(icb0, itile0, emu::Src::A, a, who);
    emu::unpack_cb_tile(icb1, itile1, emu::Src::B, b, who);
    emu::fpu_binary_values(a, b, to_emu_bcast_op(op), to_emu_bcast(dim), row_idx, idst, false, who);
}
}  // namespace detail

// ---- unary broadcast: DST[dst_tile_index] = bcast(in tile). 32-bit formats are unpacked straight to DST.
template <BroadcastType bcast_type, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void unary_bcast_init(uint32_t icb) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)icb;
}

template <BroadcastType bcast_type, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void unary_bcast(uint32_t icb, uint32_t in_tile_index, uint32_t dst_tile_index) {
    const char* who = "unary_bcast";
    emu::DstSection& d = emu::dst_for_math(dst_tile_index, who);
    float a[emu::kTileHW], out[emu::kTileHW];
    emu::unpack_cb_tile(icb, in_tile_index, emu::Src::A, a, who);
    if (emu::cb_data_format(icb) == DataFormat::Float32) {  // unpack-to-dest: full fp32 (re-read exact values)
        emu::unpack_tile(DataFormat::Float32,
                         emu::l1(emu::cb_read_addr(icb) + in_tile_index * emu::cb_page_size(icb), 4096), a);
    }
    for (uint32_t r = 0; r < 32; ++r)
        for (uint32_t c = 0; c < 32; ++c) out[r * 32 + c] = emu::bcast_pick(a, detail::to_emu_bcast(bcast_type), r, c, 0);
    emu::dst_write_tile(d, dst_tile_index, out);
}

template <BroadcastType bcast_type>
ALWI void unary_bcast_uninit(uint32_t icb) {
    (void)icb;
}

// ---- binary broadcast
template <EltwiseBinaryType tBcastOp, BroadcastType tBcastDim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void any_tiles_bcast(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst,
                          uint32_t bcast_row_idx = 0) {
    detail::bcast_tiles(tBcastOp, tBcastDim, icb0, icb1, itile0, itile1, idst, bcast_row_idx, "any_tiles_bcast");
}
template <BroadcastType tBcastDim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_tiles_bcast(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst,
                          uint32_t bcast_row_idx = 0) {
    detail::bcast_tiles(EltwiseBinaryType::ELWADD, tBcastDim, icb0, icb1, itile0, itile1, idst, bcast_row_idx,
                        "add_tiles_bcast");
}
template <BroadcastType tBcastDim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_tiles_bcast(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst,
                          uint32_t bcast_row_idx = 0) {
    detail::bcast_tiles(EltwiseBinaryType::ELWSUB, tBcastDim, icb0, icb1, itile0, itile1, idst, bcast_row_idx,
                        "sub_tiles_bcast");
}
template <BroadcastType tBcastDim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_tiles_bcast(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst,
                          uint32_t bcast_row_idx = 0) {
    detail::bcast_tiles(EltwiseBinaryType::ELWMUL, tBcastDim, icb0, icb1, itile0, itile1, idst, bcast_row_idx,
                        "mul_tiles_bcast");
}

#define EMU_BCAST_FN(NAME, OP, DIM)                                                                           \
    template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>                                                      \
    ALWI void NAME(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst) {           \
        detail::bcast_tiles(EltwiseBinaryType::OP, BroadcastType::DIM, icb0, icb1, itile0, itile1, idst, 0, #NAME); \
    }
#define EMU_BCAST_ROW_FN(NAME, OP)                                                                                \
    template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>                                                          \
    ALWI void NAME(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst,                 \
                   uint32_t bcast_row_idx = 0) {                                                                  \
        detail::bcast_tiles(EltwiseBinaryType::OP, BroadcastType::ROW, icb0, icb1, itile0, itile1, idst,          \
                            bcast_row_idx, #NAME);                                                                \
    }
EMU_BCAST_FN(add_tiles_bcast_cols, ELWADD, COL)
EMU_BCAST_FN(sub_tiles_bcast_cols, ELWSUB, COL)
EMU_BCAST_FN(mul_tiles_bcast_cols, ELWMUL, COL)
EMU_BCAST_FN(add_tiles_bcast_scalar, ELWADD, SCALAR)
EMU_BCAST_FN(sub_tiles_bcast_scalar, ELWSUB, SCALAR)
EMU_BCAST_FN(mul_tiles_bcast_scalar, ELWMUL, SCALAR)
EMU_BCAST_ROW_FN(add_tiles_bcast_rows, ELWADD)
EMU_BCAST_ROW_FN(sub_tiles_bcast_rows, ELWSUB)
EMU_BCAST_ROW_FN(mul_tiles_bcast_rows, ELWMUL)
#undef EMU_BCAST_FN
#undef EMU_BCAST_ROW_FN

// ---- inits (operand formats come from compute_kernel_hw_startup / reconfig_data_format)
template <EltwiseBinaryType tBcastOp, BroadcastType tBcastDim>
ALWI void bcast_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)icb0;
    (void)icb1;
    (void)call_line;
}
#define EMU_BCAST_INIT(NAME, OP, DIM)                                                        \
    ALWI void NAME(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {    \
        bcast_init<EltwiseBinaryType::OP, BroadcastType::DIM>(icb0, icb1, call_line);        \
    }
EMU_BCAST_INIT(add_bcast_rows_init, ELWADD, ROW)
EMU_BCAST_INIT(sub_bcast_rows_init, ELWSUB, ROW)
EMU_BCAST_INIT(mul_bcast_rows_init, ELWMUL, ROW)
EMU_BCAST_INIT(add_bcast_cols_init, ELWADD, COL)
EMU_BCAST_INIT(sub_bcast_cols_init, ELWSUB, COL)
EMU_BCAST_INIT(mul_bcast_cols_init, ELWMUL, COL)
EMU_BCAST_INIT(add_bcast_scalar_init, ELWADD, SCALAR)
EMU_BCAST_INIT(sub_bcast_scalar_init, ELWSUB, SCALAR)
EMU_BCAST_INIT(mul_bcast_scalar_init, ELWMUL, SCALAR)
#undef EMU_BCAST_INIT

}  // namespace ckernel
