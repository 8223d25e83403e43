// emu::fault for C++ unit tests that need nothing else from the runtime: print and abort.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "emu/runtime.h"

namespace emu {
[[noreturn]] void fault(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    std::abort();
}
}  // namespace emu
