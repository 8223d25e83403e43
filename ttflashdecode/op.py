"""The public FlashDecode ops.

``scaled_dot_product_attention_decode`` and ``paged_scaled_dot_product_attention_decode`` take the argument names,
shapes and defaults of ``ttnn.transformer.scaled_dot_product_attention_decode`` (and its paged variant), plus
the features model code needs (sliding window, attention sinks, multi-token queries, a shared cache).

A call validates every input on the host, plans the work split (:mod:`ttflashdecode.plan`), builds one
``ttnn.ProgramDescriptor`` (:mod:`ttflashdecode.program_factory`) and launches it on the tensors' backend:
``ttnn.generic_op`` on a Wormhole device, the host emulator's ``generic_op`` on emulator tensors. Descriptors
are cached: a decode loop that passes the same cur_pos / page-table tensors every step builds its program once
(see :func:`program_cache_stats`); positions and page tables are read by the kernels at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ttflashdecode.backend import Backend, backend_of
from ttflashdecode.convert_factory import build_convert_program
from ttflashdecode.plan import DecodePlan, DecodeShapes, plan
from ttflashdecode.program_factory import ComputeSettings, DecodeBuffers, build_program
from ttflashdecode.ttnn_env import import_ttnn

KV_DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b")
OUT_DTYPES = ("bfloat16", "float32", "bfloat8_b")
BLOCK_FLOAT_OUT_DTYPES = ("bfloat8_b",)  # written through a staging tensor and the tile convert program
MAX_Q_LEN = 8  # speculative decoding: a few draft tokens per user


@dataclass
class DecodeResult:
    """What the last call did: its plan and, on the emulator, the run's statistics. For a bfloat8_b output also
    the staging tensor the decode wrote and the tile convert program's statistics."""

    plan: DecodePlan
    stats: object | None
    staging: object | None = None
    convert_stats: object | None = None


last_run: DecodeResult | None = None  # for the demo and for tests that inspect the split and the counters

# Least recently used first; bounded so a long-running process that decodes many shapes does not grow forever.
_PROGRAM_CACHE_SIZE = 64
_program_cache: dict = {}
_cache_stats = {"hits": 0, "misses": 0}
# Staging outputs of block-float (bfloat8_b) calls, one per (device, shape, dtype): reused every decode step so
# the cached programs' addresses stay valid.
_staging: dict = {}


def program_cache_stats() -> dict[str, int]:
    """Descriptor cache counters: ``misses`` = programs built, ``hits`` = calls that reused one."""
    return dict(_cache_stats, entries=len(_program_cache))


def clear_program_cache() -> None:
    _program_cache.clear()
    _staging.clear()
    _cache_stats.update(hits=0, misses=0)


# ---- validation helpers: each error names the argument, what it got and what was expected ----------------------


def _dtype_name(tensor) -> str:
    return _dtype_name_of(tensor.dtype)


def _dtype_name_of(dtype) -> str:
    """'bfloat16' for ttnn.bfloat16 / ttnn.DataType.BFLOAT16."""
    return str(dtype).split(".")[-1].lower()


def _shape(tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in tensor.shape)


def _check_device_tensor(
    name: str, tensor, rank: int, dtypes: tuple[str, ...], layout: str = "TILE", dram: bool = True
) -> tuple[int, ...]:
    """Shape of ``tensor`` after checking rank, dtype, layout and (``dram``) DRAM-interleaved placement."""
    ttnn = import_ttnn()
    if isinstance(tensor, torch.Tensor) or not hasattr(tensor, "layout"):
        raise TypeError(f"{name}: expected a ttnn or emulator device tensor, got {type(tensor).__name__}")
    shape = _shape(tensor)
    if len(shape) != rank:
        raise ValueError(f"{name}: expected a rank-{rank} tensor, got shape {list(shape)}")
    if _dtype_name(tensor) not in dtypes:
        raise TypeError(f"{name}: dtype {_dtype_name(tensor)} not supported; expected one of {', '.join(dtypes)}")
    want = ttnn.TILE_LAYOUT if layout == "TILE" else ttnn.ROW_MAJOR_LAYOUT
    if tensor.layout != want:
        raise ValueError(f"{name}: expected {want}, got {tensor.layout}")
    mem = tensor.memory_config()
    if dram and (mem.buffer_type != ttnn.BufferType.DRAM or mem.memory_layout != ttnn.TensorMemoryLayout.INTERLEAVED):
        raise ValueError(f"{name}: expected a DRAM interleaved tensor, got {mem}")
    return shape


def _int_list(name: str, values, length: int, low: int, high: int, what: str) -> list[int]:
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


