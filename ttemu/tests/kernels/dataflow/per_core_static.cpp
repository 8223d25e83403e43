// Test kernel: counts in a function-local static of an inline function (what g++ would bind STB_GNU_UNIQUE, one
// object for the whole process) and writes the count into page `page` of an interleaved DRAM tensor (uint32 at word 0
// of a bfloat16 tile). Each core runs its own copy of the kernel, as on silicon, so every core must count `n` alone.
// CT args: TensorAccessorArgs of the destination. RT args: dst address, page, n.
#include "api/dataflow/dataflow_api.h"

inline uint32_t& per_core_count() {
    static uint32_t count = 0;
    return count;
}

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t page = get_arg_val<uint32_t>(1);
    const uint32_t n = get_arg_val<uint32_t>(2);
    constexpr uint32_t cb = 0;
    for (uint32_t i = 0; i < n; ++i) {
        ++per_core_count();
        if (i % 64 == 0) noc_async_read_barrier();  // an API call: lets the other cores' threads interleave
    }
    cb_reserve_back(cb, 1);
    *reinterpret_cast<volatile tt_l1_ptr uint32_t*>(get_write_ptr(cb)) = per_core_count();
    constexpr auto args = TensorAccessorArgs<0>();
    const auto dst = TensorAccessor(args, dst_addr, get_tile_size(cb));
    noc_async_write_page(page, dst, get_write_ptr(cb));
    noc_async_write_barrier();
}
