// Emulator implementation of tt-metal's data-movement kernel API (api/dataflow/dataflow_api.h, ttnn 0.81.1):
// same names, signatures and defaults, implemented on the host emulator runtime (emu/runtime.h).
//
// Semantics kept from silicon: NOC addresses use Wormhole's encoding (36 local bits, 6-bit x/y node ids; worker
// cores at their translated coordinates, DRAM banks at their NOC0 coordinates); interleaved pages go round-robin
// over the 12 DRAM banks (DRAM = true) or the NUM_L1_BANKS L1 banks, one per compute core in tt-metal's bank order
// (DRAM = false; l1_bank_to_noc_xy / bank_to_l1_offset come from the runtime's bank table); CB counters and pointer
// wrap follow api/dataflow/circular_buffer.h; a NOC read completes at noc_async_read_barrier (not earlier), so a
// missing barrier shows up as stale data or a reported fault.
// Emulator-specific: "L1 addresses" are host addresses of the core's mapped L1 (base + offset, see runtime.h);
// NOC calls check bounds and Wormhole's alignment rules and report violations as kernel faults.
// CB formats and tile shapes: the kernel build generates chlkc_descriptors.h (as tt-metal's JIT build does), so
// get_tile_size / get_tile_hw / get_tile_num_faces / get_dataformat are constexpr table lookups (wheel
// api/dataflow/dataflow_api.h:8-11, 278-305); without that header they ask the runtime (32x32 tiles).
// NoC choice: every call issues on the NoC its `noc` argument names (noc_index, the kernel's NOC_INDEX, by default):
// its route and NIU in the timing model, its transaction counters; a barrier completes that NoC's transfers only, and
// the *_set_state registers are per NoC. DRAM bank addresses are per NoC (dram_bank_to_noc_xy[noc], emu/runtime.h).
// NOC transaction ids: reads / writes tagged by the *_with_trid calls below; a trid barrier completes only those.
// Not implemented: sharded address generators (sharded L1 buffers are reached with get_noc_addr(x, y, addr)), PCIe,
// the sticky transaction-id register (noc_async_read_set_trid tags nothing here), get_l1_noc_addr (the wheel's version adds bank_to_dram_offset to an L1 address), stateful
// command-buffer tricks beyond the *_set_state / *_with_state pairs below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#if __has_include("chlkc_descriptors.h")
#include "chlkc_descriptors.h"
#define DATA_FORMATS_DEFINED
#endif

#include "api/compile_time_args.h"
#include "api/debug/assert.h"
#include "api/debug/dprint.h"
#include "api/debug/kernel_profiler.hpp"
#include "api/debug/waypoint.h"
#include "hostdevcommon/kernel_structs.h"  // tt::CBIndex, as the wheel's circular_buffer_interface.h pulls in
#include "emu/formats.h"
#include "emu/kernel_args.h"
#include "emu/cb_interface.h"  // get_local_cb_interface
#include "emu/core_type.h"
#include "emu/runtime.h"

#include "internal/risc_attribs.h"  // tt_l1_ptr, tt_reg_ptr, InlineWriteDst

#ifndef FORCE_INLINE
#define FORCE_INLINE inline __attribute__((always_inline))
#endif

#ifndef NOC_INDEX
#define NOC_INDEX 0
#endif
#ifndef NOC_MODE
#define NOC_MODE 0
#endif

// ---- Wormhole NOC constants (tt_metal/hw/inc/internal/tt-1xx/wormhole/noc/noc_parameters.h)
#include "noc/noc_parameters.h"
#define L1_ALIGNMENT (static_cast<uint32_t>(16))
#ifdef ARCH_BLACKHOLE  // the wheel's blackhole/noc/noc_parameters.h: NOC_DRAM_READ_ALIGNMENT_BYTES 64
#define DRAM_ALIGNMENT (static_cast<uint32_t>(64))
#define LOG_BASE_2_OF_DRAM_ALIGNMENT 6
#else
#define DRAM_ALIGNMENT (static_cast<uint32_t>(32))
#define LOG_BASE_2_OF_DRAM_ALIGNMENT 5
#endif
#define LOG_BASE_2_OF_L1_ALIGNMENT 4
// The device's DRAM bank count, a JIT define as on silicon (Wormhole 12; Blackhole P150 8, P100 7).
#ifndef NUM_DRAM_BANKS
#define NUM_DRAM_BANKS 12
#endif
// The core's zero-filled block (wheel wormhole/dev_mem_map.h:80-94), read by noc.async_write_zeros.
#define MEM_ZEROS_BASE (::emu::kMemZerosBase)
#define MEM_ZEROS_SIZE 512
// NUM_L1_BANKS (and LOG_BASE_2_OF_NUM_L1_BANKS or IS_NOT_POW2_NUM_L1_BANKS) are per-device defines of tt-metal's JIT
// build; the emulator's compiler passes them to data-movement kernels for the board's compute grid (64 banks on n150,
// 56 on n300). A kernel built without them (a compute kernel including this header) gets the runtime's bank count,
// which is not a constant expression.
#ifndef NUM_L1_BANKS
#define NUM_L1_BANKS (emu::num_l1_banks())
#endif
#define NOC_UNICAST_WRITE_VC 1
#define NOC_MULTICAST_WRITE_VC 4
#define NOC_DISPATCH_MULTICAST_WRITE_VC 5

using DataFormat = ::emu::DataFormat;

constexpr uint8_t noc_index = NOC_INDEX;
constexpr uint8_t noc_mode = NOC_MODE;


// What the NOC delivered to this core is visible to it afterwards (a kernel polling a semaphore word itself, as
// upstream's sdpa_decode writer does, calls this before each read).
inline void invalidate_l1_cache() { emu::l1_cache_invalidated(); }
inline void RISC_POST_HEARTBEAT(uint32_t& heartbeat) { ++heartbeat; }

// This core's NOC coordinates, as firmware's my_x[noc] / my_y[noc] (translated coordinates on both NOCs).
struct EmuMyX {
    uint32_t operator[](int) const { return emu::my_noc_x(); }
};
struct EmuMyY {
    uint32_t operator[](int) const { return emu::my_noc_y(); }
};
inline constexpr EmuMyX my_x{};
inline constexpr EmuMyY my_y{};

