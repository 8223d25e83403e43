"""Upstream sdpa_decode's program factory decisions, as pure Python.

Everything here reproduces what tt-metal's sdpa_decode factory (``SdpaDecodeDeviceOperation::create_descriptor`` /
``SdpaDecodeProgramFactory::create``, ttnn/cpp/ttnn/operations/transformer/sdpa_decode/device/) and its Python entry
points (sdpa_decode.cpp) compute before they build the program: the chunk size, how many cores share a (batch, kv head)
group, which core does what, the reduction tree, the matmul sub-blocking, the tile shapes. :mod:`.program` turns a
:class:`SdpaDecodePlan` into the ``ttnn.ProgramDescriptor``; nothing here touches ttnn or a device.

The wheel's kernels are the ground truth for argument layouts; the rules below are the factory's as tt-metal's public
repository shows them (newest stored versions), and where the wheel's kernels read an argument no stored factory
version passes (``Bmask``, ``capacity_t``) the value is the one for the feature being off, as the kernels document
(0 = unbounded cache). Two paths model code takes have no stored factory source; their arguments follow the wheel's
kernels and the checks compiled into the wheel's ``_ttnncpp.so`` (its error strings):

* ``spec_multi_pos_tiles = Tg`` (paged speculative verify): q ``[1, b, Tg * 32, d]``, ``PNHt == Tg``, full 32x32 tiles
  (no half tiles), one kv head, causal, a cur_pos tensor of ``b * Tg`` entries, no sliding window, no attn_mask, a
  DRAM-interleaved Q; the kernels read ``spec_multi_pos_T`` (reader 35, writer 22, compute 27) and the writer builds
  each row tile's causal mask from its candidate's bound, so a batch row's K/V is read once for all its candidates.
* MLA (``flash_multi_latent_attention_decode``): V is K (the factory's ``input_tensor_v = use_mla ? k : v``),
  ``vDHt = head_dim_v / 32`` and the reader's ``reuse_k`` copies each chunk's V tiles out of the K tiles it already
  holds in L1 (the older stored factories pass ``use_mla`` in that slot). Q heads are split over cores
  (``q_heads_parallel_factor``) only for a height-sharded Q, which this baseline does not take: it is 1 here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TILE = 32
MAX_TREE_REDUCTION_ROUNDS = 6  # sdpa_decode_device_operation.hpp: supports up to 2^6 = 64 cores per head
IDLE_COMPUTE_MARKER = 65  # compute runtime arg 0 of an idle core (sdpa_flash_decode.cpp)
UINT32_MAX = 0xFFFFFFFF


def default_k_chunk_size(kv_len: int, *, paged: bool, is_causal: bool, config_k_chunk_size: int = 0) -> int:
    """k_chunk_size the ttnn entry points pass to the device op (sdpa_decode.cpp).

    A program config's positive ``k_chunk_size`` wins. Otherwise the non-paged ops use ``get_chunk_size(s)``:
    ``min(512, largest power-of-two divisor of s)`` over the cache's logical length (its loop starts at 2**1, so the
    result is at least 2 and a multiple of 32 whenever s is). Paged causal decode passes 0: the kernels then size each
    user's chunk from its cur_pos (``get_dynamic_Sk_chunk_t``: the power of two >= the tiles seen, at most the
    destination register's tile count). Paged non-causal decode needs fixed chunks: the 0.81.1 wheel's docstring says
    it uses 32 when no program config is given (a config with k_chunk_size 0 is refused there: "Must provide
    k_chunk_size if non-causal!")."""
    if config_k_chunk_size > 0:
        return config_k_chunk_size
    if paged:
        return 0 if is_causal else TILE
    i = 1
    while i < kv_len and kv_len % (1 << (i + 1)) == 0:
        i += 1
    return min(512, 1 << i)


@dataclass(frozen=True)
class TreeReduction:
    """One core's place in its group's binary reduction tree (get_tree_reduction_params)."""

    is_root: bool
    parent: int  # core index in the group it sends to; UINT32_MAX for the root
    send_at_round: int  # UINT32_MAX for the root
    children_per_round: tuple[int, ...]  # MAX_TREE_REDUCTION_ROUNDS entries, UINT32_MAX where none


def tree_reduction(core: int, n: int) -> TreeReduction:
    """Upstream's tree: core 0 is the root; with vid = (n-1) - core, in round r vid receives from vid - 2^r when its
    low r+1 bits are all ones; a core sends in the round given by its trailing ones to vid + 2^round, or to the root
    when that vid does not exist (n not a power of two), and the root then takes those orphans as extra children."""
    children = [UINT32_MAX] * MAX_TREE_REDUCTION_ROUNDS
    if n <= 1:
        return TreeReduction(True, UINT32_MAX, UINT32_MAX, tuple(children))
    vid = (n - 1) - core
    rounds = (n - 1).bit_length()  # ceil(log2 n)
    for r in range(rounds):
        mask = (2 << r) - 1
        if vid & mask == mask:
            child_vid = vid - (1 << r)
            if child_vid < n:
                children[r] = (n - 1) - child_vid
    is_root = core == 0
    parent = send_at = UINT32_MAX
    if not is_root:
        trailing_ones = _trailing_zeros(~vid)
        parent_vid = vid + (1 << trailing_ones)
        parent = (n - 1) - parent_vid if parent_vid < n else 0
        send_at = trailing_ones
    else:
        for c in range(1, n):
            cv = (n - 1) - c
            t = _trailing_zeros(~cv)
            if cv + (1 << t) >= n and children[t] == UINT32_MAX:
                children[t] = c
    return TreeReduction(is_root, parent, send_at, tuple(children))


def _trailing_zeros(x: int) -> int:
    x &= 0xFFFFFFFF
    return (x & -x).bit_length() - 1 if x else 32


@dataclass(frozen=True)
class CoreWork:
    """What active core ``index`` (row-major over the grid) does: the factory's per-core runtime values."""

    index: int
    core: tuple[int, int]  # logical (x, y)
    cur_batch: int
    cur_head: int  # kv head (group) this core serves
    core_num_in_reduce: int  # position in its (batch, kv head) group; 0 = the group's reducer
    core_num_in_output: int  # position in its batch; 0 = the batch's output core
    tree: TreeReduction

    @property
    def do_reduce(self) -> bool:
        return self.core_num_in_reduce == 0

    @property
    def do_output(self) -> bool:
        return self.core_num_in_output == 0


@dataclass(frozen=True)
class SdpaDecodePlan:
    """The factory's decisions for one call (names as in the factory and the kernels)."""

    # shapes, in tiles where the name ends in t
    B: int
    num_q_heads: int
    num_kv_heads: int
    PNHt: int
    St: int
    DHt: int
    vDHt: int
    Bkv: int
    Bmask: int
    is_paged: bool
    page_block_size_t: int
    original_block_size: int
    # features
    is_causal: bool
    use_cur_pos_tensor: bool
    use_attention_mask: bool
    use_attention_sink: bool
    sliding_window_size: int
    reuse_k: bool  # MLA: V read out of K's L1 chunk
    spec_multi_pos_T: int  # spec_multi_pos_tiles (0: off)
    # chunking
    k_chunk_size: int  # 0: dynamic (sized per user in the kernels)
    max_dynamic_chunk_size: int
    # core split
    grid: tuple[int, int]
    num_cores_per_batch: int
    num_cores_per_head: int
    num_heads_per_core: int
    num_reducer_cores: int
    num_output_cores: int
    num_active_cores: int
    cores: tuple[CoreWork, ...]  # the active cores, in factory order
    idle_cores: tuple[tuple[int, int], ...]
    # compute
    math_fidelity: str
    math_approx_mode: bool
    fp32_dest_acc_en: bool
    dst_full_sync_en: bool
    exp_approx_mode: bool
    use_half_tile: bool

    @property
    def Sk_chunk_t(self) -> int:
        return self.k_chunk_size // TILE

    @property
    def num_tree_reduction_rounds(self) -> int:
        return (self.num_cores_per_head - 1).bit_length() if self.num_cores_per_head > 1 else 0

    @property
    def dst_size(self) -> int:
        """Tiles the destination register holds in half-sync mode (8, or 4 with fp32 accumulation)."""
        return 4 if self.fp32_dest_acc_en else 8

    @property
    def Sk_chunk_t_cb_size(self) -> int:
        """Chunk tiles the K/V/mask CBs are sized for (the dynamic maximum when k_chunk_size is 0)."""
        return self.Sk_chunk_t or self.max_dynamic_chunk_size

    @property
    def intermed_output_tiles(self) -> int:
        return (self.PNHt * self.vDHt + 2 * self.PNHt) * (self.num_cores_per_head - 1)

    def qk_subblocks(self) -> tuple[int, int, int, int, int]:
        """(in0_block_w, out_subblock_w, out_subblock_h, in0_num_subblocks, in1_num_subblocks) of Q . K^T."""
        w = h = n0 = n1 = 0
        if self.Sk_chunk_t > 0:
            w = min(self.Sk_chunk_t, self.dst_size)
            h = min(self.PNHt, self.dst_size // w) if w == self.Sk_chunk_t else 1
            n0, n1 = self.PNHt // h, self.Sk_chunk_t // w
        return self.DHt, w, h, n0, n1

    def out_subblocks(self) -> tuple[int, int, int, int, int]:
        """(in0_block_w, out_subblock_w, out_subblock_h, in0_num_subblocks, in1_num_subblocks) of P . V."""
        in0_block_w = self.Sk_chunk_t
        w = min(self.vDHt, self.dst_size)
        h = min(self.PNHt, self.dst_size // w) if w == self.vDHt else 1
        return in0_block_w, w, h, self.PNHt // h, self.vDHt // w

    def compute_defines(self) -> list[tuple[str, str]]:
        """The compute kernel's defines: exp approximation and the power-of-two loop granularities."""
        dht = min(self.DHt, self.dst_size)
        log2_dht = int(math.log2(dht))
        if dht != 1 << log2_dht:
            dht, log2_dht = 1, 0
        defines = [
            ("EXP_APPROX_MODE", str(int(self.exp_approx_mode))),
            ("DHT_GRANULARITY", str(dht)),
            ("LOG2_DHT_GRANULARITY", str(log2_dht)),
        ]
        if self.Sk_chunk_t > 0:
            for name, value in (
                ("SUB_EXP_GRANULARITY", min(self.Sk_chunk_t, self.dst_size)),
                ("MUL_BCAST_GRANULARITY", min(self.PNHt * self.Sk_chunk_t, self.dst_size)),
                ("STATS_GRANULARITY", min(self.Sk_chunk_t, self.dst_size)),
            ):
                log2 = value.bit_length() - 1
                if value != 1 << log2:
                    raise ValueError(f"{name} ({value}) must be a power of 2 (upstream's factory refuses this shape)")
                defines += [(name, str(value)), (f"LOG2_{name}", str(log2))]
        else:
            defines.append(("DYNAMIC_CHUNK_SIZE", "1"))
        return defines

    def summary(self) -> str:
        chunk = f"k_chunk_size={self.k_chunk_size}" if self.k_chunk_size else "k_chunk_size=dynamic"
        mode = (
            " mla" if self.reuse_k else (f" spec_multi_pos_T={self.spec_multi_pos_T}" if self.spec_multi_pos_T else "")
        )
        return (
            f"upstream sdpa_decode{mode}: B={self.B} kv_heads={self.num_kv_heads} {chunk} grid={self.grid} "
            f"active={self.num_active_cores} cores_per_head={self.num_cores_per_head} "
            f"heads_per_core={self.num_heads_per_core} tree_rounds={self.num_tree_reduction_rounds} "
            f"half_tile_q={self.use_half_tile}"
        )


def uses_half_tile(num_q_heads: int, *, is_causal: bool, q_is_bfloat16: bool) -> bool:
    """Upstream's factory runs 16x32 half tiles for Q, mask and statistics when every head fits in the top 16 rows of
    a tile (never in spec mode: num_q_heads is then Tg * 32 rows). Its softmax then takes the approximate exp for P
    whatever exp_approx_mode says (sdpa compute_common.hpp: ``EXP_APPROX_MODE || vector_mode != VectorMode::RC``)."""
    return is_causal and num_q_heads <= 16 and q_is_bfloat16


def plan_sdpa_decode(
    *,
    batch: int,
    num_q_heads: int,
    num_kv_heads: int,
    kv_len: int,
    head_dim: int,
    head_dim_v: int,
    kv_batch: int,
    mask_batch: int,
    is_paged: bool,
    block_size: int,
    is_causal: bool,
    use_cur_pos_tensor: bool,
    use_attention_mask: bool,
    use_attention_sink: bool,
    sliding_window_size: int,
    k_chunk_size: int,
    grid: tuple[int, int],
    max_cores_per_head: int,
    q_is_bfloat16: bool,
    math_fidelity: str,
    math_approx_mode: bool,
    fp32_dest_acc_en: bool,
    dst_full_sync_en: bool,
    exp_approx_mode: bool,
    use_mla: bool = False,
    spec_multi_pos_tiles: int = 0,
) -> SdpaDecodePlan:
    """The factory's arithmetic for a DRAM-interleaved Q and output (no Q head parallelism, no sub-core grids).

    ``kv_len`` is the cache length the kernels see (paged: blocks per user x block size); ``k_chunk_size`` is what the
    entry point passes (see :func:`default_k_chunk_size`); ``max_cores_per_head`` the program config's
    ``max_cores_per_head_batch`` or, without a config, the number of cores of the grid. ``num_q_heads`` is Q's row
    count: with ``spec_multi_pos_tiles = Tg`` that is ``Tg * 32`` (one 32-row tile per candidate); ``use_mla`` reads V
    out of K (``head_dim_v`` columns)."""
    gx, gy = grid
    num_cores_available = gx * gy
    if num_cores_available < batch:
        raise ValueError(
            f"grid {grid}: {num_cores_available} cores available, upstream needs at least one per user (batch {batch})"
        )
    if max_cores_per_head <= 0:
        raise ValueError(f"max_cores_per_head_batch={max_cores_per_head}: expected a positive int")
    if k_chunk_size and (k_chunk_size % TILE or k_chunk_size & (k_chunk_size - 1)):
        raise ValueError(f"k_chunk_size={k_chunk_size}: upstream needs a power of two and a multiple of 32")
    if spec_multi_pos_tiles:
        # The wheel's checks (its _ttnncpp.so error strings): PNHt == spec_multi_pos_tiles, num_kv_heads == 1, paged,
        # causal, no sliding window, no attention mask, no MLA.
        problems = [
            why
            for bad, why in (
                (
                    num_q_heads != TILE * spec_multi_pos_tiles,
                    f"Q must have {TILE * spec_multi_pos_tiles} rows per batch "
                    f"(one 32-row tile per candidate), got {num_q_heads}",
                ),
                (num_kv_heads != 1, f"requires num_kv_heads == 1, got {num_kv_heads}"),
                (not is_paged, "requires paged attention"),
                (not is_causal, "requires is_causal"),
                (sliding_window_size > 0, "is not supported with a sliding window"),
                (use_attention_mask, "is not supported with an explicit attention mask"),
                (use_mla, "is not supported with multi-latent attention"),
            )
            if bad
        ]
        if problems:
            raise ValueError(f"spec_multi_pos_tiles={spec_multi_pos_tiles}: {problems[0]}")
        if not use_cur_pos_tensor:
            raise ValueError(
                f"cur_pos_tensor: spec_multi_pos_tiles={spec_multi_pos_tiles} reads its {batch} x "
                f"{spec_multi_pos_tiles} candidate bounds from a cur_pos tensor (the kernels never take "
                "them as a list)"
            )

    # Core allocation: the whole grid is shared evenly between the users, then between their kv heads.
    max_num_cores_for_compute = max_cores_per_head * batch * num_kv_heads
    per_batch_uncapped = min(num_cores_available, max_num_cores_for_compute) // batch
    num_cores_per_head = max(1, per_batch_uncapped // num_kv_heads)
    num_heads_per_core = max(1, math.ceil(num_kv_heads / per_batch_uncapped))
    while num_kv_heads % num_heads_per_core:
        num_heads_per_core += 1
    num_cores_per_batch = num_cores_per_head * num_kv_heads // num_heads_per_core
    num_reducer_cores = num_kv_heads * batch // num_heads_per_core
    num_active_cores = num_cores_per_head * num_kv_heads * batch // num_heads_per_core
    rounds = (num_cores_per_head - 1).bit_length() if num_cores_per_head > 1 else 0
    if rounds > MAX_TREE_REDUCTION_ROUNDS:
        raise ValueError(
            f"{num_cores_per_head} cores per head need {rounds} tree-reduction rounds; upstream supports "
            f"at most {MAX_TREE_REDUCTION_ROUNDS} (64 cores)"
        )

    # Q and the output in DRAM: core i of the active set is logical core (i % gx, i // gx).
    cores = []
    for i in range(num_active_cores):
        cur_head = (i % num_cores_per_batch) // num_cores_per_head
        cur_batch = i // num_cores_per_batch
        in_reduce = i % num_cores_per_head
        cores.append(
            CoreWork(
                i,
                (i % gx, i // gx),
                cur_batch,
                cur_head,
                in_reduce,
                i % num_cores_per_batch,
                tree_reduction(in_reduce, num_cores_per_head),
            )
        )
    idle = tuple((i % gx, i // gx) for i in range(num_active_cores, num_cores_available))

    dst_size = 4 if fp32_dest_acc_en else 8
    return SdpaDecodePlan(
        B=batch,
        num_q_heads=num_q_heads,
        num_kv_heads=num_kv_heads,
        PNHt=-(-num_q_heads // TILE),
        St=kv_len // TILE,
        DHt=head_dim // TILE,
        vDHt=head_dim_v // TILE,
        Bkv=kv_batch,
        Bmask=mask_batch,
        is_paged=is_paged,
        page_block_size_t=block_size // TILE if is_paged else 0,
        original_block_size=block_size if is_paged else 0,
        is_causal=is_causal,
        use_cur_pos_tensor=use_cur_pos_tensor,
        use_attention_mask=use_attention_mask,
        use_attention_sink=use_attention_sink,
        sliding_window_size=sliding_window_size,
        reuse_k=use_mla,
        spec_multi_pos_T=spec_multi_pos_tiles,
        k_chunk_size=k_chunk_size,
        max_dynamic_chunk_size=dst_size,
        grid=(gx, gy),
        num_cores_per_batch=num_cores_per_batch,
        num_cores_per_head=num_cores_per_head,
        num_heads_per_core=num_heads_per_core,
        num_reducer_cores=num_reducer_cores,
        num_output_cores=batch,
        num_active_cores=num_active_cores,
        cores=tuple(cores),
        idle_cores=idle,
        math_fidelity=math_fidelity,
        math_approx_mode=math_approx_mode,
        fp32_dest_acc_en=fp32_dest_acc_en,
        dst_full_sync_en=dst_full_sync_en,
        exp_approx_mode=exp_approx_mode,
        use_half_tile=uses_half_tile(num_q_heads, is_causal=is_causal, q_is_bfloat16=q_is_bfloat16),
    )
