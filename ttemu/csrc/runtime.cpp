// ttemu host emulator runtime: runs one program (the kernels of a ttnn.ProgramDescriptor, compiled for the
// host by compiler.py) on an emulated Wormhole chip, in its own process.
//
// What it is: a FUNCTIONAL model. Every core of the program gets a 1.5 MB L1 mapped at a fixed low host address
// (see emu::kL1HostBase), one host thread per kernel (BRISC, NCRISC, and one for the three TRISCs), real circular
// buffers with the tt-metal counters, semaphores in L1, and a NOC that copies bytes between L1s and the 12 DRAM
// banks (a memfd shared with the Python parent). L1 height-sharded and L1-interleaved buffers live between programs
// in a second memfd (one L1 image per core); their ranges are copied into the cores' L1 before kernels start and back
// after they finish, so kernels see and leave data there as on silicon. Functionally, NOC transfers complete at
// barriers (reads) or at issue (writes). Time is the timing model's (emu/timing.h, docs/TIMING.md): every kernel
// thread records its API calls into its own timing::Risc trace, and after all threads joined the traces are replayed
// in virtual time (NoC, DRAM banks, CBs, semaphores, compute), so durations do not depend on host scheduling.
//
// Usage: ttfd_emu_run PROGRAM_FILE   (program file written by ttemu/runtime.py)
// Exit codes: 0 ok, 3 hang, 4 kernel fault, 5 setup error. A JSON result is written to the path named in the
// program file in every case (result.py reads it). A fault's result carries its stack as (library, offset) frames,
// which the parent resolves to kernel source lines (runtime.py).
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "emu/runtime.h"
#include "emu/timing_engine.h"

// ThreadSanitizer builds (TTFD_EMU_SANITIZE=thread): every write the NOC delivers to a core releases the core, and
// invalidate_l1_cache() acquires it (then and at the RISC's next API call, which comes after the kernel's own plain
// volatile read of its semaphore word): the happens-before edge silicon gets from the L1 cache invalidation a kernel
// does before reading what other cores wrote.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define EMU_TSAN_ACQUIRE(p) __tsan_acquire(p)
#define EMU_TSAN_RELEASE(p) __tsan_release(p)
#else
#define EMU_TSAN_ACQUIRE(p) ((void)(p))
#define EMU_TSAN_RELEASE(p) ((void)(p))
#endif

namespace rt {

using emu::DataFormat;
using emu::Processor;

constexpr int kNumCbs = 32;
constexpr uint32_t kLocalBits = 36;
constexpr uint64_t kLocalMask = (uint64_t(1) << kLocalBits) - 1;
constexpr uint32_t kNodeBits = 6;
constexpr uint32_t kNodeMask = (1u << kNodeBits) - 1;

// Reserved-region layout of an emulated core's L1 (inside [0, L1_UNRESERVED_BASE), where tt-metal keeps mailboxes,
// firmware and the kernel-config buffer). Only this "kernel config" window is accessible to kernels.
constexpr uint32_t kCfgBase = 0x9000;       // semaphores: kCfgBase + 16 * id
constexpr uint32_t kNumSems = 16;
constexpr uint32_t kRtaBase = 0xA000;       // per processor p: unique args at kRtaBase + p*0x1000, common +0x800
constexpr uint32_t kRtaMaxWords = 512;
constexpr uint32_t kCfgEnd = 0xD000;

// ------------------------------------------------------------------------------------------------ program model
struct CB {
    bool configured = false;
    uint32_t addr = 0;  // L1 offset
    uint32_t size = 0, page_size = 0, num_pages = 0;
    DataFormat fmt = DataFormat::Invalid;
    uint32_t received = 0, acked = 0;  // guarded by Core::mu
    uint32_t high_water = 0;
};

struct Region {
    uint32_t start, end;  // L1 offsets
    std::string what;
};

struct KThread;
struct Core {
    int lx = 0, ly = 0, idx = 0;
    uint8_t* base = nullptr;
    bool used = false;
    CB cbs[kNumCbs];
    std::vector<Region> regions;  // accessible L1 ranges
    std::vector<std::pair<uint32_t, uint32_t>> sem_init;  // (L1 offset, initial value)
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<int> waiters{0};
    std::vector<KThread*> threads;  // the kernel threads placed on this core
};

struct Kernel {
    int id = 0;
    Processor proc = Processor::Brisc;
    std::string path, name;
    emu::ComputeConfig cfg;
    std::vector<uint32_t> crta;
    uint8_t noc = 0;  // the data-movement kernel's default NOC (DataMovementConfig noc; NOC_INDEX)
};

struct Buffer {  // a live DRAM buffer, for bounds checks and per-page statistics
    int id;
    uint32_t base, aligned_page, num_pages;
    bool nodata = false;  // contents undefined (program file "nodata"): timing-only runs move no bytes in or out
    std::unique_ptr<std::atomic<uint64_t>[]> page_read, page_written;
};

// A live L1 buffer, at the same L1 offset `base` on each of its cores.
// Sharded: the range [base, base + region) on every core of its shard grid; page i is in shard i / pages_per_shard,
// on cores[shard], at base + (i % pages_per_shard) * aligned_page.
// Interleaved: cores = the L1 bank table (bank b on cores[b]); page i is in bank i % nb at base + (i / nb) *
// aligned_page; only the bank's own pages (l1_bank_pages) are accessible, as for DRAM-interleaved buffers.
struct L1Buffer {
    int id;
    uint32_t base, aligned_page, num_pages, pages_per_shard, region;
    bool interleaved = false;
    std::vector<int> cores;  // core index (row-major logical) per shard in shard order / per L1 bank in bank order
    std::unique_ptr<std::atomic<uint64_t>[]> page_read, page_written;
};

// Pages of L1-interleaved buffer `b` in bank k (pages k, k + nb, ...).
uint32_t l1_bank_pages(const L1Buffer& b, size_t k) {
    uint32_t nb = uint32_t(b.cores.size());
    return b.num_pages > k ? uint32_t((b.num_pages - k + nb - 1) / nb) : 0;
}
// Bytes of `b` kept on its k-th core (copied in and out of the L1 image).
uint32_t l1_core_bytes(const L1Buffer& b, size_t k) {
    return b.interleaved ? l1_bank_pages(b, k) * b.aligned_page : b.region;
}

constexpr uint32_t kNoTrid = 0xFFFFFFFFu;  // a transfer issued without a NOC transaction id

// Transfers in flight, each on the NoC it was issued on: a barrier completes its own NoC's only.
struct PendingRead {
    uint8_t* dst;
    const uint8_t* src;
    uint32_t size;
    uint32_t dst_off;
    uint32_t trid = kNoTrid;
    uint8_t noc = 0;
};
struct PendingWrite {
    uint32_t src_off, size;
    uint32_t trid = kNoTrid;
    uint8_t noc = 0;
};

enum class WaitKind : int { None = 0, CbFront, CbBack, Sem };

struct BlockInfo {
    std::atomic<int> kind{0};
    int cb = 0;
    uint32_t want = 0;
    uint32_t sem_off = 0;
    volatile uint32_t* sem_ptr = nullptr;
    bool at_least = false;
};

struct KThread {
    Core* core = nullptr;
    Kernel* k = nullptr;
    std::vector<uint32_t> rta;
    uint32_t rd_ptr[kNumCbs]{}, wr_ptr[kNumCbs]{};  // this RISC's local CB pointers (L1 offsets)
    std::vector<PendingRead> reads;
    std::vector<PendingWrite> writes;  // issued but not flushed (sources may not be reused yet)
    BlockInfo block;
    std::atomic<bool> done{false};
    bool invalidated = false;  // invalidate_l1_cache() called; ThreadSanitizer builds acquire again at the next API call
    void* so = nullptr;
    void (*entry)() = nullptr;
    // The kernel's per-CB tile shapes (emu::cb_tile_shapes), when its library exports them (compute kernels).
    emu::CbTileShapes tile_shapes{};
    bool has_tile_shapes = false;
    timing::Risc* tr = nullptr;  // this RISC's timing trace (owned by M.engine), nullptr when timing is off
    // statistics (merged at the end)
    uint64_t dram_read[16]{}, dram_write[16]{};
    std::map<std::pair<int, int>, uint64_t> noc_bytes;  // (src node, dst node) -> bytes
    // emu::count's counters, per thread rather than per core: a core's three threads would otherwise contend for one
    // cache line on every tile; the core's figures are their sums.
    uint64_t counters[size_t(emu::Counter::NumCounters)]{};
    pthread_t th{};
};

// A DRAM bank: its channel, the tile NoC 0 reaches it at (x, y), the tile NoC 1 reaches it at (x1, y1), both in NoC 0
// coordinates (ttemu/arch.py DramBank: the same tile on Wormhole, two of the channel's tiles on Blackhole).
struct DramBank {
    int channel;
    uint32_t x, y;
    uint32_t offset;
    uint32_t x1, y1;
    uint32_t x_on(uint8_t noc) const { return noc == 1 ? x1 : x; }
    uint32_t y_on(uint8_t noc) const { return noc == 1 ? y1 : y; }
};

struct Machine {
    std::string result_path;
    int grid_w = 0, grid_h = 0;
    uint32_t l1_size = 0, l1_unreserved = 0;
    uint32_t tx0 = 18, ty0 = 18;  // translated NOC coordinates of logical (0,0)
    // Translated x of each logical column ("xmap"; default tx0 + column) and its inverse (-1: no worker column).
    // Wormhole's columns are consecutive; Blackhole's skip the die's non-Tensix columns (ttemu/arch.py).
    std::vector<uint32_t> col_x;
    std::vector<int> x_col;
    int dram_fd = -1;
    uint64_t channel_bytes = 0;
    uint8_t* dram = nullptr;
    uint64_t bank_bytes = 0;
    int num_channels = 0;
    std::vector<DramBank> banks;
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> channel_cores;
    uint32_t deadline_ms = 120000, hang_ms = 200;
    bool dprint = true;
    std::vector<std::unique_ptr<Core>> cores;  // grid_w * grid_h, row-major
    std::vector<std::unique_ptr<Kernel>> kernels;
    std::vector<std::unique_ptr<KThread>> threads;
    std::vector<Buffer> buffers;
    std::vector<L1Buffer> l1_buffers;
    std::vector<int> l1_banks;   // L1 bank b -> core index (tt-metal's bank numbering, from the parent)
    int l1_fd = -1;              // memfd holding every core's L1 image (core idx at idx * l1_size)
    uint8_t* l1_store = nullptr;
    std::string so_dir;
    std::atomic<uint64_t> progress{0};
    bool timing = true;                      // the timing model records and replays (program file: "timing 0|1")
    bool timing_only = false;                // no math, no bulk copies of undefined data (docs/TIMING.md, section 6)
    timing::Chip chip;                       // the chip the timing model replays on (program file: "chip <name>")
    std::unique_ptr<timing::Engine> engine;  // one per run; its Risc traces are filled by the kernel threads
    std::string timing_json;                 // the replay's result (stats "timing"), written by write_ok_result
    // TTFD_TIMING_VARIANTS: further variants the recorded traces are replayed under (docs/TIMING.md, section 3b),
    // and their results (stats "timing_variants": {"<name>": <the same object as "timing">, ...}).
    std::vector<std::pair<std::string, timing::Params>> extra_variants;
    std::string timing_variants_json;
    // Host seconds of each phase of this run, in order (stats "host_phases_s"): where an emulated call's host time
    // goes (perf/emulator_throughput.py prints them). Wall time, not a model of anything on the chip.
    std::vector<std::pair<const char*, double>> host_phases;
    std::chrono::steady_clock::time_point phase_mark = std::chrono::steady_clock::now();  // the last phase's end
};

Machine M;
thread_local KThread* tls = nullptr;
std::atomic<int> g_dying{0};

Core& core_at(int lx, int ly) { return *M.cores[size_t(ly) * M.grid_w + lx]; }
// Logical column of translated x, or -1 when x is not a worker column of the grid.
inline int col_of(uint32_t x) { return x < M.x_col.size() ? M.x_col[x] : -1; }
inline uint32_t x_of(int lx) { return M.col_x[size_t(lx)]; }
inline bool is_worker(uint32_t x, uint32_t y) {
    return col_of(x) >= 0 && y >= M.ty0 && y < M.ty0 + uint32_t(M.grid_h);
}
void fill_columns() {
    if (M.col_x.empty())
        for (int i = 0; i < M.grid_w; ++i) M.col_x.push_back(M.tx0 + uint32_t(i));
    M.x_col.clear();
    for (size_t i = 0; i < M.col_x.size(); ++i) {
        if (M.x_col.size() <= M.col_x[i]) M.x_col.resize(M.col_x[i] + 1, -1);
        M.x_col[M.col_x[i]] = int(i);
    }
}

// --------------------------------------------------------------------------------------------- result writing
std::string json_escape(const std::string& s) {
    std::string o;
    o.reserve(s.size() + 8);
    for (char c : s) {
        switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\t': o += "\\t"; break;
            default:
                if ((unsigned char)c < 0x20) {
                    char b[8];
                    snprintf(b, sizeof b, "\\u%04x", c);
                    o += b;
                } else {
                    o += c;
                }
        }
    }
    return o;
}

