// The timing model's recording side: what the emulator's kernel hooks include (docs/TIMING.md, section 5).
//
// Every RISC of a program appends the events of its API calls to its own `timing::Risc` trace while the kernels run
// (no locks, no shared state); after every thread joined, the engine (emu/timing_engine.h, included by the runtime
// and the timing C API only) replays the traces against a chip's NoC, DRAM and clock. Kernels see only this file, so
// the engine, its constants and its chips (Wormhole B0, Blackhole) change without recompiling a kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace timing {

using Cycle = double;  // virtual cycles of the chip's AI clock (double: bandwidth occupancies are fractional)

enum class Noc : uint8_t { Noc0 = 0, Noc1 = 1 };
enum class Proc : uint8_t { Brisc = 0, Ncrisc = 1, Compute = 2 };  // emu::Processor's values


// A NoC endpoint as the runtime decodes it: a worker core (row-major logical index) or a DRAM bank.
struct Endpoint {
    int32_t id = 0;  // >= 0: worker core index; < 0: DRAM bank (-1 - bank)
    static Endpoint core(int idx) { return {idx}; }
    static Endpoint dram(int bank) { return {-1 - bank}; }
    bool is_dram() const { return id < 0; }
    int bank() const { return -1 - id; }
};

// Compute ops the hooks record (their costs: emu/timing_engine.h, math_cycles).
enum class Op : uint8_t {
    Matmul = 0,  // 32x32x32 tile products (matmul_tiles / matmul_block); fidelity phases
    EltwiseAdd,  // add/sub (and their bcast forms): no fidelity
    EltwiseMul,  // mul (and bcast): fidelity phases
    ReduceMax,   // reduce_tile with MAX: no fidelity
    ReduceSum,   // reduce_tile with SUM/AVG: fidelity phases
    Copy,        // copy_tile (datacopy srcA -> DST)
    Transpose,   // transpose_wh_tile
    SfpuExp,     // exp_tile: approx selects the fast approximation
    SfpuRecip,   // recip_tile
    SfpuBinary,  // binary max/min and other two-operand SFPU ops on DST
    SfpuSimple,  // negative, threshold, fill, select ... (one load, one op, one store per step)
    NumOps
};


// =====================================================================================================================
// Recording: one `Risc` per emulator thread. Hooks append events; nothing is shared while kernels run.
// =====================================================================================================================
constexpr uint32_t kNoTrid = 0xFFFFFFFFu;

enum class Ev : uint8_t {
    Read, Write, Mcast, AtomicInc, AtomicIncMcast, SemWriteRemote, SemWriteMcast,
    ReadBarrier, WriteBarrier, WritesFlushed, AtomicBarrier, ReadBarrierTrid, WriteBarrierTrid,
    Compute, Pack, RegsAcquire, RegsCommit, RegsWait, RegsRelease,
    CbWaitFront, CbPopFront, CbReserveBack, CbPushBack,
    SemWait, SemSet, Delay,
    Config,  // an op's *_init or a format reconfig on the compute lanes in `flags` (op: 1 reconfig, 0 init)
};

struct Event {
    Ev kind;
    uint8_t noc = 0, op = 0, flags = 0;  // flags bit0: approx (compute) / at_least (sem wait) / include_self (mcast)
    int32_t target = 0;                   // Endpoint id, CB index, first core of a rectangle, or fidelity
    uint32_t a = 0, b = 0, c = 0;         // bytes / pages / value / trid / L1 offset ... (per kind)
    double d = 0;                         // Delay: cycles; Compute: tile fraction
};

class Risc {
   public:
    Risc(int core, Proc proc, int dst_buffers = 2) : core_(core), proc_(proc), dst_buffers_(dst_buffers) {}
    int core() const { return core_; }
    Proc proc() const { return proc_; }
    int dst_buffers() const { return dst_buffers_; }
    const std::vector<Event>& events() const { return ev_; }
    // Room for `n` events before the trace's storage moves (the runtime's traces: a RISC records thousands of events,
    // and each move copies the trace and touches new memory).
    void reserve(std::size_t n) { ev_.reserve(n); }

