// Cycle-approximate timing model of a Wormhole B0 or Blackhole chip for the host emulator (issue 12), the replay
// side: the runtime and the timing C API include this file; kernels include only the recording side (emu/timing.h),
// so nothing here recompiles a kernel. The chip is a runtime value (`Chip`: clock, NoC grid and flit, link
// bandwidth, maximum packet, DRAM rates and request rate, NoC issue and latency costs; Wormhole B0's are k::'s,
// Blackhole's kbh::'s, docs/BLACKHOLE.md section 3).
//
// WHAT IT IS. Every RISC of a program (BRISC, NCRISC, and the compute TRISCs as one stream with three lanes:
// unpack, math, pack) gets a virtual clock in cycles of the chip's AI clock (Wormhole 1 GHz, Blackhole 1.35 GHz).
// Data movement costs issue time on the RISC, latency by hop distance on the 2D-torus NoC (NoC 0 routes +x then +y,
// NoC 1 routes -y then -x), and bandwidth by packet size; every DRAM bank (one GDDR6 channel each: 12 banks on
// Wormhole, 8 on a P150), every NoC link and every
// NIU is a shared resource with contention (capacity in time bins taken per packet, pipelined cut-through). Compute
// API calls cost cycles by op, math fidelity, SFPU function / approximation mode and tile format. CB pushes/pops and
// semaphore updates carry a timestamp: a consumer that waits starts no earlier than the producer's push (plus the
// transfer). Barriers wait for the last outstanding transfer of their RISC on their NoC (each NIU counts its own).
//
// HOW IT STAYS DETERMINISTIC. The emulator runs one host thread per RISC, scheduled by the host OS; charging shared
// resources in host order would make durations depend on scheduling. So the model is split in two:
//   1. RECORDING (during the functional run): each RISC appends events to its own `timing::Risc` trace (no locks,
//      no shared state: one object per emulator thread, created before threads start). The hooks only record.
//   2. REPLAY (`Engine::run`, after all threads joined): a discrete-event simulation pops RISCs in virtual-time
//      order (ties broken by RISC id), charges shared resources in that order, and resolves every wait (CB, DST,
//      semaphore) against the producer's timestamp. Same traces -> same durations, whatever the host did.
// A RISC's trace is deterministic as long as its control flow does not depend on host timing. The one exception is
// a non-blocking poll (cb_pages_available_at_front & co.): the number of FAILED polls is host-dependent, so failed
// polls are not recorded and the poll that succeeds is recorded as the blocking wait it stands for.
//
// FLOW CONTROL (Params::flow_control, every variant but "no_flow_control"): command buffers, reads in flight per
// NIU and per transaction id, DRAM controller queues, and back-pressure from a sink that cannot take a packet in
// into the router buffers behind it (head-of-line blocking), up to the source NIU (docs/TIMING.md, section 3b).
//
// APPROXIMATIONS (see docs/TIMING.md for the full list): resources are served first-come-first-served in the order
// packets are ISSUED in virtual time (not the order they arrive at the resource); links are shared fluidly, and
// back-pressure starts only at sinks; a multicast reserves the union of its unicast routes once; TRISC lanes of
// one core are serialised only through their real dependencies (operands, DST double buffer, CBs).
//
// Every constant is in ONE table (`timing::k`, mirrored in `constant_table()` for export and in docs/TIMING.md),
// each with its public source and a kind: M measured on silicon, N nominal/spec, C a public tool's constant,
// D derived from the others (derivation stated).
#pragma once
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include "emu/timing.h"

namespace timing {

// =====================================================================================================================
// THE TABLE OF CONSTANTS. Kind: M measured on silicon, N nominal (spec/docs), C a public tool's constant, D derived.
// Sources (short names expanded in docs/TIMING.md):
//   [isa-noc]  tt-isa-documentation WormholeB0/NoC/README.md ("Performance" table)
//   [isa-dram] tt-isa-documentation WormholeB0/DRAMTile/README.md ("Performance" tables)
//   [dm-dram]  tt-metal tests/tt_metal/tt_metal/data_movement/documentation/perf_plots/wormhole_b0/
//              "DRAM Interleaved Packet Sizes.md"
//   [dm-1f1]   same folder, "One from One Packet Sizes.md";  [dm-1t1] same folder, "One to One Packet Sizes.md"
//   [npe]      tenstorrent/tt-npe tt_npe/cpp/include/device_models/wormhole_b0.hpp
//   [me]       tt-metal tech_reports/matrix_engine/matrix_engine.md; [gemm] tech_reports/GEMM_FLOPS/GEMM_FLOPS.md
//   [exp]      tt-metal PR #43973 (accurate bf16 exp with replay, Wormhole), PR #32968 (exp+fast+approx, Wormhole)
//   [soc]      the ttnn wheel's tt_metal/soc_descriptors/wormhole_b0_80_arch.yaml
//   [vec]      /work/shared/WORMHOLE.md from tt-isa-documentation VectorUnit (32 lanes, one instruction a cycle)
//   [disp]     tt-metal #12074 and the llama3_70b_galaxy perf targets (op-to-op gap in traced decode)
//   [sfpu-wh]  tt-metal PR #54938 (Wormhole n300 SFPU MATH_ISOLATE cycles, tile_cnt 8 x loop_factor 16)
//   [dm-mc]    same folder as [dm-dram], "One to All Multicast 2x2 / 5x5 Packet Sizes without Loopback.md"
//   [dram-req] tt-metal #55898 (DRAM endpoint read-request rate, Blackhole ~16.4, Wormhole ~6.8 cycles per NoC)
// =====================================================================================================================
namespace k {
// ---- clock and NoC fabric
constexpr double kClockGHz = 1.0;               // N [isa-dram]/[gemm]: Wormhole AI clock 1 GHz
constexpr int kNocCols = 10;                     // N [soc]: NoC grid 10 x 12 (x 0..9, y 0..11), a 2D torus
constexpr int kNocRows = 12;                     // N [soc]
constexpr double kFlitBytes = 32;                // N [isa-noc]: one flit = 256 bits; a link moves 1 flit/cycle
constexpr uint32_t kMaxPacketBytes = 8192;       // N [isa-noc]: 1 header + up to 256 data flits per packet
constexpr double kHopCycles = 9;                 // N [isa-noc]: router -> neighbouring router
constexpr double kNiuCycles = 5;                 // N [isa-noc]: NIU <-> its router, each way
// ---- endpoint rates (bytes per cycle)
constexpr double kWorkerReadInjectBpc = 28.7;    // M [dm-1f1]: one core reading another saturates at 28.7 B/cycle
constexpr double kWorkerWriteInjectBpc = 31.1;   // M [dm-1t1]: one core writing another saturates at 31.1 B/cycle
constexpr double kDramReadBpc = 22.3;            // M [isa-dram]: one GDDR6 channel read, 22.2-22.3 GB/s
constexpr double kDramWriteBpc = 22.0;           // M [isa-dram]: one GDDR6 channel write, 21.8-22.0 GB/s
constexpr double kDramSmallWriteCycles = 65;     // D [dm-dram]: 256 DRAM writes of 32 / 64 B take 16558 / 17049
constexpr uint32_t kDramSmallWriteBytes = 128;   //   cycles (65-67 each) where 128 B ones take 6277 (issue bound):
                                                 //   a write under 128 B holds its channel ~65 cycles (its
                                                 //   own latency is unchanged: 1 x 32 B takes 401 cycles)
constexpr double kDramRequestCycles = 6.8;       // M [dram-req]: a Wormhole DRAM endpoint accepts one read request
                                                 //   per ~6.8 cycles per NoC, whatever the size or the requesters
// ---- fixed latencies (cycles)
constexpr double kNocIssueCycles = 20;           // D [dm-1f1]/[dm-dram]: 256 back-to-back 32 B reads take 5145 /
                                                 //   5469 cycles, ~20 cycles per transaction on the issuing RISC
constexpr double kReadServiceCycles = 46;        // D [dm-1f1]: single <=128 B core read + barrier = 290 cycles =
                                                 //   issue + 4 NIU legs + 22 hops + flits + this remainder
constexpr double kDramAccessCycles = 94;         // D [dm-dram] - [dm-1f1]: single <=128 B DRAM read = 382-384
                                                 //   cycles vs 290 for a core read at the same distance
constexpr double kWriteAckCycles = 52;           // D [dm-1t1]: single <=128 B write + barrier = 294-302 cycles
constexpr double kMcastHoldPerDoubling = 42.7;  // D [dm-mc]: a multicast holds its sender for issue + H(n) +
constexpr double kMcastHoldOffset = 34.4;        //   injection, H(n) = 42.7 log2(n) - 34.4 for n destinations: fit
                                                 //   to 256 x 32 B multicasts taking 54.2 (2x2, 3 destinations) and
                                                 //   182.2 (5x5, 24) cycles each; 256 x 8 KB then give 25.8 and
                                                 //   18.4 B/cycle (measured 25.9 and 18.2)
constexpr double kAtomicCycles = 10;             // D [npe]: write model 40 + 10/hop; L1 atomic at the receiver
// The next three, kTileOpOverhead, kRecipApproxTile, kUnpackBpc and kPackBpc have no public figure: kind A
// (assumed), nominal values here, the range each is varied over in assumed_table() (the model's variants).
constexpr double kLocalPollCycles = 10;          // A: a RISC's poll of a local counter/semaphore (a few loads)
constexpr double kCbApiCycles = 10;              // A: cb_* bookkeeping on the calling RISC (a few loads/stores)
constexpr double kCbHandoffCycles = 5;           // A: tiles_received/acked register update seen by the other RISC
// ---- compute (cycles per 32x32 tile)
constexpr double kMatmulTileLoFi = 16;           // N [me]/[gemm]: 8x16x16 per cycle = 4096 MAC; x fidelity phases
                                                 //   (LoFi 1, HiFi2 2, HiFi3 3, HiFi4 4 -> 16/32/48/64)
constexpr double kEltwiseTile = 8;               // N [me]: 8x16 elementwise per cycle; mul x fidelity phases
constexpr double kReduceTile = 4;                // N [me]: one 16x16 reduce per cycle; sum/avg x fidelity phases
constexpr double kCopyTile = 8;                  // D [me]: datacopy moves 8x16 rows per cycle like ELWADD
constexpr double kTransposeTile = 16;            // D [me]: transpose_xy through srcB, two passes of kCopyTile
constexpr double kSfpuStepsPerTile = 32;         // N [vec]: 32 lanes -> 32 steps a tile per SFPU instruction
constexpr double kExpAccurateTile = 748;         // M [exp] PR #43973: _sfpu_exp_21f_bf16_ with replay, Wormhole
constexpr double kExpApproxTile = 189;           // M [exp] PR #32968: exp+fast+approx, Wormhole bf16
constexpr double kRecipTile = 1059;              // M [sfpu-wh] PR #54938: reciprocal_compat 135610 cycles for
                                                 //   8 tiles x 16 loops (MATH_ISOLATE, Float16_b); the wheel's
                                                 //   rewritten recip is not measured publicly: an upper bound
constexpr double kRecipApproxTile = 1059;        // A: no public Wormhole figure for approximate recip: as exact
constexpr double kSfpuSimpleTile = 298;          // M [sfpu-wh] PR #54938: relu_max (load, min, max, store a step)
                                                 //   38205 cycles for 8 tiles x 16 loops (MATH_ISOLATE, Float16_b)
constexpr double kSfpuBinaryTile = 298 + 32;     // D [sfpu-wh] [vec]: a simple op plus a second load a step
constexpr double kUnpackBpc = 64;                // A [gemm]: unpacker L1 read rate assumed 64 B/cycle (a bf16 tile
                                                 //   in 32 cycles, bfp8 in 17) so that LoFi/HiFi2 matmul stays
                                                 //   math-bound, as the measured ~93% peak utilisation requires
constexpr double kPackBpc = 64;                  // A [gemm]: packer L1 write rate, same assumption
constexpr double kTileOpOverhead = 4;            // A: per-call LLK setup (MOP/replay launch) on the issuing lane
// ---- program level
constexpr double kLaunchSkewPerHop = 9;          // D [isa-noc]: the go signal is a NoC multicast from the dispatch
                                                 //   core; a core starts one router hop later per hop of distance
constexpr double kOpDispatchNs = 750;            // M [disp]: 600-900 ns op-to-op in traced Galaxy decode (~4k
                                                 //   cycles per op in traced T3K decode, #12074); NOT in duration_ns
// ---- flow control (on in every variant but "no_flow_control"; docs/TIMING.md section 3b)
constexpr double kTridReadThrottle = 128;        // C [noc-api]: ncrisc_noc_fast_read_with_transaction_id spins while
                                                 //   NIU_MST_REQS_OUTSTANDING_ID(trid) > (NOC_MAX_TRANSACTION_ID_COUNT
                                                 //   + 1) / 2: at most 128 reads of one transaction id in flight
constexpr double kMaxReadsInFlight = 32;         // A: read requests one NIU (one core, one NoC) tracks at once; no
                                                 //   public figure. Lower end 20: [dm-dram]'s 256 x 32 B reads stay
                                                 //   issue bound (5469 cycles), which needs 384 / 20 ~ 19 in flight
constexpr double kRouterBufferFlits = 8;         // A: flits a router input buffers per virtual channel; no public
                                                 //   figure ([isa-noc] gives 16 VCs, not their depth)
constexpr double kDramQueueDepth = 16;           // A: requests a DRAM channel's controller queues before the NoC
                                                 //   backs up into the routers; no public figure
constexpr double kHolShare = 0.5;                // A: share of a link's capacity a packet stalled downstream denies
                                                 //   to others (head-of-line blocking, [hol] #23294): 1 if every flow
                                                 //   on the link waits behind it, 1/4 if only its VC class does
                                                 //   ([isa-noc]: two of the four VC classes carry unicast requests)
constexpr double kComputeInitCycles = 40;        // A: an op's *_init (unpack/math/pack MOP and address-mode
                                                 //   programming: tens of config register writes) on each lane
constexpr double kReconfigCycles = 30;           // A: reconfig_data_format / pack_reconfig_data_format on the lane
                                                 //   whose format registers change (writes plus a config stall)
constexpr double kTilizeUnpackFactor = 2;        // A: tilize / untilize unpack or pack a tile at this many times the
                                                 //   plain L1 cost (row-major strides instead of whole faces)
}  // namespace k

// =====================================================================================================================
// Blackhole's constants (docs/BLACKHOLE.md, section 3). Only what differs from Wormhole's table is here; every other
// constant of k:: (FPU costs per tile, CB and semaphore bookkeeping, multicast hold, flow-control depths) is taken
// as Blackhole's too: the Tensix core's FPU and RISCs do the same work per cycle of its own clock ([me]); its SFPU
// costs are Wormhole's measured ones times kSfpuScale (assumed). Sources:
//   [bh-clk]   tt-metal PR #26917 (Blackhole microbenchmarks at 1350 MHz); tt-npe BlackholeDeviceModel ai_clk 1.35
//   [bh-soc]   the ttnn wheel's tt_metal/soc_descriptors/blackhole_140_arch.yaml (grid 17 x 12, dram_views)
//   [bh-isa]   tt-isa-documentation BlackholeA0 NoC ("each flit consists of exactly 512 bits")
//   [bh-npe]   tenstorrent/tt-npe BlackholeDeviceModel (getLinkBandwidth 60.9 B/cycle)
//   [bh-read]  tt-metal PR #47885 (bh_dram_read: max NoC packet 16 KB; ~47 B/cycle per-bank ceiling, 500 GB/s)
//   [bh-dm-*]  tt-metal tests/tt_metal/tt_metal/data_movement/documentation/perf_plots/blackhole/ "One from One",
//              "One to One", "DRAM Interleaved" Packet Sizes.md (as [dm-*] for Wormhole)
//   [dram-req] tt-metal #55898 (a Blackhole DRAM endpoint takes one read request per ~16.4 cycles per NoC)
// The router hop and NIU latencies have no Blackhole figure: kind A, Wormhole's values, varied 0.5x-2x by the
// Blackhole variants (assumed_table), as is the SFPU cost scale (0.5x-1.5x). The derived (D) latencies below were
// fitted with the nominal hop and NIU values.
// =====================================================================================================================
namespace kbh {
constexpr double kClockGHz = 1.35;               // N [bh-clk]
constexpr int kNocCols = 17;                     // N [bh-soc]: NoC grid 17 x 12 (x 0..16, y 0..11), a 2D torus
constexpr int kNocRows = 12;                     // N [bh-soc]
constexpr double kFlitBytes = 64;                // N [bh-isa]: one flit = 512 bits
constexpr double kLinkBpc = 60.9;                // C [bh-npe]: a NoC link's bandwidth
constexpr uint32_t kMaxPacketBytes = 16384;      // N [bh-read]: "max NOC packet (16 KB)"
constexpr double kHopCycles = 9;                 // A: Wormhole's [isa-noc] router hop; range 4.5-18
constexpr double kNiuCycles = 5;                 // A: Wormhole's [isa-noc] NIU <-> router; range 2.5-10
constexpr double kWorkerReadInjectBpc = 61.8;    // M [bh-dm-1f1]: one core reading another saturates at 61.8 B/cycle
constexpr double kWorkerWriteInjectBpc = 62.5;   // M [bh-dm-1t1]: one core writing another saturates at 62.5 B/cycle
constexpr double kDramReadBpc = 47;              // M [bh-read]: one reader per bank sustains 46.3 B/cycle "against the
                                                 //   ~47 B/cycle per-bank ceiling" (64 GB/s nominal per channel)
constexpr double kDramWriteBpc = 37.1;           // M [bh-dm-dram]: 256 x 16 KB DRAM writes from one core, 37.05 B/cycle
constexpr double kDramRequestCycles = 16.4;      // M [dram-req]: one read request per ~16.4 cycles per endpoint per NoC
constexpr double kReadIssueCycles = 35;          // D [bh-dm-1f1]: 256 back-to-back 64 B reads + barrier take 9279
                                                 //   cycles, one read 368: (9279 - 368) / 255 = 34.9 per read
constexpr double kWriteIssueCycles = 24;         // D [bh-dm-1t1]: 256 back-to-back 64 B writes take 6496 cycles, one
                                                 //   366: 24.0 per write. No small-write channel hold: [bh-dm-dram]'s
                                                 //   DRAM writes of 64-512 B are as issue bound (6509-6527 cycles)
constexpr double kReadServiceCycles = 49;        // D [bh-dm-1f1]: one 64 B core read + barrier = 368 cycles = issue +
                                                 //   4 NIU legs + 29 hops (the 17 + 12 torus round trip) + flits + this
constexpr double kDramAccessCycles = 111;        // D [bh-dm-dram]: one 64 B DRAM read + barrier = 479 cycles, the rest
                                                 //   of a core read's at the same distance
constexpr double kWriteAckCycles = 58;           // D [bh-dm-1t1]: one 64 B write + barrier = 366 cycles
constexpr double kSfpuScale = 1;                 // A: Blackhole's SFPU per-tile cycles over Wormhole's measured ones
                                                 //   (k::kExp*, kRecip*, kSfpu*); no Blackhole figure, and its SFPU
                                                 //   algorithms differ (SFPARECIP, SFPGT): range 0.5x-1.5x
}  // namespace kbh

// A chip's constants as runtime values: what the engine reads for the clock, the NoC fabric, DRAM and NoC transfer
// costs. The runtime picks the chip from the program file (record "chip", written from the device's
// ttemu.arch.ArchSpec); Wormhole B0's values are k::'s, so its results are those of the model before chips.
struct Chip {
    std::string name = "wormhole_b0";
    double clock_ghz = k::kClockGHz;
    int noc_cols = k::kNocCols, noc_rows = k::kNocRows;
    double flit_bytes = k::kFlitBytes;
    double link_bpc = k::kFlitBytes;  // Wormhole [isa-noc]: a link moves one flit a cycle
    uint32_t max_packet_bytes = k::kMaxPacketBytes;
    double hop_cycles = k::kHopCycles, niu_cycles = k::kNiuCycles;
    double worker_read_inject_bpc = k::kWorkerReadInjectBpc, worker_write_inject_bpc = k::kWorkerWriteInjectBpc;
    double dram_read_bpc = k::kDramReadBpc, dram_write_bpc = k::kDramWriteBpc;
    double dram_small_write_cycles = k::kDramSmallWriteCycles;
    uint32_t dram_small_write_bytes = k::kDramSmallWriteBytes;
    double dram_request_cycles = k::kDramRequestCycles;
    double read_issue_cycles = k::kNocIssueCycles, write_issue_cycles = k::kNocIssueCycles;
    double read_service_cycles = k::kReadServiceCycles, dram_access_cycles = k::kDramAccessCycles;
    double write_ack_cycles = k::kWriteAckCycles;
    double launch_skew_per_hop = k::kLaunchSkewPerHop;
    double sfpu_scale = 1;                // SFPU per-tile cycles over k::'s (Wormhole's measured ones)
    int max_grid_w = 8, max_grid_h = 10;  // the worker grid the topology can place (Wormhole: 8 x 10 Tensix)

