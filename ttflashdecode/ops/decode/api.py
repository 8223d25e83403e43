"""The public FlashDecode ops.

``scaled_dot_product_attention_decode`` and ``paged_scaled_dot_product_attention_decode`` take the argument names,
shapes and defaults of ``ttnn.transformer.scaled_dot_product_attention_decode`` (and its paged variant), plus
the features model code needs (sliding window, attention sinks, multi-token queries, a shared cache).

Each function builds one :class:`~ttflashdecode.ops.decode.request.DecodeRequest` and hands it to the decode pipeline
(:func:`~ttflashdecode.ops.decode.pipeline.run_request`), which
:class:`~ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper` (plan once, run per layer and step) runs on as well: a
call is validated on the host (:mod:`ttflashdecode.ops.decode.validate`) and planned (:mod:`ttflashdecode.plan`) before
anything is uploaded or allocated, then its ``ttnn.ProgramDescriptor`` (:mod:`ttflashdecode.ops.decode.factory`) is
launched on the tensors' backend: ``ttnn.generic_op`` on a Wormhole device, the host emulator's ``generic_op`` on
emulator tensors. Plans and descriptors are kept in the device's cache (:mod:`ttflashdecode.device_cache`): a decode
loop that passes the same cur_pos / page-table tensors every step plans and builds its program once (see
:func:`program_cache_stats`); positions and page tables are read by the kernels at run time. A call that repeats one
that passed (same arguments, device tensors at the same addresses with the same properties) skips validation and
planning altogether and launches that call's programs again (:mod:`ttflashdecode.ops.decode.fast_path`); such a call can
also be captured in a trace (``ttnn.begin_trace_capture``, or the emulator's): it reads and uploads nothing from the
host.

Meshes (N300, T3K; a ttnn ``MeshDevice`` or ``ttemu.open_mesh_device()``): every op takes mesh
tensors whose heads are sharded over the chips (q on dim 2, K/V on dim 1, e.g. ``mesh_mapper=ShardTensorToMesh(mesh,
dim=2)``); cur_pos and page tables are replicated or per chip (host values are uploaded to every chip). A mesh
tensor's shape is one chip's shard, so the call is validated and planned once, for one chip's share of the heads, and
every chip runs that plan over its own shards (``ttnn.MeshProgramDescriptor`` through ``generic_op``). The output is a
mesh tensor holding each chip's heads: ``ConcatMeshToTensor(mesh, dim=2)`` joins it.

Values inside device tensors are the kernels' contract, not checked per call: a ``cur_pos_tensor`` entry out of
range (below -1, at or past kv_len, or in ``[0, q_len - 1)``) or a page-table entry outside ``[0, num_blocks)``
that a user needs makes that user's output rows exactly zero, and the kernels never read outside a tensor.
``validate_device_tensors=True`` reads both back and raises instead (one read back per call: for debugging, not for
a decode loop).
"""

from __future__ import annotations

from ttflashdecode.device_cache import cache_stats, clear_program_cache, program_cache_stats
from ttflashdecode.ops.decode.pipeline import DecodeResult, run_request
from ttflashdecode.ops.decode.request import DecodeRequest
from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper

# A request made from its fields in order, as NamedTuple._make makes one. Every decode step of every layer builds a
# request, and the generated ``DecodeRequest(...)`` parses 24 keywords one by one: ~3 us against ~0.6 us for the
# tuple (tests/runtime/host_cost.py's ``request_alone`` row). Each function below lists every field, in field order,
# its own parameter or the fixed value; tests/test_decode_request.py reads each field back.
_new_request = tuple.__new__

# ---- the op -------------------------------------------------------------------------------------------------


