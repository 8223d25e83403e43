// Emulator implementation of api/dataflow/dfb_binding_token.h: the compile-time handles of DataflowBuffer bindings
// (wheel dfb_binding_token.h:37-92). A token converts to its CB / DFB id; a DataflowBuffer is built from either.
#pragma once

#include <cstdint>

#include "api/dataflow/dfb_access.h"
#include "internal/llk_metadata.h"

namespace binding_details {
template <const auto& Token>
struct LLKOperandExtractor;
}

template <dfb::AccessPattern Pap = dfb::AccessPattern::UNKNOWN, dfb::AccessPattern Cap = dfb::AccessPattern::UNKNOWN>
struct DFBBindingToken {
    explicit constexpr DFBBindingToken(uint16_t id) noexcept : id_(id) {}
    constexpr DFBBindingToken(uint16_t id, binding_details::LLKMetadata llk) noexcept : id_(id), llk_metadata_(llk) {}

    constexpr operator uint32_t() const noexcept { return id_; }

private:
    template <const auto& Token>
    friend struct binding_details::LLKOperandExtractor;

    uint16_t id_;
    binding_details::LLKMetadata llk_metadata_{};
};

struct RelayDFBBindingToken {
    static constexpr uint8_t NO_PREFETCHER_PIPE = 0xFF;

    explicit constexpr RelayDFBBindingToken(uint16_t id, uint8_t prefetcher_pipe_id = NO_PREFETCHER_PIPE) noexcept :
        id_(id), prefetcher_pipe_id_(prefetcher_pipe_id) {}

    constexpr operator uint32_t() const noexcept { return id_; }

    constexpr uint8_t prefetcher_pipe_id() const noexcept { return prefetcher_pipe_id_; }

private:
    uint16_t id_;
    uint8_t prefetcher_pipe_id_;
};