inline uint8_t get_absolute_logical_x() { return static_cast<uint8_t>(emu::my_logical_x()); }
inline uint8_t get_absolute_logical_y() { return static_cast<uint8_t>(emu::my_logical_y()); }
inline uint8_t get_relative_logical_x() { return static_cast<uint8_t>(emu::my_logical_x()); }
inline uint8_t get_relative_logical_y() { return static_cast<uint8_t>(emu::my_logical_y()); }

// ---------------------------------------------------------------------------------------------- circular buffers
FORCE_INLINE void cb_push_back(const int32_t operand, const int32_t num_pages) {
    emu::cb_push_back(static_cast<uint32_t>(operand), static_cast<uint32_t>(num_pages));
}
FORCE_INLINE void cb_pop_front(int32_t operand, int32_t num_pages) {
    emu::cb_pop_front(static_cast<uint32_t>(operand), static_cast<uint32_t>(num_pages));
}
FORCE_INLINE void cb_reserve_back(int32_t operand, int32_t num_pages) {
    emu::cb_reserve_back(static_cast<uint32_t>(operand), static_cast<uint32_t>(num_pages));
}
FORCE_INLINE void cb_wait_front(int32_t operand, int32_t num_pages) {
    emu::cb_wait_front(static_cast<uint32_t>(operand), static_cast<uint32_t>(num_pages));
}
FORCE_INLINE bool cb_pages_reservable_at_back(int32_t operand, int32_t num_pages) {
    return emu::cb_pages_reservable_at_back(static_cast<uint32_t>(operand), static_cast<uint32_t>(num_pages), true);
}
FORCE_INLINE bool cb_pages_available_at_front(int32_t operand, int32_t num_pages) {
    return emu::cb_pages_available_at_front(static_cast<uint32_t>(operand), static_cast<uint32_t>(num_pages), true);
}
FORCE_INLINE uint32_t get_write_ptr(uint32_t operand) { return emu::cb_write_addr(operand); }
FORCE_INLINE uint32_t get_read_ptr(uint32_t operand) { return emu::cb_read_addr(operand); }
// Tile size / shape / format of a CB: the JIT-generated tables, indexed by CB (wheel api/dataflow/dataflow_api.h:
// 278-305: unpack_tile_size is in bytes; unpack_src_format == pack_dst_format, the CB's L1 format).
#ifdef DATA_FORMATS_DEFINED
constexpr inline std::int32_t get_tile_size(const std::int32_t operand) {
    return static_cast<std::int32_t>(unpack_tile_size[static_cast<uint32_t>(operand)]);
}
constexpr inline uint32_t get_tile_hw(const std::int32_t operand) {
    return (uint32_t)unpack_tile_r_dim[static_cast<uint32_t>(operand)] *
           (uint32_t)unpack_tile_c_dim[static_cast<uint32_t>(operand)];
}
constexpr inline uint32_t get_tile_num_faces(const std::int32_t operand) {
    return (uint32_t)unpack_tile_num_faces[static_cast<uint32_t>(operand)];
}
constexpr inline DataFormat get_dataformat(const std::int32_t operand) {
    return static_cast<DataFormat>((uint32_t)unpack_src_format[operand]);
}
#else
inline int32_t get_tile_size(const int32_t operand) {
    return static_cast<int32_t>(emu::tile_size_bytes(emu::cb_data_format(static_cast<uint32_t>(operand))));
}
inline uint32_t get_tile_hw(const int32_t) { return 1024; }
inline uint32_t get_tile_num_faces(const int32_t) { return 4; }
inline DataFormat get_dataformat(const int32_t operand) { return emu::cb_data_format(static_cast<uint32_t>(operand)); }
#endif

// ---------------------------------------------------------------------------------------------- addresses
// The `noc` argument: the NoC the address is for. Coordinates a kernel passes are already that NoC's (the wheel's
// DYNAMIC_NOC_X / DYNAMIC_NOC_Y are the identity, risc_common.h); worker cores' translated coordinates are the same on
// both NoCs, and my_x[noc] / my_y[noc] too. The DRAM bank tables differ per NoC (dram_bank_to_noc_xy[noc], below):
// Wormhole's DRAM coordinates are raw, and NoC 1's raw coordinates are NoC 0's mirrored (emu/runtime.h); Blackhole's
// name another tile of the bank's channel for NoC 1 (the soc descriptor's worker_endpoint per NoC).
FORCE_INLINE uint64_t get_noc_addr(uint32_t noc_x, uint32_t noc_y, uint32_t addr, uint8_t noc = noc_index) {
    (void)noc;  // DYNAMIC_NOC_X(noc, x) == x
    return emu::noc_xy_addr(noc_x, noc_y, addr);
}
FORCE_INLINE uint64_t get_noc_addr(uint32_t addr, uint8_t noc = noc_index) {
    (void)noc;  // my_x[noc] / my_y[noc]: translated, the same on both NoCs
    return emu::noc_xy_addr(emu::my_noc_x(), emu::my_noc_y(), addr);
}
FORCE_INLINE uint64_t get_noc_multicast_addr(uint32_t noc_x_start, uint32_t noc_y_start, uint32_t noc_x_end,
                                              uint32_t noc_y_end, uint32_t addr, uint8_t noc = noc_index) {
    (void)noc;  // the caller orders the corners for its NoC (NoC 1: start >= end; the runtime checks at the transfer)
    return emu::noc_multicast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end, addr);
}
// noc_xy = NOC_XY_ENCODING(x, y): the node bits as they sit in the upper 32-bit word of a NOC address.
FORCE_INLINE uint64_t get_noc_addr_helper(uint32_t noc_xy, uint32_t addr) {
    uint32_t x = (noc_xy >> (NOC_ADDR_LOCAL_BITS % 32)) & NOC_NODE_ID_MASK;
    uint32_t y = (noc_xy >> ((NOC_ADDR_LOCAL_BITS % 32) + NOC_ADDR_NODE_ID_BITS)) & NOC_NODE_ID_MASK;
    return emu::noc_xy_addr(x, y, addr);
}

