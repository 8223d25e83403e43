// Emulator implementation of api/scratchpad_binding_token.h: the Metal 2.0 handle of a scratchpad binding (wheel
// scratchpad_binding_token.h): the word index of its base-address common runtime arg and its per-node size.
#pragma once

#include <cstdint>

#include "internal/llk_metadata.h"

template <typename T>
class Scratchpad;

namespace binding_details {
template <const auto& Token>
struct LLKOperandExtractor;
}

class ScratchpadBindingToken {
public:
    explicit constexpr ScratchpadBindingToken(uint32_t crta_offset, uint32_t size_in_bytes) noexcept :
        crta_offset_(crta_offset), size_in_bytes_(size_in_bytes) {}
    constexpr ScratchpadBindingToken(uint32_t crta_offset, uint32_t size_in_bytes,
                                     binding_details::LLKMetadata llk) noexcept :
        crta_offset_(crta_offset), size_in_bytes_(size_in_bytes), llk_metadata_(llk) {}

private:
    template <typename T>
    friend class Scratchpad;
    template <const auto& Token>
    friend struct binding_details::LLKOperandExtractor;

    uint32_t crta_offset_;
    uint32_t size_in_bytes_;
    binding_details::LLKMetadata llk_metadata_{};
};
