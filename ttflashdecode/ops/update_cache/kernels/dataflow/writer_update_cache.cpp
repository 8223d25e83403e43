// SPDX-License-Identifier: Apache-2.0
//
// Cache update, writer (RISCV_0 / BRISC, NoC 1). For each unit: takes the target the reader found (cb_target), replaces
// row `row` of the unpacked tile row compute produced (cb_rows) with the new row (cb_new_row), hands the patched rows
// back to compute (cb_patched: the same buffer, see compute_update_cache.cpp), and writes the re-packed tiles
// (cb_out) over the cache's tile row (of the first or the second cache: the target says which). A unit whose position
// lies outside the cache writes nothing.
// In a fused update + attention program (signal_cache_updated, ttflashdecode/ops/fused) the writer then,
// after its last write barrier, tells every attention core serving the groups of its units that their rows are in
// DRAM: it adds, on that core's semaphore sem_cache_updated, one count per unit of those groups it handled (written or
// not, so a skipped user cannot leave a reader waiting). The attention reader waits for the counts of all its groups
// before it reads the chunk holding cur_pos.
//
// Arguments (ttflashdecode/ops/update_cache/args.py): compile-time args in the order of WRITER_ARGS, then the cache's
// TensorAccessorArgs at cache_cta_offset; runtime args in the order of update_cache.WriterRuntimeArgs.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/semaphore.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"
#include "update_cache_common.hpp"

using namespace update_cache;

namespace {
constexpr uint32_t cb_new_row = get_compile_time_arg_val(0);
constexpr uint32_t cb_target = get_compile_time_arg_val(1);
constexpr uint32_t cb_rows = get_compile_time_arg_val(2);
constexpr uint32_t cb_patched = get_compile_time_arg_val(3);
constexpr uint32_t cb_out = get_compile_time_arg_val(4);
constexpr uint32_t Wt = get_compile_time_arg_val(5);
constexpr uint32_t cache_cta_offset = get_compile_time_arg_val(6);
constexpr auto cache_args = TensorAccessorArgs<cache_cta_offset>();
constexpr bool signal_cache_updated = get_compile_time_arg_val(7) == 1;
constexpr uint32_t sem_cache_updated = get_compile_time_arg_val(8);

constexpr uint32_t cache_tile_bytes = get_tile_size(cb_out);
constexpr uint32_t row_words = Wt * TILE_HW * 2 / sizeof(uint32_t);  // one bfloat16 row of head_dim datums
}  // namespace

void kernel_main() {
    // ---- common runtime args (update_cache.WriterCommonArgs), then the work table
    uint32_t arg = 0;
    const uint32_t cache_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t cache2_addr = get_common_arg_val<uint32_t>(arg++);  // fused K/V update only
    const uint32_t num_units = unit_range(arg).count;

    Noc noc;
    CircularBuffer new_row_buf(cb_new_row);
    CircularBuffer target_buf(cb_target);
    CircularBuffer rows_buf(cb_rows);
    CircularBuffer patched_buf(cb_patched);
    CircularBuffer out_buf(cb_out);
    const decltype(TensorAccessor(cache_args, 0u)) caches[2] = {TensorAccessor(cache_args, cache_addr),
                                                                 TensorAccessor(cache_args, cache2_addr)};

    for (uint32_t unit = 0; unit < num_units; ++unit) {
        target_buf.wait_front(1);
        const CoreLocalMem<volatile uint32_t> record(target_buf.get_read_ptr());
        const bool write = record[0] != 0;
        const uint32_t first_tile = record[1];
        const uint32_t row = record[2];
        const auto& cache = caches[record[3]];  // which cache the unit updates

        // Replace the row in L1 (a local copy of head_dim * 2 bytes; both rows are 16-B aligned).
        new_row_buf.wait_front(1);
        rows_buf.wait_front(Wt);
        const CoreLocalMem<volatile uint32_t> src(new_row_buf.get_read_ptr());
        const CoreLocalMem<volatile uint32_t> dst(rows_buf.get_read_ptr() + row * row_words * sizeof(uint32_t));
        for (uint32_t w = 0; w < row_words; ++w) {
            dst[w] = src[w];
        }
        patched_buf.reserve_back(Wt);
        patched_buf.push_back(Wt);
        rows_buf.pop_front(Wt);
        new_row_buf.pop_front(1);

        out_buf.wait_front(Wt);
        if (write) {
            for (uint32_t t = 0; t < Wt; ++t) {
                noc.async_write(out_buf, cache, cache_tile_bytes, {.offset_bytes = t * cache_tile_bytes},
                                {.page_id = first_tile + t});
            }
            noc.async_write_barrier();  // the tiles must leave L1 before the CB pages are reused
        }
        out_buf.pop_front(Wt);
        target_buf.pop_front(1);
    }

    if constexpr (signal_cache_updated) {
        // Every write above completed (each unit's barrier): the rows are in DRAM before any reader is told.
        const uint32_t num_signals = get_arg_val<uint32_t>(0);  // per-core runtime args: (noc_x, noc_y, count) follow
        for (uint32_t i = 0; i < num_signals; ++i) {
            const uint32_t noc_x = get_arg_val<uint32_t>(1 + 3 * i);
            const uint32_t noc_y = get_arg_val<uint32_t>(1 + 3 * i + 1);
            Semaphore<>(sem_cache_updated).up(noc, noc_x, noc_y, get_arg_val<uint32_t>(1 + 3 * i + 2));
        }
        noc.async_atomic_barrier();
    }
}