// As the wheel's internal/dataflow/dataflow_api_addrgen.h: page id -> (bank_offset_index = id / num banks, bank_index =
// id % num banks); the bank's NOC xy and offset from the DRAM or L1 bank tables.
namespace interleaved_addr_gen {
template <bool DRAM>
FORCE_INLINE uint32_t get_bank_offset_index(uint32_t id) {
    if constexpr (DRAM) {
        return id / NUM_DRAM_BANKS;
    } else {
        return id / NUM_L1_BANKS;
    }
}
template <bool DRAM>
FORCE_INLINE uint32_t get_bank_index(uint32_t id, uint32_t bank_offset_index) {
    if constexpr (DRAM) {
        return id - bank_offset_index * NUM_DRAM_BANKS;
    } else {
        return id - bank_offset_index * NUM_L1_BANKS;
    }
}
template <bool DRAM>
FORCE_INLINE uint32_t get_noc_xy(uint32_t bank_index, uint8_t noc = noc_index) {
    if constexpr (DRAM) {
        return NOC_XY_ENCODING(emu::dram_bank_noc_x(bank_index, noc), emu::dram_bank_noc_y(bank_index, noc));
    } else {
        return NOC_XY_ENCODING(emu::l1_bank_noc_x(bank_index), emu::l1_bank_noc_y(bank_index));
    }
}
template <bool DRAM>
FORCE_INLINE uint32_t get_bank_offset(uint32_t bank_index) {
    if constexpr (DRAM) {
        return emu::dram_bank_offset(bank_index);
    } else {
        return emu::l1_bank_offset(bank_index);
    }
}
template <bool DRAM>
FORCE_INLINE constexpr uint32_t get_allocator_alignment() {
    return DRAM ? DRAM_ALIGNMENT : L1_ALIGNMENT;
}
template <bool DRAM>
FORCE_INLINE constexpr uint32_t get_log_base2_of_allocator_alignment() {
    return DRAM ? LOG_BASE_2_OF_DRAM_ALIGNMENT : LOG_BASE_2_OF_L1_ALIGNMENT;
}
template <bool DRAM>
FORCE_INLINE uint64_t bank_noc_addr(uint32_t bank_index, uint32_t addr, uint8_t noc) {
    if constexpr (DRAM) {
        return NOC_XY_ADDR(emu::dram_bank_noc_x(bank_index, noc), emu::dram_bank_noc_y(bank_index, noc), addr);
    } else {
        return NOC_XY_ADDR(emu::l1_bank_noc_x(bank_index), emu::l1_bank_noc_y(bank_index), addr);
    }
}
}  // namespace interleaved_addr_gen

constexpr uint32_t emu_align_up(uint32_t v, uint32_t a) { return (v + a - 1) & ~(a - 1); }

// Firmware's bank tables (extern arrays on silicon: dram_bank_to_noc_xy[NUM_NOCS][NUM_DRAM_BANKS],
// l1_bank_to_noc_xy[NUM_NOCS][NUM_L1_BANKS] holding NOC_XY_ENCODING(x, y), bank_to_dram_offset[NUM_DRAM_BANKS],
// bank_to_l1_offset[NUM_L1_BANKS]), read-only views of the runtime's bank table here. L1 banks are at translated
// coordinates (the same on both NoCs); DRAM banks at the NoC's own (emu::dram_bank_noc_x(bank, noc)).
namespace emu_banks {
template <bool DRAM>
struct XYRow {
    uint8_t noc;
    uint16_t operator[](uint32_t bank) const {
        return DRAM ? uint16_t(NOC_XY_ENCODING(emu::dram_bank_noc_x(bank, noc), emu::dram_bank_noc_y(bank, noc)))
                    : uint16_t(NOC_XY_ENCODING(emu::l1_bank_noc_x(bank), emu::l1_bank_noc_y(bank)));
    }
};
template <bool DRAM>
struct XYTable {
    XYRow<DRAM> operator[](uint32_t noc) const { return {uint8_t(noc)}; }
};
template <bool DRAM>
struct OffsetTable {
    int32_t operator[](uint32_t bank) const {
        return int32_t(DRAM ? emu::dram_bank_offset(bank) : emu::l1_bank_offset(bank));
    }
};
}  // namespace emu_banks
inline constexpr emu_banks::XYTable<true> dram_bank_to_noc_xy{};
inline constexpr emu_banks::XYTable<false> l1_bank_to_noc_xy{};
inline constexpr emu_banks::OffsetTable<true> bank_to_dram_offset{};
inline constexpr emu_banks::OffsetTable<false> bank_to_l1_offset{};

// internal/dataflow/noc_address_backend_xy.h (noc_address_backend on Wormhole): NOC address composition.
namespace noc_address_backend {
FORCE_INLINE uint64_t worker_address(uint32_t x, uint32_t y, uint32_t local_address, uint8_t noc) {
    (void)noc;
    return emu::noc_xy_addr(x, y, local_address);
}
FORCE_INLINE uint64_t self_address(uint32_t local_address, uint8_t noc) {
    (void)noc;
    return emu::noc_xy_addr(emu::my_noc_x(), emu::my_noc_y(), local_address);
}
FORCE_INLINE uint64_t packed_worker_address(uint32_t packed_xy, uint32_t local_address) {
    return ((uint64_t)(packed_xy) << NOC_ADDR_COORD_SHIFT) | local_address;
}
FORCE_INLINE uint64_t multicast_descriptor(uint32_t start_x, uint32_t start_y, uint32_t end_x, uint32_t end_y,
                                           uint32_t local_address, uint8_t noc) {
    (void)noc;
    return emu::noc_multicast_addr(start_x, start_y, end_x, end_y, local_address);
}
template <bool DRAM>
FORCE_INLINE uint64_t bank_address(uint32_t bank_index, uint32_t local_address, uint8_t noc) {
    if constexpr (DRAM) {
        return NOC_XY_ADDR(emu::dram_bank_noc_x(bank_index, noc), emu::dram_bank_noc_y(bank_index, noc),
                           local_address);
    } else {
        return NOC_XY_ADDR(emu::l1_bank_noc_x(bank_index), emu::l1_bank_noc_y(bank_index), local_address);
    }
}
FORCE_INLINE uint32_t extract_local_address(uint64_t address) { return static_cast<uint32_t>(address); }
FORCE_INLINE bool is_local(uint64_t address, uint8_t noc) {
    (void)noc;
    return NOC_UNICAST_ADDR_X(address) == emu::my_noc_x() && NOC_UNICAST_ADDR_Y(address) == emu::my_noc_y();
}
FORCE_INLINE bool is_local_coordinate(uint32_t x, uint32_t y, uint8_t noc) {
    (void)noc;
    return x == emu::my_noc_x() && y == emu::my_noc_y();
}
}  // namespace noc_address_backend

// internal/dataflow/dataflow_api_addrgen.h:128-160: what an address generator offers.
template <typename, typename = void>
inline constexpr bool has_get_noc_addr_v = false;
template <typename T>
inline constexpr bool has_get_noc_addr_v<T, std::void_t<decltype(std::declval<T>().get_noc_addr(
                                               std::declval<uint32_t>(), std::declval<uint32_t>(),
                                               std::declval<uint8_t>()))>> = true;
