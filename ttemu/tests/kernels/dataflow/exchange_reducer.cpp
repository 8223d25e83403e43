// Test kernel (reducer side): waits until `n` workers have incremented its semaphore, then writes the n tiles they
// deposited in CB 1 to pages [0, n) of the output. RT args: dst addr, n. CT args: [0] semaphore id, [1..] dst TA args.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t n = get_arg_val<uint32_t>(1);
    constexpr uint32_t sem_id = get_compile_time_arg_val(0);
    constexpr auto dst_args = TensorAccessorArgs<1>();
    const auto dst = TensorAccessor(dst_args, dst_addr, get_tile_size(1));

    volatile tt_l1_ptr uint32_t* sem = reinterpret_cast<volatile tt_l1_ptr uint32_t*>(get_semaphore(sem_id));
    noc_semaphore_wait(sem, n);
    const uint32_t base = get_write_ptr(1);
    for (uint32_t i = 0; i < n; ++i) noc_async_write_page(i, dst, base + i * get_tile_size(1));
    noc_async_write_barrier();
    noc_semaphore_set(sem, 0);
}
