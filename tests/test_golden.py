"""Tests of the torch golden model (ttflashdecode.golden).

The golden is vectorised; it is checked against `naive_attention` below, an independent per-query, per-position
Python loop that reads the (possibly paged) cache element by element, and against torch's own
scaled_dot_product_attention where the two overlap. Shapes stay tiny so the loop is fast.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from ttflashdecode.golden import max_abs_error, pcc, quantize_like_device, sdpa_decode

ATOL = 1e-10  # golden (float64) vs naive loop (float64): only summation-order differences remain

_GEN = torch.Generator().manual_seed(0)


def randn(*shape, gen: torch.Generator | None = None) -> torch.Tensor:
    return torch.randn(*shape, generator=gen or _GEN, dtype=torch.float32)


# ----------------------------------------------------------------------------------------------------------------
# Independent reference: scalar loops, written from the semantics, sharing no code with the golden.
# ----------------------------------------------------------------------------------------------------------------


def naive_attention(
    q,
    k,
    v,
    *,
    is_causal=True,
    cur_pos=None,
    attn_mask=None,
    scale=None,
    sliding_window_size=None,
    attention_sink=None,
    page_table=None,
    share_cache=False,
):
    q_len, b, n_q, d = q.shape
    n_kv = k.shape[1]
    group = n_q // n_kv
    d_v = v.shape[-1]
    if page_table is not None:
        block_size = k.shape[2]
        kv_len = page_table.shape[1] * block_size
    else:
        kv_len = k.shape[2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    out = torch.zeros(q_len, b, n_q, d_v, dtype=torch.float64)

    for u in range(b):
        cache_user = 0 if share_cache else u

        def row(t, h, p):
            if page_table is not None:
                pt_row = 0 if share_cache else u
                blk = int(page_table[pt_row, p // block_size])
                return t[blk, h, p % block_size].double()
            return t[cache_user, h, p].double()

        for j in range(n_q):
            h = j // group
            for i in range(q_len):
                if is_causal:
                    if cur_pos[u] == -1:
                        continue  # skipped user: zeros
                    qp = cur_pos[u] - q_len + 1 + i
                    positions = [
                        p
                        for p in range(kv_len)
                        if p <= qp and (sliding_window_size is None or p >= qp - sliding_window_size + 1)
                    ]
                else:
                    positions = list(range(kv_len))
                logits = []
                for p in positions:
                    s = scale * float(torch.dot(q[i, u, j].double(), row(k, h, p)))
                    if attn_mask is not None:
                        s += float(attn_mask[u, j if attn_mask.shape[1] > 1 else 0, i, p])
                    if s != -math.inf:
                        logits.append((p, s))
                if not logits:
                    continue  # fully masked row: zeros
                m = max(s for _, s in logits)
                sink = None
                if attention_sink is not None:
                    sink = float(attention_sink.reshape(-1)[j])
                    m = max(m, sink)
                weights = [(p, math.exp(s - m)) for p, s in logits]
                denom = sum(w for _, w in weights) + (math.exp(sink - m) if sink is not None else 0.0)
                acc = torch.zeros(d_v, dtype=torch.float64)
                for p, w in weights:
                    acc += w * row(v, h, p)
                out[i, u, j] = acc / denom
    return out


def check(q, k, v, **kw):
    got = sdpa_decode(q, k, v, dtype=torch.float64, **kw)
    want = naive_attention(q, k, v, **kw)
    assert got.shape == want.shape
    assert not torch.isnan(got).any()
    torch.testing.assert_close(got, want, atol=ATOL, rtol=1e-9)
    return got


def qkv(q_len, b, n_q, n_kv, kv_len, d, d_v=None, k_batch=None):
    d_v = d if d_v is None else d_v
    kb = b if k_batch is None else k_batch
    return randn(q_len, b, n_q, d), randn(kb, n_kv, kv_len, d), randn(kb, n_kv, kv_len, d_v)


def random_page_table(b, max_blocks, num_blocks, *, shared=True, gen=None):
    """Random, non-contiguous block ids; with shared=True some users reuse other users' blocks."""
    gen = gen or _GEN
    perm = torch.randperm(num_blocks, generator=gen)
    table = perm[: b * max_blocks].reshape(b, max_blocks).clone()
    if shared and b > 1:
        table[1, 0] = table[0, 0]  # user 1 shares user 0's first block
        table[-1, -1] = table[0, -1]  # last user shares user 0's last block
    return table.to(torch.int32)


# ----------------------------------------------------------------------------------------------------------------
# Causal decode against the loop.
# ----------------------------------------------------------------------------------------------------------------

HEADS = [pytest.param(4, 4, id="MHA"), pytest.param(8, 2, id="GQA"), pytest.param(4, 1, id="MQA")]