// ---- code objects: where each loaded library lies, so a fault's stack becomes (library file, offset) frames.
// Filled once after the kernels are loaded, before any kernel thread starts, and only read afterwards (also by the
// signal handler: fixed-size storage, no locks).
struct CodeObject {
    uintptr_t lo = 0, hi = 0, base = 0;  // the object's loaded range and load bias
    char path[512] = "";                 // the file to resolve offsets in (a kernel: its cached library, not the copy)
};
constexpr int kMaxCodeObjects = 1024;
CodeObject g_objects[kMaxCodeObjects];
int g_num_objects = 0;
constexpr int kMaxFrames = 48;

const CodeObject* object_at(uintptr_t pc) {
    for (int i = 0; i < g_num_objects; ++i)
        if (pc >= g_objects[i].lo && pc < g_objects[i].hi) return &g_objects[i];
    return nullptr;
}

// `frames` (innermost first; frames[0] is the exact faulting pc when `first_is_pc`, every other one a return address)
// as JSON [["file", offset, exact], ...] into `out`. Async-signal-safe: snprintf of integers and strings only.
size_t frames_json(char* out, size_t cap, void* const* frames, int n, bool first_is_pc) {
    size_t o = 0;
    auto put = [&](const char* text) {
        for (const char* p = text; *p && o + 2 < cap; ++p) {
            if (*p == '"' || *p == '\\') out[o++] = '\\';
            out[o++] = *p;
        }
    };
    put("[");
    bool first = true;
    for (int i = 0; i < n && o + 600 < cap; ++i) {
        uintptr_t pc = reinterpret_cast<uintptr_t>(frames[i]);
        const CodeObject* obj = object_at(pc);
        if (!obj) continue;
        char num[64];
        if (!first) put(", ");
        out[o++] = '[';
        out[o++] = '"';
        for (const char* p = obj->path; *p && o + 64 < cap; ++p) {
            if (*p == '"' || *p == '\\') out[o++] = '\\';
            out[o++] = *p;
        }
        out[o++] = '"';
        snprintf(num, sizeof num, ", %lu, %d]", (unsigned long)(pc - obj->base), (i == 0 && first_is_pc) ? 1 : 0);
        for (const char* p = num; *p && o + 2 < cap; ++p) out[o++] = *p;
        first = false;
    }
    out[o++] = ']';
    out[o] = 0;
    return o;
}

// Async-signal-tolerant: only snprintf into a static buffer, open, write, rename. `frames`: a JSON array or nullptr.
// Written to a temporary name and renamed, so the parent never reads half a result (the handler may rewrite it).
void write_raw_result(const char* status, const char* core, const char* kernel, const char* message,
                      const char* frames = nullptr) {
    static char buf[32768];
    static char esc[3][8192];
    const char* src[3] = {core, kernel, message};
    for (int j = 0; j < 3; ++j) {
        size_t o = 0;
        for (const char* p = src[j]; p && *p && o + 7 < sizeof esc[j]; ++p) {
            unsigned char c = (unsigned char)*p;
            if (c == '"' || c == '\\') {
                esc[j][o++] = '\\';
                esc[j][o++] = (char)c;
            } else if (c == '\n') {
                esc[j][o++] = '\\';
                esc[j][o++] = 'n';
            } else if (c < 0x20) {
                esc[j][o++] = ' ';
            } else {
                esc[j][o++] = (char)c;
            }
        }
        esc[j][o] = 0;
    }
    int n = snprintf(buf, sizeof buf,
                     "{\"status\": \"%s\", \"core\": \"%s\", \"kernel\": \"%s\", \"message\": \"%s\", \"frames\": %s}\n",
                     status, esc[0], esc[1], esc[2], frames ? frames : "[]");
    if (n < 0 || size_t(n) >= sizeof buf) n = int(sizeof buf) - 1;
    static char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.raw", M.result_path.c_str());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, buf, size_t(n));
        (void)w;
        close(fd);
        rename(tmp, M.result_path.c_str());
    }
}

std::string core_name(const Core* c) {
    if (!c) return "";
    return std::to_string(c->lx) + "," + std::to_string(c->ly);
}

const char* proc_name(Processor p) {
    switch (p) {
        case Processor::Brisc: return "BRISC";
        case Processor::Ncrisc: return "NCRISC";
        default: return "TRISC";
    }
}

[[noreturn]] void die(const char* status, int code, const std::string& core, const std::string& kernel,
                      const std::string& msg, const char* frames = nullptr) {
    if (g_dying.exchange(1)) {
        for (;;) pause();
    }
    write_raw_result(status, core.c_str(), kernel.c_str(), msg.c_str(), frames);
    fflush(stderr);
    _exit(code);
}

[[noreturn]] void setup_error(const std::string& msg) { die("error", 5, "", "", msg); }

std::string ctx_kernel() {
    if (!tls) return "";
    return tls->k->name + " (" + proc_name(tls->k->proc) + ")";
}

