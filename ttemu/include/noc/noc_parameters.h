// Emulator copy of the address-encoding, size and alignment constants of Wormhole's noc/noc_parameters.h (wheel
// hw/inc/internal/tt-1xx/wormhole/noc/noc_parameters.h:18-26, 163-164, 213-299; the kernel build puts that directory
// on the include path, so kernels and helper headers include it as "noc/noc_parameters.h"). NOC command / register
// definitions are not reproduced: the emulator has no NOC registers.
#pragma once

#include <cstdint>

#define VIRTUAL_TENSIX_START_X 18
#define VIRTUAL_TENSIX_START_Y 18
#define COORDINATE_VIRTUALIZATION_ENABLED 1
#define NUM_NOCS 2
#define NUM_TENSIXES 80
#define NOC_MAX_TRANSACTION_ID 0xF
#define NOC_MAX_TRANSACTION_ID_COUNT 255

#define NOC_ADDR_LOCAL_BITS 36
#define NOC_ADDR_NODE_ID_BITS 6

#define NOC_PAYLOAD_WIDTH 256
#define NOC_WORD_BYTES (NOC_PAYLOAD_WIDTH / 8)
#define NOC_MAX_BURST_WORDS 256
#define NOC_MAX_BURST_SIZE (NOC_MAX_BURST_WORDS * NOC_WORD_BYTES)
#define NOC_WORD_OFFSET_MASK (NOC_WORD_BYTES - 1)
#define MEM_WORD_BYTES 16
#define NOC_VCS 16
#define NOC_BCAST_VC_START 4

#define NOC_NODE_ID_MASK ((((uint64_t)0x1) << NOC_ADDR_NODE_ID_BITS) - 1)
#define NOC_LOCAL_ADDR_MASK ((((uint64_t)0x1) << NOC_ADDR_LOCAL_BITS) - 1)
#define NOC_LOCAL_ADDR_OFFSET(addr) ((addr) & NOC_LOCAL_ADDR_MASK)
#define NOC_UNICAST_ADDR_X(addr) (((addr) >> NOC_ADDR_LOCAL_BITS) & NOC_NODE_ID_MASK)
#define NOC_UNICAST_ADDR_Y(addr) (((addr) >> (NOC_ADDR_LOCAL_BITS + NOC_ADDR_NODE_ID_BITS)) & NOC_NODE_ID_MASK)
#define NOC_MCAST_ADDR_END_X(addr) (((addr) >> NOC_ADDR_LOCAL_BITS) & NOC_NODE_ID_MASK)
#define NOC_MCAST_ADDR_END_Y(addr) (((addr) >> (NOC_ADDR_LOCAL_BITS + NOC_ADDR_NODE_ID_BITS)) & NOC_NODE_ID_MASK)
#define NOC_MCAST_ADDR_START_X(addr) (((addr) >> (NOC_ADDR_LOCAL_BITS + 2 * NOC_ADDR_NODE_ID_BITS)) & NOC_NODE_ID_MASK)
#define NOC_MCAST_ADDR_START_Y(addr) (((addr) >> (NOC_ADDR_LOCAL_BITS + 3 * NOC_ADDR_NODE_ID_BITS)) & NOC_NODE_ID_MASK)

#define NOC_XY_ADDR(x, y, addr)                                                    \
    ((((uint64_t)(y)) << (NOC_ADDR_LOCAL_BITS + NOC_ADDR_NODE_ID_BITS)) |          \
     (((uint64_t)(x)) << NOC_ADDR_LOCAL_BITS) | ((uint64_t)(addr)))
#define NOC_MULTICAST_ADDR(x_start, y_start, x_end, y_end, addr)                    \
    ((((uint64_t)(x_start)) << (NOC_ADDR_LOCAL_BITS + 2 * NOC_ADDR_NODE_ID_BITS)) | \
     (((uint64_t)(y_start)) << (NOC_ADDR_LOCAL_BITS + 3 * NOC_ADDR_NODE_ID_BITS)) | \
     (((uint64_t)(x_end)) << NOC_ADDR_LOCAL_BITS) |                                 \
     (((uint64_t)(y_end)) << (NOC_ADDR_LOCAL_BITS + NOC_ADDR_NODE_ID_BITS)) | ((uint64_t)(addr)))
#define NOC_COORD_REG_OFFSET 4
#define NOC_XY_ENCODING(x, y) \
    ((((uint32_t)(y)) << ((NOC_ADDR_LOCAL_BITS % 32) + NOC_ADDR_NODE_ID_BITS)) | (((uint32_t)(x)) << (NOC_ADDR_LOCAL_BITS % 32)))
#define NOC_MULTICAST_ENCODING(x_start, y_start, x_end, y_end)                             \
    ((((uint32_t)(x_start)) << ((NOC_ADDR_LOCAL_BITS % 32) + 2 * NOC_ADDR_NODE_ID_BITS)) | \
     (((uint32_t)(y_start)) << ((NOC_ADDR_LOCAL_BITS % 32) + 3 * NOC_ADDR_NODE_ID_BITS)) | \
     (((uint32_t)(x_end)) << (NOC_ADDR_LOCAL_BITS % 32)) |                                 \
     (((uint32_t)(y_end)) << ((NOC_ADDR_LOCAL_BITS % 32) + NOC_ADDR_NODE_ID_BITS)))
#define NOC_XY_ADDR2(xy, addr) ((((uint64_t)(xy)) << NOC_ADDR_LOCAL_BITS) | ((uint64_t)(addr)))
#define NOC_LOCAL_ADDR(addr) NOC_LOCAL_ADDR_OFFSET(addr)

#define NOC_L1_READ_ALIGNMENT_BYTES 16
#define NOC_L1_WRITE_ALIGNMENT_BYTES 16
#define NOC_PCIE_READ_ALIGNMENT_BYTES 32
#define NOC_PCIE_WRITE_ALIGNMENT_BYTES 16
#define NOC_DRAM_READ_ALIGNMENT_BYTES 32
#define NOC_DRAM_WRITE_ALIGNMENT_BYTES 16
#define NOC_REG_ALIGNMENT_BYTES 4

// noc_nonblocking_api.h:60: the coordinate bits of a NOC address start at bit 32 of the 64-bit address.
constexpr uint32_t NOC_ADDR_COORD_SHIFT = 32;
