// Device 2.0 writer: `count` pages from a DataflowBuffer (built from its CB id) to pages [first, first + count) of an
// interleaved tensor, through Noc::async_write with the DataflowBuffer as source and a TensorAccessor destination.
// compile-time args: [0] CB index, [1..] TensorAccessorArgs of the destination.
// runtime args: destination address, first page, page count.
#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/dataflow_buffer.h"
#include "api/tensor/noc_traits.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t first = get_arg_val<uint32_t>(1);
    const uint32_t count = get_arg_val<uint32_t>(2);
    constexpr uint32_t cb_id = get_compile_time_arg_val(0);
    constexpr auto dst_args = TensorAccessorArgs<1>();

    DataflowBuffer dfb(cb_id);
    const auto dst = TensorAccessor(dst_args, dst_addr, dfb.get_entry_size());
    Noc noc;
    for (uint32_t i = 0; i < count; ++i) {
        dfb.wait_front(1);
        noc.async_write(dfb, dst, dfb.get_entry_size(), {}, {.page_id = first + i});
        noc.async_write_barrier();
        dfb.pop_front(1);
    }
}
