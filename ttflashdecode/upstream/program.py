"""The ``ttnn.ProgramDescriptor`` of upstream sdpa_decode, built the way its program factory builds it.

Kernels: the wheel's own ``reader_decode_all.cpp`` (RISCV_1 / NOC 0), ``writer_decode_all.cpp`` (RISCV_0 / NOC 1) and
``sdpa_flash_decode.cpp``, on every core of the grid. Circular buffers and semaphores are the factory's, on every core
of the grid too, in the factory's creation order (which decides their L1 addresses). Argument lists follow what the
wheel's kernels read (``get_compile_time_arg_val`` indices, ``TensorAccessorArgs`` offsets, ``get_arg_val`` order);
the comments name each entry as the kernels do.

Idle cores (past the active set) get the factory's idle arguments: reader and writer see a zero tensor address and
return, compute sees 65 in its first runtime argument.
"""

from __future__ import annotations

from dataclasses import dataclass

from ttflashdecode.backend import import_ttnn
from ttflashdecode.ops.descriptors import cb_descriptor, float_bits, tensor_accessor_args
from ttflashdecode.upstream import wheel
from ttflashdecode.upstream.plan import IDLE_COMPUTE_MARKER, MAX_TREE_REDUCTION_ROUNDS, UINT32_MAX, SdpaDecodePlan

# Semaphore ids, in the factory's CreateSemaphore order.
REDUCER_SEMAPHORE, OUTPUT_SEMAPHORE, K_MCAST_SEMAPHORE = 0, 1, 2

# The kernels' compile-time args in index order, named as each kernel's ``constexpr ... = get_compile_time_arg_val(i)``
# names them, and the reader's TensorAccessorArgs in offset order (``<name>_args``). tests/test_upstream_args.py parses
# the installed wheel's kernels and checks these lists (and the runtime-arg lists below) against them.
READER_CT_NAMES = (
    "B",
    "PNHt",
    "St",
    "DHt",
    "vDHt",
    "Sk_chunk_t",
    "num_cores",
    "is_q_sharded",
    "index_stick_size_B",
    "is_paged_attention",
    "num_kv_heads",
    "block_size_t",
    "Bkv",
    "q_heads_parallel_factor",
    "num_cores_per_head",
    "num_heads_per_core",
    "num_output_cores",
    "is_causal",
    "use_attention_mask",
    "use_attention_sink",
    "max_dynamic_chunk_size",
    "tilize_q",
    "reuse_k",
    "use_half_tile",
    "q_chunk_size_bytes",
    "is_cur_pos_tensor_sharded",
    "is_page_table_sharded",
    "q_page_size_bytes",
    "sliding_window_size",
    "original_block_size",
    "k_mcast_semaphore_id",
    "q_locally_available",
    "use_k_mcast",
    "Bmask",
    "capacity_t",
    "spec_multi_pos_T",
)
READER_ACCESSOR_NAMES = ("q", "k", "v", "mask", "pos", "page_table", "attention_sink")
WRITER_CT_NAMES = (
    "PNHt",
    "St",
    "vDHt",
    "Sk_chunk_t",
    "identity_scalar_packed",
    "num_cores_per_batch",
    "num_cores",
    "reducer_semaphore_id",
    "output_semaphore_id",
    "is_out_sharded",
    "num_q_heads",
    "num_kv_heads",
    "num_cores_per_head",
    "num_heads_per_core",
    "num_reducer_cores",
    "num_output_cores",
    "ELEMENT_SIZE",
    "is_causal",
    "max_dynamic_chunk_size",
    "q_heads_parallel_factor",
    "sliding_window_size",
    "original_block_size",
    "spec_multi_pos_T",
)
COMPUTE_CT_NAMES = (
    "St",
    "DHt",
    "vDHt",
    "Sq_chunk_t",
    "Sk_chunk_t",
    "qk_in0_block_w",
    "qk_subblock_w",
    "qk_subblock_h",
    "qk_in0_num_subblocks",
    "qk_in1_num_subblocks",
    "out_in0_block_w",
    "out_subblock_w",
    "out_subblock_h",
    "out_in0_num_subblocks",
    "out_in1_num_subblocks",
    "num_cores_per_head",
    "num_heads_per_core",
    "is_causal",
    "use_attention_mask",
    "use_attention_sink",
    "max_dynamic_chunk_size",
    "tilize_q",
    "q_heads_parallel_factor",
    "use_half_tile",
    "scale_fp32",
    "sliding_window_size",
    "original_block_size",
    "spec_multi_pos_T",
)
# Runtime args before the per-core coordinate arrays, in get_arg_val order (the writer's and compute's
# children_per_round[r] entries follow their fixed part, MAX_TREE_REDUCTION_ROUNDS of them).
READER_RT_NAMES = (
    "q_addr",
    "k_addr",
    "v_addr",
    "pos_addr",
    "page_table_addr",
    "mask_addr",
    "attention_sink_addr",
    "page_table_page_size",
    "is_output_core",
    "cur_head_group",
    "cur_batch",
    "core_num_in_reduce",
    "cur_pos_arg",
    "do_k_mcast",
    "mcast_x",
    "mcast_y0",
    "mcast_y1",
    "num_dests",
)
WRITER_RT_NAMES = (
    "out_addr",
    "do_output",
    "cur_head_group",
    "cur_batch",
    "core_num_in_reduce",
    "cur_pos_arg",
    "is_tree_root",
    "parent_core_in_group",
    "send_at_round",
)
COMPUTE_RT_NAMES = (
    "do_reduce",
    "cur_batch",
    "core_num_in_reduce",
    "cur_pos_arg",
    "is_tree_root",
    "parent_core_in_group",
)


