"""Torch golden model of decode-phase attention (FlashDecode), plus comparison metrics.

:func:`sdpa_decode` takes the arguments of ``ttnn.transformer.scaled_dot_product_attention_decode`` (as torch
tensors) and returns what the device op is meant to compute, in float64 arithmetic. It is the reference the
planner, the host emulator and the device kernels are all checked against, so it favours plainness over speed:
the whole score tensor is built at once, masked, and soft-maxed.

Shapes
    q           ``[q_len, b, n_q_heads, d]``. ``q_len`` is 1 for plain decode, >1 (up to 8 on device) for
                speculative decode.
    k           ``[b, n_kv_heads, kv_len, d]``; v ``[b, n_kv_heads, kv_len, d_v]`` (``d_v`` may differ from ``d``,
                e.g. MLA 576/512). ``n_q_heads % n_kv_heads == 0``; q head ``j`` reads kv head
                ``j // (n_q_heads // n_kv_heads)`` (MHA, GQA and MQA alike).
    paged       with ``page_table`` ``[b, max_blocks_per_user]`` (integer), k/v are
                ``[num_blocks, n_kv_heads, block_size, d]``; position ``p`` of user ``u`` is row ``p % block_size``
                of block ``page_table[u, p // block_size]``; every user's kv_len is
                ``max_blocks_per_user * block_size``. Blocks may be shared between users.
    share_cache every user reads user 0's cache: k/v batch (or page table rows) may be 1 or b; index 0 is used.
    output      ``[q_len, b, n_q_heads, d_v]`` in ``dtype`` (float32 by default).

Semantics
    causal (default)
        ``cur_pos[u]`` is the position of user ``u``'s newest token. With ``q_len`` queries, query ``i`` sits at
        position ``cur_pos[u] - q_len + 1 + i`` (the last query is the newest token) and attends to keys at
        positions ``<=`` its own position. A non-skipped user whose first query would sit at a negative position
        is an error.
    skipped user
        ``cur_pos[u] == -1`` means "no work for this user": all its output rows are exactly zero.
    sliding window
        ``sliding_window_size = W`` keeps, for a query at position ``pos``, only keys in ``[pos - W + 1, pos]``
        (clipped at 0). Multi-token queries each get their own window.
    non-causal (``is_causal=False``)
        all ``kv_len`` positions are visible; an optional additive ``attn_mask``
        ``[b, 1 or n_q_heads, q_len, kv_len]`` is added to the scaled scores. ``cur_pos`` and
        ``sliding_window_size`` are causal-only and rejected here.
    scale
        scores are ``scale * q . k`` with ``scale`` defaulting to ``1 / sqrt(d)`` (d = K's head dim).
    attention sink
        ``attention_sink`` ``[1, n_q_heads]`` or ``[n_q_heads]`` adds one extra logit per q head to the softmax
        denominator only (gpt-oss style: softmax over ``[scores, sink]``, then drop the sink column). The sink
        logit lives in the same space as the *scaled* scores and is NOT multiplied by ``scale``. It applies to
        every query row of that head, and it does not move with the sliding window.
    fully masked rows
        a query row with no visible key (attn_mask row all ``-inf``, a window with nothing valid, a skipped user)
        outputs exactly zero, never NaN -- with or without a sink (a sink alone carries no value).

Every argument is validated before any arithmetic; a bad one raises ``ValueError`` / ``TypeError`` whose message
names the argument, the value it got and what was expected.

:func:`quantize_like_device` rounds a tensor through ttnn's own host conversion (bfloat16 / bfloat8_b /
bfloat4_b) so a test can feed the golden the exact values the device stores and separate storage error from
kernel error. :func:`pcc` and :func:`max_abs_error` are the comparison metrics used across the tests.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch

__all__ = ["sdpa_decode", "quantize_like_device", "pcc", "max_abs_error", "QUANT_DTYPE_NAMES"]

# The device dtypes quantize_like_device understands, by ttnn attribute name.
QUANT_DTYPE_NAMES = ("bfloat16", "bfloat8_b", "bfloat4_b")


# --------------------------------------------------------------------------------------------------------------
# Validation helpers. Each raises with "<name>=<what it got>: expected <what>" so a failing call is self-explaining.
# --------------------------------------------------------------------------------------------------------------


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor(shape={list(x.shape)}, dtype={x.dtype})"
    return repr(x)


def _check_tensor(name: str, x, *, rank: int | None = None, floating: bool | None = None) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}={_describe(x)}: expected a torch.Tensor")
    if floating is True and not x.is_floating_point():
        raise TypeError(f"{name} has dtype {x.dtype}: expected a floating-point dtype")
    if floating is False and (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool):
        raise TypeError(f"{name} has dtype {x.dtype}: expected an integer dtype")
    if rank is not None and x.dim() != rank:
        raise ValueError(f"{name} has shape {list(x.shape)} (rank {x.dim()}): expected rank {rank}")
    if x.numel() == 0:
        raise ValueError(f"{name} has shape {list(x.shape)}: expected no zero-sized dimension")


def _cur_pos_list(cur_pos, b: int) -> list[int]:
    """Normalise cur_pos (list/tuple/1-D integer tensor) to a list of Python ints."""
    if isinstance(cur_pos, torch.Tensor):
        if cur_pos.is_floating_point() or cur_pos.is_complex() or cur_pos.dtype == torch.bool:
            raise TypeError(f"cur_pos has dtype {cur_pos.dtype}: expected an integer dtype")
        if cur_pos.dim() != 1:
            raise ValueError(f"cur_pos has shape {list(cur_pos.shape)}: expected a 1-D tensor of length b={b}")
        values = [int(v) for v in cur_pos.tolist()]
    elif isinstance(cur_pos, Sequence) and not isinstance(cur_pos, (str, bytes)):
        values = list(cur_pos)
        for v in values:
            # bool is an int subclass but never a meaningful position.
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"cur_pos={cur_pos!r}: expected integers, got {v!r}")
        values = [int(v) for v in values]
    else:
        raise TypeError(f"cur_pos={_describe(cur_pos)}: expected a list/tuple or 1-D integer tensor of length b={b}")
    if len(values) != b:
        raise ValueError(f"cur_pos={values!r} has length {len(values)}: expected length b={b}")
    return values


def _validate(
    q, k, v, is_causal, cur_pos, attn_mask, scale, sliding_window_size, attention_sink, page_table, share_cache, dtype
):
    """Check every argument; return (cur_pos list or None, kv_len, scale as float)."""
    if not isinstance(is_causal, bool):
        raise TypeError(f"is_causal={is_causal!r}: expected a bool")
    if not isinstance(share_cache, bool):
        raise TypeError(f"share_cache={share_cache!r}: expected a bool")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype={dtype!r}: expected a floating-point torch.dtype (torch.float32 or torch.float64)")

    _check_tensor("q", q, rank=4, floating=True)
    _check_tensor("k", k, rank=4, floating=True)
    _check_tensor("v", v, rank=4, floating=True)
    q_len, b, n_q_heads, d = q.shape
    k_batch, n_kv_heads, k_len, d_k = k.shape
    if d_k != d:
        raise ValueError(
            f"k has head dim {d_k} (shape {list(k.shape)}): expected q's head dim {d} (q shape {list(q.shape)})"
        )
    if tuple(v.shape[:3]) != tuple(k.shape[:3]):
        raise ValueError(
            f"v has shape {list(v.shape)}: expected its first three dims (batch/blocks, kv heads, "
            f"len) to match k's {list(k.shape[:3])}"
        )
    if n_q_heads % n_kv_heads != 0:
        raise ValueError(
            f"n_q_heads={n_q_heads} (q shape {list(q.shape)}) is not a multiple of "
            f"n_kv_heads={n_kv_heads} (k shape {list(k.shape)}): expected n_q_heads % n_kv_heads == 0"
        )

    if page_table is not None:
        _check_tensor("page_table", page_table, rank=2, floating=False)
        rows_ok = (1, b) if share_cache else (b,)
        if page_table.shape[0] not in rows_ok:
            raise ValueError(
                f"page_table has shape {list(page_table.shape)}: expected {b} rows (one per user"
                f"{'; or 1 with share_cache' if share_cache else ''})"
            )
        num_blocks = k_batch
        lo, hi = int(page_table.min()), int(page_table.max())
        if lo < 0 or hi >= num_blocks:
            bad = lo if lo < 0 else hi
            raise ValueError(
                f"page_table holds block {bad}: expected entries in [0, num_blocks={num_blocks}) "
                f"(num_blocks is k's first dim, k shape {list(k.shape)})"
            )
        kv_len = page_table.shape[1] * k_len
    else:
        batch_ok = (1, b) if share_cache else (b,)
        if k_batch not in batch_ok:
            raise ValueError(
                f"k has batch {k_batch} (shape {list(k.shape)}): expected b={b} from q"
                f"{' (or 1 with share_cache)' if share_cache else ''}"
            )
        kv_len = k_len

    if scale is None:
        scale_f = 1.0 / math.sqrt(d)
    else:
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            raise TypeError(f"scale={scale!r}: expected a real number or None")
        scale_f = float(scale)
        if not math.isfinite(scale_f):
            raise ValueError(f"scale={scale!r}: expected a finite number")

    if sliding_window_size is not None:
        if isinstance(sliding_window_size, bool) or not isinstance(sliding_window_size, numbers.Integral):
            raise TypeError(f"sliding_window_size={sliding_window_size!r}: expected a positive int or None")
        if sliding_window_size <= 0:
            raise ValueError(f"sliding_window_size={sliding_window_size!r}: expected a positive int or None")

    if attention_sink is not None:
        _check_tensor("attention_sink", attention_sink, floating=True)
        if tuple(attention_sink.shape) not in ((1, n_q_heads), (n_q_heads,)):
            raise ValueError(
                f"attention_sink has shape {list(attention_sink.shape)}: expected [1, {n_q_heads}] "
                f"or [{n_q_heads}] (one logit per q head)"
            )
        if torch.isnan(attention_sink).any() or (attention_sink == math.inf).any():
            raise ValueError("attention_sink contains NaN or +inf: expected finite logits (or -inf for no sink)")

    if is_causal:
        if attn_mask is not None:
            raise ValueError(
                f"attn_mask={_describe(attn_mask)} with is_causal=True: expected attn_mask=None "
                "(a mask is only for is_causal=False)"
            )
        if cur_pos is None:
            raise ValueError(f"cur_pos=None with is_causal=True: expected a list/tensor of {b} positions")
        pos = _cur_pos_list(cur_pos, b)
        for u, p in enumerate(pos):
            if not -1 <= p < kv_len:
                raise ValueError(f"cur_pos[{u}]={p}: expected a position in [-1, kv_len={kv_len}) (-1 skips the user)")
            if p != -1 and p - q_len + 1 < 0:
                raise ValueError(
                    f"cur_pos[{u}]={p} with q_len={q_len}: the first query would sit at position "
                    f"{p - q_len + 1}; expected cur_pos >= q_len - 1 = {q_len - 1} (or -1 to skip)"
                )
    else:
        pos = None
        if cur_pos is not None:
            raise ValueError(
                f"cur_pos={_describe(cur_pos)} with is_causal=False: expected None "
                "(non-causal attends to all kv_len positions)"
            )
        if sliding_window_size is not None:
            raise ValueError(
                f"sliding_window_size={sliding_window_size!r} with is_causal=False: expected None "
                "(the window is relative to a causal position)"
            )
        if attn_mask is not None:
            _check_tensor("attn_mask", attn_mask, rank=4, floating=True)
            mb, mh, mq, ml = attn_mask.shape
            if mb != b or mh not in (1, n_q_heads) or mq != q_len or ml != kv_len:
                raise ValueError(
                    f"attn_mask has shape {list(attn_mask.shape)}: expected "
                    f"[{b}, 1 or {n_q_heads}, {q_len}, {kv_len}] = [b, 1 or n_q_heads, q_len, kv_len]"
                )
            # +inf or NaN would make a row's softmax undefined; -inf is the legitimate "masked" value.
            if torch.isnan(attn_mask).any() or (attn_mask == math.inf).any():
                raise ValueError("attn_mask contains NaN or +inf: expected finite values or -inf")
    return pos, kv_len, scale_f


# --------------------------------------------------------------------------------------------------------------
# The reference.
# --------------------------------------------------------------------------------------------------------------


def sdpa_decode(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    is_causal: bool = True,
    cur_pos=None,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink: torch.Tensor | None = None,
    page_table: torch.Tensor | None = None,
    share_cache: bool = False,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Decode attention reference; see the module docstring for shapes and semantics.

    Returns ``[q_len, b, n_q_heads, d_v]`` in ``dtype``.
    """
    pos, kv_len, scale_f = _validate(
        q,
        k,
        v,
        is_causal,
        cur_pos,
        attn_mask,
        scale,
        sliding_window_size,
        attention_sink,
        page_table,
        share_cache,
        dtype,
    )
    q_len, b, n_q_heads, d = q.shape
    n_kv_heads = k.shape[1]
    group = n_q_heads // n_kv_heads
    d_v = v.shape[-1]
    # float64 throughout: the golden's own rounding must be negligible next to any device path (bf16 inputs,
    # bfp8 caches), so an error a test measures belongs to the thing under test.
    f64 = torch.float64

    # 1. Materialise each user's contiguous cache [b, n_kv_heads, kv_len, d] regardless of storage form.
    if page_table is not None:
        table = page_table.long()
        if share_cache:
            table = table[:1].expand(b, -1)
        # k[table] -> [b, max_blocks, n_kv_heads, block_size, d]; blocks of a user become consecutive positions.
        k_u = k[table].permute(0, 2, 1, 3, 4).reshape(b, n_kv_heads, kv_len, d)
        v_u = v[table].permute(0, 2, 1, 3, 4).reshape(b, n_kv_heads, kv_len, d_v)
    else:
        k_u = k[:1].expand(b, -1, -1, -1) if share_cache else k
        v_u = v[:1].expand(b, -1, -1, -1) if share_cache else v
    k_u = k_u.to(f64)
    v_u = v_u.to(f64)

    # 2. Scores. Group q heads by their kv head instead of repeating K: q -> [b, n_kv, G, q_len, d].
    qg = q.to(f64).permute(1, 2, 0, 3).reshape(b, n_kv_heads, group, q_len, d)
    scores = torch.einsum("bhgqd,bhkd->bhgqk", qg, k_u) * scale_f
    scores = scores.reshape(b, n_q_heads, q_len, kv_len)

    # 3. Visibility. `visible` [b, 1|n_q, q_len, kv_len] says which keys each query row may see at all.
    key_pos = torch.arange(kv_len)
    if is_causal:
        cp = torch.tensor(pos, dtype=torch.long)
        # Query i of user u sits at cur_pos[u] - q_len + 1 + i. For a skipped user (-1) every query position is
        # negative, so no key is visible and the row falls into the fully-masked case below -> zeros.
        q_pos = cp[:, None] - q_len + 1 + torch.arange(q_len)[None, :]  # [b, q_len]
        visible = key_pos[None, None, :] <= q_pos[:, :, None]
        if sliding_window_size is not None:
            visible &= key_pos[None, None, :] >= (q_pos[:, :, None] - sliding_window_size + 1)
        skipped = (cp == -1)[:, None, None]
        visible &= ~skipped
        visible = visible[:, None]  # broadcast over heads
    else:
        visible = torch.ones(b, 1, q_len, kv_len, dtype=torch.bool)
        if attn_mask is not None:
            mask = attn_mask.to(f64)
            scores = scores + mask
            # A -inf mask entry hides the key exactly like a causal mask does.
            visible = visible & (mask != -math.inf)
    scores = scores.masked_fill(~visible, -math.inf)
    has_key = visible.any(dim=-1, keepdim=True)  # [b, 1|n_q, q_len, 1]

    # 4. Softmax with an optional sink logit in the denominator. Subtract the row max (taken over the sink too) for
    #    stability; a row with no visible key and no sink has max -inf, replaced by 0 so exp(-inf - 0) = 0 and no
    #    NaN is ever formed.
    row_max = scores.amax(dim=-1, keepdim=True)
    if attention_sink is not None:
        sink = attention_sink.reshape(1, n_q_heads, 1, 1).to(f64)  # NOT multiplied by scale (see module doc)
        row_max = torch.maximum(row_max, sink)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    p = torch.exp(scores - row_max)
    denom = p.sum(dim=-1, keepdim=True)
    if attention_sink is not None:
        denom = denom + torch.exp(sink - row_max)

    # 5. Weighted sum of V, normalised; fully masked rows (denominator from nothing or from the sink alone) are
    #    defined as exactly zero.
    out = torch.einsum("bhgqk,bhkd->bhgqd", p.reshape(b, n_kv_heads, group, q_len, kv_len), v_u)
    out = out.reshape(b, n_q_heads, q_len, d_v)
    safe_denom = torch.where(denom > 0, denom, torch.ones_like(denom))
    out = torch.where(has_key, out / safe_denom, torch.zeros_like(out))
    return out.permute(2, 0, 1, 3).contiguous().to(dtype)