    static Chip wormhole_b0() { return Chip{}; }
    static Chip blackhole() {
        Chip c;
        c.name = "blackhole";
        c.clock_ghz = kbh::kClockGHz;
        c.noc_cols = kbh::kNocCols;
        c.noc_rows = kbh::kNocRows;
        c.flit_bytes = kbh::kFlitBytes;
        c.link_bpc = kbh::kLinkBpc;
        c.max_packet_bytes = kbh::kMaxPacketBytes;
        c.hop_cycles = kbh::kHopCycles;
        c.niu_cycles = kbh::kNiuCycles;
        c.worker_read_inject_bpc = kbh::kWorkerReadInjectBpc;
        c.worker_write_inject_bpc = kbh::kWorkerWriteInjectBpc;
        c.dram_read_bpc = kbh::kDramReadBpc;
        c.dram_write_bpc = kbh::kDramWriteBpc;
        c.dram_small_write_cycles = 0;
        c.dram_small_write_bytes = 0;
        c.dram_request_cycles = kbh::kDramRequestCycles;
        c.read_issue_cycles = kbh::kReadIssueCycles;
        c.write_issue_cycles = kbh::kWriteIssueCycles;
        c.read_service_cycles = kbh::kReadServiceCycles;
        c.dram_access_cycles = kbh::kDramAccessCycles;
        c.write_ack_cycles = kbh::kWriteAckCycles;
        c.launch_skew_per_hop = kbh::kHopCycles;  // as k::kLaunchSkewPerHop: one router hop per hop of distance
        c.sfpu_scale = kbh::kSfpuScale;
        c.max_grid_w = 14;                        // [bh-soc]: 14 Tensix columns x 10 rows
        c.max_grid_h = 10;
        return c;
    }
    // The chip named `name` ("wormhole_b0" / "blackhole", ttemu.arch.ArchSpec.name); false if there is none.
    static bool by_name(const std::string& name, Chip& out) {
        if (name.empty() || name == "wormhole_b0") {
            out = wormhole_b0();
            return true;
        }
        if (name == "blackhole") {
            out = blackhole();
            return true;
        }
        return false;
    }
};

struct ConstantRow {
    const char* name;
    double value;
    const char* unit;
    char kind;  // 'M', 'N', 'C', 'D', 'A' (assumed: no public figure; varied over a range by the variants)
    const char* source;
};

// The same table as data (exported to Python by timing_capi.cpp; ttemu/tests/test_timing_model.py checks that
// docs/TIMING.md lists the same values).
inline const std::vector<ConstantRow>& constant_table() {
    static const std::vector<ConstantRow> rows = {
        {"kClockGHz", k::kClockGHz, "GHz", 'N', "[isa-dram] [gemm]"},
        {"kNocCols", k::kNocCols, "nodes", 'N', "[soc]"},
        {"kNocRows", k::kNocRows, "nodes", 'N', "[soc]"},
        {"kFlitBytes", k::kFlitBytes, "B", 'N', "[isa-noc]"},
        {"kMaxPacketBytes", k::kMaxPacketBytes, "B", 'N', "[isa-noc]"},
        {"kHopCycles", k::kHopCycles, "cycles", 'N', "[isa-noc]"},
        {"kNiuCycles", k::kNiuCycles, "cycles", 'N', "[isa-noc]"},
        {"kWorkerReadInjectBpc", k::kWorkerReadInjectBpc, "B/cycle", 'M', "[dm-1f1]"},
        {"kWorkerWriteInjectBpc", k::kWorkerWriteInjectBpc, "B/cycle", 'M', "[dm-1t1]"},
        {"kDramReadBpc", k::kDramReadBpc, "B/cycle", 'M', "[isa-dram]"},
        {"kDramWriteBpc", k::kDramWriteBpc, "B/cycle", 'M', "[isa-dram]"},
        {"kDramSmallWriteCycles", k::kDramSmallWriteCycles, "cycles", 'D', "[dm-dram]"},
        {"kDramSmallWriteBytes", k::kDramSmallWriteBytes, "B", 'D', "[dm-dram]"},
        {"kDramRequestCycles", k::kDramRequestCycles, "cycles", 'M', "[dram-req]"},
        {"kNocIssueCycles", k::kNocIssueCycles, "cycles", 'D', "[dm-1f1] [dm-dram]"},
        {"kReadServiceCycles", k::kReadServiceCycles, "cycles", 'D', "[dm-1f1]"},
        {"kDramAccessCycles", k::kDramAccessCycles, "cycles", 'D', "[dm-dram] [dm-1f1]"},
        {"kWriteAckCycles", k::kWriteAckCycles, "cycles", 'D', "[dm-1t1]"},
        {"kMcastHoldPerDoubling", k::kMcastHoldPerDoubling, "cycles", 'D', "[dm-mc]"},
        {"kMcastHoldOffset", k::kMcastHoldOffset, "cycles", 'D', "[dm-mc]"},
        {"kAtomicCycles", k::kAtomicCycles, "cycles", 'D', "[npe]"},
        {"kLocalPollCycles", k::kLocalPollCycles, "cycles", 'A', "assumed"},
        {"kCbApiCycles", k::kCbApiCycles, "cycles", 'A', "assumed"},
        {"kCbHandoffCycles", k::kCbHandoffCycles, "cycles", 'A', "assumed"},
        {"kMatmulTileLoFi", k::kMatmulTileLoFi, "cycles/tile", 'N', "[me] [gemm]"},
        {"kEltwiseTile", k::kEltwiseTile, "cycles/tile", 'N', "[me]"},
        {"kReduceTile", k::kReduceTile, "cycles/tile", 'N', "[me]"},
        {"kCopyTile", k::kCopyTile, "cycles/tile", 'D', "[me]"},
        {"kTransposeTile", k::kTransposeTile, "cycles/tile", 'D', "[me]"},
        {"kSfpuStepsPerTile", k::kSfpuStepsPerTile, "steps", 'N', "[vec]"},
        {"kExpAccurateTile", k::kExpAccurateTile, "cycles/tile", 'M', "[exp] #43973"},
        {"kExpApproxTile", k::kExpApproxTile, "cycles/tile", 'M', "[exp] #32968"},
        {"kRecipTile", k::kRecipTile, "cycles/tile", 'M', "[sfpu-wh] #54938"},
        {"kRecipApproxTile", k::kRecipApproxTile, "cycles/tile", 'A', "assumed"},
        {"kSfpuSimpleTile", k::kSfpuSimpleTile, "cycles/tile", 'M', "[sfpu-wh] #54938"},
        {"kSfpuBinaryTile", k::kSfpuBinaryTile, "cycles/tile", 'D', "[sfpu-wh] [vec]"},
        {"kUnpackBpc", k::kUnpackBpc, "B/cycle", 'A', "[gemm]"},
        {"kPackBpc", k::kPackBpc, "B/cycle", 'A', "[gemm]"},
        {"kTileOpOverhead", k::kTileOpOverhead, "cycles", 'A', "assumed"},
        {"kLaunchSkewPerHop", k::kLaunchSkewPerHop, "cycles", 'D', "[isa-noc]"},
        {"kOpDispatchNs", k::kOpDispatchNs, "ns", 'M', "[disp]"},
        {"kTridReadThrottle", k::kTridReadThrottle, "reads", 'C', "[noc-api]"},
        {"kMaxReadsInFlight", k::kMaxReadsInFlight, "reads", 'A', "assumed"},
        {"kRouterBufferFlits", k::kRouterBufferFlits, "flits", 'A', "assumed"},
        {"kDramQueueDepth", k::kDramQueueDepth, "requests", 'A', "assumed"},
        {"kHolShare", k::kHolShare, "fraction", 'A', "[hol] assumed"},
        {"kComputeInitCycles", k::kComputeInitCycles, "cycles", 'A', "assumed"},
        {"kReconfigCycles", k::kReconfigCycles, "cycles", 'A', "assumed"},
        {"kTilizeUnpackFactor", k::kTilizeUnpackFactor, "x", 'A', "assumed"},
    };
    return rows;
}

// Blackhole's table (kbh::), exported like constant_table(); docs/BLACKHOLE.md section 3 lists the same values.
inline const std::vector<ConstantRow>& blackhole_constant_table() {
    static const std::vector<ConstantRow> rows = {
        {"kClockGHz", kbh::kClockGHz, "GHz", 'N', "[bh-clk]"},
        {"kNocCols", kbh::kNocCols, "nodes", 'N', "[bh-soc]"},
        {"kNocRows", kbh::kNocRows, "nodes", 'N', "[bh-soc]"},
        {"kFlitBytes", kbh::kFlitBytes, "B", 'N', "[bh-isa]"},
        {"kLinkBpc", kbh::kLinkBpc, "B/cycle", 'C', "[bh-npe]"},
        {"kMaxPacketBytes", kbh::kMaxPacketBytes, "B", 'N', "[bh-read]"},
        {"kHopCycles", kbh::kHopCycles, "cycles", 'A', "assumed (Wormhole's [isa-noc])"},
        {"kNiuCycles", kbh::kNiuCycles, "cycles", 'A', "assumed (Wormhole's [isa-noc])"},
        {"kWorkerReadInjectBpc", kbh::kWorkerReadInjectBpc, "B/cycle", 'M', "[bh-dm-1f1]"},
        {"kWorkerWriteInjectBpc", kbh::kWorkerWriteInjectBpc, "B/cycle", 'M', "[bh-dm-1t1]"},
        {"kDramReadBpc", kbh::kDramReadBpc, "B/cycle", 'M', "[bh-read]"},
        {"kDramWriteBpc", kbh::kDramWriteBpc, "B/cycle", 'M', "[bh-dm-dram]"},
        {"kDramRequestCycles", kbh::kDramRequestCycles, "cycles", 'M', "[dram-req]"},
        {"kReadIssueCycles", kbh::kReadIssueCycles, "cycles", 'D', "[bh-dm-1f1] [bh-dm-dram]"},
        {"kWriteIssueCycles", kbh::kWriteIssueCycles, "cycles", 'D', "[bh-dm-1t1] [bh-dm-dram]"},
        {"kReadServiceCycles", kbh::kReadServiceCycles, "cycles", 'D', "[bh-dm-1f1]"},
        {"kDramAccessCycles", kbh::kDramAccessCycles, "cycles", 'D', "[bh-dm-dram]"},
        {"kWriteAckCycles", kbh::kWriteAckCycles, "cycles", 'D', "[bh-dm-1t1]"},
        {"kSfpuScale", kbh::kSfpuScale, "x", 'A', "assumed (Wormhole's measured SFPU costs)"},
    };
    return rows;
}

// =====================================================================================================================
// Variants. The constants of kind A have no public figure; the model's variants vary each over the range below (one
// at a time, the others nominal), and "no_flow_control" turns the flow-control mechanisms off (the model as it was
// before them: unlimited outstanding requests, unbounded router buffers and DRAM queues). A variant is selected by
// name: TTFD_TIMING_VARIANT=<name> for the emulator runtime, TimingModel(variant=...) from Python.
// =====================================================================================================================
struct Params {
    std::string variant = "nominal";
    bool flow_control = true;
    double local_poll_cycles = k::kLocalPollCycles;
    double cb_api_cycles = k::kCbApiCycles;
    double cb_handoff_cycles = k::kCbHandoffCycles;
    double tile_op_overhead = k::kTileOpOverhead;
    double recip_approx_tile = k::kRecipApproxTile;
    double unpack_bpc = k::kUnpackBpc;
    double pack_bpc = k::kPackBpc;
    double max_reads_in_flight = k::kMaxReadsInFlight;
    double router_buffer_flits = k::kRouterBufferFlits;
    double dram_queue_depth = k::kDramQueueDepth;
    double hol_share = k::kHolShare;
    double compute_init_cycles = k::kComputeInitCycles;
    double reconfig_cycles = k::kReconfigCycles;
    double tilize_factor = k::kTilizeUnpackFactor;
    // A variant of one chip's own assumed constant (an assumed_table row with a chip): which chip, which of its
    // constants and the value; Chip::under applies it to that chip only (other chips run such a variant nominal).
    std::string chip;
    double Chip::*chip_field = nullptr;
    double chip_value = 0;
};

// `c` under the variant `p`: its own assumed constant moved if `p` is a variant of it.
inline Chip chip_under(Chip c, const Params& p) {
    if (p.chip_field && p.chip == c.name) c.*(p.chip_field) = p.chip_value;
    return c;
}

struct AssumedRow {
    const char* constant;  // the k:: name
    const char* stem;      // variant names: <stem>_low, <stem>_high
    double Params::*field;
    double low, high;      // the range the variants take it over
    const char* why;       // why this range
    const char* chip = nullptr;         // a chip's own constant (Chip's member `chip_field`); null: every chip's
    double Chip::*chip_field = nullptr;
};

inline const std::vector<AssumedRow>& assumed_table() {
    static const std::vector<AssumedRow> rows = {
        {"kLocalPollCycles", "local_poll", &Params::local_poll_cycles, 4, 30,
         "a local L1 load is a few cycles; 30 allows a poll loop of several iterations"},
        {"kCbApiCycles", "cb_api", &Params::cb_api_cycles, 4, 30, "a few loads/stores up to a short loop"},
        {"kCbHandoffCycles", "cb_handoff", &Params::cb_handoff_cycles, 1, 20,
         "one register write seen by the other RISC, up to a memory-ordering fence"},
        {"kTileOpOverhead", "tile_op_overhead", &Params::tile_op_overhead, 1, 20,
         "a MOP launch, up to a replay-buffer reload"},
        {"kRecipApproxTile", "recip_approx", &Params::recip_approx_tile, 300, 1059,
         "a simple SFPU op's cost up to the exact reciprocal's measured one"},
        {"kUnpackBpc", "unpack_bpc", &Params::unpack_bpc, 52, 128,
         "the least that keeps [gemm]'s LoFi matmul math-bound (2x4 sub-blocks: 6 bfp8 tiles in per 8 products of 16 "
         "cycles, 51 B/cycle; 32 gave 0.61 utilisation against the measured 0.93), up to twice nominal"},
        {"kPackBpc", "pack_bpc", &Params::pack_bpc, 32, 128, "as the unpacker"},
        {"kMaxReadsInFlight", "max_reads_in_flight", &Params::max_reads_in_flight, 20, 128,
         "the least that keeps 256 x 32 B DRAM reads issue bound, up to the software throttle of one trid"},
        {"kRouterBufferFlits", "router_buffer", &Params::router_buffer_flits, 4, 32,
         "a few flits per VC up to an eighth of a maximum packet"},
        {"kDramQueueDepth", "dram_queue", &Params::dram_queue_depth, 4, 64, "a shallow to a deep controller queue"},
        {"kHolShare", "hol_share", &Params::hol_share, 0.25, 1.0,
         "one of the four VC classes blocked, up to the whole link"},
        {"kComputeInitCycles", "compute_init", &Params::compute_init_cycles, 10, 150,
         "a handful of register writes up to a full MOP and address-mode reprogramming"},
        {"kReconfigCycles", "reconfig", &Params::reconfig_cycles, 10, 100,
         "a few register writes up to a stall for the unpacker/packer to go idle"},
        {"kTilizeUnpackFactor", "tilize", &Params::tilize_factor, 1, 4, "as fast as a tile copy, up to four times slower"},
        // Blackhole's own (kbh::): no Blackhole figure for the router hop and NIU latencies and the SFPU costs.
        {"kHopCycles", "bh_hop", nullptr, 4.5, 18, "half to twice Wormhole's router hop", "blackhole",
         &Chip::hop_cycles},
        {"kNiuCycles", "bh_niu", nullptr, 2.5, 10, "half to twice Wormhole's NIU <-> router latency", "blackhole",
         &Chip::niu_cycles},
        {"kSfpuScale", "bh_sfpu", nullptr, 0.5, 1.5,
         "Blackhole's SFPU algorithms at half to one and a half Wormhole's measured cycles", "blackhole",
         &Chip::sfpu_scale},
    };
    return rows;
}

// The assumed constants of chip `chip`: every chip's and its own.
inline std::vector<AssumedRow> assumed_rows(const std::string& chip = "wormhole_b0") {
    std::vector<AssumedRow> out;
    for (const auto& r : assumed_table())
        if (!r.chip || chip == r.chip) out.push_back(r);
    return out;
}

// The variants of chip `chip` (what TTFD_TIMING_VARIANTS=all replays on it): nominal, no_flow_control, and a low and
// a high variant of each of its assumed constants.
inline std::vector<std::string> variant_names(const std::string& chip = "wormhole_b0") {
    std::vector<std::string> out = {"nominal", "no_flow_control"};
    for (const auto& r : assumed_rows(chip)) {
        out.push_back(std::string(r.stem) + "_low");
        out.push_back(std::string(r.stem) + "_high");
    }
    return out;
}

// Every chip's variants (the names TTFD_TIMING_VARIANT accepts).
inline std::vector<std::string> all_variant_names() {
    std::vector<std::string> out = {"nominal", "no_flow_control"};
    for (const auto& r : assumed_table()) {
        out.push_back(std::string(r.stem) + "_low");
        out.push_back(std::string(r.stem) + "_high");
    }
    return out;
}

// The parameters of variant `name` ("" or null: nominal). False (and `err` says why) for an unknown name.
inline bool variant_params(const char* name, Params& out, std::string& err) {
    out = Params{};
    std::string n = name ? name : "";
    if (n.empty() || n == "nominal") return true;
    out.variant = n;
    if (n == "no_flow_control") {
        out.flow_control = false;
        return true;
    }
    for (const auto& r : assumed_table()) {
        std::string stem = r.stem;
        if (n == stem + "_low" || n == stem + "_high") {
            double v = n == stem + "_low" ? r.low : r.high;
            if (r.chip) {
                out.chip = r.chip;
                out.chip_field = r.chip_field;
                out.chip_value = v;
            } else {
                out.*(r.field) = v;
            }
            return true;
        }
    }
    err = "TTFD_TIMING_VARIANT='" + n + "' is not a variant of the timing model; variants:";
    for (const auto& v : all_variant_names()) err += " " + v;
    return false;
}

// =====================================================================================================================
// Topology: physical NoC 0 coordinates of every worker and DRAM bank endpoint.
// =====================================================================================================================
struct Xy {
    int x = 0, y = 0;
};


struct Topology {
    int grid_w = 8, grid_h = 8;
    std::vector<Xy> workers;     // core index (ly * grid_w + lx) -> physical NoC 0 xy
    std::vector<Xy> dram_banks;  // bank -> physical NoC 0 xy of the endpoint tt-metal's bank table names for NoC 0
    // bank -> physical NoC 0 xy of NoC 1's endpoint (dram_bank_to_noc_xy[1]): a dram_view's worker_endpoint is one
    // subchannel per NoC; Wormhole's name the same tile, Blackhole's two tiles of the channel. Empty: NoC 0's.
    std::vector<Xy> dram_banks_noc1;
    Xy dispatch{1, 10};          // where the go signal comes from (launch skew)
    Chip chip;                   // the chip's clock, NoC and DRAM constants

