// Emulator's ckernel.h: the parts of tt-llk's ckernel.h / ckernel_defs.h / ckernel_addrmod.h / cmath_common.h
// that the wheel's SFPU kernels and the compute API name, over the emulator's compute state. Register and
// counter programming that only schedules hardware (STALLWAIT, semaphores, config writes) has no effect here;
// ADDR_MOD dest increments and the Dst counter, which decide what an SFPU instruction reads, are modelled.
#pragma once

#include <cstdint>

#include "api/compute/common_globals.h"
#include "llk_defs.h"
#include "ckernel_ops.h"
#include "emu/compute_sfpu_isa.h"
#ifdef ARCH_BLACKHOLE
#include "lltt.h"
#endif

#ifndef sfpi_inline
#define sfpi_inline inline __attribute__((always_inline))
#endif
#ifndef ALWI
#define ALWI inline __attribute__((always_inline))
#endif

typedef unsigned int uint;

namespace ckernel {

constexpr uint32_t ADDR_MOD_0 = 0, ADDR_MOD_1 = 1, ADDR_MOD_2 = 2, ADDR_MOD_3 = 3, ADDR_MOD_4 = 4, ADDR_MOD_5 = 5,
                   ADDR_MOD_6 = 6, ADDR_MOD_7 = 7;

// ckernel_addrmod.h: an address modifier; the emulator keeps the Dst increment (what SFPU loads / stores use).
struct addr_mod_t {
    struct addr_mod_src_t {
        uint8_t incr = 0;
        uint8_t clr = 0;
        uint8_t cr = 0;
        uint8_t c_to_cr = 0;
    };
    struct addr_mod_dest_t {
        int16_t incr = 0;
        uint8_t clr = 0;
        uint8_t cr = 0;
        uint8_t c_to_cr = 0;
    };
    struct addr_mod_fidelity_t {
        uint8_t incr = 0;
        uint8_t clr = 0;
    };
    struct addr_mod_bias_t {
        uint8_t incr = 0;
        uint8_t clr = 0;
    };
    addr_mod_src_t srca;
    addr_mod_src_t srcb;
    addr_mod_dest_t dest;
    addr_mod_fidelity_t fidelity;
    addr_mod_bias_t bias;
    void set(uint32_t mod_index) const {
        emu::sfpu::m().addr_mod_dest[mod_index & 7] = static_cast<uint32_t>(static_cast<int32_t>(dest.incr));
    }
};

enum class InstrModLoadStore : uint8_t {
    DEFAULT = 0, FP16A = 1, FP16B = 2, FP32 = 3, INT32 = 4, INT8 = 5, LO16 = 6, HI16 = 7, INT32_2S_COMP = 12,
    INT8_2S_COMP = 13, LO16_ONLY = 14, HI16_ONLY = 15,
};

// tt-llk llk_defs.h GetSfpLoadStoreInstrMod: the SFPLOAD / SFPSTORE mode that reads a DEST datum held for a CB
// of this format (a 32-bit DEST holds Float16 / Float16_b as FP32 and UInt16 as INT32; block floats use the default).
template <DataFormat format, bool is_fp32_dest_acc_en = false>
constexpr InstrModLoadStore GetSfpLoadStoreInstrMod() {
    switch (format) {
        case DataFormat::Float32:
        case DataFormat::Tf32: return InstrModLoadStore::FP32;
        case DataFormat::Float16: return is_fp32_dest_acc_en ? InstrModLoadStore::FP32 : InstrModLoadStore::FP16A;
        case DataFormat::Float16_b: return is_fp32_dest_acc_en ? InstrModLoadStore::FP32 : InstrModLoadStore::FP16B;
        case DataFormat::Int8:
        case DataFormat::UInt8: return InstrModLoadStore::INT8;
        case DataFormat::UInt16: return is_fp32_dest_acc_en ? InstrModLoadStore::INT32 : InstrModLoadStore::LO16;
        case DataFormat::Int32:
        case DataFormat::UInt32: return InstrModLoadStore::INT32;
        default: return InstrModLoadStore::DEFAULT;
    }
}

namespace p_sfpu {
constexpr uint32_t LREG0 = 0, LREG1 = 1, LREG2 = 2, LREG3 = 3, LREG4 = 4, LREG5 = 5, LREG6 = 6, LREG7 = 7,
                   LREG8 = 8, LREG9 = 9, LREG10 = 10, LREG11 = 11, LREG12 = 12, LREG13 = 13, LREG14 = 14,
                   LREG15 = 15, LREG16 = 16;
constexpr uint32_t LCONST_0_8373 = 8, LCONST_0 = 9, LCONST_1 = 10, LCONST_neg1 = 11, LTILEID = 15;
constexpr uint32_t kCONST_0 = 0x0000, kCONST_Neg_1 = 0xBF80;
}  // namespace p_sfpu

namespace p_setrwc {
constexpr uint32_t CLR_NONE = 0, CLR_A = 1, CLR_B = 2, CLR_AB = 3;
constexpr uint32_t CR_A = 1, CR_B = 2, CR_AB = 3, CR_D = 4, CR_AD = 5, CR_BD = 6, CR_ABD = 7;
constexpr uint32_t SET_A = 1, SET_B = 2, SET_AB = 3, SET_D = 4, SET_AD = 5, SET_BD = 6, SET_ABD = 7, SET_F = 8,
                   SET_A_F = 9, SET_B_F = 10, SET_AB_F = 11, SET_D_F = 12, SET_AD_F = 13, SET_BD_F = 14,
                   SET_ABD_F = 15;
}  // namespace p_setrwc

namespace p_stall {
constexpr uint32_t STALL_SFPU = 0, STALL_MATH = 0, STALL_CFG = 0, STALL_TDMA = 0, STALL_SYNC = 0, STALL_PACK = 0,
                   STALL_UNPACK = 0, STALL_THCON = 0, NONE = 0, MATH = 0, WAIT_SFPU = 0, SRCA_VLD = 0, SRCB_VLD = 0,
                   SRCA_CLR = 0, SRCB_CLR = 0, PACK = 0, PACK0 = 0, TRISC_CFG = 0, UNPACK = 0;
}  // namespace p_stall

enum class DstTileShape : uint8_t { Tile32x32 = 0, Tile32x16 = 1, Tile16x16 = 2 };
enum class UnpackDestination : uint8_t { SrcRegs = 0, DestReg = 1 };

// tt-llk ckernel_defs.h: tile constants and the enums SFPU kernels take as template arguments (same values).
constexpr uint32_t FACE_HEIGHT = 16, FACE_WIDTH = 16, TILE_HEIGHT = 32, TILE_WIDTH = 32;
constexpr uint32_t FACE_R_DIM = FACE_HEIGHT, FACE_C_DIM = FACE_WIDTH, TILE_R_DIM = TILE_HEIGHT, TILE_C_DIM = TILE_WIDTH;
constexpr uint32_t TILE_NUM_FACES = 4, FACE_SIZE = 256;
enum class DataLayout { TILE = 0, ROW_MAJOR = 1 };
enum SortDir : bool { ArgMax = false, ArgMin = true };
enum class ActivationType { Celu = 0, Elu = 1, Gelu = 2, Hardtanh = 3, Hardsigmoid = 4 };
enum class RoundingMode : uint8_t { None = 0, Trunc = 1, Floor = 2 };
enum class DstRoundingMode : uint8_t { Default = 0, NearestEven = 1 };
enum class BinaryOp : uint8_t {
    ADD = 0, SUB = 1, MUL = 2, DIV = 3, RSUB = 4, POW = 5, XLOGY = 6, RSHFT = 7, LSHFT = 8, LOGICAL_RSHFT = 9,
    ADD_TOP_ROW = 10, LT = 11, GT = 12, LE = 13, GE = 14, EQ = 15, NE = 16, MAX = 17, MIN = 18, FMOD = 19,
    REMAINDER = 20, BITWISE_AND = 21, BITWISE_OR = 22, BITWISE_XOR = 23, DIV_INT32 = 24, DIV_INT32_FLOOR = 25,
    GCD = 26, LCM = 27, RSUB_INT32 = 28, MASK = 29, ATAN2 = 30, MUL_INT32 = 31, ISCLOSE = 32, LOGSIGMOID = 33,
    EQ_INT = 34, NE_INT = 35, MAX_INT32 = 36, MIN_INT32 = 37, MAX_UINT32 = 38, MIN_UINT32 = 39,
    REMAINDER_INT32 = 40, REMAINDER_UINT32 = 41, FMOD_INT32 = 42, NEXTAFTER = 43, NEXTAFTER_BF16 = 44,
    LOGADDEXP = 45, LOGADDEXP2 = 46, QUANT = 47, REQUANT = 48, DEQUANT = 49, COPY_DEST = 50,
};

// Tiles per DST half (or the whole DST in full-sync), as tt-llk's get_dest_max_tiles.
template <DstSync sync, DstTileShape shape = DstTileShape::Tile32x32>
inline uint32_t get_dest_max_tiles_rt() {
    (void)sync;
    return emu::dst_capacity();
}
template <DstSync sync, bool is_fp32, DstTileShape shape = DstTileShape::Tile32x32>
constexpr uint32_t get_dest_max_tiles() {
    return (sync == DstSync::SyncFull ? 16u : 8u) / (is_fp32 ? 2u : 1u);
}

namespace math {
inline void set_addr_mod_base() { emu::sfpu::m().addr_mod_base = true; }
inline void clear_addr_mod_base() { emu::sfpu::m().addr_mod_base = false; }
inline void reset_counters(uint32_t mask) {
    if (mask & p_setrwc::SET_D) emu::sfpu::set_dst_rwc(0);
}
template <DstTileShape shape = DstTileShape::Tile32x32, UnpackDestination dest = UnpackDestination::SrcRegs>
inline void set_dst_write_addr(uint32_t tile_index) {
    emu::sfpu::start_tile(tile_index, "set_dst_write_addr");
}
inline void clear_dst_reg_addr() { emu::sfpu::set_dst_rwc(0); }
// TTI_SETRWC(CLR_NONE, CR_D, rows, 0, 0, SET_D): the next position counts from the carriage-return register.
template <uint32_t rows>
inline void inc_dst_addr() {
    emu::sfpu::set_dst_rwc(rows, true);
}
}  // namespace math

constexpr bool is_uint32_format(DataFormat f) { return f == DataFormat::UInt32; }

// tt-llk ckernel.h: the SFPLOAD / SFPSTORE modes integer SFPU kernels accept.
inline constexpr bool is_valid_instruction_mode(InstrModLoadStore mode) {
    return mode == InstrModLoadStore::INT32_2S_COMP || mode == InstrModLoadStore::INT32 ||
           mode == InstrModLoadStore::LO16;
}

inline void enable_fp32_dest_acc() {}
inline void disable_fp32_dest_acc() {}

#ifdef ARCH_BLACKHOLE
// Blackhole's ckernel.h: load_replay_buf records the instructions `callable` issues into the replay buffer (REPLAY
// in load mode, executing them too with Exec). Instruction gathering (ENABLE_GATHERING) only schedules the issue.
enum ExecBool : bool { NoExec, Exec };
template <ExecBool E = NoExec, typename Callable, typename... Args>
inline void load_replay_buf(uint32_t start, uint32_t len, Callable&& callable, Args&&... args) {
    lltt::record<lltt::ExecBool(E)>(start, len);
    callable(static_cast<Args&&>(args)...);
}
#endif

}  // namespace ckernel

using namespace ckernel;

// tt-llk's ckernel.h brings the SFPI library into every LLK header.
#include "sfpi.h"
// _init_sfpu_config_reg and the constant-register loaders (the wheel's: SFPCONFIG / SFPLOADI sequences).
#include "sfpu/ckernel_sfpu_load_config.h"