@pytest.mark.parametrize("n_q,n_kv", HEADS)
@pytest.mark.parametrize("q_len", [1, 3])
def test_causal_mixed_cur_pos(n_q, n_kv, q_len):
    kv_len = 11
    cur_pos = [-1, q_len - 1, kv_len - 1, 6]  # skipped, smallest legal, last position, middle
    q, k, v = qkv(q_len, 4, n_q, n_kv, kv_len, 8)
    out = check(q, k, v, cur_pos=cur_pos)
    assert torch.equal(out[:, 0], torch.zeros_like(out[:, 0]))  # skipped user is exactly zero
    assert (out[:, 1:].abs() > 0).any()


def test_cur_pos_zero_single_token_attends_only_first_key():
    q, k, v = qkv(1, 2, 2, 1, 5, 4)
    out = check(q, k, v, cur_pos=torch.tensor([0, 4], dtype=torch.int32))
    # One visible key -> softmax weight 1 -> output is exactly that key's value row.
    torch.testing.assert_close(out[0, 0], v[0, 0, 0].double().expand(2, -1))


def test_cur_pos_accepts_list_tuple_and_tensor():
    q, k, v = qkv(2, 3, 4, 2, 9, 8)
    outs = [
        sdpa_decode(q, k, v, cur_pos=cp)
        for cp in ([1, 8, -1], (1, 8, -1), torch.tensor([1, 8, -1]), torch.tensor([1, 8, -1], dtype=torch.int32))
    ]
    for o in outs[1:]:
        assert torch.equal(o, outs[0])


def test_multi_token_positions():
    """Query i of a q_len=3 decode equals a single-token decode at cur_pos - 2 + i."""
    q, k, v = qkv(3, 2, 4, 2, 10, 8)
    cur_pos = [5, 9]
    multi = sdpa_decode(q, k, v, cur_pos=cur_pos, dtype=torch.float64)
    for i in range(3):
        single = sdpa_decode(q[i : i + 1], k, v, cur_pos=[p - 2 + i for p in cur_pos], dtype=torch.float64)
        torch.testing.assert_close(multi[i : i + 1], single, atol=1e-12, rtol=0)


@pytest.mark.parametrize("window", [1, 3, 7, 50])
@pytest.mark.parametrize("q_len", [1, 2])
def test_sliding_window(window, q_len):
    q, k, v = qkv(q_len, 4, 4, 2, 12, 8)
    check(q, k, v, cur_pos=[-1, q_len - 1, 11, 5], sliding_window_size=window)


def test_sliding_window_one_is_last_value():
    q, k, v = qkv(1, 2, 2, 2, 6, 4)
    out = sdpa_decode(q, k, v, cur_pos=[3, 5], sliding_window_size=1, dtype=torch.float64)
    torch.testing.assert_close(out[0, 0], v[0, :, 3].double())
    torch.testing.assert_close(out[0, 1], v[1, :, 5].double())


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("sink_shape", ["1xH", "H"])
@pytest.mark.parametrize("q_len", [1, 2])
def test_attention_sink(window, sink_shape, q_len):
    n_q = 4
    q, k, v = qkv(q_len, 3, n_q, 2, 10, 8)
    sink = randn(1, n_q) * 2 if sink_shape == "1xH" else randn(n_q) * 2
    out = check(q, k, v, cur_pos=[-1, 4, 9], sliding_window_size=window, attention_sink=sink)
    assert torch.equal(out[:, 0], torch.zeros_like(out[:, 0]))
    # A sink only adds to the denominator: the output is the sink-free output shrunk by a factor in (0, 1).
    plain = sdpa_decode(q, k, v, cur_pos=[-1, 4, 9], sliding_window_size=window, dtype=torch.float64)
    ratio = out[:, 1:] / plain[:, 1:]
    assert torch.allclose(ratio, ratio[..., :1].expand_as(ratio), atol=1e-9)
    assert ((ratio > 0) & (ratio < 1)).all()


def test_sink_is_not_scaled():
    """With one visible key of logit s, the output is v * e^s / (e^s + e^sink); sink enters unscaled."""
    q, k, v = qkv(1, 1, 1, 1, 4, 4)
    scale, sink = 0.37, torch.tensor([[0.8]])
    s = scale * float(q[0, 0, 0].double() @ k[0, 0, 0].double())
    out = sdpa_decode(q, k, v, cur_pos=[0], scale=scale, attention_sink=sink, dtype=torch.float64)
    want = v[0, 0, 0].double() * math.exp(s) / (math.exp(s) + math.exp(0.8))
    torch.testing.assert_close(out[0, 0, 0], want)


def test_explicit_scale():
    q, k, v = qkv(1, 2, 4, 4, 7, 8)
    check(q, k, v, cur_pos=[3, 6], scale=0.05)
    check(q, k, v, cur_pos=[3, 6], scale=2.0)


