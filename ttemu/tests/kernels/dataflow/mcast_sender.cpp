// Test kernel: reads page 0 of the source into CB 0, multicasts it into CB 0 of the receiver rectangle, then
// multicasts a flag into the receivers' semaphore. RT args: src addr, x0, y0, x1, y1 (NOC coords), num receivers.
// CT args: [0] semaphore id, [1..] src TA args.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t x0 = get_arg_val<uint32_t>(1), y0 = get_arg_val<uint32_t>(2);
    const uint32_t x1 = get_arg_val<uint32_t>(3), y1 = get_arg_val<uint32_t>(4);
    const uint32_t n = get_arg_val<uint32_t>(5);
    constexpr uint32_t sem_id = get_compile_time_arg_val(0);
    constexpr auto src_args = TensorAccessorArgs<1>();
    const uint32_t tile = get_tile_size(0);
    const auto src = TensorAccessor(src_args, src_addr, tile);

    cb_reserve_back(0, 1);
    const uint32_t l1 = get_write_ptr(0);
    noc_async_read_page(0, src, l1);
    noc_async_read_barrier();
    noc_async_write_multicast(l1, get_noc_multicast_addr(x0, y0, x1, y1, l1), tile, n);
    noc_async_write_barrier();

    volatile tt_l1_ptr uint32_t* flag = reinterpret_cast<volatile tt_l1_ptr uint32_t*>(get_semaphore(sem_id));
    noc_semaphore_set(flag, 1);
    noc_semaphore_set_multicast(get_semaphore(sem_id), get_noc_multicast_addr(x0, y0, x1, y1, get_semaphore(sem_id)), n);
    noc_async_write_barrier();
}
