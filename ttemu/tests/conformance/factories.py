"""ProgramDescriptors for the wheel's kernels, built as upstream's program factories build them (compile-time args,
defines, CB indices and sizes, work split and runtime args), for the emulator's conformance suite.

Each builder names the upstream factory it follows. Work is split with ``split_work`` (tt-metal's
``split_work_to_cores`` + ``grid_to_cores``). Kernel sources come from the installed wheel
(``ttemu.jit_env.kernel_source``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ttemu.jit_env import kernel_source

ELTWISE_BINARY = "ttnn/operations/eltwise/binary/device/kernels"
ELTWISE_UNARY = "ttnn/operations/eltwise/unary/device/kernels"


@dataclass(frozen=True)
class Span:
    core: tuple[int, int]
    units: int
    start: int


def split_work(grid: tuple[int, int], units: int, row_major: bool = True) -> list[Span]:
    """tt-metal split_work_to_cores(grid, units, row_major) with cores in grid_to_cores order: the first
    ``units % num_cores`` cores take one unit more; consecutive cores take consecutive units."""
    gx, gy = grid
    total = gx * gy
    num_cores = min(units, total)
    if num_cores == 0:
        return []
    base, extra = divmod(units, num_cores)
    spans, start = [], 0
    for i in range(num_cores):
        core = (i % gx, i // gx) if row_major else (i // gy, i % gy)
        n = base + (1 if i < extra else 0)
        spans.append(Span(core, n, start))
        start += n
    return spans


def core_range_set(ttnn, spans: list[Span]):
    return ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(*s.core), ttnn.CoreCoord(*s.core)) for s in spans])


def cb(ttnn, index: int, dtype, page_size: int, num_pages: int, cores):
    return ttnn.CBDescriptor(
        total_size=page_size * num_pages,
        core_ranges=cores,
        format_descriptors=[ttnn.CBFormatDescriptor(buffer_index=index, data_format=dtype, page_size=page_size)],
    )


def compute_config(ttnn, math_fidelity: str = "HiFi4", fp32_dest_acc_en: bool = False, math_approx_mode: bool = False):
    return ttnn.ComputeConfigDescriptor(
        math_fidelity=getattr(ttnn.MathFidelity, math_fidelity),
        fp32_dest_acc_en=fp32_dest_acc_en,
        math_approx_mode=math_approx_mode,
    )


def kernel(ttnn, source: str, cores, config, ct=(), rt=(), defines=()):
    return ttnn.KernelDescriptor(
        kernel_source=str(kernel_source(source)),
        core_ranges=cores,
        compile_time_args=list(ct),
        defines=list(defines),
        runtime_args=list(rt),
        config=config,
    )


# ---------------------------------------------------------------------------------------------- eltwise binary
BINARY_DEFINES = {  # BinaryDeviceOperation utils::get_defines for the FPU ops
    "add": [("ELTWISE_OP", "add_tiles"), ("ELTWISE_OP_TYPE", "EltwiseBinaryType::ELWADD")],
    "sub": [("ELTWISE_OP", "sub_tiles"), ("ELTWISE_OP_TYPE", "EltwiseBinaryType::ELWSUB")],
    "mul": [("ELTWISE_OP", "mul_tiles"), ("ELTWISE_OP_TYPE", "EltwiseBinaryType::ELWMUL")],
}


def eltwise_binary_program(ttnn, grid, a, b, out, op: str, math_fidelity="HiFi4", fp32_dest_acc_en=False):
    """BinaryDeviceOperation::ElementWiseMultiCore (element_wise_multi_core_program_factory.cpp with
    set_eltwise_binary_runtime_args) for interleaved tensors: tiles split row-major over the grid, CBs c_0 / c_1 / c_2
    of 2 tiles each, reader ct [block_or_width_sharded=0, TensorAccessorArgs(a), TensorAccessorArgs(b)] rt [a, b,
    num_tiles, start_id, block_height, block_width, num_shards_per_width], compute rt [block_cnt, block_size=1],
    writer ct [c_2, TensorAccessorArgs(out)] rt [out, num_tiles, start_id]."""
    ntiles = a.buffer_num_pages()
    spans = split_work(grid, ntiles, row_major=True)
    cores = core_range_set(ttnn, spans)
    cbs = [
        cb(ttnn, 0, a.dtype, a.buffer_page_size(), 2, cores),
        cb(ttnn, 1, b.dtype, b.buffer_page_size(), 2, cores),
        cb(ttnn, 2, out.dtype, out.buffer_page_size(), 2, cores),
    ]
    rd, cp, wr = [], [], []
    for s in spans:
        c = ttnn.CoreCoord(*s.core)
        rd.append((c, [a.buffer_address(), b.buffer_address(), s.units, s.start, 0, 0, 0]))
        cp.append((c, [s.units, 1]))
        wr.append((c, [out.buffer_address(), s.units, s.start]))
    kernels = [
        kernel(
            ttnn,
            f"{ELTWISE_BINARY}/dataflow/reader_binary_interleaved_start_id.cpp",
            cores,
            ttnn.ReaderConfigDescriptor(),
            ct=[0, *a.tensor_accessor_args(), *b.tensor_accessor_args()],
            rt=rd,
        ),
        kernel(
            ttnn,
            f"{ELTWISE_UNARY}/dataflow/writer_unary_interleaved_start_id.cpp",
            cores,
            ttnn.WriterConfigDescriptor(),
            ct=[2, *out.tensor_accessor_args()],
            rt=wr,
        ),
        kernel(
            ttnn,
            f"{ELTWISE_BINARY}/compute/eltwise_binary_kernel.cpp",
            cores,
            compute_config(ttnn, math_fidelity, fp32_dest_acc_en),
            rt=cp,
            defines=BINARY_DEFINES[op],
        ),
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)


# ---------------------------------------------------------------------------------------------- eltwise unary
UNARY_CHAINS = {  # unary_op_utils get_op_init_and_func / get_macro_definition for the ops the suite runs
    "exp": ("SFPU_OP_EXP_INCLUDE", "exp_tile_init<0u>();", "exp_tile<0u>(0);"),
    "exp_approx": ("SFPU_OP_EXP_INCLUDE", "exp_tile_init<1u>();", "exp_tile<1u>(0);"),
    "recip": ("SFPU_OP_RECIP_INCLUDE", "recip_tile_init();", "recip_tile(0);"),
}


def eltwise_unary_program(ttnn, grid, src, out, op: str, fp32_dest_acc_en=False):
    """UnaryProgramFactory for interleaved tiles: split_work_to_cores over the grid (column-major, its default),
    CBs c_0 / c_2 of 2 tiles, eltwise_sfpu.cpp with SFPU_OP_CHAIN_0 = init + func of the op (and its include macro),
    rt [num_tiles]; reader ct [TensorAccessorArgs(src)] rt [src, num_tiles, start_id]; writer ct [c_2,
    TensorAccessorArgs(out)] rt [out, num_tiles, start_id]."""
    spans = split_work(grid, src.buffer_num_pages(), row_major=False)
    cores = core_range_set(ttnn, spans)
    cbs = [
        cb(ttnn, 0, src.dtype, src.buffer_page_size(), 2, cores),
        cb(ttnn, 2, out.dtype, out.buffer_page_size(), 2, cores),
    ]
    include, init, func = UNARY_CHAINS[op]
    defines = [
        (include, "1"),
        ("SFPU_OP_CHAIN_0_INIT_0", init),
        ("SFPU_OP_CHAIN_0_FUNC_0", func),
        ("SFPU_OP_CHAIN_0", "SFPU_OP_CHAIN_0_INIT_0 SFPU_OP_CHAIN_0_FUNC_0"),
    ]
    rd, cp, wr = [], [], []
    for s in spans:
        c = ttnn.CoreCoord(*s.core)
        rd.append((c, [src.buffer_address(), s.units, s.start]))
        cp.append((c, [s.units]))
        wr.append((c, [out.buffer_address(), s.units, s.start]))
    kernels = [
        kernel(
            ttnn,
            f"{ELTWISE_UNARY}/dataflow/reader_unary_interleaved_start_id.cpp",
            cores,
            ttnn.ReaderConfigDescriptor(),
            ct=src.tensor_accessor_args(),
            rt=rd,
        ),
        kernel(
            ttnn,
            f"{ELTWISE_UNARY}/dataflow/writer_unary_interleaved_start_id.cpp",
            cores,
            ttnn.WriterConfigDescriptor(),
            ct=[2, *out.tensor_accessor_args()],
            rt=wr,
        ),
        kernel(
            ttnn,
            f"{ELTWISE_UNARY}/compute/eltwise_sfpu.cpp",
            cores,
            compute_config(ttnn, "HiFi4", fp32_dest_acc_en),
            rt=cp,
            defines=defines,
        ),
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)


# ---------------------------------------------------------------------------------------------- matmul (bmm)
MATMUL = "ttnn/operations/matmul/device/kernels"


def bmm_program(
    ttnn,
    grid,
    a,
    b,
    out,
    batch: int,
    Mt: int,
    Kt: int,
    Nt: int,
    bcast_b: bool,
    math_fidelity="HiFi4",
    fp32_dest_acc_en=False,
):
    """MatmulMultiCoreProgramFactory (matmul_op_multi_core_program_factory.cpp): output tiles split over the grid
    (split_work_to_cores, column-major), CBs c_0 / c_1 of 2 tiles and c_16 (out) of 2 tiles, named ct args
    cb_in0 / cb_in1 / cb_out; reader_bmm_8bank_output_tiles_partitioned.cpp ct [in0_last_ktile_w=0,
    in0_last_ktile_h=0, TensorAccessorArgs(a), TensorAccessorArgs(b)] rt [a, b, Mt, Kt, Nt, MtKt, KtNt, batch,
    bcast_B, output_tile_start_id, num_output_tiles, MtNt]; bmm.cpp ct [1, 1, Kt, num_output_tiles] (one compute
    kernel per core group, as the factory creates them); eltwise unary's interleaved writer ct [c_16,
    TensorAccessorArgs(out)] rt [out, num_output_tiles, start_id] (the wheel's matmul writer is a Metal 2.0
    kernel, which a ProgramDescriptor cannot bind)."""
    spans = split_work(grid, batch * Mt * Nt, row_major=False)
    cores = core_range_set(ttnn, spans)
    named = [("cb_in0", 0), ("cb_in1", 1), ("cb_out", 16)]
    cbs = [
        cb(ttnn, 0, a.dtype, a.buffer_page_size(), 2, cores),
        cb(ttnn, 1, b.dtype, b.buffer_page_size(), 2, cores),
        cb(ttnn, 16, out.dtype, out.buffer_page_size(), 2, cores),
    ]
    rd, wr = [], []
    for s in spans:
        c = ttnn.CoreCoord(*s.core)
        rd.append(
            (
                c,
                [
                    a.buffer_address(),
                    b.buffer_address(),
                    Mt,
                    Kt,
                    Nt,
                    Mt * Kt,
                    Kt * Nt,
                    batch,
                    int(bcast_b),
                    s.start,
                    s.units,
                    Mt * Nt,
                ],
            )
        )
        wr.append((c, [out.buffer_address(), s.units, s.start]))
    reader = kernel(
        ttnn,
        f"{MATMUL}/dataflow/reader_bmm_8bank_output_tiles_partitioned.cpp",
        cores,
        ttnn.ReaderConfigDescriptor(),
        ct=[0, 0, *a.tensor_accessor_args(), *b.tensor_accessor_args()],
        rt=rd,
    )
    reader.named_compile_time_args = named[:2]
    writer = kernel(
        ttnn,
        f"{ELTWISE_UNARY}/dataflow/writer_unary_interleaved_start_id.cpp",
        cores,
        ttnn.WriterConfigDescriptor(),
        ct=[16, *out.tensor_accessor_args()],
        rt=wr,
    )
    kernels = [reader, writer]
    for units in sorted({s.units for s in spans}, reverse=True):  # core_group_1, core_group_2
        group = core_range_set(ttnn, [s for s in spans if s.units == units])
        comp = kernel(
            ttnn,
            f"{MATMUL}/compute/bmm.cpp",
            group,
            compute_config(ttnn, math_fidelity, fp32_dest_acc_en),
            ct=[1, 1, Kt, units],
        )
        comp.named_compile_time_args = named
        kernels.append(comp)
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)


# ---------------------------------------------------------------------------------------------- reduce (row)
REDUCTION = "ttnn/operations/reduction/generic/device/kernels"
# reduce_op_utils::get_defines(math_op, ReduceOpDim::W) spells these "PoolType::SUM" / "ReduceDim::REDUCE_ROW"; the
# reader names them at global scope, where a data-movement build here has no ``using namespace ckernel`` (tt-metal's
# trisc.cc has one for compute only), so every kernel gets the qualified name of the same enumerator.
REDUCE_DEFINES = {
    "sum": {"REDUCE_OP": "ckernel::PoolType::SUM", "REDUCE_DIM": "ckernel::ReduceDim::REDUCE_ROW"},
    "max": {"REDUCE_OP": "ckernel::PoolType::MAX", "REDUCE_DIM": "ckernel::ReduceDim::REDUCE_ROW"},
}


def reduce_w_program(
    ttnn,
    grid,
    src,
    out,
    op: str,
    scaler: float,
    post_mul_scaler: float = 1.0,
    math_fidelity="HiFi4",
    fp32_dest_acc_en=False,
    tiles_per_batch: int = 4,
):
    """ReduceMultiCoreWProgramFactory (reduce_op_multi_core_w_program_factory.cpp, interleaved tiled path; a Metal 2.0
    ProgramSpec bound by ``metal2.py``): the NC*Ht tile rows split over the grid (split_work_to_cores, column-major);
    DFBs in (c_0; ``tiles_per_batch`` tiles double-buffered), scaler (c_2, one bf16 tile: Float16_b unless the input
    is Float32), out (c_3, 2 tiles); reader reader_unary_reduce_universal_start_id.cpp (ct scaler_bits,
    tiles_per_batch; rt num_tiles, start_id; tensor src) which fills the scaler tile with prepare_reduce_scaler;
    writer eltwise unary's writer_unary_interleaved_start_id_metal2.cpp (rt num_pages, start_id; tensor dst); compute
    reduce.cpp per core group (ct Ht, Wt, NC=1, post_mul_scaler_bits, enable_fp32_sfpu=0) with the reduce defines and
    REDUCE_POST_MUL when the user scalar of a MAX is applied after the reduction. The factory's reader batch size
    comes from helpers that are not in the indexed sources (reduce_reader_batch); ``tiles_per_batch`` stands for it."""
    import struct

    from .metal2 import Metal2Kernel, kernel_descriptor

    shape = list(src.shape)
    Ht, Wt = shape[-2] // 32, shape[-1] // 32
    nc = 1
    for d in shape[:-2]:
        nc *= d
    spans = split_work(grid, nc * Ht, row_major=False)
    cores = core_range_set(ttnn, spans)
    min_rows = min(s.units for s in spans)
    batch = max(1, min(tiles_per_batch, min_rows * Wt))
    scaler_fmt = ttnn.float32 if src.dtype == ttnn.float32 else ttnn.bfloat16
    scaler_page = 4096 if scaler_fmt == ttnn.float32 else 2048
    cbs = [
        cb(ttnn, 0, src.dtype, src.buffer_page_size(), 2 * batch, cores),
        cb(ttnn, 2, scaler_fmt, scaler_page, 1, cores),
        cb(ttnn, 3, out.dtype, out.buffer_page_size(), 2, cores),
    ]
    bits = lambda f: struct.unpack("<I", struct.pack("<f", f))[0]  # noqa: E731
    defines = dict(REDUCE_DEFINES[op])
    if post_mul_scaler != 1.0:
        defines["REDUCE_POST_MUL"] = "1"
    rt_rd, rt_wr = [], []
    for s in spans:
        c = ttnn.CoreCoord(*s.core)
        rt_rd.append((c, {"num_tiles": s.units * Wt, "start_id": s.start * Wt}))
        rt_wr.append((c, {"num_pages": s.units, "start_id": s.start}))
    kernels = [
        Metal2Kernel(
            f"{REDUCTION}/dataflow/reader_unary_reduce_universal_start_id.cpp",
            cores,
            ttnn.ReaderConfigDescriptor(),
            dfbs={"in0": 0, "scaler": 2},
            tensors={"src": src},
            ct_args={"scaler_bits": bits(scaler), "tiles_per_batch": batch},
            rta_names=("num_tiles", "start_id"),
            rt_args=rt_rd,
            defines=defines,
        ),
        Metal2Kernel(
            f"{ELTWISE_UNARY}/dataflow/writer_unary_interleaved_start_id_metal2.cpp",
            cores,
            ttnn.WriterConfigDescriptor(),
            dfbs={"out": 3},
            tensors={"dst": out},
            rta_names=("num_pages", "start_id"),
            rt_args=rt_wr,
            defines=defines,
        ),
    ]
    for units in sorted({s.units for s in spans}, reverse=True):  # core_group_1, core_group_2
        group = core_range_set(ttnn, [s for s in spans if s.units == units])
        kernels.append(
            Metal2Kernel(
                f"{REDUCTION}/compute/reduce.cpp",
                group,
                compute_config(ttnn, math_fidelity, fp32_dest_acc_en),
                dfbs={"in0": 0, "scaler": 2, "out": 3},
                ct_args={
                    "Ht": units,
                    "Wt": Wt,
                    "NC": 1,
                    "post_mul_scaler_bits": bits(post_mul_scaler),
                    "enable_fp32_sfpu": 0,
                },
                defines=defines,
            )
        )
    return ttnn.ProgramDescriptor(kernels=[kernel_descriptor(ttnn, k) for k in kernels], semaphores=[], cbs=cbs)


# ---------------------------------------------------------------------------------------------- softmax
SOFTMAX = "ttnn/operations/normalization/softmax/device/kernels/attention"


def _max_divisor(n: int, cap: int) -> int:
    """tt-metal find_max_divisor(n, cap): the largest divisor of n that is at most cap."""
    return next(d for d in range(min(n, cap), 0, -1) if n % d == 0)


def softmax_program(
    ttnn, grid, src, out, numeric_stable=True, fp32_dest_acc_en=False, math_approx_mode=False, math_fidelity="HiFi4"
):
    """SoftmaxProgramFactoryAttentionOptimized without a mask (softmax_program_factory_attention_optimized.cpp;
    its kernels are Metal 2.0, bound by ``metal2.py``): NC*Ht tile rows split row-major over the grid
    (split_work_to_cores(grid, rows, true)), block size find_max_divisor(Wt, 8) (4 with an fp32 DEST); DFBs in0
    (c_0; round_up(Wt, blk) tiles when numeric-stable, else 2*blk), out0 (c_11, 2*blk), recip_sum_exps (c_7, 1),
    max_scaler / sum_scaler (c_2 / c_3, one bf16 tile each, filled by the reader's
    calculate_and_prepare_reduce_scaler), exps (c_6, round_up(Wt, blk)), max (c_8, 1, numeric-stable), the writer's
    pad mask (c_5, 1); intermediates bf16, or float32 with an fp32 DEST. Reader reader_unary_interleaved_sm.cpp
    (rt blk, num_rows, tile_offset, Wt; ct in0_t; tensor src), compute softmax.cpp (rt num_rows, Ht, Wt, blk,
    start_ht; ct in0_t; defines NUMERIC_STABLE, EXP_APPROX, ENABLE_FP32_DEST_ACC), writer
    writer_unary_interleaved_start_id_blocked_sm.cpp (rt num_tiles, tile_offset, blk, Wt, mask_padded_data=0; ct
    num_datum_padded=0, tile_hw; tensor dst)."""
    from .metal2 import Metal2Kernel, kernel_descriptor

    shape = list(src.shape)
    Wt = shape[-1] // 32
    H = 1
    for d in shape[:-1]:
        H *= d
    rows = H // 32
    Ht = (shape[-2]) // 32
    blk = _max_divisor(Wt, 4 if fp32_dest_acc_en else 8)
    round_wt = -(-Wt // blk) * blk
    in0_t = round_wt if numeric_stable else 2 * blk
    spans = split_work(grid, rows, row_major=True)
    cores = core_range_set(ttnn, spans)
    im = ttnn.float32 if fp32_dest_acc_en else ttnn.bfloat16
    im_page = 4096 if fp32_dest_acc_en else 2048
    dfbs = {"in0": 0, "max_scaler": 2, "sum_scaler": 3, "mask_padded": 5, "exps": 6, "recip_sum_exps": 7, "out0": 11}
    cbs = [
        cb(ttnn, 0, src.dtype, src.buffer_page_size(), in0_t, cores),
        cb(ttnn, 2, ttnn.bfloat16, 2048, 1, cores),
        cb(ttnn, 3, ttnn.bfloat16, 2048, 1, cores),
        cb(ttnn, 5, ttnn.bfloat16, 2048, 1, cores),
        cb(ttnn, 6, im, im_page, round_wt, cores),
        cb(ttnn, 7, im, im_page, 1, cores),
        cb(ttnn, 11, out.dtype, out.buffer_page_size(), 2 * blk, cores),
    ]
    defines = {"EXP_APPROX": "1" if math_approx_mode else "0", "ENABLE_FP32_DEST_ACC": "1" if fp32_dest_acc_en else "0"}
    if numeric_stable:
        defines["NUMERIC_STABLE"] = "1"
        dfbs["max"] = 8
        cbs.append(cb(ttnn, 8, im, im_page, 1, cores))
    rd, cp, wr = [], [], []
    for s in spans:
        c = ttnn.CoreCoord(*s.core)
        rd.append((c, {"blk": blk, "num_rows": s.units, "tile_offset": s.start * Wt, "Wt": Wt}))
        cp.append((c, {"num_rows": s.units, "Ht": Ht, "Wt": Wt, "blk": blk, "start_ht": s.start % Ht}))
        wr.append(
            (c, {"num_tiles": s.units * Wt, "tile_offset": s.start * Wt, "blk": blk, "Wt": Wt, "mask_padded_data": 0})
        )
    kernels = [
        Metal2Kernel(
            f"{SOFTMAX}/dataflow/reader_unary_interleaved_sm.cpp",
            cores,
            ttnn.ReaderConfigDescriptor(),
            dfbs={k: dfbs[k] for k in ("in0", "max_scaler", "sum_scaler")},
            tensors={"src": src},
            ct_args={"in0_t": in0_t},
            rta_names=("blk", "num_rows", "tile_offset", "Wt"),
            rt_args=rd,
            defines={k: v for k, v in defines.items() if k == "NUMERIC_STABLE"},
        ),
        Metal2Kernel(
            f"{SOFTMAX}/dataflow/writer_unary_interleaved_start_id_blocked_sm.cpp",
            cores,
            ttnn.WriterConfigDescriptor(),
            dfbs={k: dfbs[k] for k in ("out0", "mask_padded")},
            tensors={"dst": out},
            ct_args={"num_datum_padded": 0, "tile_hw": 32 * 32},
            rta_names=("num_tiles", "tile_offset", "blk", "Wt", "mask_padded_data"),
            rt_args=wr,
        ),
        Metal2Kernel(
            f"{SOFTMAX}/compute/softmax.cpp",
            cores,
            compute_config(ttnn, math_fidelity, fp32_dest_acc_en, math_approx_mode),
            dfbs={k: v for k, v in dfbs.items() if k != "mask_padded"},
            ct_args={"in0_t": in0_t},
            rta_names=("num_rows", "Ht", "Wt", "blk", "start_ht"),
            rt_args=cp,
            defines=defines,
        ),
    ]
    return ttnn.ProgramDescriptor(kernels=[kernel_descriptor(ttnn, k) for k in kernels], semaphores=[], cbs=cbs)


# ------------------------------------------------------------------------------------------- bcast (row / col / scalar)
BCAST = "ttnn/operations/data_movement/bcast/device/kernels"
BCAST_DIMS = {"H": ("ROW", "Row"), "W": ("COL", "Col"), "HW": ("SCALAR", "Scalar")}
BCAST_MATH = {
    "add": ("add_tiles_bcast", "ELWADD", "Add"),
    "sub": ("sub_tiles_bcast", "ELWSUB", "Sub"),
    "mul": ("mul_tiles_bcast", "ELWMUL", "Mul"),
}


def bcast_defines(dim: str, op: str) -> dict[str, str]:
    """bcast_op_utils::get_defines (data_movement/bcast/bcast_types.cpp in the wheel)."""
    llk_dim, chain_dim = BCAST_DIMS[dim]
    tiles_op, llk_op, chain_op = BCAST_MATH[op]
    return {
        "BCAST_OP": tiles_op,
        "BCAST_LLKOP": f"EltwiseBinaryType::{llk_op}",
        "BCAST_DIM": f"BroadcastType::{llk_dim}",
        "CHAIN_BCAST_OP": f"compute_kernel_lib::BinaryFpuOp::{chain_op}",
        "CHAIN_BCAST_DIM": f"compute_kernel_lib::BroadcastDim::{chain_dim}",
    }


def bcast_program(ttnn, grid, a, b, out, dim: str, op: str, math_fidelity="HiFi4"):
    """The wheel's own bcast factories (data_movement/bcast/device/bcast_multi_core_{h,w,hw}_program_factory.cpp,
    Metal 2.0 ProgramSpecs bound by ``metal2.py``), interleaved: DFBs in0 / in1 / out (c_0 / c_1 / c_16, 2 tiles
    each); H (b's row 0 broadcast down H): Ht split column-major over the grid, reader
    reader_bcast_h_interleaved_input_rows_partitioned.cpp, compute bcast_h.cpp; W (b's column 0 across W): Wt split
    the same way, reader reader_bcast_w_interleaved_input_cols_partitioned.cpp, compute bcast_w.cpp; both with
    writer_unary_interleaved_input_cols_batched.cpp. HW (b[0][0] everywhere): all tiles split column-major, reader
    reader_bcast_hw_interleaved_partitioned.cpp (BCAST_SCALAR when b has one N*C), compute bcast_hw_metal2.cpp, writer
    eltwise unary's writer_unary_interleaved_start_id_metal2.cpp. The factories run at the default compute config
    (HiFi4); ``math_fidelity`` runs the same program at another fidelity."""
    from .metal2 import Metal2Kernel, kernel_descriptor

    sa, sb = list(a.shape), list(b.shape)
    N, C = (sa[-4] if len(sa) >= 4 else 1), (sa[-3] if len(sa) >= 3 else 1)
    NC, Ht, Wt = N * C, sa[-2] // 32, sa[-1] // 32
    bnc1 = int((sb[-4] if len(sb) >= 4 else 1) * (sb[-3] if len(sb) >= 3 else 1) == 1)
    units = {"H": Ht, "W": Wt, "HW": NC * Ht * Wt}[dim]
    spans = split_work(grid, units, row_major=False)
    cores = core_range_set(ttnn, spans)
    cbs = [
        cb(ttnn, 0, a.dtype, a.buffer_page_size(), 2, cores),
        cb(ttnn, 1, b.dtype, b.buffer_page_size(), 2, cores),
        cb(ttnn, 16, out.dtype, out.buffer_page_size(), 2, cores),
    ]
    defines = bcast_defines(dim, op)
    dfb_in, dfb_out = {"in0": 0, "in1": 1}, {"out": 16}
    ins = {"src0": a, "src1": b}
    cfg = compute_config(ttnn, math_fidelity)
    rd, cp, wr = [], [], []
    if dim == "HW":
        for s in spans:
            c = ttnn.CoreCoord(*s.core)
            rd.append(
                (
                    c,
                    {
                        "num_tiles": s.units,
                        "HtWt": Ht * Wt,
                        "base_start_id_HtWt": s.start // (Ht * Wt) * Ht * Wt,
                        "curr_id_from_base": s.start % (Ht * Wt),
                        "bcast_id": 0 if bnc1 else s.start // (Ht * Wt),
                    },
                )
            )
            cp.append((c, {"B": 1, "Ht": 1, "Wt": s.units}))
            wr.append((c, {"num_pages": s.units, "start_id": s.start}))
        scalar = {"BCAST_SCALAR": "1"} if bnc1 else {}
        kernels = [
            Metal2Kernel(
                f"{BCAST}/dataflow/reader_bcast_hw_interleaved_partitioned.cpp",
                cores,
                ttnn.ReaderConfigDescriptor(),
                dfbs=dfb_in,
                tensors=ins,
                rta_names=("num_tiles", "HtWt", "base_start_id_HtWt", "curr_id_from_base", "bcast_id"),
                rt_args=rd,
                defines=scalar,
            ),
            Metal2Kernel(
                f"{ELTWISE_UNARY}/dataflow/writer_unary_interleaved_start_id_metal2.cpp",
                cores,
                ttnn.WriterConfigDescriptor(),
                dfbs=dfb_out,
                tensors={"dst": out},
                rta_names=("num_pages", "start_id"),
                rt_args=wr,
            ),
            Metal2Kernel(
                f"{BCAST}/compute/bcast_hw_metal2.cpp",
                cores,
                cfg,
                dfbs={**dfb_in, **dfb_out},
                rta_names=("B", "Ht", "Wt"),
                rt_args=cp,
                defines={**defines, **scalar},
            ),
        ]
    else:
        read = 0
        for s in spans:
            c = ttnn.CoreCoord(*s.core)
            ht, wt = (s.units, Wt) if dim == "H" else (Ht, s.units)
            skip = 0 if dim == "H" else Wt - s.units
            r = {
                "src0_num_tiles": NC * ht * wt,
                "NCHtWt": NC * ht * wt,
                "NC": NC,
                "Ht": ht,
                "Wt": wt,
                "nc1": bnc1,
                "start_id": read,
                "HtWt": Ht * Wt,
            }
            if dim == "W":
                r["Wt_skip"] = skip
            rd.append((c, r))
            cp.append((c, {"B": NC, "Ht": ht, "Wt": wt}))
            wr.append((c, {"Ht": ht, "Wt": wt, "Wt_read": read, "Wt_skip": skip, "NC": NC, "HtWt": Ht * Wt}))
            read += ht * wt if dim == "H" else wt
        reader = (
            "reader_bcast_h_interleaved_input_rows_partitioned.cpp"
            if dim == "H"
            else "reader_bcast_w_interleaved_input_cols_partitioned.cpp"
        )
        rnames = ("src0_num_tiles", "NCHtWt", "NC", "Ht", "Wt", "nc1", "start_id", "HtWt")
        kernels = [
            Metal2Kernel(
                f"{BCAST}/dataflow/{reader}",
                cores,
                ttnn.ReaderConfigDescriptor(),
                dfbs=dfb_in,
                tensors=ins,
                rta_names=rnames + (("Wt_skip",) if dim == "W" else ()),
                rt_args=rd,
            ),
            Metal2Kernel(
                f"{BCAST}/dataflow/writer_unary_interleaved_input_cols_batched.cpp",
                cores,
                ttnn.WriterConfigDescriptor(),
                dfbs=dfb_out,
                tensors={"dst": out},
                rta_names=("Ht", "Wt", "Wt_read", "Wt_skip", "NC", "HtWt"),
                rt_args=wr,
            ),
            Metal2Kernel(
                f"{BCAST}/compute/bcast_{dim.lower()}.cpp",
                cores,
                cfg,
                dfbs={**dfb_in, **dfb_out},
                rta_names=("B", "Ht", "Wt"),
                rt_args=cp,
                defines=defines,
            ),
        ]
    return ttnn.ProgramDescriptor(kernels=[kernel_descriptor(ttnn, k) for k in kernels], semaphores=[], cbs=cbs)
