"""Validation of a decode call, before anything touches a device.

:func:`check_call` checks every argument of a call (ranks, shapes, dtypes, layouts, placement, positions, page
tables, masks, sinks, outputs) and returns a :class:`DecodeCall`: the call's :class:`~ttflashdecode.plan.DecodeShapes`
and what still has to be uploaded. Each error names the argument, the value it got and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ttflashdecode.plan import DecodeShapes
from ttflashdecode.ttnn_env import import_ttnn

KV_DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b")
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


def dtype_name(tensor) -> str:
    return dtype_name_of(tensor.dtype)


def dtype_name_of(dtype) -> str:
    """'bfloat16' for ttnn.bfloat16 / ttnn.DataType.BFLOAT16."""
    return str(dtype).split(".")[-1].lower()


def shape_of(tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in tensor.shape)


def check_device_tensor(
    name: str, tensor, rank: int, dtypes: tuple[str, ...], layout: str = "TILE", dram: bool = True
) -> tuple[int, ...]:
    """Shape of ``tensor`` after checking rank, dtype, layout and (``dram``) DRAM-interleaved placement."""
    ttnn = import_ttnn()
    if isinstance(tensor, torch.Tensor) or not hasattr(tensor, "layout"):
        raise TypeError(f"{name}: expected a ttnn or emulator device tensor, got {type(tensor).__name__}")
    shape = shape_of(tensor)
    if len(shape) != rank:
        raise ValueError(f"{name}: expected a rank-{rank} tensor, got shape {list(shape)}")
    if dtype_name(tensor) not in dtypes:
        raise TypeError(f"{name}: dtype {dtype_name(tensor)} not supported; expected one of {', '.join(dtypes)}")
    want = ttnn.TILE_LAYOUT if layout == "TILE" else ttnn.ROW_MAJOR_LAYOUT
    if tensor.layout != want:
        raise ValueError(f"{name}: expected {want}, got {tensor.layout}")
    mem = tensor.memory_config()
    if dram and (mem.buffer_type != ttnn.BufferType.DRAM or mem.memory_layout != ttnn.TensorMemoryLayout.INTERLEAVED):
        raise ValueError(f"{name}: expected a DRAM interleaved tensor, got {mem}")
    return shape


def int_list(name: str, values, length: int, low: int, high: int, what: str) -> list[int]:
    if isinstance(values, torch.Tensor):
        if values.is_floating_point():
            raise TypeError(f"{name}: expected integers, got a {values.dtype} tensor")
        values = values.flatten().tolist()
    values = list(values)
    if len(values) != length:
        raise ValueError(f"{name}: expected {length} entries, got {len(values)}")
    for i, p in enumerate(values):
        if not isinstance(p, int) or isinstance(p, bool) or not low <= p < high:
            raise ValueError(f"{name}[{i}]={p!r}: expected an int in [{low}, {high}) ({what})")
    return values


def decode_dtype(out_dtype: str, fp32_dest_acc_en: bool) -> str:
    """The dtype the decode program writes: the output's, or for a block-float output its staging dtype."""
    if out_dtype in BLOCK_FLOAT_OUT_DTYPES:
        return "float32" if fp32_dest_acc_en else "bfloat16"
    return out_dtype


