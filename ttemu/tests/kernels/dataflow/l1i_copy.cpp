// Test kernel: copies pages [first, first + n) of an interleaved tensor (DRAM or L1) to another interleaved tensor
// (DRAM or L1), one page at a time through CB 0, with the address generator chosen by CT arg 2:
//   0 = InterleavedAddrGen<dram> with noc_async_read_page / noc_async_write_page,
//   1 = InterleavedAddrGenFast<dram> with noc_async_read_tile / noc_async_write_tile (TILE tensors),
//   2 = InterleavedPow2AddrGen<dram> (power-of-two page size) with get_noc_addr(id, addrgen) + noc_async_read/write,
//   3 = TensorAccessor from the tensors' TensorAccessorArgs,
//   4 = InterleavedAddrGen<dram>, each page moved in two halves through get_noc_addr(id, addrgen, offset).
// CT args: [0] source in DRAM, [1] destination in DRAM, [2] mode, [3] tt::DataFormat, [4] log2 of the page size,
//          [5] src TensorAccessorArgs (2 args), [7] dst TensorAccessorArgs (2 args).
// RT args: source address, destination address, first page, page count, page size.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t dst_addr = get_arg_val<uint32_t>(1);
    const uint32_t first = get_arg_val<uint32_t>(2);
    const uint32_t n = get_arg_val<uint32_t>(3);
    const uint32_t page = get_arg_val<uint32_t>(4);
    constexpr bool src_dram = get_compile_time_arg_val(0) == 1;
    constexpr bool dst_dram = get_compile_time_arg_val(1) == 1;
    constexpr uint32_t mode = get_compile_time_arg_val(2);
    constexpr auto fmt = static_cast<DataFormat>(get_compile_time_arg_val(3));
    constexpr uint32_t log2_page = get_compile_time_arg_val(4);
    constexpr uint32_t cb = 0;

    const InterleavedAddrGen<src_dram> s0 = {.bank_base_address = src_addr, .page_size = page};
    const InterleavedAddrGen<dst_dram> d0 = {.bank_base_address = dst_addr, .page_size = page};
    const InterleavedAddrGenFast<src_dram> s1 = {.bank_base_address = src_addr, .page_size = page, .data_format = fmt};
    const InterleavedAddrGenFast<dst_dram> d1 = {.bank_base_address = dst_addr, .page_size = page, .data_format = fmt};
    const InterleavedPow2AddrGen<src_dram> s2 = {.bank_base_address = src_addr, .log_base_2_of_page_size = log2_page};
    const InterleavedPow2AddrGen<dst_dram> d2 = {.bank_base_address = dst_addr, .log_base_2_of_page_size = log2_page};
    constexpr auto src_args = TensorAccessorArgs<5>();
    constexpr auto dst_args = TensorAccessorArgs<src_args.next_compile_time_args_offset()>();
    const auto s3 = TensorAccessor(src_args, src_addr, page);
    const auto d3 = TensorAccessor(dst_args, dst_addr, page);
    static_assert(decltype(s3)::is_dram == src_dram && decltype(d3)::is_dram == dst_dram, "accessor args");

    for (uint32_t i = first; i < first + n; ++i) {
        cb_reserve_back(cb, 1);
        const uint32_t l1 = get_write_ptr(cb);
        if constexpr (mode == 0) {
            noc_async_read_page(i, s0, l1);
        } else if constexpr (mode == 1) {
            noc_async_read_tile(i, s1, l1);
        } else if constexpr (mode == 2) {
            noc_async_read(get_noc_addr(i, s2), l1, page);
        } else if constexpr (mode == 3) {
            noc_async_read_page(i, s3, l1);
        } else {
            const uint32_t half = page / 2;
            noc_async_read(get_noc_addr(i, s0), l1, half);
            noc_async_read(get_noc_addr(i, s0, half), l1 + half, page - half);
        }
        noc_async_read_barrier();
        if constexpr (mode == 0) {
            noc_async_write_page(i, d0, l1);
        } else if constexpr (mode == 1) {
            noc_async_write_tile(i, d1, l1);
        } else if constexpr (mode == 2) {
            noc_async_write(l1, get_noc_addr(i, d2), page);
        } else if constexpr (mode == 3) {
            noc_async_write_page(i, d3, l1);
        } else {
            const uint32_t half = page / 2;
            noc_async_write(l1, d0.get_noc_addr(i), half);
            noc_async_write(l1 + half, d0.get_noc_addr(i, half), page - half);
        }
        noc_async_write_barrier();
        cb_push_back(cb, 1);
        cb_wait_front(cb, 1);
        cb_pop_front(cb, 1);
    }
}
