// Test kernel: waits for the sender's flag, then writes the tile the sender multicast into its CB 0 to output page
// `page`. RT args: dst addr, page. CT args: [0] semaphore id, [1..] dst TA args.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t page = get_arg_val<uint32_t>(1);
    constexpr uint32_t sem_id = get_compile_time_arg_val(0);
    constexpr auto dst_args = TensorAccessorArgs<1>();
    const auto dst = TensorAccessor(dst_args, dst_addr, get_tile_size(0));
    noc_semaphore_wait(reinterpret_cast<volatile tt_l1_ptr uint32_t*>(get_semaphore(sem_id)), 1);
    noc_async_write_page(page, dst, get_write_ptr(0));
    noc_async_write_barrier();
}