def test_dtype_default_and_float64():
    q, k, v = qkv(1, 2, 2, 1, 5, 4)
    assert sdpa_decode(q, k, v, cur_pos=[1, 4]).dtype == torch.float32
    o64 = sdpa_decode(q, k, v, cur_pos=[1, 4], dtype=torch.float64)
    assert o64.dtype == torch.float64
    torch.testing.assert_close(sdpa_decode(q, k, v, cur_pos=[1, 4]), o64.float())


def test_bfloat16_inputs_are_accepted():
    q, k, v = qkv(1, 2, 2, 1, 5, 4)
    qb, kb, vb = q.bfloat16(), k.bfloat16(), v.bfloat16()
    check(qb, kb, vb, cur_pos=[1, 4])


# ----------------------------------------------------------------------------------------------------------------
# Non-causal with mask.
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_q,n_kv", HEADS)
@pytest.mark.parametrize("mask_heads", ["1", "H"])
@pytest.mark.parametrize("q_len", [1, 2])
def test_non_causal_mask(n_q, n_kv, mask_heads, q_len):
    b, kv_len = 3, 9
    q, k, v = qkv(q_len, b, n_q, n_kv, kv_len, 8)
    mh = 1 if mask_heads == "1" else n_q
    mask = randn(b, mh, q_len, kv_len)
    mask[randn(b, mh, q_len, kv_len) > 0.8] = -math.inf  # some hidden keys
    mask[..., 0] = 0.5  # keep every row non-empty here
    check(q, k, v, is_causal=False, attn_mask=mask)


def test_non_causal_without_mask_and_with_sink():
    q, k, v = qkv(2, 2, 4, 2, 6, 8)
    check(q, k, v, is_causal=False)
    check(q, k, v, is_causal=False, attention_sink=randn(1, 4))


# ----------------------------------------------------------------------------------------------------------------
# Paged cache and share_cache.
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("q_len", [1, 2])
@pytest.mark.parametrize("window", [None, 5])
def test_paged_causal(q_len, window):
    b, n_q, n_kv, d, block_size, max_blocks, num_blocks = 3, 4, 2, 8, 4, 3, 12
    q = randn(q_len, b, n_q, d)
    k, v = randn(num_blocks, n_kv, block_size, d), randn(num_blocks, n_kv, block_size, d)
    table = random_page_table(b, max_blocks, num_blocks)
    kv_len = max_blocks * block_size
    check(
        q, k, v, cur_pos=[kv_len - 1, -1, 6], page_table=table, sliding_window_size=window, attention_sink=randn(1, n_q)
    )


def test_paged_equals_gathered_contiguous():
    """Paged golden == contiguous golden on the cache each user's page table describes."""
    b, n_q, n_kv, d, bs, mb, nb = 2, 2, 1, 4, 2, 4, 9
    q = randn(1, b, n_q, d)
    k, v = randn(nb, n_kv, bs, d), randn(nb, n_kv, bs, d)
    table = random_page_table(b, mb, nb)
    k_c = torch.stack([torch.cat([k[int(blk)] for blk in table[u]], dim=1) for u in range(b)])
    v_c = torch.stack([torch.cat([v[int(blk)] for blk in table[u]], dim=1) for u in range(b)])
    paged = sdpa_decode(q, k, v, cur_pos=[7, 3], page_table=table, dtype=torch.float64)
    contig = sdpa_decode(q, k_c, v_c, cur_pos=[7, 3], dtype=torch.float64)
    torch.testing.assert_close(paged, contig, atol=1e-12, rtol=0)


def test_paged_non_causal_mask():
    b, n_q, n_kv, d, bs, mb, nb = 2, 4, 4, 8, 4, 2, 6
    q = randn(1, b, n_q, d)
    k, v = randn(nb, n_kv, bs, d), randn(nb, n_kv, bs, d)
    mask = randn(b, 1, 1, mb * bs)
    check(q, k, v, is_causal=False, attn_mask=mask, page_table=random_page_table(b, mb, nb))


@pytest.mark.parametrize("k_batch", [1, 3])
def test_share_cache_contiguous(k_batch):
    q, k, v = qkv(1, 3, 4, 2, 8, 8, k_batch=k_batch)
    out = check(q, k, v, cur_pos=[7, 2, 5], share_cache=True)
    # Everyone reads user 0's cache: identical query rows at the same position give identical outputs.
    q2 = q[:, :1].expand(-1, 3, -1, -1).contiguous()
    o2 = sdpa_decode(q2, k, v, cur_pos=[4, 4, 4], share_cache=True)
    assert torch.equal(o2[:, 0], o2[:, 1]) and torch.equal(o2[:, 0], o2[:, 2])
    assert out.shape == (1, 3, 4, 8)