template <typename, typename = void>
inline constexpr bool has_page_size_v = false;
template <typename T>
inline constexpr bool has_page_size_v<T, std::void_t<decltype(std::declval<T>().page_size)>> = true;
template <typename, typename = void>
inline constexpr bool has_get_aligned_page_size_v = false;
template <typename T>
inline constexpr bool has_get_aligned_page_size_v<T, std::void_t<decltype(std::declval<T>().get_aligned_page_size())>> =
    true;
template <typename, typename = void>
inline constexpr bool has_log_base_2_of_page_size_v = false;
template <typename T>
inline constexpr bool
    has_log_base_2_of_page_size_v<T, std::void_t<decltype(std::declval<T>().log_base_2_of_page_size)>> = true;

template <bool DRAM>
FORCE_INLINE uint64_t get_noc_addr_from_bank_id(uint32_t bank_id, uint32_t bank_address_offset,
                                                 uint8_t noc = noc_index) {
    return interleaved_addr_gen::bank_noc_addr<DRAM>(
        bank_id, bank_address_offset + interleaved_addr_gen::get_bank_offset<DRAM>(bank_id), noc);
}

inline uint64_t get_dram_noc_addr(const uint32_t id, const uint32_t page_size, const uint32_t bank_base_address,
                                  const uint32_t offset = 0, uint8_t noc = noc_index) {
    uint32_t row = id / NUM_DRAM_BANKS, bank = id % NUM_DRAM_BANKS;
    uint32_t addr = row * emu_align_up(page_size, DRAM_ALIGNMENT) + bank_base_address + offset + emu::dram_bank_offset(bank);
    return interleaved_addr_gen::bank_noc_addr<true>(bank, addr, noc);
}

// Bytes of `index` tiles of `format` for tiles of `tile_hw` datums, exactly as the wheel computes them
// (internal/dataflow/dataflow_api_addrgen.h:82-126): shifts by log2(tile_hw), block-float exponent sections of 64 B
// (1024), 32 B (512) or 16 B (smaller tiles), the format's low 5 bits; formats it does not list (Int8, Lf8, ...) are
// sized as Bfp8, as there.
template <uint32_t tile_hw = 1024>
FORCE_INLINE constexpr uint32_t MUL_WITH_TILE_SIZE(uint32_t format, uint32_t index) {
    constexpr uint8_t datum_shift = (tile_hw == 1024)  ? 10
                                    : (tile_hw == 512) ? 9
                                    : (tile_hw == 256) ? 8
                                    : (tile_hw == 128) ? 7
                                    : (tile_hw == 64)  ? 6
                                    : (tile_hw == 32)  ? 5
                                    : (tile_hw == 16)  ? 4
                                                       : 10;
    constexpr uint8_t exp_shift = (tile_hw == 1024)  ? 6
                                  : (tile_hw == 512) ? 5
                                  : (tile_hw == 256) ? 4
                                  : (tile_hw == 128) ? 4
                                  : (tile_hw == 64)  ? 4
                                  : (tile_hw == 32)  ? 4
                                  : (tile_hw == 16)  ? 4
                                                     : 6;
    switch (format & 0x1F) {
        case uint32_t(DataFormat::UInt8): return index << datum_shift;
        case uint32_t(DataFormat::UInt16):
        case uint32_t(DataFormat::Float16):
        case uint32_t(DataFormat::Float16_b): return index << (datum_shift + 1);
        case uint32_t(DataFormat::Int32):
        case uint32_t(DataFormat::UInt32):
        case uint32_t(DataFormat::Float32): return index << (datum_shift + 2);
        case uint32_t(DataFormat::Bfp2):
        case uint32_t(DataFormat::Bfp2_b): return (index << (datum_shift - 2)) + (index << exp_shift);
        case uint32_t(DataFormat::Bfp4):
        case uint32_t(DataFormat::Bfp4_b): return (index << (datum_shift - 1)) + (index << exp_shift);
        default: return (index << datum_shift) + (index << exp_shift);
    }
}

template <bool DRAM>
struct InterleavedAddrGen {
    static constexpr bool is_dram = DRAM;
    uint32_t bank_base_address;
    const uint32_t page_size;
    const uint32_t aligned_page_size = emu_align_up(page_size, interleaved_addr_gen::get_allocator_alignment<DRAM>());

    FORCE_INLINE uint32_t get_addr(const uint32_t id, const uint32_t bank_offset_index, const uint32_t bank_index,
                                   const uint32_t offset = 0) const {
        (void)id;
        return bank_offset_index * aligned_page_size + bank_base_address + offset +
               interleaved_addr_gen::get_bank_offset<DRAM>(bank_index);
    }
    FORCE_INLINE uint64_t get_noc_addr(const uint32_t id, const uintptr_t offset = 0, uint8_t noc = noc_index) const {
        uint32_t row = interleaved_addr_gen::get_bank_offset_index<DRAM>(id);
        uint32_t bank = interleaved_addr_gen::get_bank_index<DRAM>(id, row);
        return interleaved_addr_gen::bank_noc_addr<DRAM>(bank, get_addr(id, row, bank, uint32_t(offset)), noc);
    }
};

template <bool DRAM>
struct InterleavedPow2AddrGen {
    static constexpr bool is_dram = DRAM;
    const uint32_t bank_base_address;
    const uint32_t log_base_2_of_page_size;
    static constexpr uint32_t log_base_2_of_allocator_alignment =
        interleaved_addr_gen::get_log_base2_of_allocator_alignment<DRAM>();
    const uint32_t aligned_log_base_2_of_page_size = log_base_2_of_page_size > log_base_2_of_allocator_alignment
                                                         ? log_base_2_of_page_size
                                                         : log_base_2_of_allocator_alignment;

    FORCE_INLINE uint32_t get_addr(const uint32_t id, const uint32_t bank_offset_index, const uint32_t bank_index,
                                   const uint32_t offset = 0) const {
        (void)id;
        return (bank_offset_index << aligned_log_base_2_of_page_size) + bank_base_address + offset +
               interleaved_addr_gen::get_bank_offset<DRAM>(bank_index);
    }
    FORCE_INLINE uint64_t get_noc_addr(const uint32_t id, const uint32_t offset = 0, uint8_t noc = noc_index) const {
        uint32_t row = interleaved_addr_gen::get_bank_offset_index<DRAM>(id);
        uint32_t bank = interleaved_addr_gen::get_bank_index<DRAM>(id, row);
        return interleaved_addr_gen::bank_noc_addr<DRAM>(bank, get_addr(id, row, bank, offset), noc);
    }
};

