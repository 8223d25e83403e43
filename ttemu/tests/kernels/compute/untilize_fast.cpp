// Blackhole fast untilize (api/compute/experimental/fast_untilize.h): a row of N tiles of cb 0 untilized into N
// row-major pages of cb 16. Compile-time args: 0 N (tiles a row), 1 the input tile index the row starts at (the
// front of cb 0 holds N * 2 tiles; 0 takes the first row, N the second).
#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/experimental/fast_untilize.h"

void kernel_main() {
    constexpr uint32_t n = get_compile_time_arg_val(0);
    constexpr uint32_t first = get_compile_time_arg_val(1);
    constexpr uint32_t cb_in = 0, cb_out = 16;
    compute_kernel_hw_startup(cb_in, cb_out);
    fast_untilize_init<n>(cb_in, cb_out);
    cb_wait_front(cb_in, 2 * n);
    cb_reserve_back(cb_out, n);
    fast_untilize_block<n>(cb_in, cb_out, first, 0);
    cb_push_back(cb_out, n);
    cb_pop_front(cb_in, 2 * n);
    fast_untilize_uninit<n>(cb_out);
}
