// SPDX-License-Identifier: Apache-2.0
//
// FlashDecode reader (RISCV_0 / BRISC). For every group (batch b, kv head h) this core serves:
//   1. reads the group's query rows into one block of Q tiles (zero rows pad the tile),
//   2. streams the K chunks (and V chunks) of this core's share of [window_start, cur_pos] from interleaved
//      DRAM, double-buffered, reading no tile past cur_pos's tile or before the window's first tile,
//   3. builds the additive mask tiles for chunks that hold hidden positions (causal edge, window edge).
// It also reads the cur_pos tensor once and hands it to compute, and fills the constant tiles compute needs.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "flash_decode_common.hpp"

using namespace flash_decode;

namespace {

constexpr uint32_t cb_q = tt::CBIndex::c_0;
constexpr uint32_t cb_k = tt::CBIndex::c_1;
constexpr uint32_t cb_v = tt::CBIndex::c_2;
constexpr uint32_t cb_mask = tt::CBIndex::c_3;
constexpr uint32_t cb_scale = tt::CBIndex::c_4;
constexpr uint32_t cb_ones = tt::CBIndex::c_5;
constexpr uint32_t cb_cur_pos = tt::CBIndex::c_6;

constexpr uint32_t BF16_BYTES = 2;
constexpr uint32_t FACE_ROW_BYTES = FACE_HW * BF16_BYTES;  // one 16-datum row of a bfloat16 face

void fill_tile_bf16(uint32_t l1_addr, uint16_t bits) {
    auto* datums = reinterpret_cast<volatile tt_l1_ptr uint16_t*>(l1_addr);
    for (uint32_t i = 0; i < TILE_HW * TILE_HW; ++i) {
        datums[i] = bits;
    }
}

void zero_bytes(uint32_t l1_addr, uint32_t num_bytes) {
    auto* words = reinterpret_cast<volatile tt_l1_ptr uint32_t*>(l1_addr);
    for (uint32_t i = 0; i < num_bytes / sizeof(uint32_t); ++i) {
        words[i] = 0;
    }
}

}  // namespace

