// get_local_cb_interface(cb) for data-movement kernels: a view of this RISC's CB state with the field names of the
// wheel's LocalCBInterface (internal/circular_buffer_interface.h): fifo_size, fifo_limit (the ring's end),
// fifo_page_size, fifo_num_pages, fifo_rd_ptr, fifo_wr_ptr, in bytes (cb_addr_shift is 0 on data movement) and, for
// addresses, in the emulator's host form of L1 addresses, as get_read_ptr / get_write_ptr return them. Reading a field
// asks the runtime; assigning fifo_rd_ptr / fifo_wr_ptr (=, +=, -=) moves the RISC's pointer (anywhere in the ring,
// its end included). The sizes are read-only here (silicon lets a RISC rewrite its own copy; the runtime keeps one).
// Not modelled: tiles_acked / tiles_received, fifo_wr_tile_ptr and the remote CB interfaces.
#pragma once

#include <cstdint>

#include "emu/runtime.h"

namespace emu {

class CBField {
public:
    enum Kind : uint8_t { Size, Limit, PageSize, NumPages, RdPtr, WrPtr };
    constexpr CBField(uint8_t cb, Kind kind) : cb_(cb), kind_(kind) {}

    operator uint32_t() const {
        switch (kind_) {
            case Size: return cb_total_size(cb_);
            case Limit: return cb_base_addr(cb_) + cb_total_size(cb_);
            case PageSize: return cb_page_size(cb_);
            case NumPages: return cb_total_size(cb_) / cb_page_size(cb_);
            case RdPtr: return cb_read_addr(cb_);
            default: return cb_write_addr(cb_);
        }
    }
    CBField& operator=(uint32_t v) {
        if (kind_ == RdPtr)
            cb_set_read_addr(cb_, v);
        else if (kind_ == WrPtr)
            cb_set_write_addr(cb_, v);
        else
            fault("LocalCBInterface of CB %u: only fifo_rd_ptr / fifo_wr_ptr can be assigned in the emulator", cb_);
        return *this;
    }
    CBField& operator=(const CBField& o) { return *this = uint32_t(o); }
    CBField& operator+=(uint32_t v) { return *this = uint32_t(*this) + v; }
    CBField& operator-=(uint32_t v) { return *this = uint32_t(*this) - v; }

private:
    uint8_t cb_;
    Kind kind_;
};

}  // namespace emu

struct LocalCBInterface {
    explicit constexpr LocalCBInterface(uint8_t cb) :
        fifo_size(cb, emu::CBField::Size), fifo_limit(cb, emu::CBField::Limit),
        fifo_page_size(cb, emu::CBField::PageSize), fifo_num_pages(cb, emu::CBField::NumPages),
        fifo_rd_ptr(cb, emu::CBField::RdPtr), fifo_wr_ptr(cb, emu::CBField::WrPtr) {}
    LocalCBInterface(const LocalCBInterface&) = delete;
    LocalCBInterface& operator=(const LocalCBInterface&) = delete;

    emu::CBField fifo_size;
    emu::CBField fifo_limit;
    emu::CBField fifo_page_size;
    emu::CBField fifo_num_pages;
    emu::CBField fifo_rd_ptr;
    emu::CBField fifo_wr_ptr;
};

constexpr uint32_t cb_addr_shift = 0;  // data movement: FIFO fields are byte addresses

inline LocalCBInterface& get_local_cb_interface(uint32_t cb_id) {
    static LocalCBInterface views[] = {
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