def check_call(
    q, k, v, page_table, *, is_causal, attn_mask, cur_pos, cur_pos_tensor, scale, sliding_window_size,
    attention_sink, share_cache, memory_config, output_tensor, dtype, fp32_dest_acc_en, device, grid,
) -> DecodeCall:  # fmt: skip
    """Checks a call of the op (``device``: q's; ``grid``: its compute grid); raises before any device work."""
    paged = page_table is not None
    q_len, batch, n_q_heads, head_dim = check_device_tensor("q", q, 4, ("bfloat16",))
    k_shape = check_device_tensor("k", k, 4, KV_DTYPES)
    v_shape = check_device_tensor("v", v, 4, KV_DTYPES)
    kv_batch, n_kv_heads, kv_rows, k_head_dim = k_shape
    v_head_dim = v_shape[3]
    if not 1 <= q_len <= MAX_Q_LEN:
        raise ValueError(f"q: q_len (dim 0) = {q_len}: expected 1..{MAX_Q_LEN} query tokens per user")
    if k_head_dim != head_dim:
        raise ValueError(f"k: head_dim {k_head_dim} differs from q's head_dim {head_dim}")
    if v_shape[:3] != k_shape[:3]:
        raise ValueError(f"v: shape {list(v_shape)} must match k's first three dims {list(k_shape[:3])}")
    if n_q_heads % n_kv_heads:
        raise ValueError(f"q: n_q_heads={n_q_heads} is not a multiple of k's n_kv_heads={n_kv_heads}")
    if not paged and kv_batch != batch and not (share_cache and kv_batch == 1):
        raise ValueError(f"k: batch {kv_batch} differs from q's batch {batch} (and share_cache=False)")
    if scale is not None and not (isinstance(scale, (int, float)) and not isinstance(scale, bool) and scale > 0):
        raise ValueError(f"scale={scale!r}: expected a positive number")
    if sliding_window_size is not None:
        if not isinstance(sliding_window_size, int) or isinstance(sliding_window_size, bool) or sliding_window_size <= 0:
            raise ValueError(f"sliding_window_size={sliding_window_size!r}: expected a positive int or None")
        if not is_causal:
            raise ValueError("sliding_window_size: only supported with is_causal=True")
    if dtype is not None and (output_tensor is not None or dtype_name_of(dtype) not in OUT_DTYPES):
        raise ValueError(
            f"dtype={dtype}: expected one of {', '.join('ttnn.' + d for d in OUT_DTYPES)} and no output_tensor "
            f"(the output_tensor's dtype is the output's)"
        )
    for name, t in (("k", k), ("v", v)):
        if t.device() != device:
            raise ValueError(f"{name}: lives on a different device than q")

    block_size = max_blocks = page_table_rows = None
    if paged:
        num_blocks, block_size = kv_batch, kv_rows
        if block_size % 32:
            raise ValueError(f"k: block_size (dim 2) = {block_size}: expected a multiple of 32")
        if isinstance(page_table, torch.Tensor):
            if page_table.dim() != 2 or page_table.shape[0] not in (batch, 1 if share_cache else batch):
                raise ValueError(f"page_table_tensor: expected shape [{batch}, max_blocks_per_user], got {list(page_table.shape)}")
            max_blocks = page_table.shape[1]
            int_list("page_table_tensor", page_table.flatten(), page_table.numel(), 0, num_blocks, f"num_blocks={num_blocks}")
            page_table_rows = page_table.tolist()
        else:
            pt_shape = check_device_tensor("page_table_tensor", page_table, 2, ("int32", "uint32"), layout="ROW_MAJOR")
            if pt_shape[0] not in (batch, 1):
                raise ValueError(f"page_table_tensor: expected {batch} rows, got shape {list(pt_shape)}")
            max_blocks = pt_shape[1]
        kv_len = block_size * max_blocks
    else:
        kv_len = kv_rows

    positions = _check_positions(is_causal, attn_mask, cur_pos, cur_pos_tensor, batch, q_len, kv_len)

    mask_heads = 0
    if attn_mask is not None:
        m_shape = check_device_tensor("attn_mask", attn_mask, 4, ("bfloat16", "bfloat8_b"))
        if m_shape[0] != batch or m_shape[1] not in (1, n_q_heads) or m_shape[2:] != (q_len, kv_len):
            raise ValueError(
                f"attn_mask: expected shape [{batch}, 1 or {n_q_heads}, {q_len}, {kv_len}], got {list(m_shape)}"
            )
        mask_heads = m_shape[1]
    if attention_sink is not None:
        s_shape = check_device_tensor("attention_sink", attention_sink, 2, ("bfloat16",))
        if s_shape != (1, n_q_heads):
            raise ValueError(f"attention_sink: expected shape [1, {n_q_heads}], got {list(s_shape)}")

    out_shape = (q_len, batch, n_q_heads, v_head_dim)
    if output_tensor is None:
        out_dtype = dtype_name_of(dtype) if dtype is not None else "bfloat16"
        memory_config = check_output_memory_config(memory_config, out_shape, grid, out_dtype)
    else:
        if memory_config is not None:
            raise ValueError("memory_config: must be None when output_tensor is given (its memory config is used)")
        if check_device_tensor("output_tensor", output_tensor, 4, OUT_DTYPES, dram=False) != out_shape:
            raise ValueError(f"output_tensor: expected shape {list(out_shape)}, got {list(shape_of(output_tensor))}")
        out_dtype = dtype_name(output_tensor)
        memory_config = output_tensor.memory_config()
        check_output_memory_config(memory_config, out_shape, grid, out_dtype)

    shapes = DecodeShapes(
        batch=batch,
        n_q_heads=n_q_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        kv_len=kv_len,
        q_len=q_len,
        k_dtype=dtype_name(k),
        v_dtype=dtype_name(v),
        block_size=block_size,
        max_blocks_per_user=max_blocks,
        sliding_window_size=sliding_window_size or 0,
        share_cache=share_cache,
        attn_mask_heads=mask_heads,
        is_causal=is_causal,
        attn_mask_dtype=dtype_name(attn_mask) if attn_mask is not None else "bfloat16",
        has_attention_sink=attention_sink is not None,
        out_dtype=decode_dtype(out_dtype, fp32_dest_acc_en),
    )
    return DecodeCall(shapes, out_shape, out_dtype, memory_config, positions, page_table_rows)


