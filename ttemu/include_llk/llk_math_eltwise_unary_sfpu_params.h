// Emulator's tt-llk llk_math_eltwise_unary_sfpu_params.h: run an SFPU kernel function over one DST tile.
#pragma once

#include <cstdint>
#include <utility>

#include "emu/timing_hooks.h"
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu.h"

template <typename Callable, typename... Args>
inline void _llk_math_eltwise_unary_sfpu_params_(Callable&& sfpu_func, std::uint32_t dst_index,
                                                  VectorMode vector_mode = VectorMode::RC, Args&&... args) {
    _llk_math_eltwise_sfpu_start_(dst_index);
    if (!emu::timing_only())  // timing-only: the SFPU function's arithmetic is skipped, its cost is not
        _llk_math_eltwise_sfpu_apply_vector_mode_(std::forward<Callable>(sfpu_func), vector_mode,
                                                  std::forward<Args>(args)...);
    _llk_math_eltwise_sfpu_done_();
    emu::timing_sfpu(sfpu_func, int(vector_mode), false);
}