    // Unharvested Wormhole B0 ([soc] functional_workers): logical x -> physical x {1,2,3,4,6,7,8,9}, logical y ->
    // physical y {1,2,3,4,5,7,8,9,10,11}. Harvesting differs per board and is not modelled: the compute grid takes
    // the first grid_h worker rows and the dispatch cores sit in the next row (N150: the 9th row). DRAM banks are the
    // soc descriptor's dram_views (bank b = view b); the emulator passes them from arch.dram_layout(), and without
    // them the fallback below is the same table.
    static Topology wormhole_b0(int grid_w, int grid_h, std::vector<Xy> banks = {}, std::vector<Xy> banks_noc1 = {}) {
        static const int px[8] = {1, 2, 3, 4, 6, 7, 8, 9};
        static const int py[10] = {1, 2, 3, 4, 5, 7, 8, 9, 10, 11};
        Topology t;
        t.grid_w = std::max(1, std::min(grid_w, 8));
        t.grid_h = std::max(1, std::min(grid_h, 10));
        for (int y = 0; y < t.grid_h; ++y)
            for (int x = 0; x < t.grid_w; ++x) t.workers.push_back({px[x], py[y]});
        t.dispatch = {px[0], py[std::min(t.grid_h, 9)]};
        if (banks.empty())  // [soc] dram_views: (channel, worker_endpoint) -> dram[channel][endpoint]
            banks = {{0, 11}, {0, 1}, {0, 5}, {0, 7}, {5, 1}, {5, 11}, {5, 2}, {5, 9}, {5, 8}, {5, 3}, {5, 5}, {5, 7}};
        t.dram_banks = std::move(banks);
        t.dram_banks_noc1 = std::move(banks_noc1);
        return t;
    }

