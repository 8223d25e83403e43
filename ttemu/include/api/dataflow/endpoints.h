// Emulator implementation of api/dataflow/endpoints.h: endpoints that name a NOC location directly.
//   UnicastEndpoint             {.noc_x, .noc_y, .addr}: a core's L1 (NOC form) or, as LOCAL_L1, this core's addr
//   PrecomposedUnicastEndpoint  {.noc_addr}: an already composed NOC address (e.g. a TensorAccessor's)
//   MulticastEndpoint           {.noc_x_start, .noc_y_start, .noc_x_end, .noc_y_end, .addr}: a core rectangle
//   AllocatorBank<L1|DRAM>      {.bank_id, .addr}: an allocator bank (get_noc_addr_from_bank_id)
// as the wheel's api/dataflow/endpoints.h:10-130. Also the L1 form of Noc::async_write_zeros
// (internal/tt-1xx/noc_zero_l1.inl): loopback reads from this core's zero-filled MEM_ZEROS block.
#pragma once

#include "api/dataflow/noc.h"

struct UnicastEndpoint {
    uint64_t get_noc_unicast_addr(uint32_t noc_x, uint32_t noc_y, uint32_t addr, uint8_t noc) const {
        return ::get_noc_addr(noc_x, noc_y, addr, noc);
    }
};

struct PrecomposedUnicastEndpoint {};

template <>
struct noc_traits_t<PrecomposedUnicastEndpoint> {
    struct src_args_type {
        uint64_t noc_addr{};
    };
    struct dst_args_type {
        uint64_t noc_addr{};
    };
    template <Noc::AddressType address_type>
    static auto src_addr(const PrecomposedUnicastEndpoint&, const Noc&, const src_args_type& args) {
        static_assert(address_type == Noc::AddressType::NOC);
        return args.noc_addr;
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const PrecomposedUnicastEndpoint&, const Noc&, const dst_args_type& args) {
        static_assert(address_type == Noc::AddressType::NOC);
        return args.noc_addr;
    }
};

struct MulticastEndpoint {
    uint64_t get_noc_multicast_addr(uint32_t noc_x_start, uint32_t noc_y_start, uint32_t noc_x_end,
                                    uint32_t noc_y_end, uint32_t addr, uint8_t noc) const {
        return ::get_noc_multicast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end, addr, noc);
    }
};

enum class AllocatorBankType { L1, DRAM };

template <AllocatorBankType bank_type>
struct AllocatorBank {
    uint64_t get_noc_addr_from_bank_id(uint32_t bank_id, uint32_t addr, uint8_t noc) const {
        return ::get_noc_addr_from_bank_id<bank_type == AllocatorBankType::DRAM>(bank_id, addr, noc);
    }
};

template <>
struct noc_traits_t<UnicastEndpoint> {
    struct src_args_type {
        uint32_t noc_x{};
        uint32_t noc_y{};
        uint32_t addr{};
    };
    struct dst_args_type {
        uint32_t noc_x{};
        uint32_t noc_y{};
        uint32_t addr{};
    };
    template <Noc::AddressType address_type>
    static auto src_addr(const UnicastEndpoint& src, const Noc& noc, const src_args_type& args) {
        if constexpr (address_type == Noc::AddressType::LOCAL_L1) {
            return args.addr;
        } else {
            return src.get_noc_unicast_addr(args.noc_x, args.noc_y, Noc::l1_cached_view(args.addr), noc.get_noc_id());
        }
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const UnicastEndpoint& dst, const Noc& noc, const dst_args_type& args) {
        if constexpr (address_type == Noc::AddressType::LOCAL_L1) {
            return args.addr;
        } else {
            return dst.get_noc_unicast_addr(args.noc_x, args.noc_y, Noc::l1_cached_view(args.addr), noc.get_noc_id());
        }
    }
};

template <>
struct noc_traits_t<MulticastEndpoint> {
    struct dst_args_mcast_type {
        uint32_t noc_x_start{};
        uint32_t noc_y_start{};
        uint32_t noc_x_end{};
        uint32_t noc_y_end{};
        uint32_t addr{};
    };
    template <Noc::AddressType address_type>
    static auto dst_addr_mcast(const MulticastEndpoint& dst, const Noc& noc, const dst_args_mcast_type& args) {
        static_assert(address_type == Noc::AddressType::NOC);
        return dst.get_noc_multicast_addr(args.noc_x_start, args.noc_y_start, args.noc_x_end, args.noc_y_end,
                                          Noc::l1_cached_view(args.addr), noc.get_noc_id());
    }
};

template <AllocatorBankType bank_type>
struct noc_traits_t<AllocatorBank<bank_type>> {
    struct src_args_type {
        uint32_t bank_id{};
        uint32_t addr{};
    };
    struct dst_args_type {
        uint32_t bank_id{};
        uint32_t addr{};
    };
    template <Noc::AddressType address_type>
    static auto src_addr(const AllocatorBank<bank_type>& src, const Noc& noc, const src_args_type& args) {
        static_assert(address_type == Noc::AddressType::NOC);
        return src.get_noc_addr_from_bank_id(args.bank_id, args.addr, noc.get_noc_id());
    }
    template <Noc::AddressType address_type>
    static auto dst_addr(const AllocatorBank<bank_type>& dst, const Noc& noc, const dst_args_type& args) {
        static_assert(address_type == Noc::AddressType::NOC);
        return dst.get_noc_addr_from_bank_id(args.bank_id, args.addr, noc.get_noc_id());
    }
};

// internal/tt-1xx/noc_zero_l1.inl: whole MEM_ZEROS_SIZE chunks with the read state set once, then the remainder.
template <typename Dst>
inline void Noc::async_write_zeros(const Dst& dst, uint32_t size_bytes, const dst_args_t<Dst>& args) const {
    static_assert(noc_zero_l1_endpoint_v<Dst>,
                  "noc.async_write_zeros: unsupported local-L1 destination. Supported: CircularBuffer, "
                  "DataflowBuffer, CoreLocalMem, Scratchpad, LocalTensorAccessor. Use the TensorAccessor overload "
                  "for DRAM.");
    const uint32_t dst_l1 = get_dst_ptr<AddressType::LOCAL_L1>(dst, args);
    if (dst_l1 % NOC_L1_READ_ALIGNMENT_BYTES != 0)
        emu::fault("noc.async_write_zeros: destination L1 address 0x%x is not %u-byte aligned (the zeros are a NOC "
                   "loopback read)",
                   dst_l1, NOC_L1_READ_ALIGNMENT_BYTES);
    UnicastEndpoint zeros_ep;
    const auto zeros_src =
        noc_traits_t<UnicastEndpoint>::src_args_type{my_x[noc_id_], my_y[noc_id_], uint32_t(MEM_ZEROS_BASE)};
    auto chunk_args = args;
    uint32_t remaining = size_bytes;
    if (remaining >= (uint32_t)MEM_ZEROS_SIZE) {
        set_async_read_state<NocOptions::DEFAULT, MEM_ZEROS_SIZE>(zeros_ep, MEM_ZEROS_SIZE, zeros_src);
        do {
            async_read_with_state<NocOptions::DEFAULT, 1>(zeros_ep, dst, 0, zeros_src, chunk_args);
            chunk_args.offset_bytes += MEM_ZEROS_SIZE;
            remaining -= MEM_ZEROS_SIZE;
        } while (remaining >= (uint32_t)MEM_ZEROS_SIZE);
    }
    if (remaining > 0) {
        async_read(zeros_ep, dst, remaining, zeros_src, chunk_args);
    }
}
