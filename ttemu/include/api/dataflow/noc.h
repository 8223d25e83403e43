// Emulator implementation of api/dataflow/noc.h (Device 2.0 data movement): the Noc class, NocOptions /
// NocOptVals and the noc_traits_t customisation point through which endpoints (UnicastEndpoint, CircularBuffer,
// DataflowBuffer, CoreLocalMem, TensorAccessor, ...) give the NOC their addresses.
//
// Semantics are the wheel's (api/dataflow/noc.h): every transfer resolves its source and destination through
// noc_traits_t<T>::src_addr / dst_addr / dst_addr_mcast (LOCAL_L1 or NOC address form) and issues the legacy call the
// wheel's method issues (noc.h:243-269 async_read -> noc_async_read; 386-455 async_write -> noc_async_write;
// 479-502 async_write_multicast -> noc_async_write_multicast[_loopback_src]; the *_with_state pairs; the barriers
// 716-792), so the emulator's runtime sees the same NOC traffic (statistics, bounds and alignment checks, hang
// detection) as for the legacy API. NocOptions::TXN_ID tags reads / writes with noc_opts.trid and the TXN_ID
// barriers complete only those; CUSTOM_VC and POSTED change nothing observable here (no timing model).
// async_write_zeros (noc_zero_l1.inl / noc_zero_dram.inl): the L1 form is a loopback NOC read from the core's
// zero-filled MEM_ZEROS block in MEM_ZEROS_SIZE chunks, done by write_zeros_l1_barrier; the DRAM form writes from the
// caller's pre-zeroed scratch (at its read pointer) in NOC_MAX_BURST_SIZE chunks.
// Not modelled: Quasar's DataflowBuffer TXN_ID overloads, the hardware address generator (noc_addrgen_push_v).
#pragma once

#include <cstdint>
#include <type_traits>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/dfb_access.h"

#ifndef NOC_MAX_TRANSACTION_ID
#define NOC_MAX_TRANSACTION_ID 0xF
#endif
#ifndef NOC_MAX_TRANSACTION_ID_COUNT
#define NOC_MAX_TRANSACTION_ID_COUNT 255
#endif
#ifndef DM_DEDICATED_NOC
#define DM_DEDICATED_NOC 0
#endif
#ifndef DM_DYNAMIC_NOC
#define DM_DYNAMIC_NOC 1
#endif

struct UnicastEndpoint;
struct MulticastEndpoint;
class CircularBuffer;

// Argument struct of a DataflowBuffer endpoint (wheel noc.h:22-24).
struct DataflowBufferArgs {
    uint32_t offset_bytes{};
};

template <typename T>
struct noc_traits_t {
    static_assert(sizeof(T) == 0, "NoC transactions are not supported for this type");
};

template <>
struct noc_traits_t<UnicastEndpoint>;
template <>
struct noc_traits_t<MulticastEndpoint>;

// May T be a local-L1 endpoint of noc.async_write_zeros?
template <typename T>
inline constexpr bool noc_zero_l1_endpoint_v = false;

// Is T a Scratchpad?
template <typename T>
inline constexpr bool is_scratchpad_v = false;

#define NOC_TRANSFER_INLINE

// True when T can push its generated address straight into a command buffer (Quasar's address generator): never here.
template <typename T, typename = void>
inline constexpr bool noc_addrgen_push_v = false;

enum class NocOptions : uint32_t {
    DEFAULT = 0,
    TXN_ID = 1u << 0,
    POSTED = 1u << 1,
    CUSTOM_VC = 1u << 2,
    MCAST_INCL_SRC = 1u << 3,
    INLINE_L1 = 1u << 4,
    INLINE_REG = 1u << 5,
};

constexpr NocOptions operator|(NocOptions a, NocOptions b) noexcept {
    return static_cast<NocOptions>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}

constexpr bool has_flag(NocOptions opts, NocOptions flag) noexcept {
    return (static_cast<uint32_t>(opts) & static_cast<uint32_t>(flag)) != 0;
}

struct NocOptVals {
    uint32_t vc = NOC_UNICAST_WRITE_VC;
    uint32_t trid = 0;
};