template <bool DRAM, uint32_t tile_hw = 1024>
struct InterleavedAddrGenFast {
    static constexpr bool is_dram = DRAM;
    uint32_t bank_base_address;
    uint32_t page_size;
    DataFormat data_format;

    FORCE_INLINE uint32_t get_addr(const uint32_t id, const uint32_t bank_offset_index, const uint32_t bank_index,
                                   const uint32_t offset = 0) const {
        (void)id;
        return MUL_WITH_TILE_SIZE<tile_hw>(uint32_t(data_format), bank_offset_index) + bank_base_address + offset +
               interleaved_addr_gen::get_bank_offset<DRAM>(bank_index);
    }
    FORCE_INLINE uint64_t get_noc_addr(const uint32_t id, const uint32_t offset = 0, uint8_t noc = noc_index) const {
        uint32_t row = interleaved_addr_gen::get_bank_offset_index<DRAM>(id);
        uint32_t bank = interleaved_addr_gen::get_bank_index<DRAM>(id, row);
        return interleaved_addr_gen::bank_noc_addr<DRAM>(bank, get_addr(id, row, bank, offset), noc);
    }
};

template <bool DRAM>
struct InterleavedPow2AddrGenFast {
    static constexpr bool is_dram = DRAM;
    uint32_t bank_base_address;
    const uint32_t log_base_2_of_page_size;
    static constexpr uint32_t log_base_2_of_allocator_alignment =
        interleaved_addr_gen::get_log_base2_of_allocator_alignment<DRAM>();
    const uint32_t aligned_log_base_2_of_page_size = log_base_2_of_page_size > log_base_2_of_allocator_alignment
                                                         ? log_base_2_of_page_size
                                                         : log_base_2_of_allocator_alignment;

    FORCE_INLINE uint64_t get_noc_addr(const uint32_t id, const uint32_t offset = 0, uint8_t noc = noc_index) const {
        uint32_t row = interleaved_addr_gen::get_bank_offset_index<DRAM>(id);
        uint32_t bank = interleaved_addr_gen::get_bank_index<DRAM>(id, row);
        uint32_t addr = (row << aligned_log_base_2_of_page_size) + bank_base_address + offset +
                        interleaved_addr_gen::get_bank_offset<DRAM>(bank);
        return interleaved_addr_gen::bank_noc_addr<DRAM>(bank, addr, noc);
    }
};

// Page size an address generator transfers per page (tt-metal's has_get_aligned_page_size / page_size / log2).
namespace emu_addrgen {
template <typename, typename = void>
inline constexpr bool has_aligned = false;
template <typename T>
inline constexpr bool has_aligned<T, std::void_t<decltype(std::declval<T>().get_aligned_page_size())>> = true;
template <typename, typename = void>
inline constexpr bool has_page_size = false;
template <typename T>
inline constexpr bool has_page_size<T, std::void_t<decltype(std::declval<T>().page_size)>> = true;

template <typename AddrGen>
inline uint32_t page_size_of(const AddrGen& g) {
    if constexpr (has_aligned<AddrGen>) {
        return g.get_aligned_page_size();
    } else if constexpr (has_page_size<AddrGen>) {
        return g.page_size;
    } else {
        return 1u << g.log_base_2_of_page_size;
    }
}
}  // namespace emu_addrgen

template <typename AddrGen>
FORCE_INLINE uint64_t get_noc_addr(const uint32_t id, const AddrGen& addrgen, uint32_t offset = 0,
                                   uint8_t noc = noc_index, decltype(addrgen.get_noc_addr(0))* = nullptr) {
    return addrgen.get_noc_addr(id, offset, noc);
}

// The wheel's deprecated per-generator overloads (internal/dataflow/dataflow_api_addrgen.h:427-499), same markings and
// messages: a call with one of these generators resolves to them (more specialised than the generic form), so the
// build warns exactly where tt-metal's does.
template <bool DRAM>
[[deprecated("Use <typename AddrGen> get_noc_addr instead.")]]
FORCE_INLINE uint64_t
get_noc_addr(const uint32_t id, const InterleavedAddrGen<DRAM>& addrgen, uint32_t offset = 0, uint8_t noc = noc_index) {
    return addrgen.get_noc_addr(id, offset, noc);
}
template <bool DRAM>
[[deprecated("Use <typename AddrGen> get_noc_addr instead.")]]
FORCE_INLINE uint64_t get_noc_addr(
    const uint32_t id, const InterleavedPow2AddrGen<DRAM>& addrgen, uint32_t offset = 0, uint8_t noc = noc_index) {
    return addrgen.get_noc_addr(id, offset, noc);
}
template <bool DRAM, uint32_t tile_hw>
[[deprecated("Use <typename AddrGen> get_noc_addr instead.")]]
FORCE_INLINE uint64_t get_noc_addr(
    const uint32_t id, const InterleavedAddrGenFast<DRAM, tile_hw>& addrgen, uint32_t offset = 0,
    uint8_t noc = noc_index) {
    return addrgen.get_noc_addr(id, offset, noc);
}
template <bool DRAM>
[[deprecated("Use <typename AddrGen> get_noc_addr instead.")]]
FORCE_INLINE uint64_t get_noc_addr(
    const uint32_t id, const InterleavedPow2AddrGenFast<DRAM>& addrgen, uint32_t offset = 0, uint8_t noc = noc_index) {
    return addrgen.get_noc_addr(id, offset, noc);
}

template <typename DSpec>
struct TensorAccessor;  // api/tensor/tensor_accessor.h (included at the end of this header, as the wheel's)

// ---------------------------------------------------------------------------------------------- NOC reads
template <bool enable_noc_tracing = true>
FORCE_INLINE void noc_async_read_one_packet(uint64_t src_noc_addr, uint32_t dst_local_l1_addr, uint32_t size,
                                            uint8_t noc = noc_index, uint32_t read_req_vc = NOC_UNICAST_WRITE_VC) {
    (void)read_req_vc;
    if (size > NOC_MAX_BURST_SIZE)
        emu::fault("noc_async_read_one_packet: size %u exceeds NOC_MAX_BURST_SIZE (%u)", size, NOC_MAX_BURST_SIZE);
    emu::noc_read(src_noc_addr, dst_local_l1_addr, size, noc);
}

