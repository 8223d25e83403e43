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
//
// The non-template functions declared here (and in compute_unpack.h, compute_fpu.h, compute_pack.h, compute_tilize.h,
// timing_hooks.h) are defined once in csrc/compute.cpp, built into the runtime executable, not inline in every
// kernel: a compute kernel's compile generates only its own code and the templates it instantiates. cstate() is one
// per thread there, and the runtime runs each core's compute kernel on its own thread: one state per core.
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
        clear_defined();
    }
    void clear_defined() {
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

ComputeState& cstate();

void compute_state_reset();

inline bool dst_fp32() { return compute_config().fp32_dest_acc_en; }
inline uint32_t dst_num_sections() { return compute_config().dst_full_sync_en ? 1 : 2; }
inline uint32_t dst_capacity() {
    uint32_t full = compute_config().dst_full_sync_en ? 16 : 8;
    return dst_fp32() ? full / 2 : full;
}
const char* dst_mode_name();

// The tile shape of a CB's tiles: from the JIT's per-CB tables (chlkc_descriptors.h) when the kernel has them
// (emu::cb_tile_shapes), else a 32x32 tile of four 16x16 faces.
TileGeom cb_tile_geom(uint32_t cb, bool pack_side);

}  // namespace emu

#if defined(EMU_CB_TILE_GEOMETRY)
// The kernel's per-CB tile tables (chlkc_descriptors.h, ahead of this header) for the runtime, which looks this
// function up in each compute kernel library it loads and answers emu::cb_tile_shapes() from it. Kept (used) and
// visible: nothing in the kernel calls it.
extern "C" __attribute__((used, visibility("default"))) inline emu::CbTileShapes emu_cb_tile_shapes() {
    return {::unpack_tile_num_faces, ::unpack_tile_face_r_dim, ::pack_tile_num_faces, ::pack_tile_face_r_dim};
}
#endif

namespace emu {

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
void dst_math_acquire(const char* who);

void dst_math_commit(const char* who);

void dst_pack_wait(const char* who);

void dst_pack_release(const char* who);

void dst_check_index(uint32_t idx, const char* who);

// The section MATH/SFPU operations write (requires an acquired, uncommitted section).
DstSection& dst_for_math(uint32_t idx, const char* who);

// The section PACK reads (requires tile_regs_wait, or the legacy acquire_dst).
DstSection& dst_for_pack(uint32_t idx, const char* who);

// Value of DST datum i of tile t as an accumulating FPU op reads it (undefined -> 0).
inline float dst_acc_read(const DstSection& d, uint32_t t, uint32_t i) { return d.defined[t] ? d.tile[t][i] : 0.0f; }

void dst_write_tile(DstSection& d, uint32_t t, const float* v);

}  // namespace emu
