// The contract between kernel code (compiled against the emulator's implementation of the tt-metal kernel API
// in include/api/...) and the emulator runtime (csrc/). Kernel-facing API headers call only what is declared
// here; the runtime implements it. Every function acts on the core and kernel of the calling thread.
//
// L1 addresses are what kernels see on silicon (byte offsets into a core's 1.5 MB L1, as returned by
// get_write_ptr / get_semaphore); emu::l1() turns one into a host pointer after a bounds check.
#pragma once

#include <cstddef>
#include <cstdint>

namespace timing {
class Risc;  // emu/timing.h: one RISC's event trace of the timing model
}

namespace emu {

// Which RISC-V a kernel thread stands for. Compute = the three TRISCs, emulated as one thread.
enum class Processor : uint8_t { Brisc = 0, Ncrisc = 1, Compute = 2 };

// Numeric values are tt::DataFormat's: every value of the wheel's Wormhole enum
// (hw/inc/internal/tt-1xx/wormhole/wormhole_b0_defines/tensix_types.h:214-234), plus Fp8_e4m3, whose host value
// (26) the JIT build writes into the per-CB format tables for an FP8_E4M3 CB.
enum class DataFormat : uint8_t {
    Float32 = 0,
    Float16 = 1,
    Bfp8 = 2,
    Bfp4 = 3,
    Bfp2 = 11,
    Float16_b = 5,
    Bfp8_b = 6,
    Bfp4_b = 7,
    Bfp2_b = 15,
    Lf8 = 10,
    Int8 = 14,
    UInt8 = 30,
    UInt16 = 9,
    Int32 = 8,
    UInt32 = 24,
    Tf32 = 4,
    Fp8_e4m3 = 26,
    testMan7 = 0x82,
    testMan2 = 0x8A,
    Invalid = 0xff,
};

struct ComputeConfig {
    uint8_t math_fidelity = 4;  // 0 LoFi, 2 HiFi2, 3 HiFi3, 4 HiFi4 (ttnn.MathFidelity values)
    bool math_approx_mode = false;
    bool fp32_dest_acc_en = false;
    bool dst_full_sync_en = false;
    bool bfp8_pack_precise = false;
};

enum class Counter : uint8_t {
    TilesUnpacked = 0,  // tiles read out of CBs by the unpacker (copy_tile, matmul, eltwise, reduce inputs)
    TilesPacked,        // tiles written into CBs by pack_tile
    MatmulTiles,        // 32x32x32 tile products
    FpuTiles,           // eltwise / reduce tile operations on the FPU
    SfpuTiles,          // exp / recip / max ... tile operations on the SFPU
    NumCounters
};

// ---- circular buffers of the calling thread's core (semantics of api/dataflow/circular_buffer.h,
//      api/compute/cb_api.h). Blocking calls wait with a deadline and report a hang, never spin forever.
void cb_wait_front(uint32_t cb, uint32_t num_pages);
void cb_pop_front(uint32_t cb, uint32_t num_pages);
void cb_reserve_back(uint32_t cb, uint32_t num_pages);
void cb_push_back(uint32_t cb, uint32_t num_pages);
// record_wait: a kernel's own poll (the API's cb_pages_*): a successful poll is recorded in the timing trace as the
// wait it stands for (failed polls are not: their number depends on the host), and a failed one yields the host CPU
// (the kernel is about to poll again). Emulator-internal checks pass false: a check that fails does not yield.
bool cb_pages_available_at_front(uint32_t cb, uint32_t num_pages, bool record_wait = false);
bool cb_pages_reservable_at_back(uint32_t cb, uint32_t num_pages, bool record_wait = false);
uint32_t cb_read_addr(uint32_t cb);   // L1 address of the front page (get_read_ptr)
uint32_t cb_write_addr(uint32_t cb);  // L1 address of the back page (get_write_ptr)
uint32_t cb_page_size(uint32_t cb);
uint32_t cb_total_size(uint32_t cb);  // bytes of the CB's ring
uint32_t cb_base_addr(uint32_t cb);   // L1 address (host form) of the ring's start
DataFormat cb_data_format(uint32_t cb);
// Move this RISC's local read / write pointer of `cb` to `l1_addr` (inside the CB's ring, its end included;
// DataflowBuffer's evil_set_read_ptr / evil_set_write_ptr, LocalCBInterface's fifo_rd_ptr / fifo_wr_ptr).
void cb_set_read_addr(uint32_t cb, uint32_t l1_addr);
void cb_set_write_addr(uint32_t cb, uint32_t l1_addr);

// ---- memory
uint8_t* l1(uint32_t l1_addr, uint32_t num_bytes);  // this core's L1; faults outside allocated regions

// ---- kernel context
const ComputeConfig& compute_config();
// Per-CB tile shapes of the calling thread's compute kernel: the JIT's tables of its chlkc_descriptors.h (32 entries
// each, indexed by CB), which the kernel library exports through emu_cb_tile_shapes (emu/compute_state.h); nullptr
// when the kernel has none (every tile then 32x32, four 16x16 faces). The compute model's out-of-line functions
// (csrc/compute.cpp) read tile shapes here because the tables are compile-time constants of the kernel.
struct CbTileShapes {
    const uint8_t* unpack_num_faces;
    const uint8_t* unpack_face_r;
    const uint8_t* pack_num_faces;
    const uint8_t* pack_face_r;
};
const CbTileShapes* cb_tile_shapes();
void count(Counter c, uint64_t n = 1);
[[noreturn]] void fault(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// ==== Data movement and kernel context (added for api/dataflow/*, api/tensor/* and emu/kernel_args.h) ============
// Host mapping of L1: the runtime maps core i's L1 at host address kL1HostBase + i * kL1SlotBytes (below 4 GiB), so
// an "L1 address" a kernel holds (get_write_ptr, get_semaphore, get_arg_addr) is that core's base + offset and can be
// dereferenced directly. NOC addresses carry the plain offset (as on silicon); emu::noc_xy_addr translates.
constexpr uint32_t kL1HostBase = 0x40000000u;
constexpr uint32_t kL1SlotBytes = 2u << 20;

uint32_t l1_base();                   // host address of offset 0 of the calling core's L1
uint32_t my_logical_x();              // the calling core, logical coordinates
uint32_t my_logical_y();
uint32_t my_noc_x();                  // the calling core, (translated) NOC coordinates
uint32_t my_noc_y();
Processor my_processor();
const char* kernel_name();

// Kernel arguments: L1 address (host form) of per-core runtime arg `idx` / common runtime arg `idx`; faults when idx
// is not below the number of args set for this kernel on this core.
uint32_t arg_addr(uint32_t idx);
uint32_t common_arg_addr(uint32_t idx);
uint32_t semaphore_addr(uint32_t id);  // L1 address (host form) of semaphore `id` on the calling core

// Every NOC call names the NoC it issues on (0 or 1; the kernel API's `noc` argument, noc_index by default): its route,
// its NIU, its transaction counters. A barrier on NoC n completes only what was issued on NoC n, as on silicon
// (noc_reads_num_issued[noc], noc_nonposted_writes_acked[noc], ... are per NoC).
//
// Node coordinates are the issuing NoC's (tt-metal's dram_bank_to_noc_xy[noc] / l1_bank_to_noc_xy[noc]): on Wormhole
// the NIUs translate worker coordinates (x, y >= 16, the same on both NoCs) but not the raw ones below 16 (DRAM
// banks): NoC 1's raw coordinates are NoC 0's mirrored, (noc_cols - 1 - x, noc_rows - 1 - y). A DRAM address built
// for one NoC and issued on the other reaches, on silicon, the mirrored node: a Tensix core by its raw coordinates
// (Wormhole's DRAM columns x = 0 and 5 mirror onto Tensix columns 9 and 4). The emulator addresses workers by their
// translated coordinates only, so such a transfer is a fault that names both NoCs. Blackhole translates every
// coordinate (the same on both NoCs), and its bank tables name a different tile of the bank's channel per NoC (the soc
// descriptor's dram_view worker_endpoint [NoC 0's, NoC 1's]): both reach the bank. The timing model routes a DRAM
// transfer on NoC n to the bank's NoC n tile, whichever tile of the channel the address names (kernels take DRAM
// addresses from the bank tables).

// DRAM banks (tt-metal numbering: 12 banks on Wormhole, page i of an interleaved buffer lives in bank i % 12).
uint32_t num_dram_banks();
uint32_t dram_bank_noc_x(uint32_t bank, uint8_t noc);  // dram_bank_to_noc_xy[noc][bank]
uint32_t dram_bank_noc_y(uint32_t bank, uint8_t noc);
uint32_t dram_bank_offset(uint32_t bank);  // bank_to_dram_offset: added to the buffer address in that bank

// L1 banks (tt-metal numbering, one per compute core: page i of an L1-interleaved buffer lives in bank
// i % num_l1_banks()); NOC coordinates are the bank core's translated coordinates (the same on both NoCs). Fault for
// bank >= num_l1_banks().
uint32_t num_l1_banks();
uint32_t l1_bank_noc_x(uint32_t bank);
uint32_t l1_bank_noc_y(uint32_t bank);
uint32_t l1_bank_offset(uint32_t bank);  // bank_to_l1_offset (0)

// NOC. Addresses use Wormhole's encoding (NOC_ADDR_LOCAL_BITS 36, NOC_ADDR_NODE_ID_BITS 6).
uint64_t noc_xy_addr(uint32_t x, uint32_t y, uint32_t addr);  // get_noc_addr(x, y, addr): L1 host form -> offset
uint64_t noc_multicast_addr(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, uint32_t addr);
void noc_read(uint64_t src_noc_addr, uint32_t dst_l1_addr, uint32_t size, uint8_t noc);  // completes by the barrier
void noc_write(uint32_t src_l1_addr, uint64_t dst_noc_addr, uint32_t size, uint8_t noc);
// include_self: loopback_src variants (the sender in the rectangle receives too; num_dests counts it).
void noc_write_multicast(uint32_t src_l1_addr, uint64_t dst_mcast_addr, uint32_t size, uint32_t num_dests,
                         bool include_self, uint8_t noc);
void noc_inline_write(uint64_t dst_noc_addr, uint32_t value, uint8_t byte_enable, uint8_t noc);
void noc_inline_write_multicast(uint64_t dst_mcast_addr, uint32_t value, uint32_t num_dests, uint8_t noc);
void noc_atomic_inc(uint64_t dst_noc_addr, uint32_t incr, uint8_t noc);
void noc_atomic_inc_multicast(uint64_t dst_mcast_addr, uint32_t incr, uint32_t num_dests, uint8_t noc);
void noc_read_barrier(uint8_t noc);
void noc_write_barrier(uint8_t noc);   // writes done (and acked)
void noc_writes_flushed(uint8_t noc);  // writes' sources read out of L1
void noc_atomic_barrier(uint8_t noc);
// Transfers tagged with a NOC transaction id (0..kMaxNocTrid); the trid barriers complete / flush only those (of
// their NoC: each NIU counts its own transaction ids).
constexpr uint32_t kMaxNocTrid = 0xF;  // Wormhole NOC_MAX_TRANSACTION_ID (noc/noc_parameters.h)
void noc_read_trid(uint64_t src_noc_addr, uint32_t dst_l1_addr, uint32_t size, uint32_t trid, uint8_t noc);
void noc_read_barrier_trid(uint32_t trid, uint8_t noc);
bool noc_read_trid_flushed(uint32_t trid, uint8_t noc);  // completes the trid's reads (they complete when polled)
void noc_write_trid(uint32_t src_l1_addr, uint64_t dst_noc_addr, uint32_t size, uint32_t trid, uint8_t noc);
void noc_write_barrier_trid(uint32_t trid, uint8_t noc);

// Firmware's zero-filled L1 block on every core (wheel wormhole/dev_mem_map.h: MEM_ZEROS_BASE =
// (MEM_MAILBOX_END + 31) & ~31 with MEM_MAILBOX_END = 16 + 13312; MEM_ZEROS_SIZE = 512), readable over the NOC.
constexpr uint32_t kMemZerosBase = ((16u + 13312u) + 31u) & ~31u;
constexpr uint32_t kMemZerosSize = 512;

// Semaphores / flags in the calling core's L1 (blocking waits report hangs like CB waits).
void sem_wait(volatile uint32_t* addr, uint32_t value, bool at_least);
void sem_set(volatile uint32_t* addr, uint32_t value);
// invalidate_l1_cache(): the host's memory is coherent, so only sanitizer builds act on it (ThreadSanitizer learns
// that the writes delivered to this core so far happen before what the calling RISC does next).
void l1_cache_invalidated();

// The calling thread's timing trace (docs/TIMING.md, section 5), nullptr when the timing model is off. Hooks only
// append events to it (no locks, nothing shared); the runtime replays every trace after the kernels finished.
// Compute headers hook with `if (auto* tr = emu::timing_risc()) tr->compute(...)` (include "emu/timing.h").
timing::Risc* timing_risc();
// Timing-only run (docs/TIMING.md, section 6): compute headers skip their arithmetic (FPU, SFPU, unpack / pack
// conversions) but keep every check, CB access and timing event, so durations equal a full run's.
bool timing_only();

void dprint(const char* text);  // DPRINT output (stderr, prefixed with core and kernel)
void poll_yield();              // called by non-blocking polls that found nothing (lets other cores run)

}  // namespace emu