class Noc {
public:
    enum class AddressType { NOC, LOCAL_L1 };

    static constexpr uint32_t INVALID_TXN_ID = 0xFFFFFFFF;

    // NOC APIs take cached L1 addresses; on Wormhole the cached and uncached views are the same (noc.h:134-141).
    static FORCE_INLINE uint32_t l1_cached_view(uint32_t addr) { return addr; }

private:
    template <typename T>
    using src_args_t = typename noc_traits_t<T>::src_args_type;
    template <typename T>
    using dst_args_t = typename noc_traits_t<T>::dst_args_type;
    template <typename T>
    using dst_args_mcast_t = typename noc_traits_t<T>::dst_args_mcast_type;

    template <AddressType address_type>
    using addr_underlying_t = std::conditional_t<address_type == AddressType::LOCAL_L1, uintptr_t, uint64_t>;

    friend struct noc_traits_t<UnicastEndpoint>;
    friend struct noc_traits_t<MulticastEndpoint>;

    template <AddressType address_type, typename Src>
    auto get_src_ptr(const Src& src, const src_args_t<Src>& src_args) const {
        auto addr = noc_traits_t<Src>::template src_addr<address_type>(src, *this, src_args);
        if constexpr (address_type == AddressType::LOCAL_L1) {
            return addr_underlying_t<address_type>{l1_cached_view(static_cast<uint32_t>(addr))};
        } else {
            return addr_underlying_t<address_type>{addr};
        }
    }

    template <AddressType address_type, typename Dst>
    auto get_dst_ptr(const Dst& dst, const dst_args_t<Dst>& dst_args) const {
        auto addr = noc_traits_t<Dst>::template dst_addr<address_type>(dst, *this, dst_args);
        if constexpr (address_type == AddressType::LOCAL_L1) {
            return addr_underlying_t<address_type>{l1_cached_view(static_cast<uint32_t>(addr))};
        } else {
            return addr_underlying_t<address_type>{addr};
        }
    }

    template <AddressType address_type, typename Dst>
    auto get_dst_ptr_mcast(const Dst& dst, const dst_args_mcast_t<Dst>& dst_args) const {
        return addr_underlying_t<address_type>{
            noc_traits_t<Dst>::template dst_addr_mcast<address_type>(dst, *this, dst_args)};
    }

    static void check_trid(uint32_t trid) {
        if (trid > NOC_MAX_TRANSACTION_ID)
            emu::fault("NocOptions::TXN_ID: transaction id %u is out of range 0..%u", trid, NOC_MAX_TRANSACTION_ID);
    }

public:
    Noc() : noc_id_(noc_index) {}
    explicit Noc(uint8_t noc_id) : noc_id_(noc_id) {}

    uint8_t get_noc_id() const { return noc_id_; }

    // Is (virtual_x, virtual_y) this core? (noc_address_backend::is_local_coordinate)
    bool is_local_bank(uint32_t virtual_x, uint32_t virtual_y) const {
        return virtual_x == my_x[noc_id_] && virtual_y == my_y[noc_id_];
    }

    bool is_local_addr(const uint64_t noc_addr) const {
        return NOC_UNICAST_ADDR_X(noc_addr) == my_x[noc_id_] && NOC_UNICAST_ADDR_Y(noc_addr) == my_y[noc_id_];
    }

    // noc.h:237-269
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              bool enable_noc_tracing = true, typename Src, typename Dst>
    NOC_TRANSFER_INLINE void async_read(const Src& src, const Dst& dst, uint32_t size_bytes,
                                        const src_args_t<Src>& src_args, const dst_args_t<Dst>& dst_args,
                                        const NocOptVals& noc_opts = {}) const {
        const uint32_t dst_addr = get_dst_ptr<AddressType::LOCAL_L1>(dst, dst_args);
        const uint64_t src_noc_addr = get_src_ptr<AddressType::NOC>(src, src_args);
        if constexpr (has_flag(opts, NocOptions::TXN_ID)) {
            check_trid(noc_opts.trid);
            if (max_page_size <= NOC_MAX_BURST_SIZE && size_bytes > max_page_size)
                emu::fault("noc.async_read<max_page_size=%u>: size %u exceeds the template bound", max_page_size,
                           size_bytes);
            emu::noc_read_trid(src_noc_addr, dst_addr, size_bytes, noc_opts.trid, noc_id_);
        } else {
            noc_async_read<max_page_size, enable_noc_tracing>(src_noc_addr, dst_addr, size_bytes, noc_id_,
                                                              noc_opts.vc);
        }
    }