// A kernel broke an API rule: the calling thread's stack names the kernel line that made the call.
[[noreturn]] void kfault(const std::string& msg) {
    static thread_local char frames[8192];
    void* pcs[kMaxFrames];
    int n = backtrace(pcs, kMaxFrames);
    frames_json(frames, sizeof frames, pcs, n, false);
    die("fault", 4, core_name(tls ? tls->core : nullptr), ctx_kernel(), msg, frames);
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

// ------------------------------------------------------------------------------------------------ L1 helpers
KThread& cur() {
    if (!tls) setup_error("emulator API called outside a kernel thread");
#if defined(__SANITIZE_THREAD__)
    // The kernel read its semaphore word after invalidate_l1_cache() and before this call: acquire what was delivered
    // up to that read too (the acquire in l1_cache_invalidated came before it).
    if (tls->invalidated) {
        tls->invalidated = false;
        EMU_TSAN_ACQUIRE(tls->core);
    }
#endif
    return *tls;
}

const Region* find_region(const Core& c, uint32_t off, uint32_t size) {
    for (auto& r : c.regions)
        if (off >= r.start && uint64_t(off) + size <= r.end) return &r;
    return nullptr;
}

std::string describe_l1(const Core& c, uint32_t off) {
    for (auto& r : c.regions)
        if (off >= r.start && off < r.end) return r.what + fmt(" (+0x%x)", off - r.start);
    if (off >= M.l1_size) return fmt("past the end of L1 (%u bytes)", M.l1_size);
    if (off < M.l1_unreserved) return "the reserved (firmware) region";
    return "unallocated L1";
}

// Host-form or plain-offset L1 address -> offset on the calling core. Faults if it is neither. Plain offsets are
// what silicon kernels hold for L1 buffers (a sharded tensor's buffer_address(), the same on every core) and pass
// as the local side of NOC transfers; host-form addresses come from get_write_ptr / get_semaphore.
uint32_t local_off(uint32_t addr, uint32_t size, const char* what) {
    KThread& t = cur();
    uint64_t base = uint64_t(emu::kL1HostBase) + uint64_t(t.core->idx) * emu::kL1SlotBytes;
    uint64_t off;
    if (addr >= base && addr < base + emu::kL1SlotBytes)
        off = addr - base;
    else if (addr < M.l1_size)
        off = addr;
    else
        kfault(fmt("%s: local L1 address 0x%x (size %u) is not in this core's L1 [0x%llx, 0x%llx)", what, addr, size,
                   (unsigned long long)base, (unsigned long long)(base + M.l1_size)));
    if (!find_region(*t.core, uint32_t(off), size))
        kfault(fmt("%s: local L1 address 0x%x = offset 0x%llx, size %u, is outside allocated L1: %s", what, addr,
                   (unsigned long long)off, size, describe_l1(*t.core, uint32_t(off)).c_str()));
    return uint32_t(off);
}

void notify_core(Core& c) {
    EMU_TSAN_RELEASE(&c);
    M.progress.fetch_add(1, std::memory_order_relaxed);
    if (c.waiters.load(std::memory_order_seq_cst) > 0) {
        std::lock_guard<std::mutex> g(c.mu);
        c.cv.notify_all();
    }
}

// ------------------------------------------------------------------------------------------------ NOC decode
struct Target {
    bool dram = false;
    Core* core = nullptr;
    uint32_t l1_off = 0;
    int bank = -1;
    uint64_t dram_off = 0;  // offset into the DRAM image
    uint8_t* ptr = nullptr;
    uint32_t bank_local = 0;  // address within the bank (buffer address space)
    bool nodata = false;      // inside a DRAM buffer whose contents are undefined (EmuDevice.empty)
};

int node_of(const Target& t) { return t.dram ? -1 - t.bank : t.core->idx; }

// ---- timing hooks' helpers (docs/TIMING.md, section 5)
timing::Endpoint endpoint_of(const Target& t) {
    return t.dram ? timing::Endpoint::dram(t.bank) : timing::Endpoint::core(t.core->idx);
}
// The NoC a call issues on: its `noc` argument (noc_index, the kernel's default NoC, unless the call names another).
timing::Noc noc_of(uint8_t noc) {
    if (noc > 1) kfault(fmt("NoC index %u is out of range (a Tensix core has NoC 0 and NoC 1)", noc));
    return timing::Noc(noc);
}
// A 4-byte write into a semaphore slot is a semaphore set (noc_semaphore_set_remote / _multicast): the replay
// resolves semaphore waits against it.
bool is_sem_slot(uint32_t l1_off) {
    return l1_off >= kCfgBase && l1_off < kCfgBase + 16 * kNumSems && (l1_off - kCfgBase) % 16 == 0;
}

void account_dram(const Target& t, uint32_t size, bool write);

// NoC coordinates as the NIU of NoC `noc` resolves them, in the NoC 0 coordinates of the runtime's tables (emu/runtime.h):
// Wormhole's translation tables map worker coordinates (x, y >= 16) the same on both NoCs and pass raw coordinates
// (below 16: DRAM, PCIe, ARC) through, where NoC 1's are NoC 0's mirrored (tt-metal's hal noc_coordinate; its
// dram_bank_to_noc_xy[1] holds them). Blackhole translates every coordinate, the same on both NoCs.
constexpr uint32_t kFirstTranslatedCoord = 16;
bool noc1_mirrors_raw() { return M.chip.name == "wormhole_b0"; }
uint32_t mirror_raw(uint8_t noc, uint32_t c, int size) {
    if (noc == 0 || !noc1_mirrors_raw() || c >= kFirstTranslatedCoord || c >= uint32_t(size)) return c;
    return uint32_t(size) - 1 - c;
}
uint32_t noc0_x(uint8_t noc, uint32_t x) { return mirror_raw(noc, x, M.chip.noc_cols); }
uint32_t noc0_y(uint8_t noc, uint32_t y) { return mirror_raw(noc, y, M.chip.noc_rows); }

Target decode(uint64_t a, uint32_t size, const char* op, bool write, uint8_t noc) {
    uint32_t ax = uint32_t(a >> kLocalBits) & kNodeMask, ay = uint32_t(a >> (kLocalBits + kNodeBits)) & kNodeMask;
    uint32_t x = noc0_x(noc, ax), y = noc0_y(noc, ay);
    uint64_t local = a & kLocalMask;
    Target t;
    if (is_worker(x, y)) {
        Core& c = core_at(col_of(x), int(y - M.ty0));
        uint64_t off = local;
        if (local >= emu::kL1HostBase) off = (local - emu::kL1HostBase) % emu::kL1SlotBytes;
        if (off + size > M.l1_size || !find_region(c, uint32_t(off), size))
            kfault(fmt("%s: NOC address 0x%llx -> core (%d,%d) [noc %u,%u] L1 offset 0x%llx size %u is outside "
                       "allocated L1: %s",
                       op, (unsigned long long)a, c.lx, c.ly, x, y, (unsigned long long)off, size,
                       off + size > M.l1_size ? fmt("runs past the end of L1 (%u bytes)", M.l1_size).c_str()
                                              : describe_l1(c, uint32_t(off)).c_str()));
        t.core = &c;
        t.l1_off = uint32_t(off);
        t.ptr = c.base + off;
        return t;
    }
    for (int ch = 0; ch < M.num_channels; ++ch) {
        for (auto& xy : M.channel_cores[ch]) {
            if (xy.first != x || xy.second != y) continue;
            // A DRAM address belongs to bank (channel, half); it must fall inside a live buffer's pages.
            int bank = -1;
            for (size_t b = 0; b < M.banks.size(); ++b)
                if (M.banks[b].channel == ch && local >= M.banks[b].offset && local < M.banks[b].offset + M.bank_bytes)
                    bank = int(b);
            if (bank < 0 || local + size > M.banks[bank].offset + M.bank_bytes)
                kfault(fmt("%s: NOC address 0x%llx -> DRAM channel %d [noc %u,%u] address 0x%llx size %u is outside "
                           "the channel's banks",
                           op, (unsigned long long)a, ch, x, y, (unsigned long long)local, size));
            uint32_t bl = uint32_t(local - M.banks[bank].offset);
            bool inside = false;
            for (auto& buf : M.buffers) {
                const uint32_t nb = uint32_t(M.banks.size());  // 12 on Wormhole, 8 / 7 on Blackhole
                uint32_t pages_in_bank = buf.num_pages > uint32_t(bank) ? (buf.num_pages - bank + nb - 1) / nb : 0;
                uint64_t end = uint64_t(buf.base) + uint64_t(pages_in_bank) * buf.aligned_page;
                if (bl >= buf.base && uint64_t(bl) + size <= end) {
                    inside = true;
                    t.nodata = buf.nodata;
                }
            }
            if (!inside)
                kfault(fmt("%s: DRAM bank %d address 0x%x size %u (NOC address 0x%llx) is not inside the pages of any "
                           "live DRAM buffer",
                           op, bank, bl, size, (unsigned long long)a));
            t.dram = true;
            t.bank = bank;
            t.bank_local = bl;
            t.dram_off = uint64_t(ch) * M.channel_bytes + local;
            t.ptr = M.dram + t.dram_off;
            (void)write;
            return t;
        }
    }
    // An address built for the other NoC (its raw coordinates mirrored): on silicon it reaches the mirrored node, a
    // Tensix core by its raw coordinates, which the emulator does not address; it faults and says so.
    uint8_t other = uint8_t(noc ^ 1);
    uint32_t ox = noc0_x(other, ax), oy = noc0_y(other, ay);
    bool other_ok = (ox != x || oy != y) && (is_worker(ox, oy) || [&] {
                        for (auto& cores : M.channel_cores)
                            for (auto& xy : cores)
                                if (xy.first == ox && xy.second == oy) return true;
                        return false;
                    }());
    kfault(fmt("%s: NOC address 0x%llx issued on NoC %u targets node (%u,%u) (NoC 0 coordinates (%u,%u)), which is "
               "neither a worker core of the %dx%d grid (translated x %u..%u, y %u..%u) nor a DRAM bank%s",
               op, (unsigned long long)a, noc, ax, ay, x, y, M.grid_w, M.grid_h, x_of(0), x_of(M.grid_w - 1), M.ty0,
               M.ty0 + M.grid_h - 1,
               other_ok ? fmt("; it is NoC %u's address of a node: an address built for NoC %u but issued on NoC %u "
                              "(on silicon it reaches the mirrored node, here a fault)",
                              other, other, noc)
                              .c_str()
                        : ""));
}

void account_dram(const Target& t, uint32_t size, bool write) {
    KThread& th = cur();
    (write ? th.dram_write : th.dram_read)[t.bank] += size;
    for (auto& buf : M.buffers) {
        uint32_t lo = t.bank_local, hi = t.bank_local + size;
        if (hi <= buf.base) continue;
        const uint32_t nb = uint32_t(M.banks.size());
        uint32_t pages_in_bank = buf.num_pages > uint32_t(t.bank) ? (buf.num_pages - t.bank + nb - 1) / nb : 0;
        uint64_t end = uint64_t(buf.base) + uint64_t(pages_in_bank) * buf.aligned_page;
        if (lo >= end) continue;
        uint32_t a = std::max(lo, buf.base);
        while (a < hi && a < end) {
            uint32_t row = (a - buf.base) / buf.aligned_page;
            uint32_t page_end = buf.base + (row + 1) * buf.aligned_page;
            uint32_t n = std::min(hi, page_end) - a;
            uint32_t page = row * nb + uint32_t(t.bank);
            if (page < buf.num_pages) (write ? buf.page_written : buf.page_read)[page].fetch_add(n);
            a += n;
        }
    }
}

// Per-page statistics of L1 buffers: bytes a NOC transfer moves into (write) or out of (read) the buffer's range on
// core `c`. Only NOC traffic is seen; kernels' direct pointer accesses are not counted.
void account_l1(const Core& c, uint32_t off, uint32_t size, bool write) {
    for (auto& buf : M.l1_buffers) {
        if (off >= buf.base + buf.region || off + uint64_t(size) <= buf.base) continue;
        for (size_t k = 0; k < buf.cores.size(); ++k) {
            if (buf.cores[k] != c.idx) continue;
            if (buf.interleaved) {  // bank k: row r holds page r * nb + k
                uint32_t nb = uint32_t(buf.cores.size());
                uint32_t lo = std::max(off, buf.base);
                uint64_t end = buf.base + uint64_t(l1_bank_pages(buf, k)) * buf.aligned_page;
                uint32_t hi = uint32_t(std::min<uint64_t>(off + uint64_t(size), end));
                for (uint32_t a = lo; a < hi;) {
                    uint32_t r = (a - buf.base) / buf.aligned_page;
                    uint32_t n = std::min(hi, buf.base + (r + 1) * buf.aligned_page) - a;
                    (write ? buf.page_written : buf.page_read)[uint64_t(r) * nb + k].fetch_add(n);
                    a += n;
                }
                continue;  // one bank per core on Wormhole, but do not assume it
            }
            uint64_t first = uint64_t(k) * buf.pages_per_shard;
            if (first >= buf.num_pages) break;
            uint32_t pages = uint32_t(std::min<uint64_t>(buf.pages_per_shard, buf.num_pages - first));
            uint32_t lo = std::max(off, buf.base), hi = uint32_t(std::min<uint64_t>(off + uint64_t(size),
                                                                                    buf.base + pages * buf.aligned_page));
            for (uint32_t a = lo; a < hi;) {
                uint32_t p = (a - buf.base) / buf.aligned_page;
                uint32_t n = std::min(hi, buf.base + (p + 1) * buf.aligned_page) - a;
                (write ? buf.page_written : buf.page_read)[first + p].fetch_add(n);
                a += n;
            }
            break;
        }
    }
}

void check_align(uint32_t l1_off, const Target& t, bool read, const char* op) {
    uint32_t mask = t.dram ? (read ? 31u : 15u) : 15u;
    uint32_t remote = t.dram ? t.bank_local + M.banks[t.bank].offset : t.l1_off;
    if ((l1_off & mask) != (remote & mask))
        kfault(fmt("%s: misaligned NOC transfer: local L1 offset 0x%x and %s address 0x%x differ modulo %u "
                   "(Wormhole NOC_%s_%s_ALIGNMENT_BYTES)",
                   op, l1_off, t.dram ? "DRAM" : "remote L1", remote, mask + 1, t.dram ? "DRAM" : "L1",
                   read ? "READ" : "WRITE"));
}

// Multicast rectangle -> destination cores. Coordinates are inclusive. The rectangle starts at the corner its NoC
// reaches first: on NoC 0 (+x, +y) start <= end per axis; on NoC 1 (-x, -y) start >= end (tt-metal's NoC 1 kernels
// swap start and end: "NOC_1 uses an inverted coordinate system"). A rectangle in the other NoC's order would wrap
// round the torus on silicon; here it is a fault.
std::vector<Core*> mcast_dests(uint64_t a, uint32_t size, const char* op, uint32_t* off_out, uint8_t noc) {
    uint32_t xe = uint32_t(a >> kLocalBits) & kNodeMask, ye = uint32_t(a >> (kLocalBits + kNodeBits)) & kNodeMask;
    uint32_t xs = uint32_t(a >> (kLocalBits + 2 * kNodeBits)) & kNodeMask,
             ys = uint32_t(a >> (kLocalBits + 3 * kNodeBits)) & kNodeMask;
    uint64_t local = a & kLocalMask;
    uint64_t off = local >= emu::kL1HostBase ? (local - emu::kL1HostBase) % emu::kL1SlotBytes : local;
    if (noc == 1 ? (xs < xe || ys < ye) : (xs > xe || ys > ye))
        kfault(fmt("%s: multicast rectangle noc (%u,%u)-(%u,%u) on NoC %u must start at its %s corner (start %s end "
                   "per axis%s)",
                   op, xs, ys, xe, ye, noc, noc == 1 ? "largest" : "smallest", noc == 1 ? ">=" : "<=",
                   noc == 1 ? "; tt-metal kernels swap start and end for NoC 1" : ""));
    if (noc == 1) {
        std::swap(xs, xe);
        std::swap(ys, ye);
    }
    if (!is_worker(xs, ys) || !is_worker(xe, ye))
        kfault(fmt("%s: multicast rectangle noc (%u,%u)-(%u,%u) is not inside the worker grid (translated x %u..%u, "
                   "y %u..%u)",
                   op, xs, ys, xe, ye, x_of(0), x_of(M.grid_w - 1), M.ty0, M.ty0 + M.grid_h - 1));
    std::vector<Core*> out;
    for (uint32_t y = ys; y <= ye; ++y)
        for (uint32_t x = xs; x <= xe; ++x) {
            if (col_of(x) < 0) continue;  // a non-Tensix column inside the rectangle (Blackhole): not a destination
            Core& c = core_at(col_of(x), int(y - M.ty0));
            if (off + size > M.l1_size || !find_region(c, uint32_t(off), size))
                kfault(fmt("%s: multicast destination core (%d,%d) L1 offset 0x%llx size %u is outside allocated L1: %s",
                           op, c.lx, c.ly, (unsigned long long)off, size, describe_l1(c, uint32_t(off)).c_str()));
            out.push_back(&c);
        }
    *off_out = uint32_t(off);
    return out;
}

// ------------------------------------------------------------------------------------------------ waiting
std::string describe_block(const KThread& t) {
    int kind = t.block.kind.load();
    const Core& c = *t.core;
    if (kind == int(WaitKind::CbFront) || kind == int(WaitKind::CbBack)) {
        const CB& cb = c.cbs[t.block.cb];
        uint32_t resident = cb.received - cb.acked;
        return fmt("%s(cb=%d, %u pages): pages received %u, acked %u (%u resident, %u free) of capacity %u",
                   kind == int(WaitKind::CbFront) ? "cb_wait_front" : "cb_reserve_back", t.block.cb, t.block.want,
                   cb.received, cb.acked, resident, cb.num_pages - resident, cb.num_pages);
    }
    if (kind == int(WaitKind::Sem)) {
        return fmt("noc_semaphore_wait%s(L1 offset 0x%x = %s): value %u, waiting for %s %u", t.block.at_least ? "_min" : "",
                   t.block.sem_off, describe_l1(c, t.block.sem_off).c_str(), *t.block.sem_ptr,
                   t.block.at_least ? ">=" : "==", t.block.want);
    }
    return "running";
}

// True when the condition a blocked thread waits for holds. The waits themselves loop on it, and the watchdog asks it
// too: a thread whose condition holds was woken (or sees it on its next timed wake-up) but the OS has not scheduled it
// yet, which is not a deadlock: on a loaded host a runnable thread can wait far longer than the hang window.
bool block_satisfied(const KThread& t) {
    int kind = t.block.kind.load();
    const Core& c = *t.core;
    if (kind == int(WaitKind::CbFront) || kind == int(WaitKind::CbBack)) {
        const CB& cb = c.cbs[t.block.cb];
        uint32_t resident = cb.received - cb.acked;
        return kind == int(WaitKind::CbFront) ? resident >= t.block.want : cb.num_pages - resident >= t.block.want;
    }
    if (kind == int(WaitKind::Sem)) {
        uint32_t v = __atomic_load_n(const_cast<uint32_t*>(t.block.sem_ptr), __ATOMIC_SEQ_CST);
        return t.block.at_least ? v >= t.block.want : v == t.block.want;
    }
    return kind == 0;
}

// Waits on the core's condition variable until pred() holds; caller holds `lk`.
template <class Pred>
void block_until(std::unique_lock<std::mutex>& lk, KThread& t, Pred pred) {
    if (pred()) return;
    Core& c = *t.core;
    c.waiters.fetch_add(1, std::memory_order_seq_cst);
    while (!pred()) c.cv.wait_for(lk, std::chrono::milliseconds(5));
    c.waiters.fetch_sub(1, std::memory_order_seq_cst);
    t.block.kind.store(0);
    M.progress.fetch_add(1, std::memory_order_relaxed);
}

// After a CB's pages or free space changed (caller holds c.mu): wakes the core's waiters if one of them waits on a
// CB and its condition now holds. A push that leaves a wait for a block of pages short wakes no one (each such
// wake-up was a context switch to find the wait not over yet); a semaphore wait is woken by the semaphore's writer.
void notify_cb_waiters(Core& c) {
    for (KThread* w : c.threads) {
        int kind = w->block.kind.load();
        if ((kind == int(WaitKind::CbFront) || kind == int(WaitKind::CbBack)) && block_satisfied(*w)) {
            c.cv.notify_all();
            return;
        }
    }
}

CB& cb_checked(uint32_t cb, const char* op) {
    KThread& t = cur();
    if (cb >= uint32_t(kNumCbs)) kfault(fmt("%s: CB index %u out of range (0..31)", op, cb));
    CB& c = t.core->cbs[cb];
    if (!c.configured) kfault(fmt("%s: CB %u is not configured on core (%d,%d)", op, cb, t.core->lx, t.core->ly));
    return c;
}

void flush_reads(KThread& t);
// Complete the reads in flight that `which` selects (a barrier's NoC / transaction id), in issue order.
template <typename Which>
void flush_reads(KThread& t, Which&& which) {
    bool any = false;
    std::vector<PendingRead> keep;
    for (auto& r : t.reads) {
        if (which(r)) {
            std::memmove(r.dst, r.src, r.size);
            any = true;
        } else {
            keep.push_back(r);
        }
    }
    t.reads.swap(keep);
    if (any) M.progress.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace rt

// ================================================================================================ emu:: API
namespace emu {
using namespace rt;

void cb_wait_front(uint32_t cb, uint32_t n) {
    CB& c = cb_checked(cb, "cb_wait_front");
    KThread& t = cur();
    if (n > c.num_pages) kfault(fmt("cb_wait_front(cb=%u, %u): more pages than the CB holds (%u)", cb, n, c.num_pages));
    if (t.tr) t.tr->cb_wait_front(cb, n);
    std::unique_lock<std::mutex> lk(t.core->mu);
    t.block.cb = int(cb);
    t.block.want = n;
    t.block.kind.store(int(WaitKind::CbFront));
    block_until(lk, t, [&] { return block_satisfied(t); });
    t.block.kind.store(0);
}

void cb_pop_front(uint32_t cb, uint32_t n) {
    CB& c = cb_checked(cb, "cb_pop_front");
    KThread& t = cur();
    uint32_t start = t.rd_ptr[cb];
    uint32_t next = start + n * c.page_size;
    if (next > c.addr + c.size)
        kfault(fmt("cb_pop_front(cb=%u, %u): read pointer would run past the CB end (pops in one cycle must sum to "
                   "the CB's %u pages)",
                   cb, n, c.num_pages));
    for (auto& w : t.writes)
        if (w.src_off < next && w.src_off + w.size > start)
            kfault(fmt("cb_pop_front(cb=%u, %u): a NOC write from these pages (L1 offset 0x%x, %u bytes) issued on "
                       "NoC %u has not been flushed (missing noc_async_write_barrier / noc_async_writes_flushed on "
                       "NoC %u)",
                       cb, n, w.src_off, w.size, w.noc, w.noc));
    {
        std::lock_guard<std::mutex> g(t.core->mu);
        if (c.received - c.acked < n)
            kfault(fmt("cb_pop_front(cb=%u, %u): only %u pages are in the CB (received %u, acked %u)", cb, n,
                       c.received - c.acked, c.received, c.acked));
        c.acked += n;
        notify_cb_waiters(*t.core);
    }
    if (t.tr) t.tr->cb_pop_front(cb, n);
    M.progress.fetch_add(1, std::memory_order_relaxed);
    t.rd_ptr[cb] = next == c.addr + c.size ? c.addr : next;
}

void cb_reserve_back(uint32_t cb, uint32_t n) {
    CB& c = cb_checked(cb, "cb_reserve_back");
    KThread& t = cur();
    if (n > c.num_pages)
        kfault(fmt("cb_reserve_back(cb=%u, %u): more pages than the CB holds (%u)", cb, n, c.num_pages));
    if (t.tr) t.tr->cb_reserve_back(cb, n);
    std::unique_lock<std::mutex> lk(t.core->mu);
    t.block.cb = int(cb);
    t.block.want = n;
    t.block.kind.store(int(WaitKind::CbBack));
    block_until(lk, t, [&] { return block_satisfied(t); });
    t.block.kind.store(0);
}

void cb_push_back(uint32_t cb, uint32_t n) {
    CB& c = cb_checked(cb, "cb_push_back");
    KThread& t = cur();
    uint32_t start = t.wr_ptr[cb];
    uint32_t next = start + n * c.page_size;
    if (next > c.addr + c.size)
        kfault(fmt("cb_push_back(cb=%u, %u): write pointer would run past the CB end (pushes in one cycle must sum "
                   "to the CB's %u pages)",
                   cb, n, c.num_pages));
    for (auto& r : t.reads)
        if (r.dst_off < next && r.dst_off + r.size > start)
            kfault(fmt("cb_push_back(cb=%u, %u): a NOC read into these pages (L1 offset 0x%x, %u bytes) issued on NoC "
                       "%u has not completed (missing noc_async_read_barrier on NoC %u)",
                       cb, n, r.dst_off, r.size, r.noc, r.noc));
    {
        std::lock_guard<std::mutex> g(t.core->mu);
        if (c.received - c.acked + n > c.num_pages)
            kfault(fmt("cb_push_back(cb=%u, %u): overflows the CB: %u pages resident of %u (push without "
                       "cb_reserve_back?)",
                       cb, n, c.received - c.acked, c.num_pages));
        c.received += n;
        c.high_water = std::max(c.high_water, c.received - c.acked);
        notify_cb_waiters(*t.core);
    }
    if (t.tr) t.tr->cb_push_back(cb, n);
    M.progress.fetch_add(1, std::memory_order_relaxed);
    t.wr_ptr[cb] = next == c.addr + c.size ? c.addr : next;
}

bool cb_pages_available_at_front(uint32_t cb, uint32_t n, bool record_wait) {
    CB& c = cb_checked(cb, "cb_pages_available_at_front");
    KThread& t = cur();
    bool ok;
    {
        std::lock_guard<std::mutex> g(t.core->mu);
        ok = c.received - c.acked >= n;
    }
    if (!ok && record_wait) poll_yield();  // a kernel's poll loop lets other threads run; a check does not
    if (ok && record_wait && t.tr) t.tr->cb_wait_front(cb, n);
    return ok;
}

bool cb_pages_reservable_at_back(uint32_t cb, uint32_t n, bool record_wait) {
    CB& c = cb_checked(cb, "cb_pages_reservable_at_back");
    KThread& t = cur();
    bool ok;
    {
        std::lock_guard<std::mutex> g(t.core->mu);
        ok = c.num_pages - (c.received - c.acked) >= n;
    }
    if (!ok && record_wait) poll_yield();  // a kernel's poll loop lets other threads run; a check does not
    if (ok && record_wait && t.tr) t.tr->cb_reserve_back(cb, n);
    return ok;
}

uint32_t cb_read_addr(uint32_t cb) {
    cb_checked(cb, "get_read_ptr");
    return l1_base() + cur().rd_ptr[cb];
}
uint32_t cb_write_addr(uint32_t cb) {
    cb_checked(cb, "get_write_ptr");
    return l1_base() + cur().wr_ptr[cb];
}
uint32_t cb_page_size(uint32_t cb) { return cb_checked(cb, "cb_page_size").page_size; }
uint32_t cb_total_size(uint32_t cb) { return cb_checked(cb, "cb_total_size").size; }
uint32_t cb_base_addr(uint32_t cb) { return l1_base() + cb_checked(cb, "cb_base_addr").addr; }

// DataflowBuffer::evil_set_write_ptr / evil_set_read_ptr: move this RISC's local FIFO pointer; the address must lie
// inside the CB's ring (an address at its end is not a valid cursor).
static void cb_set_ptr(uint32_t cb, uint32_t addr, bool write) {
    const char* op = write ? "set write pointer" : "set read pointer";
    CB& c = cb_checked(cb, op);
    KThread& t = cur();
    // The ring's end (fifo_limit) is accepted too: firmware-style code advances a pointer to the limit, then wraps it.
    uint64_t base = uint64_t(emu::kL1HostBase) + uint64_t(t.core->idx) * emu::kL1SlotBytes;
    uint32_t off = addr >= base && addr < base + emu::kL1SlotBytes ? uint32_t(addr - base) : addr;
    if (off < c.addr || off > c.addr + c.size)
        kfault(fmt("%s(cb=%u): L1 address 0x%x (offset 0x%x) is outside the CB's ring [0x%x, 0x%x]", op, cb, addr,
                   off, c.addr, c.addr + c.size));
    (write ? t.wr_ptr : t.rd_ptr)[cb] = off;
}
void cb_set_write_addr(uint32_t cb, uint32_t addr) { cb_set_ptr(cb, addr, true); }
void cb_set_read_addr(uint32_t cb, uint32_t addr) { cb_set_ptr(cb, addr, false); }
DataFormat cb_data_format(uint32_t cb) { return cb_checked(cb, "cb_data_format").fmt; }

uint8_t* l1(uint32_t addr, uint32_t n) {
    uint32_t off = local_off(addr, n, "L1 access");
    return cur().core->base + off;
}

const ComputeConfig& compute_config() { return cur().k->cfg; }
const CbTileShapes* cb_tile_shapes() {
    KThread& t = cur();
    return t.has_tile_shapes ? &t.tile_shapes : nullptr;
}

void count(Counter c, uint64_t n) {
    if (size_t(c) >= size_t(Counter::NumCounters)) kfault(fmt("count: bad counter %u", unsigned(c)));
    cur().counters[size_t(c)] += n;
}

void fault(const char* f, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    kfault(buf);
}

// ---- data movement
uint32_t l1_base() { return emu::kL1HostBase + uint32_t(cur().core->idx) * emu::kL1SlotBytes; }
uint32_t my_logical_x() { return uint32_t(cur().core->lx); }
uint32_t my_logical_y() { return uint32_t(cur().core->ly); }
uint32_t my_noc_x() { return x_of(cur().core->lx); }
uint32_t my_noc_y() { return M.ty0 + uint32_t(cur().core->ly); }
Processor my_processor() { return cur().k->proc; }
const char* kernel_name() { return cur().k->name.c_str(); }

uint32_t arg_addr(uint32_t idx) {
    KThread& t = cur();
    if (idx >= t.rta.size())
        kfault(fmt("get_arg_val(%u): only %zu runtime args were set for this kernel on core (%d,%d)", idx, t.rta.size(),
                   t.core->lx, t.core->ly));
    return l1_base() + kRtaBase + uint32_t(t.k->proc) * 0x1000 + 4 * idx;
}
uint32_t common_arg_addr(uint32_t idx) {
    KThread& t = cur();
    if (idx >= t.k->crta.size())
        kfault(fmt("get_common_arg_val(%u): only %zu common runtime args were set for this kernel", idx,
                   t.k->crta.size()));
    return l1_base() + kRtaBase + uint32_t(t.k->proc) * 0x1000 + 0x800 + 4 * idx;
}
uint32_t semaphore_addr(uint32_t id) {
    if (id >= kNumSems) kfault(fmt("get_semaphore(%u): semaphore id out of range (0..%u)", id, kNumSems - 1));
    return l1_base() + kCfgBase + 16 * id;
}

uint32_t num_dram_banks() { return uint32_t(M.banks.size()); }
// dram_bank_to_noc_xy[noc][b]: the bank's tile for NoC `noc` (tt-metal: get_preferred_worker_core_for_dram_view(
// channel, noc)), in that NoC's coordinates: on Wormhole NoC 1's raw coordinates are NoC 0's mirrored (the mirror is
// its own inverse); on Blackhole NoC 1 has its own tile of the channel.
uint32_t dram_bank_noc_x(uint32_t b, uint8_t noc) {
    if (b >= M.banks.size()) kfault(fmt("DRAM bank %u out of range (0..%zu)", b, M.banks.size() - 1));
    return noc0_x(uint8_t(noc_of(noc)), M.banks[b].x_on(noc));
}
uint32_t dram_bank_noc_y(uint32_t b, uint8_t noc) {
    if (b >= M.banks.size()) kfault(fmt("DRAM bank %u out of range (0..%zu)", b, M.banks.size() - 1));
    return noc0_y(uint8_t(noc_of(noc)), M.banks[b].y_on(noc));
}
uint32_t dram_bank_offset(uint32_t b) {
    if (b >= M.banks.size()) kfault(fmt("DRAM bank %u out of range (0..%zu)", b, M.banks.size() - 1));
    return M.banks[b].offset;
}

uint32_t num_l1_banks() { return uint32_t(M.l1_banks.size()); }
static const Core& l1_bank_core(uint32_t b) {
    if (b >= M.l1_banks.size())
        kfault(fmt("L1 bank %u out of range (0..%zu; NUM_L1_BANKS = %zu)", b, M.l1_banks.size() - 1,
                   M.l1_banks.size()));
    return *M.cores[size_t(M.l1_banks[b])];
}
uint32_t l1_bank_noc_x(uint32_t b) { return x_of(l1_bank_core(b).lx); }
uint32_t l1_bank_noc_y(uint32_t b) { return M.ty0 + uint32_t(l1_bank_core(b).ly); }
uint32_t l1_bank_offset(uint32_t b) {
    l1_bank_core(b);
    return 0;  // tt-metal's bank_to_l1_offset: 0 for every compute-core bank
}

uint64_t noc_xy_addr(uint32_t x, uint32_t y, uint32_t addr) {
    uint64_t local = addr;
    bool worker = is_worker(x, y);
    if (worker && addr >= emu::kL1HostBase) local = (addr - emu::kL1HostBase) % emu::kL1SlotBytes;
    return (uint64_t(y) << (kLocalBits + kNodeBits)) | (uint64_t(x) << kLocalBits) | local;
}

uint64_t noc_multicast_addr(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, uint32_t addr) {
    uint64_t local = addr >= emu::kL1HostBase ? (addr - emu::kL1HostBase) % emu::kL1SlotBytes : addr;
    return (uint64_t(x0) << (kLocalBits + 2 * kNodeBits)) | (uint64_t(y0) << (kLocalBits + 3 * kNodeBits)) |
           (uint64_t(x1) << kLocalBits) | (uint64_t(y1) << (kLocalBits + kNodeBits)) | local;
}

static void noc_read_impl(uint64_t src, uint32_t dst_l1, uint32_t size, uint32_t trid, uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    if (size == 0) return;
    uint32_t off = local_off(dst_l1, size, "noc_async_read destination");
    Target s = decode(src, size, "noc_async_read", false, noc);
    check_align(off, s, true, "noc_async_read");
    if (s.dram)
        account_dram(s, size, false);
    else
        account_l1(*s.core, s.l1_off, size, false);
    account_l1(*t.core, off, size, true);
    t.noc_bytes[{node_of(s), t.core->idx}] += size;
    // Timing-only: bytes of a buffer with undefined contents cannot steer a kernel, so they are not copied (the
    // transfer is still checked, counted and timed like any other).
    if (!(M.timing_only && s.nodata)) t.reads.push_back({t.core->base + off, s.ptr, size, off, trid, noc});
    if (t.tr) t.tr->noc_read(endpoint_of(s), size, nc, trid);
}
void noc_read(uint64_t src, uint32_t dst_l1, uint32_t size, uint8_t noc) {
    noc_read_impl(src, dst_l1, size, kNoTrid, noc);
}

static void noc_write_impl(uint32_t src_l1, uint64_t dst, uint32_t size, uint32_t trid, uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    if (size == 0) return;
    uint32_t off = local_off(src_l1, size, "noc_async_write source");
    Target d = decode(dst, size, "noc_async_write", true, noc);
    check_align(off, d, false, "noc_async_write");
    if (d.dram)
        account_dram(d, size, true);
    else
        account_l1(*d.core, d.l1_off, size, true);
    account_l1(*t.core, off, size, false);
    t.noc_bytes[{t.core->idx, node_of(d)}] += size;
    uint32_t value = 0;
    if (size == 4) std::memcpy(&value, t.core->base + off, 4);
    if (!(M.timing_only && d.nodata)) std::memmove(d.ptr, t.core->base + off, size);
    t.writes.push_back({off, size, trid, noc});
    if (!d.dram) notify_core(*d.core);
    if (t.tr) {
        if (size == 4 && !d.dram && is_sem_slot(d.l1_off))
            t.tr->sem_write_remote(d.core->idx, d.l1_off, value, nc);
        else
            t.tr->noc_write(endpoint_of(d), size, nc, trid);
    }
}
void noc_write(uint32_t src_l1, uint64_t dst, uint32_t size, uint8_t noc) {
    noc_write_impl(src_l1, dst, size, kNoTrid, noc);
}

void noc_write_multicast(uint32_t src_l1, uint64_t dst, uint32_t size, uint32_t num_dests, bool include_self,
                         uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    uint32_t off = local_off(src_l1, size, "noc_async_write_multicast source");
    uint32_t doff;
    auto dests = mcast_dests(dst, size, "noc_async_write_multicast", &doff, noc);
    if ((off & 15) != (doff & 15))
        kfault(fmt("noc_async_write_multicast: local L1 offset 0x%x and destination offset 0x%x differ modulo 16", off,
                   doff));
    uint32_t n = 0;
    for (Core* c : dests)
        if (include_self || c != t.core) ++n;
    account_l1(*t.core, off, size, false);
    if (n != num_dests)
        kfault(fmt("noc_async_write_multicast%s: num_dests=%u but the rectangle holds %u destination cores%s",
                   include_self ? "_loopback_src" : "", num_dests, n,
                   include_self ? " (including self)" : " (excluding self)"));
    if (n == 0) kfault("noc_async_write_multicast: the destination rectangle holds no core other than the sender");
    for (Core* c : dests) {
        if (!include_self && c == t.core) continue;
        if (size) std::memmove(c->base + doff, t.core->base + off, size);
        account_l1(*c, doff, size, true);
        t.noc_bytes[{t.core->idx, c->idx}] += size;
        notify_core(*c);
    }
    t.writes.push_back({off, size, kNoTrid, noc});
    if (t.tr) {
        if (size == 4 && is_sem_slot(doff) && !include_self) {
            uint32_t value;
            std::memcpy(&value, t.core->base + off, 4);
            t.tr->sem_write_multicast(dests.front()->idx, dests.back()->idx, doff, value, nc);
        } else {
            t.tr->noc_write_multicast(dests.front()->idx, dests.back()->idx, size, nc, include_self);
        }
    }
}

void noc_inline_write(uint64_t dst, uint32_t value, uint8_t be, uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    Target d = decode(dst & ~uint64_t(3), 4, "noc_inline_dw_write", true, noc);
    if (d.dram)
        account_dram(d, 4, true);
    else
        account_l1(*d.core, d.l1_off, 4, true);
    for (int i = 0; i < 4; ++i)
        if (be & (1u << i)) reinterpret_cast<volatile uint8_t*>(d.ptr)[i] = uint8_t(value >> (8 * i));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    t.noc_bytes[{t.core->idx, node_of(d)}] += 4;
    if (!d.dram) notify_core(*d.core);
    if (t.tr) {
        if (!d.dram && be == 0xF && is_sem_slot(d.l1_off))
            t.tr->sem_write_remote(d.core->idx, d.l1_off, value, nc);
        else
            t.tr->noc_write(endpoint_of(d), 4, nc);
    }
}

void noc_inline_write_multicast(uint64_t dst, uint32_t value, uint32_t num_dests, uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    uint32_t doff;
    auto dests = mcast_dests(dst, 4, "noc_inline_mcast_dw_write", &doff, noc);
    uint32_t n = 0;
    for (Core* c : dests)
        if (c != t.core) ++n;
    if (n != num_dests)
        kfault(fmt("noc_inline_mcast_dw_write: num_dests=%u but the rectangle holds %u cores (excluding self)",
                   num_dests, n));
    for (Core* c : dests) {
        if (c == t.core) continue;
        __atomic_store_n(reinterpret_cast<uint32_t*>(c->base + doff), value, __ATOMIC_SEQ_CST);
        account_l1(*c, doff, 4, true);
        t.noc_bytes[{t.core->idx, c->idx}] += 4;
        notify_core(*c);
    }
    if (t.tr) t.tr->sem_write_multicast(dests.front()->idx, dests.back()->idx, doff, value, nc);
}

void noc_atomic_inc(uint64_t dst, uint32_t incr, uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    Target d = decode(dst, 4, "noc_semaphore_inc", true, noc);
    if (d.dram) kfault("noc_semaphore_inc: atomic increment targets DRAM (only L1 supports NOC atomics here)");
    if (d.l1_off & 3) kfault(fmt("noc_semaphore_inc: L1 offset 0x%x is not 4-byte aligned", d.l1_off));
    __atomic_fetch_add(reinterpret_cast<uint32_t*>(d.ptr), incr, __ATOMIC_SEQ_CST);
    t.noc_bytes[{t.core->idx, node_of(d)}] += 4;
    notify_core(*d.core);
    if (t.tr) t.tr->sem_inc(d.core->idx, d.l1_off, incr, nc);
}

void noc_atomic_inc_multicast(uint64_t dst, uint32_t incr, uint32_t num_dests, uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    uint32_t doff;
    auto dests = mcast_dests(dst, 4, "noc_semaphore_inc_multicast", &doff, noc);
    uint32_t n = 0;
    for (Core* c : dests)
        if (c != t.core) ++n;
    if (n != num_dests)
        kfault(fmt("noc_semaphore_inc_multicast: num_dests=%u but the rectangle holds %u cores (excluding self)",
                   num_dests, n));
    for (Core* c : dests) {
        if (c == t.core) continue;
        __atomic_fetch_add(reinterpret_cast<uint32_t*>(c->base + doff), incr, __ATOMIC_SEQ_CST);
        t.noc_bytes[{t.core->idx, c->idx}] += 4;
        notify_core(*c);
    }
    if (t.tr) t.tr->sem_inc_multicast(dests.front()->idx, dests.back()->idx, doff, incr, nc);
}

// Barriers complete what was issued on their NoC only (its NIU's counters); the other NoC's transfers stay in flight.
void noc_read_barrier(uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    flush_reads(t, [&](const PendingRead& r) { return r.noc == noc; });
    if (t.tr) t.tr->read_barrier(nc);
}
static void retire_writes(KThread& t, uint8_t noc, uint32_t trid) {
    auto& w = t.writes;
    w.erase(std::remove_if(w.begin(), w.end(),
                           [&](const PendingWrite& x) { return x.noc == noc && (trid == kNoTrid || x.trid == trid); }),
            w.end());
}
void noc_write_barrier(uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    retire_writes(t, noc, kNoTrid);
    if (t.tr) t.tr->write_barrier(nc);
}
void noc_writes_flushed(uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    retire_writes(t, noc, kNoTrid);
    if (t.tr) t.tr->writes_flushed(nc);
}

static void check_trid(uint32_t trid, const char* op) {
    if (trid > kMaxNocTrid)
        kfault(fmt("%s: transaction id %u is out of range 0..%u (Wormhole NOC_MAX_TRANSACTION_ID)", op, trid,
                   kMaxNocTrid));
}
void noc_read_trid(uint64_t src, uint32_t dst_l1, uint32_t size, uint32_t trid, uint8_t noc) {
    check_trid(trid, "noc read with transaction id");
    noc_read_impl(src, dst_l1, size, trid, noc);
}
// Reads complete at the barrier (or when polled), those tagged `trid` on NoC `noc` only.
void noc_read_barrier_trid(uint32_t trid, uint8_t noc) {
    check_trid(trid, "noc_async_read_barrier_with_trid");
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    flush_reads(t, [&](const PendingRead& r) { return r.noc == noc && r.trid == trid; });
    if (t.tr) t.tr->read_barrier(nc, trid);
}
bool noc_read_trid_flushed(uint32_t trid, uint8_t noc) {
    noc_read_barrier_trid(trid, noc);
    return true;
}
void noc_write_trid(uint32_t src_l1, uint64_t dst, uint32_t size, uint32_t trid, uint8_t noc) {
    check_trid(trid, "noc write with transaction id");
    noc_write_impl(src_l1, dst, size, trid, noc);
}
void noc_write_barrier_trid(uint32_t trid, uint8_t noc) {
    check_trid(trid, "noc_async_write_barrier_with_trid");
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    retire_writes(t, noc, trid);
    if (t.tr) t.tr->write_barrier(nc, trid);
}
void noc_atomic_barrier(uint8_t noc) {
    KThread& t = cur();
    timing::Noc nc = noc_of(noc);
    if (t.tr) t.tr->atomic_barrier(nc);
}

void sem_wait(volatile uint32_t* p, uint32_t val, bool at_least) {
    KThread& t = cur();
    uint32_t off = local_off(uint32_t(reinterpret_cast<uintptr_t>(p)), 4, at_least ? "noc_semaphore_wait_min"
                                                                                   : "noc_semaphore_wait");
    if (t.tr) t.tr->sem_wait(off, val, at_least);
    Core& c = *t.core;
    t.block.sem_off = off;
    t.block.sem_ptr = p;
    t.block.want = val;
    t.block.at_least = at_least;
    t.block.kind.store(int(WaitKind::Sem));
    if (block_satisfied(t)) {  // one definition of "the wait is over", shared with the watchdog
        t.block.kind.store(0);
        return;
    }
    std::unique_lock<std::mutex> lk(c.mu);
    c.waiters.fetch_add(1, std::memory_order_seq_cst);
    while (!block_satisfied(t)) c.cv.wait_for(lk, std::chrono::milliseconds(2));
    c.waiters.fetch_sub(1, std::memory_order_seq_cst);
    t.block.kind.store(0);
    M.progress.fetch_add(1, std::memory_order_relaxed);
}

void sem_set(volatile uint32_t* p, uint32_t val) {
    uint32_t off = local_off(uint32_t(reinterpret_cast<uintptr_t>(p)), 4, "noc_semaphore_set");
    __atomic_store_n(const_cast<uint32_t*>(p), val, __ATOMIC_SEQ_CST);
    KThread& t = cur();
    notify_core(*t.core);
    if (t.tr) t.tr->sem_set(off, val);
}

void l1_cache_invalidated() {
    KThread& t = cur();
    EMU_TSAN_ACQUIRE(t.core);
    t.invalidated = true;
}

timing::Risc* timing_risc() { return tls ? tls->tr : nullptr; }
bool timing_only() { return M.timing_only; }

void dprint(const char* text) {
    if (!M.dprint) return;
    KThread& t = cur();
    static std::mutex mu;
    std::lock_guard<std::mutex> g(mu);
    fprintf(stderr, "[%d,%d %s] %s", t.core->lx, t.core->ly, t.k->name.c_str(), text);
}

void poll_yield() {
    std::this_thread::yield();
}

}  // namespace emu

// ================================================================================================ machine setup
namespace rt {

void flush_reads(KThread& t) {
    for (auto& r : t.reads) std::memmove(r.dst, r.src, r.size);
    if (!t.reads.empty()) {
        t.reads.clear();
        M.progress.fetch_add(1, std::memory_order_relaxed);
    }
}

// ---- fault handler: names the faulting address's core/region and the current kernel.
void on_signal(int sig, siginfo_t* si, void* uctx) {
    uintptr_t a = reinterpret_cast<uintptr_t>(si->si_addr);
    char where[1024];
    where[0] = 0;
    if (sig == SIGSEGV || sig == SIGBUS) {
        uint64_t lo = emu::kL1HostBase, hi = lo + uint64_t(M.cores.size()) * emu::kL1SlotBytes;
        if (a >= lo && a < hi) {
            size_t ci = (a - lo) / emu::kL1SlotBytes;
            uint32_t off = uint32_t((a - lo) % emu::kL1SlotBytes);
            Core& c = *M.cores[ci];
            const char* kind = off >= M.l1_size ? "past the end of L1"
                               : off < M.l1_unreserved ? "in the reserved region (not kernel-accessible)"
                                                       : "in unallocated L1 (no CB there)";
            snprintf(where, sizeof where, " = L1 of core (%d,%d) at offset 0x%x, %s", c.lx, c.ly, off, kind);
        } else if (M.dram && a >= uintptr_t(M.dram) && a < uintptr_t(M.dram) + M.channel_bytes * M.num_channels) {
            snprintf(where, sizeof where, " = inside the DRAM image (direct host access to DRAM)");
        } else if (a < 0x10000) {
            snprintf(where, sizeof where, " (null-pointer dereference?)");
        } else if (a < M.l1_size) {
            // Silicon kernels may dereference an L1 offset directly; here L1 lives at emu::kL1HostBase + core slot.
            snprintf(where, sizeof where,
                     " = a plain L1 offset used as a pointer (e.g. a sharded buffer_address()); in the emulator a "
                     "core's L1 is at host address emu::l1_base() + offset, or move the bytes with the NOC API");
        }
    }
    const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                       : sig == SIGILL ? "SIGILL" : sig == SIGABRT ? "SIGABRT (abort/assert)" : "signal";
    char msg[1600];
    if (sig == SIGABRT)
        snprintf(msg, sizeof msg, "%s in kernel thread", name);
    else
        snprintf(msg, sizeof msg, "%s at address 0x%lx%s", name, (unsigned long)a, where);
    char core[32] = "";
    char kern[512] = "";
    if (tls) {
        snprintf(core, sizeof core, "%d,%d", tls->core->lx, tls->core->ly);
        snprintf(kern, sizeof kern, "%s (%s)", tls->k->name.c_str(), proc_name(tls->k->proc));
    }
    if (g_dying.exchange(1)) {
        for (;;) pause();
    }
    // The fault as known so far first; then the stack, which needs the unwinder: should it block (a fault inside the
    // dynamic loader, holding its lock), SIGALRM ends the process and the parent still reads this result.
    write_raw_result("fault", core, kern, msg);
    signal(SIGALRM, SIG_DFL);
    alarm(5);
    static char frames[8192];
    void* pcs[kMaxFrames + 1];
    pcs[0] = reinterpret_cast<void*>(uctx ? static_cast<ucontext_t*>(uctx)->uc_mcontext.gregs[REG_RIP] : 0);
    void* raw[kMaxFrames];
    int n = backtrace(raw, kMaxFrames), from = 0;
    for (int i = 0; i < n; ++i)  // the handler's own frames and the signal trampoline come before the faulting pc
        if (raw[i] == pcs[0]) {
            from = i + 1;
            break;
        }
    int m = 1;
    for (int i = from; i < n && m <= kMaxFrames; ++i) pcs[m++] = raw[i];
    frames_json(frames, sizeof frames, pcs, m, true);
    write_raw_result("fault", core, kern, msg, frames);
    _exit(4);
}

void install_signal_handlers() {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(s, &sa, nullptr);
}

void* thread_main(void* arg) {
    KThread* t = static_cast<KThread*>(arg);
    tls = t;
    // The fault handler runs on an alternate stack (a kernel's stack overflow still reports). A thread may already
    // have one: AddressSanitizer builds install theirs and unmap it at thread exit, so it must stay the one in place.
    stack_t cur_ss;
    if (sigaltstack(nullptr, &cur_ss) != 0 || (cur_ss.ss_flags & SS_DISABLE)) {
        stack_t ss;
        ss.ss_sp = malloc(1 << 16);
        ss.ss_size = 1 << 16;
        ss.ss_flags = 0;
        sigaltstack(&ss, nullptr);
    }
    for (int i = 0; i < kNumCbs; ++i) t->rd_ptr[i] = t->wr_ptr[i] = t->core->cbs[i].addr;
    t->entry();
    flush_reads(*t);
    t->writes.clear();
    t->done.store(true);
    M.progress.fetch_add(1);
    {
        std::lock_guard<std::mutex> g(t->core->mu);
        t->core->cv.notify_all();
    }
    return nullptr;
}

// CPU time this process's threads have received, divided by the host's cores: never more than the wall time.
double cpu_seconds_per_core() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return (ts.tv_sec + ts.tv_nsec * 1e-9) / cores;
}

void watchdog_loop(std::atomic<bool>* finished) {
    using clk = std::chrono::steady_clock;
    auto start = clk::now();
    // The deadline counts the CPU time the run received (per host core), not the wall clock: on a loaded host every
    // CB or semaphore handoff between kernel threads waits in the scheduler's queue, so a correct run can take
    // minutes of wall time while receiving seconds of CPU (a stress run at load average 90 passed a 120 s wall-clock
    // deadline that way). A kernel that spins forever burns CPU and still passes it.
    const double cpu_start = cpu_seconds_per_core();
    uint64_t last_progress = M.progress.load();
    auto stuck_since = clk::now();
    bool stuck = false;
    while (!finished->load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        auto now = clk::now();
        bool deadline = (cpu_seconds_per_core() - cpu_start) * 1000.0 > M.deadline_ms;
        bool all_blocked = true;
        int live = 0;
        for (auto& t : M.threads) {
            if (t->done.load()) continue;
            ++live;
            if (t->block.kind.load() == 0) {
                all_blocked = false;
                continue;
            }
            std::lock_guard<std::mutex> g(t->core->mu);
            if (block_satisfied(*t)) all_blocked = false;  // runnable, just not scheduled yet
        }
        uint64_t p = M.progress.load();
        if (live > 0 && all_blocked && p == last_progress) {
            if (!stuck) {
                stuck = true;
                stuck_since = now;
            }
        } else {
            stuck = false;
        }
        last_progress = p;
        bool hang = stuck && std::chrono::duration_cast<std::chrono::milliseconds>(now - stuck_since).count() >=
                                 M.hang_ms;
        if (!hang && !deadline) continue;
        std::string msg = hang ? "deadlock: every live kernel thread is blocked and nothing has progressed for " +
                                     std::to_string(M.hang_ms) + " ms"
                               : "deadline of " + std::to_string(M.deadline_ms) + " ms (CPU time per host core) passed after " +
                                     std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count()) +
                                     " ms wall with kernels still running";
        std::string first_core, first_kernel;
        for (auto& t : M.threads) {
            if (t->done.load()) continue;
            std::string d;
            {
                std::lock_guard<std::mutex> g(t->core->mu);
                d = describe_block(*t);
            }
            msg += fmt("\n  core (%d,%d) %s (%s): %s", t->core->lx, t->core->ly, t->k->name.c_str(),
                       proc_name(t->k->proc), d.c_str());
            if (first_core.empty()) {
                first_core = core_name(t->core);
                first_kernel = t->k->name + " (" + proc_name(t->k->proc) + ")";
            }
        }
        die("hang", 3, first_core, first_kernel, msg);
    }
}

// ---- program file
void map_l1() {
    size_t n = M.cores.size();
    for (size_t i = 0; i < n; ++i) {
        void* want = reinterpret_cast<void*>(uintptr_t(emu::kL1HostBase) + i * emu::kL1SlotBytes);
        void* p = mmap(want, emu::kL1SlotBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                       -1, 0);
        if (p != want) setup_error(fmt("cannot map L1 of core %zu at host address %p: %s", i, want, strerror(errno)));
        M.cores[i]->base = static_cast<uint8_t*>(p);
    }
}

void protect_regions() {
    const size_t pg = size_t(sysconf(_SC_PAGESIZE));
    for (auto& cp : M.cores) {
        Core& c = *cp;
        for (auto& r : c.regions) {
            size_t a = r.start / pg * pg, b = (r.end + pg - 1) / pg * pg;
            if (mprotect(c.base + a, b - a, PROT_READ | PROT_WRITE) != 0)
                setup_error(fmt("mprotect L1 core (%d,%d): %s", c.lx, c.ly, strerror(errno)));
        }
    }
}

void load_program(const char* path) {
    std::ifstream in(path);
    if (!in) setup_error(std::string("cannot open program file ") + path);
    std::string tok;
    std::map<int, Kernel*> kmap;
    while (in >> tok) {
        if (tok == "result") {
            in >> M.result_path;
        } else if (tok == "grid") {
            in >> M.grid_w >> M.grid_h;
            for (int y = 0; y < M.grid_h; ++y)
                for (int x = 0; x < M.grid_w; ++x) {
                    auto c = std::make_unique<Core>();
                    c->lx = x;
                    c->ly = y;
                    c->idx = int(M.cores.size());
                    M.cores.push_back(std::move(c));
                }
        } else if (tok == "l1") {
            in >> M.l1_size >> M.l1_unreserved;
        } else if (tok == "translate") {
            in >> M.tx0 >> M.ty0;
        } else if (tok == "xmap") {
            size_t n = 0;
            in >> n;
            M.col_x.assign(n, 0);
            for (auto& v : M.col_x) in >> v;
        } else if (tok == "dram") {
            in >> M.dram_fd >> M.num_channels >> M.channel_bytes >> M.bank_bytes;
            M.channel_cores.resize(size_t(M.num_channels));
        } else if (tok == "dram_core") {
            int ch;
            uint32_t x, y;
            in >> ch >> x >> y;
            M.channel_cores.at(size_t(ch)).push_back({x, y});
        } else if (tok == "bank") {
            DramBank b;
            in >> b.channel >> b.x >> b.y >> b.offset >> b.x1 >> b.y1;
            M.banks.push_back(b);
        } else if (tok == "limits") {
            in >> M.deadline_ms >> M.hang_ms;
        } else if (tok == "dprint") {
            int v;
            in >> v;
            M.dprint = v != 0;
        } else if (tok == "so_dir") {
            in >> M.so_dir;
        } else if (tok == "buffer") {
            Buffer b;
            in >> b.id >> b.base >> b.aligned_page >> b.num_pages;
            b.page_read.reset(new std::atomic<uint64_t>[b.num_pages]());
            b.page_written.reset(new std::atomic<uint64_t>[b.num_pages]());
            M.buffers.push_back(std::move(b));
        } else if (tok == "l1store") {
            in >> M.l1_fd;
        } else if (tok == "l1buf") {
            L1Buffer b;
            size_t n;
            in >> b.id >> b.base >> b.aligned_page >> b.num_pages >> b.pages_per_shard >> b.region >> n;
            b.cores.resize(n);
            for (auto& ci : b.cores) in >> ci;
            if (!in || b.aligned_page == 0 || uint64_t(b.base) + b.region > M.l1_size)
                setup_error(fmt("program file: bad l1buf record for buffer %d", b.id));
            for (size_t k = 0; k < n; ++k) {
                if (b.cores[k] < 0 || size_t(b.cores[k]) >= M.cores.size())
                    setup_error(fmt("program file: l1buf %d names core index %d outside the grid", b.id, b.cores[k]));
                M.cores[size_t(b.cores[k])]->regions.push_back(
                    {b.base, b.base + b.region, fmt("L1 buffer %d (shard %zu)", b.id, k)});
            }
            b.page_read.reset(new std::atomic<uint64_t>[b.num_pages]());
            b.page_written.reset(new std::atomic<uint64_t>[b.num_pages]());
            M.l1_buffers.push_back(std::move(b));
        } else if (tok == "l1bank") {
            int x, y;
            in >> x >> y;
            if (!in || x < 0 || y < 0 || x >= M.grid_w || y >= M.grid_h)
                setup_error(fmt("program file: l1bank %zu at core (%d,%d) outside the grid", M.l1_banks.size(), x, y));
            M.l1_banks.push_back(y * M.grid_w + x);
        } else if (tok == "l1ibuf") {
            L1Buffer b;
            in >> b.id >> b.base >> b.aligned_page >> b.num_pages;
            b.interleaved = true;
            b.cores = M.l1_banks;
            if (!in || b.aligned_page == 0 || b.cores.empty())
                setup_error(fmt("program file: bad l1ibuf record for buffer %d (or no l1bank record before it)",
                                b.id));
            uint32_t nb = uint32_t(b.cores.size());
            b.pages_per_shard = 0;
            b.region = std::max<uint32_t>((b.num_pages + nb - 1) / nb, 1) * b.aligned_page;
            if (uint64_t(b.base) + b.region > M.l1_size)
                setup_error(fmt("program file: l1ibuf %d runs past the end of L1", b.id));
            for (size_t k = 0; k < b.cores.size(); ++k) {
                uint32_t bytes = l1_core_bytes(b, k);
                if (bytes)
                    M.cores[size_t(b.cores[k])]->regions.push_back(
                        {b.base, b.base + bytes, fmt("L1 buffer %d (interleaved, bank %zu)", b.id, k)});
            }
            b.page_read.reset(new std::atomic<uint64_t>[b.num_pages]());
            b.page_written.reset(new std::atomic<uint64_t>[b.num_pages]());
            M.l1_buffers.push_back(std::move(b));
        } else if (tok == "cb") {
            int x, y, idx;
            uint32_t addr, size, page, fmtv;
            in >> x >> y >> idx >> addr >> size >> page >> fmtv;
            Core& c = core_at(x, y);
            CB& cb = c.cbs[idx];
            cb.configured = true;
            cb.addr = addr;
            cb.size = size;
            cb.page_size = page;
            cb.num_pages = page ? size / page : 0;
            cb.fmt = DataFormat(fmtv);
            c.used = true;
            c.regions.push_back({addr, addr + size, fmt("CB %d", idx)});
        } else if (tok == "sem") {
            int x, y, id;
            uint32_t init;
            in >> x >> y >> id >> init;
            Core& c = core_at(x, y);
            c.used = true;
            if (id < 0 || id >= int(kNumSems)) setup_error(fmt("semaphore id %d out of range", id));
            c.regions.push_back({kCfgBase + 16u * id, kCfgBase + 16u * id + 4, fmt("semaphore %d", id)});
            c.sem_init.push_back({kCfgBase + 16u * id, init});
        } else if (tok == "kernel") {
            auto k = std::make_unique<Kernel>();
            int proc;
            in >> k->id >> proc >> k->path >> k->name;
            k->proc = Processor(proc);
            kmap[k->id] = k.get();
            M.kernels.push_back(std::move(k));
        } else if (tok == "kcfg") {
            int id, fid, approx, fp32, full, precise;
            in >> id >> fid >> approx >> fp32 >> full >> precise;
            Kernel* k = kmap.at(id);
            k->cfg.math_fidelity = uint8_t(fid);
            k->cfg.math_approx_mode = approx;
            k->cfg.fp32_dest_acc_en = fp32;
            k->cfg.dst_full_sync_en = full;
            k->cfg.bfp8_pack_precise = precise;
        } else if (tok == "knoc") {
            int id, noc;
            in >> id >> noc;
            kmap.at(id)->noc = uint8_t(noc & 1);
        } else if (tok == "timing") {
            int v;
            in >> v;
            M.timing = v != 0;
        } else if (tok == "chip") {
            std::string name;
            in >> name;
            if (!timing::Chip::by_name(name, M.chip))
                setup_error("program file: chip '" + name + "' is not a chip of the timing model (wormhole_b0, "
                            "blackhole)");
        } else if (tok == "timing_only") {
            int v;
            in >> v;
            M.timing_only = v != 0;
        } else if (tok == "nodata") {
            int id;
            in >> id;
            bool found = false;
            for (auto& b : M.buffers)
                if (b.id == id) b.nodata = found = true;
            if (!found) setup_error("program file: nodata names buffer " + std::to_string(id) + ", not a live buffer");
        } else if (tok == "kcrta") {
            int id;
            size_t n;
            in >> id >> n;
            Kernel* k = kmap.at(id);
            k->crta.resize(n);
            for (auto& v : k->crta) in >> v;
        } else if (tok == "inst") {
            auto t = std::make_unique<KThread>();
            int id, x, y;
            size_t n;
            in >> id >> x >> y >> n;
            t->k = kmap.at(id);
            t->core = &core_at(x, y);
            t->core->used = true;
            t->core->threads.push_back(t.get());
            t->rta.resize(n);
            for (auto& v : t->rta) in >> v;
            M.threads.push_back(std::move(t));
        } else if (tok == "end") {
            fill_columns();
            break;
        } else {
            setup_error("program file: unknown record '" + tok + "'");
        }
    }
}

// Moves every L1 buffer's range between the cores' L1 and the persistent L1 image: in before kernels start, out
// after they all finished (only on success: a faulting or hung program leaves the tensors as they were).
void copy_l1_buffers(bool in) {
    for (auto& b : M.l1_buffers)
        for (size_t k = 0; k < b.cores.size(); ++k) {
            int ci = b.cores[k];
            uint32_t bytes = l1_core_bytes(b, k);
            uint8_t* l1 = M.cores[size_t(ci)]->base + b.base;
            uint8_t* store = M.l1_store + size_t(ci) * M.l1_size + b.base;
            if (in)
                std::memcpy(l1, store, bytes);
            else
                std::memcpy(store, l1, bytes);
        }
}

void setup_memory() {
    map_l1();
    // Kernel-config window (runtime args) on every used core.
    for (auto& cp : M.cores) {
        Core& c = *cp;
        if (!c.used) continue;
        for (int p = 0; p < 3; ++p) {
            uint32_t a = kRtaBase + uint32_t(p) * 0x1000;
            c.regions.push_back({a, a + 4 * kRtaMaxWords, fmt("runtime args of %s", proc_name(Processor(p)))});
            if (p == 0)  // firmware's zero-filled MEM_ZEROS block, the source of noc.async_write_zeros' loopback reads
                c.regions.push_back({emu::kMemZerosBase, emu::kMemZerosBase + emu::kMemZerosSize, "MEM_ZEROS"});
            c.regions.push_back({a + 0x800, a + 0x800 + 4 * kRtaMaxWords,
                                 fmt("common runtime args of %s", proc_name(Processor(p)))});
        }
    }
    protect_regions();
    if (!M.l1_buffers.empty()) {
        if (M.l1_fd < 0) setup_error("program file: L1 buffers without an l1store");
        size_t len = size_t(M.l1_size) * M.cores.size();
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, M.l1_fd, 0);
        if (p == MAP_FAILED) setup_error(fmt("cannot map the L1 image (fd %d): %s", M.l1_fd, strerror(errno)));
        M.l1_store = static_cast<uint8_t*>(p);
        copy_l1_buffers(true);
    }
    for (auto& cp : M.cores)
        for (auto& s : cp->sem_init)
            __atomic_store_n(reinterpret_cast<uint32_t*>(cp->base + s.first), s.second, __ATOMIC_SEQ_CST);
    // runtime args into L1
    for (auto& t : M.threads) {
        uint32_t a = kRtaBase + uint32_t(t->k->proc) * 0x1000;
        if (t->rta.size() > kRtaMaxWords || t->k->crta.size() > kRtaMaxWords) setup_error("too many runtime args");
        if (!t->rta.empty()) std::memcpy(t->core->base + a, t->rta.data(), 4 * t->rta.size());
        if (!t->k->crta.empty()) std::memcpy(t->core->base + a + 0x800, t->k->crta.data(), 4 * t->k->crta.size());
    }
    // DRAM image
    if (M.dram_fd >= 0) {
        size_t len = size_t(M.channel_bytes) * size_t(M.num_channels);
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, M.dram_fd, 0);
        if (p == MAP_FAILED) setup_error(fmt("cannot map the DRAM image (fd %d): %s", M.dram_fd, strerror(errno)));
        M.dram = static_cast<uint8_t*>(p);
    }
}

