// Host-side tile conversion exported for the Python driver (ctypes): the one implementation of each tile data
// format lives in include/emu/formats.h; this file only loops it over many tiles.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "emu/formats.h"

namespace emu {
// formats.h reports unsupported formats through emu::fault; on the host that is a programming error in the Python
// driver (it validates formats first), so print and abort.
void fault(const char* f, ...) {
    va_list ap;
    va_start(ap, f);
    fprintf(stderr, "ttemu host formats: ");
    vfprintf(stderr, f, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}
}  // namespace emu

extern "C" {

unsigned ttfd_tile_size_bytes(int fmt) { return emu::tile_size_bytes(static_cast<emu::DataFormat>(fmt)); }

// src: ntiles x 1024 floats, each tile row-major 32x32; dst: ntiles x tile_size_bytes(fmt).
void ttfd_pack_tiles(int fmt, const float* src, unsigned long long ntiles, unsigned char* dst) {
    const auto f = static_cast<emu::DataFormat>(fmt);
    const unsigned sz = emu::tile_size_bytes(f);
    for (unsigned long long t = 0; t < ntiles; ++t) emu::pack_tile(f, src + t * 1024, dst + t * sz);
}

void ttfd_unpack_tiles(int fmt, const unsigned char* src, unsigned long long ntiles, float* dst) {
    const auto f = static_cast<emu::DataFormat>(fmt);
    const unsigned sz = emu::tile_size_bytes(f);
    for (unsigned long long t = 0; t < ntiles; ++t) emu::unpack_tile(f, src + t * sz, dst + t * 1024);
}
}