@pytest.mark.parametrize("pt_rows", [1, 3])
def test_share_cache_paged(pt_rows):
    q = randn(2, 3, 2, 4)
    k, v = randn(10, 1, 2, 4), randn(10, 1, 2, 4)
    table = random_page_table(pt_rows, 3, 10)
    check(q, k, v, cur_pos=[5, 1, -1], page_table=table, share_cache=True)


# ----------------------------------------------------------------------------------------------------------------
# V head dim differs from K's (MLA).
# ----------------------------------------------------------------------------------------------------------------


def test_mla_head_dims_576_512():
    q, k, v = qkv(1, 2, 2, 1, 6, 576, d_v=512)
    out = check(q, k, v, cur_pos=[5, 2])
    assert out.shape == (1, 2, 2, 512)


@pytest.mark.parametrize("paged", [False, True])
def test_differing_v_head_dim_small(paged):
    if paged:
        q = randn(2, 2, 4, 12)
        k, v = randn(6, 2, 4, 12), randn(6, 2, 4, 6)
        check(q, k, v, cur_pos=[7, 3], page_table=random_page_table(2, 2, 6), attention_sink=randn(4))
    else:
        q, k, v = qkv(2, 2, 4, 2, 8, 12, d_v=6)
        check(q, k, v, cur_pos=[7, 3], sliding_window_size=2)


# ----------------------------------------------------------------------------------------------------------------
# Agreement with torch's SDPA where the semantics overlap.
# ----------------------------------------------------------------------------------------------------------------


def _torch_sdpa(q, k, v, mask, scale=None):
    """q [q_len, b, n_q, d], contiguous k/v, additive mask [b, 1|n_q, q_len, kv_len] -> [q_len, b, n_q, d_v]."""
    group = q.shape[2] // k.shape[1]
    kk = k.double().repeat_interleave(group, dim=1)
    vv = v.double().repeat_interleave(group, dim=1)
    o = F.scaled_dot_product_attention(q.double().permute(1, 2, 0, 3), kk, vv, attn_mask=mask.double(), scale=scale)
    return o.permute(2, 0, 1, 3)


@pytest.mark.parametrize("n_q,n_kv", HEADS)
def test_vs_torch_sdpa_non_causal_mask(n_q, n_kv):
    b, q_len, kv_len = 2, 3, 10
    q, k, v = qkv(q_len, b, n_q, n_kv, kv_len, 16, d_v=8)
    mask = randn(b, n_q, q_len, kv_len)
    mask[:, :, :, 3] = -math.inf
    got = sdpa_decode(q, k, v, is_causal=False, attn_mask=mask, scale=0.3, dtype=torch.float64)
    torch.testing.assert_close(got, _torch_sdpa(q, k, v, mask, scale=0.3), atol=1e-10, rtol=1e-9)


@pytest.mark.parametrize("n_q,n_kv", HEADS)
def test_vs_torch_sdpa_causal_single_token(n_q, n_kv):
    b, kv_len = 4, 13
    cur_pos = [0, 12, 5, 9]
    q, k, v = qkv(1, b, n_q, n_kv, kv_len, 8)
    mask = torch.zeros(b, 1, 1, kv_len, dtype=torch.float64)
    for u, p in enumerate(cur_pos):
        mask[u, 0, 0, p + 1 :] = -math.inf
    got = sdpa_decode(q, k, v, cur_pos=cur_pos, dtype=torch.float64)
    torch.testing.assert_close(got, _torch_sdpa(q, k, v, mask), atol=1e-10, rtol=1e-9)


# ----------------------------------------------------------------------------------------------------------------
# Fully masked rows.
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_sink", [False, True])
def test_fully_masked_mask_row_is_zero(with_sink):
    b, n_q, q_len, kv_len = 2, 4, 2, 7
    q, k, v = qkv(q_len, b, n_q, 2, kv_len, 8)
    mask = randn(b, n_q, q_len, kv_len)
    mask[0, 1, 1, :] = -math.inf  # one row of one head
    mask[1, :, 0, :] = -math.inf  # one query of a whole user
    sink = randn(1, n_q) if with_sink else None
    out = check(q, k, v, is_causal=False, attn_mask=mask, attention_sink=sink)
    assert torch.isfinite(out).all()
    assert torch.equal(out[1, 0, 1], torch.zeros(8, dtype=torch.float64))
    assert torch.equal(out[0, 1], torch.zeros(n_q, 8, dtype=torch.float64))
    assert (out[0, 0] != 0).all() and (out[1, 1] != 0).all()  # neighbours are untouched


def test_all_users_skipped_with_window_and_sink_is_zero():
    q, k, v = qkv(2, 3, 4, 2, 8, 8)
    out = sdpa_decode(q, k, v, cur_pos=[-1, -1, -1], sliding_window_size=2, attention_sink=randn(1, 4))
    assert torch.equal(out, torch.zeros_like(out))


