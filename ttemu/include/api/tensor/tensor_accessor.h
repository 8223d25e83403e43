// Emulator implementation of api/tensor/tensor_accessor.h for INTERLEAVED tensors (DRAM or L1, per the args' IsDram
// bit): as the wheel's interleaved TensorAccessor, which is an InterleavedAddrGen<IsDram> with page_size = the
// args' aligned page size: page `id` lives in bank id % num banks at row id / num banks of the buffer (row stride =
// the page size aligned to the bank type's allocator alignment: 32 B DRAM, 16 B L1).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include "api/tensor/tensor_accessor_args.h"
#include "api/tensor/tensor_binding_token.h"
#include "emu/runtime.h"

#ifndef NOC_INDEX  // the kernel's default NoC, a JIT define (noc_index = NOC_INDEX in api/dataflow/dataflow_api.h)
#define NOC_INDEX 0
#endif

template <typename T>
T get_common_arg_val(int arg_idx);
template <typename T>
T get_arg_val(int arg_idx);

namespace tensor_accessor {
// The accessor of an unbound binding (tensor_accessor.h:124-128, NullDSpec): never used at run time, reads no args.
struct NullArgs {
    static constexpr bool is_dram = false;
    static constexpr bool is_sharded = false;
    constexpr uint32_t get_aligned_page_size() const { return 0; }
};
}  // namespace tensor_accessor

template <typename Args>
struct TensorAccessor {
    using DSpec = Args;
    static constexpr bool is_dram = Args::is_dram;

    TensorAccessor(const Args& args, const std::size_t bank_base_address_in, const uint32_t page_size_in)
        : bank_base_address(uint32_t(bank_base_address_in)), aligned_page_size(page_size_in), args_(args) {}
    TensorAccessor(const Args& args, const std::size_t bank_base_address_in)
        : bank_base_address(uint32_t(bank_base_address_in)), aligned_page_size(args.get_aligned_page_size()),
          args_(args) {}

    // Metal 2.0 binding token (wheel tensor_accessor.h:102-122): the binding's TensorAccessorArgs and its base address,
    // common runtime arg ADDR_CRTA_OFFSET / 4 (runtime accessor fields follow it).
    template <uint32_t CTA_OFFSET, uint32_t ADDR_CRTA_OFFSET>
    TensorAccessor(tensor_accessor::TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET>) :
        TensorAccessor(Args{}, static_cast<std::size_t>(get_common_arg_val<uint32_t>(ADDR_CRTA_OFFSET / 4))) {
        static_assert(ADDR_CRTA_OFFSET % 4 == 0, "TensorBindingToken: ADDR_CRTA_OFFSET must be 4-byte aligned");
    }
    explicit TensorAccessor(const tensor_accessor::NullTensorBindingToken&) :
        bank_base_address(0), aligned_page_size(0), args_() {}

    uint32_t get_aligned_page_size() const { return aligned_page_size; }
    uint32_t get_bank_base_address() const { return bank_base_address; }

    // `noc` defaults to noc_index (NOC_INDEX), as the wheel's: a DRAM page's address differs per NoC on Wormhole.
    uint64_t get_noc_addr(const uint32_t page_id, const uint32_t offset = 0, uint8_t noc = NOC_INDEX) const {
        if constexpr (is_dram) {
            const uint32_t nb = emu::num_dram_banks();
            const uint32_t row = page_id / nb, bank = page_id - row * nb;
            const uint32_t stride = (aligned_page_size + 31u) & ~31u;
            const uint32_t addr = row * stride + bank_base_address + offset + emu::dram_bank_offset(bank);
            return (uint64_t(emu::dram_bank_noc_y(bank, noc)) << 42) | (uint64_t(emu::dram_bank_noc_x(bank, noc)) << 36) |
                   addr;
        } else {
            const uint32_t nb = emu::num_l1_banks();
            const uint32_t row = page_id / nb, bank = page_id - row * nb;
            const uint32_t stride = (aligned_page_size + 15u) & ~15u;
            const uint32_t addr = row * stride + bank_base_address + offset + emu::l1_bank_offset(bank);
            return (uint64_t(emu::l1_bank_noc_y(bank)) << 42) | (uint64_t(emu::l1_bank_noc_x(bank)) << 36) | addr;
        }
    }

    const uint32_t bank_base_address;
    const uint32_t aligned_page_size;

private:
    Args args_;
};

