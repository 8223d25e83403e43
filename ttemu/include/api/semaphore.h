// Emulator implementation of api/semaphore.h: the Semaphore class (wheel api/semaphore.h:260-545) for data-movement
// kernels, over semaphore_detail (api/dataflow/semaphore_dm_impl.h): up / down / wait / wait_min / set / value on the
// local word, up(noc, x, y, v) as a NOC atomic increment of the same semaphore on another core, relay_unicast /
// relay_multicast (this semaphore's value written into another semaphore remotely), set_multicast and inc_multicast
// over a core rectangle. A Semaphore built from a bare id uses LOCAL_NONATOMIC, as there. Wormhole compute builds
// have no semaphore implementation (the wheel's compute methods reject at compile time on Wormhole).
#pragma once

#include <cstdint>

#include "api/dataflow/semaphore_binding_token.h"

#ifdef COMPILE_FOR_TRISC
#include "emu/core_type.h"
#else
#include "api/dataflow/semaphore_dm_impl.h"
#endif

template <ProgrammableCoreType core_type = ProgrammableCoreType::TENSIX>
class Semaphore {
    template <ProgrammableCoreType>
    friend class Semaphore;

#ifdef COMPILE_FOR_TRISC
public:
    explicit Semaphore(SemaphoreBindingToken token) : handle_(token.id) {}
    explicit Semaphore(std::uint32_t) : handle_(0) {
        static_assert(semaphore_detail::always_false<core_type>,
                      "a compute semaphore cannot be built from a runtime semaphore id: bind it in the ProgramSpec "
                      "and construct it from the generated token instead");
    }
    template <ProgrammableCoreType c = core_type>
    void up(std::uint32_t) {
        static_assert(semaphore_detail::always_false<c>, "Semaphore on a Wormhole compute build");
    }
    template <ProgrammableCoreType c = core_type>
    void down(std::uint32_t) {
        static_assert(semaphore_detail::always_false<c>, "Semaphore on a Wormhole compute build");
    }
    template <ProgrammableCoreType c = core_type>
    void wait(std::uint32_t) const {
        static_assert(semaphore_detail::always_false<c>, "Semaphore on a Wormhole compute build");
    }
    template <ProgrammableCoreType c = core_type>
    void wait_min(std::uint32_t) const {
        static_assert(semaphore_detail::always_false<c>, "Semaphore on a Wormhole compute build");
    }
    template <ProgrammableCoreType c = core_type>
    void wait_not_full(std::uint32_t = 1) const {
        static_assert(semaphore_detail::always_false<c>, "Semaphore on a Wormhole compute build");
    }
    template <ProgrammableCoreType c = core_type>
    void set(std::uint32_t) {
        static_assert(semaphore_detail::always_false<c>, "Semaphore on a Wormhole compute build");
    }
    template <ProgrammableCoreType c = core_type>
    std::uint32_t value() const {
        static_assert(semaphore_detail::always_false<c>, "Semaphore on a Wormhole compute build");
        return 0;
    }

private:
    std::uintptr_t handle_;
#else
public:
    explicit __attribute__((always_inline)) Semaphore(SemaphoreBindingToken token) :
        handle_(semaphore_detail::sem_l1_offset<core_type>(token.id, token.scope)), scope_(token.scope) {
        if (token.scope != SemScope::LOCAL_NONATOMIC && token.scope != SemScope::EXTERNAL)
            emu::fault("Semaphore: binding scope %u is not a Wormhole data-movement scope", unsigned(token.scope));
    }

    explicit __attribute__((always_inline)) Semaphore(std::uint32_t semaphore_id) :
        handle_(semaphore_detail::sem_l1_offset<core_type>(semaphore_id, SemScope::LOCAL_NONATOMIC)),
        scope_(SemScope::LOCAL_NONATOMIC) {}

    __attribute__((always_inline)) void up(std::uint32_t value) { semaphore_detail::up<core_type>(handle_, scope_, value); }
    __attribute__((always_inline)) void down(std::uint32_t value) {
        semaphore_detail::down<core_type>(handle_, scope_, value);
    }
    __attribute__((always_inline)) void wait(std::uint32_t value) const {
        semaphore_detail::wait<core_type>(handle_, scope_, value);
    }
    __attribute__((always_inline)) void wait_min(std::uint32_t value) const {
        semaphore_detail::wait_min<core_type>(handle_, scope_, value);
    }
    __attribute__((always_inline)) void set(std::uint32_t value) {
        semaphore_detail::set<core_type>(handle_, scope_, value);
    }
    __attribute__((always_inline)) std::uint32_t value() const {
        return semaphore_detail::current<core_type>(handle_, scope_);
    }

    __attribute__((always_inline)) void up(const Noc& noc, std::uint32_t noc_x, std::uint32_t noc_y,
                                           std::uint32_t value, std::uint8_t vc = NOC_UNICAST_WRITE_VC) {
        semaphore_detail::up_remote<core_type>(handle_, scope_, noc, noc_x, noc_y, value, vc);
    }

    template <ProgrammableCoreType dst_core_type = core_type>
    void relay_unicast(const Noc& noc, const Semaphore<dst_core_type>& dst_sem, std::uint32_t noc_x,
                       std::uint32_t noc_y) {
        semaphore_detail::relay_unicast(handle_, dst_sem.handle_, noc, noc_x, noc_y);
    }

    template <NocOptions opts = NocOptions::DEFAULT>
    void set_multicast(const Noc& noc, std::uint32_t noc_x_start, std::uint32_t noc_y_start, std::uint32_t noc_x_end,
                       std::uint32_t noc_y_end, std::uint32_t num_dests, bool linked = false) {
        semaphore_detail::set_multicast<opts>(handle_, noc, noc_x_start, noc_y_start, noc_x_end, noc_y_end, num_dests,
                                              linked);
    }

    template <NocOptions opts = NocOptions::DEFAULT, ProgrammableCoreType dst_core_type = core_type>
    void relay_multicast(const Noc& noc, const Semaphore<dst_core_type>& dst_sem, std::uint32_t noc_x_start,
                         std::uint32_t noc_y_start, std::uint32_t noc_x_end, std::uint32_t noc_y_end,
                         std::uint32_t num_dests, bool linked = false) {
        semaphore_detail::relay_multicast<opts>(handle_, dst_sem.handle_, noc, noc_x_start, noc_y_start, noc_x_end,
                                                noc_y_end, num_dests, linked);
    }

    void inc_multicast(const Noc& noc, std::uint32_t noc_x_start, std::uint32_t noc_y_start, std::uint32_t noc_x_end,
                       std::uint32_t noc_y_end, std::uint32_t value, std::uint32_t num_dests) {
        semaphore_detail::inc_multicast(handle_, noc, noc_x_start, noc_y_start, noc_x_end, noc_y_end, value,
                                        num_dests);
    }

private:
    std::uintptr_t handle_;  // host form of the semaphore word's L1 address
    SemScope scope_;
#endif
};
