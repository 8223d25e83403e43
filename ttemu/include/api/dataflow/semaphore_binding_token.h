// Emulator implementation of api/dataflow/semaphore_binding_token.h: SemScope (the access path the host resolves for
// a semaphore) and the per-binding token (wheel semaphore_binding_token.h:35-61). Wormhole data-movement bindings
// always resolve to LOCAL_NONATOMIC.
#pragma once

#include <cstdint>

enum class SemScope : uint8_t {
    LOCAL_NONATOMIC = 0,
    DM_LOCAL_CACHED = 1,
    EXTERNAL = 2,
    COMPUTE_ATOMIC = 3,
};

namespace semaphore_detail {
template <auto>
inline constexpr bool always_false = false;
}  // namespace semaphore_detail

struct SemaphoreBindingToken {
    std::uint32_t id;
    SemScope scope;
};