def _upload_int32(backend: Backend, values, shape: list[int]):
    ttnn = import_ttnn()
    host = torch.tensor(values, dtype=torch.int32).reshape(shape)
    return backend.from_torch(host, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


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
):
    """Decode attention: a few new query tokens per user against a KV cache.

    q: ``[q_len, b, n_q_heads, head_dim]`` bfloat16, tile layout, DRAM. ``q_len`` is 1 for plain decode and up
        to 8 for speculative decoding; query ``i`` of user ``b`` sits at position ``cur_pos[b] - q_len + 1 + i``.
    k, v: ``[b, n_kv_heads, kv_len, head_dim]`` bfloat16 / bfloat8_b / bfloat4_b, tile layout, DRAM; v's head dim
        may differ from k's (MLA). ``n_q_heads`` must be a multiple of ``n_kv_heads`` (MHA, GQA, MQA).
    is_causal: each query attends to positions up to its own, given by exactly one of ``cur_pos`` (ints, one per
        user) or ``cur_pos_tensor`` (int32 ``[b]``: a device tensor read by the kernels at run time, so one program
        serves every decode step; or a torch tensor, validated and uploaded). ``-1`` skips a user: its rows are 0.
    attn_mask: with ``is_causal=False``, an additive bfloat16 or bfloat8_b mask ``[b, 1 or n_q_heads, q_len, kv_len]`` (tile
        layout) streamed with K; without it all ``kv_len`` positions are visible.
    scale: softmax scale, default ``1/sqrt(head_dim)``.
    sliding_window_size: causal only; each query sees only the last W positions up to its own (only those are
        read from DRAM).
    attention_sink: bfloat16 ``[1, n_q_heads]`` tile tensor: one logit per q head that joins the softmax
        denominator (gpt-oss); it is in the scaled-score space (not multiplied by ``scale``).
    share_cache: every user reads user 0's K/V (batched sampling of one prompt); k/v batch may then be 1.
    program_config: ``ProgramConfig``, ``ttnn.SDPAProgramConfig``, a name from ``program_configs/`` or None.
    compute_kernel_config: ``ttnn.WormholeComputeKernelConfig`` or None (HiFi4, exact exp, bfloat16 DST).
    memory_config: output memory config: ``ttnn.DRAM_MEMORY_CONFIG`` (the default) or L1 height-sharded (ROW_MAJOR
        shards of whole tile rows and the full head dim, e.g. one user's ``[32, v_head_dim]`` rows per core).
    output_tensor: optional preallocated output ``[q_len, b, n_q_heads, v_head_dim]`` (its dtype is the output's).
    dtype: output dtype, ``ttnn.bfloat16`` (default), ``ttnn.float32`` (pair it with ``fp32_dest_acc_en`` to keep
        fp32 precision end to end) or ``ttnn.bfloat8_b`` (DRAM only). Groups write single rows into tiles shared
        with other groups, and a block-float row cannot be written without its tile's neighbours, so a bfloat8_b
        output is written as bfloat16 (float32 with ``fp32_dest_acc_en``) to a staging tensor, which a second
        program packs tile by tile into the output (see :mod:`ttflashdecode.convert_factory`).

    Returns the output ``[q_len, b, n_q_heads, v_head_dim]`` tensor on the same backend.
    """
    return _decode(
        q, k, v, None, is_causal=is_causal, attn_mask=attn_mask, cur_pos=cur_pos, cur_pos_tensor=cur_pos_tensor,
        scale=scale, sliding_window_size=sliding_window_size, attention_sink=attention_sink, share_cache=share_cache,
        program_config=program_config, compute_kernel_config=compute_kernel_config, memory_config=memory_config,
        output_tensor=output_tensor, dtype=dtype,
    )  # fmt: skip


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
):
    """Decode attention over a paged KV cache.

    k, v: ``[num_blocks, n_kv_heads, block_size, head_dim]`` (block_size a multiple of 32).
    page_table_tensor: int32 ``[b, max_blocks_per_user]``: position ``p`` of user ``u`` lives in block
        ``page_table[u, p // block_size]``. A device tensor (row-major) is read by the reader kernel at run time
        and is NOT checked: entries must lie in ``[0, num_blocks)`` for every block up to the user's cur_pos
        (entries past it are never read). A torch tensor is checked on the host, then uploaded.
    Every other argument is as in :func:`scaled_dot_product_attention_decode`; kv_len is
    ``max_blocks_per_user * block_size``.
    """
    return _decode(
        q, k, v, page_table_tensor, is_causal=is_causal, attn_mask=attn_mask, cur_pos=cur_pos,
        cur_pos_tensor=cur_pos_tensor, scale=scale, sliding_window_size=sliding_window_size,
        attention_sink=attention_sink, share_cache=share_cache, program_config=program_config,
        compute_kernel_config=compute_kernel_config, memory_config=memory_config, output_tensor=output_tensor,
        dtype=dtype,
    )  # fmt: skip