template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET>
TensorAccessor(const TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>&, std::size_t)
    -> TensorAccessor<TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>>;
template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET>
TensorAccessor(const TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>&, std::size_t, uint32_t)
    -> TensorAccessor<TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>>;
template <uint32_t CTA_OFFSET, uint32_t ADDR_CRTA_OFFSET>
TensorAccessor(tensor_accessor::TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET>)
    -> TensorAccessor<TensorAccessorArgs<CTA_OFFSET, ADDR_CRTA_OFFSET / 4 + 1>>;
TensorAccessor(const tensor_accessor::NullTensorBindingToken&) -> TensorAccessor<tensor_accessor::NullArgs>;

// One TensorAccessor per TensorAccessorArgs of `args`, with the base addresses in consecutive runtime args from
// `address_rt_arg_index_start` (wheel tensor_accessor.h:696-709).
namespace tensor_accessor::detail {
template <typename... Args, uint32_t... Indexes>
auto make_tensor_accessor_tuple(const std::tuple<Args...>& args, uint32_t address_rt_arg_index_start,
                                std::integer_sequence<uint32_t, Indexes...>) {
    return std::make_tuple(
        TensorAccessor(std::get<Indexes>(args), get_arg_val<uint32_t>(int(address_rt_arg_index_start + Indexes)))...);
}
}  // namespace tensor_accessor::detail

template <typename... Args>
auto make_tensor_accessor_tuple(const std::tuple<Args...>& args, uint32_t address_rt_arg_index_start) {
    return tensor_accessor::detail::make_tensor_accessor_tuple(args, address_rt_arg_index_start,
                                                               std::make_integer_sequence<uint32_t, sizeof...(Args)>());
}

// A tuple of binding tokens (a Metal 2.0 TensorBindingSequence) -> a tuple of TensorAccessors (wheel 731-734).
template <typename... Tokens>
auto make_tensor_accessors(const std::tuple<Tokens...>& tokens) {
    return std::apply([](const auto&... toks) { return std::make_tuple(TensorAccessor(toks)...); }, tokens);
}

// Type-erased accessor (wheel tensor_accessor.h:741-784): keeps a pointer to the accessor, which must outlive it.
class AbstractTensorAccessorWrapper {
public:
    AbstractTensorAccessorWrapper() = default;

    template <typename Accessor>
    AbstractTensorAccessorWrapper(const Accessor& accessor) :
        accessor_ptr(&accessor), get_noc_addr_fn([](const void* a, uint32_t page_idx, uint32_t offset, uint8_t noc) {
            return static_cast<const Accessor*>(a)->get_noc_addr(page_idx, offset, noc);
        }) {}

    uint64_t get_noc_addr(uint32_t page_idx, uint32_t offset = 0, uint8_t noc = NOC_INDEX) const {
        if (get_noc_addr_fn == nullptr) emu::fault("AbstractTensorAccessorWrapper: default-constructed (no accessor)");
        return get_noc_addr_fn(accessor_ptr, page_idx, offset, noc);
    }

private:
    using GetNocAddrFn = uint64_t (*)(const void*, uint32_t, uint32_t, uint8_t);
    const void* accessor_ptr = nullptr;
    GetNocAddrFn get_noc_addr_fn = nullptr;
};

namespace tensor_accessor::detail {
template <typename... Accessors, uint32_t... Indexes>
auto make_abstract_tensor_accessor_wrappers(const std::tuple<Accessors...>& accessors,
                                            std::integer_sequence<uint32_t, Indexes...>)
    -> std::array<AbstractTensorAccessorWrapper, sizeof...(Accessors)> {
    return {AbstractTensorAccessorWrapper(std::get<Indexes>(accessors))...};
}
}  // namespace tensor_accessor::detail

template <typename... Accessors>
auto make_abstract_tensor_accessor_wrappers(const std::tuple<Accessors...>& accessors) {
    return tensor_accessor::detail::make_abstract_tensor_accessor_wrappers(
        accessors, std::make_integer_sequence<uint32_t, sizeof...(Accessors)>());
}

// Page view adapter for the NoC APIs (wheel tensor_accessor.h:807-815).
template <typename Accessor>
struct PageView {
    const Accessor& accessor;
    explicit PageView(const Accessor& acc) : accessor(acc) {}

    uint64_t get_noc_addr(uint32_t page_id, uint32_t offset, uint8_t noc) const {
        return accessor.get_noc_addr(page_id, offset, noc);
    }
};
