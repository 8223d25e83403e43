"""Upstream sdpa_decode as the baseline: Tenstorrent's own kernels, laid out by a faithful copy of their factory.

:func:`scaled_dot_product_attention_decode`, :func:`paged_scaled_dot_product_attention_decode` (with upstream's
``spec_multi_pos_tiles``: speculative candidates folded onto a batch row, its K/V read once), and the MLA entry points
:func:`flash_multi_latent_attention_decode` / :func:`paged_flash_multi_latent_attention_decode` (V is K's first
``head_dim_v`` columns, read out of K's L1 chunk) run the installed ttnn wheel's sdpa_decode kernels
(``reader_decode_all.cpp``, ``writer_decode_all.cpp``, ``sdpa_flash_decode.cpp``, found through ``ttnn.__file__``) with
the ``ttnn.ProgramDescriptor`` upstream's program factory would build for the call (:mod:`.plan` holds its decisions,
:mod:`.program` the descriptor): same grid, k_chunk_size rule (``min(512, largest power-of-two divisor of s)``, or
dynamic per user for paged causal decode), cores per (batch, kv head) group and tree reduction, 16x32 half tiles for Q /
mask / statistics when ``n_q_heads <= 16`` and causal, the same circular buffers, semaphores, compile-time args, defines
and runtime args. On the emulator it is the baseline every performance comparison of :mod:`ttflashdecode.ops.decode.api`
uses; on a card the same descriptor goes to ``ttnn.generic_op``.

The argument names are :mod:`ttflashdecode.ops.decode.api`'s (and ttnn's). Inputs are checked on the host before
anything is uploaded, allocated or launched. What the baseline takes is what upstream's factory handles for a
DRAM-interleaved, tiled Q: ``q`` ``[1, b, n_q_heads, d]`` bfloat16; K/V bfloat16 / bfloat8_b / bfloat4_b in DRAM; a DRAM
output. Forms it does not reproduce (sharded or row-major Q, which bring upstream's Q-head split and K multicast for
MLA; L1 outputs; q_len > 1 other than through spec_multi_pos_tiles) are refused with an error naming the argument.

``return_stats=True`` returns ``(output, UpstreamResult)``: the call's plan and, on the emulator, the run's statistics,
as :mod:`ttflashdecode.ops.decode.api`'s functions return theirs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ttflashdecode.backend import backend_of, import_ttnn
from ttflashdecode.checks import (
    as_int32,
    check_bool,
    check_device_tensor,
    check_page_table,
    check_scale,
    check_sliding_window,
    host_int_values,
    int_list,
)
from ttflashdecode.ops.decode.request import DecodeRequest, request_of
from ttflashdecode.upstream.plan import SdpaDecodePlan, default_k_chunk_size, plan_sdpa_decode
from ttflashdecode.upstream.program import SdpaDecodeTensors, build_program

KV_DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b")


@dataclass
class UpstreamResult:
    """What a call did (``return_stats=True``): upstream's plan for it and, on the emulator, the run's statistics."""

    plan: SdpaDecodePlan
    stats: object | None


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
    """Upstream's ``ttnn.transformer.scaled_dot_product_attention_decode``, its kernels and its factory's program.

    q ``[1, b, n_q_heads, d]`` bfloat16 TILE DRAM; k ``[b, n_kv_heads, s, d]`` and v ``[b, n_kv_heads, s, d_v]``
    TILE DRAM (k/v batch 1 with ``share_cache``); exactly one of ``cur_pos`` (ints in ``[0, s)``) or
    ``cur_pos_tensor`` (int32 ``[b]`` ROW_MAJOR DRAM, or a torch tensor that is checked and uploaded; -1 skips a user
    and leaves its output rows untouched, as upstream) when causal;
    ``attn_mask`` ``[b or 1, 1, n_q_heads, s]`` (non-causal only); ``attention_sink`` upstream's form ``[.., 32 *
    ceil(n_q_heads / 32), 32]`` bfloat16 TILE (logit of head h at row h, column 0). ``program_config`` is a
    ``ttnn.SDPAProgramConfig`` (or :class:`ttflashdecode.config.ProgramConfig`); without one upstream spreads each
    user over the whole grid. ``compute_kernel_config`` defaults as upstream: HiFi2, approximate math, bf16 DST.
    Returns ``[1, b, n_q_heads, d_v]`` bfloat16 on q's backend."""
    return _decode(*request_of(locals()))


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
    spec_multi_pos_tiles: int = 0,
    return_stats: bool = False,
):
    """Upstream's paged decode: k/v ``[num_blocks, n_kv_heads, block_size, d]`` (block_size a multiple of 32),
    ``page_table_tensor`` int32 ``[b, max_blocks_per_user]`` (device ROW_MAJOR DRAM, or torch: checked against
    num_blocks and uploaded). ``spec_multi_pos_tiles = Tg > 0``: q ``[1, b, Tg * 32, d]``, candidate j of batch row r
    in q rows ``32 j .. 32 j + 31`` bounded by ``cur_pos_tensor[r * Tg + j]`` (``b * Tg`` entries, non-decreasing
    within a row; a row whose entries are all -1 is skipped), one kv head, causal; the row's K/V is read once for
    all its candidates. Every other argument as in :func:`scaled_dot_product_attention_decode`."""
    if page_table_tensor is None:
        raise ValueError("page_table_tensor: required for paged decode (int32 [b, max_blocks_per_user])")
    return _decode(*request_of(locals(), paged=True))


