// Test kernel: records where the L1-interleaved address generators put pages [0, n): for page i, CB 0 receives
// NOC x, NOC y, then the local address of InterleavedAddrGen<false>, InterleavedAddrGenFast<false> and
// InterleavedPow2AddrGen<false> (0xFFFFFFFF if its x/y differ), the x, y and local address of
// get_noc_addr_from_bank_id<false>(i % NUM_L1_BANKS, addr), get_noc_xy<false>(i % NUM_L1_BANKS) and NUM_L1_BANKS:
// 10 words per page. Then it writes CB 0 to page 0 of a DRAM ROW_MAJOR uint32 tensor. CT args: [0] tt::DataFormat, [1] log2 page size.
// RT args: L1 buffer address, page count, page size, output DRAM address.
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t addr = get_arg_val<uint32_t>(0);
    const uint32_t n = get_arg_val<uint32_t>(1);
    const uint32_t page = get_arg_val<uint32_t>(2);
    constexpr auto fmt = static_cast<DataFormat>(get_compile_time_arg_val(0));
    constexpr uint32_t log2_page = get_compile_time_arg_val(1);
    const InterleavedAddrGen<false> g0 = {.bank_base_address = addr, .page_size = page};
    const InterleavedAddrGenFast<false> g1 = {.bank_base_address = addr, .page_size = page, .data_format = fmt};
    const InterleavedPow2AddrGen<false> g2 = {.bank_base_address = addr, .log_base_2_of_page_size = log2_page};
    cb_reserve_back(0, 1);
    volatile tt_l1_ptr uint32_t* out = reinterpret_cast<volatile tt_l1_ptr uint32_t*>(get_write_ptr(0));
    for (uint32_t i = 0; i < n; ++i) {
        const uint64_t a[4] = {get_noc_addr(i, g0), g1.get_noc_addr(i), g2.get_noc_addr(i),
                               get_noc_addr_from_bank_id<false>(i % NUM_L1_BANKS, addr)};
        out[10 * i] = uint32_t(NOC_UNICAST_ADDR_X(a[0]));
        out[10 * i + 1] = uint32_t(NOC_UNICAST_ADDR_Y(a[0]));
        for (int k = 0; k < 3; ++k) {
            out[10 * i + 2 + k] = uint32_t(NOC_LOCAL_ADDR_OFFSET(a[k]));
            const bool same_core = NOC_UNICAST_ADDR_X(a[k]) == NOC_UNICAST_ADDR_X(a[0]) &&
                                   NOC_UNICAST_ADDR_Y(a[k]) == NOC_UNICAST_ADDR_Y(a[0]);
            if (!same_core) out[10 * i + 2 + k] = 0xFFFFFFFFu;
        }
        out[10 * i + 5] = uint32_t(NOC_UNICAST_ADDR_X(a[3]));
        out[10 * i + 6] = uint32_t(NOC_UNICAST_ADDR_Y(a[3]));
        out[10 * i + 7] = uint32_t(NOC_LOCAL_ADDR_OFFSET(a[3]));
        out[10 * i + 8] = interleaved_addr_gen::get_noc_xy<false>(i % NUM_L1_BANKS);
        out[10 * i + 9] = NUM_L1_BANKS;
    }
    const InterleavedAddrGen<true> dst = {.bank_base_address = get_arg_val<uint32_t>(3), .page_size = 40 * n};
    noc_async_write_page(0, dst, get_write_ptr(0));
    noc_async_write_barrier();
    cb_push_back(0, 1);
}
