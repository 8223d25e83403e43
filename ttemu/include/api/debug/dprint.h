// Emulator implementation of api/debug/dprint.h: DPRINT << ... << ENDL() prints one line to stderr, prefixed with
// the core and kernel name (set TTFD_EMU_DPRINT=0 in the environment of generic_op to silence it).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "emu/runtime.h"

namespace emu_dprint {
struct Endl {};
struct Hex {};
struct Dec {};
struct SetW { int w; };
struct SetPrecision { int p; };
struct Fixed {};

class Stream {
public:
    Stream& operator<<(const char* s) { buf_ += s ? s : "(null)"; return *this; }
    Stream& operator<<(char c) { buf_ += c; return *this; }
    Stream& operator<<(bool b) { buf_ += b ? "1" : "0"; return *this; }
    Stream& operator<<(float f) { return num("%.*f", prec_, double(f)); }
    Stream& operator<<(double f) { return num("%.*f", prec_, f); }
    Stream& operator<<(int8_t v) { return integer(int64_t(v)); }
    Stream& operator<<(uint8_t v) { return uinteger(uint64_t(v)); }
    Stream& operator<<(int16_t v) { return integer(int64_t(v)); }
    Stream& operator<<(uint16_t v) { return uinteger(uint64_t(v)); }
    Stream& operator<<(int32_t v) { return integer(int64_t(v)); }
    Stream& operator<<(uint32_t v) { return uinteger(uint64_t(v)); }
    Stream& operator<<(int64_t v) { return integer(v); }
    Stream& operator<<(uint64_t v) { return uinteger(v); }
    Stream& operator<<(const void* p) { return num("%p", 0, p); }
    Stream& operator<<(Endl) { buf_ += '\n'; emu::dprint(buf_.c_str()); buf_.clear(); return *this; }
    Stream& operator<<(Hex) { hex_ = true; return *this; }
    Stream& operator<<(Dec) { hex_ = false; return *this; }
    Stream& operator<<(SetW w) { width_ = w.w; return *this; }
    Stream& operator<<(SetPrecision p) { prec_ = p.p; return *this; }
    Stream& operator<<(Fixed) { return *this; }

private:
    Stream& integer(int64_t v) { return hex_ ? uinteger(uint64_t(v)) : num("%*lld", width_, (long long)v); }
    Stream& uinteger(uint64_t v) {
        return hex_ ? num("0x%*llx", width_, (unsigned long long)v) : num("%*llu", width_, (unsigned long long)v);
    }
    template <class... A>
    Stream& num(const char* f, A... a) {
        char b[128];
        snprintf(b, sizeof b, f, a...);
        buf_ += b;
        return *this;
    }
    std::string buf_;
    bool hex_ = false;
    int width_ = 0;
    int prec_ = 6;
};

inline Stream& stream() {
    static thread_local Stream s;
    return s;
}
}  // namespace emu_dprint

// The wheel's stream manipulators are [[deprecated("Use DEVICE_PRINT instead")]] structs (wheel api/debug/dprint.h:
// 49-82); the emulator's keep the wheel's markings and messages, so a kernel still using them is reported.
[[deprecated("Use DEVICE_PRINT instead")]] inline emu_dprint::Endl ENDL() { return {}; }
[[deprecated("Use DEVICE_PRINT instead")]] inline emu_dprint::Hex HEX() { return {}; }
[[deprecated("Use DEVICE_PRINT instead")]] inline emu_dprint::Dec DEC() { return {}; }
[[deprecated("Use DEVICE_PRINT instead")]] inline emu_dprint::Fixed FIXED() { return {}; }
[[deprecated("Use DEVICE_PRINT instead")]] inline emu_dprint::SetW SETW(int w) { return {w}; }
[[deprecated("Use DEVICE_PRINT instead")]] inline emu_dprint::SetPrecision SETPRECISION(int p) { return {p}; }

#define DPRINT (::emu_dprint::stream())
#define DPRINT_UNPACK(x) x
#define DPRINT_MATH(x) x
#define DPRINT_PACK(x) x
#define DPRINT_DATA0(x) x
#define DPRINT_DATA1(x) x
