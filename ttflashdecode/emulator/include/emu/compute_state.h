// Per-thread state of an emulated compute engine (the three TRISCs of one Tensix core, run as one thread):
// the DST register file with its acquire/commit/wait/release protocol, and the unpacker/packer data-format
// configuration that the compute API's init and reconfig calls program.
//
// DST model
//   * Capacity per section (tt-metal dest_helpers.hpp): half-sync (default) 8 tiles, or 4 with fp32_dest_acc_en;
//     full-sync (dst_full_sync_en) 16 tiles, or 8 with fp32_dest_acc_en.
//   * Sections: MATH takes one with tile_regs_acquire, hands it to PACK with tile_regs_commit; PACK takes the oldest
//     committed one with tile_regs_wait and frees it with tile_regs_release. Half-sync has two sections (MATH can
//     hold one while the other waits for PACK), full-sync one. Because the three TRISCs run the same source in
//     program order, a call order that would block forever on silicon (acquire twice, wait with nothing committed,
//     acquire while every section is still held) is reported with emu::fault instead of hanging.
//   * Values are floats. With fp32_dest_acc_en=false DST holds Float16_b: every write rounds to bfloat16 (nearest
//     even). With it true DST keeps fp32.
//   * A released section is cleared the way the packer's ZEROACC leaves it: every tile "undefined", which
//     accumulating FPU ops read as 0 and max-pool (reduce MAX) reads as -inf.
#pragma once

#include <cmath>
#include <cstdio>

#include "emu/timing.h"
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include "emu/formats.h"
#include "emu/runtime.h"

namespace emu {

constexpr uint32_t kDstTilesMax = 16;
constexpr uint32_t kNumCbs = 64;

struct DstSection {
    float tile[kDstTilesMax][kTileHW];
    bool defined[kDstTilesMax];
    void clear() {
        std::memset(tile, 0, sizeof(tile));
        for (bool& d : defined) d = false;
    }
};

enum class ReduceMask : uint8_t { None, Row, Col, Scalar };

struct ComputeState {
    // ---- DST sections and ownership
    DstSection sections[2];
    int math_section = -1;        // section MATH holds (acquired, not committed), or -1
    int pack_section = -1;        // section PACK holds (after tile_regs_wait), or -1
    int committed[2] = {-1, -1};  // FIFO of committed sections waiting for PACK
    int num_committed = 0;
    bool legacy_dst = false;      // acquire_dst(): MATH and PACK share the section until release_dst()

    // ---- unpacker / packer configuration (programmed by hw_startup, inits and reconfig calls)
    bool started = false;
    DataFormat srca_fmt = DataFormat::Invalid;
    DataFormat srcb_fmt = DataFormat::Invalid;
    DataFormat pack_fmt = DataFormat::Invalid;
    uint32_t srca_cb = 0xffffffffu, srcb_cb = 0xffffffffu, pack_cb = 0xffffffffu;
    ReduceMask reduce_mask = ReduceMask::None;

    // ---- op configuration from the last init
    bool binary_acc_to_dest = false;
    uint32_t copy_transpose = 0;  // copy_init: bit 0 transpose of faces, bit 1 transpose within faces
    uint32_t matmul_transpose = 0;