    // noc.h:291-317: the source's NOC node (and, in one-packet mode, the size) become the read command buffer's state.
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, typename Src>
    void set_async_read_state(const Src& src, uint32_t size_bytes, const src_args_t<Src>& src_args,
                              const NocOptVals& noc_opts = {}) const {
        auto src_noc_addr = get_src_ptr<AddressType::NOC>(src, src_args);
        if constexpr (max_page_size <= NOC_MAX_BURST_SIZE) {
            noc_async_read_one_packet_set_state<has_flag(opts, NocOptions::CUSTOM_VC)>(src_noc_addr, size_bytes,
                                                                                       noc_opts.vc, noc_id_);
        } else {
            noc_async_read_set_state(src_noc_addr, noc_id_);
        }
        if constexpr (has_flag(opts, NocOptions::TXN_ID)) {
            check_trid(noc_opts.trid);
            noc_async_read_set_trid(noc_opts.trid, noc_id_);
        }
    }

    // noc.h:340-374: one-packet mode reads the size set by set_async_read_state (size_bytes is ignored).
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, typename Src,
              typename Dst>
    void async_read_with_state(const Src& src, const Dst& dst, uint32_t size_bytes, const src_args_t<Src>& src_args,
                               const dst_args_t<Dst>& dst_args, const NocOptVals& noc_opts = {}) const {
        if constexpr (has_flag(opts, NocOptions::TXN_ID)) {
            static_assert(max_page_size <= NOC_MAX_BURST_SIZE,
                          "NocOptions::TXN_ID for async_read_with_state requires one-packet mode "
                          "(max_page_size <= NOC_MAX_BURST_SIZE)");
            check_trid(noc_opts.trid);
            noc_async_read_one_packet_with_state_with_trid(0, (uint32_t)get_src_ptr<AddressType::NOC>(src, src_args),
                                                           get_dst_ptr<AddressType::LOCAL_L1>(dst, dst_args),
                                                           noc_opts.trid, noc_id_);
        } else if constexpr (max_page_size <= NOC_MAX_BURST_SIZE) {
            noc_async_read_one_packet_with_state<true, has_flag(opts, NocOptions::CUSTOM_VC)>(
                (uint32_t)get_src_ptr<AddressType::NOC>(src, src_args),
                get_dst_ptr<AddressType::LOCAL_L1>(dst, dst_args), noc_opts.vc, noc_id_);
        } else {
            noc_async_read_with_state((uint32_t)get_src_ptr<AddressType::NOC>(src, src_args),
                                      get_dst_ptr<AddressType::LOCAL_L1>(dst, dst_args), size_bytes, noc_id_);
        }
    }

    // noc.h:381-455
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              bool enable_noc_tracing = true, typename Src, typename Dst>
    NOC_TRANSFER_INLINE void async_write(const Src& src, const Dst& dst, uint32_t size_bytes,
                                         const src_args_t<Src>& src_args, const dst_args_t<Dst>& dst_args,
                                         const NocOptVals& noc_opts = {}) const {
        constexpr bool posted = has_flag(opts, NocOptions::POSTED);
        const uint32_t vc =
            has_flag(opts, NocOptions::CUSTOM_VC) ? static_cast<uint32_t>(noc_opts.vc) : NOC_UNICAST_WRITE_VC;
        const uint32_t src_addr = get_src_ptr<AddressType::LOCAL_L1>(src, src_args);
        const uint64_t dst_noc_addr = get_dst_ptr<AddressType::NOC>(dst, dst_args);
        if constexpr (has_flag(opts, NocOptions::TXN_ID)) {
            check_trid(noc_opts.trid);
            if (max_page_size <= NOC_MAX_BURST_SIZE && size_bytes > max_page_size)
                emu::fault("noc.async_write<max_page_size=%u>: size %u exceeds the template bound", max_page_size,
                           size_bytes);
            emu::noc_write_trid(src_addr, dst_noc_addr, size_bytes, noc_opts.trid, noc_id_);
        } else {
            noc_async_write<max_page_size, enable_noc_tracing, posted>(src_addr, dst_noc_addr, size_bytes, noc_id_,
                                                                       vc);
        }
    }