# --------------------------------------------------------------------------------------------------------------
# Storage rounding through ttnn.
# --------------------------------------------------------------------------------------------------------------


def _resolve_quant_dtype(ttnn, dtype):
    if isinstance(dtype, str):
        if dtype not in QUANT_DTYPE_NAMES:
            raise ValueError(
                f"dtype={dtype!r}: expected one of {', '.join(QUANT_DTYPE_NAMES)} (or the ttnn dtype object)"
            )
        return getattr(ttnn, dtype)
    allowed = [getattr(ttnn, n) for n in QUANT_DTYPE_NAMES]
    if dtype not in allowed:
        raise ValueError(
            f"dtype={dtype!r}: expected one of ttnn.{', ttnn.'.join(QUANT_DTYPE_NAMES)} (or its name as a string)"
        )
    return dtype


def quantize_like_device(x: torch.Tensor, dtype) -> torch.Tensor:
    """Round ``x`` to the values the device would store for ``dtype``, using ttnn's own host conversion.

    ``dtype``: ``ttnn.bfloat16`` / ``ttnn.bfloat8_b`` / ``ttnn.bfloat4_b`` or the matching string. The tensor goes
    through ``ttnn.from_torch(..., layout=TILE_LAYOUT)`` and back with ``ttnn.to_torch``; the result has ``x``'s
    shape and dtype. bfloat8_b / bfloat4_b share one exponent per 16 consecutive values along the LAST dim (one
    row of a tile face), so pass K/V in the ``[..., kv_len, head_dim]`` layout the device stores them in: the
    rounding of a value depends on its neighbours in that layout. Needs ttnn (imported here, not at module load).
    """
    from ttflashdecode.backend import import_ttnn  # noqa: PLC0415 - golden must import without ttnn

    ttnn = import_ttnn()
    tt_dtype = _resolve_quant_dtype(ttnn, dtype)
    _check_tensor("x", x, floating=True)
    # ttnn's host conversion takes float32/bfloat16; float32 holds every bf16/bfp8/bfp4 value exactly, so the
    # detour adds no error for any realistic input.
    src = x.detach().cpu().to(torch.float32).contiguous()
    rounded = ttnn.to_torch(ttnn.from_torch(src, dtype=tt_dtype, layout=ttnn.TILE_LAYOUT))
    return rounded.reshape(x.shape).to(dtype=x.dtype, device=x.device)


