// Emulator version of internal/risc_attribs.h (wheel hw/inc/internal/risc_attribs.h): the L1 / register pointer
// qualifiers (no meaning on the host), the two-word 64-bit L1 value and InlineWriteDst.
#ifndef _RISC_ATTRIBS_H_
#define _RISC_ATTRIBS_H_

#include <stddef.h>
#include <stdint.h>

union tt_uint64_t {
    uint64_t v;
    struct {
        uint32_t hi;
        uint32_t lo;
    };
};

#ifndef tt_l1_ptr
#define tt_l1_ptr
#endif
#ifndef tt_reg_ptr
#define tt_reg_ptr
#endif

enum class L1WordCount : int32_t {};

constexpr L1WordCount l1_word_count_from_bytes(size_t bytes) { return static_cast<L1WordCount>(bytes / 4); }
template <typename T>
constexpr L1WordCount l1_word_count_from_range(T* start, T* end) {
    static_assert(sizeof(T) == sizeof(uint32_t), "L1WordCount ranges must use 32-bit elements");
    return static_cast<L1WordCount>(end - start);
}

enum class InlineWriteDst : uint8_t { DEFAULT = 0, L1 = 1, REG = 2 };

inline __attribute__((always_inline)) uint64_t tt_l1_load(tt_uint64_t tt_l1_ptr* p) {
    tt_uint64_t v;
    v.hi = p->hi;
    v.lo = p->lo;
    return v.v;
}

inline __attribute__((always_inline)) uint64_t tt_l1_load(volatile tt_uint64_t* tt_l1_ptr p) {
    tt_uint64_t v;
    v.hi = p->hi;
    v.lo = p->lo;
    return v.v;
}

#endif