    // noc.h:479-503
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              bool enable_noc_tracing = true, typename Src, typename Dst>
    void async_write_multicast(const Src& src, const Dst& dst, uint32_t size_bytes, uint32_t num_dsts,
                               const src_args_t<Src>& src_args, const dst_args_mcast_t<Dst>& dst_args,
                               bool linked = false) const {
        static_assert(!has_flag(opts, NocOptions::TXN_ID), "Mcasts with transaction id are not supported yet");
        static_assert(!has_flag(opts, NocOptions::POSTED), "Mcasts with posted transactions are not supported");
        auto src_addr = get_src_ptr<AddressType::LOCAL_L1>(src, src_args);
        auto dst_noc_addr = get_dst_ptr_mcast<AddressType::NOC>(dst, dst_args);
        if constexpr (has_flag(opts, NocOptions::MCAST_INCL_SRC)) {
            noc_async_write_multicast_loopback_src(src_addr, dst_noc_addr, size_bytes, num_dsts, linked, noc_id_);
        } else {
            noc_async_write_multicast<max_page_size>(src_addr, dst_noc_addr, size_bytes, num_dsts, linked, noc_id_);
        }
    }

    // noc.h:525-547
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, typename Dst>
    void set_async_write_state(const Dst& dst, uint32_t size_bytes, const dst_args_t<Dst>& dst_args,
                               const NocOptVals& noc_opts = {}) const {
        static_assert(!has_flag(opts, NocOptions::TXN_ID),
                      "NocOptions::TXN_ID is not supported for set_async_write_state; "
                      "use async_write<NocOptions::TXN_ID> for non-stateful writes with a transaction ID");
        auto dst_noc_addr = get_dst_ptr<AddressType::NOC>(dst, dst_args);
        if (max_page_size <= NOC_MAX_BURST_SIZE && size_bytes > NOC_MAX_BURST_SIZE)
            emu::fault("noc.set_async_write_state: one-packet size %u exceeds NOC_MAX_BURST_SIZE", size_bytes);
        emu_state::write_state(noc_id_) = {dst_noc_addr & ~NOC_LOCAL_ADDR_MASK, size_bytes};
        (void)noc_opts;
    }

    // noc.h:575-614: one-packet mode writes the size set by set_async_write_state.
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, typename Src,
              typename Dst>
    void async_write_with_state(const Src& src, const Dst& dst, uint32_t size_bytes, const src_args_t<Src>& src_args,
                                const dst_args_t<Dst>& dst_args, const NocOptVals& noc_opts = {}) const {
        static_assert(!has_flag(opts, NocOptions::TXN_ID),
                      "NocOptions::TXN_ID is not supported for async_write_with_state; "
                      "use async_write<NocOptions::TXN_ID> for non-stateful writes with a transaction ID");
        (void)noc_opts;
        const uint32_t src_addr = get_src_ptr<AddressType::LOCAL_L1>(src, src_args);
        const uint32_t dst_local = (uint32_t)get_dst_ptr<AddressType::NOC>(dst, dst_args);
        auto& s = emu_state::write_state(noc_id_);
        emu::noc_write(src_addr, s.dst_hi | dst_local, max_page_size <= NOC_MAX_BURST_SIZE ? s.size : size_bytes,
                       noc_id_);
    }

