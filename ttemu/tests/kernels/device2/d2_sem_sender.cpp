// Device 2.0 semaphore handshake, sender side. Reads `count` pages from DRAM into its CircularBuffer, waits until the
// receiver has announced free space (its `ready` semaphore, raised remotely by the receiver), writes the pages into
// the receiver's CB (same L1 address on every core of the CB descriptor) through a UnicastEndpoint, then raises the
// receiver's `data` semaphore with a NOC atomic increment.
// compile-time args: [0] CB index, [1] ready semaphore id, [2] data semaphore id, [3] signal the receiver (0 = never:
// the receiver must be reported hung), [4..] TensorAccessorArgs of the source.
// runtime args: source address, page count, receiver NOC x, receiver NOC y.
#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/dataflow/noc_semaphore.h"
#include "api/tensor/noc_traits.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t count = get_arg_val<uint32_t>(1);
    const uint32_t rx = get_arg_val<uint32_t>(2);
    const uint32_t ry = get_arg_val<uint32_t>(3);
    constexpr uint32_t cb_id = get_compile_time_arg_val(0);
    constexpr bool signal = get_compile_time_arg_val(3) != 0;
    constexpr auto src_args = TensorAccessorArgs<4>();

    CircularBuffer cb(cb_id);
    const uint32_t page = cb.get_tile_size();
    const auto src = TensorAccessor(src_args, src_addr, page);
    Noc noc;
    Semaphore<> ready(get_compile_time_arg_val(1));
    Semaphore<> data(get_compile_time_arg_val(2));

    cb.reserve_back(count);
    for (uint32_t i = 0; i < count; ++i) {
        noc.async_read(src, cb, page, {.page_id = i}, {.offset_bytes = i * page});
    }
    noc.async_read_barrier();
    cb.push_back(count);
    cb.wait_front(count);

    ready.wait(1);
    ready.set(0);
    noc.async_write(cb, UnicastEndpoint{}, count * page, {}, {.noc_x = rx, .noc_y = ry, .addr = cb.get_read_ptr()});
    noc.async_write_barrier();
    if constexpr (signal) {
        data.up(noc, rx, ry, 1);
        noc.async_atomic_barrier();
    }
    cb.pop_front(count);
}
