// ProgrammableCoreType (tt-metal hostdev: TENSIX, ACTIVE_ETH, IDLE_ETH), shared by the data-movement and compute
// API headers so either may be included first.
#pragma once

#include <cstdint>

enum class ProgrammableCoreType : uint8_t { TENSIX = 0, ACTIVE_ETH = 1, IDLE_ETH = 2 };
