// Emulator: the LLK sanitizer hooks have no effect.
#pragma once
#define SAN_HOOK(...) ((void)0)