# --------------------------------------------------------------------------------------------------------------
# Metrics.
# --------------------------------------------------------------------------------------------------------------


def _pair_f64(a, b, fn: str) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.as_tensor(a).detach().cpu()
    b = torch.as_tensor(b).detach().cpu()
    if a.shape != b.shape:
        raise ValueError(f"{fn}: a has shape {list(a.shape)}, b has shape {list(b.shape)}: expected equal shapes")
    return a.to(torch.float64).flatten(), b.to(torch.float64).flatten()


def pcc(a, b) -> float:
    """Pearson correlation coefficient of ``a`` and ``b`` (flattened, float64) as a Python float.

    Conventions for the cases Pearson leaves undefined: exactly equal tensors (including identical constants, e.g.
    the all-zero output of a skipped user) give 1.0; otherwise any NaN/inf, or a constant side, gives 0.0 -- a
    failed comparison, never NaN.
    """
    a64, b64 = _pair_f64(a, b, "pcc")
    if torch.equal(a64, b64):
        return 1.0
    if not (torch.isfinite(a64).all() and torch.isfinite(b64).all()):
        return 0.0
    da = a64 - a64.mean()
    db = b64 - b64.mean()
    denom = math.sqrt(float((da * da).sum()) * float((db * db).sum()))
    if denom == 0.0:
        return 0.0
    return max(-1.0, min(1.0, float((da * db).sum()) / denom))


