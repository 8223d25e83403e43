// Test kernel: reads pages [start, start+n) of an interleaved DRAM tensor into CB 0, one page at a time.
// CT args: [0] use_tensor_accessor (0: InterleavedAddrGenFast, 1: TensorAccessor), [1] data format (tt::DataFormat),
//          [2..] TensorAccessorArgs of the source.  RT args: src address, start page, page count.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t start = get_arg_val<uint32_t>(1);
    const uint32_t n = get_arg_val<uint32_t>(2);
    constexpr uint32_t use_accessor = get_compile_time_arg_val(0);
    constexpr uint32_t cb = 0;
    const uint32_t page_bytes = get_tile_size(cb);

    if constexpr (use_accessor) {
        constexpr auto args = TensorAccessorArgs<2>();
        const auto src = TensorAccessor(args, src_addr, page_bytes);
        for (uint32_t i = start; i < start + n; ++i) {
            cb_reserve_back(cb, 1);
            noc_async_read_page(i, src, get_write_ptr(cb));
            noc_async_read_barrier();
            cb_push_back(cb, 1);
        }
    } else {
        const InterleavedAddrGenFast<true> src = {
            .bank_base_address = src_addr, .page_size = page_bytes,
            .data_format = static_cast<DataFormat>(get_compile_time_arg_val(1))};
        for (uint32_t i = start; i < start + n; ++i) {
            cb_reserve_back(cb, 1);
            noc_async_read_tile(i, src, get_write_ptr(cb));
            noc_async_read_barrier();
            cb_push_back(cb, 1);
        }
    }
}