    // Blackhole ([bh-soc] functional_workers: Tensix columns x 1..7 and 10..16, rows y 2..11). A worker's
    // coordinates are those UMD gives it (ttemu/arch.py): logical column x -> the x-th Tensix column, harvested
    // columns moved to the end (so which columns a card harvested never shows), logical row y -> y + 2. ttnn's
    // default dispatch on Blackhole is a column: the one after the compute grid. DRAM banks: the soc descriptor's
    // dram_views' worker endpoints, one per NoC (the emulator passes them; the fallback is the P150's 8).
    static Topology blackhole(int grid_w, int grid_h, std::vector<Xy> banks = {}, std::vector<Xy> banks_noc1 = {}) {
        static const int px[14] = {1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16};
        Topology t;
        t.chip = Chip::blackhole();
        t.grid_w = std::max(1, std::min(grid_w, 14));
        t.grid_h = std::max(1, std::min(grid_h, 10));
        for (int y = 0; y < t.grid_h; ++y)
            for (int x = 0; x < t.grid_w; ++x) t.workers.push_back({px[x], 2 + y});
        t.dispatch = {px[std::min(t.grid_w, 13)], 2};
        if (banks.empty()) {  // [bh-soc] dram_views: (channel, worker_endpoint[noc]) -> dram[channel][endpoint]
            banks = {{0, 11}, {0, 2}, {0, 9}, {0, 5}, {9, 11}, {9, 3}, {9, 8}, {9, 6}};
            if (banks_noc1.empty()) banks_noc1 = {{0, 1}, {0, 10}, {0, 4}, {0, 7}, {9, 1}, {9, 10}, {9, 4}, {9, 7}};
        }
        t.dram_banks = std::move(banks);
        t.dram_banks_noc1 = std::move(banks_noc1);
        return t;
    }

    // The topology of chip `chip` (Chip::by_name) for a grid_w x grid_h compute grid.
    // banks / banks_noc1: each bank's NoC 0 / NoC 1 endpoint (empty: the chip's table; banks_noc1 empty: NoC 0's).
    static Topology of(const Chip& chip, int grid_w, int grid_h, std::vector<Xy> banks = {},
                       std::vector<Xy> banks_noc1 = {}) {
        Topology t = chip.name == "blackhole" ? blackhole(grid_w, grid_h, std::move(banks), std::move(banks_noc1))
                                               : wormhole_b0(grid_w, grid_h, std::move(banks), std::move(banks_noc1));
        t.chip = chip;
        return t;
    }

    // Where endpoint `e` sits for a transfer on NoC `noc`: a DRAM bank is reached through that NoC's tile.
    Xy xy(Endpoint e, Noc noc) const {
        if (!e.is_dram()) return workers.at(size_t(e.id));
        const auto& tiles = noc == Noc::Noc1 && !dram_banks_noc1.empty() ? dram_banks_noc1 : dram_banks;
        return tiles.at(size_t(e.bank()));
    }

    static int wrap(int v, int n) { return ((v % n) + n) % n; }
    // One router along the ring of n from a coordinate in [0, n): wrap(v + 1, n) and wrap(v - 1, n) without the
    // divisions (a route takes one per hop, a replay millions).
    static int up(int v, int n) { return v + 1 == n ? 0 : v + 1; }
    static int down(int v, int n) { return v == 0 ? n - 1 : v - 1; }
    // Router hops from a to b: NoC 0 goes +x then +y, NoC 1 goes -y then -x, both wrapping ([npe] unicastRoute).
    int hops(Xy a, Xy b, Noc noc) const {
        if (noc == Noc::Noc0) return wrap(b.x - a.x, chip.noc_cols) + wrap(b.y - a.y, chip.noc_rows);
        return wrap(a.x - b.x, chip.noc_cols) + wrap(a.y - b.y, chip.noc_rows);
    }
};

// =====================================================================================================================
// Fabric: the chip's shared resources. Call it in nondecreasing issue time (the Engine does).
// =====================================================================================================================
// floor(x) as an integer, for |x| < 2^63: std::floor is a libm call on a plain x86-64 build (no SSE4.1 rounding
// instruction), and the replay takes it twice per booking.
inline int64_t floor_int(double x) {
    int64_t i = int64_t(x);
    return i - int64_t(x < double(i));
}

// Memory for the resources' bins: zeroed 4 KiB chunks carved from 2 MiB blocks that the kernel may back with huge
// pages (transparent huge pages on request). A replay's bins are tens of MiB touched a chunk at a time and read
// at random: in 4 KiB pages that is a page fault per chunk and a TLB miss on most bookings. Chunks a resource drops
// are zeroed and reused. One pool per Fabric; not thread-safe (one replay runs on one thread).
class ChunkPool {
   public:
    static constexpr size_t kChunkBins = 512, kChunkBytes = kChunkBins * sizeof(double), kBlockBytes = size_t(2) << 20;
    ChunkPool() = default;
    ChunkPool(const ChunkPool&) = delete;
    ChunkPool& operator=(const ChunkPool&) = delete;
    ~ChunkPool() {
        for (auto& b : blocks_) munmap(b.first, b.second);
    }
    double* get() {
        if (!free_.empty()) {
            double* c = free_.back();
            free_.pop_back();
            std::memset(c, 0, kChunkBytes);
            return c;
        }
        if (next_ == end_) new_block();
        double* c = next_;
        next_ += kChunkBins;
        return c;
    }
    void put(double* chunk) { free_.push_back(chunk); }

   private:
    // A block at a 2 MiB boundary (what a huge page needs): map one more block's worth and unmap the ends.
    void new_block() {
        size_t len = 2 * kBlockBytes;
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        uintptr_t at = (reinterpret_cast<uintptr_t>(p) + kBlockBytes - 1) & ~(uintptr_t(kBlockBytes) - 1);
        size_t head = at - reinterpret_cast<uintptr_t>(p), tail = len - head - kBlockBytes;
        if (head) munmap(p, head);
        if (tail) munmap(reinterpret_cast<void*>(at + kBlockBytes), tail);
        madvise(reinterpret_cast<void*>(at), kBlockBytes, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages
        blocks_.push_back({reinterpret_cast<void*>(at), kBlockBytes});
        next_ = reinterpret_cast<double*>(at);
        end_ = next_ + kBlockBytes / sizeof(double);
    }
    std::vector<std::pair<void*, size_t>> blocks_;
    std::vector<double*> free_;
    double *next_ = nullptr, *end_ = nullptr;
};

// A shared resource (NoC link, NIU port, DRAM channel) as a timeline of capacity in bins of kBinCycles: a packet
// arriving at t takes `occ` cycles of capacity from the bins at and after t that still have some. Taking capacity
// where the packet IS in virtual time (rather than after the last reservation made) keeps the model fair when
// packets are booked out of time order: the replay books a whole transfer when it is issued, and a 1 MiB read
// books its responses far ahead of a request issued a cycle later that crosses the same link. Within a bin the
// order is first come, first served. Bins far behind the replay's current time are dropped.
//
// The hot part of a booking's state sits in the object's first cache line (alignas): a replay books millions of
// times across ~1,000 resources, and what a booking costs is mostly the loads of a resource not touched lately.
class alignas(64) Resource {
   public:
    static constexpr double kBinCycles = 64;
    static constexpr double kEps = 1e-6;  // capacity below this is none (rounding of fractional occupancies)
    Cycle busy = 0;  // total occupancy charged

    struct Span {
        Cycle start, end;
    };
    // `keep`: the first bin any booking may still reach (Fabric::set_floor's time in bins); older ones are dropped.
    Span take(Cycle t, Cycle occ, int64_t keep) {
        if (keep > base_) trim(keep);
        busy += occ;
        if (t < block_end_ && t >= block_from_) t += block_share_ * (block_end_ - t);
        int64_t b = floor_int(t / kBinCycles);
        if (b < base_) {
            b = base_;
            t = Cycle(base_) * kBinCycles;
        }
        if (occ <= 0) return {t, t};
        b = std::max(b, base_ + int64_t(full_));  // bins before full_ have no capacity left
        Cycle rem = occ, start = -1;
        for (;; ++b) {
            size_t idx = size_t(b - base_);
            if (idx >= used_.size()) used_.grow(idx + 1);
            double& u = used_[idx];
            Cycle bin0 = Cycle(b) * kBinCycles;
            Cycle from = std::max(t, bin0 + u);
            Cycle cap = std::min(kBinCycles - u, bin0 + kBinCycles - from);
            if (cap <= kEps) continue;
            Cycle x = std::min(cap, rem);
            if (start < 0) start = from;
            u += x;
            rem -= x;
            // full_ is a lower bound on the first bin with capacity (the scan above skips full bins anyway): it moves
            // only when its own bin fills, so a booking elsewhere does not load that bin again.
            if (idx == full_)
                while (full_ < used_.size() && used_[full_] >= kBinCycles - kEps) ++full_;
            if (rem <= kEps) return {start, from + x};
        }
    }

    Resource() = default;
    Resource(const Resource&) = delete;
    Resource& operator=(const Resource&) = delete;
    void attach(ChunkPool* pool) { used_.attach(pool); }  // where its bins' memory comes from (before any booking)

    // A hint: the bin a booking at t would start from, towards the cache (when its chunk is the one last reached).
    void prefetch(Cycle t) const {
        int64_t b = floor_int(t / kBinCycles) - base_;
        if (b >= 0) used_.prefetch(size_t(b));
    }

    // A packet stalled in this resource's buffer from t0 to t1 (flow control): a packet that arrives meanwhile waits
    // behind it for `share` of the rest of the stall (head-of-line blocking: it waits whenever it needs the stalled
    // packet's virtual channel). Only the latest stall is kept: stalls that overlap do not add up.
    void hold(Cycle t0, Cycle t1, double share) {
        if (t1 <= block_end_) return;
        block_from_ = std::max(t0, block_end_);
        block_end_ = t1;
        block_share_ = share;
    }