def _decode(
    q, k, v, page_table, *, is_causal, attn_mask, cur_pos, cur_pos_tensor, scale, sliding_window_size,
    attention_sink, share_cache, program_config, compute_kernel_config, memory_config, output_tensor, dtype,
):  # fmt: skip
    global last_run
    ttnn = import_ttnn()
    paged = page_table is not None

    q_len, batch, n_q_heads, head_dim = _check_device_tensor("q", q, 4, ("bfloat16",))
    k_shape = _check_device_tensor("k", k, 4, KV_DTYPES)
    v_shape = _check_device_tensor("v", v, 4, KV_DTYPES)
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
    if dtype is not None and (output_tensor is not None or _dtype_name_of(dtype) not in OUT_DTYPES):
        raise ValueError(
            f"dtype={dtype}: expected one of {', '.join('ttnn.' + d for d in OUT_DTYPES)} and no output_tensor "
            f"(the output_tensor's dtype is the output's)"
        )
    out_dtype = _dtype_name_of(dtype) if dtype is not None else "bfloat16"

    backend = backend_of(q)
    for name, t in (("k", k), ("v", v)):
        if t.device() != backend.device:
            raise ValueError(f"{name}: lives on a different device than q")

    block_size = max_blocks = None
    if paged:
        num_blocks, block_size = kv_batch, kv_rows
        if block_size % 32:
            raise ValueError(f"k: block_size (dim 2) = {block_size}: expected a multiple of 32")
        if isinstance(page_table, torch.Tensor):
            if page_table.dim() != 2 or page_table.shape[0] not in (batch, 1 if share_cache else batch):
                raise ValueError(f"page_table_tensor: expected shape [{batch}, max_blocks_per_user], got {list(page_table.shape)}")
            max_blocks = page_table.shape[1]
            _int_list("page_table_tensor", page_table.flatten(), page_table.numel(), 0, num_blocks, f"num_blocks={num_blocks}")
            page_table = _upload_int32(backend, page_table.tolist(), list(page_table.shape))
        else:
            pt_shape = _check_device_tensor("page_table_tensor", page_table, 2, ("int32", "uint32"), layout="ROW_MAJOR")
            if pt_shape[0] not in (batch, 1):
                raise ValueError(f"page_table_tensor: expected {batch} rows, got shape {list(pt_shape)}")
            max_blocks = pt_shape[1]
        kv_len = block_size * max_blocks
    else:
        kv_len = kv_rows

    if is_causal:
        if attn_mask is not None:
            raise ValueError("attn_mask: must be None when is_causal=True (causality comes from cur_pos)")
        if (cur_pos is None) == (cur_pos_tensor is None):
            raise ValueError("cur_pos, cur_pos_tensor: exactly one must be given when is_causal=True")
    elif cur_pos is not None or cur_pos_tensor is not None:
        raise ValueError("cur_pos, cur_pos_tensor: must be None when is_causal=False")

    # Positions: one int32 per user, on the device. The first query token must sit at a position >= 0.
    low = -1 if q_len == 1 else q_len - 1
    if cur_pos_tensor is None or isinstance(cur_pos_tensor, torch.Tensor):
        source = cur_pos if cur_pos_tensor is None else cur_pos_tensor
        positions = [kv_len - 1] * batch if not is_causal else _int_list(
            "cur_pos" if cur_pos_tensor is None else "cur_pos_tensor", source, batch, -1, kv_len,
            f"kv_len={kv_len}; -1 skips a user")  # fmt: skip
        for b, p in enumerate(positions):
            if p != -1 and p < low:
                raise ValueError(f"cur_pos[{b}]={p}: with q_len={q_len} the first query would sit at {p - q_len + 1} < 0")
        cur_pos_tensor = _upload_int32(backend, positions, [batch])
    elif _shape(cur_pos_tensor) != (batch,) or _dtype_name(cur_pos_tensor) not in ("int32", "uint32"):
        raise ValueError(
            f"cur_pos_tensor: expected an int32 tensor of shape [{batch}], got "
            f"{_dtype_name(cur_pos_tensor)} {list(_shape(cur_pos_tensor))}"
        )

    mask_heads = 0
    if attn_mask is not None:
        m_shape = _check_device_tensor("attn_mask", attn_mask, 4, ("bfloat16", "bfloat8_b"))
        if m_shape[0] != batch or m_shape[1] not in (1, n_q_heads) or m_shape[2:] != (q_len, kv_len):
            raise ValueError(
                f"attn_mask: expected shape [{batch}, 1 or {n_q_heads}, {q_len}, {kv_len}], got {list(m_shape)}"
            )
        mask_heads = m_shape[1]
    if attention_sink is not None:
        s_shape = _check_device_tensor("attention_sink", attention_sink, 2, ("bfloat16",))
        if s_shape != (1, n_q_heads):
            raise ValueError(f"attention_sink: expected shape [1, {n_q_heads}], got {list(s_shape)}")

    compute = ComputeSettings.coerce(compute_kernel_config)
    shapes = DecodeShapes(
        batch=batch,
        n_q_heads=n_q_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        kv_len=kv_len,
        q_len=q_len,
        k_dtype=_dtype_name(k),
        v_dtype=_dtype_name(v),
        block_size=block_size,
        max_blocks_per_user=max_blocks,
        sliding_window_size=sliding_window_size or 0,
        share_cache=share_cache,
        attn_mask_heads=mask_heads,
        is_causal=is_causal,
        attn_mask_dtype=_dtype_name(attn_mask) if attn_mask is not None else "bfloat16",
        has_attention_sink=attention_sink is not None,
        out_dtype=_decode_dtype(_dtype_name(output_tensor) if output_tensor is not None else out_dtype, compute),
    )
    decode_plan = plan(shapes, program_config, backend.grid(), fp32_dest_acc=compute.fp32_dest_acc_en)

    out_shape = (q_len, batch, n_q_heads, v_head_dim)
    if output_tensor is None:
        memory_config = _check_output_memory_config(memory_config, out_shape, backend.grid(), out_dtype)
    else:
        if memory_config is not None:
            raise ValueError("memory_config: must be None when output_tensor is given (its memory config is used)")
        if _check_device_tensor("output_tensor", output_tensor, 4, OUT_DTYPES, dram=False) != out_shape:
            raise ValueError(f"output_tensor: expected shape {list(out_shape)}, got {list(_shape(output_tensor))}")
        _check_output_memory_config(output_tensor.memory_config(), out_shape, backend.grid(), _dtype_name(output_tensor))
    out = output_tensor
    if out is None:
        out = backend.allocate(list(out_shape), getattr(ttnn, out_dtype), ttnn.TILE_LAYOUT, memory_config)
    block_float = _dtype_name(out) in BLOCK_FLOAT_OUT_DTYPES
    decoded = _staging_output(backend, out_shape, shapes.out_dtype) if block_float else out

    buffers = DecodeBuffers(
        q=q, k=k, v=v, cur_pos=cur_pos_tensor, out=decoded, page_table=page_table if paged else None,
        attn_mask=attn_mask, attention_sink=attention_sink,
    )  # fmt: skip
    tensors = buffers.io_tensors()
    program = _cached_program(
        ("decode", decode_plan, compute, scale), backend, tensors,
        lambda: build_program(decode_plan, buffers, backend.noc_coord, compute, scale=scale),
    )  # fmt: skip
    stats = backend.launch(tensors, program)
    convert_stats = None
    if block_float:
        convert = _cached_program(
            ("convert",), backend, [decoded, out], lambda: build_convert_program(decoded, out, backend.grid())
        )
        convert_stats = backend.launch([decoded, out], convert)
    last_run = DecodeResult(
        plan=decode_plan, stats=stats, staging=decoded if block_float else None, convert_stats=convert_stats
    )
    return out


