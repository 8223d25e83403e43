// Host SFPI checks: one tile (float32 CB -> fp32 DST) through an SFPI function run by the LLK SFPU frame, packed to a
// float32 CB. Compile-time arg 0 selects the function:
//   0: v_if (x < 0) x = -2x; v_elseif (x < 1) x = x + 10; v_else x = 0; v_endif   (lane predication)
//   1: a * a - 1 with a = 1 + 2^-12                                              (one fused SFPMAD)
//   2: convert<vFloat16b>(1 + 2^-8, Nearest)                                     (SFPSTOCHRND ties away)
//   3: setexp(x, 127) + int32_to_float(exexp(x))                                 (field manipulation)
// CBs: in = 0, out = 16.
#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/tile_move_copy.h"
#include "llk_math_eltwise_unary_sfpu_params.h"
#include "sfpi.h"

template <int OP>
void sfpi_body() {
    for (int d = 0; d < 8; d++) {
        sfpi::vFloat x = sfpi::dst_reg[0];
        if constexpr (OP == 0) {
            v_if (x < 0.0f) { x = -2.0f * x; }
            v_elseif (x < 1.0f) { x = x + 10.0f; }
            v_else { x = 0.0f; }
            v_endif;
        } else if constexpr (OP == 1) {
            sfpi::vFloat a = 1.000244140625f;
            x = a * a - 1.0f;
        } else if constexpr (OP == 2) {
            x = sfpi::convert<sfpi::vFloat16b>(sfpi::vFloat(1.00390625f), sfpi::RoundMode::Nearest);
        } else {
            x = sfpi::setexp(x, 127) + sfpi::int32_to_float(sfpi::exexp(x), sfpi::RoundMode::Nearest);
        }
        sfpi::dst_reg[0] = x;
        sfpi::dst_reg++;
    }
}

void kernel_main() {
    constexpr int op = get_compile_time_arg_val(0);
    constexpr uint32_t cb_in = 0, cb_out = 16;
    compute_kernel_hw_startup(cb_in, cb_out);
    copy_init(cb_in);
    cb_wait_front(cb_in, 1);
    tile_regs_acquire();
    copy_tile(cb_in, 0, 0);
    _llk_math_eltwise_unary_sfpu_params_(sfpi_body<op>, 0, VectorMode::RC);
    tile_regs_commit();
    cb_reserve_back(cb_out, 1);
    tile_regs_wait();
    pack_tile(0, cb_out);
    tile_regs_release();
    cb_push_back(cb_out, 1);
    cb_pop_front(cb_in, 1);
}