    // ---- packer: tiles packed in sequential mode since the last cb_push_back, per CB
    uint32_t pack_seq[kNumCbs] = {};
    // packer L1 accumulation (llk_pack_reconfig_l1_acc) and ReLU (llk_pack_relu_config: 0 off, 1 zero, 2 min
    // threshold, 3 max threshold)
    bool pack_l1_acc = false;
    uint8_t pack_relu_mode = 0;
    float pack_relu_threshold = 0.0f;
};

inline ComputeState& cstate() {
    // Heap-allocated: a 128 KiB thread_local would not fit the static TLS block of a dlopen'ed kernel library.
    static thread_local std::unique_ptr<ComputeState> s;
    if (!s) {
        s.reset(new ComputeState());
        s->sections[0].clear();
        s->sections[1].clear();
    }
    return *s;
}

inline void compute_state_reset() {
    ComputeState& s = cstate();
    s.~ComputeState();
    new (&s) ComputeState();
    s.sections[0].clear();
    s.sections[1].clear();
}

inline bool dst_fp32() { return compute_config().fp32_dest_acc_en; }
inline uint32_t dst_num_sections() { return compute_config().dst_full_sync_en ? 1 : 2; }
inline uint32_t dst_capacity() {
    uint32_t full = compute_config().dst_full_sync_en ? 16 : 8;
    return dst_fp32() ? full / 2 : full;
}
inline const char* dst_mode_name() {
    static thread_local char buf[64];
    std::snprintf(buf, sizeof buf, "%s-sync, %s DST", compute_config().dst_full_sync_en ? "full" : "half",
                  dst_fp32() ? "fp32" : "bf16");
    return buf;
}

// The tile shape of a CB's tiles: from the JIT's per-CB tables (chlkc_descriptors.h) when the kernel has them,
// else a 32x32 tile of four 16x16 faces.
inline TileGeom cb_tile_geom(uint32_t cb, bool pack_side) {
#if defined(EMU_CB_TILE_GEOMETRY)
    if (cb < 32) {
        return pack_side ? TileGeom{::pack_tile_num_faces[cb], ::pack_tile_face_r_dim[cb]}
                         : TileGeom{::unpack_tile_num_faces[cb], ::unpack_tile_face_r_dim[cb]};
    }
#endif
    (void)cb;
    (void)pack_side;
    return TileGeom{};
}

// Timing (docs/TIMING.md, section 3b): an op's *_init programs MOPs and address modifiers, a reconfig the format
// registers, on the compute lanes `lanes` (bit 0 unpack, 1 math, 2 pack): kComputeInitCycles / kReconfigCycles a lane.
enum : unsigned { kLaneUnpack = 1, kLaneMath = 2, kLanePack = 4 };
inline void timing_config(unsigned lanes, bool reconfig = false) {
    if (auto* tr = timing_risc()) tr->config(uint8_t(lanes), reconfig);
}

// Unpacker / packer format configuration (compute_kernel_hw_startup, reconfig_data_format*).
inline void configure_srca(uint32_t cb) {
    cstate().srca_cb = cb;
    cstate().srca_fmt = cb_data_format(cb);
}
inline void configure_srcb(uint32_t cb) {
    cstate().srcb_cb = cb;
    cstate().srcb_fmt = cb_data_format(cb);
}
inline void configure_pack(uint32_t cb) {
    cstate().pack_cb = cb;
    cstate().pack_fmt = cb_data_format(cb);
}


// Rounding applied by every write into DST.
inline float dst_round(float v) { return dst_fp32() ? v : round_to_bf16(v); }

// ---- protocol
inline void dst_math_acquire(const char* who) {
    ComputeState& s = cstate();
    if (s.math_section >= 0)
        fault("%s: DST already acquired by MATH (missing tile_regs_commit / release_dst before this acquire)", who);
    uint32_t held = static_cast<uint32_t>(s.num_committed) + (s.pack_section >= 0 ? 1 : 0);
    if (held >= dst_num_sections())
        fault("%s: every DST section is still owned by PACK (%u committed, pack %s) in %s mode: on silicon MATH "
              "would wait forever because PACK's tile_regs_wait/release come later in program order",
              who, s.num_committed, s.pack_section >= 0 ? "holding one" : "idle", dst_mode_name());
    int free_sec = 0;
    while (free_sec == s.pack_section || (s.num_committed > 0 && s.committed[0] == free_sec) ||
           (s.num_committed > 1 && s.committed[1] == free_sec))
        ++free_sec;
    s.math_section = free_sec;
    if (auto* tr = timing_risc()) tr->tile_regs_acquire();
}

inline void dst_math_commit(const char* who) {
    ComputeState& s = cstate();
    if (s.math_section < 0) fault("%s: tile_regs_commit without tile_regs_acquire", who);
    s.committed[s.num_committed++] = s.math_section;
    s.math_section = -1;
    if (auto* tr = timing_risc()) tr->tile_regs_commit();
}

inline void dst_pack_wait(const char* who) {
    ComputeState& s = cstate();
    if (s.pack_section >= 0) fault("%s: tile_regs_wait while PACK still holds a section (missing tile_regs_release)", who);
    if (s.num_committed == 0)
        fault("%s: tile_regs_wait with no committed DST section (missing tile_regs_commit): PACK would wait forever",
              who);
    s.pack_section = s.committed[0];
    s.committed[0] = s.committed[1];
    s.committed[1] = -1;
    --s.num_committed;
    if (auto* tr = timing_risc()) tr->tile_regs_wait();
}

inline void dst_pack_release(const char* who) {
    ComputeState& s = cstate();
    if (s.pack_section < 0) fault("%s: tile_regs_release without tile_regs_wait", who);
    s.sections[s.pack_section].clear();
    s.pack_section = -1;
    if (auto* tr = timing_risc()) tr->tile_regs_release();
}

inline void dst_check_index(uint32_t idx, const char* who) {
    if (idx >= dst_capacity())
        fault("%s: DST index %u out of range: %s holds %u tiles per section", who, idx, dst_mode_name(),
              dst_capacity());
}

// The section MATH/SFPU operations write (requires an acquired, uncommitted section).
inline DstSection& dst_for_math(uint32_t idx, const char* who) {
    ComputeState& s = cstate();
    if (s.math_section < 0) {
        if (s.num_committed > 0 || s.pack_section >= 0)
            fault("%s: math on DST after tile_regs_commit (DST now belongs to PACK); acquire a new section first", who);
        fault("%s: math on DST before tile_regs_acquire", who);
    }
    dst_check_index(idx, who);
    return s.sections[s.math_section];
}

// The section PACK reads (requires tile_regs_wait, or the legacy acquire_dst).
inline DstSection& dst_for_pack(uint32_t idx, const char* who) {
    ComputeState& s = cstate();
    int sec = s.pack_section;
    if (sec < 0 && s.legacy_dst) sec = s.math_section;
    if (sec < 0) {
        if (s.math_section >= 0)
            fault("%s: pack from DST before tile_regs_commit + tile_regs_wait (MATH still owns the section)", who);
        fault("%s: pack from DST without an acquired section (missing tile_regs_wait)", who);
    }
    dst_check_index(idx, who);
    return s.sections[sec];
}

// Value of DST datum i of tile t as an accumulating FPU op reads it (undefined -> 0).
inline float dst_acc_read(const DstSection& d, uint32_t t, uint32_t i) { return d.defined[t] ? d.tile[t][i] : 0.0f; }

inline void dst_write_tile(DstSection& d, uint32_t t, const float* v) {
    for (uint32_t i = 0; i < kTileHW; ++i) d.tile[t][i] = dst_round(v[i]);
    d.defined[t] = true;
}

}  // namespace emu
