// What the kernel build gave this kernel, written to word k of page 0 of a uint32 DRAM tensor:
//   0, 1: named compile-time args "alpha" and "beta.gamma"; 2: positional compile-time arg 0
//   3: COMPILE_FOR_BRISC, 4: COMPILE_FOR_NCRISC, 5: PROCESSOR_INDEX, 6: NOC_INDEX, 7: Noc().get_noc_id()
//   then, for each CB index in compile-time args [1 .. 1 + n): get_tile_size, get_tile_hw, get_tile_num_faces,
//   get_dataformat, and the DataflowBuffer getters face_r_dim, partial_face, narrow_tile, tile_r_dim, tile_c_dim,
//   CircularBuffer::get_tile_size (10 words per CB)
//   and last: MUL_WITH_TILE_SIZE<512>(Float16_b, 3), MUL_WITH_TILE_SIZE<512>(Bfp8_b, 3), <256>(Bfp4_b, 5),
//   MUL_WITH_TILE_SIZE<1024>(UInt8, 2).
// compile-time args: [0] a positional value, [1] number of CBs n, [2 .. 2 + n) CB indices, then the destination's
// TensorAccessorArgs. The staging area is CB index compile-time arg [2]'s ring.
// runtime args: destination address.
#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/dataflow/dataflow_buffer.h"
#include "api/core_local_mem.h"
#include "api/tensor/noc_traits.h"

template <uint32_t I>
void put_cb(CoreLocalMem<uint32_t>& out, uint32_t& k) {
    constexpr uint32_t cb = get_compile_time_arg_val(2 + I);
    constexpr uint32_t size = get_tile_size(cb);  // constexpr: the JIT table
    DataflowBuffer dfb(cb);
    out[k++] = size;
    out[k++] = get_tile_hw(cb);
    out[k++] = get_tile_num_faces(cb);
    out[k++] = static_cast<uint32_t>(get_dataformat(cb));
    out[k++] = dfb.get_face_r_dim();
    out[k++] = dfb.get_partial_face();
    out[k++] = dfb.get_narrow_tile();
    out[k++] = dfb.get_tile_r_dim();
    out[k++] = dfb.get_tile_c_dim();
    out[k++] = CircularBuffer(cb).get_tile_size();
}

template <uint32_t... Is>
void put_cbs(CoreLocalMem<uint32_t>& out, uint32_t& k, std::integer_sequence<uint32_t, Is...>) {
    (put_cb<Is>(out, k), ...);
}

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    constexpr uint32_t n_cbs = get_compile_time_arg_val(1);
    constexpr uint32_t stage_cb = get_compile_time_arg_val(2);
    constexpr auto dst_args = TensorAccessorArgs<2 + n_cbs>();

    CircularBuffer cb(stage_cb);
    cb.reserve_back(1);
    CoreLocalMem<uint32_t> out(cb.get_write_ptr());
    uint32_t k = 0;
    constexpr uint32_t alpha = get_named_compile_time_arg_val("alpha");  // constexpr: as the wheel's docs ask
    constexpr uint32_t beta = get_named_compile_time_arg_val("beta.gamma");
    out[k++] = alpha;
    out[k++] = beta;
    out[k++] = get_compile_time_arg_val(0);
#ifdef COMPILE_FOR_BRISC
    out[k++] = 1;
#else
    out[k++] = 0;
#endif
#ifdef COMPILE_FOR_NCRISC
    out[k++] = 1;
#else
    out[k++] = 0;
#endif
    out[k++] = PROCESSOR_INDEX;
    out[k++] = NOC_INDEX;
    Noc noc;
    out[k++] = noc.get_noc_id();
    put_cbs(out, k, std::make_integer_sequence<uint32_t, n_cbs>());
    out[k++] = MUL_WITH_TILE_SIZE<512>(uint32_t(DataFormat::Float16_b), 3);
    out[k++] = MUL_WITH_TILE_SIZE<512>(uint32_t(DataFormat::Bfp8_b), 3);
    out[k++] = MUL_WITH_TILE_SIZE<256>(uint32_t(DataFormat::Bfp4_b), 5);
    out[k++] = MUL_WITH_TILE_SIZE<1024>(uint32_t(DataFormat::UInt8), 2);

    const auto dst = TensorAccessor(dst_args, dst_addr, 4096);
    noc.async_write(use<CircularBuffer::AddrSelector::WRITE_PTR>(cb), dst, k * 4, {}, {.page_id = 0});
    noc.async_write_barrier();
}
