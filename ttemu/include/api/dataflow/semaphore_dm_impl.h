// Emulator implementation of api/dataflow/semaphore_dm_impl.h: the data-movement operations behind Semaphore
// (wheel semaphore_dm_impl.h:13-321), on the emulator's semaphore runtime: a semaphore is a word in this core's L1
// (get_semaphore(id)); LOCAL_NONATOMIC (the only scope a Wormhole DM binding resolves to) is a plain read-modify-write
// of it, EXTERNAL a self-targeted NOC atomic increment, DM_LOCAL_CACHED does not exist on Wormhole (the wheel
// ASSERTs). Waits block on the runtime (hangs are reported); every store goes through emu::sem_set so that waiting
// cores wake up.
#pragma once

#include <cstdint>

#include "api/dataflow/noc.h"
#include "api/dataflow/semaphore_binding_token.h"

namespace semaphore_detail {

template <ProgrammableCoreType core_type>
__attribute__((always_inline)) inline std::uintptr_t sem_l1_offset(std::uint32_t id, SemScope scope) {
    if (scope == SemScope::COMPUTE_ATOMIC)
        emu::fault("Semaphore: a COMPUTE_ATOMIC semaphore may not be bound by a data-movement kernel");
    return get_semaphore<core_type>(id);
}

__attribute__((always_inline)) inline volatile std::uint32_t* local_ptr(std::uintptr_t l1_offset, SemScope) {
    return reinterpret_cast<volatile std::uint32_t*>(l1_offset);
}

__attribute__((always_inline)) inline std::uint32_t load(std::uintptr_t l1_offset, SemScope scope) {
    return __atomic_load_n(const_cast<std::uint32_t*>(local_ptr(l1_offset, scope)), __ATOMIC_SEQ_CST);
}

template <ProgrammableCoreType core_type>
__attribute__((always_inline)) inline std::uint32_t current(std::uintptr_t l1_offset, SemScope scope) {
    return load(l1_offset, scope);
}

inline void no_cached_scope() {
    emu::fault("Semaphore: SemScope::DM_LOCAL_CACHED exists on Quasar only (the host never resolves it on Wormhole)");
}

template <ProgrammableCoreType core_type>
__attribute__((always_inline)) inline void up(std::uintptr_t l1_offset, SemScope scope, std::uint32_t value) {
    if (scope == SemScope::DM_LOCAL_CACHED) {
        no_cached_scope();
    } else if (scope == SemScope::EXTERNAL) {
        noc_semaphore_inc(::get_noc_addr(uint32_t(l1_offset)), value);
        noc_async_atomic_barrier();
    } else {
        auto* p = local_ptr(l1_offset, scope);
        emu::sem_set(p, load(l1_offset, scope) + value);
    }
}

template <ProgrammableCoreType core_type>
__attribute__((always_inline)) inline void down(std::uintptr_t l1_offset, SemScope scope, std::uint32_t value) {
    auto* p = local_ptr(l1_offset, scope);
    if (scope == SemScope::DM_LOCAL_CACHED) {
        no_cached_scope();
    } else if (scope == SemScope::EXTERNAL) {
        emu::sem_wait(p, value, true);
        noc_semaphore_inc(::get_noc_addr(uint32_t(l1_offset)), static_cast<std::uint32_t>(0u - value));
        noc_async_atomic_barrier();
    } else {
        emu::sem_wait(p, value, true);
        emu::sem_set(p, load(l1_offset, scope) - value);
    }
}

template <ProgrammableCoreType core_type>
__attribute__((always_inline)) inline void wait(std::uintptr_t l1_offset, SemScope scope, std::uint32_t value) {
    if (scope == SemScope::DM_LOCAL_CACHED) no_cached_scope();
    noc_semaphore_wait(local_ptr(l1_offset, scope), value);
}

template <ProgrammableCoreType core_type>
__attribute__((always_inline)) inline void wait_min(std::uintptr_t l1_offset, SemScope scope, std::uint32_t value) {
    if (scope == SemScope::DM_LOCAL_CACHED) no_cached_scope();
    noc_semaphore_wait_min(local_ptr(l1_offset, scope), value);
}

template <ProgrammableCoreType core_type>
__attribute__((always_inline)) inline void set(std::uintptr_t l1_offset, SemScope scope, std::uint32_t value) {
    noc_semaphore_set(local_ptr(l1_offset, scope), value);
}

template <ProgrammableCoreType core_type>
__attribute__((always_inline)) inline void up_remote(std::uintptr_t l1_offset, SemScope scope, const Noc& noc,
                                                     std::uint32_t noc_x, std::uint32_t noc_y, std::uint32_t value,
                                                     std::uint8_t vc) {
    if (scope == SemScope::DM_LOCAL_CACHED) {
        no_cached_scope();
        return;
    }
    const std::uint64_t dest_noc_addr = ::get_noc_addr(noc_x, noc_y, uint32_t(l1_offset), noc.get_noc_id());
    noc_semaphore_inc(dest_noc_addr, value, noc.get_noc_id(), vc);
}

inline void relay_unicast(std::uintptr_t src_l1_offset, std::uintptr_t dst_l1_offset, const Noc& noc,
                          std::uint32_t noc_x, std::uint32_t noc_y) {
    if (src_l1_offset == dst_l1_offset) emu::fault("Semaphore::relay_unicast: dst_sem must be a different semaphore");
    const std::uint64_t dst_noc_addr = ::get_noc_addr(noc_x, noc_y, uint32_t(dst_l1_offset), noc.get_noc_id());
    noc_semaphore_set_remote(uint32_t(src_l1_offset), dst_noc_addr, noc.get_noc_id());
}

template <NocOptions opts>
inline void set_multicast(std::uintptr_t l1_offset, const Noc& noc, std::uint32_t noc_x_start,
                          std::uint32_t noc_y_start, std::uint32_t noc_x_end, std::uint32_t noc_y_end,
                          std::uint32_t num_dests, bool linked) {
    const std::uint64_t multicast_addr = ::get_noc_multicast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end,
                                                                  uint32_t(l1_offset), noc.get_noc_id());
    if constexpr (has_flag(opts, NocOptions::MCAST_INCL_SRC)) {
        noc_semaphore_set_multicast_loopback_src(uint32_t(l1_offset), multicast_addr, num_dests, linked,
                                                 noc.get_noc_id());
    } else {
        noc_semaphore_set_multicast(uint32_t(l1_offset), multicast_addr, num_dests, linked, noc.get_noc_id());
    }
}

