// Emulator implementation of api/dataflow/circular_buffer.h: the CircularBuffer class (Device 2.0) over the same
// CB runtime as the legacy cb_* calls (wheel circular_buffer.h:23-151): reserve_back / push_back / wait_front /
// pop_front, the RISC's read and write pointers (byte addresses; in the emulator the host form of an L1 address),
// pages_reservable_at_back / pages_available_at_front, and, when the kernel build generated chlkc_descriptors.h
// (DATA_FORMATS_DEFINED), get_tile_size / get_tile_hw / get_dataformat. As a NOC endpoint (circular_buffer.h:
// 169-256) a CircularBuffer is a local-L1 source at its read pointer, a local-L1 destination at its write pointer and,
// with a core rectangle, a multicast destination at its write pointer; CircularBufferView (use<READ_PTR|WRITE_PTR>)
// picks the pointer explicitly.
// On a compute build the sync calls are the compute API's (the unpacker waits/pops, the packer reserves/pushes).
#pragma once

#include <cstdint>

#ifdef COMPILE_FOR_TRISC
#include "api/compute/cb_api.h"
#else
#include "api/dataflow/noc.h"
#endif
#include "api/lock.h"

class CircularBuffer {
public:
    enum class AddrSelector { WRITE_PTR, READ_PTR };

    explicit CircularBuffer(uint32_t cb_id) : cb_id_(cb_id) {}

    uint32_t get_cb_id() const { return cb_id_; }

#ifdef COMPILE_FOR_TRISC
    void reserve_back(int32_t num_pages) { ckernel::cb_reserve_back(cb_id_, num_pages); }
    void push_back(int32_t num_pages) { ckernel::cb_push_back(cb_id_, num_pages); }
    void wait_front(int32_t num_pages) { ckernel::cb_wait_front(cb_id_, num_pages); }
    void pop_front(int32_t num_pages) { ckernel::cb_pop_front(cb_id_, num_pages); }

    uint32_t get_tile_address(uint32_t tile_index) { return ckernel::get_tile_address(cb_id_, tile_index); }
    uint32_t read_tile_value(uint32_t tile_index, uint32_t element_offset) {
        return ckernel::read_tile_value(cb_id_, tile_index, element_offset);
    }
#else
    void reserve_back(int32_t num_pages) { cb_reserve_back(cb_id_, num_pages); }
    void push_back(int32_t num_pages) { cb_push_back(cb_id_, num_pages); }
    void wait_front(int32_t num_pages) { cb_wait_front(cb_id_, num_pages); }
    void pop_front(int32_t num_pages) { cb_pop_front(cb_id_, num_pages); }

#ifdef DATA_FORMATS_DEFINED
    uint32_t get_tile_size() const { return ::get_tile_size(cb_id_); }
    uint32_t get_tile_hw() const { return ::get_tile_hw(cb_id_); }
    DataFormat get_dataformat() const { return ::get_dataformat(cb_id_); }
#endif

    bool pages_reservable_at_back(int32_t num_pages) const { return cb_pages_reservable_at_back(cb_id_, num_pages); }
    bool pages_available_at_front(int32_t num_pages) const { return cb_pages_available_at_front(cb_id_, num_pages); }
#endif

    uint32_t get_write_ptr() const { return emu::cb_write_addr(cb_id_); }
    uint32_t get_read_ptr() const { return emu::cb_read_addr(cb_id_); }

    // The whole ring is "locked" (a NOC-debug annotation on silicon; nothing to do here).
    [[nodiscard]] auto scoped_lock() {
        return Lock([]() {});
    }

private:
    uint32_t cb_id_;
};

#ifndef COMPILE_FOR_TRISC

template <CircularBuffer::AddrSelector AddrSel>
struct CircularBufferView {
    const CircularBuffer& cb;
    explicit constexpr CircularBufferView(const CircularBuffer& c) : cb(c) {}
};

// use<CircularBuffer::AddrSelector::READ_PTR>(cb): the read or write pointer as a NOC endpoint.
template <CircularBuffer::AddrSelector AddrSel>
constexpr auto use(const CircularBuffer& cb) {
    return CircularBufferView<AddrSel>(cb);
}

template <>
struct noc_traits_t<CircularBuffer> {
    struct src_args_type {
        uint32_t offset_bytes{};
    };
    struct dst_args_type {
        uint32_t offset_bytes{};
    };
    struct dst_args_mcast_type {
        uint32_t noc_x_start{};
        uint32_t noc_y_start{};
        uint32_t noc_x_end{};
        uint32_t noc_y_end{};
        uint32_t offset_bytes{};
    };
    template <Noc::AddressType address_type>
    static auto src_addr(const CircularBuffer& src, const Noc&, const src_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1,
                      "CircularBuffer without mcast range can only be used as L1 source");
        return src.get_read_ptr() + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const CircularBuffer& dst, const Noc&, const dst_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1,
                      "CircularBuffer without mcast range can only be used as L1 source");
        return dst.get_write_ptr() + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr_mcast(const CircularBuffer& dst, const Noc& noc, const dst_args_mcast_type& args) {
        static_assert(address_type == Noc::AddressType::NOC,
                      "CircularBuffer with mcast range cannot be used as L1 source");
        return ::get_noc_multicast_addr(args.noc_x_start, args.noc_y_start, args.noc_x_end, args.noc_y_end,
                                        dst.get_write_ptr() + args.offset_bytes, noc.get_noc_id());
    }
};

template <CircularBuffer::AddrSelector AddrSel>
struct noc_traits_t<CircularBufferView<AddrSel>> {
    struct src_args_type {
        uint32_t offset_bytes{};
    };
    struct dst_args_type {
        uint32_t offset_bytes{};
    };
    struct dst_args_mcast_type {
        uint32_t noc_x_start{};
        uint32_t noc_y_start{};
        uint32_t noc_x_end{};
        uint32_t noc_y_end{};
        uint32_t offset_bytes{};
    };
    template <Noc::AddressType address_type>
    static auto src_addr(const CircularBufferView<AddrSel>& view, const Noc&, const src_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1,
                      "CircularBuffer without mcast range can only be used as L1 source");
        return local_addr(view) + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const CircularBufferView<AddrSel>& view, const Noc&, const dst_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1,
                      "CircularBuffer without mcast range can only be used as L1 source");
        return local_addr(view) + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr_mcast(const CircularBufferView<AddrSel>& view, const Noc& noc,
                               const dst_args_mcast_type& args) {
        static_assert(address_type == Noc::AddressType::NOC,
                      "CircularBuffer with mcast range cannot be used as L1 source");
        return ::get_noc_multicast_addr(args.noc_x_start, args.noc_y_start, args.noc_x_end, args.noc_y_end,
                                        local_addr(view) + args.offset_bytes, noc.get_noc_id());
    }

private:
    static uint32_t local_addr(const CircularBufferView<AddrSel>& view) {
        if constexpr (AddrSel == CircularBuffer::AddrSelector::READ_PTR) {
            return view.cb.get_read_ptr();
        } else {
            return view.cb.get_write_ptr();
        }
    }
};

template <>
inline constexpr bool noc_zero_l1_endpoint_v<CircularBuffer> = true;

// The wheel pulls in internal/noc_zero_dram.inl here, which brings the TensorAccessor endpoint traits.
#include "api/tensor/noc_traits.h"

#endif  // !COMPILE_FOR_TRISC
