// Emulator version of Wormhole's tensix_types.h (wheel hw/inc/internal/tt-1xx/wormhole/wormhole_b0_defines/
// tensix_types.h:214-240), which the kernel build reaches as "tensix_types.h": tt::DataFormat (the emulator's enum,
// same values) and the format predicates of the compute API.
#pragma once

#include <cstdint>

#include "emu/runtime.h"

using DataFormat = ::emu::DataFormat;

constexpr bool is_uint32_format(DataFormat format) { return format == DataFormat::UInt32; }
constexpr bool is_bfp8_b_format(DataFormat format) { return format == DataFormat::Bfp8_b; }
constexpr bool is_bfp4_b_format(DataFormat format) { return format == DataFormat::Bfp4_b; }