template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, bool enable_noc_tracing = true>
inline void noc_async_read(uint64_t src_noc_addr, uint32_t dst_local_l1_addr, uint32_t size, uint8_t noc = noc_index,
                           uint32_t read_req_vc = NOC_UNICAST_WRITE_VC) {
    (void)read_req_vc;
    if (max_page_size <= NOC_MAX_BURST_SIZE && size > max_page_size)
        emu::fault("noc_async_read<max_page_size=%u>: size %u exceeds the template bound", max_page_size, size);
    emu::noc_read(src_noc_addr, dst_local_l1_addr, size, noc);
}

// The *_set_state / *_with_state pairs: the state lives in a command buffer of the NoC's NIU, so each NoC has its own
// (a set_state on NoC 1 does not change what a with_state on NoC 0 issues).
namespace emu_state {
struct ReadState {
    uint64_t src_hi = 0;  // NOC node bits of the source
    uint32_t size = 0;
};
inline ReadState& read_state(uint8_t noc) {
    static thread_local ReadState s[2];
    if (noc > 1) emu::fault("NoC index %u is out of range (a Tensix core has NoC 0 and NoC 1)", noc);
    return s[noc];
}
struct WriteState {
    uint64_t dst_hi = 0;
    uint32_t size = 0;
};
inline WriteState& write_state(uint8_t noc) {
    static thread_local WriteState s[2];
    if (noc > 1) emu::fault("NoC index %u is out of range (a Tensix core has NoC 0 and NoC 1)", noc);
    return s[noc];
}
}  // namespace emu_state

template <bool use_vc = false>
FORCE_INLINE void noc_async_read_one_packet_set_state(uint64_t src_noc_addr, uint32_t size, const uint32_t vc = 0,
                                                      uint8_t noc = noc_index) {
    (void)vc;
    if (size > NOC_MAX_BURST_SIZE)
        emu::fault("noc_async_read_one_packet_set_state: size %u exceeds NOC_MAX_BURST_SIZE", size);
    emu_state::read_state(noc) = {src_noc_addr & ~NOC_LOCAL_ADDR_MASK, size};
}

template <bool inc_num_issued = true, bool use_vc = false>
FORCE_INLINE void noc_async_read_one_packet_with_state(uint32_t src_local_l1_addr, uint32_t dst_local_l1_addr,
                                                       const uint32_t vc = 0, uint8_t noc = noc_index) {
    (void)vc;
    auto& s = emu_state::read_state(noc);
    emu::noc_read(s.src_hi | src_local_l1_addr, dst_local_l1_addr, s.size, noc);
}

FORCE_INLINE void noc_async_read_set_state(uint64_t src_noc_addr, uint8_t noc = noc_index) {
    emu_state::read_state(noc).src_hi = src_noc_addr & ~NOC_LOCAL_ADDR_MASK;
}

template <bool inc_num_issued = true, bool skip_cmdbuf_chk = false>
FORCE_INLINE void noc_async_read_with_state(uint32_t src_local_l1_addr, uint32_t dst_local_l1_addr, uint32_t size,
                                            uint8_t noc = noc_index) {
    emu::noc_read(emu_state::read_state(noc).src_hi | src_local_l1_addr, dst_local_l1_addr, size, noc);
}

FORCE_INLINE void noc_async_read_inc_num_issued(uint32_t num_issued_reads_inc, uint8_t noc = noc_index) {
    (void)num_issued_reads_inc;
    (void)noc;
}

template <typename AddrGen, bool enable_noc_tracing = true>
FORCE_INLINE void noc_async_read_page(const uint32_t id, const AddrGen& addrgen, uint32_t dst_local_l1_addr,
                                      uint32_t offset = 0, uint8_t noc = noc_index) {
    emu::noc_read(addrgen.get_noc_addr(id, offset, noc), dst_local_l1_addr, emu_addrgen::page_size_of(addrgen), noc);
}

// THIS API IS DEPRECATED AND WILL BE REMOVED SOON (wheel dataflow_api.h:1266-1389): noc_async_read_tile exists only
// for these three generators, and noc_async_read_page's InterleavedAddrGen / InterleavedPow2AddrGenFast overloads;
// same markings and messages as the wheel's. Each forwards to the generic noc_async_read_page.
template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_tile(const uint32_t id, const InterleavedAddrGen<DRAM>& addrgen,
                                      uint32_t dst_local_l1_addr, uint32_t offset = 0, uint8_t noc = noc_index) {
    noc_async_read_page<InterleavedAddrGen<DRAM>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}
template <typename DSpec>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_tile(const uint32_t id, const TensorAccessor<DSpec>& addrgen,
                                      uint32_t dst_local_l1_addr, uint32_t offset = 0, uint8_t noc = noc_index) {
    noc_async_read_page<TensorAccessor<DSpec>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}
template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_page(const uint32_t id, const InterleavedAddrGen<DRAM>& addrgen,
                                      uint32_t dst_local_l1_addr, uint32_t offset = 0, uint8_t noc = noc_index) {
    noc_async_read_page<InterleavedAddrGen<DRAM>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}
template <bool DRAM, uint32_t tile_hw>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_tile(const uint32_t id, const InterleavedAddrGenFast<DRAM, tile_hw>& addrgen,
                                      uint32_t dst_local_l1_addr, uint32_t offset = 0, uint8_t noc = noc_index) {
    noc_async_read_page<InterleavedAddrGenFast<DRAM, tile_hw>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}
template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_page(const uint32_t id, const InterleavedPow2AddrGenFast<DRAM>& addrgen,
                                      uint32_t dst_local_l1_addr, uint32_t offset = 0, uint8_t noc = noc_index) {
    noc_async_read_page<InterleavedPow2AddrGenFast<DRAM>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}

// Waits for the reads issued on `noc` only (noc_reads_num_issued[noc]): reads on the other NoC stay in flight.
FORCE_INLINE void noc_async_read_barrier(uint8_t noc = noc_index) { emu::noc_read_barrier(noc); }

