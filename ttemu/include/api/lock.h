// Emulator implementation of api/lock.h: RAII wrapper that calls `release_func` when it goes out of scope
// (wheel api/lock.h:12-25). Scoped locks are NOC-debug annotations on silicon; here the release function is all.
#pragma once

template <typename ReleaseFunc>
class Lock {
public:
    inline __attribute__((always_inline)) Lock(ReleaseFunc release_func) : release_func_(release_func) {}
    inline __attribute__((always_inline)) ~Lock() { release_func_(); }

    Lock(const Lock&) = delete;
    Lock(Lock&&) = delete;
    Lock& operator=(const Lock&) = delete;
    Lock& operator=(Lock&&) = delete;

private:
    ReleaseFunc release_func_;
};
