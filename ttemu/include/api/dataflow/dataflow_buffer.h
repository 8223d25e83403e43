// Emulator implementation of api/dataflow/dataflow_buffer.h for Wormhole (tt-1xx): a DataflowBuffer is a circular
// buffer (wheel dataflow_buffer.h:96-570 with internal/tt-1xx/dataflow_buffer.inl): one contiguous entry per op
// (producer / consumer share and stride 1), entry size = the CB's page size, total entries = ring size / page size;
// reserve_back / push_back / wait_front / pop_front are the CB calls (on a compute build, the packer's / unpacker's);
// get_read_ptr / get_write_ptr are the RISC's pointers; evil_set_*_ptr move them; scoped_*_lock hand out the pointer
// as a CoreLocalMem; with chlkc_descriptors.h (DFB_DESCRIPTORS_DEFINED) the tile getters read the JIT tables (unpack_*
// on data movement, as there). As a NOC endpoint (dataflow_buffer.h:578-622) it is a local-L1 source at its read
// pointer, a destination at its write pointer, a multicast destination at its write pointer.
#pragma once

#include <cstdint>
#include <type_traits>

#ifdef COMPILE_FOR_TRISC
#include "api/compute/cb_api.h"
#else
#include "api/dataflow/noc.h"
#endif

#include "api/core_local_mem.h"
#include "api/dataflow/dfb_access.h"
#include "api/dataflow/dfb_binding_token.h"
#include "api/lock.h"
#include "emu/runtime.h"

#if __has_include("chlkc_descriptors.h")
#include "chlkc_descriptors.h"
#define DFB_DESCRIPTORS_DEFINED
#endif

namespace experimental {
class PrefetcherPipe;
}

// RAII lock from scoped_write_lock / scoped_read_lock; get_ptr() is the locked pointer (const for a read lock).
template <bool IsWrite, typename ReleaseFunc>
class DfbScopedLock {
public:
    inline __attribute__((always_inline)) DfbScopedLock(uint32_t pointer, ReleaseFunc release) :
        pointer_(pointer), release_(release) {}
    inline __attribute__((always_inline)) ~DfbScopedLock() { release_(); }

    DfbScopedLock(const DfbScopedLock&) = delete;
    DfbScopedLock(DfbScopedLock&&) = delete;
    DfbScopedLock& operator=(const DfbScopedLock&) = delete;
    DfbScopedLock& operator=(DfbScopedLock&&) = delete;

    template <typename T = uint32_t>
    [[nodiscard]] inline __attribute__((always_inline)) CoreLocalMem<std::conditional_t<IsWrite, T, const T>> get_ptr()
        const {
        return CoreLocalMem<std::conditional_t<IsWrite, T, const T>>(pointer_);
    }

private:
    uint32_t pointer_;
    ReleaseFunc release_;
};

template <bool IsWrite, typename ReleaseFunc>
[[nodiscard]] inline __attribute__((always_inline)) DfbScopedLock<IsWrite, ReleaseFunc> make_dfb_scoped_lock(
    uint32_t pointer, ReleaseFunc release) {
    return DfbScopedLock<IsWrite, ReleaseFunc>(pointer, release);
}

class DataflowBuffer {
public:
    template <dfb::AccessPattern TokPap, dfb::AccessPattern TokCap>
    DataflowBuffer(DFBBindingToken<TokPap, TokCap> token) : DataflowBuffer(static_cast<uint16_t>(token)) {}
    DataflowBuffer(RelayDFBBindingToken token) : DataflowBuffer(static_cast<uint16_t>(token)) {}
    DataflowBuffer(uint16_t logical_dfb_id) : logical_dfb_id_(logical_dfb_id) {}

    uint16_t get_id() const { return logical_dfb_id_; }

    uint32_t get_entry_size() const { return emu::cb_page_size(logical_dfb_id_); }
    uint32_t get_stride_size() const { return emu::cb_page_size(logical_dfb_id_); }
    uint32_t get_total_num_entries() const {
        return emu::cb_total_size(logical_dfb_id_) / emu::cb_page_size(logical_dfb_id_);
    }
    uint32_t get_total_size_bytes() const { return emu::cb_total_size(logical_dfb_id_); }
    // No per-tile-counter view on tt-1xx: all alias the totals.
    uint32_t get_local_num_entries() const { return get_total_num_entries(); }
    uint32_t get_local_size_bytes() const { return get_total_size_bytes(); }
    uint32_t get_ring_span_bytes() const { return get_total_size_bytes(); }
    uint32_t get_ring_span_num_entries() const { return get_total_num_entries(); }
    uint16_t get_producer_share() const { return 1; }
    uint16_t get_consumer_share() const { return 1; }
    uint16_t get_producer_stride_tiles() const { return 1; }
    uint16_t get_consumer_stride_tiles() const { return 1; }

#ifdef COMPILE_FOR_TRISC
    void reserve_back(uint16_t num_entries) { ckernel::cb_reserve_back(logical_dfb_id_, num_entries); }
    void push_back(uint16_t num_entries) { ckernel::cb_push_back(logical_dfb_id_, num_entries); }
    void wait_front(uint16_t num_entries) { ckernel::cb_wait_front(logical_dfb_id_, num_entries); }
    void pop_front(uint16_t num_entries) { ckernel::cb_pop_front(logical_dfb_id_, num_entries); }

