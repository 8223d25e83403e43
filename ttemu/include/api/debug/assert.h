// Emulator implementation of api/debug/assert.h: ASSERT is always checked (as with the watcher enabled) and a
// failure is reported as a kernel fault naming core, kernel and the condition.
#pragma once

#include "emu/runtime.h"

#define ASSERT(condition, ...)                                                                              \
    do {                                                                                                    \
        if (!(condition)) ::emu::fault("ASSERT failed: %s (%s:%d)", #condition, __FILE__, __LINE__);         \
    } while (0)