def flash_multi_latent_attention_decode(
    q,
    k,
    head_dim_v: int | None = None,
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
    """Upstream's ``ttnn.transformer.flash_multi_latent_attention_decode``: k is the latent cache ``[b, n_kv_heads,
    s, d]`` and V its first ``head_dim_v`` columns (a multiple of 32, at most d), read out of each K chunk already in
    L1 (the reader's ``reuse_k``), so the cache is read once. Output ``[1, b, n_q_heads, head_dim_v]``. Every other
    argument as in :func:`scaled_dot_product_attention_decode`."""
    _require_head_dim_v(head_dim_v)
    return _decode(*request_of(locals(), v_from_k=True))


def paged_flash_multi_latent_attention_decode(
    q,
    k,
    page_table_tensor=None,
    head_dim_v: int | None = None,
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
    """:func:`flash_multi_latent_attention_decode` over a paged latent cache ``[num_blocks, n_kv_heads, block_size,
    d]`` with ``page_table_tensor`` as in :func:`paged_scaled_dot_product_attention_decode`."""
    if page_table_tensor is None:
        raise ValueError("page_table_tensor: required for paged decode (int32 [b, max_blocks_per_user])")
    _require_head_dim_v(head_dim_v)
    return _decode(*request_of(locals(), paged=True, v_from_k=True))


def _require_head_dim_v(head_dim_v) -> int:
    if isinstance(head_dim_v, bool) or not isinstance(head_dim_v, int) or head_dim_v <= 0 or head_dim_v % 32:
        raise ValueError(
            f"head_dim_v={head_dim_v!r}: multi-latent attention needs V's head dim, a positive multiple "
            "of 32 (upstream: 'Must provide head_dim_v for multi-latent attention decode')"
        )
    return head_dim_v


# ---- arguments ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Compute:
    math_fidelity: str
    math_approx_mode: bool
    fp32_dest_acc_en: bool
    dst_full_sync_en: bool


def _compute_settings(config) -> _Compute:
    """init_device_compute_kernel_config(arch, config, HiFi2, approx=True, fp32=False, packer_l1_acc=False) as the
    sdpa_decode entry points call it: without a config HiFi2 with approximate math; a config's fields as given (an
    unset fidelity, ``MathFidelity.Invalid``, becomes HiFi2)."""
    if config is None:
        return _Compute("HiFi2", True, False, False)
    fidelity = getattr(config, "math_fidelity", None)
    if fidelity is None:
        raise TypeError(f"compute_kernel_config={config!r}: expected ttnn.WormholeComputeKernelConfig or None")
    name = str(fidelity).split(".")[-1]
    if name == "Invalid":
        name = "HiFi2"
    if name not in ("LoFi", "HiFi2", "HiFi3", "HiFi4"):
        raise ValueError(f"compute_kernel_config.math_fidelity={fidelity!r}: expected LoFi, HiFi2, HiFi3 or HiFi4")
    return _Compute(
        name,
        bool(config.math_approx_mode),
        bool(config.fp32_dest_acc_en),
        bool(getattr(config, "dst_full_sync_en", False)),
    )


@dataclass(frozen=True)
class _Config:
    grid: tuple[int, int]
    k_chunk_size: int
    exp_approx_mode: bool
    max_cores_per_head: int | None  # None: no program config (the whole grid)


def _program_config(config, device_grid: tuple[int, int]) -> _Config:
    if config is None:
        return _Config(device_grid, 0, True, None)
    grid = getattr(config, "compute_with_storage_grid_size", None)
    if grid is None:
        raise TypeError(
            f"program_config={config!r}: expected ttnn.SDPAProgramConfig, ttflashdecode ProgramConfig or None"
        )
    gx, gy = (int(grid.x), int(grid.y)) if hasattr(grid, "x") else (int(grid[0]), int(grid[1]))
    if not (0 < gx <= device_grid[0] and 0 < gy <= device_grid[1]):
        raise ValueError(
            f"program_config.compute_with_storage_grid_size=({gx}, {gy}): must fit the device's "
            f"{device_grid[0]}x{device_grid[1]} compute grid"
        )
    if getattr(config, "sub_core_grids", None) is not None:
        raise ValueError(
            "program_config.sub_core_grids: not supported by ttflashdecode.upstream (sub-core grids need "
            "a sharded Q or output)"
        )
    k_chunk = int(config.k_chunk_size)
    if k_chunk < 0 or (k_chunk and (k_chunk % 32 or k_chunk & (k_chunk - 1))):
        raise ValueError(
            f"program_config.k_chunk_size={k_chunk}: upstream needs 0 or a power of two that is a multiple of 32"
        )
    approx = getattr(config, "exp_approx_mode", None)
    max_cores = int(config.max_cores_per_head_batch)
    if max_cores <= 0:
        raise ValueError(f"program_config.max_cores_per_head_batch={max_cores}: expected a positive int")
    return _Config((gx, gy), k_chunk, True if approx is None else bool(approx), max_cores)


def _decode(request: DecodeRequest, return_stats):
    """One call of the four functions, their arguments as one request (the decode op's
    :class:`~ttflashdecode.ops.decode.request.DecodeRequest`), checked as upstream checks them, then planned, built and
    launched."""
    q, k, v, page_table, cur_pos_tensor = request.q, request.k, request.v, request.page_table, request.cur_pos_tensor
    attn_mask, attention_sink, output_tensor = request.attn_mask, request.attention_sink, request.output_tensor
    head_dim_v, program_config = request.head_dim_v, request.program_config
    ttnn = import_ttnn()
    q_shape = check_device_tensor("q", q, 4, ("bfloat16",))
    backend = backend_of(q)
    if backend.num_chips != 1:
        raise ValueError(
            f"q: lives on a {backend.num_chips}-chip mesh; ttflashdecode.upstream runs upstream's "
            "single-chip program (pass one chip's tensors)"
        )
    device = backend.device
    is_causal = check_bool("is_causal", request.is_causal)
    return_stats = check_bool("return_stats", return_stats)
    share_cache = check_bool("share_cache", request.share_cache)
    validate_device_tensors = check_bool("validate_device_tensors", request.validate_device_tensors)
    if q_shape[0] != 1:
        raise ValueError(
            f"q: upstream decodes one token per user, expected shape [1, b, n_q_heads, d], got {list(q_shape)}"
        )
    _, batch, n_q_heads, head_dim = q_shape
    tg = request.spec_multi_pos_tiles
    if isinstance(tg, bool) or not isinstance(tg, int) or tg < 0:
        raise ValueError(f"spec_multi_pos_tiles={tg!r}: expected an int >= 0 (0: off)")
    if tg and n_q_heads != 32 * tg:
        raise ValueError(
            f"q: spec_multi_pos_tiles={tg} needs {32 * tg} rows per batch row (one 32-row tile per "
            f"candidate), got shape {list(q_shape)}"
        )
    k_shape = check_device_tensor("k", k, 4, KV_DTYPES, device=device)
    if head_dim_v is not None:  # MLA: V is K's first head_dim_v columns
        if head_dim_v > k_shape[3]:
            raise ValueError(f"head_dim_v={head_dim_v}: must be at most k's head dim {k_shape[3]}")
        v_shape = (*k_shape[:3], head_dim_v)
    else:
        v_shape = check_device_tensor("v", v, 4, KV_DTYPES, device=device)
    if k_shape[3] != head_dim:
        raise ValueError(f"k: head dim {k_shape[3]} != q's {head_dim}")
    if v_shape[:3] != k_shape[:3]:
        raise ValueError(f"v: shape {list(v_shape)} must match k's {list(k_shape)} in all but the head dim")
    if head_dim % 32 or v_shape[3] % 32:
        raise ValueError(f"q, v: head dims must be multiples of 32, got d={head_dim}, d_v={v_shape[3]}")
    kv_batch, n_kv_heads = k_shape[0], k_shape[1]
    if n_q_heads % n_kv_heads:
        raise ValueError(f"q: n_q_heads={n_q_heads} must be a multiple of k's n_kv_heads={n_kv_heads}")
    paged = page_table is not None
    if paged and share_cache:
        raise ValueError(
            "share_cache=True: upstream does not support cache sharing with paged attention (give every "
            "user a page-table row pointing at the shared blocks instead)"
        )
    if paged:
        block_size = k_shape[2]
        if block_size % 32:
            raise ValueError(f"k: block_size={block_size} must be a multiple of 32")
        # Upstream: "page_table tensor must have INT32 dtype" (uint16 only for its sharded form).
        max_blocks, rows = check_page_table("page_table_tensor", page_table, batch, kv_batch, device, dtypes=("int32",))
        kv_len = max_blocks * block_size
    else:
        block_size, rows, kv_len = 0, None, k_shape[2]
        if kv_len % 32:
            raise ValueError(f"k: kv_len={kv_len} must be a multiple of 32")
        if kv_batch != batch and not (share_cache and batch % kv_batch == 0):
            raise ValueError(
                f"k: batch {kv_batch} != q's {batch} (with share_cache=True q's batch must be a multiple of k's)"
            )
    n_positions = batch * tg if tg else batch
    positions = _positions(is_causal, attn_mask, request.cur_pos, cur_pos_tensor, n_positions, kv_len, device)
    if tg and positions is not None:
        for r in range(batch):
            group = positions[r * tg : (r + 1) * tg]
            if group != sorted(group) or (-1 in group and set(group) != {-1}):
                raise ValueError(
                    f"cur_pos_tensor[{r * tg}:{(r + 1) * tg}]={group}: spec_multi_pos_tiles={tg} needs "
                    "each batch row's candidate bounds non-decreasing (the reader scans up to the last "
                    "one), and -1 only for a whole row"
                )
    window = check_sliding_window(request.sliding_window_size, is_causal)
    scale = check_scale(request.scale)
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    mask_batch = kv_batch
    if attn_mask is not None:
        m_shape = check_device_tensor("attn_mask", attn_mask, 4, ("bfloat16", "bfloat8_b"), device=device)
        if m_shape[0] not in (1, batch) or m_shape[1:] != (1, n_q_heads, kv_len):
            raise ValueError(f"attn_mask: expected shape [{batch} or 1, 1, {n_q_heads}, {kv_len}], got {list(m_shape)}")
        mask_batch = m_shape[0]
    if attention_sink is not None:
        s_shape = check_device_tensor(
            "attention_sink", attention_sink, len(attention_sink.shape), ("bfloat16",), device=device
        )
        rows_needed = 32 * -(-n_q_heads // 32)
        if len(s_shape) < 2 or s_shape[-1] != 32 or s_shape[-2] < rows_needed or math.prod(s_shape[:-2]) != 1:
            raise ValueError(
                f"attention_sink: expected upstream's form [{rows_needed}, 32] (head h's logit at row h, "
                f"column 0), got {list(s_shape)}"
            )
    dtype, memory_config = request.dtype, request.memory_config
    if dtype is not None and dtype != ttnn.bfloat16:
        raise ValueError(f"dtype={dtype}: upstream's decode output is bfloat16")
    if memory_config is not None and memory_config != ttnn.DRAM_MEMORY_CONFIG:
        raise ValueError(f"memory_config={memory_config}: ttflashdecode.upstream writes DRAM-interleaved outputs only")
    out_shape = (1, batch, n_q_heads, v_shape[3])
    if output_tensor is not None:
        got = check_device_tensor("output_tensor", output_tensor, 4, ("bfloat16",), device=device)
        if got != out_shape:
            raise ValueError(f"output_tensor: expected shape {list(out_shape)}, got {list(got)}")
    compute = _compute_settings(request.compute_kernel_config)
    config = _program_config(program_config, backend.grid())
    if paged and not is_causal and program_config is not None and config.k_chunk_size == 0:
        raise ValueError(
            "program_config.k_chunk_size=0: paged non-causal decode needs a positive k_chunk_size "
            "(upstream: 'Must provide k_chunk_size if non-causal!')"
        )
    k_chunk = default_k_chunk_size(kv_len, paged=paged, is_causal=is_causal, config_k_chunk_size=config.k_chunk_size)
    if attn_mask is not None and (k_chunk == 0 or kv_len % k_chunk):
        raise ValueError(
            f"attn_mask: kv_len={kv_len} must be a multiple of k_chunk_size={k_chunk} (upstream reads "
            "the mask in whole chunks)"
        )
    grid = config.grid
    decode_plan = plan_sdpa_decode(
        batch=batch,
        num_q_heads=n_q_heads,
        num_kv_heads=n_kv_heads,
        kv_len=kv_len,
        head_dim=head_dim,
        head_dim_v=v_shape[3],
        kv_batch=kv_batch,
        mask_batch=mask_batch,
        is_paged=paged,
        block_size=block_size,
        is_causal=is_causal,
        use_cur_pos_tensor=is_causal and cur_pos_tensor is not None,
        use_attention_mask=attn_mask is not None,
        use_attention_sink=attention_sink is not None,
        sliding_window_size=window,
        k_chunk_size=k_chunk,
        grid=grid,
        max_cores_per_head=grid[0] * grid[1] if config.max_cores_per_head is None else config.max_cores_per_head,
        q_is_bfloat16=True,
        math_fidelity=compute.math_fidelity,
        math_approx_mode=compute.math_approx_mode,
        fp32_dest_acc_en=compute.fp32_dest_acc_en,
        dst_full_sync_en=compute.dst_full_sync_en,
        exp_approx_mode=config.exp_approx_mode,
        use_mla=head_dim_v is not None,
        spec_multi_pos_tiles=tg,
    )
    if validate_device_tensors:
        _check_device_values(backend, positions, cur_pos_tensor, rows, page_table, kv_len, block_size, kv_batch, tg)

    # Checked and planned: now upload and allocate.
    if is_causal and cur_pos_tensor is not None:
        if isinstance(cur_pos_tensor, torch.Tensor):  # checked values: upload them, the kernels read a tensor
            cur_pos_tensor = backend.int32_tensor(positions, [n_positions])
        positions = None
    if rows is not None:
        page_table = backend.int32_tensor(rows, [batch, len(rows[0])])
    out = output_tensor
    if out is None:
        out = backend.allocate(list(out_shape), ttnn.bfloat16, ttnn.TILE_LAYOUT)
    tensors = SdpaDecodeTensors(
        q=q,
        k=k,
        v=v,
        out=out,
        cur_pos=cur_pos_tensor if is_causal else None,
        page_table=page_table,
        attn_mask=attn_mask,
        attention_sink=attention_sink,
    )
    program = build_program(decode_plan, tensors, backend.noc_coord, scale=scale, cur_pos=positions)
    stats = backend.launch(tensors.io_tensors(), program)
    return (out, UpstreamResult(plan=decode_plan, stats=stats)) if return_stats else out


def _positions(is_causal, attn_mask, cur_pos, cur_pos_tensor, batch, kv_len, device) -> list[int] | None:
    """Host positions (cur_pos, or a torch cur_pos_tensor's values), None for a device cur_pos_tensor or non-causal."""
    if is_causal:
        if attn_mask is not None:
            raise ValueError("attn_mask: must be None when is_causal=True (upstream builds the causal mask itself)")
        if (cur_pos is None) == (cur_pos_tensor is None):
            raise ValueError("cur_pos, cur_pos_tensor: exactly one must be given when is_causal=True")
    else:
        if cur_pos is not None or cur_pos_tensor is not None:
            raise ValueError("cur_pos, cur_pos_tensor: must be None when is_causal=False")
        return None
    if cur_pos_tensor is not None and not isinstance(cur_pos_tensor, torch.Tensor):
        shape = check_device_tensor(
            "cur_pos_tensor", cur_pos_tensor, 1, ("int32",), layout="ROW_MAJOR", device=device
        )  # upstream: cur_pos_tensor.dtype() == DataType::INT32
        if shape != (batch,):
            raise ValueError(f"cur_pos_tensor: expected shape [{batch}] (one position per user), got {list(shape)}")
        return None
    if cur_pos_tensor is None:
        # Upstream passes list positions as runtime args, where UINT32_MAX means "read cur_pos_tensor": a -1 in the
        # list would send the kernels to a CB that does not exist. Users are skipped through cur_pos_tensor only.
        values = host_int_values("cur_pos", cur_pos, batch, "one position per user")
        return int_list(
            "cur_pos",
            values,
            batch,
            0,
            kv_len,
            f"kv_len={kv_len}; upstream skips a user only through cur_pos_tensor (-1 there)",
        )
    values = host_int_values("cur_pos_tensor", cur_pos_tensor, batch, "one position per user")
    return int_list("cur_pos_tensor", values, batch, -1, kv_len, f"kv_len={kv_len}; -1 skips a user")


def _check_device_values(
    backend, positions, cur_pos_tensor, rows, page_table, kv_len, block_size, num_blocks, tg: int = 0
):
    """validate_device_tensors=True: read a device cur_pos_tensor / page table back; upstream's kernels would read
    outside the cache for an out-of-range value. With spec_multi_pos_tiles = tg a page-table row serves tg
    candidates and is read up to the last one's bound."""
    if positions is None and cur_pos_tensor is not None and not isinstance(cur_pos_tensor, torch.Tensor):
        positions = [as_int32(v) for v in backend.to_torch(cur_pos_tensor).flatten().tolist()]
        for b, p in enumerate(positions):
            if p != -1 and not 0 <= p < kv_len:
                raise ValueError(
                    f"cur_pos_tensor[{b}]={p} (read back from the device): expected -1 or a position in [0, {kv_len})"
                )
    if tg and positions is not None:
        positions = [positions[r * tg + tg - 1] for r in range(len(positions) // tg)]
    if page_table is not None and rows is None:
        table = backend.to_torch(page_table).tolist()
        for b, row in enumerate(table):
            last = kv_len - 1 if positions is None or positions[b] < 0 else positions[b]
            for j in range(last // block_size + 1 if positions is None or positions[b] >= 0 else 0):
                if not 0 <= as_int32(row[j]) < num_blocks:
                    raise ValueError(
                        f"page_table_tensor[{b}, {j}]={as_int32(row[j])} (read back from the device): "
                        f"expected a block in [0, {num_blocks})"
                    )


__all__ = [
    "scaled_dot_product_attention_decode",
    "paged_scaled_dot_product_attention_decode",
    "flash_multi_latent_attention_decode",
    "paged_flash_multi_latent_attention_decode",
    "UpstreamResult",
    "SdpaDecodePlan",
]