void kernel_main() {
    // ---- compile-time shape of the problem
    constexpr uint32_t DHt = get_compile_time_arg_val(0);          // K head dim in tiles
    constexpr uint32_t vDHt = get_compile_time_arg_val(1);         // V head dim in tiles
    constexpr uint32_t Sk_t = get_compile_time_arg_val(2);         // k_chunk_size in tiles
    constexpr uint32_t PNHt = get_compile_time_arg_val(3);         // Q row tiles per group
    constexpr uint32_t q_len = get_compile_time_arg_val(4);        // query tokens per user
    constexpr uint32_t heads_per_group = get_compile_time_arg_val(5);  // q heads per kv head
    constexpr uint32_t NQt = get_compile_time_arg_val(6);          // tile rows of q heads per user in DRAM
    constexpr uint32_t St = get_compile_time_arg_val(7);           // kv_len in tiles
    constexpr uint32_t num_kv_heads = get_compile_time_arg_val(8);
    constexpr uint32_t batch = get_compile_time_arg_val(9);
    constexpr uint32_t sliding_window = get_compile_time_arg_val(10);
    constexpr uint32_t scale_bits = get_compile_time_arg_val(11);  // float32 bits of the softmax scale
    constexpr uint32_t q_tile_bytes = get_compile_time_arg_val(12);
    constexpr uint32_t k_tile_bytes = get_compile_time_arg_val(13);
    constexpr uint32_t v_tile_bytes = get_compile_time_arg_val(14);
    constexpr uint32_t cur_pos_page_bytes = get_compile_time_arg_val(15);
    constexpr uint32_t k_chunk_size = Sk_t * TILE_HW;
    constexpr uint32_t q_rows = q_len * heads_per_group;

    // ---- runtime: buffers and this core's work
    uint32_t arg = 0;
    const uint32_t q_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t k_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t v_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t cur_pos_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t first_group = get_arg_val<uint32_t>(arg++);
    const uint32_t num_groups = get_arg_val<uint32_t>(arg++);
    const uint32_t core_index = get_arg_val<uint32_t>(arg++);
    const uint32_t num_cores_per_head = get_arg_val<uint32_t>(arg++);

    const InterleavedAddrGenFast<true> q_reader = {
        .bank_base_address = q_addr, .page_size = q_tile_bytes, .data_format = get_dataformat(cb_q)};
    const InterleavedAddrGenFast<true> k_reader = {
        .bank_base_address = k_addr, .page_size = k_tile_bytes, .data_format = get_dataformat(cb_k)};
    const InterleavedAddrGenFast<true> v_reader = {
        .bank_base_address = v_addr, .page_size = v_tile_bytes, .data_format = get_dataformat(cb_v)};
    const InterleavedAddrGen<true> cur_pos_reader = {.bank_base_address = cur_pos_addr, .page_size = cur_pos_page_bytes};

    // ---- constants for compute: the softmax scale (broadcast as a scalar) and the reduce scaler (all ones)
    union {
        uint32_t u;
        float f;
    } scale{scale_bits};
    cb_reserve_back(cb_scale, 1);
    fill_tile_bf16(get_write_ptr(cb_scale), float_to_bfloat16(scale.f));
    cb_push_back(cb_scale, 1);
    cb_reserve_back(cb_ones, 1);
    fill_tile_bf16(get_write_ptr(cb_ones), float_to_bfloat16(1.0f));
    cb_push_back(cb_ones, 1);

    // ---- cur_pos of every user: one row-major int32 page, shared with compute through cb_cur_pos
    cb_reserve_back(cb_cur_pos, 1);
    const uint32_t cur_pos_l1 = get_write_ptr(cb_cur_pos);
    noc_async_read(get_noc_addr(0, cur_pos_reader), cur_pos_l1, cur_pos_page_bytes);
    noc_async_read_barrier();
    cb_push_back(cb_cur_pos, 1);
    const auto* cur_pos_of_user = reinterpret_cast<volatile tt_l1_ptr uint32_t*>(cur_pos_l1);

    for (uint32_t group = first_group; group < first_group + num_groups; ++group) {
        const uint32_t b = group / num_kv_heads;
        const uint32_t kv_head = group % num_kv_heads;
        const uint32_t cur_pos = cur_pos_of_user[b];
        const ChunkRange chunks = chunk_range(cur_pos, k_chunk_size, core_index, num_cores_per_head, q_len, sliding_window);
        if (chunks.count == 0) {
            continue;  // skipped user, or no chunk left for this core: compute does nothing either
        }

        // Q: gather this group's rows (token-major) from the user's tile rows into rows 0..q_rows-1.
        cb_reserve_back(cb_q, PNHt * DHt);
        const uint32_t q_l1 = get_write_ptr(cb_q);
        zero_bytes(q_l1, PNHt * DHt * q_tile_bytes);
        for (uint32_t row = 0; row < q_rows; ++row) {
            const uint32_t token = row / heads_per_group;
            const uint32_t q_head = kv_head * heads_per_group + row % heads_per_group;
            const uint32_t src_tile_row = (token * batch + b) * NQt + q_head / TILE_HW;
            for (uint32_t d = 0; d < DHt; ++d) {
                const uint32_t src_page = src_tile_row * DHt + d;
                const uint32_t dst_tile = (row / TILE_HW) * DHt + d;
                for (uint32_t col = 0; col < TILE_HW; col += FACE_HW) {
                    const uint64_t src =
                        q_reader.get_noc_addr(src_page, tile_datum_offset(q_head % TILE_HW, col, BF16_BYTES));
                    const uint32_t dst =
                        q_l1 + dst_tile * q_tile_bytes + tile_datum_offset(row % TILE_HW, col, BF16_BYTES);
                    noc_async_read(src, dst, FACE_ROW_BYTES);
                }
            }
        }
        noc_async_read_barrier();
        cb_push_back(cb_q, PNHt * DHt);

        // K/V tiles that hold live positions; the rest of a chunk is zero-filled locally and masked.
        const uint32_t first_live_tile = window_start(cur_pos, q_len, sliding_window) / TILE_HW;
        const uint32_t last_live_tile = cur_pos / TILE_HW;
        const uint32_t kv_tile_row_base = (b * num_kv_heads + kv_head) * St;

        for (uint32_t chunk = chunks.start; chunk < chunks.start + chunks.count; ++chunk) {
            cb_reserve_back(cb_k, Sk_t * DHt);
            uint32_t k_l1 = get_write_ptr(cb_k);
            for (uint32_t kt = 0; kt < Sk_t; ++kt) {
                const uint32_t seq_tile = chunk * Sk_t + kt;
                const bool live = seq_tile >= first_live_tile && seq_tile <= last_live_tile;
                for (uint32_t d = 0; d < DHt; ++d, k_l1 += k_tile_bytes) {
                    if (live) {
                        noc_async_read_tile((kv_tile_row_base + seq_tile) * DHt + d, k_reader, k_l1);
                    } else {
                        zero_bytes(k_l1, k_tile_bytes);
                    }
                }
            }
            noc_async_read_barrier();
            cb_push_back(cb_k, Sk_t * DHt);

            if (chunk_needs_mask(chunk, k_chunk_size, cur_pos, q_len, sliding_window)) {
                cb_reserve_back(cb_mask, PNHt * Sk_t);
                const uint32_t mask_l1 = get_write_ptr(cb_mask);
                const uint16_t hidden = float_to_bfloat16(MASKED_SCORE);
                for (uint32_t rt = 0; rt < PNHt; ++rt) {
                    for (uint32_t kt = 0; kt < Sk_t; ++kt) {
                        auto* tile = reinterpret_cast<volatile tt_l1_ptr uint16_t*>(
                            mask_l1 + (rt * Sk_t + kt) * TILE_HW * TILE_HW * BF16_BYTES);
                        for (uint32_t r = 0; r < TILE_HW; ++r) {
                            const uint32_t row = rt * TILE_HW + r;
                            // Padding rows see every position: they must not become fully masked (NaN).
                            const bool real_row = row < q_rows;
                            const uint32_t pos = query_position(row, cur_pos, q_len, heads_per_group);
                            const uint32_t row_window_start =
                                sliding_window == 0 ? 0 : window_start(pos, 1, sliding_window);
                            for (uint32_t c = 0; c < TILE_HW; ++c) {
                                const uint32_t key_pos = (chunk * Sk_t + kt) * TILE_HW + c;
                                const bool visible = !real_row || (key_pos <= pos && key_pos >= row_window_start);
                                tile[tile_datum_offset(r, c, 1)] = visible ? 0 : hidden;
                            }
                        }
                    }
                }
                cb_push_back(cb_mask, PNHt * Sk_t);
            }

            cb_reserve_back(cb_v, Sk_t * vDHt);
            uint32_t v_l1 = get_write_ptr(cb_v);
            for (uint32_t kt = 0; kt < Sk_t; ++kt) {
                const uint32_t seq_tile = chunk * Sk_t + kt;
                const bool live = seq_tile >= first_live_tile && seq_tile <= last_live_tile;
                for (uint32_t d = 0; d < vDHt; ++d, v_l1 += v_tile_bytes) {
                    if (live) {
                        noc_async_read_tile((kv_tile_row_base + seq_tile) * vDHt + d, v_reader, v_l1);
                    } else {
                        zero_bytes(v_l1, v_tile_bytes);
                    }
                }
            }
            noc_async_read_barrier();
            cb_push_back(cb_v, Sk_t * vDHt);
        }
    }
}
