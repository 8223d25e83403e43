// Throughput kernel: reads Kt tiles of A and of B from DRAM into CBs 0 and 1 once. RT: a addr, b addr.
// CT: [0] Kt, [1..] A TA args, then B TA args.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    constexpr uint32_t Kt = get_compile_time_arg_val(0);
    constexpr auto a_args = TensorAccessorArgs<1>();
    constexpr auto b_args = TensorAccessorArgs<a_args.next_compile_time_args_offset()>();
    const auto a = TensorAccessor(a_args, get_arg_val<uint32_t>(0), a_args.get_aligned_page_size());
    const auto b = TensorAccessor(b_args, get_arg_val<uint32_t>(1), b_args.get_aligned_page_size());
    cb_reserve_back(0, Kt);
    cb_reserve_back(1, Kt);
    for (uint32_t k = 0; k < Kt; ++k) {
        noc_async_read_page(k, a, get_write_ptr(0) + k * a_args.get_aligned_page_size());
        noc_async_read_page(k, b, get_write_ptr(1) + k * b_args.get_aligned_page_size());
    }
    noc_async_read_barrier();
    cb_push_back(0, Kt);
    cb_push_back(1, Kt);
}