   private:
    void trim(int64_t keep) {
        size_t drop = size_t(std::min<int64_t>(keep - base_, int64_t(used_.size())));
        used_.drop_front(drop);
        full_ = full_ > drop ? full_ - drop : 0;
        base_ = keep;
    }
    // The bins from base_ on, as fixed-size chunks taken from the Fabric's pool (zeroed) when a booking first touches
    // one: a replay keeps 2^20 cycles of history, so a resource first used late in a run would otherwise zero-fill
    // every bin before it, and hundreds of resources' bins would not stay in cache. Bins never touched read as empty
    // (0). The chunk last reached is remembered (consecutive bookings of a resource are mostly in one chunk of 32K
    // cycles).
    class Bins {
       public:
        Bins() = default;
        Bins(const Bins&) = delete;
        Bins& operator=(const Bins&) = delete;
        void attach(ChunkPool* pool) { pool_ = pool; }
        size_t size() const { return size_; }
        double& operator[](size_t i) {
            size_t p = head_ + i;
            if ((p >> kChunkBits) != last_chunk_) reach(p >> kChunkBits);
            return last_[p & (kChunk - 1)];
        }
        void prefetch(size_t i) const {
            size_t p = head_ + i;
            if ((p >> kChunkBits) == last_chunk_) __builtin_prefetch(last_ + (p & (kChunk - 1)), 1);
        }
        void grow(size_t n) {  // bins [size(), n) are empty
            size_ = n;
            size_t need = ((head_ + n - 1) >> kChunkBits) + 1;
            if (chunks_.size() < need) chunks_.resize(need, nullptr);
        }
        void drop_front(size_t n) {
            head_ += n;
            size_ -= n;
            size_t dead = std::min(head_ >> kChunkBits, chunks_.size());  // chunks wholly before the first live bin
            if (dead == 0) return;
            for (size_t c = 0; c < dead; ++c)
                if (chunks_[c]) pool_->put(chunks_[c]);
            chunks_.erase(chunks_.begin(), chunks_.begin() + std::ptrdiff_t(dead));
            head_ -= dead << kChunkBits;
            last_chunk_ = kNoChunk;  // chunk numbers moved
        }

       private:
        static constexpr size_t kChunkBits = 9, kChunk = size_t(1) << kChunkBits, kNoChunk = ~size_t(0);
        static_assert(kChunk == ChunkPool::kChunkBins, "a chunk of bins is a pool's chunk");
        void reach(size_t c) {
            double*& chunk = chunks_[c];
            if (!chunk) chunk = pool_->get();
            last_chunk_ = c;
            last_ = chunk;
        }
        size_t last_chunk_ = kNoChunk;  // the chunk last reached
        double* last_ = nullptr;
        size_t head_ = 0, size_ = 0;
        std::vector<double*> chunks_;  // nullptr: not touched yet (every bin 0)
        ChunkPool* pool_ = nullptr;    // the Fabric's, which owns the chunks' memory
    };
    // With `busy`, what every booking reads: the first cache line; the stall's start and share only when t is in it.
    int64_t base_ = 0;
    size_t full_ = 0;  // index of the first bin with capacity left, or a bin before it
    Cycle block_end_ = 0;
    Bins used_;
    Cycle block_from_ = 0, block_share_ = 0;  // the latest stall (hold)
};

// A packet in flight: when its head and tail passed the last stage, and (flow control on) the resources it has
// passed, so that a stall further on can back-pressure them.
struct Flow {
    Cycle head, tail;
    Cycle flits = 1;        // the packet's length: how many upstream buffers it spans when its head stalls
    Cycle src_stall = 0;    // time the stalls added at the source NIU (the packet had not left it yet)
    int n = 0;              // resources passed (path[0] is where the packet comes from)
    Resource* path[48];     // a route has at most 16 + 11 hops (Blackhole's torus), plus NIUs and a DRAM channel
};

class Fabric {
   public:
    Fabric(const Topology& topo, const Params& p) : topo_(topo), p_(p), c_(chip_under(topo.chip, p)) {
        size_t nodes = size_t(c_.noc_cols) * size_t(c_.noc_rows);
        for (auto& v : link_) v = std::vector<Resource>(nodes * 2);
        for (auto& v : niu_out_) v = std::vector<Resource>(nodes);
        for (auto& v : niu_in_) v = std::vector<Resource>(nodes);
        dram_ = std::vector<Resource>(topo.dram_banks.size());
        for (auto* v : {&link_[0], &link_[1], &niu_out_[0], &niu_out_[1], &niu_in_[0], &niu_in_[1], &dram_})
            for (Resource& r : *v) r.attach(&pool_);
    }

    // Pipelined cut-through: the head reaches `r` `lat` after it left the previous stage, waits for `r` to be free,
    // and `r` stays busy for `occ`; the tail can never pass the previous stage's tail. A `sink` stage (the NIU that
    // takes the packet in, a DRAM channel) that holds the packet back more than `slack` (what it can queue: a DRAM
    // controller's queue) backs up the network behind it; see backpressure(). On links, sharing is the bins' fluid
    // sharing: a packet slowed there still moves, and moving flits deny nothing beyond the capacity they take.
    void stage(Flow& f, Resource& r, Cycle occ, Cycle lat, Cycle slack = 0, bool sink = false) {
        Cycle arrive = f.head + lat, free_end = std::max(arrive + occ, f.tail + lat);
        auto span = r.take(arrive, occ, keep_bin_);
        f.head = span.start;
        f.tail = std::max(span.end, f.tail + lat);
        if (sink) backpressure(f, f.tail - free_end - slack, arrive);
        if (f.n < int(sizeof f.path / sizeof f.path[0])) f.path[f.n++] = &r;
    }
    // A stage that keeps `r` busy for `occ` but lets the packet through in `pass` (pass < occ): the resource needs
    // time after the packet has gone (a small DRAM write: accepted at once, its channel busy for longer).
    void stage_pass(Flow& f, Resource& r, Cycle occ, Cycle pass, Cycle lat, Cycle slack = 0) {
        Cycle arrive = f.head + lat, free_end = std::max(arrive + pass, f.tail + lat);
        auto span = r.take(arrive, occ, keep_bin_);
        f.head = span.start;
        f.tail = std::max(span.start + pass, f.tail + lat);
        backpressure(f, f.tail - free_end - slack, arrive);  // a DRAM channel: always a sink
        if (f.n < int(sizeof f.path / sizeof f.path[0])) f.path[f.n++] = &r;
    }

    // Finite router buffers (flow control on): a packet whose tail is held back `stall` cycles at a stage beyond
    // what that stage can queue keeps its flits in the buffers behind it: they span ceil(flits / buffer) stages
    // upstream, and each of those is denied to other traffic for kHolShare of the stall (head-of-line blocking,
    // [hol]). A packet longer than the buffers between it and its source also holds its source NIU: the source
    // injects later (src_stall) and its next packet waits (the NIU's command buffer, see Engine).
    void backpressure(Flow& f, Cycle stall, Cycle at) {
        if (!p_.flow_control || stall <= 1 || f.n == 0) return;
        int span = int(std::ceil(f.flits / std::max(1.0, p_.router_buffer_flits)));
        int first = std::max(0, f.n - span);
        for (int j = f.n - 1; j >= first; --j) f.path[j]->hold(at, at + stall, p_.hol_share);
        if (first == 0) f.src_stall += stall;
    }
    // A new packet's flow leaving `at` (the response of a read starts one: the request's path no longer matters).
    static Flow start(Cycle at, Cycle flits) {
        Flow f{at, at};
        f.flits = flits;
        return f;
    }

    // Bookings never start before this (the replay's current time minus a margin): older bins can be dropped.
    void set_floor(Cycle t) {
        if (t <= floor_time_) return;
        floor_time_ = t;
        keep_bin_ = floor_int(t / Resource::kBinCycles);
    }

    Cycle flits(uint32_t bytes) const { return std::ceil(double(bytes) / c_.flit_bytes) + 1; }
    // Cycles a packet of `bytes` holds a link: a header flit, then its data flits at the link's bandwidth (Wormhole:
    // one flit a cycle, so this is flits(bytes); Blackhole: 64 B flits at [bh-npe]'s 60.9 B/cycle).
    Cycle link_cycles(uint32_t bytes) const { return (flits(bytes) - 1) * (c_.flit_bytes / c_.link_bpc) + 1; }

    // Route `f` from a to b over the links of `noc`, each link busy for `occ` cycles.
    void route(Flow& f, Xy a, Xy b, Noc noc, Cycle occ) {
        int n = int(noc);
        Xy c = a;
        prefetch_route(f.head, a, b, noc);
        if (noc == Noc::Noc0) {
            for (; c.x != b.x; c.x = Topology::up(c.x, c_.noc_cols)) stage(f, link(n, c, 0), occ, c_.hop_cycles);
            for (; c.y != b.y; c.y = Topology::up(c.y, c_.noc_rows)) stage(f, link(n, c, 1), occ, c_.hop_cycles);
        } else {
            for (; c.y != b.y; c.y = Topology::down(c.y, c_.noc_rows)) stage(f, link(n, c, 1), occ, c_.hop_cycles);
            for (; c.x != b.x; c.x = Topology::down(c.x, c_.noc_cols)) stage(f, link(n, c, 0), occ, c_.hop_cycles);
        }
    }

    // Each link of the route's bin at the time the packet would reach it uncontended: a booking's cost is mostly
    // the load of its bin, and each hop's time depends on the hop before, so without this the loads come one at a
    // time. A hint only (nothing is read or written).
    void prefetch_route(Cycle t, Xy a, Xy b, Noc noc) {
        int n = int(noc);
        Xy c = a;
        if (noc == Noc::Noc0) {
            for (; c.x != b.x; c.x = Topology::up(c.x, c_.noc_cols)) link(n, c, 0).prefetch(t += c_.hop_cycles);
            for (; c.y != b.y; c.y = Topology::up(c.y, c_.noc_rows)) link(n, c, 1).prefetch(t += c_.hop_cycles);
        } else {
            for (; c.y != b.y; c.y = Topology::down(c.y, c_.noc_rows)) link(n, c, 1).prefetch(t += c_.hop_cycles);
            for (; c.x != b.x; c.x = Topology::down(c.x, c_.noc_cols)) link(n, c, 0).prefetch(t += c_.hop_cycles);
        }
    }

    struct ReadTimes {
        Cycle accepted;  // the request's head left the requester's NIU (its command buffer is free again)
        Cycle done;      // the data is in the requester's L1
    };

    // One read packet (<= kMaxPacketBytes) issued at `t` by core `req` from `src`.
    ReadTimes read_packet(Cycle t, int req, Endpoint src, uint32_t bytes, Noc noc) {
        int n = int(noc);
        Xy a = topo_.workers.at(size_t(req)), b = topo_.xy(src, noc);
        Flow f = start(t, 1);
        if (!src.is_dram() && src.id == req) {  // loopback: through the NIU only
            stage(f, niu_out(n, a), bytes / c_.worker_read_inject_bpc, c_.niu_cycles);
            return {f.head, f.tail + c_.niu_cycles + c_.read_service_cycles};
        }
        // The bins the packet's stages would start from uncontended (see prefetch_route), the request's as it goes.
        Cycle there = t + topo_.hops(a, b, noc) * c_.hop_cycles + 2 * c_.niu_cycles;
        Cycle back = there + (src.is_dram() ? c_.dram_access_cycles : 0);
        niu_out(n, a).prefetch(t);
        niu_in(n, b).prefetch(there);
        if (src.is_dram()) dram_[size_t(src.bank())].prefetch(back);
        niu_out(n, b).prefetch(back);
        prefetch_route(back, b, a, noc);
        niu_in(n, a).prefetch(back + topo_.hops(b, a, noc) * c_.hop_cycles + 2 * c_.niu_cycles);
        // Request: a header flit from req to src.
        stage(f, niu_out(n, a), 1, 0);
        Cycle accepted = f.head;
        route(f, a, b, noc, 1);
        // A DRAM endpoint takes one request per kDramRequestCycles on each NoC; a worker's NIU one flit a cycle.
        stage(f, niu_in(n, b), src.is_dram() ? c_.dram_request_cycles : 1, 2 * c_.niu_cycles, 0, true);
        f.tail = f.head;  // the response starts once the request header is in
        Cycle occ = bytes / c_.dram_read_bpc;
        // The DRAM controller queues kDramQueueDepth requests of this size; a request waiting longer holds the
        // endpoint and the routers behind it (flow control on).
        if (src.is_dram())
            stage(f, dram_.at(size_t(src.bank())), occ, c_.dram_access_cycles, p_.dram_queue_depth * occ, true);
        // The response starts once the request is served. A held-up response backs up to the responder's NIU, not
        // into the DRAM channel (its controller buffers read data and serves other NIUs meanwhile).
        Flow r = start(f.head, flits(bytes));
        r.tail = f.tail;
        // Response: a worker's NIU injects at the measured read rate; a DRAM tile's NIU at one flit a cycle (the
        // GDDR channel above is the limit there).
        Cycle inject = src.is_dram() ? flits(bytes) : bytes / c_.worker_read_inject_bpc;
        stage(r, niu_out(n, b), inject, 0);
        route(r, b, a, noc, link_cycles(bytes));
        stage(r, niu_in(n, a), flits(bytes), 2 * c_.niu_cycles, 0, true);
        return {accepted, r.tail + c_.read_service_cycles};
    }

