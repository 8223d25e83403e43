// ctypes shim over emu/formats.h for ttemu/tests/test_formats.py.
#include "emu/formats.h"

extern "C" {
uint32_t shim_tile_size_bytes(uint32_t f) { return emu::tile_size_bytes(static_cast<emu::DataFormat>(f)); }
void shim_unpack_tile(uint32_t f, const uint8_t* src, float* dst) {
    emu::unpack_tile(static_cast<emu::DataFormat>(f), src, dst);
}
void shim_pack_tile(uint32_t f, const float* src, uint8_t* dst) {
    emu::pack_tile(static_cast<emu::DataFormat>(f), src, dst);
}
}