template <NocOptions opts>
inline void relay_multicast(std::uintptr_t src_l1_offset, std::uintptr_t dst_l1_offset, const Noc& noc,
                            std::uint32_t noc_x_start, std::uint32_t noc_y_start, std::uint32_t noc_x_end,
                            std::uint32_t noc_y_end, std::uint32_t num_dests, bool linked) {
    if (src_l1_offset == dst_l1_offset)
        emu::fault("Semaphore::relay_multicast: dst_sem must be a different semaphore");
    const std::uint64_t multicast_addr = ::get_noc_multicast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end,
                                                                  uint32_t(dst_l1_offset), noc.get_noc_id());
    if constexpr (has_flag(opts, NocOptions::MCAST_INCL_SRC)) {
        noc_semaphore_set_multicast_loopback_src(uint32_t(src_l1_offset), multicast_addr, num_dests, linked,
                                                 noc.get_noc_id());
    } else {
        noc_semaphore_set_multicast(uint32_t(src_l1_offset), multicast_addr, num_dests, linked, noc.get_noc_id());
    }
}

inline void inc_multicast(std::uintptr_t l1_offset, const Noc& noc, std::uint32_t noc_x_start,
                          std::uint32_t noc_y_start, std::uint32_t noc_x_end, std::uint32_t noc_y_end,
                          std::uint32_t value, std::uint32_t num_dests) {
    const std::uint64_t multicast_addr = ::get_noc_multicast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end,
                                                                  uint32_t(l1_offset), noc.get_noc_id());
    noc_semaphore_inc_multicast(multicast_addr, value, num_dests, noc.get_noc_id());
}

}  // namespace semaphore_detail
