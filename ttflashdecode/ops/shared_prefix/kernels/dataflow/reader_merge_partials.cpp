// SPDX-License-Identifier: Apache-2.0
//
// Shared-prefix decode, merge of the two levels' partials: reader (RISCV_1 / NCRISC, NoC 0).
//
// The prefix level and the suffix level (ttflashdecode/ops/shared_prefix) each wrote a partial per query row: O
// unnormalised, the running max m and the running sum l (kept unreduced: row r of the l tile holds 32 partial sums),
// as rows of vDHt + 2 float32 tiles of a [1, b, n_q_heads, v_head_dim + 64] tensor (O's columns, m's tile, l's tile).
// A tile row of that tensor is 32 q heads of one user, so the merge runs tile row by tile row: this reader streams
// tile row r of both partials into cb_a (prefix) and cb_b (suffix), whole tiles.
//
// A row a level did not produce (a user with no suffix this step, or whose positions or page table broke the position
// contract: that level's writer wrote zeros, so its l row is all zero) must weigh nothing in the merge: its m is set
// to MASKED_SCORE, so exp(m - m_new) == 0 against any live partial, and its O row is zeroed. When neither level has
// the row, the prefix's l gets 1 in column 0, so the merge gives O = 0 / 1: zeros, as the decode gives a skipped user.
// It also fills the reduce scaler (ones) compute takes the row sum of l with.
//
// Arguments (ttflashdecode/ops/shared_prefix/args.py): compile-time args in the order of MERGE_READER_ARGS (cb_a,
// cb_b, cb_ones, vDHt, a_cta_offset, b_cta_offset), then the partials' TensorAccessorArgs; runtime args a_addr,
// b_addr, first_row, num_rows (tile rows).

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"
#include "flash_decode_common.hpp"

using namespace flash_decode;

namespace {

constexpr uint32_t cb_a = get_compile_time_arg_val(0);
constexpr uint32_t cb_b = get_compile_time_arg_val(1);
constexpr uint32_t cb_ones = get_compile_time_arg_val(2);
constexpr uint32_t vDHt = get_compile_time_arg_val(3);
constexpr uint32_t row_tiles = vDHt + 2;  // O's columns, m, l
constexpr uint32_t a_cta_offset = get_compile_time_arg_val(4);
constexpr auto a_args = TensorAccessorArgs<a_cta_offset>();
constexpr uint32_t b_cta_offset = get_compile_time_arg_val(5);
constexpr auto b_args = TensorAccessorArgs<b_cta_offset>();
constexpr uint32_t tile_bytes = get_tile_size(cb_a);  // float32
static_assert(tile_bytes == TILE_HW * TILE_HW * 4, "the partials are float32 tiles");
constexpr uint32_t FP32_BYTES = 4;

using Words = CoreLocalMem<volatile uint32_t>;

uint32_t word_at(uint32_t tile_l1, uint32_t row, uint32_t col) {
    return tile_l1 + tile_datum_offset(row, col, FP32_BYTES);
}

// Whether row `row` of the l tile at `l_tile` is all zero (+0 or -0): no partial there.
bool row_is_empty(uint32_t l_tile, uint32_t row) {
    for (uint32_t col = 0; col < TILE_HW; ++col) {
        if ((Words(word_at(l_tile, row, col))[0] & 0x7FFFFFFFu) != 0) {
            return false;
        }
    }
    return true;
}

// Makes row `row` of the partial at `partial_l1` weigh nothing: O's row zero, m = MASKED_SCORE.
void void_row(uint32_t partial_l1, uint32_t row) {
    for (uint32_t c = 0; c < vDHt; ++c) {
        for (uint32_t col = 0; col < TILE_HW; ++col) {
            Words(word_at(partial_l1 + c * tile_bytes, row, col))[0] = 0;
        }
    }
    Words(word_at(partial_l1 + vDHt * tile_bytes, row, 0))[0] = __builtin_bit_cast(uint32_t, MASKED_SCORE);
}

}  // namespace

void kernel_main() {
    uint32_t arg = 0;
    const uint32_t a_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t b_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t first_row = get_arg_val<uint32_t>(arg++);
    const uint32_t num_rows = get_arg_val<uint32_t>(arg++);

    Noc noc;
    CircularBuffer a_buf(cb_a);
    CircularBuffer b_buf(cb_b);
    const auto a_pages = TensorAccessor(a_args, a_addr);
    const auto b_pages = TensorAccessor(b_args, b_addr);

    CircularBuffer ones_buf(cb_ones);  // bfloat16 ones: the row sum's scaler
    ones_buf.reserve_back(1);
    {
        CoreLocalMem<volatile uint16_t> ones(ones_buf.get_write_ptr());
        for (uint32_t i = 0; i < TILE_HW * TILE_HW; ++i) {
            ones[i] = float_to_bfloat16(1.0f);
        }
    }
    ones_buf.push_back(1);

    for (uint32_t r = first_row; r < first_row + num_rows; ++r) {
        a_buf.reserve_back(row_tiles);
        b_buf.reserve_back(row_tiles);
        for (uint32_t t = 0; t < row_tiles; ++t) {
            noc.async_read(a_pages, a_buf, tile_bytes, {.page_id = r * row_tiles + t}, {.offset_bytes = t * tile_bytes});
            noc.async_read(b_pages, b_buf, tile_bytes, {.page_id = r * row_tiles + t}, {.offset_bytes = t * tile_bytes});
        }
        noc.async_read_barrier();
        const uint32_t a_l1 = a_buf.get_write_ptr();
        const uint32_t b_l1 = b_buf.get_write_ptr();
        for (uint32_t row = 0; row < TILE_HW; ++row) {
            const bool a_empty = row_is_empty(a_l1 + (vDHt + 1) * tile_bytes, row);
            const bool b_empty = row_is_empty(b_l1 + (vDHt + 1) * tile_bytes, row);
            if (a_empty) {
                void_row(a_l1, row);
            }
            if (b_empty) {
                void_row(b_l1, row);
            }
            if (a_empty && b_empty) {
                Words(word_at(a_l1 + (vDHt + 1) * tile_bytes, row, 0))[0] = __builtin_bit_cast(uint32_t, 1.0f);
            }
        }
        a_buf.push_back(row_tiles);
        b_buf.push_back(row_tiles);
    }
}
