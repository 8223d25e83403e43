// Emulator implementation of api/core_local_mem.h: CoreLocalMem<T>, a typed pointer to this core's L1
// (wheel core_local_mem.h:29-175) and, on data-movement builds, its NOC endpoint traits (a local-L1 source or
// destination at get_address() + offset_bytes; never a multicast destination; 180-208). Addresses are what the kernel
// was given (in the emulator an L1 address from get_write_ptr / get_semaphore is the host form, so dereferencing it
// touches the core's emulated L1; a stray one faults with the core and region named).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if !defined(COMPILE_FOR_TRISC)
#include "api/dataflow/noc.h"
#endif
#include "api/lock.h"

#ifndef tt_l1_ptr
#define tt_l1_ptr
#endif

template <typename T, typename AddressType = uintptr_t>
class CoreLocalMem {
    using difference_type = std::ptrdiff_t;

    static_assert(std::is_integral<AddressType>::value, "AddressType must be an integral type");
    static_assert(std::is_unsigned<AddressType>::value, "AddressType must be unsigned for address representation");
    static_assert(sizeof(AddressType) >= sizeof(difference_type),
                  "AddressType must be large enough to hold difference_type for safe pointer arithmetic");

public:
    CoreLocalMem(AddressType address) : address_(address) {}
    CoreLocalMem(T* ptr) : address_(reinterpret_cast<AddressType>(ptr)) {}
    CoreLocalMem(const CoreLocalMem&) = default;
    CoreLocalMem& operator=(const CoreLocalMem&) = default;

    tt_l1_ptr T* get_unsafe_ptr() const { return reinterpret_cast<tt_l1_ptr T*>(address_); }
    AddressType get_address() const { return address_; }

    T& operator[](uint32_t index) const { return get_unsafe_ptr()[index]; }
    T& operator*() const { return get_unsafe_ptr()[0]; }
    tt_l1_ptr T* operator->() const { return get_unsafe_ptr(); }

    CoreLocalMem& operator+=(difference_type offset) {
        address_ += offset * sizeof(T);
        return *this;
    }
    CoreLocalMem& operator-=(difference_type offset) {
        address_ -= offset * sizeof(T);
        return *this;
    }
    CoreLocalMem& operator++() {
        address_ += sizeof(T);
        return *this;
    }
    CoreLocalMem& operator--() {
        address_ -= sizeof(T);
        return *this;
    }
    CoreLocalMem operator++(int) {
        CoreLocalMem tmp = *this;
        operator++();
        return tmp;
    }
    CoreLocalMem operator--(int) {
        CoreLocalMem tmp = *this;
        operator--();
        return tmp;
    }
    CoreLocalMem operator+(difference_type offset) const { return CoreLocalMem(address_ + offset * sizeof(T)); }
    CoreLocalMem operator-(difference_type offset) const { return CoreLocalMem(address_ - offset * sizeof(T)); }
    difference_type operator-(const CoreLocalMem& other) const {
        difference_type byte_diff = static_cast<difference_type>(address_) - static_cast<difference_type>(other.address_);
        return byte_diff / sizeof(T);  // as the wheel (core_local_mem.h:141-146), unsigned division included
    }

    // Lock num_elements elements starting here (a NOC-debug / cache annotation on silicon).
    [[nodiscard]] auto scoped_lock(size_t num_elements) const {
        (void)num_elements;
        return Lock([]() {});
    }

    bool operator==(const CoreLocalMem& other) const { return address_ == other.address_; }
    bool operator!=(const CoreLocalMem& other) const { return address_ != other.address_; }
    bool operator<(const CoreLocalMem& other) const { return address_ < other.address_; }
    bool operator<=(const CoreLocalMem& other) const { return address_ <= other.address_; }
    bool operator>(const CoreLocalMem& other) const { return address_ > other.address_; }
    bool operator>=(const CoreLocalMem& other) const { return address_ >= other.address_; }
    explicit operator bool() const { return address_ != 0; }

private:
    AddressType address_;
};

#if !defined(COMPILE_FOR_TRISC)
template <typename T, typename AddressType>
struct noc_traits_t<CoreLocalMem<T, AddressType>> {
    struct src_args_type {
        AddressType offset_bytes = 0;
    };
    struct dst_args_type {
        AddressType offset_bytes = 0;
    };
    struct dst_args_mcast_type {};

    template <Noc::AddressType address_type>
    static auto src_addr(const CoreLocalMem<T, AddressType>& src, const Noc&, const src_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1, "CoreLocalMem can only be used as local L1 source");
        return src.get_address() + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const CoreLocalMem<T, AddressType>& dst, const Noc&, const dst_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1, "CoreLocalMem can only be used as local L1 dest");
        return dst.get_address() + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static uint64_t dst_addr_mcast(const CoreLocalMem<T, AddressType>&, const Noc&, const dst_args_mcast_type&) {
        static_assert(address_type != address_type, "CoreLocalMem cannot be used as NoC mcast destination");
        return 0;
    }
};

template <typename T, typename AddressType>
inline constexpr bool noc_zero_l1_endpoint_v<CoreLocalMem<T, AddressType>> = true;

#include "api/tensor/noc_traits.h"
#endif  // !defined(COMPILE_FOR_TRISC)
