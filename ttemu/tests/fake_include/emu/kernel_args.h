// Test-only stand-in for the runtime's runtime-argument access (used by the fake-runtime unit tests).
#pragma once
#include <cstdint>
#include <cstring>
uint32_t emu_fake_rt_arg(int i);
template <typename T>
inline T get_arg_val(int i) {
    static_assert(sizeof(T) == 4, "only 4B args are supported");
    uint32_t v = emu_fake_rt_arg(i);
    T t;
    std::memcpy(&t, &v, 4);
    return t;
}