void record_code_objects(const std::map<std::string, std::string>& copies);

// Each (kernel, core) instance gets its own copy of the kernel library so file-scope variables in kernels stay
// per-core, as on silicon.
void load_kernels() {
    std::map<std::string, std::string> copies;  // loaded copy -> the cached library it was copied from
    for (auto& t : M.threads) {
        std::string src = t->k->path;
        std::string dst = M.so_dir + fmt("/k%d_c%d.so", t->k->id, t->core->idx);
        {
            std::ifstream i(src, std::ios::binary);
            if (!i) setup_error("cannot read kernel library " + src);
            std::ofstream o(dst, std::ios::binary);
            o << i.rdbuf();
        }
        void* h = dlopen(dst.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) setup_error(std::string("dlopen failed: ") + dlerror());
        unlink(dst.c_str());
        copies[dst] = src;
        void* e = dlsym(h, "_Z11kernel_mainv");
        if (!e) setup_error("kernel " + t->k->name + " defines no `void kernel_main()`");
        t->so = h;
        t->entry = reinterpret_cast<void (*)()>(e);
        // A compute kernel's tile tables are constants of its build, which the compute model's functions (compiled
        // into this executable, csrc/compute.cpp) cannot see: the library hands them over (emu/compute_state.h).
        if (void* f = dlsym(h, "emu_cb_tile_shapes")) {
            t->tile_shapes = reinterpret_cast<emu::CbTileShapes (*)()>(f)();
            t->has_tile_shapes = true;
        }
    }
    record_code_objects(copies);
}