def named_args(names: tuple[str, ...], values: dict[str, int]) -> list[int]:
    """``values`` in the order of ``names``; a name missing or extra is a bug in this module, raised at once."""
    if set(values) != set(names):
        raise AssertionError(
            f"upstream args: missing {sorted(set(names) - set(values))}, unknown {sorted(set(values) - set(names))}"
        )
    return [int(values[n]) for n in names]


@dataclass(frozen=True)
class SdpaDecodeTensors:
    """The device tensors of one call (a missing optional tensor is None)."""

    q: object
    k: object
    v: object
    out: object
    cur_pos: object | None = None  # int32 [b], ROW_MAJOR
    page_table: object | None = None  # int32 [b, max_blocks], ROW_MAJOR
    attn_mask: object | None = None
    attention_sink: object | None = None

    def io_tensors(self) -> list:
        """Inputs then the output, as generic_op takes them."""
        inputs = [self.q, self.k, self.v, self.cur_pos, self.page_table, self.attn_mask, self.attention_sink]
        return [t for t in inputs if t is not None] + [self.out]


def bf16_pair(value: float) -> int:
    """Two copies of ``value``'s bfloat16 (truncated, as ttnn's bfloat16(float) does) packed into one uint32
    (pack_two_bfloat16_into_uint32)."""
    half = float_bits(value) >> 16
    return (half << 16) | half


def accessor_args(tensor) -> list[int]:
    """A tensor's ``TensorAccessorArgs`` compile-time args, as the host appends them: [ArgsConfig, aligned page size]
    for an interleaved buffer. An absent optional tensor (the factory passes ``TensorAccessorArgs(nullptr)``) is
    [0, 0]: ArgsConfig None and no page size (the wheel's libtt_metal ``TensorAccessorArgs::get_compile_time_args``
    pushes the config word, then the aligned page size, 0 without a buffer)."""
    return [0, 0] if tensor is None else tensor_accessor_args(tensor)


def _address(tensor) -> int:
    return 0 if tensor is None else int(tensor.buffer_address())