def scaled_dot_product_attention_decode(
    q,
    k,
    v,
    *,
    is_causal: bool = True,
    attn_mask=None,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink=None,
    share_cache: bool = False,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
    dtype=None,
    validate_device_tensors: bool = False,
    return_stats: bool = False,
):
    """Decode attention: a few new query tokens per user against a KV cache.

    q: ``[q_len, b, n_q_heads, head_dim]`` bfloat16, tile layout, DRAM. ``q_len`` is 1 for plain decode and up
        to 8 for speculative decoding; query ``i`` of user ``b`` sits at position ``cur_pos[b] - q_len + 1 + i``.
    k, v: ``[b, n_kv_heads, kv_len, head_dim]`` bfloat16 / bfloat8_b / bfloat4_b, tile layout, DRAM; v's head dim
        may differ from k's (MLA). ``n_q_heads`` must be a multiple of ``n_kv_heads`` (MHA, GQA, MQA).
    is_causal: each query attends to positions up to its own, given by exactly one of ``cur_pos`` (ints, one per
        user) or ``cur_pos_tensor`` (int32 ``[b]``: a device tensor read by the kernels at run time, so one program
        serves every decode step; or a torch tensor, validated and uploaded). ``-1`` skips a user: its rows are 0.
    attn_mask: with ``is_causal=False``, an additive bfloat16 or bfloat8_b mask
        ``[b, 1 or n_q_heads, q_len, kv_len]`` (tile layout) streamed with K; without it all ``kv_len`` positions are
        visible.
    scale: softmax scale, default ``1/sqrt(head_dim)``.
    sliding_window_size: causal only; each query sees only the last W positions up to its own (only those are
        read from DRAM).
    attention_sink: bfloat16 ``[1, n_q_heads]`` tile tensor: one logit per q head that joins the softmax
        denominator (gpt-oss); it is in the scaled-score space (not multiplied by ``scale``).
    share_cache: every user reads user 0's K/V (batched sampling of one prompt); k/v batch may then be 1.
    program_config: ``ProgramConfig``, ``ttnn.SDPAProgramConfig``, a name from ``program_configs/``, None or
        ``"auto"`` (the default: the package's tuned table for the shape, else the fixed rule; a lookup), ``"tune"``
        (chosen at the shape's first call by the emulator's timing model, :mod:`ttflashdecode.tuning`) or a function
        of a :class:`~ttflashdecode.plan.auto.PlanRequest` returning a config.
    compute_kernel_config: ``ttnn.WormholeComputeKernelConfig`` or None (HiFi4, exact exp, bfloat16 DST).
    memory_config: output memory config: ``ttnn.DRAM_MEMORY_CONFIG`` (the default) or L1 height-sharded (ROW_MAJOR
        shards of whole tile rows and the full head dim, e.g. one user's ``[32, v_head_dim]`` rows per core).
    output_tensor: optional preallocated output ``[q_len, b, n_q_heads, v_head_dim]`` (its dtype is the output's).
    dtype: output dtype, ``ttnn.bfloat16`` (default), ``ttnn.float32`` (pair it with ``fp32_dest_acc_en`` to keep
        fp32 precision end to end) or ``ttnn.bfloat8_b`` (DRAM only). Groups write single rows into tiles shared
        with other groups, and a block-float row cannot be written without its tile's neighbours, so a bfloat8_b
        output is written as bfloat16 (float32 with ``fp32_dest_acc_en``) to a staging tensor, which a second
        program packs tile by tile into the output (see :mod:`ttflashdecode.ops.convert.factory`).
    validate_device_tensors: read a device ``cur_pos_tensor`` back before the launch and raise (naming the user and
        the value) unless every entry is -1 or in ``[q_len - 1, kv_len)``. Off by default: a decode loop should not
        pay a read back per step. Without it the kernels' contract applies: a user whose device position is out of
        range (below -1, at or past kv_len, or in ``[0, q_len - 1)``) gets output rows of exactly zero, and nothing
        outside a tensor is read.

    Every tensor argument must live on q's device and be allocated; each argument's type, rank, dtype, layout and
    placement is checked on the host before anything is uploaded, allocated or launched, and an error names the
    argument, the value it got and what was expected.

    return_stats: also return what the call did, as ``(output, DecodeResult)``: its plan and, on the emulator, the
        run's statistics (modelled duration, bytes each tensor moved;
        :class:`~ttflashdecode.ops.decode.pipeline.DecodeResult`).

    Returns the output ``[q_len, b, n_q_heads, v_head_dim]`` tensor on the same backend (with ``return_stats``, the
    pair above).
    """
    # The request built positionally, in DecodeRequest's field order (see _new_request)
    return run_request(
        _new_request(
            DecodeRequest,
            (
                q,
                k,
                v,
                cur_pos_tensor,
                None,  # page_table
                attn_mask,
                attention_sink,
                output_tensor,
                is_causal,
                cur_pos,
                scale,
                sliding_window_size,
                share_cache,
                program_config,
                compute_kernel_config,
                memory_config,
                dtype,
                validate_device_tensors,
                None,  # head_dim_v
                None,  # paged_cache_geometry
                None,  # cache_position_modulo
                0,  # spec_multi_pos_tiles
                False,  # paged
                False,  # v_from_k
            ),
        ),
        return_stats,
    )


