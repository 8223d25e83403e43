// Emulator implementation of api/compute/cb_api.h: the compute kernel's side of circular buffers.
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "emu/compute_cb_interface.h"
#include "emu/compute_state.h"
#include "emu/formats.h"
#include "emu/runtime.h"

// Invalidates the RISC's L1 data cache so that later loads see L1 as other agents wrote it (tt-1xx cache.h). The
// emulator's L1 is coherent: there is nothing to invalidate.
ALWI void invalidate_l1_cache() {}

namespace ckernel {

// Blocks until `ntiles` tiles are at the front of `cbid` (the unpacker's wait).
ALWI void cb_wait_front(uint32_t cbid, uint32_t ntiles) { emu::cb_wait_front(cbid, ntiles); }

// Frees `ntiles` tiles from the front of `cbid`.
ALWI void cb_pop_front(uint32_t cbid, uint32_t ntiles) { emu::cb_pop_front(cbid, ntiles); }

// Blocks until `ntiles` tiles are free at the back of `cbid`.
ALWI void cb_reserve_back(uint32_t cbid, uint32_t ntiles) { emu::cb_reserve_back(cbid, ntiles); }

// Publishes `ntiles` tiles at the back of `cbid`; restarts sequential pack_tile at reserved tile 0.
ALWI void cb_push_back(uint32_t cbid, uint32_t ntiles) {
    emu::cb_push_back(cbid, ntiles);
    if (cbid < emu::kNumCbs) emu::cstate().pack_seq[cbid] = 0;
}

// L1 byte address of tile `tile_index` counted from the front of `operand_id`.
ALWI uint32_t get_tile_l1_byte_address(uint32_t operand_id, uint32_t tile_index) {
    return emu::cb_read_addr(operand_id) + tile_index * emu::cb_page_size(operand_id);
}

ALWI uint32_t get_tile_address(uint32_t cb_id, uint32_t tile_index) {
    return get_tile_l1_byte_address(cb_id, tile_index);
}

// The uint32 at element `element_offset` (4-byte units) of tile `tile_index` from the front of `cb_id`.
ALWI uint32_t read_tile_value(uint32_t cb_id, uint32_t tile_index, uint32_t element_offset) {
    uint32_t addr = get_tile_l1_byte_address(cb_id, tile_index) + element_offset * 4;
    uint32_t v;
    __builtin_memcpy(&v, emu::l1(addr, 4), 4);
    return v;
}

}  // namespace ckernel
