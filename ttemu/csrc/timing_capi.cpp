// C interface to the timing model (include/emu/timing.h) for Python (ttemu/timing.py, loaded with
// ctypes): the calibration script and ttemu/tests/test_timing_model.py build RISC traces of the data-movement
// micro-benchmarks tt-metal publishes and replay them. The emulator runtime uses the C++ API directly.
#include <cstring>
#include <map>
#include <string>

#include "emu/timing_engine.h"

using timing::Endpoint;
using timing::Engine;
using timing::Noc;

namespace {
struct Handle {
    Engine engine;
    timing::Result result;
    std::string json;
    bool ran = false;
    Handle(timing::Topology t, timing::Params p) : engine(std::move(t), std::move(p)) {}
};
timing::Risc& R(Handle* h, int risc) { return h->engine.risc(size_t(risc)); }
}  // namespace

extern "C" {

// chip: "wormhole_b0" / "blackhole" (timing::Chip::by_name; null or "": Wormhole B0). banks_xy: 2 * num_banks ints
// (x, y of each bank's NoC 0 endpoint), or null for the chip's built-in table; banks_noc1_xy: the same for NoC 1's
// endpoints (dram_bank_to_noc_xy[1]), or null for NoC 0's. variant: a name from ttfd_tm_variant_name (null or "":
// nominal). An unknown chip or variant returns null (the Python side checks first).
void* ttfd_tm_new(const char* chip, int grid_w, int grid_h, const int* banks_xy, const int* banks_noc1_xy,
                  int num_banks, const char* variant) {
    std::vector<timing::Xy> banks, banks_noc1;
    for (int b = 0; banks_xy && b < num_banks; ++b) banks.push_back({banks_xy[2 * b], banks_xy[2 * b + 1]});
    for (int b = 0; banks_xy && banks_noc1_xy && b < num_banks; ++b)
        banks_noc1.push_back({banks_noc1_xy[2 * b], banks_noc1_xy[2 * b + 1]});
    timing::Chip c;
    if (!timing::Chip::by_name(chip ? chip : "", c)) return nullptr;
    timing::Params p;
    std::string err;
    if (!timing::variant_params(variant, p, err)) return nullptr;
    return new Handle(timing::Topology::of(c, grid_w, grid_h, banks, banks_noc1), std::move(p));
}

// The variants of chip `chip` (timing::variant_names(chip); "all": every chip's): how many, and the i-th name.
static const std::vector<std::string>& variants_of(const char* chip) {
    static std::map<std::string, std::vector<std::string>> memo;
    std::string c = chip ? chip : "wormhole_b0";
    auto it = memo.find(c);
    if (it == memo.end())
        it = memo.emplace(c, c == "all" ? timing::all_variant_names() : timing::variant_names(c)).first;
    return it->second;
}
int ttfd_tm_num_variants(const char* chip) { return int(variants_of(chip).size()); }
const char* ttfd_tm_variant_name(const char* chip, int i) { return variants_of(chip).at(size_t(i)).c_str(); }
// The assumed constants of chip `chip` (timing::assumed_rows): row i's constant name, variant stem, low and high
// ends, why, and the chip it belongs to ("" for every chip's); returns 0 past the end.
int ttfd_tm_assumed(const char* chip_name, int i, const char** constant, const char** stem, double* low, double* high,
                    const char** why, const char** chip) {
    static std::map<std::string, std::vector<timing::AssumedRow>> memo;
    std::string c = chip_name ? chip_name : "wormhole_b0";
    auto it = memo.find(c);
    if (it == memo.end()) it = memo.emplace(c, timing::assumed_rows(c)).first;
    const auto& t = it->second;
    if (i < 0 || size_t(i) >= t.size()) return 0;
    *chip = t[size_t(i)].chip ? t[size_t(i)].chip : "";
    *constant = t[size_t(i)].constant;
    *stem = t[size_t(i)].stem;
    *low = t[size_t(i)].low;
    *high = t[size_t(i)].high;
    *why = t[size_t(i)].why;
    return 1;
}
void ttfd_tm_free(void* h) { delete static_cast<Handle*>(h); }

int ttfd_tm_add_risc(void* hp, int core, int proc, int dst_buffers) {
    auto* h = static_cast<Handle*>(hp);
    h->engine.add_risc(core, timing::Proc(proc), dst_buffers);
    return int(h->engine.num_riscs()) - 1;
}
void ttfd_tm_configure_cb(void* h, int core, unsigned cb, unsigned pages) {
    static_cast<Handle*>(h)->engine.configure_cb(core, cb, pages);
}
void ttfd_tm_init_semaphore(void* h, int core, unsigned off, unsigned value) {
    static_cast<Handle*>(h)->engine.init_semaphore(core, off, value);
}

// target >= 0: worker core index; target < 0: DRAM bank -1 - target.
void ttfd_tm_read(void* h, int risc, int target, unsigned bytes, int noc, unsigned trid) {
    R(static_cast<Handle*>(h), risc).noc_read(Endpoint{target}, bytes, Noc(noc), trid);
}
void ttfd_tm_write(void* h, int risc, int target, unsigned bytes, int noc, unsigned trid) {
    R(static_cast<Handle*>(h), risc).noc_write(Endpoint{target}, bytes, Noc(noc), trid);
}
void ttfd_tm_write_multicast(void* h, int risc, int first, int last, unsigned bytes, int noc, int include_self) {
    R(static_cast<Handle*>(h), risc).noc_write_multicast(first, last, bytes, Noc(noc), include_self != 0);
}
void ttfd_tm_sem_inc(void* h, int risc, int core, unsigned off, unsigned incr, int noc) {
    R(static_cast<Handle*>(h), risc).sem_inc(core, off, incr, Noc(noc));
}
void ttfd_tm_sem_inc_multicast(void* h, int risc, int first, int last, unsigned off, unsigned incr, int noc) {
    R(static_cast<Handle*>(h), risc).sem_inc_multicast(first, last, off, incr, Noc(noc));
}
void ttfd_tm_sem_write_remote(void* h, int risc, int core, unsigned off, unsigned value, int noc) {
    R(static_cast<Handle*>(h), risc).sem_write_remote(core, off, value, Noc(noc));
}
void ttfd_tm_sem_wait(void* h, int risc, unsigned off, unsigned value, int at_least) {
    R(static_cast<Handle*>(h), risc).sem_wait(off, value, at_least != 0);
}
void ttfd_tm_sem_set(void* h, int risc, unsigned off, unsigned value) {
    R(static_cast<Handle*>(h), risc).sem_set(off, value);
}
// kind: 0 read, 1 write (acked), 2 writes flushed, 3 atomic; on NoC `noc`'s counters only
void ttfd_tm_barrier(void* h, int risc, int kind, unsigned trid, int noc) {
    auto& r = R(static_cast<Handle*>(h), risc);
    switch (kind) {
        case 0: r.read_barrier(Noc(noc), trid); break;
        case 1: r.write_barrier(Noc(noc), trid); break;
        case 2: r.writes_flushed(Noc(noc)); break;
        default: r.atomic_barrier(Noc(noc));
    }
}
void ttfd_tm_compute(void* h, int risc, int op, unsigned math_tiles, unsigned unpack_tiles, unsigned tile_bytes,
                     int fidelity, int approx, double tile_fraction) {
    R(static_cast<Handle*>(h), risc)
        .compute(timing::Op(op), math_tiles, unpack_tiles, tile_bytes, uint8_t(fidelity), approx != 0, tile_fraction);
}
void ttfd_tm_pack(void* h, int risc, unsigned tiles, unsigned tile_bytes) {
    R(static_cast<Handle*>(h), risc).pack(tiles, tile_bytes);
}
// which: 0 acquire, 1 commit, 2 wait, 3 release
void ttfd_tm_tile_regs(void* h, int risc, int which) {
    auto& r = R(static_cast<Handle*>(h), risc);
    switch (which) {
        case 0: r.tile_regs_acquire(); break;
        case 1: r.tile_regs_commit(); break;
        case 2: r.tile_regs_wait(); break;
        default: r.tile_regs_release();
    }
}
// kind: 0 wait_front, 1 pop_front, 2 reserve_back, 3 push_back
void ttfd_tm_cb(void* h, int risc, int kind, unsigned cb, unsigned pages) {
    auto& r = R(static_cast<Handle*>(h), risc);
    switch (kind) {
        case 0: r.cb_wait_front(cb, pages); break;
        case 1: r.cb_pop_front(cb, pages); break;
        case 2: r.cb_reserve_back(cb, pages); break;
        default: r.cb_push_back(cb, pages);
    }
}
void ttfd_tm_delay(void* h, int risc, double cycles) { R(static_cast<Handle*>(h), risc).delay(cycles); }
// lanes: bit 0 unpack, 1 math, 2 pack; reconfig: 0 an op's *_init, 1 a format reconfig.
void ttfd_tm_config(void* h, int risc, int lanes, int reconfig) {
    R(static_cast<Handle*>(h), risc).config(uint8_t(lanes), reconfig != 0);
}

unsigned long long ttfd_tm_trace_digest(void* h) { return static_cast<Handle*>(h)->engine.trace_digest(); }

// Replays the recorded traces: 0 ok, 1 replay deadlock (ttfd_tm_error says where).
int ttfd_tm_run(void* hp) {
    auto* h = static_cast<Handle*>(hp);
    h->result = h->engine.run();
    h->ran = true;
    return h->result.ok ? 0 : 1;
}
// The result as the runtime's result file will carry it under "timing" (docs/TIMING.md section 6).
const char* ttfd_tm_result_json(void* hp) {
    auto* h = static_cast<Handle*>(hp);
    h->json = h->engine.result_json(h->result);
    return h->json.c_str();
}
const char* ttfd_tm_error(void* h) { return static_cast<Handle*>(h)->result.error.c_str(); }
double ttfd_tm_duration(void* h) { return static_cast<Handle*>(h)->result.duration(); }
// out: start, end, busy, wait, unpack busy, math busy, pack busy
void ttfd_tm_risc_result(void* hp, int risc, double* out) {
    const auto& r = static_cast<Handle*>(hp)->result.riscs.at(size_t(risc));
    double v[7] = {r.start, r.end, r.busy, r.wait, r.lane_busy[0], r.lane_busy[1], r.lane_busy[2]};
    std::memcpy(out, v, sizeof v);
}
double ttfd_tm_dram_busy(void* hp, int bank) {
    return static_cast<Handle*>(hp)->result.dram_busy.at(size_t(bank));
}
// The i-th busiest NoC link of the replay: returns its booked occupancy (0 past the end); out: noc, x, y, axis.
double ttfd_tm_busiest_link(void* hp, int i, int* out) {
    const auto& v = static_cast<Handle*>(hp)->result.busiest_links;
    if (i < 0 || size_t(i) >= v.size()) return 0;
    const auto& l = v[size_t(i)];
    out[0] = int(l.noc);
    out[1] = l.from.x;
    out[2] = l.from.y;
    out[3] = l.axis;
    return l.busy;
}
// Hop count of the unicast route a -> b on `noc` (physical NoC 0 coordinates) on chip `chip`'s torus.
int ttfd_tm_hops(const char* chip, int ax, int ay, int bx, int by, int noc) {
    timing::Chip c;
    timing::Chip::by_name(chip ? chip : "", c);
    return timing::Topology::of(c, 1, 1).hops({ax, ay}, {bx, by}, Noc(noc));
}
// Physical NoC 0 coordinates of worker `core` of a grid_w x grid_h compute grid of chip `chip`.
void ttfd_tm_worker_xy(const char* chip, int grid_w, int grid_h, int core, int* xy) {
    timing::Chip c;
    timing::Chip::by_name(chip ? chip : "", c);
    auto t = timing::Topology::of(c, grid_w, grid_h);
    xy[0] = t.workers.at(size_t(core)).x;
    xy[1] = t.workers.at(size_t(core)).y;
}

// A chip's constant table (Wormhole B0: timing::k, every constant; Blackhole: its own, timing::kbh): number of rows,
// and row i's fields.
static const std::vector<timing::ConstantRow>& table_of(const char* chip) {
    return chip && std::string(chip) == "blackhole" ? timing::blackhole_constant_table() : timing::constant_table();
}
int ttfd_tm_num_constants(const char* chip) { return int(table_of(chip).size()); }
double ttfd_tm_constant(const char* chip, int i, const char** name, const char** unit, char* kind,
                        const char** source) {
    const auto& row = table_of(chip).at(size_t(i));
    *name = row.name;
    *unit = row.unit;
    *kind = row.kind;
    *source = row.source;
    return row.value;
}
}