def _check_positions(is_causal, attn_mask, cur_pos, cur_pos_tensor, batch, q_len, kv_len) -> list[int] | None:
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
    if cur_pos_tensor is not None and not isinstance(cur_pos_tensor, torch.Tensor):
        if shape_of(cur_pos_tensor) != (batch,) or dtype_name(cur_pos_tensor) not in ("int32", "uint32"):
            raise ValueError(
                f"cur_pos_tensor: expected an int32 tensor of shape [{batch}], got "
                f"{dtype_name(cur_pos_tensor)} {list(shape_of(cur_pos_tensor))}"
            )
        return None
    name, source = ("cur_pos", cur_pos) if cur_pos_tensor is None else ("cur_pos_tensor", cur_pos_tensor)
    positions = int_list(name, source, batch, -1, kv_len, f"kv_len={kv_len}; -1 skips a user")
    # The first query token must sit at a position >= 0.
    low = -1 if q_len == 1 else q_len - 1
    for b, p in enumerate(positions):
        if p != -1 and p < low:
            raise ValueError(f"cur_pos[{b}]={p}: with q_len={q_len} the first query would sit at {p - q_len + 1} < 0")
    return positions


def check_output_memory_config(memory_config, out_shape: tuple[int, ...], grid: tuple[int, int], out_dtype: str):
    """DRAM interleaved (the default), or L1 height-sharded with whole tile rows per shard, full width, ROW_MAJOR
    shard orientation and every shard on a core of the device's grid. Returns the config to allocate with."""
    ttnn = import_ttnn()
    if memory_config is None or memory_config == ttnn.DRAM_MEMORY_CONFIG:
        return ttnn.DRAM_MEMORY_CONFIG
    if out_dtype in BLOCK_FLOAT_OUT_DTYPES:
        raise ValueError(
            f"memory_config={memory_config}: a {out_dtype} output must be DRAM interleaved (ttnn.DRAM_MEMORY_CONFIG); "
            "use a bfloat16 or float32 output for L1 height sharding"
        )
    expected = "ttnn.DRAM_MEMORY_CONFIG or an L1 HEIGHT_SHARDED config"
    if not memory_config.is_sharded() or memory_config.memory_layout != ttnn.TensorMemoryLayout.HEIGHT_SHARDED or (
        memory_config.buffer_type != ttnn.BufferType.L1
    ):
        raise ValueError(f"memory_config={memory_config}: expected {expected}")
    spec = memory_config.shard_spec
    if spec is None:
        raise ValueError(f"memory_config={memory_config}: a sharded output needs a shard_spec")
    shard_h, shard_w = (int(d) for d in spec.shape)
    width = -(-out_shape[-1] // 32) * 32
    height = out_shape[0] * out_shape[1] * (-(-out_shape[2] // 32) * 32)
    if shard_w != width or shard_h <= 0 or shard_h % 32:
        raise ValueError(
            f"memory_config: shard shape {[shard_h, shard_w]}: expected [a multiple of 32, {width}] (height sharding "
            f"of the output [{', '.join(map(str, out_shape))}], padded to {height} x {width})"
        )
    if spec.orientation != ttnn.ShardOrientation.ROW_MAJOR:
        raise ValueError(f"memory_config: shard orientation {spec.orientation}: expected ROW_MAJOR")
    cores = ttnn.corerange_to_cores(spec.grid, row_wise=True)
    num_shards = -(-height // shard_h)
    if num_shards > len(cores):
        raise ValueError(
            f"memory_config: {num_shards} shards of {shard_h} rows for an output of {height} padded rows, but the "
            f"shard grid has {len(cores)} cores"
        )
    outside = [(c.x, c.y) for c in cores if not (c.x < grid[0] and c.y < grid[1])]
    if outside:
        raise ValueError(f"memory_config: shard cores {outside} lie outside the device's {grid[0]}x{grid[1]} grid")
    if 2 * num_shards > 256:
        raise ValueError(f"memory_config: {num_shards} shards; the writer takes at most 128 (use taller shards)")
    return memory_config
