// Noc::async_write_zeros, both forms. The CB's first page is filled with 0xA5A5A5A5, its first `zero_bytes` bytes
// are zeroed from the core's MEM_ZEROS block (L1 form), and the page goes to page 0 of a uint32 DRAM tensor; then the
// whole page is zeroed and serves as the pre-zeroed scratch for the DRAM form, which zeroes page 1.
// compile-time args: [0] CB index, [1..] TensorAccessorArgs of the destination.
// runtime args: destination address, zero_bytes.
#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/core_local_mem.h"
#include "api/tensor/noc_traits.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t zero_bytes = get_arg_val<uint32_t>(1);
    constexpr uint32_t cb_id = get_compile_time_arg_val(0);
    constexpr auto dst_args = TensorAccessorArgs<1>();

    CircularBuffer cb(cb_id);
    const uint32_t page = cb.get_tile_size();
    const auto dst = TensorAccessor(dst_args, dst_addr, page);
    Noc noc;

    CoreLocalMem<uint32_t> mem(cb.get_write_ptr());
    for (uint32_t i = 0; i < page / 4; ++i) mem[i] = 0xA5A5A5A5u;
    noc.async_write_zeros(cb, zero_bytes);
    noc.write_zeros_l1_barrier();
    noc.async_write(use<CircularBuffer::AddrSelector::WRITE_PTR>(cb), dst, page, {}, {.page_id = 0});
    noc.async_write_barrier();

    noc.async_write_zeros(mem, page);  // CoreLocalMem as the L1 destination
    noc.write_zeros_l1_barrier();
    noc.async_write_zeros(dst, page, {.page_id = 1}, cb);  // a fresh CB: read pointer == write pointer
    noc.write_zeros_dram_barrier();
}
