"""Validation of a decode call, before anything touches a device.

:func:`check_call` checks every argument of a call (ranks, shapes, dtypes, layouts, placement, positions, page
tables, masks, sinks, outputs) and returns a :class:`DecodeCall`: the call's :class:`~ttflashdecode.plan.DecodeShapes`
and what still has to be uploaded. Each error names the argument, the value it got and what was expected.

Every device tensor argument (q, k, v, cur_pos_tensor, page_table_tensor, attn_mask, attention_sink, output_tensor)
is checked for its device (q's, the very same object), that it is still allocated, its rank, dtype, layout and
memory placement (:mod:`ttflashdecode.checks`: the checks every op shares).

The values *inside* device tensors (cur_pos_tensor, a device page table) are not read here: that costs a read back
per call. :func:`check_device_positions` and :func:`check_device_page_table` check them once the op has read them back
(``validate_device_tensors=True``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ttflashdecode.backend import import_ttnn
from ttflashdecode.checks import (
    KV_DTYPES,
    as_int,
    as_int32,
    check_bool,
    check_device_tensor,
    check_height_shards,
    check_page_table,
    check_ring,
    check_scale,
    check_sliding_window,
    dtype_name,
    dtype_name_of,
    host_int_values,
    int_list,
    layout_name,
    padded_rows,
)
from ttflashdecode.device_arch import chip_facts
from ttflashdecode.plan import DecodeShapes, window_start

OUT_DTYPES = ("bfloat16", "float32", "bfloat8_b")
BLOCK_FLOAT_OUT_DTYPES = ("bfloat8_b",)  # written through a staging tensor and the tile convert program
MAX_Q_LEN = 8  # speculative decoding: a few draft tokens per user


@dataclass(frozen=True)
class DecodeCall:
    """A validated call. Host positions / page tables are validated values still to be uploaded as int32."""

    shapes: DecodeShapes  # out_dtype: what the decode program writes (a block-float output's staging dtype)
    out_shape: tuple[int, int, int, int]
    out_dtype: str  # the output's dtype
    memory_config: object  # the output's memory config (the output_tensor's when one is given)
    positions: list[int] | None  # host cur_pos to upload; None when cur_pos_tensor is a device tensor
    page_table_rows: list[list[int]] | None  # host page table to upload
    scale: float | None  # the softmax scale as a Python float (None: 1/sqrt(head_dim))
    num_blocks: int | None  # paged: blocks in the K/V cache (valid page-table entries are [0, num_blocks))
    out_layout: str = "TILE"  # the output's layout: Q's (row-major Q gives a row-major output, as upstream)


# ---- scalars ------------------------------------------------------------------------------------------------


def check_out_dtype(dtype, output_tensor) -> str | None:
    """The requested output dtype's name (None: not given). Only ttnn.DataType values are accepted, like every other
    ttnn argument: a string would be one more spelling to keep consistent with ttnn's."""
    if dtype is None:
        return None
    if not isinstance(dtype, import_ttnn().DataType):
        raise TypeError(
            f"dtype={dtype!r} ({type(dtype).__name__}): expected a ttnn.DataType "
            f"({', '.join('ttnn.' + d for d in OUT_DTYPES)}) or None"
        )
    if dtype_name_of(dtype) not in OUT_DTYPES:
        raise ValueError(f"dtype={dtype}: expected one of {', '.join('ttnn.' + d for d in OUT_DTYPES)}")
    if output_tensor is not None:
        raise ValueError(
            f"dtype={dtype}: must be None when output_tensor is given (the output_tensor's dtype is the output's)"
        )
    return dtype_name_of(dtype)


# ---- integer lists ------------------------------------------------------------------------------------------


# ---- the call -----------------------------------------------------------------------------------------------


def decode_dtype(out_dtype: str, fp32_dest_acc_en: bool) -> str:
    """The dtype the decode program writes: the output's, or for a block-float output its staging dtype."""
    if out_dtype in BLOCK_FLOAT_OUT_DTYPES:
        return "float32" if fp32_dest_acc_en else "bfloat16"
    return out_dtype