def test_large_logits_do_not_overflow():
    q, k, v = qkv(1, 2, 2, 2, 6, 8)
    out = check(q * 300, k * 300, v, cur_pos=[5, 3], attention_sink=torch.tensor([500.0, -500.0]))
    assert torch.isfinite(out).all()


# ----------------------------------------------------------------------------------------------------------------
# Validation: each error names the argument it is about.
# ----------------------------------------------------------------------------------------------------------------

B, NQ, NKV, L, D = 2, 4, 2, 8, 8


def _base():
    q, k, v = qkv(1, B, NQ, NKV, L, D)
    return dict(q=q, k=k, v=v, cur_pos=[3, 7])


def _paged():
    return dict(
        q=randn(1, B, NQ, D),
        k=randn(6, NKV, 4, D),
        v=randn(6, NKV, 4, D),
        cur_pos=[3, 7],
        page_table=torch.tensor([[0, 1], [2, 3]], dtype=torch.int32),
    )


def _noncausal(**extra):
    d = _base()
    d.pop("cur_pos")
    d["is_causal"] = False
    d.update(extra)
    return d


def _with(base, **changes):
    d = base()
    d.update(changes)
    return d


VALIDATION_CASES = [
    # ranks and tensor types
    ("q rank", lambda: _with(_base, q=randn(B, NQ, D)), ValueError, r"^q has shape .*expected rank 4"),
    ("k rank", lambda: _with(_base, k=randn(NKV, L, D)), ValueError, r"^k has shape .*expected rank 4"),
    ("v rank", lambda: _with(_base, v=randn(B, NKV, L, D, 1)), ValueError, r"^v has shape .*expected rank 4"),
    ("q not tensor", lambda: _with(_base, q=[[1.0]]), TypeError, r"^q=.*torch.Tensor"),
    ("q int", lambda: _with(_base, q=torch.ones(1, B, NQ, D, dtype=torch.int32)), TypeError, r"^q has dtype"),
    ("k int", lambda: _with(_base, k=torch.ones(B, NKV, L, D, dtype=torch.int64)), TypeError, r"^k has dtype"),
    ("v bool", lambda: _with(_base, v=torch.ones(B, NKV, L, D, dtype=torch.bool)), TypeError, r"^v has dtype"),
    ("q empty", lambda: _with(_base, q=randn(0, B, NQ, D)), ValueError, r"^q has shape .*zero-sized"),
    # shapes
    ("head dim", lambda: _with(_base, k=randn(B, NKV, L, D + 1)), ValueError, r"^k has head dim 9.*q's head dim 8"),
    ("v batch", lambda: _with(_base, v=randn(B + 1, NKV, L, D)), ValueError, r"^v has shape \[3, 2, 8, 8\]"),
    ("v heads", lambda: _with(_base, v=randn(B, NKV + 1, L, D)), ValueError, r"^v has shape"),
    ("v len", lambda: _with(_base, v=randn(B, NKV, L - 1, D)), ValueError, r"^v has shape"),
    (
        "gqa ratio",
        lambda: _with(_base, k=randn(B, 3, L, D), v=randn(B, 3, L, D)),
        ValueError,
        r"^n_q_heads=4 .*n_kv_heads=3",
    ),
    (
        "k batch",
        lambda: _with(_base, k=randn(B + 1, NKV, L, D), v=randn(B + 1, NKV, L, D)),
        ValueError,
        r"^k has batch 3.*expected b=2",
    ),
    (
        "k batch 1 no share",
        lambda: _with(_base, k=randn(1, NKV, L, D), v=randn(1, NKV, L, D)),
        ValueError,
        r"^k has batch 1",
    ),
    # cur_pos
    ("cur_pos missing", lambda: _with(_base, cur_pos=None), ValueError, r"^cur_pos=None with is_causal=True"),
    ("cur_pos length", lambda: _with(_base, cur_pos=[3]), ValueError, r"^cur_pos=\[3\] has length 1.*b=2"),
    ("cur_pos high", lambda: _with(_base, cur_pos=[3, L]), ValueError, r"^cur_pos\[1\]=8.*\[-1, kv_len=8\)"),
    ("cur_pos low", lambda: _with(_base, cur_pos=[-2, 3]), ValueError, r"^cur_pos\[0\]=-2"),
    ("cur_pos float list", lambda: _with(_base, cur_pos=[3.0, 7]), TypeError, r"^cur_pos=.*integers"),
    ("cur_pos float tensor", lambda: _with(_base, cur_pos=torch.tensor([3.0, 7.0])), TypeError, r"^cur_pos has dtype"),
    ("cur_pos 2-D", lambda: _with(_base, cur_pos=torch.tensor([[3, 7]])), ValueError, r"^cur_pos has shape"),
    ("cur_pos scalar", lambda: _with(_base, cur_pos=3), TypeError, r"^cur_pos=3"),
    (
        "query before 0",
        lambda: _with(_base, q=randn(3, B, NQ, D), cur_pos=[1, 7]),
        ValueError,
        r"^cur_pos\[0\]=1 with q_len=3.*position -1",
    ),
    ("cur_pos non-causal", lambda: _noncausal(cur_pos=[3, 7]), ValueError, r"^cur_pos=.*is_causal=False"),
    # mask
    (
        "mask with causal",
        lambda: _with(_base, attn_mask=torch.zeros(B, 1, 1, L)),
        ValueError,
        r"^attn_mask=.*is_causal=True",
    ),
    (
        "mask shape len",
        lambda: _noncausal(attn_mask=torch.zeros(B, 1, 1, L + 1)),
        ValueError,
        r"^attn_mask has shape \[2, 1, 1, 9\]",
    ),
    ("mask shape heads", lambda: _noncausal(attn_mask=torch.zeros(B, 2, 1, L)), ValueError, r"^attn_mask has shape"),
    ("mask shape batch", lambda: _noncausal(attn_mask=torch.zeros(1, 1, 1, L)), ValueError, r"^attn_mask has shape"),
    ("mask shape q_len", lambda: _noncausal(attn_mask=torch.zeros(B, 1, 2, L)), ValueError, r"^attn_mask has shape"),
    ("mask rank", lambda: _noncausal(attn_mask=torch.zeros(B, 1, L)), ValueError, r"^attn_mask has shape"),
    (
        "mask bool",
        lambda: _noncausal(attn_mask=torch.ones(B, 1, 1, L, dtype=torch.bool)),
        TypeError,
        r"^attn_mask has dtype",
    ),
    (
        "mask nan",
        lambda: _noncausal(attn_mask=torch.full((B, 1, 1, L), math.nan)),
        ValueError,
        r"^attn_mask contains NaN",
    ),
    (
        "mask +inf",
        lambda: _noncausal(attn_mask=torch.full((B, 1, 1, L), math.inf)),
        ValueError,
        r"^attn_mask contains NaN or \+inf",
    ),
    # paged
    (
        "page entry high",
        lambda: _with(_paged, page_table=torch.tensor([[0, 1], [2, 6]], dtype=torch.int32)),
        ValueError,
        r"^page_table holds block 6.*\[0, num_blocks=6\)",
    ),
    (
        "page entry negative",
        lambda: _with(_paged, page_table=torch.tensor([[0, -1], [2, 3]], dtype=torch.int32)),
        ValueError,
        r"^page_table holds block -1",
    ),
    (
        "page float",
        lambda: _with(_paged, page_table=torch.tensor([[0.0, 1.0], [2.0, 3.0]])),
        TypeError,
        r"^page_table has dtype",
    ),
    (
        "page rank",
        lambda: _with(_paged, page_table=torch.tensor([0, 1], dtype=torch.int32)),
        ValueError,
        r"^page_table has shape",
    ),
    (
        "page rows",
        lambda: _with(_paged, page_table=torch.tensor([[0, 1]], dtype=torch.int32)),
        ValueError,
        r"^page_table has shape \[1, 2\]",
    ),
    ("paged cur_pos beyond blocks", lambda: _with(_paged, cur_pos=[3, 8]), ValueError, r"^cur_pos\[1\]=8.*kv_len=8"),
    # window, sink, scale, flags
    ("window zero", lambda: _with(_base, sliding_window_size=0), ValueError, r"^sliding_window_size=0"),
    ("window negative", lambda: _with(_base, sliding_window_size=-3), ValueError, r"^sliding_window_size=-3"),
    ("window float", lambda: _with(_base, sliding_window_size=2.5), TypeError, r"^sliding_window_size=2.5"),
    (
        "window non-causal",
        lambda: _noncausal(sliding_window_size=4),
        ValueError,
        r"^sliding_window_size=4 with is_causal=False",
    ),
    (
        "sink shape",
        lambda: _with(_base, attention_sink=randn(1, NQ + 1)),
        ValueError,
        r"^attention_sink has shape \[1, 5\].*\[1, 4\]",
    ),
    (
        "sink shape kv heads",
        lambda: _with(_base, attention_sink=randn(NKV)),
        ValueError,
        r"^attention_sink has shape \[2\]",
    ),
    (
        "sink int",
        lambda: _with(_base, attention_sink=torch.ones(1, NQ, dtype=torch.int32)),
        TypeError,
        r"^attention_sink has dtype",
    ),
    (
        "sink nan",
        lambda: _with(_base, attention_sink=torch.full((NQ,), math.nan)),
        ValueError,
        r"^attention_sink contains NaN",
    ),
    ("scale str", lambda: _with(_base, scale="0.1"), TypeError, r"^scale='0.1'"),
    ("scale inf", lambda: _with(_base, scale=math.inf), ValueError, r"^scale=inf"),
    ("is_causal int", lambda: _with(_base, is_causal=1), TypeError, r"^is_causal=1"),
    ("share_cache str", lambda: _with(_base, share_cache="yes"), TypeError, r"^share_cache='yes'"),
    ("dtype int", lambda: _with(_base, dtype=torch.int32), TypeError, r"^dtype=torch.int32"),
    ("dtype str", lambda: _with(_base, dtype="float32"), TypeError, r"^dtype='float32'"),
]


