// Device 2.0 multicast, receiver side: raises the sender's `ready` semaphore, waits for its own `data` semaphore, then
// writes the multicast pages (landed at its CB's base) to its own slice of the DRAM output.
// compile-time args: [0] CB index, [1] ready semaphore id, [2] data semaphore id, [3..] TensorAccessorArgs of the
// destination.
// runtime args: destination address, page count, first output page, sender NOC x, sender NOC y.
#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/dataflow/noc_semaphore.h"
#include "api/tensor/noc_traits.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t count = get_arg_val<uint32_t>(1);
    const uint32_t out_first = get_arg_val<uint32_t>(2);
    const uint32_t sx = get_arg_val<uint32_t>(3), sy = get_arg_val<uint32_t>(4);
    constexpr uint32_t cb_id = get_compile_time_arg_val(0);
    constexpr auto dst_args = TensorAccessorArgs<3>();

    CircularBuffer cb(cb_id);
    const uint32_t page = cb.get_tile_size();
    const auto dst = TensorAccessor(dst_args, dst_addr, page);
    Noc noc;
    Semaphore<> ready(get_compile_time_arg_val(1));
    Semaphore<> data(get_compile_time_arg_val(2));

    cb.reserve_back(count);
    ready.up(noc, sx, sy, 1);
    noc.async_atomic_barrier();
    data.wait(1);
    cb.push_back(count);
    cb.wait_front(count);
    for (uint32_t i = 0; i < count; ++i) {
        noc.async_write(cb, dst, page, {.offset_bytes = i * page}, {.page_id = out_first + i});
    }
    noc.async_write_barrier();
    cb.pop_front(count);
}
