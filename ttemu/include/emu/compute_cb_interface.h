// get_local_cb_interface(cb) for compute kernels: the TRISC's view of a CB with the wheel's LocalCBInterface field
// names. On TRISCs tt-metal keeps the FIFO fields in 16-byte units (CIRCULAR_BUFFER_COMPUTE_ADDR_SHIFT = 4;
// kernels shift them left by 4 for bytes), so this view reports sizes and pointers >> 4. Read-only: the compute
// API moves the pointers (cb_wait_front / cb_pop_front / cb_reserve_back / cb_push_back).
#pragma once

#include <cstdint>

#include "emu/runtime.h"

namespace emu {

class ComputeCBField {
   public:
    enum Kind : uint8_t { Size, Limit, PageSize, NumPages, RdPtr, WrPtr };
    constexpr ComputeCBField(uint8_t cb, Kind kind) : cb_(cb), kind_(kind) {}
    operator uint32_t() const {
        switch (kind_) {
            case Size: return cb_total_size(cb_) >> 4;
            case Limit: return (cb_base_addr(cb_) + cb_total_size(cb_)) >> 4;
            case PageSize: return cb_page_size(cb_) >> 4;
            case NumPages: return cb_total_size(cb_) / cb_page_size(cb_);
            case RdPtr: return cb_read_addr(cb_) >> 4;
            default: return cb_write_addr(cb_) >> 4;
        }
    }

   private:
    uint8_t cb_;
    Kind kind_;
};

}  // namespace emu

struct LocalCBInterface {
    explicit constexpr LocalCBInterface(uint8_t cb)
        : fifo_size(cb, emu::ComputeCBField::Size), fifo_limit(cb, emu::ComputeCBField::Limit),
          fifo_page_size(cb, emu::ComputeCBField::PageSize), fifo_num_pages(cb, emu::ComputeCBField::NumPages),
          fifo_rd_ptr(cb, emu::ComputeCBField::RdPtr), fifo_wr_ptr(cb, emu::ComputeCBField::WrPtr) {}
    LocalCBInterface(const LocalCBInterface&) = delete;
    LocalCBInterface& operator=(const LocalCBInterface&) = delete;
    const emu::ComputeCBField fifo_size, fifo_limit, fifo_page_size, fifo_num_pages, fifo_rd_ptr, fifo_wr_ptr;
};

constexpr uint32_t cb_addr_shift = 4;  // compute: FIFO fields in 16-byte units

inline const LocalCBInterface& get_local_cb_interface(uint32_t cb_id) {
    static const LocalCBInterface views[] = {
        LocalCBInterface(0),  LocalCBInterface(1),  LocalCBInterface(2),  LocalCBInterface(3),  LocalCBInterface(4),
        LocalCBInterface(5),  LocalCBInterface(6),  LocalCBInterface(7),  LocalCBInterface(8),  LocalCBInterface(9),
        LocalCBInterface(10), LocalCBInterface(11), LocalCBInterface(12), LocalCBInterface(13), LocalCBInterface(14),
        LocalCBInterface(15), LocalCBInterface(16), LocalCBInterface(17), LocalCBInterface(18), LocalCBInterface(19),
        LocalCBInterface(20), LocalCBInterface(21), LocalCBInterface(22), LocalCBInterface(23), LocalCBInterface(24),
        LocalCBInterface(25), LocalCBInterface(26), LocalCBInterface(27), LocalCBInterface(28), LocalCBInterface(29),
        LocalCBInterface(30), LocalCBInterface(31)};
    if (cb_id >= 32) emu::fault("get_local_cb_interface(%u): CB index out of range (0..31)", cb_id);
    return views[cb_id];
}
