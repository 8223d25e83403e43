// A single-threaded fake of emu/runtime.h for unit tests of the compute API headers: one core, one compute kernel
// (linked into the same shared library), CBs filled by the host before the kernel runs and read after it. Faults
// throw, and fr_run reports them. The real runtime (csrc/) runs reader/compute/writer threads; this fake exists so
// the tile math can be tested fast and alone. The compute model's out-of-line functions (the emulator's csrc/compute.cpp,
// compute_sfpu.cpp, formats.cpp) are linked in beside it, as the runtime executable carries them (cxx.py
// kernel_api_objects).
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "emu/formats.h"
#include "emu/runtime.h"

void kernel_main();

namespace {
struct FakeCb {
    bool configured = false;
    emu::DataFormat fmt = emu::DataFormat::Invalid;
    uint32_t base = 0, page = 0, num_pages = 0;
    uint32_t rd = 0, wr = 0;     // page indices
    uint32_t filled = 0;          // pages pushed and not popped
};
struct Fake {
    std::vector<uint8_t> l1 = std::vector<uint8_t>(1536 * 1024, 0xAB);
    uint32_t next_addr = 0x10000;
    FakeCb cb[64];
    emu::ComputeConfig cfg;
    uint64_t counters[static_cast<int>(emu::Counter::NumCounters)] = {};
    std::vector<uint32_t> args;
    std::string error;
};
Fake g;

FakeCb& cbref(uint32_t cb) {
    if (cb >= 64 || !g.cb[cb].configured) emu::fault("cb %u is not configured", cb);
    return g.cb[cb];
}
}  // namespace

uint32_t emu_fake_rt_arg(int i) {
    if (i < 0 || static_cast<size_t>(i) >= g.args.size()) emu::fault("runtime arg %d out of range", i);
    return g.args[i];
}

namespace emu {
void cb_wait_front(uint32_t cb, uint32_t n) {
    if (cbref(cb).filled < n) fault("cb_wait_front(%u, %u): only %u pages and no producer (would hang)", cb, n, cbref(cb).filled);
}
void cb_pop_front(uint32_t cb, uint32_t n) {
    FakeCb& c = cbref(cb);
    if (c.filled < n) fault("cb_pop_front(%u, %u) with %u pages", cb, n, c.filled);
    c.filled -= n;
    c.rd = (c.rd + n) % c.num_pages;
}
void cb_reserve_back(uint32_t cb, uint32_t n) {
    FakeCb& c = cbref(cb);
    if (c.num_pages - c.filled < n) fault("cb_reserve_back(%u, %u): full, no consumer (would hang)", cb, n);
}
void cb_push_back(uint32_t cb, uint32_t n) {
    FakeCb& c = cbref(cb);
    if (c.num_pages - c.filled < n) fault("cb_push_back(%u, %u) overflows", cb, n);
    c.filled += n;
    c.wr = (c.wr + n) % c.num_pages;
}
bool cb_pages_available_at_front(uint32_t cb, uint32_t n, bool) { return cbref(cb).filled >= n; }
bool cb_pages_reservable_at_back(uint32_t cb, uint32_t n, bool) { return cbref(cb).num_pages - cbref(cb).filled >= n; }
timing::Risc* timing_risc() { return nullptr; }  // no timing model in the fake runtime
bool timing_only() { return false; }
uint32_t cb_read_addr(uint32_t cb) { return cbref(cb).base + cbref(cb).rd * cbref(cb).page; }
uint32_t cb_write_addr(uint32_t cb) { return cbref(cb).base + cbref(cb).wr * cbref(cb).page; }
uint32_t cb_page_size(uint32_t cb) { return cbref(cb).page; }
uint32_t cb_total_size(uint32_t cb) { return cbref(cb).page * cbref(cb).num_pages; }
uint32_t cb_base_addr(uint32_t cb) { return cbref(cb).base; }
DataFormat cb_data_format(uint32_t cb) { return cbref(cb).fmt; }
uint8_t* l1(uint32_t addr, uint32_t n) {
    if (static_cast<uint64_t>(addr) + n > g.l1.size()) fault("l1 access [%u, +%u) out of range", addr, n);
    return g.l1.data() + addr;
}
const ComputeConfig& compute_config() { return g.cfg; }
// The fake's kernels are built without chlkc_descriptors.h: every CB holds 32x32 tiles of four 16x16 faces.
const CbTileShapes* cb_tile_shapes() { return nullptr; }
void count(Counter c, uint64_t n) { g.counters[static_cast<int>(c)] += n; }
[[noreturn]] void fault(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    throw std::runtime_error(buf);
}
}  // namespace emu

extern "C" {
void fr_reset(int fp32, int fidelity, int approx, int full_sync) {
    g.~Fake();
    new (&g) Fake();
    g.cfg.fp32_dest_acc_en = fp32;
    g.cfg.math_fidelity = static_cast<uint8_t>(fidelity);
    g.cfg.math_approx_mode = approx;
    g.cfg.dst_full_sync_en = full_sync;
}
void fr_cb_config(uint32_t cb, uint32_t fmt, uint32_t num_pages) {
    FakeCb& c = g.cb[cb];
    c.configured = true;
    c.fmt = static_cast<emu::DataFormat>(fmt);
    c.page = emu::tile_size_bytes(c.fmt);
    c.num_pages = num_pages;
    c.base = g.next_addr;
    g.next_addr += (c.page * num_pages + 31) & ~31u;
}
// Host -> CB: pack `n` row-major 32x32 float tiles in the CB's format and push them.
void fr_cb_push_tiles(uint32_t cb, const float* tiles, uint32_t n) {
    for (uint32_t t = 0; t < n; ++t) {
        FakeCb& c = g.cb[cb];
        emu::pack_tile(c.fmt, tiles + t * 1024, g.l1.data() + c.base + c.wr * c.page);
        c.filled += 1;
        c.wr = (c.wr + 1) % c.num_pages;
    }
}
// CB -> host: decode the `n` pages at the front (without popping).
void fr_cb_read_tiles(uint32_t cb, float* out, uint32_t n) {
    FakeCb& c = g.cb[cb];
    for (uint32_t t = 0; t < n; ++t)
        emu::unpack_tile(c.fmt, g.l1.data() + c.base + ((c.rd + t) % c.num_pages) * c.page, out + t * 1024);
}
uint32_t fr_cb_filled(uint32_t cb) { return g.cb[cb].filled; }
void fr_set_args(const uint32_t* a, uint32_t n) { g.args.assign(a, a + n); }
int fr_run() {
    try {
        kernel_main();
    } catch (const std::exception& e) {
        g.error = e.what();
        return 1;
    }
    return 0;
}
const char* fr_last_error() { return g.error.c_str(); }
uint64_t fr_counter(int i) { return g.counters[i]; }
}