def check_call(
    q,
    k,
    v,
    page_table,
    *,
    is_causal,
    attn_mask,
    cur_pos,
    cur_pos_tensor,
    scale,
    sliding_window_size,
    attention_sink,
    share_cache,
    memory_config,
    output_tensor,
    dtype,
    fp32_dest_acc_en,
    device,
    grid,
    head_dim_v=None,
    paged_cache_geometry=None,
    cache_position_modulo=None,
    spec_multi_pos_tiles=0,
) -> DecodeCall:
    """Checks a call of the op (``device``: q's; ``grid``: its compute grid); raises before any device work.

    ``head_dim_v`` (multi-latent attention): ``v`` is None and V is the first ``head_dim_v`` columns of K.
    ``paged_cache_geometry``, ``cache_position_modulo``, ``spec_multi_pos_tiles``: upstream's paged-only arguments
    (see :func:`check_paged_cache_geometry`, :func:`check_cache_position_modulo`, :func:`check_spec_multi_pos`)."""
    paged = page_table is not None
    is_causal = check_bool("is_causal", is_causal)
    share_cache = check_bool("share_cache", share_cache)
    q_len, batch, n_q_heads, head_dim = check_q(q, device, grid)
    q_shape = (q_len, batch, n_q_heads, head_dim)
    spec_tiles = check_spec_multi_pos_tiles(spec_multi_pos_tiles, paged, head_dim_v)
    k_shape = check_device_tensor("k", k, 4, KV_DTYPES, device=device)
    kv_batch, n_kv_heads, kv_rows, k_head_dim = k_shape
    if head_dim_v is None:
        v_shape = check_device_tensor("v", v, 4, KV_DTYPES, device=device)
        if v_shape[:3] != k_shape[:3]:
            raise ValueError(f"v: shape {list(v_shape)} must match k's first three dims {list(k_shape[:3])}")
        v_head_dim = v_shape[3]
    else:
        v_head_dim = check_head_dim_v(head_dim_v, k_head_dim)
    if paged_cache_geometry is not None:
        # The cache is read through this call's view: its blocks hold the same tiles, re-cut (Q drives head_dim).
        n_kv_heads, kv_rows = check_paged_cache_geometry(
            paged_cache_geometry, paged, head_dim_v, k_shape, v_shape if head_dim_v is None else None, head_dim
        )
        k_head_dim = v_head_dim = head_dim
    if spec_tiles:
        batch, n_q_heads = check_spec_multi_pos(
            spec_tiles, q, q_shape, n_kv_heads, is_causal, sliding_window_size, attn_mask
        )
    if not 1 <= q_len <= MAX_Q_LEN:
        raise ValueError(f"q: q_len (dim 0) = {q_len}: expected 1..{MAX_Q_LEN} query tokens per user")
    if k_head_dim != head_dim:
        raise ValueError(f"k: head_dim {k_head_dim} differs from q's head_dim {head_dim}")
    for name, d in (("q", head_dim), ("v", v_head_dim)):
        if d % 32:
            raise ValueError(f"{name}: head_dim {d}: expected a multiple of 32 (K and V are read as whole tiles)")
    if n_q_heads % n_kv_heads:
        raise ValueError(f"q: n_q_heads={n_q_heads} is not a multiple of k's n_kv_heads={n_kv_heads}")
    if not paged and kv_batch != batch and not (share_cache and kv_batch == 1):
        raise ValueError(f"k: batch {kv_batch} differs from q's batch {batch} (and share_cache=False)")
    scale = check_scale(scale)
    window = check_sliding_window(sliding_window_size, is_causal)
    requested_dtype = check_out_dtype(dtype, output_tensor)

    block_size = max_blocks = page_table_rows = num_blocks = None
    if paged:
        num_blocks, block_size = kv_batch, kv_rows
        if block_size % 32:
            raise ValueError(f"k: block_size (dim 2) = {block_size}: expected a multiple of 32")
        table_rows = batch // max(spec_tiles, 1)  # spec_multi_pos_tiles: one row per batch row of Q
        max_blocks, page_table_rows = check_page_table(
            "page_table_tensor", page_table, table_rows, num_blocks, device, share_cache=share_cache
        )
        kv_len = logical_kv_len = block_size * max_blocks
    else:
        # Any cache length: a TILE cache of 1000 positions stores 1024 rows, and the kernels never attend the padding.
        logical_kv_len, kv_len = kv_rows, padded_rows(kv_rows)

    ring_len = check_cache_position_modulo(cache_position_modulo, paged, is_causal, block_size, max_blocks, window)
    # THE position contract's upper bound (DecodeShapes.position_limit): a ring lets positions grow past the cache.
    position_limit = logical_kv_len if not ring_len else (2**31 - 1 if window else ring_len)
    positions = _check_positions(
        is_causal,
        attn_mask,
        cur_pos,
        cur_pos_tensor,
        batch,
        q_len,
        position_limit,
        device,
        limit_name="kv_len" if not ring_len else ("int32 positions" if window else "cache_position_modulo"),
    )
    mask_heads = _check_attn_mask(attn_mask, batch, n_q_heads, q_len, logical_kv_len, kv_len, device)
    if attention_sink is not None:
        _check_attention_sink(attention_sink, n_q_heads, device)

    out_shape = (q_len, batch, n_q_heads, v_head_dim)
    if spec_tiles:  # upstream's [1, b, spec_multi_pos_tiles * 32, head_dim]: the same tiles as the candidates' rows
        out_shape = (q_len, batch // spec_tiles, n_q_heads * spec_tiles, v_head_dim)
    if memory_config is not None and not isinstance(memory_config, import_ttnn().MemoryConfig):
        raise TypeError(
            f"memory_config={memory_config!r} ({type(memory_config).__name__}): expected a ttnn.MemoryConfig "
            "(ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG or an L1 HEIGHT_SHARDED config) or None"
        )
    if output_tensor is None:
        out_dtype = requested_dtype or "bfloat16"
        out_layout = layout_name(q)
        memory_config = check_output_memory_config(memory_config, out_shape, grid, out_dtype, out_layout)
    else:
        if memory_config is not None:
            raise ValueError("memory_config: must be None when output_tensor is given (its memory config is used)")
        got = check_device_tensor("output_tensor", output_tensor, 4, OUT_DTYPES, layout=None, dram=False, device=device)
        if got != out_shape:
            raise ValueError(f"output_tensor: expected shape {list(out_shape)}, got {list(got)}")
        out_dtype, out_layout = dtype_name(output_tensor), layout_name(output_tensor)
        memory_config = output_tensor.memory_config()
        check_output_memory_config(memory_config, out_shape, grid, out_dtype, out_layout)

    shapes = DecodeShapes(
        batch=batch,
        n_q_heads=n_q_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        kv_len=kv_len,
        logical_kv_len=logical_kv_len,
        v_from_k=head_dim_v is not None,
        q_len=q_len,
        k_dtype=dtype_name(k),
        v_dtype=dtype_name(k if v is None else v),
        block_size=block_size,
        max_blocks_per_user=max_blocks,
        sliding_window_size=window,
        share_cache=share_cache,
        attn_mask_heads=mask_heads,
        is_causal=is_causal,
        attn_mask_dtype=dtype_name(attn_mask) if attn_mask is not None else "bfloat16",
        has_attention_sink=attention_sink is not None,
        out_dtype=decode_dtype(out_dtype, fp32_dest_acc_en),
        ring_len=ring_len,
        users_per_page_row=max(spec_tiles, 1),
        dram_alignment=chip_facts(device).dram_alignment,
    )
    return DecodeCall(
        shapes, out_shape, out_dtype, memory_config, positions, page_table_rows, scale, num_blocks, out_layout
    )


Q_FORMS = "a TILE or ROW_MAJOR tensor, DRAM or L1 interleaved, or L1 HEIGHT_SHARDED"


def check_q(q, device, grid) -> tuple[int, int, int, int]:
    """q's ``(q_len, b, n_q_heads, head_dim)``: bfloat16, TILE or ROW_MAJOR, DRAM or L1 interleaved or L1
    height-sharded (the form nlp_create_qkv_heads_decode / rotary_embedding_llama hand over: one user's padded head
    rows per core), full-width shards in ROW_MAJOR orientation on cores of the device's grid."""
    ttnn = import_ttnn()
    shape = check_device_tensor("q", q, 4, ("bfloat16",), layout=None, dram=False, device=device)
    mem = q.memory_config()
    if not mem.is_sharded():
        if mem.memory_layout != ttnn.TensorMemoryLayout.INTERLEAVED:
            raise ValueError(f"q: memory config {mem}: expected {Q_FORMS}")
        return shape
    if mem.memory_layout != ttnn.TensorMemoryLayout.HEIGHT_SHARDED or mem.buffer_type != ttnn.BufferType.L1:
        raise ValueError(f"q: memory config {mem}: expected {Q_FORMS}")
    tiled = layout_name(q) == "TILE"
    check_height_shards("q", mem.shard_spec, shape, tiled, grid)
    return shape


def check_q_len(q_len) -> int:
    """Query tokens per user (plan's ``q_len``; a call's is q's dim 0): 1..MAX_Q_LEN."""
    value = as_int(q_len)
    if value is None:
        raise TypeError(f"q_len={q_len!r} ({type(q_len).__name__}): expected an int in 1..{MAX_Q_LEN}")
    if not 1 <= value <= MAX_Q_LEN:
        raise ValueError(f"q_len={value}: expected 1..{MAX_Q_LEN} query tokens per user")
    return value


def require_page_table(page_table_tensor) -> None:
    """The paged ops' page table must be given: without it the call would be read as a contiguous one, and the error
    would be about K's batch (its number of blocks)."""
    if page_table_tensor is None:
        raise TypeError(
            "page_table_tensor=None: the paged op needs a page table (int32 [b, max_blocks_per_user], a torch or "
            "device tensor); for a contiguous cache call the non-paged op"
        )


def require_head_dim_v(head_dim_v) -> None:
    """The MLA ops' V width must be given as an int (None would read the call as one with a separate v)."""
    if as_int(head_dim_v) is None:
        raise TypeError(
            f"head_dim_v={head_dim_v!r} ({type(head_dim_v).__name__}): expected an int (V is the first head_dim_v "
            "columns of K, e.g. 512 of DeepSeek's 576)"
        )


def check_head_dim_v(head_dim_v, head_dim: int) -> int:
    """MLA's V width: a multiple of 32 of at most K's head_dim (V is K's first head_dim_v columns)."""
    value = as_int(head_dim_v)
    if value is None:
        raise TypeError(f"head_dim_v={head_dim_v!r} ({type(head_dim_v).__name__}): expected an int")
    if not (0 < value <= head_dim and value % 32 == 0):
        raise ValueError(
            f"head_dim_v={value}: expected a positive multiple of 32 of at most k's head_dim {head_dim} (V is the "
            "first head_dim_v columns of K)"
        )
    return value


def _check_attn_mask(attn_mask, batch, n_q_heads, q_len, logical_kv_len, kv_len, device) -> int:
    """The mask's heads (0: no mask). Ours is ``[b, 1 or n_q_heads, q_len, kv_len]``; upstream's decode mask
    ``[1, b, n_q_heads, kv_len]`` or ``[b, 1, n_q_heads, kv_len]`` (q_len 1: its rows are the heads) is taken too.
    kv_len may be the cache's logical length or its tile-padded one; positions past the logical length are hidden
    whatever the mask holds."""
    if attn_mask is None:
        return 0
    m_shape = check_device_tensor("attn_mask", attn_mask, 4, ("bfloat16", "bfloat8_b"), device=device)
    lengths = (logical_kv_len, kv_len)
    ours = m_shape[0] == batch and m_shape[1] in (1, n_q_heads) and m_shape[2] == q_len and m_shape[3] in lengths
    # Upstream documents [1, b, heads, S] and validates only dims 2 and 3; [b, 1, heads, S] is the same tiles.
    upstream = q_len == 1 and m_shape[:3] in ((batch, 1, n_q_heads), (1, batch, n_q_heads)) and m_shape[3] in lengths
    if not (ours or upstream):
        upstream_form = (
            f" (upstream's [1, {batch}, {n_q_heads}, {logical_kv_len}] or [{batch}, 1, {n_q_heads}, {logical_kv_len}] "
            "is taken too)"
            if q_len == 1
            else ""
        )
        raise ValueError(
            f"attn_mask: expected shape [{batch}, 1 or {n_q_heads}, {q_len}, {logical_kv_len}], got {list(m_shape)}"
            f"{upstream_form}"
        )
    return n_q_heads if upstream else m_shape[1]


def _check_attention_sink(attention_sink, n_q_heads: int, device) -> None:
    """Ours: ``[1, n_q_heads]``, one logit per head in scaled-score space. Upstream's: ``[n_q_heads (or padded to
    32), 32]``, head h's value at (h, 0) in unscaled score space (the kernels multiply it by the scale)."""
    s_shape = check_device_tensor("attention_sink", attention_sink, 2, ("bfloat16",), device=device)
    if s_shape != (1, n_q_heads) and not (s_shape[0] in (n_q_heads, padded_rows(n_q_heads)) and s_shape[1] == 32):
        raise ValueError(
            f"attention_sink: expected shape [1, {n_q_heads}], got {list(s_shape)} (one scaled logit per q head; "
            f"upstream's [{n_q_heads} or {padded_rows(n_q_heads)}, 32], head h's unscaled value at (h, 0), is taken "
            "too)"
        )


def _check_positions(
    is_causal, attn_mask, cur_pos, cur_pos_tensor, batch, q_len, kv_len, device, limit_name: str = "kv_len"
) -> list[int] | None:
    """Host positions to upload (one per user), or None when ``cur_pos_tensor`` is a device tensor."""
    if is_causal:
        if attn_mask is not None:
            raise ValueError("attn_mask: must be None when is_causal=True (causality comes from cur_pos)")
        if (cur_pos is None) == (cur_pos_tensor is None):
            raise ValueError("cur_pos, cur_pos_tensor: exactly one must be given when is_causal=True")
    elif cur_pos is not None or cur_pos_tensor is not None:
        raise ValueError("cur_pos, cur_pos_tensor: must be None when is_causal=False")
    if not is_causal:
        return [kv_len - 1] * batch  # every query sees the whole cache
    if cur_pos_tensor is not None and not isinstance(cur_pos_tensor, (torch.Tensor, np.ndarray)):
        # The reader reads one row-major page of b int32 positions from DRAM.
        shape = check_device_tensor(
            "cur_pos_tensor", cur_pos_tensor, 1, ("int32", "uint32"), layout="ROW_MAJOR", device=device
        )
        if shape != (batch,):
            raise ValueError(f"cur_pos_tensor: expected shape [{batch}] (one position per user), got {list(shape)}")
        return None
    name, source = ("cur_pos", cur_pos) if cur_pos_tensor is None else ("cur_pos_tensor", cur_pos_tensor)
    values = host_int_values(name, source, batch, "one position per user")
    positions = int_list(name, values, batch, -1, kv_len, f"{limit_name}={kv_len}; -1 skips a user")
    # The first query token must sit at a position >= 0.
    low = -1 if q_len == 1 else q_len - 1
    for b, p in enumerate(positions):
        if p != -1 and p < low:
            raise ValueError(f"{name}[{b}]={p}: with q_len={q_len} the first query would sit at {p - q_len + 1} < 0")
    return positions


# ---- values inside device tensors (validate_device_tensors=True) ------------------------------------------


def check_device_positions(values, shapes: DecodeShapes) -> list[int]:
    """cur_pos_tensor as read back from the device: each entry -1 (skip the user) or in ``[q_len - 1, kv_len)``.
    Returns the positions as signed ints. Without this check the kernels write zero rows for such a user."""
    low, limit = shapes.q_len - 1, shapes.position_limit
    positions = [as_int32(v) for v in values]
    for b, p in enumerate(positions):
        if p != -1 and not low <= p < limit:
            raise ValueError(
                f"cur_pos_tensor[{b}]={p} (read back from the device for user {b}): expected -1 (skip the user) or a "
                f"position in [{low}, {limit}) (q_len={shapes.q_len}, kv_len={shapes.kv_len}"
                f"{f', cache_position_modulo={shapes.ring_len}' if shapes.ring_len else ''})"
            )
    return positions


def check_device_page_table(rows, positions: list[int], shapes: DecodeShapes, num_blocks: int) -> None:
    """A device page table as read back: every entry a user needs (the blocks holding ``[window_start, cur_pos]``
    of its row, row 0 for all users with share_cache) is a block in ``[0, num_blocks)``. Entries no user needs
    (past a user's position, before its window, rows of skipped users) may hold anything: the reader never reads
    them."""
    for b, p in enumerate(positions):
        if p == -1:
            continue
        row = 0 if shapes.share_cache else b // shapes.users_per_page_row
        first_pos = window_start(p, shapes.q_len, shapes.sliding_window_size)
        first, last = first_pos // shapes.block_size, p // shapes.block_size
        ring_blocks = shapes.ring_len // shapes.block_size
        for block in range(first, last + 1):
            j = block % ring_blocks if ring_blocks else block  # a ring cache wraps logical blocks onto its slots
            entry = as_int32(rows[row][j])
            if not 0 <= entry < num_blocks:
                raise ValueError(
                    f"page_table_tensor[{row}, {j}]={entry} (read back from the device): expected a block in "
                    f"[0, {num_blocks}) (num_blocks={num_blocks}); user {b} reads entries {first}..{last} of row {row} "
                    f"for its positions [{first_pos}, {p}]"
                )


def check_output_memory_config(
    memory_config, out_shape: tuple[int, ...], grid: tuple[int, int], out_dtype: str, out_layout: str = "TILE"
):
    """DRAM interleaved (the default), L1 interleaved, or L1 height-sharded (full-width shards of whole tile rows,
    or of whole rows for a ROW_MAJOR output, ROW_MAJOR orientation, on the device's grid). A bfloat8_b output is TILE
    and DRAM interleaved (see the op's ``dtype``). Returns the config to allocate with."""
    ttnn = import_ttnn()
    if memory_config is None:
        memory_config = ttnn.DRAM_MEMORY_CONFIG
    dram = memory_config.buffer_type == ttnn.BufferType.DRAM
    interleaved = memory_config.memory_layout == ttnn.TensorMemoryLayout.INTERLEAVED
    if out_dtype in BLOCK_FLOAT_OUT_DTYPES and not (dram and interleaved and out_layout == "TILE"):
        raise ValueError(
            f"memory_config={memory_config}: a {out_dtype} output must be TILE and DRAM interleaved "
            "(ttnn.DRAM_MEMORY_CONFIG); use a bfloat16 or float32 output in L1 or row-major"
        )
    if interleaved:
        return memory_config
    expected = "ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG or an L1 HEIGHT_SHARDED config"
    if memory_config.memory_layout != ttnn.TensorMemoryLayout.HEIGHT_SHARDED or dram:
        raise ValueError(f"memory_config={memory_config}: expected {expected}")
    check_height_shards("memory_config", memory_config.shard_spec, out_shape, out_layout == "TILE", grid)
    return memory_config


# ---- meshes (N300, T3K): heads split over the chips ------------------------------------------------------------


def _topology_axes(tensor) -> list[tuple[int, int | None]] | None:
    """``(chips, tensor dim split or None)`` per axis of a mesh tensor's ``tensor_topology()`` distribution (ttnn's, or
    the emulated mesh's: the same ``ttnn.TensorTopology``); None for a tensor without a topology (a host tensor)."""
    topology = getattr(tensor, "tensor_topology", None)
    if not callable(topology):
        return None
    ttnn = import_ttnn()
    topo = topology()
    rank = len(tensor.shape)
    return [
        (int(size), int(p.dim) % rank if isinstance(p, ttnn.PlacementShard) else None)
        for size, p in zip(list(topo.distribution_shape()), topo.placements())
    ]


def mesh_split(tensor) -> dict[int, int] | None:
    """``{tensor dim: chips it is split over}``; ``{}`` for a tensor replicated on every chip, None for a tensor
    without a topology (a host tensor)."""
    axes = _topology_axes(tensor)
    if axes is None:
        return None
    split: dict[int, int] = {}
    for size, dim in axes:
        if dim is not None and size > 1:
            split[dim] = split.get(dim, 1) * size
    return split


def _describe_split(split: dict[int, int]) -> str:
    if not split:
        return "replicated on every chip"
    return "sharded " + " and ".join(f"on dim {d} over {n} chips" for d, n in sorted(split.items()))


def _check_heads_split(
    name: str, tensor, heads_dim: int, heads_name: str, num_chips: int, mesh_shape, single_head_replicated: bool = False
) -> None:
    """``tensor``'s heads (dim ``heads_dim``) must be split over all ``num_chips`` chips, nothing else split; with
    ``single_head_replicated`` a tensor of one head may be replicated instead (MQA / MLA: every chip's q heads share
    the one kv head)."""
    split = mesh_split(tensor)
    if split is None or split == {heads_dim: num_chips}:
        return  # a host tensor is refused by check_call, naming the argument
    per_chip = int(tensor.shape[heads_dim])
    if single_head_replicated and not split and per_chip == 1:
        return
    total = per_chip * split.get(heads_dim, 1)
    divides = "" if total % num_chips == 0 else f", which needs {heads_name} a multiple of {num_chips}; {total} is not"
    raise ValueError(
        f"{name}: {_describe_split(split)} of the mesh {tuple(mesh_shape)} ({heads_name}={total}, {per_chip} per "
        f"chip); expected its heads (dim {heads_dim}) sharded over all {num_chips} chips: "
        f"mesh_mapper=ShardTensorToMesh(mesh, dim={heads_dim}){divides}"
    )


def mesh_axis_dims(tensor, mesh_shape) -> tuple | None:
    """Per mesh axis (rows, columns): the tensor dim split along that axis, None where it is replicated (and on an
    axis of one chip); None for a tensor without a topology (a host tensor). A 1-D split over every chip
    (``ShardTensorToMesh``: chip (r, c) takes piece r * cols + c) is the same as that dim split along both axes."""
    axes = _topology_axes(tensor)
    if axes is None:
        return None
    dims = [dim for _, dim in axes]
    if len(dims) == 1:
        dims = dims * 2
    return tuple(d if int(n) > 1 else None for d, n in zip(dims, mesh_shape))


_AXIS_NAMES = ("rows", "columns")


def _axis_dim(tensor, mesh_shape, axis: int) -> int | None:
    """The dim of ``tensor`` split along mesh axis ``axis`` (None: replicated there, or a host tensor)."""
    return (mesh_axis_dims(tensor, mesh_shape) or (None, None))[axis]


def _check_users_split(q_axes, k, v, cur_pos, cur_pos_tensor, page_table, attn_mask, attention_sink, mesh_shape):
    """q's users (dim 1) split along one mesh axis, its heads (dim 2) along the other (a Galaxy's Llama-3.1-70B split:
    kv heads over the 8 rows, users over the 4 columns): each chip runs the program for its users and heads, so the
    caches, positions and page tables must be split the same way along each axis."""
    where = f"the mesh {tuple(mesh_shape)}"
    for axis, q_dim in enumerate(q_axes):
        if mesh_shape[axis] == 1:
            continue
        along = f"along the mesh's {mesh_shape[axis]} {_AXIS_NAMES[axis]}"
        if q_dim not in (1, 2):
            raise ValueError(
                f"q: {'replicated' if q_dim is None else f'dim {q_dim} split'} {along} of {where}, while another "
                "axis splits its users (dim 1); expected its heads (dim 2) or its users (dim 1) split along every axis "
                "of more than one chip (ShardTensor2dMesh(mesh, mesh_shape, dims=(2, 1)) on a Galaxy)"
            )
        users = q_dim == 1
        for name, t in (("k", k), ("v", v)):
            if t is None:
                continue
            t_dim = _axis_dim(t, mesh_shape, axis)
            if users:
                ok = t_dim == 0 or (t_dim is None and page_table is not None)
                expected = "its blocks or users (dim 0) split, or (paged) replicated"
            else:
                ok = t_dim == 1 or (t_dim is None and int(t.shape[1]) == 1)
                expected = "its kv heads (dim 1) split with q's heads (one kv head may be replicated)"
            if not ok:
                state = "replicated" if t_dim is None else f"dim {t_dim} split"
                split = "users" if users else "heads"
                raise ValueError(f"{name}: {state} {along} of {where}, which split q's {split}; expected {expected}")
        if users:
            if cur_pos is not None:
                raise ValueError(
                    f"cur_pos: host positions are the same on every chip, but q's users are split {along} of {where}; "
                    "pass cur_pos_tensor, a device int32 tensor with its users (dim 0) split the same way"
                )
            for name, t in (("cur_pos_tensor", cur_pos_tensor), ("page_table_tensor", page_table)):
                t_dim = None if t is None else _axis_dim(t, mesh_shape, axis)
                if t is not None and t_dim != 0:
                    raise ValueError(
                        f"{name}: {'replicated' if t_dim is None else f'dim {t_dim} split'} {along} of {where}, which "
                        "split q's users; expected its users (dim 0) split the same way (ShardTensor2dMesh with the "
                        "users' mesh axis on dim 0)"
                    )
            if attn_mask is not None:
                raise ValueError(
                    f"attn_mask: not supported while q's users are split {along} of {where}; split only heads over "
                    "the mesh (ShardTensorToMesh(mesh, dim=2)) to pass a mask"
                )
        if attention_sink is not None and hasattr(attention_sink, "shape"):
            s_dim = _axis_dim(attention_sink, mesh_shape, axis)
            heads_dim = 1 if int(attention_sink.shape[0]) == 1 else 0  # [1, n_q_heads] or upstream's [n_q_heads, 32]
            if s_dim != (None if users else heads_dim):
                raise ValueError(
                    f"attention_sink: {'replicated' if s_dim is None else f'dim {s_dim} split'} {along} of {where}; "
                    f"expected {'replicated (every user has the same sinks)' if users else 'split with q heads'}"
                )


def check_mesh_call(
    q,
    k,
    v,
    attn_mask,
    attention_sink,
    *,
    num_chips: int,
    mesh_shape,
    cur_pos=None,
    cur_pos_tensor=None,
    page_table=None,
) -> None:
    """A call on a mesh of ``num_chips`` > 1 chips: every chip runs the program for its share of the heads, so q's
    heads (dim 2) and K/V's kv heads (dim 1) must be sharded over all the chips (a cache of one kv head, MQA or MLA's
    latent cache, may instead be replicated: every chip's q heads read it), a mask with per-head rows and the sinks
    likewise; cur_pos and page tables may be replicated or per chip (each chip reads its own copy). Or q's users
    (dim 1) are split along one mesh axis and its heads along the other (:func:`_check_users_split`). Raises
    before anything runs, naming the argument, how it is laid over the mesh and what was expected. (The shapes the
    tensors report are one chip's; :func:`check_call` checks those.)"""
    if num_chips <= 1:
        return
    q_axes = mesh_axis_dims(q, mesh_shape)
    if q_axes is not None and 1 in q_axes:
        _check_users_split(q_axes, k, v, cur_pos, cur_pos_tensor, page_table, attn_mask, attention_sink, mesh_shape)
        return
    _check_heads_split("q", q, 2, "n_q_heads", num_chips, mesh_shape)
    _check_heads_split("k", k, 1, "n_kv_heads", num_chips, mesh_shape, single_head_replicated=True)
    if v is not None:
        _check_heads_split("v", v, 1, "n_kv_heads", num_chips, mesh_shape, single_head_replicated=True)
    if attn_mask is not None and hasattr(attn_mask, "shape") and len(attn_mask.shape) == 4:
        split = mesh_split(attn_mask)
        # ours [b, 1 or heads, q_len, S]: dim 1; upstream's [1, b, heads, S] / [b, 1, heads, S]: dim 2
        if split and split not in ({1: num_chips}, {2: num_chips}):
            raise ValueError(
                f"attn_mask: {_describe_split(split)} of the mesh {tuple(mesh_shape)}; expected replicated (a mask "
                f"shared by every head) or its heads sharded over all {num_chips} chips (ShardTensorToMesh(mesh, "
                "dim=1), dim=2 for upstream's [1, b, n_q_heads, S] form)"
            )
    if attention_sink is not None and hasattr(attention_sink, "shape") and len(attention_sink.shape) == 2:
        split = mesh_split(attention_sink)
        if split is not None and split not in ({1: num_chips}, {0: num_chips}):
            raise ValueError(
                f"attention_sink: {_describe_split(split)} of the mesh {tuple(mesh_shape)}; expected one logit per q "
                f"head sharded with q's heads over all {num_chips} chips: ShardTensorToMesh(mesh, dim=1) for "
                "[1, n_q_heads] (dim=0 for upstream's [n_q_heads, 32])"
            )


def _count_per_chip(name: str, value, chips: int, refusal) -> int:
    """``value`` (a model's batch or head count) split over ``chips``; one kv head (MQA, MLA) is replicated instead.
    ``refusal(count)`` words the error when the chips do not divide it."""
    count = as_int(value)
    if count is None or count <= 0:
        raise ValueError(f"{name}={value!r}: expected a positive int")
    if name == "n_kv_heads" and count == 1:
        return 1
    if count % chips:
        raise ValueError(refusal(count))
    return count // chips


def check_mesh_heads_divide(n_q_heads, n_kv_heads, num_chips: int, mesh_shape) -> tuple[int, int]:
    """A plan on a mesh takes the model's heads and splits them over the chips: (q heads, kv heads) per chip. One kv
    head (MQA, MLA) is replicated on every chip instead."""

    def refusal(name):
        return lambda count: (
            f"{name}={count}: the mesh {tuple(mesh_shape)} splits the heads over its {num_chips} chips; expected a "
            f"multiple of {num_chips} ({count} heads do not divide over {num_chips} chips; open a mesh of fewer "
            "chips, e.g. mesh_shape=(1, n) with n dividing the heads)"
        )

    q = _count_per_chip("n_q_heads", n_q_heads, num_chips, refusal("n_q_heads"))
    kv = _count_per_chip("n_kv_heads", n_kv_heads, num_chips, refusal("n_kv_heads"))
    return q, kv


def check_mesh_users_split(
    users_mesh_axis, batch, n_q_heads, n_kv_heads, mesh_shape, attn_mask_heads
) -> tuple[int, int, int]:
    """A plan whose users are split along mesh axis ``users_mesh_axis`` (0 rows, 1 columns) and heads along the other:
    (batch, q heads, kv heads) per chip. One kv head is replicated along the heads' axis."""
    if isinstance(users_mesh_axis, bool) or users_mesh_axis not in (0, 1):
        raise ValueError(f"users_mesh_axis={users_mesh_axis!r}: expected 0 (the mesh's rows), 1 (its columns) or None")
    if attn_mask_heads:
        raise ValueError("attn_mask_heads: a mask is not supported while the users are split over the mesh")
    users_chips, heads_chips = mesh_shape[users_mesh_axis], mesh_shape[1 - users_mesh_axis]
    axis = _AXIS_NAMES[users_mesh_axis]

    def refusal(name, chips, what):
        return lambda count: (
            f"{name}={count}: users_mesh_axis={users_mesh_axis} splits the mesh {tuple(mesh_shape)}'s {what}; "
            f"expected a multiple of {chips}"
        )

    users, heads = f"users over its {users_chips} {axis}", f"heads over the other {heads_chips}"
    return tuple(
        _count_per_chip(name, value, chips, refusal(name, chips, what))
        for name, value, chips, what in (
            ("batch", batch, users_chips, users),
            ("n_q_heads", n_q_heads, heads_chips, heads),
            ("n_kv_heads", n_kv_heads, heads_chips, heads),
        )
    )


# ---- upstream's paged-only arguments (ttnn 0.81.1's paged_scaled_dot_product_attention_decode) ----------------------


def check_paged_cache_geometry(geometry, paged: bool, head_dim_v, k_shape, v_shape, q_head_dim: int) -> tuple[int, int]:
    """``paged_cache_geometry`` (a ``ttnn.PagedCacheGeometryOverride``): this call's ``(num_kv_heads, block_size)``
    view of a cache allocated for another layer's shape (vLLM's shared KV-cache groups). As upstream: paged only, not
    with MLA, both fields positive, K and V of one shape, and the view holds a block's elements exactly
    (``num_kv_heads * block_size * q's head_dim`` = the cache's), so every block is the same tiles re-cut."""
    name = "paged_cache_geometry"
    if not paged:
        raise ValueError(f"{name}: only supported by the paged op (with a page_table_tensor)")
    if head_dim_v is not None:
        raise ValueError(f"{name}: not supported with multi-latent attention")
    block_size, num_kv_heads = (as_int(getattr(geometry, f, None)) for f in ("block_size", "num_kv_heads"))
    if block_size is None or num_kv_heads is None:
        raise TypeError(
            f"{name}={geometry!r} ({type(geometry).__name__}): expected a ttnn.PagedCacheGeometryOverride("
            "block_size=..., num_kv_heads=...) or None"
        )
    if block_size <= 0 or num_kv_heads <= 0:
        raise ValueError(f"{name}: block_size={block_size}, num_kv_heads={num_kv_heads}: expected both > 0")
    if v_shape is not None and v_shape != k_shape:
        raise ValueError(f"{name}: v's shape {list(v_shape)} must equal k's {list(k_shape)} with a geometry view")
    _, cache_heads, cache_block, cache_dim = k_shape
    if cache_block % 32 or cache_dim % 32:
        raise ValueError(
            f"{name}: k's [block_size, head_dim] = [{cache_block}, {cache_dim}]: a cache read through a "
            "view must hold whole tiles (multiples of 32)"
        )
    if block_size % 32:
        raise ValueError(f"{name}: block_size={block_size}: expected a multiple of 32")
    cache_elems = cache_heads * cache_block * cache_dim
    view_elems = num_kv_heads * block_size * q_head_dim
    if view_elems != cache_elems:
        raise ValueError(
            f"{name}: the view holds {view_elems} elements a block (num_kv_heads={num_kv_heads} x block_size="
            f"{block_size} x q's head_dim {q_head_dim}), the cache {cache_elems} (k's [{cache_heads}, {cache_block}, "
            f"{cache_dim}]); expected equal"
        )
    return num_kv_heads, block_size


def check_cache_position_modulo(modulo, paged: bool, is_causal: bool, block_size, max_blocks, window: int) -> int:
    """The decode op's ``cache_position_modulo`` (:func:`check_ring`; None: 0, no ring): the paged cache is a ring of
    that many positions and logical position p lives where position ``p % modulo`` would. As upstream it must also
    be at least the sliding window (a query's window then never meets a ring row twice)."""
    value = check_ring(modulo, block_size, max_blocks, paged, is_causal)
    if window and value and value < window:
        raise ValueError(
            f"cache_position_modulo={value}: expected at least sliding_window_size={window} (a smaller "
            "ring would let a query's window wrap onto itself)"
        )
    return value


def check_spec_multi_pos_tiles(tiles, paged: bool, head_dim_v) -> int:
    """``spec_multi_pos_tiles`` as an int (0: off); upstream's paged, non-MLA argument."""
    value = as_int(tiles)
    if value is None:
        raise TypeError(f"spec_multi_pos_tiles={tiles!r} ({type(tiles).__name__}): expected an int (0: off)")
    if value < 0:
        raise ValueError(f"spec_multi_pos_tiles={value}: expected 0 (off) or a positive number of Q tiles")
    if value and not paged:
        raise ValueError(f"spec_multi_pos_tiles={value}: only supported by the paged op (with a page_table_tensor)")
    if value and head_dim_v is not None:
        raise ValueError(f"spec_multi_pos_tiles={value}: not supported with multi-latent attention")
    return value


def check_spec_multi_pos(
    tiles: int, q, q_shape, n_kv_heads: int, is_causal: bool, sliding_window_size, attn_mask
) -> tuple[int, int]:
    """Upstream's speculative multi-position form: q ``[1, b, tiles * 32, head_dim]``, each 32-row tile of a batch row
    one candidate (its rows the q heads), candidate j of batch row r attending positions ``[0, cur_pos[r * tiles +
    j]]``; the page table has one row per batch row, cur_pos ``b * tiles`` entries. Each candidate is a user with its
    own bound reading its batch row's page table; the planner makes a row's candidates one group, so the row's cache
    is read once for all of them. Returns (users, q heads a user): ``(b * tiles, 32)``. As upstream: one kv head,
    causal, no sliding window, no attn_mask, an unsharded Q."""
    name = f"spec_multi_pos_tiles={tiles}"
    q_len, batch, n_q_heads, _ = q_shape
    if q_len != 1 or n_q_heads != 32 * tiles:
        raise ValueError(
            f"{name}: q has shape {list(q_shape)}; expected [1, b, {32 * tiles}, head_dim] (one 32-row "
            "tile of q heads per candidate)"
        )
    if q.memory_config().is_sharded():
        raise ValueError(f"{name}: q is sharded ({q.memory_config()}); expected an interleaved Q tensor")
    if n_kv_heads != 1:
        raise ValueError(f"{name}: requires num_kv_heads == 1, got {n_kv_heads}")
    if not is_causal:
        raise ValueError(f"{name}: requires is_causal=True (each candidate's bound comes from cur_pos)")
    if sliding_window_size is not None:
        raise ValueError(f"{name}: not supported with sliding_window_size={sliding_window_size!r}")
    if attn_mask is not None:
        raise ValueError(f"{name}: not supported with an attn_mask")
    return batch * tiles, 32