def paged_scaled_dot_product_attention_decode(
    q,
    k,
    v,
    page_table_tensor,
    *,
    is_causal: bool = True,
    attn_mask=None,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink=None,
    share_cache: bool = False,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
    dtype=None,
    validate_device_tensors: bool = False,
    paged_cache_geometry=None,
    cache_position_modulo: int | None = None,
    spec_multi_pos_tiles: int = 0,
    return_stats: bool = False,
):
    """Decode attention over a paged KV cache.

    k, v: ``[num_blocks, n_kv_heads, block_size, head_dim]`` (block_size a multiple of 32).
    page_table_tensor: int32 ``[b, max_blocks_per_user]``: position ``p`` of user ``u`` lives in block
        ``page_table[u, p // block_size]`` (row 0 for every user with ``share_cache``, which also allows a 1-row
        table). A torch tensor is checked entry by entry on the host, then uploaded. A device tensor (int32 or
        uint32, ROW_MAJOR, DRAM interleaved) is read by the reader kernel at run time; its entries are not read
        back unless ``validate_device_tensors=True``. The entries a user needs are those of the blocks holding its
        positions ``[window_start, cur_pos]``; entries past them (or before the window) are never read and may hold
        anything. A needed entry outside ``[0, num_blocks)`` makes that user's output rows exactly zero (nothing
        outside K/V is read); with ``validate_device_tensors=True`` it raises instead, naming the entry, the user
        and the value (and a device ``cur_pos_tensor`` is checked as in the non-paged op).
    paged_cache_geometry: a ``ttnn.PagedCacheGeometryOverride(block_size=..., num_kv_heads=...)`` (upstream's): read a
        cache allocated for another layer's shape through this call's view (vLLM's shared KV-cache groups). q's
        head_dim is the view's; every block holds ``num_kv_heads * block_size * head_dim`` elements in both shapes, so
        a block's tiles are re-cut: view head h, position tile t, column tile c is the block's tile
        ``(h * block_size / 32 + t) * head_dim / 32 + c``. Both fields positive, block_size a multiple of 32.
    cache_position_modulo: the paged cache is a ring of this many positions (upstream's, for sliding-window layers
        whose cache holds only the last positions): cur_pos and the window / causal rules stay logical (positions
        grow past the cache) and position ``p`` is read where position ``p % cache_position_modulo`` lives. A
        positive multiple of block_size, at most ``max_blocks_per_user * block_size``, at least
        ``sliding_window_size``; causal only. With a sliding window any int32 position is valid; without one a
        position must stay below cache_position_modulo (past it a query would see ring rows twice: that user's rows
        are zeros, as for any out-of-contract position).
    spec_multi_pos_tiles: Tg > 0 folds Tg speculative candidates into each batch row (upstream's form): q
        ``[1, b, Tg * 32, head_dim]`` with candidate j's q heads in rows ``32 j .. 32 j + 31``, cur_pos ``b * Tg``
        entries (candidate j of batch row r attends ``[0, cur_pos[r * Tg + j]]``), the page table one row per batch
        row; the output is ``[1, b, Tg * 32, head_dim]``. One kv head, causal, no sliding window, no attn_mask, an
        interleaved q. A batch row's candidates are one group: each K/V chunk of the row is read once for all of them,
        each candidate's rows masked at its own bound; a candidate at -1 gets zero rows (upstream skips a
        batch row whose last candidate is -1 and expects positions ascending within a row; any order works here).
    Every other argument is as in :func:`scaled_dot_product_attention_decode`; kv_len is
    ``max_blocks_per_user * block_size``.
    """
    # The request built positionally, in DecodeRequest's field order (see _new_request)
    return run_request(
        _new_request(
            DecodeRequest,
            (
                q,
                k,
                v,
                cur_pos_tensor,
                page_table_tensor,  # page_table
                attn_mask,
                attention_sink,
                output_tensor,
                is_causal,
                cur_pos,
                scale,
                sliding_window_size,
                share_cache,
                program_config,
                compute_kernel_config,
                memory_config,
                dtype,
                validate_device_tensors,
                None,  # head_dim_v
                paged_cache_geometry,
                cache_position_modulo,
                spec_multi_pos_tiles,
                True,  # paged
                False,  # v_from_k
            ),
        ),
        return_stats,
    )