def max_abs_error(a, b) -> float:
    """max |a - b| in float64 as a Python float (0.0 for empty tensors; NaN propagates)."""
    a64, b64 = _pair_f64(a, b, "max_abs_error")
    if a64.numel() == 0:
        return 0.0
    return float((a64 - b64).abs().max())


# --------------------------------------------------------------------------------------------------------------
# Upstream's paged-only arguments (ttnn 0.81.1's paged_scaled_dot_product_attention_decode).
# --------------------------------------------------------------------------------------------------------------


def paged_cache_view(cache: torch.Tensor, block_size: int, num_kv_heads: int, head_dim: int) -> torch.Tensor:
    """``paged_cache_geometry``: a paged cache ``[num_blocks, h, bs, d]`` as stored in tiles (each block its heads,
    then position tiles, then head-dim tiles, each tile 32 x 32) read through the view ``[num_blocks, num_kv_heads,
    block_size, head_dim]``: the same tiles of each block in the same order, re-cut."""
    nb, h, bs, d = cache.shape
    tiles = cache.reshape(nb, h, bs // 32, 32, d // 32, 32).permute(0, 1, 2, 4, 3, 5).reshape(nb, -1, 32, 32)
    view = tiles.reshape(nb, num_kv_heads, block_size // 32, head_dim // 32, 32, 32).permute(0, 1, 2, 4, 3, 5)
    return view.reshape(nb, num_kv_heads, block_size, head_dim)


def paged_sdpa_decode(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    page_table: torch.Tensor,
    *,
    cur_pos,
    paged_cache_geometry=None,
    cache_position_modulo: int | None = None,
    spec_multi_pos_tiles: int = 0,
    sliding_window_size: int | None = None,
    **kwargs,
) -> torch.Tensor:
    """:func:`sdpa_decode` over a paged cache (causal) with upstream's paged-only arguments:

    paged_cache_geometry  ``(block_size, num_kv_heads)`` (or an object with those fields): k / v are read through
                          :func:`paged_cache_view` with q's head dim.
    cache_position_modulo ``M``: the cache is a ring; logical position ``p`` of user ``u`` is row ``(p % M) %
                          block_size`` of block ``page_table[u, (p % M) // block_size]``. cur_pos and the window are
                          logical (positions may exceed the page table's reach).
    spec_multi_pos_tiles  ``Tg``: q ``[1, b, Tg * 32, d]``; candidate j of batch row r (q rows ``32 j .. 32 j + 31``)
                          attends ``[0, cur_pos[r * Tg + j]]`` through row r of the page table. Output
                          ``[1, b, Tg * 32, d_v]``.
    Other keyword arguments go to :func:`sdpa_decode`."""
    if paged_cache_geometry is not None:
        block_size, num_kv_heads = (
            paged_cache_geometry
            if isinstance(paged_cache_geometry, tuple)
            else (paged_cache_geometry.block_size, paged_cache_geometry.num_kv_heads)
        )
        k = paged_cache_view(k, block_size, num_kv_heads, q.shape[-1])
        v = paged_cache_view(v, block_size, num_kv_heads, q.shape[-1])
    table = page_table.long()
    out_shape = None
    if spec_multi_pos_tiles:
        tg = spec_multi_pos_tiles
        _, b, rows, d = q.shape
        q = q.reshape(1, b * tg, rows // tg, d)
        table = table.repeat_interleave(tg, dim=0)
        out_shape = (1, b, rows, v.shape[-1])
    positions = _cur_pos_list(cur_pos, q.shape[1])
    if cache_position_modulo is None:
        out = sdpa_decode(
            q, k, v, cur_pos=positions, page_table=table, sliding_window_size=sliding_window_size, **kwargs
        )
    else:
        # Each user's logical cache up to its newest position, gathered through the ring.
        ring, block = cache_position_modulo, k.shape[2]
        length = max(max(positions) + 1, 1)
        ring_pos = torch.arange(length) % ring
        blocks = table[:, ring_pos // block]  # [b, length]
        k_u = k[blocks, :, ring_pos % block].permute(0, 2, 1, 3)  # [b, h, length, d]
        v_u = v[blocks, :, ring_pos % block].permute(0, 2, 1, 3)
        out = sdpa_decode(q, k_u, v_u, cur_pos=positions, sliding_window_size=sliding_window_size, **kwargs)
    return out if out_shape is None else out.reshape(out_shape)
