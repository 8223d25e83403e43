// Emulator implementation of api/tensor/noc_traits.h: a TensorAccessor as a NOC endpoint (wheel noc_traits.h:
// 132-176): {.page_id, .offset_bytes} name a page (and a byte offset in it); the NOC address is the accessor's
// get_noc_addr(page_id, offset_bytes, noc); as a LOCAL_L1 endpoint the page must be on this core (its local address).
// Also Noc::async_write_zeros for a DRAM TensorAccessor (internal/noc_zero_dram.inl): the caller's pre-zeroed scratch,
// read at its read pointer, written over the page in NOC_MAX_BURST_SIZE chunks; write_zeros_dram_barrier completes it.
// PageView<Accessor> and AbstractTensorAccessorWrapper are endpoints of the same form.
// Not implemented: ShardView / tensor_accessor::Page and the page iterators (pages(), shard_pages()).
#pragma once

#include <cstdint>
#include <type_traits>

#include "api/dataflow/noc.h"
#include "api/tensor/tensor_accessor.h"

namespace emu_noc_traits {
// A page's NOC address as the endpoint form asked for: as LOCAL_L1 the page must be on this node (noc_traits.h:159-163).
template <Noc::AddressType address_type>
auto resolve_addr(uint64_t noc_addr, const Noc& noc)
    -> std::conditional_t<address_type == Noc::AddressType::LOCAL_L1, uint32_t, uint64_t> {
    if constexpr (address_type == Noc::AddressType::LOCAL_L1) {
        if (!noc.is_local_addr(noc_addr))
            emu::fault("a tensor page used as a local-L1 endpoint lives on another node (NOC address 0x%llx)",
                       (unsigned long long)noc_addr);
        return uint32_t(noc_addr & NOC_LOCAL_ADDR_MASK);
    } else {
        return noc_addr;
    }
}
}  // namespace emu_noc_traits

template <typename DSpecT>
struct noc_traits_t<TensorAccessor<DSpecT>> {
    struct src_args_type {
        uint32_t page_id{};
        uint32_t offset_bytes = 0;
    };
    struct dst_args_type {
        uint32_t page_id{};
        uint32_t offset_bytes = 0;
    };

    template <Noc::AddressType address_type>
    static auto src_addr(const TensorAccessor<DSpecT>& src, const Noc& noc, const src_args_type& args)
        -> std::conditional_t<address_type == Noc::AddressType::LOCAL_L1, uint32_t, uint64_t> {
        return emu_noc_traits::resolve_addr<address_type>(
            src.get_noc_addr(args.page_id, args.offset_bytes, noc.get_noc_id()), noc);
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const TensorAccessor<DSpecT>& dst, const Noc& noc, const dst_args_type& args)
        -> std::conditional_t<address_type == Noc::AddressType::LOCAL_L1, uint32_t, uint64_t> {
        return emu_noc_traits::resolve_addr<address_type>(
            dst.get_noc_addr(args.page_id, args.offset_bytes, noc.get_noc_id()), noc);
    }
};

namespace emu_noc_traits {
// {.page_id, .offset_bytes} endpoints over anything with get_noc_addr(page_id, offset, noc).
template <typename Endpoint>
struct PageTraits {
    struct src_args_type {
        uint32_t page_id{};
        uint32_t offset_bytes = 0;
    };
    struct dst_args_type {
        uint32_t page_id{};
        uint32_t offset_bytes = 0;
    };
    template <Noc::AddressType address_type>
    static auto src_addr(const Endpoint& src, const Noc& noc, const src_args_type& args)
        -> std::conditional_t<address_type == Noc::AddressType::LOCAL_L1, uint32_t, uint64_t> {
        return resolve_addr<address_type>(
            src.get_noc_addr(args.page_id, args.offset_bytes, noc.get_noc_id()), noc);
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const Endpoint& dst, const Noc& noc, const dst_args_type& args)
        -> std::conditional_t<address_type == Noc::AddressType::LOCAL_L1, uint32_t, uint64_t> {
        return resolve_addr<address_type>(
            dst.get_noc_addr(args.page_id, args.offset_bytes, noc.get_noc_id()), noc);
    }
};
}  // namespace emu_noc_traits

template <typename Accessor>
struct noc_traits_t<PageView<Accessor>> : emu_noc_traits::PageTraits<PageView<Accessor>> {};

template <>
struct noc_traits_t<AbstractTensorAccessorWrapper> : emu_noc_traits::PageTraits<AbstractTensorAccessorWrapper> {};

template <typename DSpecT, typename Scratch>
inline void Noc::async_write_zeros(const ::TensorAccessor<DSpecT>& accessor, uint32_t size_bytes,
                                   const dst_args_t<::TensorAccessor<DSpecT>>& args, const Scratch& scratch) const {
    static_assert(DSpecT::is_dram, "noc.async_write_zeros<TensorAccessor, Scratch> requires a DRAM-backed accessor.");
    static_assert(noc_zero_l1_endpoint_v<Scratch>,
                  "noc.async_write_zeros scratch must be a local-L1 endpoint: CircularBuffer, DataflowBuffer, "
                  "CoreLocalMem, Scratchpad or LocalTensorAccessor.");
    if (args.offset_bytes + size_bytes > accessor.get_aligned_page_size())
        emu::fault("noc.async_write_zeros: offset %u + size %u exceeds the accessor's page size %u", args.offset_bytes,
                   size_bytes, accessor.get_aligned_page_size());
    const uint32_t src_addr = get_src_ptr<AddressType::LOCAL_L1>(scratch, src_args_t<Scratch>{});
    uint64_t dst = accessor.get_noc_addr(args.page_id, args.offset_bytes, noc_id_);
    uint32_t remaining = size_bytes;
    while (remaining > 0) {
        const uint32_t curr = remaining > (uint32_t)NOC_MAX_BURST_SIZE ? (uint32_t)NOC_MAX_BURST_SIZE : remaining;
        noc_async_write(src_addr, dst, curr, noc_id_);
        dst += curr;
        remaining -= curr;
    }
}
