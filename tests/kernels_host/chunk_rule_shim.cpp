// Exposes the kernels' shared rules (device_kernels/flash_decode_common.hpp) to Python through ctypes, so a test
// can check them against the planner's implementation (ttflashdecode/plan/rules.py).
#include <cstdint>

#include "flash_decode_common.hpp"

extern "C" {

void fd_chunk_range(uint32_t cur_pos, uint32_t k_chunk_size, uint32_t core_index, uint32_t num_cores,
                    uint32_t q_len, uint32_t window, uint32_t* start, uint32_t* count) {
    const auto range = flash_decode::chunk_range(cur_pos, k_chunk_size, core_index, num_cores, q_len, window);
    *start = range.start;
    *count = range.count;
}

uint32_t fd_active_cores(uint32_t cur_pos, uint32_t k_chunk_size, uint32_t num_cores, uint32_t q_len, uint32_t window) {
    return flash_decode::active_cores(cur_pos, k_chunk_size, num_cores, q_len, window);
}

uint32_t fd_send_round(uint32_t core_index, uint32_t radix) { return flash_decode::send_round(core_index, radix); }

uint32_t fd_send_slot(uint32_t core_index, uint32_t radix) { return flash_decode::send_slot(core_index, radix); }

uint32_t fd_children_in_round(uint32_t core_index, uint32_t round, uint32_t num_active, uint32_t radix) {
    return flash_decode::children_in_round(core_index, round, num_active, radix);
}

uint32_t fd_receives_in_round(uint32_t core_index, uint32_t round, uint32_t num_active, uint32_t radix) {
    return flash_decode::receives_in_round(core_index, round, num_active, radix);
}

uint32_t fd_tree_rounds(uint32_t num_cores, uint32_t radix) { return flash_decode::tree_rounds(num_cores, radix); }

}