// ---------------------------------------------------------------------------------------------- NOC writes
template <bool enable_noc_tracing = true, bool posted = false>
FORCE_INLINE void noc_async_write_one_packet(uint32_t src_local_l1_addr, uint64_t dst_noc_addr, uint32_t size,
                                             uint8_t noc = noc_index, uint32_t vc = NOC_UNICAST_WRITE_VC) {
    (void)vc;
    if (size > NOC_MAX_BURST_SIZE)
        emu::fault("noc_async_write_one_packet: size %u exceeds NOC_MAX_BURST_SIZE (%u)", size, NOC_MAX_BURST_SIZE);
    emu::noc_write(src_local_l1_addr, dst_noc_addr, size, noc);
}

template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, bool enable_noc_tracing = true, bool posted = false>
inline void noc_async_write(uint32_t src_local_l1_addr, uint64_t dst_noc_addr, uint32_t size, uint8_t noc = noc_index,
                            uint32_t vc = NOC_UNICAST_WRITE_VC) {
    (void)vc;
    if (max_page_size <= NOC_MAX_BURST_SIZE && size > max_page_size)
        emu::fault("noc_async_write<max_page_size=%u>: size %u exceeds the template bound", max_page_size, size);
    emu::noc_write(src_local_l1_addr, dst_noc_addr, size, noc);
}

template <bool posted = false>
FORCE_INLINE void noc_async_write_one_packet_set_state(uint64_t dst_noc_addr, uint32_t size, uint8_t noc = noc_index,
                                                       uint8_t vc = NOC_UNICAST_WRITE_VC) {
    (void)vc;
    emu_state::write_state(noc) = {dst_noc_addr & ~NOC_LOCAL_ADDR_MASK, size};
}

template <bool posted = false>
FORCE_INLINE void noc_async_write_one_packet_with_state(uint32_t src_local_l1_addr, uint32_t dst_local_l1_addr,
                                                        uint8_t noc = noc_index) {
    auto& s = emu_state::write_state(noc);
    emu::noc_write(src_local_l1_addr, s.dst_hi | dst_local_l1_addr, s.size, noc);
}

template <bool enable_noc_tracing = true>
FORCE_INLINE void noc_async_write_multicast_one_packet(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                                                       uint32_t size, uint32_t num_dests, bool linked = false,
                                                       uint8_t noc = noc_index) {
    (void)linked;
    emu::noc_write_multicast(src_local_l1_addr, dst_noc_addr_multicast, size, num_dests, false, noc);
}

template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1>
inline void noc_async_write_multicast(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast, uint32_t size,
                                      uint32_t num_dests, bool linked = false, uint8_t noc = noc_index,
                                      uint8_t vc = NOC_MULTICAST_WRITE_VC) {
    (void)linked;
    (void)vc;
    emu::noc_write_multicast(src_local_l1_addr, dst_noc_addr_multicast, size, num_dests, false, noc);
}

inline void noc_async_write_multicast_loopback_src(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                                                   uint32_t size, uint32_t num_dests, bool linked = false,
                                                   uint8_t noc = noc_index) {
    (void)linked;
    emu::noc_write_multicast(src_local_l1_addr, dst_noc_addr_multicast, size, num_dests, true, noc);
}

template <typename AddrGen, bool enable_noc_tracing = true, bool posted = false>
FORCE_INLINE void noc_async_write_page(const uint32_t id, const AddrGen& addrgen, uint32_t src_local_l1_addr,
                                       uint32_t size = 0, uint32_t offset = 0, uint8_t noc = noc_index) {
    uint32_t n = size ? size : emu_addrgen::page_size_of(addrgen);
    emu::noc_write(src_local_l1_addr, addrgen.get_noc_addr(id, offset, noc), n, noc);
}

// THIS API IS DEPRECATED AND WILL BE REMOVED SOON (wheel dataflow_api.h:1455-1600): noc_async_write_tile exists only
// for these three generators, and noc_async_write_page's InterleavedAddrGen / InterleavedPow2AddrGenFast overloads;
// same markings and messages as the wheel's. Each forwards to the generic noc_async_write_page.
template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_page(const uint32_t id, const InterleavedAddrGen<DRAM>& addrgen,
                                       uint32_t src_local_l1_addr, uint32_t size = 0, uint32_t offset = 0,
                                       uint8_t noc = noc_index) {
    noc_async_write_page<InterleavedAddrGen<DRAM>, false>(id, addrgen, src_local_l1_addr, size, offset, noc);
}
template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_tile(const uint32_t id, const InterleavedAddrGen<DRAM>& addrgen,
                                       uint32_t src_local_l1_addr, uint8_t noc = noc_index) {
    noc_async_write_page<InterleavedAddrGen<DRAM>, false>(id, addrgen, src_local_l1_addr, 0, 0, noc);
}
template <bool DRAM, uint32_t tile_hw>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_tile(const uint32_t id, const InterleavedAddrGenFast<DRAM, tile_hw>& addrgen,
                                       uint32_t src_local_l1_addr, uint8_t noc = noc_index) {
    noc_async_write_page<InterleavedAddrGenFast<DRAM, tile_hw>, false>(id, addrgen, src_local_l1_addr, 0, 0, noc);
}
template <typename DSpec>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_tile(const uint32_t id, const TensorAccessor<DSpec>& addrgen,
                                       uint32_t src_local_l1_addr, uint8_t noc = noc_index) {
    noc_async_write_page<TensorAccessor<DSpec>, false>(id, addrgen, src_local_l1_addr, 0, 0, noc);
}
template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_page(const uint32_t id, const InterleavedPow2AddrGenFast<DRAM>& addrgen,
                                       uint32_t src_local_l1_addr, uint32_t size = 0, uint32_t offset = 0,
                                       uint8_t noc = noc_index) {
    noc_async_write_page<InterleavedPow2AddrGenFast<DRAM>, false>(id, addrgen, src_local_l1_addr, size, offset, noc);
}

