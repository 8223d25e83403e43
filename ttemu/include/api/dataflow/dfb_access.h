// Emulator implementation of api/dataflow/dfb_access.h: the DFB access-pattern enum and, on Wormhole, the plain
// DataflowBuffer class name (wheel dfb_access.h:8-43; the pattern pair is a Quasar template parameter only).
#pragma once

#include <cstdint>

namespace dfb {
enum AccessPattern : uint8_t {
    STRIDED,
    ALL,
    BLOCKED,
    UNKNOWN,
};
}  // namespace dfb

class DataflowBuffer;
#define DFB_TEMPLATE_DECL
#define DFB_CLASS DataflowBuffer
using DataflowBufferAnyPattern = DataflowBuffer;

// "Is T a DataflowBuffer?"
template <typename T>
inline constexpr bool is_dataflow_buffer_v = false;
template <>
inline constexpr bool is_dataflow_buffer_v<DataflowBuffer> = true;
