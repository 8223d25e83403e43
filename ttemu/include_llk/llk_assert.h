// Emulator: LLK_ASSERT faults the emulated core with the LLK's message (silicon debug builds halt).
#pragma once
#include "emu/runtime.h"
#define LLK_ASSERT(cond, msg)                                          \
    do {                                                               \
        if (!(cond)) ::emu::fault("LLK_ASSERT failed: %s (%s)", msg, #cond); \
    } while (0)
