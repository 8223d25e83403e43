// Emulator implementation of api/kernel_thread_globals.h for Wormhole (wheel api/kernel_thread_globals.h, the
// non-ARCH_QUASAR paths): one software thread per kernel, thread id 0, and the thread / DM-compute barriers are no-ops.
#pragma once

#include <stdint.h>

inline uint32_t get_num_threads() { return 1; }
inline uint32_t get_my_thread_id() { return 0; }
#ifndef COMPILE_FOR_TRISC
inline void thread_sync_init() {}
#endif
inline void tensix_global_sem_barrier(uint32_t arrived_idx, uint32_t generation_idx, uint32_t participants) {
    (void)arrived_idx;
    (void)generation_idx;
    (void)participants;
}
inline uint32_t get_barrier_id() { return 0; }
inline void wait_threads(uint32_t participants) { (void)participants; }
inline void sync_threads() { wait_threads(get_num_threads()); }
inline void sync_dm_compute_threads(uint32_t dm_threads, uint32_t tensixes) {
    (void)dm_threads;
    (void)tensixes;
}
