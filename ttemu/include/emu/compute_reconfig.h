// When a two-argument data-format reconfig reprograms the unpacker, the math thread or the packer, decided as
// tt-metal's LLK API decides it (the wheel's hw/ckernels/{wormhole_b0,blackhole}/metal/llk_api/: the two chips'
// llk_unpack_common_api.h, llk_math_common_api.h and llk_pack_common_api.h agree on every rule here).
//
// The (old, new) forms compare the two operands' descriptors, never the hardware's current state: `old` is the
// caller's claim about what is programmed (api/compute/reconfig_data_format.h: "A stale claim can skip a required
// reconfiguration"). A kernel passing a wrong `old` whose descriptors match `new` gets no reprogramming, so the
// unpacker / packer keeps the format it had; the emulator then reports the mismatch at the next unpack or pack of
// `new` (compute.cpp check_unpack_format, pack_values) where silicon would convert with the stale format.
//
// The descriptors are the JIT's per-CB tables of chlkc_descriptors.h (ttemu/jit_env.py), which a compute kernel's
// build force-includes ahead of this header; a kernel built without them (the fake runtime of ttemu/tests) compares
// the CBs' runtime formats and the 32x32 tile geometry every CB then has, which gives the same answers: the JIT
// derives a CB's unpack destination format from its source format alone (jit_env._unpack_dst).
#pragma once

#include <cstdint>

#include "emu/compute_state.h"

namespace emu {

namespace reconfig_detail {

inline uint32_t checked(uint32_t cb, const char* who) {
    if (cb >= 32) fault("%s: operand %u out of range (0..31)", who, cb);
    return cb;
}

#if defined(EMU_CB_TILE_GEOMETRY)
inline uint32_t unpack_src(uint32_t cb) { return ::unpack_src_format[cb]; }
inline uint32_t unpack_dst(uint32_t cb) { return ::unpack_dst_format[cb]; }
inline uint32_t pack_dst(uint32_t cb) { return ::pack_dst_format[cb]; }
#else
inline uint32_t unpack_src(uint32_t cb) { return uint32_t(cb_data_format(cb)); }
inline uint32_t unpack_dst(uint32_t cb) { return uint32_t(cb_data_format(cb)); }
inline uint32_t pack_dst(uint32_t cb) { return uint32_t(cb_data_format(cb)); }
#endif

}  // namespace reconfig_detail

// llk_unpack_reconfig_data_format_src{a,b}(old, new) with dim_stride_target IGNORE: reprogram when the operands'
// face geometry (face_r_dim, num_faces) differs or should_reconfigure_cbs holds (their unpack source or destination
// formats differ). Any other dim_stride_target always reprograms; the callers handle that.
inline bool unpack_reconfig_needed(uint32_t old_cb, uint32_t new_cb) {
    using namespace reconfig_detail;
    checked(old_cb, "reconfig_data_format (old operand)");
    checked(new_cb, "reconfig_data_format (new operand)");
    TileGeom o = cb_tile_geom(old_cb, false), n = cb_tile_geom(new_cb, false);
    return o.face_r != n.face_r || o.num_faces != n.num_faces || unpack_src(old_cb) != unpack_src(new_cb) ||
           unpack_dst(old_cb) != unpack_dst(new_cb);
}

// llk_math_reconfig_data_format_src{a,b}(old, new): the math thread reprograms the ALU's source format when the
// operands' unpack destination formats differ.
inline bool math_reconfig_needed(uint32_t old_cb, uint32_t new_cb) {
    using namespace reconfig_detail;
    checked(old_cb, "reconfig_data_format (old operand)");
    checked(new_cb, "reconfig_data_format (new operand)");
    return unpack_dst(old_cb) != unpack_dst(new_cb);
}

// llk_pack_reconfig_data_format(old, new): reprogram when the operands' pack destination formats differ and neither
// is Invalid.
inline bool pack_reconfig_needed(uint32_t old_cb, uint32_t new_cb) {
    using namespace reconfig_detail;
    checked(old_cb, "pack_reconfig_data_format (old operand)");
    checked(new_cb, "pack_reconfig_data_format (new operand)");
    constexpr uint32_t invalid = uint32_t(DataFormat::Invalid);
    uint32_t o = pack_dst(old_cb), n = pack_dst(new_cb);
    return o != n && o != invalid && n != invalid;
}

// The unpacker / packer half of a two-argument reconfig: configure `new_cb` when it reprograms (always when
// `dim_stride`, a dim_stride_target other than IGNORE); true when it did. The comparison itself costs nothing in the
// timing model: a few loads and compares of constexpr tables, which fold away for compile-time operands
// (api/compute/reconfig_data_format.h: "For compile-time-known operands/descriptors, the comparison can fold away");
// the callers charge kReconfigCycles on each lane that reprograms.
inline bool reconfig_srca(uint32_t old_cb, uint32_t new_cb, bool dim_stride = false) {
    if (!dim_stride && !unpack_reconfig_needed(old_cb, new_cb)) return false;
    configure_srca(new_cb);
    return true;
}
inline bool reconfig_srcb(uint32_t old_cb, uint32_t new_cb, bool dim_stride = false) {
    if (!dim_stride && !unpack_reconfig_needed(old_cb, new_cb)) return false;
    configure_srcb(new_cb);
    return true;
}
inline bool reconfig_pack(uint32_t old_cb, uint32_t new_cb) {
    if (!pack_reconfig_needed(old_cb, new_cb)) return false;
    configure_pack(new_cb);
    return true;
}

}  // namespace emu