def build_program(
    plan: SdpaDecodePlan, tensors: SdpaDecodeTensors, noc_coord, *, scale: float, cur_pos: list[int] | None
):
    """The ProgramDescriptor for ``plan`` over ``tensors``. ``noc_coord(logical core) -> (x, y)`` gives the NOC
    coordinates kernels address a core by; ``cur_pos`` the host positions (None with a cur_pos tensor or non-causal)."""
    ttnn = import_ttnn()
    p = plan
    gx, gy = p.grid
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(gx - 1, gy - 1))])

    # MLA: V is K (the factory's input_tensor_v = use_mla ? k : v), so V's format, accessor args and address are K's.
    v_tensor = tensors.k if p.reuse_k else tensors.v
    q_dtype, k_dtype, v_dtype, out_dtype = (t.dtype for t in (tensors.q, tensors.k, v_tensor, tensors.out))
    mask_dtype = tensors.attn_mask.dtype if tensors.attn_mask is not None else ttnn.bfloat16
    scalar_dtype = stats_dtype = im_dtype = ttnn.bfloat16
    full, half = ttnn.Tile((32, 32)), ttnn.Tile((16, 32))
    q_tile = mask_tile = scalar_tile = im_tile = stats_tile = half if p.use_half_tile else full

    def tile_bytes(tile, dtype) -> int:
        return int(tile.get_tile_size(dtype))

    q_tile_size, k_tile_size, v_tile_size = (
        tile_bytes(q_tile, q_dtype),
        tile_bytes(full, k_dtype),
        tile_bytes(full, v_dtype),
    )
    mask_tile_size, out_tile_size = tile_bytes(mask_tile, mask_dtype), tile_bytes(full, out_dtype)
    scalar_tile_size, im_tile_size = tile_bytes(scalar_tile, scalar_dtype), tile_bytes(im_tile, im_dtype)
    stats_tile_size = tile_bytes(stats_tile, stats_dtype)

    q_tiles = p.PNHt * p.DHt
    k_tiles = p.Sk_chunk_t_cb_size * p.DHt * 2  # double buffered
    v_tiles = p.Sk_chunk_t_cb_size * p.vDHt * 2
    qk_tiles = p.PNHt * p.Sk_chunk_t_cb_size
    out_tiles = p.PNHt * p.vDHt
    stats_tiles = p.PNHt

    cbs = []

    def add_cb(index: int, num_pages: int, dtype, page_size: int, tile=None) -> None:
        tile_descriptor = None if tile is None else ttnn.TileDescriptor(tile)
        cbs.append(cb_descriptor(grid, [index], dtype, page_size, num_pages, tile_descriptor))

    # In the factory's creation order.
    add_cb(0, q_tiles, q_dtype, q_tile_size, q_tile)  # cb_q_in
    add_cb(1, k_tiles, k_dtype, k_tile_size)  # cb_k_in
    add_cb(2, v_tiles, v_dtype, v_tile_size)  # cb_v_in
    add_cb(3, qk_tiles, mask_dtype, mask_tile_size, mask_tile)  # cb_mask_in
    if p.use_attention_sink:
        add_cb(4, stats_tiles, stats_dtype, stats_tile_size, stats_tile)  # cb_attention_sink
    add_cb(5, 1, scalar_dtype, scalar_tile_size, scalar_tile)  # cb_identity_scale_in
    add_cb(6, stats_tiles, stats_dtype, stats_tile_size, stats_tile)  # cb_m_in
    add_cb(7, stats_tiles, stats_dtype, stats_tile_size, stats_tile)  # cb_l_in
    cur_pos_stick = int(tensors.cur_pos.buffer_aligned_page_size()) if tensors.cur_pos is not None else 0
    if p.use_cur_pos_tensor:
        add_cb(8, 1, tensors.cur_pos.dtype, cur_pos_stick)  # cb_writer_cur_pos (raw stick)
        add_cb(15, 1, tensors.cur_pos.dtype, cur_pos_stick)  # cb_compute_cur_pos (reader copies the stick here)
    page_table_stick = int(tensors.page_table.buffer_aligned_page_size()) if tensors.page_table is not None else 0
    if p.is_paged:
        add_cb(9, 1, tensors.page_table.dtype, page_table_stick)  # cb_id_page_table: this user's row
    add_cb(10, q_tiles, q_dtype, q_tile_size, q_tile)  # cb_q_rm (tilize_q path)
    add_cb(11, 1, scalar_dtype, tile_bytes(full, scalar_dtype), full)  # cb_col_identity
    add_cb(12, 1, scalar_dtype, scalar_tile_size, scalar_tile)  # cb_zero_in
    if p.sliding_window_size > 0:
        add_cb(13, qk_tiles, mask_dtype, mask_tile_size, mask_tile)  # cb_sliding_window_mask_in
    if 0 < p.original_block_size < 32:
        add_cb(14, qk_tiles, mask_dtype, mask_tile_size, mask_tile)  # cb_block_pad_mask
    add_cb(24, qk_tiles, im_dtype, im_tile_size, im_tile)  # cb_qk_im
    add_cb(25, out_tiles, im_dtype, im_tile_size, im_tile)  # cb_out_im
    add_cb(26, out_tiles, im_dtype, im_tile_size, im_tile)  # cb_out_accumulate_im
    for index in (27, 28, 29, 30, 31, 21, 22):  # max_1, max_2, sum_1, sum_2, exp_max_diff, prev_sum_2, exp_max_diff_2
        add_cb(index, stats_tiles, stats_dtype, stats_tile_size, stats_tile)
    add_cb(23, out_tiles, im_dtype, im_tile_size, im_tile)  # cb_out_accumulate_im_2
    add_cb(16, out_tiles, stats_dtype, stats_tile_size, stats_tile)  # cb_out_o / cb_out_worker
    add_cb(17, stats_tiles, stats_dtype, stats_tile_size, stats_tile)  # cb_out_m
    add_cb(18, stats_tiles, stats_dtype, stats_tile_size, stats_tile)  # cb_out_l
    if p.intermed_output_tiles > 0:
        add_cb(19, p.intermed_output_tiles, stats_dtype, stats_tile_size, stats_tile)  # cb_intermed_out (children)
    add_cb(20, out_tiles, out_dtype, out_tile_size, full)  # cb_out

    semaphores = [
        ttnn.SemaphoreDescriptor(id=i, core_type=ttnn.CoreType.WORKER, core_ranges=grid, initial_value=0)
        for i in (REDUCER_SEMAPHORE, OUTPUT_SEMAPHORE, K_MCAST_SEMAPHORE)
    ]

    # ---- compile-time args (reader_decode_all.cpp 0..35, writer_decode_all.cpp 0..22, sdpa_flash_decode.cpp 0..27),
    # each under the name the wheel's kernel gives it (tests/test_upstream_args.py parses the kernels and compares).
    q_chunk_size_bytes = q_tiles * q_tile_size  # Q is tiled: read as q_tile_size pages
    reader_ct = named_args(
        READER_CT_NAMES,
        {
            "B": p.B,
            "PNHt": p.PNHt,
            "St": p.St,
            "DHt": p.DHt,
            "vDHt": p.vDHt,
            "Sk_chunk_t": p.Sk_chunk_t,
            "num_cores": p.num_active_cores,
            "is_q_sharded": 0,
            "index_stick_size_B": cur_pos_stick,
            "is_paged_attention": int(p.is_paged),
            "num_kv_heads": p.num_kv_heads,
            "block_size_t": p.page_block_size_t,
            "Bkv": p.Bkv,
            "q_heads_parallel_factor": 1,
            "num_cores_per_head": p.num_cores_per_head,
            "num_heads_per_core": p.num_heads_per_core,
            "num_output_cores": p.num_output_cores,
            "is_causal": int(p.is_causal),
            "use_attention_mask": int(p.use_attention_mask),
            "use_attention_sink": int(p.use_attention_sink),
            "max_dynamic_chunk_size": p.max_dynamic_chunk_size,
            "tilize_q": 0,  # Q is TILE
            "reuse_k": int(p.reuse_k),
            "use_half_tile": int(p.use_half_tile),
            "q_chunk_size_bytes": q_chunk_size_bytes,
            "is_cur_pos_tensor_sharded": 0,
            "is_page_table_sharded": 0,
            "q_page_size_bytes": tile_bytes(full, q_dtype),  # Q's DRAM page is a full tile
            "sliding_window_size": p.sliding_window_size,
            "original_block_size": p.original_block_size,
            "k_mcast_semaphore_id": K_MCAST_SEMAPHORE,
            # Q read from DRAM and no K multicast: both come with a height-sharded MLA Q (column-major groups) only.
            "q_locally_available": 0,
            "use_k_mcast": 0,
            "Bmask": p.Bmask,
            "capacity_t": 0,  # 0: unbounded cache
            "spec_multi_pos_T": p.spec_multi_pos_T,
        },
    )
    accessors = {
        "q": tensors.q,
        "k": tensors.k,
        "v": v_tensor,
        "mask": tensors.attn_mask,
        "pos": tensors.cur_pos,
        "page_table": tensors.page_table,
        "attention_sink": tensors.attention_sink,
    }
    for name in READER_ACCESSOR_NAMES:
        reader_ct += accessor_args(accessors[name])
    writer_ct = named_args(
        WRITER_CT_NAMES,
        {
            "PNHt": p.PNHt,
            "St": p.St,
            "vDHt": p.vDHt,
            "Sk_chunk_t": p.Sk_chunk_t,
            "identity_scalar_packed": bf16_pair(1.0),
            "num_cores_per_batch": p.num_cores_per_batch,
            "num_cores": p.num_active_cores,
            "reducer_semaphore_id": REDUCER_SEMAPHORE,
            "output_semaphore_id": OUTPUT_SEMAPHORE,
            "is_out_sharded": 0,
            "num_q_heads": p.num_q_heads,
            "num_kv_heads": p.num_kv_heads,
            "num_cores_per_head": p.num_cores_per_head,
            "num_heads_per_core": p.num_heads_per_core,
            "num_reducer_cores": p.num_reducer_cores,
            "num_output_cores": p.num_output_cores,
            "ELEMENT_SIZE": int(tensors.out.element_size()),
            "is_causal": int(p.is_causal),
            "max_dynamic_chunk_size": p.max_dynamic_chunk_size,
            "q_heads_parallel_factor": 1,
            "sliding_window_size": p.sliding_window_size,
            "original_block_size": p.original_block_size,
            "spec_multi_pos_T": p.spec_multi_pos_T,
        },
    ) + accessor_args(tensors.out)
    qk_in0_block_w, qk_w, qk_h, qk_n0, qk_n1 = p.qk_subblocks()
    out_in0_block_w, out_w, out_h, out_n0, out_n1 = p.out_subblocks()
    compute_ct = named_args(
        COMPUTE_CT_NAMES,
        {
            "St": p.St,
            "DHt": p.DHt,
            "vDHt": p.vDHt,
            "Sq_chunk_t": p.PNHt,
            "Sk_chunk_t": p.Sk_chunk_t,
            "qk_in0_block_w": qk_in0_block_w,
            "qk_subblock_w": qk_w,
            "qk_subblock_h": qk_h,
            "qk_in0_num_subblocks": qk_n0,
            "qk_in1_num_subblocks": qk_n1,
            "out_in0_block_w": out_in0_block_w,
            "out_subblock_w": out_w,
            "out_subblock_h": out_h,
            "out_in0_num_subblocks": out_n0,
            "out_in1_num_subblocks": out_n1,
            "num_cores_per_head": p.num_cores_per_head,
            "num_heads_per_core": p.num_heads_per_core,
            "is_causal": int(p.is_causal),
            "use_attention_mask": int(p.use_attention_mask),
            "use_attention_sink": int(p.use_attention_sink),
            "max_dynamic_chunk_size": p.max_dynamic_chunk_size,
            "tilize_q": 0,
            "q_heads_parallel_factor": 1,
            "use_half_tile": int(p.use_half_tile),
            "scale_fp32": float_bits(scale),
            "sliding_window_size": p.sliding_window_size,
            "original_block_size": p.original_block_size,
            "spec_multi_pos_T": p.spec_multi_pos_T,
        },
    )

    # ---- runtime args
    addresses = [
        _address(t)
        for t in (
            tensors.q,
            tensors.k,
            v_tensor,
            tensors.cur_pos,
            tensors.page_table,
            tensors.attn_mask,
            tensors.attention_sink,
        )
    ]
    phys = {c.index: noc_coord(c.core) for c in p.cores}
    reducer_xy = [phys[c.index] for c in p.cores if c.do_reduce]
    output_xy = [phys[c.index] for c in p.cores if c.do_output]
    output_xs, output_ys = [x for x, _ in output_xy], [y for _, y in output_xy]
    reducer_xs, reducer_ys = [x for x, _ in reducer_xy], [y for _, y in reducer_xy]
    reader_args, writer_args, compute_args = [], [], []
    for c in p.cores:
        coord = ttnn.CoreCoord(*c.core)
        pos = UINT32_MAX if (p.use_cur_pos_tensor or not p.is_causal) else cur_pos[c.cur_batch] & UINT32_MAX
        group_base = c.cur_batch * p.num_cores_per_batch + c.cur_head * p.num_cores_per_head
        group_xy = [phys[group_base + j] for j in range(p.num_cores_per_head)]
        reader_args.append(
            (
                coord,
                named_args(
                    READER_RT_NAMES,
                    {
                        **dict(zip(READER_RT_NAMES[:7], addresses)),
                        "page_table_page_size": page_table_stick,
                        "is_output_core": int(c.do_output),
                        "cur_head_group": c.cur_head,
                        "cur_batch": c.cur_batch,
                        "core_num_in_reduce": c.core_num_in_reduce,
                        "cur_pos_arg": pos,
                        "do_k_mcast": 0,
                        "mcast_x": 0,
                        "mcast_y0": 0,
                        "mcast_y1": 0,
                        "num_dests": 0,  # no K multicast
                    },
                )
                + [*output_xs, *output_ys],
            )
        )
        writer_args.append(
            (
                coord,
                named_args(
                    WRITER_RT_NAMES,
                    {
                        "out_addr": _address(tensors.out),
                        "do_output": int(c.do_output),
                        "cur_head_group": c.cur_head,
                        "cur_batch": c.cur_batch,
                        "core_num_in_reduce": c.core_num_in_reduce,
                        "cur_pos_arg": pos,
                        "is_tree_root": int(c.tree.is_root),
                        "parent_core_in_group": c.tree.parent,
                        "send_at_round": c.tree.send_at_round,
                    },
                )
                + [
                    *c.tree.children_per_round,
                    *[x for x, _ in group_xy],
                    *[y for _, y in group_xy],
                    *reducer_xs,
                    *reducer_ys,
                    *output_xs,
                    *output_ys,
                ],
            )
        )
        compute_args.append(
            (
                coord,
                named_args(
                    COMPUTE_RT_NAMES,
                    {
                        "do_reduce": int(c.do_reduce),
                        "cur_batch": c.cur_batch,
                        "core_num_in_reduce": c.core_num_in_reduce,
                        "cur_pos_arg": pos,
                        "is_tree_root": int(c.tree.is_root),
                        "parent_core_in_group": c.tree.parent,
                    },
                )
                + list(c.tree.children_per_round),
            )
        )
    for xy in p.idle_cores:
        coord = ttnn.CoreCoord(*xy)
        reader_args.append((coord, [0] * len(READER_RT_NAMES)))  # q_addr 0: idle
        writer_args.append(
            (coord, [0] * (len(WRITER_RT_NAMES) + MAX_TREE_REDUCTION_ROUNDS + 2 * p.num_cores_per_head))
        )  # out_addr 0: idle
        compute_args.append(
            (coord, [IDLE_COMPUTE_MARKER] + [0] * (len(COMPUTE_RT_NAMES) - 1 + MAX_TREE_REDUCTION_ROUNDS))
        )

    kernels = [
        ttnn.KernelDescriptor(
            kernel_source=str(wheel.sdpa_decode_kernel("compute/sdpa_flash_decode.cpp")),
            core_ranges=grid,
            compile_time_args=compute_ct,
            defines=p.compute_defines(),
            runtime_args=compute_args,
            config=ttnn.ComputeConfigDescriptor(
                math_fidelity=getattr(ttnn.MathFidelity, p.math_fidelity),
                math_approx_mode=p.math_approx_mode,
                fp32_dest_acc_en=p.fp32_dest_acc_en,
                dst_full_sync_en=p.dst_full_sync_en,
            ),
        ),
        ttnn.KernelDescriptor(
            kernel_source=str(wheel.sdpa_decode_kernel("dataflow/reader_decode_all.cpp")),
            core_ranges=grid,
            compile_time_args=reader_ct,
            runtime_args=reader_args,
            config=ttnn.ReaderConfigDescriptor(),
        ),
        ttnn.KernelDescriptor(
            kernel_source=str(wheel.sdpa_decode_kernel("dataflow/writer_decode_all.cpp")),
            core_ranges=grid,
            compile_time_args=writer_ct,
            runtime_args=writer_args,
            config=ttnn.WriterConfigDescriptor(),
        ),
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=semaphores, cbs=cbs)