@pytest.mark.parametrize("make,exc,match", [pytest.param(m, e, r, id=i) for i, m, e, r in VALIDATION_CASES])
def test_validation_errors(make, exc, match):
    kw = make()
    q, k, v = kw.pop("q"), kw.pop("k"), kw.pop("v")
    with pytest.raises(exc, match=match):
        sdpa_decode(q, k, v, **kw)


def test_validation_happens_before_work():
    """A bad argument late in the list is reported even when the tensors are huge-but-valid-looking: no compute."""
    q = torch.empty(1, 2, 4, 8)  # uninitialised storage is fine: we must fail before reading it
    k = torch.empty(2, 2, 1 << 16, 8)
    v = torch.empty(2, 2, 1 << 16, 8)
    with pytest.raises(ValueError, match="^attention_sink"):
        sdpa_decode(q, k, v, cur_pos=[0, 1], attention_sink=torch.zeros(3))


def test_validation_cases_are_otherwise_valid():
    """The fixtures the validation cases perturb are themselves accepted (so each error is the one intended)."""
    for base in (_base, _paged, _noncausal):
        kw = base()
        q, k, v = kw.pop("q"), kw.pop("k"), kw.pop("v")
        assert torch.isfinite(sdpa_decode(q, k, v, **kw)).all()


