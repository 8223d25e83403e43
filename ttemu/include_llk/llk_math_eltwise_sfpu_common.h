// Emulator's tt-llk llk_math_eltwise_sfpu_common.h: the SFPU op frame of the math thread. start points the SFPU's
// Dst addressing at a DST tile of the math section (set_dst_write_addr) and enables conditional execution with every
// lane set; apply_vector_mode runs the kernel function once per face as tt-llk does (RC: 4 faces, R: faces 0-1,
// C: faces 0 and 2, anything else: once), advancing the Dst counter 16 rows per face (two inc_dst_addr<8>).
#pragma once

#include <cstdint>
#include <utility>

#include "ckernel.h"
#include "llk_assert.h"
#include "llk_sfpu_types.h"

inline void _llk_math_eltwise_sfpu_start_(const std::uint32_t dst_index) {
    ckernel::math::set_dst_write_addr(dst_index);
    ckernel::math::set_addr_mod_base();
}

inline void _llk_math_eltwise_sfpu_done_() {
    ckernel::math::clear_dst_reg_addr();
    ckernel::math::clear_addr_mod_base();
    emu::sfpu::done();
}

inline void _llk_math_eltwise_sfpu_inc_dst_face_addr_() {
    ckernel::math::inc_dst_addr<8>();
    ckernel::math::inc_dst_addr<8>();
}

inline void _llk_math_eltwise_sfpu_uninit_() {}

template <typename Callable, typename... Args>
inline void _llk_math_eltwise_sfpu_apply_vector_mode_(Callable&& sfpu_func, VectorMode vector_mode, Args&&... args) {
    if (vector_mode == VectorMode::RC) {
        for (int face = 0; face < 4; face++) {
            sfpu_func(args...);
            _llk_math_eltwise_sfpu_inc_dst_face_addr_();
        }
    } else if (vector_mode == VectorMode::R) {
        for (int face = 0; face < 2; face++) {
            sfpu_func(args...);
            _llk_math_eltwise_sfpu_inc_dst_face_addr_();
        }
        _llk_math_eltwise_sfpu_inc_dst_face_addr_();
        _llk_math_eltwise_sfpu_inc_dst_face_addr_();
    } else if (vector_mode == VectorMode::C) {
        for (int face = 0; face < 2; face++) {
            sfpu_func(args...);
            _llk_math_eltwise_sfpu_inc_dst_face_addr_();
            _llk_math_eltwise_sfpu_inc_dst_face_addr_();
        }
    } else {
        std::forward<Callable>(sfpu_func)(std::forward<Args>(args)...);
    }
}
