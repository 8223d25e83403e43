// Emulator's tt-llk llk_math_eltwise_ternary_sfpu_params.h: a ternary SFPU kernel addresses its DST tiles itself;
// the frame starts at DST tile 0, as tt-llk's does.
#pragma once

#include <cstdint>
#include <utility>

#include "emu/timing_hooks.h"
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_ternary_sfpu.h"

template <typename Callable, typename... Args>
inline void _llk_math_eltwise_ternary_sfpu_params_(Callable&& sfpu_func, std::uint32_t dst_index_in0,
                                                    std::uint32_t dst_index_in1, std::uint32_t dst_index_in2,
                                                    std::uint32_t dst_index_out, VectorMode vector_mode = VectorMode::RC,
                                                    Args&&... args) {
    _llk_math_eltwise_sfpu_start_(0);
    if (!emu::timing_only())  // timing-only: the SFPU function's arithmetic is skipped, its cost is not
        _llk_math_eltwise_sfpu_apply_vector_mode_(std::forward<Callable>(sfpu_func), vector_mode, dst_index_in0,
                                                  dst_index_in1, dst_index_in2, dst_index_out, std::forward<Args>(args)...);
    _llk_math_eltwise_sfpu_done_();
    emu::timing_sfpu(sfpu_func, int(vector_mode), true);
}
