// Emulator implementation of api/compute/matmul.h: DST += A @ B (or A @ B^T) tile products, in0 -> SrcB, in1 -> SrcA
// (see emu/compute_fpu.h for the numerics and math-fidelity model).
#pragma once

#include "api/compute/common.h"  // as the wheel's API headers: the whole common compute API
#include <cstdint>

#include "api/compute/common_globals.h"
#include "emu/compute_fpu.h"
#include "emu/compute_state.h"

namespace ckernel {

// Short init for matmul_tiles; transpose != 0 transposes each in1 tile (faces and within faces).
ALWI void matmul_init(std::uint32_t in0_cb_id, std::uint32_t in1_cb_id, const std::uint32_t transpose = 0,
                      std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)in0_cb_id;
    (void)in1_cb_id;
    (void)call_line;
    emu::cstate().matmul_transpose = transpose;
}

ALWI void mm_uninit(std::uint32_t in0_cb_id, std::uint32_t in1_cb_id) {
    (void)in0_cb_id;
    (void)in1_cb_id;
}

// DST[idst] += in0[in0_tile_index] @ in1[in1_tile_index] (in1 transposed if matmul_init's transpose).
ALWI void matmul_tiles(std::uint32_t in0_cb_id, std::uint32_t in1_cb_id, std::uint32_t in0_tile_index,
                       std::uint32_t in1_tile_index, std::uint32_t idst) {
    emu::fpu_matmul(in0_cb_id, in1_cb_id, in0_tile_index, in1_tile_index, idst, emu::cstate().matmul_transpose != 0,
                    1, 1, 1, "matmul_tiles");
}

// Short init for matmul_block.
ALWI void matmul_block_init(std::uint32_t in0_cb_id, std::uint32_t in1_cb_id, const std::uint32_t transpose = 0,
                            std::uint32_t ct_dim = 1, std::uint32_t rt_dim = 1, std::uint32_t kt_dim = 1,
                            std::uint32_t call_line = __builtin_LINE()) {
    emu::timing_config(emu::kLaneUnpack | emu::kLaneMath);
    (void)in0_cb_id;
    (void)in1_cb_id;
    (void)ct_dim;
    (void)rt_dim;
    (void)kt_dim;
    (void)call_line;
    emu::cstate().matmul_transpose = transpose;
}

// One inner-dimension step of a block product: for r < rt_dim, c < ct_dim
//   DST[idst + r*ct_dim + c] += in0[in0_tile_index + r*kt_dim] @ op(in1[in1_tile_index + c])
// (tile addressing of the Wormhole matmul unpacker, llk_unpack_AB_matmul). The caller steps the inner dimension k
// by advancing in0_tile_index by 1 and in1_tile_index by ct_dim.
ALWI void matmul_block(std::uint32_t in0_cb_id, std::uint32_t in1_cb_id, std::uint32_t in0_tile_index,
                       std::uint32_t in1_tile_index, std::uint32_t idst, const std::uint32_t transpose,
                       std::uint32_t ct_dim, std::uint32_t rt_dim, std::uint32_t kt_dim,
                       std::uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    emu::fpu_matmul(in0_cb_id, in1_cb_id, in0_tile_index, in1_tile_index, idst, transpose != 0, ct_dim, rt_dim, kt_dim,
                    "matmul_block");
}

}  // namespace ckernel