    struct WriteTimes {
        Cycle flushed;  // source bytes have left L1 (noc_async_writes_flushed)
        Cycle arrived;  // data in the destination (a waiter on it may proceed)
        Cycle acked;    // acknowledgement back at the writer (noc_async_write_barrier)
        Cycle accepted = 0;  // the packet's head left the writer's NIU (its command buffer is free again)
    };

    // One write packet from core `src` to `dst`. `inline_data`: an inline/atomic op (one flit, no L1 read).
    WriteTimes write_packet(Cycle t, int src, Endpoint dst, uint32_t bytes, Noc noc, bool inline_data = false) {
        int n = int(noc);
        Xy a = topo_.workers.at(size_t(src)), b = topo_.xy(dst, noc);
        bool loopback = !dst.is_dram() && dst.id == src;
        Cycle occ_inj = inline_data ? 1 : bytes / c_.worker_write_inject_bpc;
        Cycle occ_flits = inline_data ? 1 : flits(bytes);
        Flow f = start(t, occ_flits);
        stage(f, niu_out(n, a), occ_inj, 0);
        Cycle accepted = f.head, left = f.tail;
        if (!loopback) route(f, a, b, noc, inline_data ? 1 : link_cycles(bytes));
        stage(f, niu_in(n, b), occ_flits, 2 * c_.niu_cycles, 0, true);
        if (dst.is_dram()) {
            // The controller queues kDramQueueDepth writes of this size before the packet backs up (flow control).
            Cycle pass = bytes / c_.dram_write_bpc;
            Cycle occ = bytes < c_.dram_small_write_bytes ? std::max(pass, c_.dram_small_write_cycles) : pass;
            stage_pass(f, dram_.at(size_t(dst.bank())), occ, pass, c_.dram_access_cycles, p_.dram_queue_depth * occ);
        }
        // A packet held up all the way back to its source leaves L1 later by as much.
        Cycle flushed = left + f.src_stall;
        Cycle arrived = f.tail + (inline_data ? k::kAtomicCycles : 0);
        // The ack is a one-flit response on the same (unidirectional) NoC: the rest of the ring back to the writer.
        int back = loopback ? 0 : topo_.hops(b, a, noc);
        Cycle acked = arrived + 2 * c_.niu_cycles + back * c_.hop_cycles + c_.write_ack_cycles;
        return {flushed, arrived, acked, accepted};
    }

    // Cycles a multicast to `n` destinations holds its sender beyond the injection ([dm-mc] fit, see k::).
    static Cycle multicast_hold(size_t n) {
        return n < 2 ? 0 : std::max(0.0, k::kMcastHoldPerDoubling * std::log2(double(n)) - k::kMcastHoldOffset);
    }

    // Multicast write from `src` to the worker cores `dsts`: the sender's NIU is held for the tree's hold time plus
    // the injection; the union of the unicast routes is reserved once (a link shared by several destinations'
    // routes carries the packet once); each destination's arrival is that of its own route.
    std::vector<WriteTimes> multicast_packet(Cycle t, int src, const std::vector<int>& dsts, uint32_t bytes, Noc noc,
                                             bool inline_data = false) {
        std::vector<WriteTimes> out;
        Xy a = topo_.workers.at(size_t(src));
        int n = int(noc);
        Cycle occ_inj = (inline_data ? 1 : bytes / c_.worker_write_inject_bpc) + multicast_hold(dsts.size());
        Cycle occ_flits = inline_data ? 1 : flits(bytes);
        Cycle occ_link = inline_data ? 1 : link_cycles(bytes);
        Flow f0 = start(t, occ_flits);
        stage(f0, niu_out(n, a), occ_inj, 0);
        std::map<const Resource*, Flow> seen;
        for (int d : dsts) {
            Xy b = topo_.workers.at(size_t(d));
            Flow f = f0;
            Xy c = a;
            auto hop = [&](Resource& r) {
                auto it = seen.find(&r);
                if (it != seen.end()) {
                    f = it->second;
                } else {
                    stage(f, r, occ_link, c_.hop_cycles);
                    seen[&r] = f;
                }
            };
            if (noc == Noc::Noc0) {
                for (; c.x != b.x; c.x = Topology::up(c.x, c_.noc_cols)) hop(link(n, c, 0));
                for (; c.y != b.y; c.y = Topology::up(c.y, c_.noc_rows)) hop(link(n, c, 1));
            } else {
                for (; c.y != b.y; c.y = Topology::down(c.y, c_.noc_rows)) hop(link(n, c, 1));
                for (; c.x != b.x; c.x = Topology::down(c.x, c_.noc_cols)) hop(link(n, c, 0));
            }
            stage(f, niu_in(n, b), occ_flits, 2 * c_.niu_cycles, 0, true);
            Cycle arrived = f.tail + (inline_data ? k::kAtomicCycles : 0);
            Cycle acked = arrived + 2 * c_.niu_cycles + topo_.hops(b, a, noc) * c_.hop_cycles + c_.write_ack_cycles;
            out.push_back({f0.tail, arrived, acked, f0.head});
        }
        return out;
    }

    const Resource& dram_bank(int b) const { return dram_.at(size_t(b)); }
    const Topology& topology() const { return topo_; }
    const Chip& chip() const { return c_; }  // the topology's chip under the variant
    // Occupancy booked on the link leaving (x, y) along `axis` (0: x, 1: y) of `noc` (NoC 0 +x/+y, NoC 1 -x/-y).
    Cycle link_busy(Noc noc, Xy c, int axis) const { return link_[int(noc)][node(c) * 2 + size_t(axis)].busy; }

   private:
    size_t node(Xy c) const { return size_t(c.y) * size_t(c_.noc_cols) + size_t(c.x); }
    Resource& link(int noc, Xy c, int axis) { return link_[noc][node(c) * 2 + size_t(axis)]; }
    Resource& niu_out(int noc, Xy c) { return niu_out_[noc][node(c)]; }
    Resource& niu_in(int noc, Xy c) { return niu_in_[noc][node(c)]; }

    Topology topo_;
    Params p_;
    Chip c_;
    ChunkPool pool_;  // before the resources: their bins' memory outlives them
    Cycle floor_time_ = 0;
    int64_t keep_bin_ = 0;  // floor_time_ in bins (Resource::take drops the bins before it)
    std::vector<Resource> link_[2], niu_out_[2], niu_in_[2];
    std::vector<Resource> dram_;
};

// =====================================================================================================================
// Compute costs
// =====================================================================================================================
// MathFidelity as ttnn numbers it (LoFi 0, HiFi2 2, HiFi3 3, HiFi4 4) -> number of fidelity phases.
inline int fidelity_phases(uint8_t fidelity) { return fidelity <= 1 ? 1 : int(fidelity); }

inline bool is_sfpu(Op op) { return op >= Op::SfpuExp; }

// Math-lane cycles for one tile of `op`.
inline Cycle math_cycles(Op op, uint8_t fidelity, bool approx, const Params& p) {
    int ph = fidelity_phases(fidelity);
    switch (op) {
        case Op::Matmul: return k::kMatmulTileLoFi * ph;
        case Op::EltwiseAdd: return k::kEltwiseTile;
        case Op::EltwiseMul: return k::kEltwiseTile * ph;
        case Op::ReduceMax: return k::kReduceTile;
        case Op::ReduceSum: return k::kReduceTile * ph;
        case Op::Copy: return k::kCopyTile;
        case Op::Transpose: return k::kTransposeTile;
        case Op::SfpuExp: return approx ? k::kExpApproxTile : k::kExpAccurateTile;
        case Op::SfpuRecip: return approx ? p.recip_approx_tile : k::kRecipTile;
        case Op::SfpuBinary: return k::kSfpuBinaryTile;
        case Op::SfpuSimple: return k::kSfpuSimpleTile;
        default: return 0;
    }
}

inline Cycle unpack_cycles(uint32_t tile_bytes, const Params& p) { return tile_bytes / p.unpack_bpc; }
inline Cycle pack_cycles(uint32_t tile_bytes, const Params& p) { return tile_bytes / p.pack_bpc; }

// =====================================================================================================================
// Replay
// =====================================================================================================================
struct RiscResult {
    int core = 0;
    Proc proc = Proc::Brisc;
    Cycle start = 0, end = 0;
    Cycle busy = 0;                  // cycles charged to the RISC (issue, compute, API bookkeeping)
    Cycle wait = 0;                  // cycles blocked (CB, DST, semaphore, barrier)
    Cycle lane_busy[3] = {0, 0, 0};  // compute: unpack / math / pack lane occupancy
};

struct LinkBusy {
    Noc noc;
    Xy from;
    int axis;    // 0: along x, 1: along y (direction: the NoC's)
    Cycle busy;  // occupancy booked (flits)
};

struct Result {
    bool ok = true;
    std::string error;  // replay deadlock (a protocol whose outcome depends on host timing) and what blocked
    Cycle first_start = 0, last_end = 0;
    std::vector<RiscResult> riscs;
    std::vector<Cycle> dram_busy;  // per bank occupancy
    std::vector<LinkBusy> busiest_links;  // the most occupied NoC links, busiest first (where contention is)
    double clock_ghz = k::kClockGHz;  // the chip's AI clock
    Cycle duration() const { return last_end - first_start; }
    double duration_ns() const { return duration() / clock_ghz; }
};

class Engine {
   public:
    explicit Engine(Topology topo, Params params = Params{})
        : topo_(std::move(topo)), p_(std::move(params)), fabric_(topo_, p_) {}

    const Topology& topology() const { return topo_; }
    const Params& params() const { return p_; }
    const Fabric& fabric() const { return fabric_; }

    // Setup (single-threaded, before kernels run).
    Risc& add_risc(int core, Proc proc, int dst_buffers = 2) {
        riscs_.emplace_back(new Risc(core, proc, dst_buffers));
        return *riscs_.back();
    }
    void configure_cb(int core, uint32_t cb, uint32_t num_pages) { cbs_[key(core, cb)].num_pages = num_pages; }
    void init_semaphore(int core, uint32_t l1_off, uint32_t value) {
        Sem& s = sems_[key(core, l1_off)];
        s.base = value;
        s.base_time = 0;
        s.incs.clear();
    }
    size_t num_riscs() const { return riscs_.size(); }
    Risc& risc(size_t i) { return *riscs_.at(i); }

    // FNV-1a over every RISC's events: two runs whose digests match replay to the same durations (the check the
    // timing-only mode uses: skipping the math must not change a single recorded event).
    uint64_t trace_digest() const {
        uint64_t h = 1469598103934665603ull;
        auto mix = [&](uint64_t v) {
            for (int b = 0; b < 8; ++b) {
                h ^= (v >> (8 * b)) & 0xff;
                h *= 1099511628211ull;
            }
        };
        for (const auto& r : riscs_) {
            mix(uint64_t(r->core()) << 8 | uint64_t(r->proc()));
            for (const Event& e : r->events()) {
                mix(uint64_t(e.kind) | uint64_t(e.noc) << 8 | uint64_t(e.op) << 16 | uint64_t(e.flags) << 24 |
                    uint64_t(uint32_t(e.target)) << 32);
                mix(uint64_t(e.a) | uint64_t(e.b) << 32);
                uint64_t d;
                static_assert(sizeof d == sizeof e.d, "");
                std::memcpy(&d, &e.d, sizeof d);
                mix(uint64_t(e.c) ^ d);
            }
        }
        return h;
    }

    // The replay. Call once, after every Risc recorded its kernel.
    Result run() {
        size_t n = riscs_.size();
        st_.assign(n, State{});
        niu_reads_.clear();
        cb_index_.clear();
        for (size_t i = 0; i < n; ++i) {
            Xy me = topo_.workers.at(size_t(riscs_[i]->core()));
            Cycle t0 = topo_.hops(topo_.dispatch, me, Noc::Noc0) * fabric_.chip().launch_skew_per_hop;
            State& s = st_[i];
            s.t = t0;
            for (auto& l : s.lane) l = t0;
            s.start = t0;
            push(i);
        }
        next_i_ = kNone;
        for (;;) {
            // The RISC just stepped runs again without a trip through the heap while it is still first.
            std::pair<Cycle, size_t> at{next_t_, next_i_};
            next_i_ = kNone;
            if (at.second == kNone || (!heap_.empty() && heap_.top() < at)) {
                if (at.second != kNone) heap_.push(at);
                if (heap_.empty()) break;
                at = heap_.top();
                heap_.pop();
            }
            auto [t, i] = at;
            State& s = st_[i];
            if (s.blocked || s.queued_at != t) continue;  // stale entry
            s.queued_at = -1;
            // A RISC resumed from a wait may run behind the others; keep a generous margin of history.
            fabric_.set_floor(t - kHistoryCycles);
            step(i);
        }
        Result res;
        res.clock_ghz = fabric_.chip().clock_ghz;
        res.riscs.resize(n);
        for (size_t i = 0; i < n; ++i) {
            State& s = st_[i];
            Risc& r = *riscs_[i];
            RiscResult& o = res.riscs[i];
            o.core = r.core();
            o.proc = r.proc();
            o.start = s.start;
            // A kernel ends when its last instruction ran and its last transfer completed.
            o.end = std::max({s.t, s.lane[0], s.lane[1], s.lane[2]});
            for (const auto& n : s.niu) o.end = std::max({o.end, n.read_done, n.write_acked, n.atomic_acked});
            o.busy = s.busy;
            o.wait = s.wait;
            for (int l = 0; l < 3; ++l) o.lane_busy[l] = s.lane_busy[l];
            if (s.pc < r.events().size()) {
                res.ok = false;
                char buf[256];
                snprintf(buf, sizeof buf, "replay deadlock: core %d %s blocked at event %zu: %s\n", r.core(),
                         r.proc() == Proc::Brisc ? "BRISC" : r.proc() == Proc::Ncrisc ? "NCRISC" : "TRISC", s.pc,
                         describe(r.events()[s.pc]).c_str());
                res.error += buf;
            }
            if (i == 0 || o.start < res.first_start) res.first_start = o.start;
            if (i == 0 || o.end > res.last_end) res.last_end = o.end;
        }
        for (size_t b = 0; b < topo_.dram_banks.size(); ++b) res.dram_busy.push_back(fabric_.dram_bank(int(b)).busy);
        for (int noc = 0; noc < 2; ++noc)
            for (int y = 0; y < fabric_.chip().noc_rows; ++y)
                for (int x = 0; x < fabric_.chip().noc_cols; ++x)
                    for (int axis = 0; axis < 2; ++axis) {
                        Cycle b = fabric_.link_busy(Noc(noc), {x, y}, axis);
                        if (b > 0) res.busiest_links.push_back({Noc(noc), {x, y}, axis, b});
                    }
        std::stable_sort(res.busiest_links.begin(), res.busiest_links.end(),
                         [](const LinkBusy& a, const LinkBusy& b) { return a.busy > b.busy; });
        if (res.busiest_links.size() > kBusiestLinks) res.busiest_links.resize(kBusiestLinks);
        return res;
    }

