// Test kernel (worker side of a many-to-one exchange): reads page `page` of the source into CB 0, NOC-writes it
// into slot `slot` of CB 1 on the reducer core (same CB address on every core), then increments the reducer's
// semaphore. RT args: src addr, page, slot, reducer noc x, reducer noc y. CT args: [0] semaphore id, [1..] src TA args.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t page = get_arg_val<uint32_t>(1);
    const uint32_t slot = get_arg_val<uint32_t>(2);
    const uint32_t rx = get_arg_val<uint32_t>(3);
    const uint32_t ry = get_arg_val<uint32_t>(4);
    constexpr uint32_t sem_id = get_compile_time_arg_val(0);
    constexpr auto src_args = TensorAccessorArgs<1>();
    const auto src = TensorAccessor(src_args, src_addr, get_tile_size(0));

    cb_reserve_back(0, 1);
    const uint32_t l1 = get_write_ptr(0);
    noc_async_read_page(page, src, l1);
    noc_async_read_barrier();

    const uint32_t slot_addr = get_write_ptr(1) + slot * get_tile_size(1);
    noc_async_write(l1, get_noc_addr(rx, ry, slot_addr), get_tile_size(1));
    noc_async_write_barrier();
    noc_semaphore_inc(get_noc_addr(rx, ry, get_semaphore(sem_id)), 1);
    noc_async_atomic_barrier();
    cb_push_back(0, 1);
    cb_pop_front(0, 1);
}
