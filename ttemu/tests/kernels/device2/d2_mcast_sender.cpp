// Device 2.0 multicast, sender side. Reads `count` pages into its CircularBuffer, waits until every receiver has
// raised its `ready` semaphore, multicasts the pages to the receivers' CB (MulticastEndpoint over the receiver
// rectangle, which excludes the sender), then sets the `data` semaphore of every receiver with Semaphore::
// set_multicast (its own value, 1, written remotely).
// compile-time args: [0] CB index, [1] ready semaphore id, [2] data semaphore id, [3] signal (0 = never), [4..]
// TensorAccessorArgs of the source.
// runtime args: source address, page count, rectangle NOC x0, y0 (top left), x1, y1 (bottom right), number of
// receivers.
#include <cstdint>
#include <utility>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/dataflow/noc_semaphore.h"
#include "api/tensor/noc_traits.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t count = get_arg_val<uint32_t>(1);
    uint32_t x0 = get_arg_val<uint32_t>(2), y0 = get_arg_val<uint32_t>(3);
    uint32_t x1 = get_arg_val<uint32_t>(4), y1 = get_arg_val<uint32_t>(5);
    const uint32_t n_dests = get_arg_val<uint32_t>(6);
    constexpr uint32_t cb_id = get_compile_time_arg_val(0);
    constexpr bool signal = get_compile_time_arg_val(3) != 0;
    constexpr auto src_args = TensorAccessorArgs<4>();

    CircularBuffer cb(cb_id);
    const uint32_t page = cb.get_tile_size();
    const auto src = TensorAccessor(src_args, src_addr, page);
    Noc noc;
    // The rectangle comes top-left first; NoC 1 reaches it from the other corner (as tt-metal's NoC 1 kernels swap).
    if (noc.get_noc_id() == 1) {
        std::swap(x0, x1);
        std::swap(y0, y1);
    }
    Semaphore<> ready(get_compile_time_arg_val(1));
    Semaphore<> data(get_compile_time_arg_val(2));

    cb.reserve_back(count);
    for (uint32_t i = 0; i < count; ++i) {
        noc.async_read(src, cb, page, {.page_id = i}, {.offset_bytes = i * page});
    }
    noc.async_read_barrier();
    cb.push_back(count);
    cb.wait_front(count);

    ready.wait(n_dests);
    noc.async_write_multicast(cb, MulticastEndpoint{}, count * page, n_dests, {},
                              {.noc_x_start = x0, .noc_y_start = y0, .noc_x_end = x1, .noc_y_end = y1,
                               .addr = cb.get_read_ptr()});
    noc.async_write_barrier();
    if constexpr (signal) {
        data.set(1);
        data.set_multicast(noc, x0, y0, x1, y1, n_dests);
        noc.async_write_barrier();
    }
    cb.pop_front(count);
}