// Each waits on NoC `noc`'s counters only (noc_nonposted_writes_acked[noc], noc_nonposted_writes_num_issued[noc],
// noc_nonposted_atomics_acked[noc]): writes and atomics issued on the other NoC are not waited for.
FORCE_INLINE void noc_async_write_barrier(uint8_t noc = noc_index) { emu::noc_write_barrier(noc); }
FORCE_INLINE void noc_async_writes_flushed(uint8_t noc = noc_index) { emu::noc_writes_flushed(noc); }
FORCE_INLINE void noc_async_posted_writes_flushed(uint8_t noc = noc_index) { emu::noc_writes_flushed(noc); }
FORCE_INLINE void noc_async_atomic_barrier(uint8_t noc_idx = noc_index) { emu::noc_atomic_barrier(noc_idx); }
// ---- transaction ids (wheel api/dataflow/dataflow_api.h:2470-2745)
FORCE_INLINE void noc_async_read_set_trid(uint32_t trid = 0, uint8_t noc = noc_index) {
    (void)trid;
    (void)noc;  // the sticky command-buffer register is not modelled: only *_with_trid transfers carry a trid
}
FORCE_INLINE void noc_async_write_set_trid(uint32_t trid = 0, uint8_t noc = noc_index) {
    (void)trid;
    (void)noc;
}
template <bool skip_ptr_update = false, bool skip_cmdbuf_chk = false>
FORCE_INLINE void noc_async_read_one_packet_with_state_with_trid(uint32_t src_base_addr, uint32_t src_addr,
                                                                 uint32_t dest_addr, uint32_t trid = 0,
                                                                 uint8_t noc = noc_index) {
    auto& s = emu_state::read_state(noc);
    emu::noc_read_trid(s.src_hi | uint64_t(src_base_addr + src_addr), dest_addr, s.size, trid, noc);
}
template <bool update_counter = true, bool posted = false>
FORCE_INLINE void noc_async_write_one_packet_with_trid(uint32_t src_local_l1_addr, uint64_t dst_noc_addr,
                                                       uint32_t size, uint32_t trid, uint8_t cmd_buf = 0,
                                                       uint8_t noc = noc_index, uint8_t vc = NOC_UNICAST_WRITE_VC) {
    (void)cmd_buf;
    (void)vc;
    if (size > NOC_MAX_BURST_SIZE)
        emu::fault("noc_async_write_one_packet_with_trid: size %u exceeds NOC_MAX_BURST_SIZE (%u)", size,
                   NOC_MAX_BURST_SIZE);
    emu::noc_write_trid(src_local_l1_addr, dst_noc_addr, size, trid, noc);
}
// Transaction ids are counted per NIU (NIU_MST_REQS_OUTSTANDING_ID(trid) of NoC `noc`).
FORCE_INLINE void noc_async_read_barrier_with_trid(uint32_t trid, uint8_t noc = noc_index) {
    emu::noc_read_barrier_trid(trid, noc);
}
FORCE_INLINE void noc_async_write_barrier_with_trid(uint32_t trid, uint8_t noc = noc_index) {
    emu::noc_write_barrier_trid(trid, noc);
}
FORCE_INLINE void noc_async_write_flushed_with_trid(uint32_t trid, uint8_t noc = noc_index) {
    emu::noc_write_barrier_trid(trid, noc);
}

FORCE_INLINE void noc_async_full_barrier(uint8_t noc_idx = noc_index) {
    emu::noc_read_barrier(noc_idx);
    emu::noc_write_barrier(noc_idx);
    emu::noc_atomic_barrier(noc_idx);
}

// ---------------------------------------------------------------------------------------------- semaphores
template <ProgrammableCoreType type = ProgrammableCoreType::TENSIX>
FORCE_INLINE uintptr_t get_semaphore(uint32_t semaphore_id) {
    static_assert(type == ProgrammableCoreType::TENSIX, "the emulator models Tensix semaphores only");
    return emu::semaphore_addr(semaphore_id);
}

FORCE_INLINE void noc_semaphore_wait(volatile tt_l1_ptr uint32_t* sem_addr, uint32_t val) {
    emu::sem_wait(sem_addr, val, false);
}
FORCE_INLINE void noc_semaphore_wait_min(volatile tt_l1_ptr uint32_t* sem_addr, uint32_t val) {
    emu::sem_wait(sem_addr, val, true);
}
FORCE_INLINE void noc_semaphore_set(volatile tt_l1_ptr uint32_t* sem_addr, uint32_t val) { emu::sem_set(sem_addr, val); }

inline void noc_semaphore_set_remote(uint32_t src_local_l1_addr, uint64_t dst_noc_addr, uint8_t noc = noc_index) {
    emu::noc_write(src_local_l1_addr, dst_noc_addr, 4, noc);
}

inline void noc_semaphore_set_multicast(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                                        uint32_t num_dests, bool linked = false, uint8_t noc = noc_index) {
    (void)linked;
    emu::noc_write_multicast(src_local_l1_addr, dst_noc_addr_multicast, 4, num_dests, false, noc);
}

inline void noc_semaphore_set_multicast_loopback_src(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                                                     uint32_t num_dests, bool linked = false, uint8_t noc = noc_index) {
    (void)linked;
    emu::noc_write_multicast(src_local_l1_addr, dst_noc_addr_multicast, 4, num_dests, true, noc);
}

template <bool posted = false>
FORCE_INLINE void noc_semaphore_inc(uint64_t addr, uint32_t incr, uint8_t noc_id = noc_index,
                                    uint8_t vc = NOC_UNICAST_WRITE_VC) {
    (void)vc;
    emu::noc_atomic_inc(addr, incr, noc_id);
}

template <bool posted = false>
FORCE_INLINE void noc_semaphore_inc_multicast(uint64_t addr, uint32_t incr, uint32_t num_dests,
                                              uint8_t noc_id = noc_index, uint8_t vc = NOC_MULTICAST_WRITE_VC) {
    (void)vc;
    emu::noc_atomic_inc_multicast(addr, incr, num_dests, noc_id);
}

template <InlineWriteDst dst_type = InlineWriteDst::DEFAULT, bool posted = false, bool flush = true>
FORCE_INLINE void noc_inline_dw_write(uint64_t addr, uint32_t val, uint8_t be = 0xF, uint8_t noc = noc_index,
                                      uint8_t vc = NOC_UNICAST_WRITE_VC, uint32_t customized_src_addr = 0) {
    (void)vc;
    (void)customized_src_addr;
    static_assert(dst_type != InlineWriteDst::REG, "the emulator does not model stream registers");
    emu::noc_inline_write(addr, val, be, noc);
}

template <InlineWriteDst dst_type = InlineWriteDst::DEFAULT, bool posted = false, bool flush = true>
FORCE_INLINE void noc_inline_mcast_dw_write(uint64_t addr, uint32_t val, uint32_t num_dests, uint8_t be = 0xF,
                                            uint8_t noc = noc_index, uint8_t vc = NOC_MULTICAST_WRITE_VC) {
    (void)vc;
    if (be != 0xF) emu::fault("noc_inline_mcast_dw_write: partial byte enables are not supported by the emulator");
    emu::noc_inline_write_multicast(addr, val, num_dests, noc);
}

#include "api/tensor/tensor_accessor.h"
