// Test kernel: writes pages [start, start+n) of an interleaved DRAM tensor from CB 0.
// CT args: [0] use_tensor_accessor, [1] data format, [2..] TensorAccessorArgs of the destination.
// RT args: dst address, start page, page count.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t start = get_arg_val<uint32_t>(1);
    const uint32_t n = get_arg_val<uint32_t>(2);
    constexpr uint32_t use_accessor = get_compile_time_arg_val(0);
    constexpr uint32_t cb = 0;
    const uint32_t page_bytes = get_tile_size(cb);

    if constexpr (use_accessor) {
        constexpr auto args = TensorAccessorArgs<2>();
        const auto dst = TensorAccessor(args, dst_addr, page_bytes);
        for (uint32_t i = start; i < start + n; ++i) {
            cb_wait_front(cb, 1);
            noc_async_write_page(i, dst, get_read_ptr(cb));
            noc_async_writes_flushed();
            cb_pop_front(cb, 1);
        }
    } else {
        const InterleavedAddrGenFast<true> dst = {
            .bank_base_address = dst_addr, .page_size = page_bytes,
            .data_format = static_cast<DataFormat>(get_compile_time_arg_val(1))};
        for (uint32_t i = start; i < start + n; ++i) {
            cb_wait_front(cb, 1);
            noc_async_write_tile(i, dst, get_read_ptr(cb));
            noc_async_writes_flushed();
            cb_pop_front(cb, 1);
        }
    }
    noc_async_write_barrier();
}