    // ---- data movement (one call per API call; transfers above kMaxPacketBytes are split into packets on replay)
    void noc_read(Endpoint src, uint32_t bytes, Noc noc, uint32_t trid = kNoTrid) {
        add({Ev::Read, uint8_t(noc), 0, 0, src.id, bytes, trid});
    }
    void noc_write(Endpoint dst, uint32_t bytes, Noc noc, uint32_t trid = kNoTrid) {
        add({Ev::Write, uint8_t(noc), 0, 0, dst.id, bytes, trid});
    }
    // Multicast to the worker cores of the rectangle with corners first_core and last_core (row-major indices).
    void noc_write_multicast(int first_core, int last_core, uint32_t bytes, Noc noc, bool include_self) {
        add({Ev::Mcast, uint8_t(noc), 0, uint8_t(include_self), first_core, bytes, uint32_t(last_core)});
    }
    void sem_inc(int dst_core, uint32_t l1_off, uint32_t incr, Noc noc) {
        add({Ev::AtomicInc, uint8_t(noc), 0, 0, dst_core, l1_off, incr});
    }
    void sem_inc_multicast(int first_core, int last_core, uint32_t l1_off, uint32_t incr, Noc noc) {
        add({Ev::AtomicIncMcast, uint8_t(noc), 0, 0, first_core, l1_off, incr, uint32_t(last_core)});
    }
    // A value written into a semaphore slot of another core (noc_inline_dw_write, noc_semaphore_set_remote).
    void sem_write_remote(int dst_core, uint32_t l1_off, uint32_t value, Noc noc) {
        add({Ev::SemWriteRemote, uint8_t(noc), 0, 0, dst_core, l1_off, value});
    }
    void sem_write_multicast(int first_core, int last_core, uint32_t l1_off, uint32_t value, Noc noc) {
        add({Ev::SemWriteMcast, uint8_t(noc), 0, 0, first_core, l1_off, value, uint32_t(last_core)});
    }
    // Barriers wait on one NoC's NIU counters (noc_async_read_barrier(noc) ...): transfers issued on the other NoC
    // are not waited for.
    void read_barrier(Noc noc, uint32_t trid = kNoTrid) {
        add({trid == kNoTrid ? Ev::ReadBarrier : Ev::ReadBarrierTrid, uint8_t(noc), 0, 0, 0, trid});
    }
    void write_barrier(Noc noc, uint32_t trid = kNoTrid) {
        add({trid == kNoTrid ? Ev::WriteBarrier : Ev::WriteBarrierTrid, uint8_t(noc), 0, 0, 0, trid});
    }
    void writes_flushed(Noc noc) { add({Ev::WritesFlushed, uint8_t(noc)}); }
    void atomic_barrier(Noc noc) { add({Ev::AtomicBarrier, uint8_t(noc)}); }

    // ---- compute (the compute stream's three lanes)
    // `math_tiles` tiles of `op`; before them the unpacker reads `unpack_tiles` tiles of `unpack_tile_bytes` (0 for
    // SFPU ops, which work on DST). fidelity: ttnn MathFidelity value. `tile_fraction`: the share of a 32x32 tile the
    // math touches: a matmul whose in0 tiles have 16 rows (half / tiny tiles: the engine takes 8 rows a cycle) is
    // 0.5; an SFPU op on two of the four faces (VectorMode R or C) is 0.5.
    // `tilize`: the unpacker reads row-major data (tilize_block): kTilizeUnpackFactor times the plain cost.
    void compute(Op op, uint32_t math_tiles, uint32_t unpack_tiles, uint32_t unpack_tile_bytes, uint8_t fidelity,
                 bool approx = false, double tile_fraction = 1.0, bool tilize = false) {
        Event e{Ev::Compute, 0, uint8_t(op), uint8_t(uint8_t(approx) | uint8_t(tilize) << 1), int32_t(fidelity),
                math_tiles, unpack_tiles, unpack_tile_bytes};
        e.d = tile_fraction;
        add(e);
    }
    // `untilize`: the packer writes row-major rows (pack_untilize): kTilizeUnpackFactor times the plain cost.
    void pack(uint32_t tiles, uint32_t tile_bytes, bool untilize = false) {
        add({Ev::Pack, 0, 0, uint8_t(untilize), 0, tiles, tile_bytes});
    }
    // An op's *_init (reconfig false) or a format reconfig on the compute lanes `lanes` (bit 0 unpack, 1 math,
    // 2 pack).
    void config(uint8_t lanes, bool reconfig) { add({Ev::Config, 0, uint8_t(reconfig), lanes}); }
    void tile_regs_acquire() { add({Ev::RegsAcquire}); }
    void tile_regs_commit() { add({Ev::RegsCommit}); }
    void tile_regs_wait() { add({Ev::RegsWait}); }
    void tile_regs_release() { add({Ev::RegsRelease}); }

    // ---- circular buffers and semaphores (of the calling RISC's core)
    void cb_wait_front(uint32_t cb, uint32_t pages) { add({Ev::CbWaitFront, 0, 0, 0, int32_t(cb), pages}); }
    void cb_pop_front(uint32_t cb, uint32_t pages) { add({Ev::CbPopFront, 0, 0, 0, int32_t(cb), pages}); }
    void cb_reserve_back(uint32_t cb, uint32_t pages) { add({Ev::CbReserveBack, 0, 0, 0, int32_t(cb), pages}); }
    void cb_push_back(uint32_t cb, uint32_t pages) { add({Ev::CbPushBack, 0, 0, 0, int32_t(cb), pages}); }
    void sem_wait(uint32_t l1_off, uint32_t value, bool at_least) {
        add({Ev::SemWait, 0, 0, uint8_t(at_least), 0, l1_off, value});
    }
    void sem_set(uint32_t l1_off, uint32_t value) { add({Ev::SemSet, 0, 0, 0, 0, l1_off, value}); }
    void delay(Cycle cycles) {
        Event e{Ev::Delay};
        e.d = cycles;
        add(e);
    }

   private:
    void add(const Event& e) { ev_.push_back(e); }
    int core_;
    Proc proc_;
    int dst_buffers_;
    std::vector<Event> ev_;
};

}  // namespace timing
