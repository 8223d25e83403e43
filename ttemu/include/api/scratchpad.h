// Emulator implementation of api/scratchpad.h: Scratchpad<T>, a typed span over a Program-scope L1 scratch region
// built from its binding token (base address = common runtime arg token.crta_offset_), with bounds-checked indexing,
// begin / end / local_mem as CoreLocalMem<T>, and, on data movement, its NOC endpoint traits (a local-L1 source or
// destination at base + offset_bytes; not a multicast destination; wheel api/scratchpad.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "api/core_local_mem.h"
#include "api/scratchpad_binding_token.h"
#include "emu/kernel_args.h"
#include "emu/runtime.h"

using DataFormat = ::emu::DataFormat;

template <typename T>
class Scratchpad {
public:
    using element_type = T;
    using value_type = std::remove_cv_t<T>;
    using size_type = uint32_t;
    using pointer = CoreLocalMem<T>;
    using const_pointer = CoreLocalMem<const T>;
    using reference = T&;
    using const_reference = const T&;
    using iterator = pointer;

    [[nodiscard]] explicit Scratchpad(const ScratchpadBindingToken& token) noexcept :
        Scratchpad(pointer{get_common_arg_val<uint32_t>(int(token.crta_offset_))}, token.size_in_bytes_,
                   static_cast<DataFormat>(token.llk_metadata_.format)) {}

    [[nodiscard]] reference operator[](uint32_t index) const {
        auto location = start_addr_ + index;
        if (!(location < sentinel_addr_))
            emu::fault("Scratchpad[%u]: index past the scratchpad's %u elements", index, size());
        return *location;
    }

    [[nodiscard]] size_type size() const noexcept { return static_cast<size_type>(size_in_bytes() / sizeof(T)); }
    [[nodiscard]] size_type size_in_bytes() const noexcept {
        return static_cast<size_type>(sentinel_addr_.get_address() - start_addr_.get_address());
    }
    [[nodiscard]] constexpr DataFormat get_dataformat() const noexcept { return data_format_; }
    [[nodiscard]] uint32_t get_base_address() const noexcept {
        return static_cast<uint32_t>(start_addr_.get_address());
    }
    [[nodiscard]] iterator begin() const noexcept { return start_addr_; }
    [[nodiscard]] iterator end() const noexcept { return sentinel_addr_; }
    [[nodiscard]] pointer local_mem() const noexcept { return start_addr_; }
    [[nodiscard]] auto scoped_lock(uint32_t offset, uint32_t num_elements) const {
        return (start_addr_ + offset).scoped_lock(num_elements);
    }

private:
    [[nodiscard]] Scratchpad(pointer base_addr, size_type size_in_bytes, DataFormat data_format) noexcept :
        start_addr_(base_addr), sentinel_addr_(pointer{base_addr.get_address() + uintptr_t{size_in_bytes}}),
        data_format_(data_format) {}

    pointer start_addr_, sentinel_addr_;
    DataFormat data_format_;
};

#if !defined(COMPILE_FOR_TRISC)
template <typename T>
struct noc_traits_t<Scratchpad<T>> {
    struct src_args_type {
        uint32_t offset_bytes = 0;
    };
    struct dst_args_type {
        uint32_t offset_bytes = 0;
    };
    struct dst_args_mcast_type {};
    template <Noc::AddressType address_type>
    static auto src_addr(const Scratchpad<T>& src, const Noc&, const src_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1, "Scratchpad can only be used as a local L1 source");
        return src.get_base_address() + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const Scratchpad<T>& dst, const Noc&, const dst_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1,
                      "Scratchpad can only be used as a local L1 destination");
        return dst.get_base_address() + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static uint64_t dst_addr_mcast(const Scratchpad<T>&, const Noc&, const dst_args_mcast_type&) {
        static_assert(address_type != address_type, "Scratchpad cannot be used as a NoC multicast destination");
        return 0;
    }
};

template <typename T>
inline constexpr bool noc_zero_l1_endpoint_v<Scratchpad<T>> = true;
template <typename T>
inline constexpr bool is_scratchpad_v<Scratchpad<T>> = true;
#endif