// The code objects of the process (dl_iterate_phdr), each kernel copy under its cached library's name.
void record_code_objects(const std::map<std::string, std::string>& copies) {
    char exe[512] = "";
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = 0;
    struct Ctx {
        const std::map<std::string, std::string>* copies;
        const char* exe;
    } ctx{&copies, exe};
    dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t, void* data) -> int {
            auto* c = static_cast<Ctx*>(data);
            if (g_num_objects >= kMaxCodeObjects) return 1;
            uintptr_t lo = UINTPTR_MAX, hi = 0;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const auto& ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD) continue;
                lo = std::min<uintptr_t>(lo, info->dlpi_addr + ph.p_vaddr);
                hi = std::max<uintptr_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
            }
            if (hi <= lo) return 0;
            std::string name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : c->exe;
            auto it = c->copies->find(name);
            if (it != c->copies->end()) name = it->second;
            CodeObject& o = g_objects[g_num_objects++];
            o.lo = lo;
            o.hi = hi;
            o.base = info->dlpi_addr;
            snprintf(o.path, sizeof o.path, "%s", name.c_str());
            return 0;
        },
        &ctx);
    void* warm[2];
    backtrace(warm, 2);  // loads the unwinder now, not first inside a signal handler
}

void write_ok_result() {
    std::ostringstream o;
    o << "{\"status\": \"ok\", \"stats\": {";
    uint64_t rd[16]{}, wr[16]{};
    std::map<std::pair<int, int>, uint64_t> noc;
    for (auto& t : M.threads) {
        for (size_t b = 0; b < M.banks.size(); ++b) {
            rd[b] += t->dram_read[b];
            wr[b] += t->dram_write[b];
        }
        for (auto& kv : t->noc_bytes) noc[kv.first] += kv.second;
    }
    o << "\"dram_bank_read\": [";
    for (size_t b = 0; b < M.banks.size(); ++b) o << (b ? ", " : "") << rd[b];
    o << "], \"dram_bank_write\": [";
    for (size_t b = 0; b < M.banks.size(); ++b) o << (b ? ", " : "") << wr[b];
    o << "], \"noc\": [";
    bool first = true;
    auto node = [](int n) {
        if (n < 0) return "\"dram" + std::to_string(-1 - n) + "\"";
        return "\"" + core_name(M.cores[size_t(n)].get()) + "\"";
    };
    for (auto& kv : noc) {
        o << (first ? "" : ", ") << "[" << node(kv.first.first) << ", " << node(kv.first.second) << ", " << kv.second
          << "]";
        first = false;
    }
    o << "], \"cores\": {";
    first = true;
    for (auto& cp : M.cores) {
        Core& c = *cp;
        if (!c.used) continue;
        o << (first ? "" : ", ") << "\"" << core_name(&c) << "\": {\"counters\": [";
        for (size_t i = 0; i < size_t(emu::Counter::NumCounters); ++i) {
            uint64_t n = 0;
            for (const KThread* t : c.threads) n += t->counters[i];
            o << (i ? ", " : "") << n;
        }
        o << "], \"cb_high_water\": {";
        bool f2 = true;
        for (int i = 0; i < kNumCbs; ++i)
            if (c.cbs[i].configured) {
                o << (f2 ? "" : ", ") << "\"" << i << "\": " << c.cbs[i].high_water;
                f2 = false;
            }
        o << "}}";
        first = false;
    }
    o << "}, \"buffers\": {";
    first = true;
    // Per-page counts go to a binary file beside the result (<result>.pages: each buffer's read counts, then its
    // written counts, as native uint64; the JSON names where they start): a large K/V cache has a hundred thousand
    // pages, and as JSON text they were most of the result and of the parent's time parsing it.
    std::string pages_path = M.result_path + ".pages";
    FILE* pages = fopen(pages_path.c_str(), "wb");
    if (!pages) setup_error("cannot write the result's page counts");
    uint64_t at = 0;
    auto counts = [&](uint32_t num_pages, const std::atomic<uint64_t>* v) {
        std::vector<uint64_t> words(num_pages);
        for (uint32_t i = 0; i < num_pages; ++i) words[i] = v[i].load();
        if (fwrite(words.data(), sizeof(uint64_t), words.size(), pages) != words.size())
            setup_error("cannot write the result's page counts");
    };
    auto emit = [&](int id, uint32_t num_pages, const std::atomic<uint64_t>* rd, const std::atomic<uint64_t>* wr) {
        o << (first ? "" : ", ") << "\"" << id << "\": {\"pages\": " << num_pages << ", \"at\": " << at << "}";
        counts(num_pages, rd);
        counts(num_pages, wr);
        at += 2 * uint64_t(num_pages);
        first = false;
    };
    for (auto& b : M.buffers) emit(b.id, b.num_pages, b.page_read.get(), b.page_written.get());
    for (auto& b : M.l1_buffers) emit(b.id, b.num_pages, b.page_read.get(), b.page_written.get());
    if (fclose(pages) != 0) setup_error("cannot write the result's page counts");
    o << "}";
    if (!M.timing_json.empty()) o << ", \"timing\": " << M.timing_json;
    if (!M.timing_variants_json.empty()) o << ", \"timing_variants\": " << M.timing_variants_json;
    o << ", \"host_phases_s\": {";
    for (size_t i = 0; i < M.host_phases.size(); ++i)
        o << (i ? ", " : "") << "\"" << M.host_phases[i].first << "\": " << fmt("%.6f", M.host_phases[i].second);
    o << "}}}\n";
    std::string s = o.str();
    std::string tmp = M.result_path + ".tmp";
    FILE* f = fopen(tmp.c_str(), "w");
    if (!f) setup_error("cannot write result file");
    fwrite(s.data(), 1, s.size(), f);
    fclose(f);
    rename(tmp.c_str(), M.result_path.c_str());
}

