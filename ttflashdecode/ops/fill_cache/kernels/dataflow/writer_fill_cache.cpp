// SPDX-License-Identifier: Apache-2.0
//
// Cache fill, writer (RISCV_0 / BRISC, NoC 1). For each unit (one input tile row: Wt tiles) takes the target the reader
// found (cb_target) and writes the unit's tiles, packed by compute in the cache's format (cb_out), over the cache's
// tile row there; a unit whose target lies outside the cache writes nothing (its tiles are popped unwritten).
//
// Arguments (ttflashdecode/ops/fill_cache/args.py): compile-time args in the order of WRITER_ARGS, then the cache's
// TensorAccessorArgs at cache_cta_offset; runtime args in the order of fill_cache.args.WriterRuntimeArgs.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"

namespace {
constexpr uint32_t cb_out = get_compile_time_arg_val(0);
constexpr uint32_t cb_target = get_compile_time_arg_val(1);
constexpr uint32_t Wt = get_compile_time_arg_val(2);
constexpr uint32_t cache_cta_offset = get_compile_time_arg_val(3);
constexpr auto cache_args = TensorAccessorArgs<cache_cta_offset>();
constexpr uint32_t cache_tile_bytes = get_tile_size(cb_out);
}  // namespace

void kernel_main() {
    uint32_t arg = 0;
    const uint32_t cache_addr = get_arg_val<uint32_t>(arg++);
    const uint32_t num_units = get_arg_val<uint32_t>(arg++);

    Noc noc;
    CircularBuffer out_buf(cb_out);
    CircularBuffer target_buf(cb_target);
    const auto cache = TensorAccessor(cache_args, cache_addr);

    for (uint32_t unit = 0; unit < num_units; ++unit) {
        target_buf.wait_front(1);
        const CoreLocalMem<volatile uint32_t> record(target_buf.get_read_ptr());
        const bool write = record[0] != 0;
        const uint32_t first_tile = record[1];
        for (uint32_t t = 0; t < Wt; ++t) {
            out_buf.wait_front(1);
            if (write) {
                noc.async_write(out_buf, cache, cache_tile_bytes, {}, {.page_id = first_tile + t});
                noc.async_write_barrier();  // the page must leave L1 before the CB slot is reused
            }
            out_buf.pop_front(1);
        }
        target_buf.pop_front(1);
    }
}
