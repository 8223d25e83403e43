// Emulator implementation of api/tensor/tensor_binding_token.h: the Metal 2.0 tensor binding handles (wheel
// tensor_binding_token.h:46-90). TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET> pairs the binding's
// TensorAccessorArgs (compile-time args from CTA_OFFSET) with the byte offset of its base-address common runtime arg;
// TensorAccessor(token) reads both.
#pragma once

#include <cstdint>

#include "api/tensor/tensor_accessor_args.h"
#include "internal/llk_metadata.h"

namespace binding_details {
template <const auto& Token>
struct LLKOperandExtractor;
}

namespace tensor_accessor {

template <uint32_t CTA_OFFSET, uint32_t ADDR_CRTA_OFFSET>
struct TensorBindingToken {
    using args_t = TensorAccessorArgs<CTA_OFFSET>;
    static constexpr args_t args{};
    static constexpr uint32_t addr_crta_offset = ADDR_CRTA_OFFSET;  // in bytes

    explicit constexpr TensorBindingToken(binding_details::LLKMetadata llk) noexcept : llk_metadata_(llk) {}

private:
    template <const auto& Token>
    friend struct binding_details::LLKOperandExtractor;

    binding_details::LLKMetadata llk_metadata_;
};

struct NullTensorBindingToken {
    NullTensorBindingToken() = delete;
    NullTensorBindingToken(const NullTensorBindingToken&) = delete;
    NullTensorBindingToken(NullTensorBindingToken&&) = delete;
    NullTensorBindingToken& operator=(const NullTensorBindingToken&) = delete;
    NullTensorBindingToken& operator=(NullTensorBindingToken&&) = delete;
};

}  // namespace tensor_accessor