// A timing engine for the program's grid and DRAM banks under `params`, its CBs and semaphores configured (no RISCs).
std::unique_ptr<timing::Engine> new_engine(timing::Params params) {
    std::vector<timing::Xy> banks, banks_noc1;
    for (auto& b : M.banks) {
        banks.push_back({int(b.x), int(b.y)});
        banks_noc1.push_back({int(b.x1), int(b.y1)});
    }
    auto e = std::make_unique<timing::Engine>(timing::Topology::of(M.chip, M.grid_w, M.grid_h, banks, banks_noc1),
                                              std::move(params));
    for (auto& cp : M.cores) {
        for (int i = 0; i < kNumCbs; ++i)
            if (cp->cbs[i].configured) e->configure_cb(cp->idx, uint32_t(i), cp->cbs[i].num_pages);
        for (auto& sm : cp->sem_init) e->init_semaphore(cp->idx, sm.first, sm.second);
    }
    return e;
}

// TTFD_TIMING_VARIANTS: "all" or variant names separated by commas or spaces; every one but the variant the main
// replay uses (TTFD_TIMING_VARIANT) is replayed again after it. An unknown name stops the run with the list.
void parse_extra_variants(const std::string& main_variant) {
    const char* env = getenv("TTFD_TIMING_VARIANTS");
    if (!env) return;
    std::vector<std::string> names;
    std::string cur;
    for (const char* c = env;; ++c) {
        if (*c == ',' || *c == ' ' || *c == '\t' || *c == 0) {
            if (!cur.empty()) names.push_back(cur);
            cur.clear();
            if (*c == 0) break;
        } else {
            cur += *c;
        }
    }
    if (names.size() == 1 && names[0] == "all") names = timing::variant_names(M.chip.name);
    for (const auto& n : names) {
        timing::Params p;
        std::string err;
        if (!timing::variant_params(n.c_str(), p, err))
            setup_error("TTFD_TIMING_VARIANTS: " + err.substr(err.find('\'')));
        if (p.variant == main_variant) continue;
        bool seen = false;
        for (auto& v : M.extra_variants) seen = seen || v.first == p.variant;
        if (!seen) M.extra_variants.emplace_back(p.variant, std::move(p));
    }
}

