// Device 2.0 reader: pages [first, first + count) of an interleaved tensor into a CircularBuffer, one page at a time,
// through Noc::async_read with a TensorAccessor endpoint ({.page_id}) and the CircularBuffer as destination.
// compile-time args: [0] CB index, [1] use a NOC transaction id (0/1), [2..3] TensorAccessorArgs of an absent optional
// tensor (ttnn emits [0, 0]), [4..] TensorAccessorArgs of the source.
// runtime args: source address, first page, page count.
#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/tensor/noc_traits.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t first = get_arg_val<uint32_t>(1);
    const uint32_t count = get_arg_val<uint32_t>(2);
    constexpr uint32_t cb_id = get_compile_time_arg_val(0);
    constexpr bool use_trid = get_compile_time_arg_val(1) != 0;
    constexpr auto absent_args = TensorAccessorArgs<2>();
    constexpr auto src_args = TensorAccessorArgs<absent_args.next_compile_time_args_offset()>();
    constexpr uint32_t page = get_tile_size(cb_id);  // a compile-time constant, from the build's format table

    const auto absent = TensorAccessor(absent_args, 0);  // built, never used, as for a missing optional input
    (void)absent;
    const auto src = TensorAccessor(src_args, src_addr, page);
    CircularBuffer cb(cb_id);
    Noc noc;
    for (uint32_t i = 0; i < count; ++i) {
        cb.reserve_back(1);
        if constexpr (use_trid) {
            noc.async_read<NocOptions::TXN_ID>(src, cb, page, {.page_id = first + i}, {}, {.trid = 3});
            noc.async_read_barrier<NocOptions::TXN_ID>({.trid = 3});
        } else {
            noc.async_read(src, cb, page, {.page_id = first + i}, {});
            noc.async_read_barrier();
        }
        cb.push_back(1);
    }
}