# ----------------------------------------------------------------------------------------------------------------
# Property test: random small shapes and feature combinations vs the loop.
# ----------------------------------------------------------------------------------------------------------------


@st.composite
def decode_cases(draw):
    n_kv = draw(st.integers(1, 2))
    n_q = n_kv * draw(st.integers(1, 3))
    b = draw(st.integers(1, 3))
    q_len = draw(st.integers(1, 3))
    d = draw(st.sampled_from([4, 8]))
    d_v = draw(st.sampled_from([d, 6]))
    paged = draw(st.booleans())
    share_cache = draw(st.booleans())
    if paged:
        block_size = draw(st.sampled_from([1, 2, 4]))
        max_blocks = draw(st.integers(max(1, -(-q_len // block_size)), 4))
        kv_len = block_size * max_blocks
    else:
        kv_len = draw(st.integers(q_len, 10))
    is_causal = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    kw = {"share_cache": share_cache, "is_causal": is_causal}

    q = randn(q_len, b, n_q, d, gen=gen)
    if paged:
        num_blocks = draw(st.integers(max_blocks, max_blocks * b + 2))
        rows = 1 if share_cache and draw(st.booleans()) else b
        kw["page_table"] = torch.randint(0, num_blocks, (rows, max_blocks), generator=gen, dtype=torch.int32)
        k = randn(num_blocks, n_kv, block_size, d, gen=gen)
        v = randn(num_blocks, n_kv, block_size, d_v, gen=gen)
    else:
        kb = 1 if share_cache and draw(st.booleans()) else b
        k, v = randn(kb, n_kv, kv_len, d, gen=gen), randn(kb, n_kv, kv_len, d_v, gen=gen)

    if is_causal:
        kw["cur_pos"] = [draw(st.one_of(st.just(-1), st.integers(q_len - 1, kv_len - 1))) for _ in range(b)]
        kw["sliding_window_size"] = draw(st.one_of(st.none(), st.integers(1, kv_len + 1)))
    elif draw(st.booleans()):
        mh = draw(st.sampled_from([1, n_q]))
        mask = randn(b, mh, q_len, kv_len, gen=gen) * 2
        mask[torch.rand(mask.shape, generator=gen) < draw(st.sampled_from([0.0, 0.3, 1.0]))] = -math.inf
        kw["attn_mask"] = mask
    if draw(st.booleans()):
        kw["attention_sink"] = randn(*draw(st.sampled_from([(1, n_q), (n_q,)])), gen=gen)
    kw["scale"] = draw(st.one_of(st.none(), st.floats(0.05, 2.0)))
    return q, k, v, kw


@settings(max_examples=30, deadline=None)
@given(decode_cases())
def test_property_golden_matches_loop(case):
    q, k, v, kw = case
    check(q, k, v, **kw)


# ----------------------------------------------------------------------------------------------------------------
# Metrics.
# ----------------------------------------------------------------------------------------------------------------


def test_pcc_and_max_abs_error():
    a = randn(64)
    assert pcc(a, a) == 1.0
    assert pcc(torch.zeros(5), torch.zeros(5)) == 1.0  # identical constants
    assert pcc(torch.full((5,), 2.0), torch.full((5,), 2.0)) == 1.0
    assert pcc(torch.zeros(5), torch.ones(5)) == 0.0  # different constants: defined, not NaN
    assert pcc(a, -a) == pytest.approx(-1.0)
    assert pcc(a, 3 * a + 1) == pytest.approx(1.0)
    b = a + 0.1 * randn(64)
    want = float(torch.corrcoef(torch.stack([a.double(), b.double()]))[0, 1])
    assert pcc(a, b) == pytest.approx(want, abs=1e-12)
    c = a.clone()
    c[3] = math.nan
    assert pcc(a, c) == 0.0
    assert isinstance(pcc(a, b), float)
    assert max_abs_error(a, a) == 0.0
    assert max_abs_error(a, b) == pytest.approx(float((a - b).abs().max()))
    assert max_abs_error(torch.tensor([1.0, 2.0]), torch.tensor([1.5, -1.0])) == 3.0
    with pytest.raises(ValueError, match="shape"):
        pcc(a, a[:3])
    with pytest.raises(ValueError, match="shape"):
        max_abs_error(a, a[:3])


# ----------------------------------------------------------------------------------------------------------------
# quantize_like_device (needs ttnn's host conversion).
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ttnn():
    try:
        from ttemu.ttnn_env import import_ttnn

        return import_ttnn()
    except ImportError as e:  # pragma: no cover - ttnn is a hard dependency, but keep the golden tests usable
        pytest.skip(f"ttnn not importable: {e}")


# Relative to the largest |x| of each 16-value group along the last dim (the shared-exponent group):
# bfloat8_b keeps 7 mantissa bits below the shared exponent, bfloat4_b 3.
BLOCK_REL_BOUND = {"bfloat8_b": 2.0**-6, "bfloat4_b": 2.0**-2}


@pytest.mark.parametrize("name", ["bfloat8_b", "bfloat4_b"])
def test_quantize_block_float_bounded_and_idempotent(ttnn, name):
    # K/V layout [b, n_kv, kv_len, head_dim]; kv_len not a tile multiple to exercise padding.
    x = randn(2, 2, 40, 64) * torch.logspace(-2, 2, 64)  # spread magnitudes across the head dim
    y = quantize_like_device(x, name)
    assert y.shape == x.shape and y.dtype == x.dtype
    assert not torch.equal(y, x)  # it really rounds
    groups_x = x.reshape(*x.shape[:-1], -1, 16)
    err = (y - x).reshape(groups_x.shape).abs()
    group_max = groups_x.abs().amax(dim=-1, keepdim=True)
    assert (err <= BLOCK_REL_BOUND[name] * group_max + 1e-30).all()
    assert torch.equal(quantize_like_device(y, name), y)  # idempotent
    assert torch.equal(quantize_like_device(x, getattr(ttnn, name)), y)  # dtype object == string


def test_quantize_bfloat16(ttnn):
    x = randn(3, 33, 20)
    y = quantize_like_device(x, ttnn.bfloat16)
    torch.testing.assert_close(y, x.bfloat16().float(), atol=0, rtol=0)
    assert torch.equal(quantize_like_device(y, "bfloat16"), y)


def test_quantize_shares_exponent_along_last_dim(ttnn):
    """A large value flushes small neighbours in its 16-value row group, but not the next group or other rows."""
    x = torch.full((32, 32), 0.01)
    x[0, 0] = 100.0
    y = quantize_like_device(x, "bfloat8_b")
    assert (y[0, 1:16] == 0).all()
    assert (y[0, 16:] != 0).all() and (y[1:, 0] != 0).all()


def test_quantize_rejects_unknown_dtype(ttnn):
    with pytest.raises(ValueError, match="dtype='float32'"):
        quantize_like_device(randn(4, 4), "float32")
    with pytest.raises(ValueError, match="dtype="):
        quantize_like_device(randn(4, 4), ttnn.float32)
    with pytest.raises(TypeError, match="^x has dtype"):
        quantize_like_device(torch.ones(4, 4, dtype=torch.int32), "bfloat8_b")


def test_golden_on_quantized_inputs_tracks_full_precision(ttnn):
    """The intended use: golden on device-stored values vs golden on exact values differs only by storage error."""
    q, k, v = qkv(1, 2, 8, 2, 64, 64)
    exact = sdpa_decode(q, k, v, cur_pos=[63, 20])
    qk = quantize_like_device(k, "bfloat8_b")
    qv = quantize_like_device(v, "bfloat8_b")
    stored = sdpa_decode(quantize_like_device(q, "bfloat16"), qk, qv, cur_pos=[63, 20])
    assert pcc(exact, stored) > 0.999
    assert max_abs_error(exact, stored) < 0.05