// The timing model (docs/TIMING.md, section 5): one Risc trace per kernel thread, the program's CBs and semaphores.
// The compute grid must fit the chip's worker grid (Wormhole 8 x 10, Blackhole 14 x 10); otherwise the run reports
// no timing.
void setup_timing() {
    if (!M.timing) return;
    if (M.grid_w > M.chip.max_grid_w || M.grid_h > M.chip.max_grid_h) {
        M.timing_json = "{\"ok\": false, \"duration_ns\": null, \"first_start_ns\": 0, \"last_end_ns\": 0, "
                        "\"error\": \"the timing model covers " + M.chip.name + "'s " +
                        fmt("%dx%d", M.chip.max_grid_w, M.chip.max_grid_h) + " worker grid, not " +
                        fmt("%dx%d", M.grid_w, M.grid_h) +
                        "\", \"trace_digest\": \"\", \"cores\": {}, \"dram_bank_busy\": [], \"busiest_links\": []}";
        M.timing = false;
        return;
    }
    // The model's variant (docs/TIMING.md, section 3b): TTFD_TIMING_VARIANT, nominal when unset.
    timing::Params params;
    std::string err;
    if (!timing::variant_params(getenv("TTFD_TIMING_VARIANT"), params, err)) setup_error(err.c_str());
    parse_extra_variants(params.variant);
    M.engine = new_engine(std::move(params));
    for (auto& t : M.threads) {
        t->tr = &M.engine->add_risc(t->core->idx, timing::Proc(t->k->proc), t->k->cfg.dst_full_sync_en ? 1 : 2);
        // 512 KiB of address space each, its pages touched as the trace fills them: a Llama-3.1-8B batch-8 8K decode
        // records ~4K events per RISC, and without the room its traces were copied ~12 times each as they grew.
        t->tr->reserve(size_t(1) << 14);
    }
}