    uint32_t get_tile_address(uint32_t tile_index) { return ckernel::get_tile_address(logical_dfb_id_, tile_index); }
    template <typename T = uint32_t>
    T read_tile_value(uint32_t tile_index, uint32_t element_offset) {
        static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "read_tile_value: T must be 1, 2, or 4 bytes");
        static_assert(std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>,
                      "read_tile_value: T must be an unsigned integral type");
        uint32_t addr = ckernel::get_tile_address(logical_dfb_id_, tile_index) + element_offset * sizeof(T);
        T v;
        __builtin_memcpy(&v, emu::l1(addr, sizeof(T)), sizeof(T));
        return v;
    }
#else
    void reserve_back(uint16_t num_entries) { cb_reserve_back(logical_dfb_id_, num_entries); }
    void push_back(uint16_t num_entries) { cb_push_back(logical_dfb_id_, num_entries); }
    void wait_front(uint16_t num_entries) { cb_wait_front(logical_dfb_id_, num_entries); }
    void pop_front(uint16_t num_entries) { cb_pop_front(logical_dfb_id_, num_entries); }

    bool pages_reservable_at_back(int32_t num_pages) const {
        return cb_pages_reservable_at_back(logical_dfb_id_, num_pages);
    }
    bool pages_available_at_front(int32_t num_pages) const {
        return cb_pages_available_at_front(logical_dfb_id_, num_pages);
    }

    // Deprecated on WH: waits for every write of this RISC (transaction ids are not tracked here either).
    void write_barrier(const Noc& noc) const { noc.async_write_barrier(); }
#endif

#ifdef DFB_DESCRIPTORS_DEFINED
    constexpr uint32_t get_tile_size() const { return unpack_tile_size[logical_dfb_id_]; }
    constexpr uint32_t get_tile_r_dim() const { return unpack_tile_r_dim[logical_dfb_id_]; }
    constexpr uint32_t get_tile_c_dim() const { return unpack_tile_c_dim[logical_dfb_id_]; }
    constexpr uint32_t get_tile_hw() const { return get_tile_r_dim() * get_tile_c_dim(); }
    constexpr uint32_t get_tile_num_faces() const { return unpack_tile_num_faces[logical_dfb_id_]; }
    constexpr uint32_t get_face_r_dim() const { return unpack_tile_face_r_dim[logical_dfb_id_]; }
    constexpr uint32_t get_partial_face() const { return unpack_partial_face[logical_dfb_id_]; }
    constexpr uint32_t get_narrow_tile() const { return unpack_narrow_tile[logical_dfb_id_]; }
    constexpr uint32_t get_num_faces_r_dim() const { return unpack_num_faces_r_dim[logical_dfb_id_]; }
    constexpr uint32_t get_num_faces_c_dim() const { return unpack_num_faces_c_dim[logical_dfb_id_]; }
    constexpr DataFormat get_dataformat() const { return static_cast<DataFormat>(unpack_src_format[logical_dfb_id_]); }
    constexpr DataFormat get_unpack_dst_format() const {
        return static_cast<DataFormat>(unpack_dst_format[logical_dfb_id_]);
    }
    constexpr DataFormat get_pack_src_format() const {
        return static_cast<DataFormat>(pack_src_format[logical_dfb_id_]);
    }
    constexpr DataFormat get_pack_dst_format() const {
        return static_cast<DataFormat>(pack_dst_format[logical_dfb_id_]);
    }
#endif

    void finish() {}

    uint32_t get_write_ptr() const { return emu::cb_write_addr(logical_dfb_id_); }
    uint32_t get_read_ptr() const { return emu::cb_read_addr(logical_dfb_id_); }

    void evil_set_write_ptr(uint32_t addr) { emu::cb_set_write_addr(logical_dfb_id_, addr); }
    void evil_set_read_ptr(uint32_t addr) { emu::cb_set_read_addr(logical_dfb_id_, addr); }

    [[nodiscard]] auto scoped_write_lock(uint16_t num_entries = 1) {
        (void)num_entries;
        return make_dfb_scoped_lock<true>(get_write_ptr(), []() {});
    }
    [[nodiscard]] auto scoped_read_lock(uint16_t num_entries = 1) {
        (void)num_entries;
        return make_dfb_scoped_lock<false>(get_read_ptr(), []() {});
    }

private:
    uint16_t logical_dfb_id_;
};

#ifndef COMPILE_FOR_TRISC
template <>
struct noc_traits_t<DataflowBuffer> {
    using src_args_type = DataflowBufferArgs;
    using dst_args_type = DataflowBufferArgs;

    struct dst_args_mcast_type {
        uint32_t noc_x_start{};
        uint32_t noc_y_start{};
        uint32_t noc_x_end{};
        uint32_t noc_y_end{};
        uint32_t offset_bytes{};
    };
    template <Noc::AddressType address_type>
    static auto src_addr(const DataflowBuffer& src, const Noc&, const src_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1,
                      "DataflowBuffer without mcast range can only be used as L1 source");
        return src.get_read_ptr() + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const DataflowBuffer& dst, const Noc&, const dst_args_type& args) {
        static_assert(address_type == Noc::AddressType::LOCAL_L1,
                      "DataflowBuffer without mcast range can only be used as L1 destination");
        return dst.get_write_ptr() + args.offset_bytes;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr_mcast(const DataflowBuffer& dst, const Noc& noc, const dst_args_mcast_type& args) {
        static_assert(address_type == Noc::AddressType::NOC,
                      "DataflowBuffer with mcast range cannot be used as L1 destination");
        return ::get_noc_multicast_addr(args.noc_x_start, args.noc_y_start, args.noc_x_end, args.noc_y_end,
                                        dst.get_write_ptr() + args.offset_bytes, noc.get_noc_id());
    }
};

template <>
inline constexpr bool noc_zero_l1_endpoint_v<DataflowBuffer> = true;

#include "api/tensor/noc_traits.h"
#endif