def _decode_dtype(out_dtype: str, compute: ComputeSettings) -> str:
    """The dtype the decode program writes: the output's, or for a block-float output its staging dtype."""
    if out_dtype in BLOCK_FLOAT_OUT_DTYPES:
        return "float32" if compute.fp32_dest_acc_en else "bfloat16"
    return out_dtype


def _staging_output(backend: Backend, shape: tuple[int, ...], dtype: str):
    ttnn = import_ttnn()
    key = (id(backend.device), shape, dtype)
    if key not in _staging:
        _staging[key] = backend.allocate(list(shape), getattr(ttnn, dtype), ttnn.TILE_LAYOUT)
    return _staging[key]


def _check_output_memory_config(memory_config, out_shape: tuple[int, ...], grid: tuple[int, int], out_dtype: str):
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


def _cached_program(kind: tuple, backend: Backend, tensors: list, build):
    """A descriptor depends only on ``kind`` (the plan, compute settings, scale) and its tensors' addresses."""
    key = (
        *kind,
        id(backend.device),
        tuple((t.buffer_address(), t.buffer_page_size(), str(t.memory_config())) for t in tensors),
    )
    program = _program_cache.pop(key, None)
    if program is None:
        _cache_stats["misses"] += 1
        program = build()
        if len(_program_cache) >= _PROGRAM_CACHE_SIZE:
            _program_cache.pop(next(iter(_program_cache)))
    else:
        _cache_stats["hits"] += 1
    _program_cache[key] = program  # (re)inserted last: most recently used
    return program


__all__ = [
    "scaled_dot_product_attention_decode",
    "paged_scaled_dot_product_attention_decode",
    "program_cache_stats",
    "clear_program_cache",
    "DecodeResult",
]