// The replay, after every kernel thread joined: deterministic whatever the host interleaving was. The recorded
// traces do not depend on the variant (only the replay reads the constants), so each further variant replays copies
// of them on a fresh engine: the replay books links, DRAM channels, CB and semaphore state as it goes, and a new
// engine is the reset that leaves nothing of the previous replay behind. The result equals a run made with
// TTFD_TIMING_VARIANT=<that variant> (ttemu/tests/test_timing_variants.py).
void replay_timing() {
    if (!M.engine) return;
    // The trace's digest reads the events the replay reads and nothing the replay writes: it is computed beside it
    // (a serial hash of every event, a tenth of the replay's time), once for every variant.
    uint64_t digest = 0;
    std::thread hash([&digest] { digest = M.engine->trace_digest(); });
    timing::Result res = M.engine->run();
    hash.join();
    M.timing_json = M.engine->result_json(res, digest);
    if (M.extra_variants.empty()) return;
    std::string o = "{";
    for (size_t v = 0; v < M.extra_variants.size(); ++v) {
        auto e = new_engine(M.extra_variants[v].second);
        for (size_t i = 0; i < M.engine->num_riscs(); ++i) {
            const timing::Risc& r = M.engine->risc(i);
            e->add_risc(r.core(), r.proc(), r.dst_buffers()) = r;
        }
        o += (v ? ", \"" : "\"") + M.extra_variants[v].first + "\": " + e->result_json(e->run(), digest);
    }
    M.timing_variants_json = o + "}";
}

// Ends phase `name` of M.host_phases: the wall seconds since the previous phase ended (or since M was made).
void mark_phase(const char* name) {
    auto now = std::chrono::steady_clock::now();
    M.host_phases.emplace_back(name, std::chrono::duration<double>(now - M.phase_mark).count());
    M.phase_mark = now;
}

int run(const char* program) {
    install_signal_handlers();
    load_program(program);
    mark_phase("load_program");
    setup_memory();
    mark_phase("setup_memory");
    load_kernels();
    mark_phase("load_kernels");
    setup_timing();
    std::atomic<bool> finished{false};
    std::thread wd(watchdog_loop, &finished);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8u << 20);
    for (auto& t : M.threads)
        if (pthread_create(&t->th, &attr, thread_main, t.get()) != 0) setup_error("pthread_create failed");
    for (auto& t : M.threads) pthread_join(t->th, nullptr);
    finished.store(true);
    wd.join();
    if (M.l1_store) copy_l1_buffers(false);
    mark_phase("kernels");
    replay_timing();
    mark_phase("replay");
    write_ok_result();
    return 0;
}

}  // namespace rt

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PROGRAM_FILE\n", argv[0]);
        return 2;
    }
    return rt::run(argv[1]);
}