    // The replay's result as the JSON object the runtime's result file carries under "timing" (docs/TIMING.md,
    // section 6); times in ns. Cores are named "x,y" (logical), RISCs "BRISC" / "NCRISC" / "TRISC".
    std::string result_json(const Result& r) const { return result_json(r, trace_digest()); }
    // The same with the trace's digest given (computed beside the replay, or shared by replays of the same trace).
    std::string result_json(const Result& r, uint64_t digest) const {
        std::string o;
        char b[256];
        auto esc = [](const std::string& in) {
            std::string out;
            for (char c : in) {
                if (c == '"' || c == '\\') out += '\\';
                if (c == '\n') {
                    out += "\\n";
                    continue;
                }
                out += c;
            }
            return out;
        };
        double ghz = fabric_.chip().clock_ghz;
        auto ns = [ghz](Cycle c) { return c / ghz; };
        o += "{\"variant\": \"" + esc(p_.variant) + "\", ";
        snprintf(b, sizeof b, "\"ok\": %s, \"duration_ns\": %.3f, \"first_start_ns\": %.3f, \"last_end_ns\": %.3f, ",
                 r.ok ? "true" : "false", ns(r.duration()), ns(r.first_start), ns(r.last_end));
        o += b;
        o += "\"error\": \"" + esc(r.error) + "\", ";
        snprintf(b, sizeof b, "\"trace_digest\": \"%016llx\", \"cores\": {", (unsigned long long)digest);
        o += b;
        std::map<int, std::vector<size_t>> by_core;
        for (size_t i = 0; i < r.riscs.size(); ++i) by_core[r.riscs[i].core].push_back(i);
        bool first_core = true;
        for (auto& [core, idx] : by_core) {
            snprintf(b, sizeof b, "%s\"%d,%d\": {", first_core ? "" : ", ", core % topo_.grid_w, core / topo_.grid_w);
            o += b;
            first_core = false;
            bool first_risc = true;
            for (size_t i : idx) {
                const RiscResult& x = r.riscs[i];
                const char* name = x.proc == Proc::Brisc ? "BRISC" : x.proc == Proc::Ncrisc ? "NCRISC" : "TRISC";
                snprintf(b, sizeof b, "%s\"%s\": {\"start\": %.3f, \"end\": %.3f, \"busy\": %.3f, \"wait\": %.3f",
                         first_risc ? "" : ", ", name, ns(x.start), ns(x.end), ns(x.busy), ns(x.wait));
                o += b;
                if (x.proc == Proc::Compute) {
                    snprintf(b, sizeof b, ", \"unpack\": %.3f, \"math\": %.3f, \"pack\": %.3f", ns(x.lane_busy[0]),
                             ns(x.lane_busy[1]), ns(x.lane_busy[2]));
                    o += b;
                }
                o += "}";
                first_risc = false;
            }
            o += "}";
        }
        o += "}, \"dram_bank_busy\": [";
        for (size_t i = 0; i < r.dram_busy.size(); ++i) {
            snprintf(b, sizeof b, "%s%.3f", i ? ", " : "", ns(r.dram_busy[i]));
            o += b;
        }
        o += "], \"busiest_links\": [";
        for (size_t i = 0; i < r.busiest_links.size(); ++i) {
            const LinkBusy& l = r.busiest_links[i];
            snprintf(b, sizeof b, "%s[%d, %d, %d, %d, %.3f]", i ? ", " : "", int(l.noc), l.from.x, l.from.y, l.axis,
                     ns(l.busy));
            o += b;
        }
        o += "]}";
        return o;
    }

   private:
    static constexpr Cycle kHistoryCycles = 1 << 20;
    static constexpr size_t kBusiestLinks = 16;
    static uint64_t key(int core, uint32_t x) { return (uint64_t(uint32_t(core)) << 32) | x; }

    struct CbState {
        uint32_t num_pages = 0;
        uint64_t received = 0, acked = 0;
        std::vector<std::pair<uint64_t, Cycle>> pushes, pops;  // (cumulative count, time), counts increasing
        std::vector<size_t> waiters;
    };
    struct Sem {
        uint32_t base = 0;
        Cycle base_time = 0;
        std::vector<std::pair<Cycle, uint32_t>> incs;  // (arrival, increment) since the last set
        std::vector<size_t> waiters;
    };
    // A value per NoC transaction id, as a std::map's operator[] gives it (default-constructed on first use): the
    // ids kernels use (0..kMaxNocTrid, checked by the runtime) in an array, looked up on every read packet; any
    // other id (the timing C API's callers) in a map.
    template <class T>
    struct ByTrid {
        static constexpr uint32_t kDirect = 16;
        T direct[kDirect]{};
        std::map<uint32_t, T> rest;
        T& operator[](uint32_t trid) { return trid < kDirect ? direct[trid] : rest[trid]; }
    };
    struct State {
        size_t pc = 0;
        Cycle t = 0;                // data-movement RISC clock
        Cycle lane[3] = {0, 0, 0};  // compute lanes: unpack, math, pack
        Cycle start = 0, busy = 0, wait = 0, lane_busy[3] = {0, 0, 0};
        // What this RISC's barriers wait for, per NoC: each NoC's NIU counts its own transactions
        // (noc_reads_num_issued[noc], ..., NIU_MST_REQS_OUTSTANDING_ID(trid) per NIU), and noc_async_*_barrier(noc)
        // polls that NoC's only.
        struct NiuDone {
            Cycle read_done = 0, write_acked = 0, write_flushed = 0, atomic_acked = 0;
            ByTrid<Cycle> trid_read, trid_write;
            // Completion times of this RISC's reads in flight per transaction id (the software throttle, [noc-api]).
            ByTrid<std::priority_queue<Cycle, std::vector<Cycle>, std::greater<>>> trid_inflight;
        } niu[2];
        // Flow control: when each command buffer (per NoC: read, write, atomic / inline) is free again.
        Cycle cmd_free[2][3] = {{0, 0, 0}, {0, 0, 0}};
        uint64_t acquires = 0, commits = 0, waits = 0, releases = 0;
        Cycle commit_time[2] = {0, 0}, release_time[2] = {0, 0};
        Cycle math_started = 0;
        bool blocked = false;
        Cycle queued_at = -1;
    };

    bool is_compute(size_t i) const { return riscs_[i]->proc() == Proc::Compute; }

    // The lane an event runs on in the compute stream: unpack waits for and pops input CBs; pack reserves and
    // pushes output CBs and owns the DST hand-over; everything else (SFPU, semaphores, delays) is on math.
    static int lane_of(const Event& e) {
        switch (e.kind) {
            case Ev::CbWaitFront:
            case Ev::CbPopFront: return 0;
            case Ev::Pack:
            case Ev::RegsWait:
            case Ev::RegsRelease:
            case Ev::CbReserveBack:
            case Ev::CbPushBack: return 2;
            case Ev::Compute: return is_sfpu(Op(e.op)) ? 1 : 0;
            default: return 1;
        }
    }

    Cycle& clock(size_t i, const Event& e) { return is_compute(i) ? st_[i].lane[lane_of(e)] : st_[i].t; }

    // Queue RISC i at its next event's time. `self`: i was just stepped, and waits in next_i_ (run() compares it with
    // the heap's first: the order of steps is the heap's).
    void push(size_t i, bool self = false) {
        State& s = st_[i];
        const auto& ev = riscs_[i]->events();
        if (s.pc >= ev.size()) return;
        Cycle t = clock(i, ev[s.pc]);
        s.queued_at = t;
        if (self) {
            next_t_ = t;
            next_i_ = i;
        } else
            heap_.push({t, i});
    }

    void charge(size_t i, Cycle& clk, Cycle c, int lane) {
        clk += c;
        st_[i].busy += c;
        if (lane >= 0) st_[i].lane_busy[lane] += c;
    }
    void wait_until(size_t i, Cycle& clk, Cycle t) {
        if (t > clk) {
            st_[i].wait += t - clk;
            clk = t;
        }
    }
    void block(size_t i, std::vector<size_t>& waiters) {
        st_[i].blocked = true;
        waiters.push_back(i);
    }
    void wake(std::vector<size_t>& waiters) {
        std::vector<size_t> w;
        w.swap(waiters);
        for (size_t r : w) {
            st_[r].blocked = false;
            push(r);
        }
    }

    // Cores of the rectangle with corners `first` and `last` (row-major core indices), row-major.
    std::vector<int> rect(int first, int last, int self, bool include_self) const {
        int w = topo_.grid_w;
        int x0 = first % w, y0 = first / w, x1 = last % w, y1 = last / w;
        std::vector<int> out;
        for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y)
            for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) {
                int c = y * w + x;
                if (c != self || include_self) out.push_back(c);
            }
        return out;
    }

    Sem& sem(int core, uint32_t off) { return sems_[key(core, off)]; }

    // The state of CB `cb` of `core`: the map's entry, found once per (core, CB index < 64) and then from an index
    // (map entries never move); every CB event of the replay looks its CB up.
    CbState& cb_state(int core, uint32_t cb) {
        if (cb >= kIndexedCbs || core < 0) return cbs_[key(core, cb)];
        size_t at = size_t(core) * kIndexedCbs + cb;
        if (at >= cb_index_.size()) cb_index_.resize(at + 1, nullptr);
        if (!cb_index_[at]) cb_index_[at] = &cbs_[key(core, cb)];
        return *cb_index_[at];
    }
    using ReadsInFlight = std::priority_queue<Cycle, std::vector<Cycle>, std::greater<>>;
    ReadsInFlight& niu_reads(int core, Noc noc) {
        size_t at = size_t(core) * 2 + size_t(noc);
        if (at >= niu_reads_.size()) niu_reads_.resize(at + 1);
        return niu_reads_[at];
    }

    // Earliest time the semaphore met (value, at_least), from the updates applied so far; < 0 if it has not.
    // Increments are applied in arrival order (they may have been issued out of arrival order).
    static Cycle sem_ready(const Sem& s, uint32_t value, bool at_least) {
        auto ok = [&](uint32_t v) { return at_least ? v >= value : v == value; };
        uint32_t v = s.base;
        if (ok(v)) return s.base_time;
        std::vector<std::pair<Cycle, uint32_t>> incs = s.incs;
        std::stable_sort(incs.begin(), incs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& [t, inc] : incs) {
            v += inc;
            if (ok(v)) return std::max(t, s.base_time);
        }
        return -1;
    }

    void set_sem(Sem& m, uint32_t value, Cycle t) {
        m.base = value;
        m.base_time = t;
        m.incs.clear();
        wake(m.waiters);
    }

    // Issue a transfer of `bytes` as packets of the chip's maximum size at most, each costing issue time on the RISC
    // (the chip's read or write issue cost: buf 0 is the read command buffer). With
    // flow control, a packet is issued once command buffer `buf` of its NoC is free (tt-metal spins on
    // noc_cmd_buf_ready before writing a command: [noc-api]; the buffer frees when the previous packet's head got
    // its first hop, [isa-niu]); `one` returns when that was.
    template <class F>
    void packets(size_t i, Cycle& clk, int lane, uint32_t bytes, Noc noc, int buf, F&& one) {
        uint32_t left = bytes;
        Cycle& free = st_[i].cmd_free[int(noc)][buf];
        Cycle issue = buf == 0 ? fabric_.chip().read_issue_cycles : fabric_.chip().write_issue_cycles;
        while (left > 0) {
            uint32_t pkt = std::min(left, fabric_.chip().max_packet_bytes);
            if (p_.flow_control) wait_until(i, clk, free);
            charge(i, clk, issue, lane);
            Cycle accepted = one(pkt);
            if (p_.flow_control) free = std::max(free, accepted);
            left -= pkt;
        }
    }

