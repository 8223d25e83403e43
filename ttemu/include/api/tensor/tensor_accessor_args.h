// Emulator implementation of api/tensor/tensor_accessor_args.h for INTERLEAVED buffers.
// Compile-time arg encoding (as the wheel's header reads it and ttnn's host TensorAccessorArgs writes it):
//   [CTA_OFFSET]     ArgsConfig bits (Sharded 1, IsDram 2, RuntimeRank 4, ... RuntimePageSize 128)
//   [CTA_OFFSET + 1] aligned page size (absent when RuntimePageSize: then it is common runtime arg CRTA_OFFSET)
// ArgsConfig without IsDram = an L1-interleaved buffer. Sharded layouts are rejected at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include "api/compile_time_args.h"

template <typename T>
T get_common_arg_val(int arg_idx);

namespace tensor_accessor {
inline constexpr std::size_t UNKNOWN = static_cast<std::size_t>(-1);
enum class ArgConfig : uint8_t {
    None = 0,
    Sharded = 1 << 0,
    IsDram = 1 << 1,
    RuntimeRank = 1 << 2,
    RuntimeNumBanks = 1 << 3,
    RuntimeTensorShape = 1 << 4,
    RuntimeShardShape = 1 << 5,
    RuntimeBankCoords = 1 << 6,
    RuntimePageSize = 1 << 7,
};
}  // namespace tensor_accessor

template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET = tensor_accessor::UNKNOWN>
struct TensorAccessorArgs {
    static constexpr uint32_t config = get_compile_time_arg_val(CTA_OFFSET);
    static constexpr bool is_sharded = (config & uint32_t(tensor_accessor::ArgConfig::Sharded)) != 0;
    static constexpr bool is_dram = (config & uint32_t(tensor_accessor::ArgConfig::IsDram)) != 0;
    static constexpr bool page_size_is_crta = (config & uint32_t(tensor_accessor::ArgConfig::RuntimePageSize)) != 0;
    static_assert(!is_sharded, "emulator TensorAccessorArgs: sharded tensors are not supported (interleaved only)");

    static constexpr uint32_t AlignedPageSize = [] {
        if constexpr (page_size_is_crta) {
            return 0u;
        } else {
            return get_compile_time_arg_val(CTA_OFFSET + 1);
        }
    }();

    constexpr TensorAccessorArgs() : crta_offset_rt_(0) {}
    constexpr explicit TensorAccessorArgs(uint32_t crta_offset) : crta_offset_rt_(crta_offset) {}

    constexpr uint32_t crta_offset() const {
        if constexpr (CRTA_OFFSET != tensor_accessor::UNKNOWN) {
            return uint32_t(CRTA_OFFSET);
        } else {
            return crta_offset_rt_;
        }
    }
    uint32_t get_aligned_page_size() const {
        if constexpr (page_size_is_crta) {
            return get_common_arg_val<uint32_t>(int(crta_offset()));
        } else {
            return AlignedPageSize;
        }
    }
    static constexpr uint32_t num_compile_time_args() { return page_size_is_crta ? 1u : 2u; }
    static constexpr uint32_t next_compile_time_args_offset() { return uint32_t(CTA_OFFSET) + num_compile_time_args(); }
    constexpr uint32_t num_common_runtime_args() const { return page_size_is_crta ? 1u : 0u; }
    constexpr uint32_t next_common_runtime_args_offset() const { return crta_offset() + num_common_runtime_args(); }

private:
    uint32_t crta_offset_rt_;
};

// TensorAccessorArgs of NUM_TENSORS tensors whose compile-time args follow each other from CTA_OFFSET (wheel
// tensor_accessor_args.h:218-246).
namespace tensor_accessor::detail {
template <uint32_t TENSOR_IDX, uint32_t CTA_OFFSET>
constexpr uint32_t get_tensor_accessor_args_cta_offset() {
    if constexpr (TENSOR_IDX == 0) {
        return CTA_OFFSET;
    } else {
        constexpr auto prev_offset = get_tensor_accessor_args_cta_offset<TENSOR_IDX - 1, CTA_OFFSET>();
        return TensorAccessorArgs<prev_offset>::next_compile_time_args_offset();
    }
}

template <uint32_t CTA_OFFSET, uint32_t... INDEXES>
constexpr auto get_tensor_accessor_args_cta_offsets(std::integer_sequence<uint32_t, INDEXES...>) {
    return std::integer_sequence<uint32_t, get_tensor_accessor_args_cta_offset<INDEXES, CTA_OFFSET>()...>();
}

template <uint32_t... CTA_OFFSETS>
constexpr auto make_tensor_accessor_args_tuple_from_cta_offsets(std::integer_sequence<uint32_t, CTA_OFFSETS...>) {
    return std::make_tuple(TensorAccessorArgs<CTA_OFFSETS>()...);
}
}  // namespace tensor_accessor::detail

template <uint32_t NUM_TENSORS, uint32_t CTA_OFFSET>
constexpr auto make_tensor_accessor_args_tuple() {
    constexpr auto cta_offsets = tensor_accessor::detail::get_tensor_accessor_args_cta_offsets<CTA_OFFSET>(
        std::make_integer_sequence<uint32_t, NUM_TENSORS>());
    return tensor_accessor::detail::make_tensor_accessor_args_tuple_from_cta_offsets(cta_offsets);
}