def flash_multi_latent_attention_decode(
    q,
    k,
    *,
    head_dim_v: int,
    is_causal: bool = True,
    attn_mask=None,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink=None,
    share_cache: bool = False,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
    dtype=None,
    validate_device_tensors: bool = False,
    return_stats: bool = False,
):
    """Multi-latent attention decode (DeepSeek MLA): V is the first ``head_dim_v`` columns of K.

    k: the latent cache ``[b, n_kv_heads (1 for DeepSeek), kv_len, head_dim]`` (head_dim 576 = 512 latent + 64 rope).
    The cache is read once: the reader copies each chunk's V columns out of the K rows it already holds in L1, so
    DRAM traffic is that of K alone (576 columns per position, not 576 + 512). K is therefore never split into
    head-dim blocks. Every other argument is as in :func:`scaled_dot_product_attention_decode`; the output is
    ``[q_len, b, n_q_heads, head_dim_v]``.
    """
    # The request built positionally, in DecodeRequest's field order (see _new_request)
    return run_request(
        _new_request(
            DecodeRequest,
            (
                q,
                k,
                None,  # v
                cur_pos_tensor,
                None,  # page_table
                attn_mask,
                attention_sink,
                output_tensor,
                is_causal,
                cur_pos,
                scale,
                sliding_window_size,
                share_cache,
                program_config,
                compute_kernel_config,
                memory_config,
                dtype,
                validate_device_tensors,
                head_dim_v,
                None,  # paged_cache_geometry
                None,  # cache_position_modulo
                0,  # spec_multi_pos_tiles
                False,  # paged
                True,  # v_from_k
            ),
        ),
        return_stats,
    )


def paged_flash_multi_latent_attention_decode(
    q,
    k,
    page_table_tensor,
    *,
    head_dim_v: int,
    is_causal: bool = True,
    attn_mask=None,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink=None,
    share_cache: bool = False,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
    dtype=None,
    validate_device_tensors: bool = False,
    return_stats: bool = False,
):
    """:func:`flash_multi_latent_attention_decode` over a paged latent cache ``[num_blocks, n_kv_heads, block_size,
    head_dim]`` with ``page_table_tensor`` as in :func:`paged_scaled_dot_product_attention_decode`."""
    # The request built positionally, in DecodeRequest's field order (see _new_request)
    return run_request(
        _new_request(
            DecodeRequest,
            (
                q,
                k,
                None,  # v
                cur_pos_tensor,
                page_table_tensor,  # page_table
                attn_mask,
                attention_sink,
                output_tensor,
                is_causal,
                cur_pos,
                scale,
                sliding_window_size,
                share_cache,
                program_config,
                compute_kernel_config,
                memory_config,
                dtype,
                validate_device_tensors,
                head_dim_v,
                None,  # paged_cache_geometry
                None,  # cache_position_modulo
                0,  # spec_multi_pos_tiles
                True,  # paged
                True,  # v_from_k
            ),
        ),
        return_stats,
    )


__all__ = [
    "scaled_dot_product_attention_decode",
    "flash_multi_latent_attention_decode",
    "paged_flash_multi_latent_attention_decode",
    "paged_scaled_dot_product_attention_decode",
    "FlashDecodeWrapper",
    "DecodeResult",
    "program_cache_stats",
    "cache_stats",
    "clear_program_cache",
]