    // Flow control for one read packet about to be issued at `clk`: the NIU tracks at most kMaxReadsInFlight reads
    // (both RISCs of the core share it), a transaction id at most kTridReadThrottle (tt-metal's reader spins).
    void read_slot(size_t i, Cycle& clk, int core, Noc noc, uint32_t trid) {
        if (!p_.flow_control) return;
        auto& q = niu_reads(core, noc);
        while (!q.empty() && q.top() <= clk) q.pop();
        while (double(q.size()) >= p_.max_reads_in_flight) {
            wait_until(i, clk, q.top());
            q.pop();
        }
        if (trid == kNoTrid) return;
        auto& t = st_[i].niu[int(noc)].trid_inflight[trid];
        while (!t.empty() && t.top() <= clk) t.pop();
        while (double(t.size()) >= k::kTridReadThrottle) {
            wait_until(i, clk, t.top());
            t.pop();
        }
    }
    void read_issued(size_t i, int core, Noc noc, uint32_t trid, Cycle done) {
        if (!p_.flow_control) return;
        niu_reads(core, noc).push(done);
        if (trid != kNoTrid) st_[i].niu[int(noc)].trid_inflight[trid].push(done);
    }

    void step(size_t i) {
        State& s = st_[i];
        Risc& r = *riscs_[i];
        const Event& e = r.events()[s.pc];
        Cycle& clk = clock(i, e);
        int lane = is_compute(i) ? lane_of(e) : -1;
        int core = r.core();
        Noc noc = Noc(e.noc);
        auto& d = s.niu[int(noc)];  // the counters of the NoC this event issues on / waits for
        switch (e.kind) {
            case Ev::Read:
                packets(i, clk, lane, e.a, noc, 0, [&](uint32_t pkt) {
                    read_slot(i, clk, core, noc, e.b);
                    auto r = fabric_.read_packet(clk, core, Endpoint{e.target}, pkt, noc);
                    read_issued(i, core, noc, e.b, r.done);
                    d.read_done = std::max(d.read_done, r.done);
                    if (e.b != kNoTrid) d.trid_read[e.b] = std::max(d.trid_read[e.b], r.done);
                    return r.accepted;
                });
                break;
            case Ev::Write:
                packets(i, clk, lane, e.a, noc, 1, [&](uint32_t pkt) {
                    auto w = fabric_.write_packet(clk, core, Endpoint{e.target}, pkt, noc);
                    d.write_acked = std::max(d.write_acked, w.acked);
                    d.write_flushed = std::max(d.write_flushed, w.flushed);
                    if (e.b != kNoTrid) d.trid_write[e.b] = std::max(d.trid_write[e.b], w.acked);
                    return w.accepted;
                });
                break;
            case Ev::Mcast: {
                auto dsts = rect(e.target, int(e.b), core, e.flags & 1);
                packets(i, clk, lane, e.a, noc, 1, [&](uint32_t pkt) {
                    Cycle left = clk, accepted = clk;
                    for (auto& w : fabric_.multicast_packet(clk, core, dsts, pkt, noc)) {
                        d.write_acked = std::max(d.write_acked, w.acked);
                        d.write_flushed = std::max(d.write_flushed, w.flushed);
                        left = std::max(left, w.flushed);
                        accepted = std::max(accepted, w.accepted);
                    }
                    // [dm-mc]: multicasts do not overlap: the next one issues once this one has left the sender.
                    wait_until(i, clk, left);
                    return accepted;
                });
                break;
            }
            case Ev::AtomicInc: {
                if (p_.flow_control) wait_until(i, clk, s.cmd_free[int(noc)][2]);
                charge(i, clk, fabric_.chip().write_issue_cycles, lane);
                auto w = fabric_.write_packet(clk, core, Endpoint::core(e.target), 4, noc, true);
                if (p_.flow_control) s.cmd_free[int(noc)][2] = std::max(s.cmd_free[int(noc)][2], w.accepted);
                d.atomic_acked = std::max(d.atomic_acked, w.acked);
                Sem& m = sem(e.target, e.a);
                m.incs.push_back({w.arrived, e.b});
                wake(m.waiters);
                break;
            }
            case Ev::AtomicIncMcast:
            case Ev::SemWriteMcast: {
                charge(i, clk, fabric_.chip().write_issue_cycles, lane);
                auto dsts = rect(e.target, int(e.c), core, false);
                auto ws = fabric_.multicast_packet(clk, core, dsts, 4, noc, true);
                if (!ws.empty()) wait_until(i, clk, ws[0].flushed);
                for (size_t k = 0; k < dsts.size(); ++k) {
                    Sem& m = sem(dsts[k], e.a);
                    if (e.kind == Ev::AtomicIncMcast) {
                        d.atomic_acked = std::max(d.atomic_acked, ws[k].acked);
                        m.incs.push_back({ws[k].arrived, e.b});
                        wake(m.waiters);
                    } else {
                        d.write_acked = std::max(d.write_acked, ws[k].acked);
                        set_sem(m, e.b, ws[k].arrived);
                    }
                }
                break;
            }
            case Ev::SemWriteRemote: {
                if (p_.flow_control) wait_until(i, clk, s.cmd_free[int(noc)][2]);
                charge(i, clk, fabric_.chip().write_issue_cycles, lane);
                auto w = fabric_.write_packet(clk, core, Endpoint::core(e.target), 4, noc, true);
                if (p_.flow_control) s.cmd_free[int(noc)][2] = std::max(s.cmd_free[int(noc)][2], w.accepted);
                d.write_acked = std::max(d.write_acked, w.acked);
                set_sem(sem(e.target, e.a), e.b, w.arrived);
                break;
            }
            case Ev::ReadBarrier:
            case Ev::ReadBarrierTrid:
            case Ev::WriteBarrier:
            case Ev::WriteBarrierTrid:
            case Ev::WritesFlushed:
            case Ev::AtomicBarrier: {
                Cycle until = e.kind == Ev::ReadBarrier        ? d.read_done
                              : e.kind == Ev::ReadBarrierTrid  ? d.trid_read[e.a]
                              : e.kind == Ev::WriteBarrier     ? d.write_acked
                              : e.kind == Ev::WriteBarrierTrid ? d.trid_write[e.a]
                              : e.kind == Ev::WritesFlushed    ? d.write_flushed
                                                               : d.atomic_acked;
                charge(i, clk, p_.local_poll_cycles, lane);
                wait_until(i, clk, until);
                break;
            }
            case Ev::Compute: {
                Op op = Op(e.op);
                Cycle math = math_cycles(op, uint8_t(e.target), e.flags & 1, p_) * e.a * (e.d > 0 ? e.d : 1.0);
                if (is_sfpu(op)) {
                    charge(i, s.lane[1], p_.tile_op_overhead + math * fabric_.chip().sfpu_scale, 1);
                    break;
                }
                // The unpacker runs at most one call ahead of math (srcA/srcB are double-buffered).
                wait_until(i, s.lane[0], s.math_started);
                Cycle one = unpack_cycles(e.c, p_) * ((e.flags & 2) ? p_.tilize_factor : 1.0);
                charge(i, s.lane[0], p_.tile_op_overhead + one * e.b, 0);
                // Math starts once the first operands are in and cannot end before the unpacker does.
                wait_until(i, s.lane[1], s.lane[0] - (e.b ? one * (e.b - 1) : 0));
                s.math_started = s.lane[1];
                charge(i, s.lane[1], p_.tile_op_overhead + math, 1);
                wait_until(i, s.lane[1], s.lane[0]);
                break;
            }
            case Ev::Pack:
                charge(i, s.lane[2],
                       p_.tile_op_overhead + pack_cycles(e.b, p_) * e.a * ((e.flags & 1) ? p_.tilize_factor : 1.0), 2);
                break;
            case Ev::RegsAcquire: {  // math gets a DST half once pack released it (double buffer, or one if full)
                uint64_t nb = uint64_t(std::max(1, r.dst_buffers()));
                if (s.acquires >= nb) wait_until(i, s.lane[1], s.release_time[(s.acquires - nb) % 2]);
                s.acquires++;
                break;
            }
            case Ev::RegsCommit:
                s.commit_time[s.commits++ % 2] = s.lane[1];
                break;
            case Ev::RegsWait:
                wait_until(i, s.lane[2], s.commit_time[s.waits++ % 2]);
                break;
            case Ev::RegsRelease:
                s.release_time[s.releases++ % 2] = s.lane[2];
                break;
            case Ev::CbWaitFront: {
                CbState& c = cb_state(core, uint32_t(e.target));
                uint64_t need = c.acked + e.a;
                if (need > c.received) return block(i, c.waiters);
                auto it = std::lower_bound(c.pushes.begin(), c.pushes.end(), std::make_pair(need, Cycle(-1e300)));
                charge(i, clk, p_.cb_api_cycles, lane);
                if (it != c.pushes.end()) wait_until(i, clk, it->second);
                break;
            }
            case Ev::CbPopFront: {
                CbState& c = cb_state(core, uint32_t(e.target));
                charge(i, clk, p_.cb_api_cycles, lane);
                c.acked += e.a;
                c.pops.push_back({c.acked, clk + p_.cb_handoff_cycles});
                wake(c.waiters);
                break;
            }
            case Ev::CbReserveBack: {
                CbState& c = cb_state(core, uint32_t(e.target));
                int64_t need = int64_t(c.received) + int64_t(e.a) - int64_t(c.num_pages);
                Cycle ready = 0;
                if (need > 0) {
                    if (uint64_t(need) > c.acked) return block(i, c.waiters);
                    auto it = std::lower_bound(c.pops.begin(), c.pops.end(),
                                               std::make_pair(uint64_t(need), Cycle(-1e300)));
                    if (it != c.pops.end()) ready = it->second;
                }
                charge(i, clk, p_.cb_api_cycles, lane);
                wait_until(i, clk, ready);
                break;
            }
            case Ev::CbPushBack: {
                CbState& c = cb_state(core, uint32_t(e.target));
                charge(i, clk, p_.cb_api_cycles, lane);
                c.received += e.a;
                c.pushes.push_back({c.received, clk + p_.cb_handoff_cycles});
                wake(c.waiters);
                break;
            }
            case Ev::SemWait: {
                Sem& m = sem(core, e.a);
                Cycle ready = sem_ready(m, e.b, e.flags & 1);
                if (ready < 0) return block(i, m.waiters);
                charge(i, clk, p_.local_poll_cycles, lane);
                wait_until(i, clk, ready);
                break;
            }
            case Ev::SemSet:
                charge(i, clk, p_.local_poll_cycles, lane);
                set_sem(sem(core, e.a), e.b, clk);
                break;
            case Ev::Delay:
                charge(i, clk, e.d, lane);
                break;
            case Ev::Config: {
                Cycle c = e.op ? p_.reconfig_cycles : p_.compute_init_cycles;
                for (int l = 0; l < 3; ++l)
                    if (e.flags & (1 << l)) {
                        if (is_compute(i))
                            charge(i, s.lane[l], c, l);
                        else
                            charge(i, clk, c, lane);
                    }
                break;
            }
        }
        s.pc++;
        push(i, true);
    }

    static std::string describe(const Event& e) {
        char b[160];
        switch (e.kind) {
            case Ev::CbWaitFront: snprintf(b, sizeof b, "cb_wait_front(cb=%d, %u)", e.target, e.a); break;
            case Ev::CbReserveBack: snprintf(b, sizeof b, "cb_reserve_back(cb=%d, %u)", e.target, e.a); break;
            case Ev::SemWait:
                snprintf(b, sizeof b, "semaphore wait (L1 0x%x %s %u)", e.a, (e.flags & 1) ? ">=" : "==", e.b);
                break;
            default: snprintf(b, sizeof b, "event kind %d", int(e.kind));
        }
        return b;
    }

    Topology topo_;
    Params p_;
    Fabric fabric_;
    std::vector<std::unique_ptr<Risc>> riscs_;
    std::map<uint64_t, CbState> cbs_;
    std::map<uint64_t, Sem> sems_;
    std::vector<State> st_;
    // Flow control: completion times of the reads each NIU (core * 2 + NoC) has in flight.
    std::vector<ReadsInFlight> niu_reads_;
    static constexpr uint32_t kIndexedCbs = 64;
    std::vector<CbState*> cb_index_;  // cb_state's index into cbs_
    std::priority_queue<std::pair<Cycle, size_t>, std::vector<std::pair<Cycle, size_t>>, std::greater<>> heap_;
    static constexpr size_t kNone = ~size_t(0);
    // The RISC step() re-queued (push(i, true)), not in heap_, and its time: two fields, not a pair, because run()
    // reads them right after step() wrote them, and a 16-byte load of two 8-byte stores cannot be forwarded.
    Cycle next_t_ = 0;
    size_t next_i_ = kNone;
};

}  // namespace timing