    // noc.h:656-689
    template <NocOptions opts = NocOptions::DEFAULT, typename Dst>
    void inline_dw_write(const Dst& dst, uint32_t val, const dst_args_t<Dst>& dst_args, uint8_t be = 0xF,
                         const NocOptVals& noc_opts = {}) const {
        static_assert(!has_flag(opts, NocOptions::TXN_ID), "TxnId is not supported for inline_dw_write");
        static_assert(!(has_flag(opts, NocOptions::INLINE_L1) && has_flag(opts, NocOptions::INLINE_REG)),
                      "INLINE_L1 and INLINE_REG are mutually exclusive in inline_dw_write");
        static_assert(!std::is_same_v<Dst, MulticastEndpoint>);
        auto dst_addr = get_dst_ptr<AddressType::NOC>(dst, dst_args);
        const uint32_t vc =
            has_flag(opts, NocOptions::CUSTOM_VC) ? static_cast<uint32_t>(noc_opts.vc) : NOC_UNICAST_WRITE_VC;
        constexpr auto dst_type = has_flag(opts, NocOptions::INLINE_L1)    ? InlineWriteDst::L1
                                  : has_flag(opts, NocOptions::INLINE_REG) ? InlineWriteDst::REG
                                                                           : InlineWriteDst::DEFAULT;
        noc_inline_dw_write<dst_type, has_flag(opts, NocOptions::POSTED)>(dst_addr, val, be, noc_id_, vc);
    }

    // noc.h:700-703: reads complete when polled here (there is no timing model).
    bool is_read_trid_flushed(uint32_t trid) const {
        check_trid(trid);
        return emu::noc_read_trid_flushed(trid, noc_id_);
    }

    template <NocOptions opts = NocOptions::DEFAULT>
    void async_read_barrier(const NocOptVals& noc_opts = {}) const {
        if constexpr (has_flag(opts, NocOptions::TXN_ID)) {
            check_trid(noc_opts.trid);
            noc_async_read_barrier_with_trid(noc_opts.trid, noc_id_);
        } else {
            noc_async_read_barrier(noc_id_);
        }
    }

    template <NocOptions opts = NocOptions::DEFAULT>
    void async_write_barrier(const NocOptVals& noc_opts = {}) const {
        if constexpr (has_flag(opts, NocOptions::TXN_ID)) {
            check_trid(noc_opts.trid);
            noc_async_write_barrier_with_trid(noc_opts.trid, noc_id_);
        } else {
            noc_async_write_barrier(noc_id_);
        }
    }

    template <NocOptions opts = NocOptions::DEFAULT>
    void async_writes_flushed(const NocOptVals& noc_opts = {}) const {
        if constexpr (has_flag(opts, NocOptions::POSTED)) {
            static_assert(!has_flag(opts, NocOptions::TXN_ID), "Posted writes flushed does not support TXN_ID");
            noc_async_posted_writes_flushed(noc_id_);
        } else if constexpr (has_flag(opts, NocOptions::TXN_ID)) {
            check_trid(noc_opts.trid);
            noc_async_write_flushed_with_trid(noc_opts.trid, noc_id_);
        } else {
            noc_async_writes_flushed(noc_id_);
        }
    }

    void async_atomic_barrier() const { noc_async_atomic_barrier(noc_id_); }

    void async_full_barrier() const { noc_async_full_barrier(noc_id_); }

    // Zero [base + args.offset_bytes, + size_bytes) of a local-L1 endpoint (defined in api/dataflow/endpoints.h).
    template <typename Dst>
    void async_write_zeros(const Dst& dst, uint32_t size_bytes, const dst_args_t<Dst>& args = {}) const;

    // Zero pages of a DRAM tensor from a pre-zeroed scratch (defined in api/tensor/noc_traits.h).
    template <typename DSpecT, typename Scratch>
    void async_write_zeros(const ::TensorAccessor<DSpecT>& accessor, uint32_t size_bytes,
                           const dst_args_t<::TensorAccessor<DSpecT>>& args, const Scratch& scratch) const;

    void write_zeros_l1_barrier() const { noc_async_read_barrier(noc_id_); }
    void write_zeros_dram_barrier() const { noc_async_write_barrier(noc_id_); }

private:
    uint8_t noc_id_;
};

#include "api/dataflow/endpoints.h"
