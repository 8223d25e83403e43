// Two interleaved tensors, reached through make_tensor_accessor_args_tuple / make_tensor_accessor_tuple /
// make_abstract_tensor_accessor_wrappers (runtime-indexed accessors), copied page by page through a CircularBuffer to
// pages [t * n, (t + 1) * n) of an output tensor written through a PrecomposedUnicastEndpoint. Then a view of the CB's
// LocalCBInterface (get_local_cb_interface) goes to a uint32 tensor through an AllocatorBank<DRAM> endpoint:
//   fifo_size, fifo_page_size, fifo_num_pages, write pointer's offset in the ring, the offset after moving the write
//   pointer one page through fifo_wr_ptr.
// compile-time args: [0] CB index, [1..] TensorAccessorArgs of a, b, out (consecutive).
// runtime args: a address, b address, out address, pages per input n, info address.
#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/endpoints.h"
#include "api/dataflow/circular_buffer.h"
#include "api/core_local_mem.h"
#include "api/tensor/noc_traits.h"

void kernel_main() {
    constexpr uint32_t cb_id = get_compile_time_arg_val(0);
    constexpr auto in_args = make_tensor_accessor_args_tuple<2, 1>();
    constexpr auto out_args = TensorAccessorArgs<std::get<1>(in_args).next_compile_time_args_offset()>();
    const auto accessors = make_tensor_accessor_tuple(in_args, 0);  // base addresses: runtime args 0, 1
    const auto inputs = make_abstract_tensor_accessor_wrappers(accessors);
    const auto out = TensorAccessor(out_args, get_arg_val<uint32_t>(2));
    const uint32_t n = get_arg_val<uint32_t>(3);
    const uint32_t info_addr = get_arg_val<uint32_t>(4);

    CircularBuffer cb(cb_id);
    const uint32_t page = cb.get_tile_size();
    Noc noc;
    for (uint32_t t = 0; t < 2; ++t) {
        for (uint32_t i = 0; i < n; ++i) {
            cb.reserve_back(1);
            noc.async_read(inputs[t], cb, page, {.page_id = i}, {});
            noc.async_read_barrier();
            cb.push_back(1);
            cb.wait_front(1);
            noc.async_write(cb, PrecomposedUnicastEndpoint{}, page, {}, {.noc_addr = out.get_noc_addr(t * n + i)});
            noc.async_write_barrier();
            cb.pop_front(1);
        }
    }

    LocalCBInterface& iface = get_local_cb_interface(cb_id);
    cb.reserve_back(1);
    const uint32_t base = iface.fifo_limit - iface.fifo_size;
    CoreLocalMem<uint32_t> w(cb.get_write_ptr());
    w[0] = iface.fifo_size;
    w[1] = iface.fifo_page_size;
    w[2] = iface.fifo_num_pages;
    w[3] = iface.fifo_wr_ptr - base;
    const uint32_t here = iface.fifo_wr_ptr;
    iface.fifo_wr_ptr += page;
    w[4] = cb.get_write_ptr() - base;
    iface.fifo_wr_ptr = here;
    noc.async_write(cb, AllocatorBank<AllocatorBankType::DRAM>{}, 5 * 4, {}, {.bank_id = 0, .addr = info_addr});
    noc.async_write_barrier();
}
