// Test kernel: reads every page of the source `repeat` times into CB 0 (counter test). RT args: src addr, n pages.
// CT args: [0] repeat, [1..] src TA args.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t n = get_arg_val<uint32_t>(1);
    constexpr uint32_t repeat = get_compile_time_arg_val(0);
    constexpr auto args = TensorAccessorArgs<1>();
    const auto src = TensorAccessor(args, src_addr, get_tile_size(0));
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t i = 0; i < n; ++i) {
            cb_reserve_back(0, 1);
            noc_async_read_page(i, src, get_write_ptr(0));
            noc_async_read_barrier();
            cb_push_back(0, 1);
            cb_pop_front(0, 1);
        }
}
