"""Conformance: upstream sdpa_decode (the wheel's reader, compute and writer kernels) on the emulator, against the
golden.

Each case runs :mod:`ttflashdecode.upstream` (the program upstream's factory builds) on seeded random inputs and
checks, besides the numbers, what the factory decided (half-tile Q, cores per head, tree rounds) and what the reader
moved (every K/V tile of the chunks a user needs, read once). The output starts as NaN so every element the op should
write is checked to have been written; a skipped user (cur_pos -1) is left untouched, as upstream documents.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import pytest
import torch

from ttflashdecode import golden, upstream
from ttflashdecode.upstream.plan import UINT32_MAX, default_k_chunk_size, tree_reduction

NAN_POISON = 0x7FC07FC0  # two bfloat16 quiet NaNs
PCC_MIN = 0.999
MAX_ABS_ERR = 0.04  # times max(1, max |expected|)


@dataclass(frozen=True)
class Case:
    name: str
    batch: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    kv_dtype: str
    is_causal: bool
    max_cores_per_head: int
    k_chunk_size: int  # program config value (0: the entry point's default)
    kv_len: int = 0  # non-paged
    block_size: int = 0  # paged
    blocks_per_user: int = 0
    num_blocks: int = 0
    cur_pos: tuple[int, ...] = ()
    cur_pos_as_tensor: bool = False
    attn_mask: bool = False  # non-causal: upstream's [b, 1, n_q_heads, s] additive mask (0 / -inf padding per user)
    sliding_window_size: int = 0
    attention_sink: bool = False
    # what upstream's factory must decide for this call
    expect_half_tile: bool = False
    expect_cores_per_head: int = 1
    expect_tree_rounds: int = 0

    @property
    def paged(self) -> bool:
        return self.block_size > 0


CASES = [
    # Llama-style MQA decode, 8 heads: Q, mask and statistics in 16x32 half tiles; 4 cores per user, 2 rounds; two
    # users at positions in different chunks (one mid-chunk, one in the first chunk).
    Case(
        "causal_half_tile_q",
        batch=2,
        n_q_heads=8,
        n_kv_heads=1,
        head_dim=64,
        kv_dtype="bfloat16",
        is_causal=True,
        max_cores_per_head=4,
        k_chunk_size=128,
        kv_len=512,
        cur_pos=(413, 40),
        expect_half_tile=True,
        expect_cores_per_head=4,
        expect_tree_rounds=2,
    ),
    # Paged GQA (2 kv heads of 8 q heads each), bfloat8_b cache in shuffled 32-row blocks, positions read from a
    # device tensor, dynamic chunks (k_chunk_size 0: the kernels size them from cur_pos, here 256 and 128 positions),
    # 2 cores per head: user 0's two chunks are merged across them, user 1 fits one core.
    Case(
        "paged_gqa_dynamic_chunk",
        batch=2,
        n_q_heads=16,
        n_kv_heads=2,
        head_dim=64,
        kv_dtype="bfloat8_b",
        is_causal=True,
        max_cores_per_head=2,
        k_chunk_size=0,
        block_size=32,
        blocks_per_user=16,
        num_blocks=37,
        cur_pos=(450, 97),
        cur_pos_as_tensor=True,
        expect_half_tile=True,
        expect_cores_per_head=2,
        expect_tree_rounds=1,
    ),
    # Tree reduction over 8 cores (3 rounds), 32 heads in full tiles, every core holding one 128-position chunk.
    Case(
        "tree_8_cores",
        batch=1,
        n_q_heads=32,
        n_kv_heads=1,
        head_dim=64,
        kv_dtype="bfloat16",
        is_causal=True,
        max_cores_per_head=8,
        k_chunk_size=128,
        kv_len=1024,
        cur_pos=(1001,),
        expect_cores_per_head=8,
        expect_tree_rounds=3,
    ),
    # Non-causal over 5 cores: not a power of two, so core 4 has no natural parent and sends to the root (an extra
    # child of the root in round 2).
    Case(
        "tree_5_cores_noncausal",
        batch=1,
        n_q_heads=8,
        n_kv_heads=1,
        head_dim=128,
        kv_dtype="bfloat16",
        is_causal=False,
        max_cores_per_head=5,
        k_chunk_size=128,
        kv_len=640,
        expect_cores_per_head=5,
        expect_tree_rounds=3,
    ),
    # Non-causal with a padding mask read by the reader chunk by chunk (the entry point's default k_chunk_size:
    # min(512, largest power-of-two divisor of 384) = 128).
    Case(
        "noncausal_attn_mask",
        batch=2,
        n_q_heads=8,
        n_kv_heads=1,
        head_dim=64,
        kv_dtype="bfloat16",
        is_causal=False,
        max_cores_per_head=2,
        k_chunk_size=0,
        kv_len=384,
        attn_mask=True,
        expect_cores_per_head=2,
        expect_tree_rounds=1,
    ),
    # Sliding window whose start falls inside a chunk (the writer builds the window mask) and gpt-oss-style sinks
    # merged by the root.
    Case(
        "causal_window_sink",
        batch=1,
        n_q_heads=8,
        n_kv_heads=1,
        head_dim=64,
        kv_dtype="bfloat16",
        is_causal=True,
        max_cores_per_head=4,
        k_chunk_size=64,
        kv_len=512,
        cur_pos=(400,),
        sliding_window_size=100,
        attention_sink=True,
        expect_half_tile=True,
        expect_cores_per_head=4,
        expect_tree_rounds=2,
    ),
]


def _seed(case: Case) -> int:
    return int(os.environ.get("TTFD_SEED", 0)) or (sum(map(ord, case.name)) * 7919) % 100_000


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_upstream_sdpa_decode(emu_device, ttnn, case: Case):
    seed = _seed(case)
    tag = f"[seed {seed}; replay with TTFD_SEED={seed}] {case.name}"
    g = torch.Generator().manual_seed(seed)
    b, hq, hkv, d = case.batch, case.n_q_heads, case.n_kv_heads, case.head_dim
    kv_rows = case.num_blocks if case.paged else b
    seq = case.block_size if case.paged else case.kv_len
    q = torch.randn(1, b, hq, d, generator=g)
    k = torch.randn(kv_rows, hkv, seq, d, generator=g)
    v = torch.randn(kv_rows, hkv, seq, d, generator=g)
    kv_dtype = getattr(ttnn, case.kv_dtype)
    tq = emu_device.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    tk, tv = (emu_device.from_torch(x, dtype=kv_dtype, layout=ttnn.TILE_LAYOUT) for x in (k, v))
    out = emu_device.allocate([1, b, hq, d], ttnn.bfloat16, ttnn.TILE_LAYOUT, fill=NAN_POISON)
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
        q_chunk_size=0,
        k_chunk_size=case.k_chunk_size,
        max_cores_per_head_batch=case.max_cores_per_head,
    )
    kwargs = dict(is_causal=case.is_causal, program_config=config, output_tensor=out)
    if case.is_causal:
        positions = torch.tensor(case.cur_pos, dtype=torch.int32)
        if case.cur_pos_as_tensor:
            kwargs["cur_pos_tensor"] = emu_device.from_torch(positions, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
        else:
            kwargs["cur_pos"] = list(case.cur_pos)
    golden_extra = {}
    if case.attn_mask:
        # Each user sees a prefix of the cache (its own length); the rest is -inf, upstream's padding mask.
        lengths = torch.randint(case.kv_len // 4, case.kv_len + 1, (b,), generator=g)
        mask = torch.zeros(b, 1, hq, case.kv_len)
        for user, n in enumerate(lengths.tolist()):
            mask[user, :, :, n:] = float("-inf")
        kwargs["attn_mask"] = emu_device.from_torch(mask, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
        golden_extra["attn_mask"] = mask.permute(0, 2, 1, 3)  # golden form [b, n_q_heads, q_len, s]
    if case.sliding_window_size:
        kwargs["sliding_window_size"] = golden_extra["sliding_window_size"] = case.sliding_window_size
    if case.attention_sink:
        # Upstream's form: head h's logit at (h, 0) of a [32, 32] tile, compared with the unscaled scores (the root
        # merges exp(scale * (sink - m))); the golden takes it in the scaled space.
        logits = torch.randn(hq, generator=g) * 2 + 3
        sink = torch.zeros(32 * -(-hq // 32), 32)
        sink[:hq, 0] = logits
        tsink = emu_device.from_torch(sink, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
        kwargs["attention_sink"] = tsink
        golden_extra["attention_sink"] = emu_device.to_torch(tsink).float()[:hq, 0].reshape(1, hq) / math.sqrt(d)
    page_table = None
    if case.paged:
        # Each user's blocks drawn from a shuffled pool (blocks past a user's table and unused ones hold garbage).
        page_table = torch.randperm(case.num_blocks, generator=g)[: b * case.blocks_per_user].reshape(b, -1)
        page_table = page_table.to(torch.int32)
        _, run = upstream.paged_scaled_dot_product_attention_decode(tq, tk, tv, page_table, return_stats=True, **kwargs)
    else:
        _, run = upstream.scaled_dot_product_attention_decode(tq, tk, tv, return_stats=True, **kwargs)

    plan = run.plan
    assert plan.use_half_tile == case.expect_half_tile, f"{tag}: half-tile Q {plan.use_half_tile}"
    assert plan.num_cores_per_head == case.expect_cores_per_head, f"{tag}: {plan.num_cores_per_head} cores per head"
    assert plan.num_tree_reduction_rounds == case.expect_tree_rounds, f"{tag}: {plan.num_tree_reduction_rounds} rounds"

    # Golden on exactly the values the device holds (bfloat16 Q, the cache in its device format).
    qd, kd, vd = (emu_device.to_torch(t).float() for t in (tq, tk, tv))
    expected = golden.sdpa_decode(
        qd,
        kd,
        vd,
        is_causal=case.is_causal,
        cur_pos=list(case.cur_pos) if case.is_causal else None,
        page_table=page_table,
        **golden_extra,
    )
    got = emu_device.to_torch(out).float()
    assert not torch.isnan(got).any(), f"{tag}: an output element was never written (still the NaN poison)"
    pcc = golden.pcc(got, expected)
    err = golden.max_abs_error(got, expected)
    bound = MAX_ABS_ERR * max(1.0, float(expected.abs().max()))
    assert pcc >= PCC_MIN, f"{tag}: PCC {pcc:.6f} < {PCC_MIN}"
    assert err <= bound, f"{tag}: max |error| {err:.4f} > {bound:.4f}"

    # The reader reads each K and V tile of the chunks from the window's start (0 without one) up to a user's position
    # once (all of the cache non-causal).
    stats = run.stats
    k_chunk = plan.k_chunk_size
    expected_tiles = 0
    for user in range(b):
        pos = case.cur_pos[user] if case.is_causal else (case.blocks_per_user * seq if case.paged else seq) - 1
        chunk = k_chunk or 32 * min(plan.max_dynamic_chunk_size, 1 << (pos // 32).bit_length())
        first = max(0, pos + 1 - case.sliding_window_size) // chunk if case.sliding_window_size else 0
        expected_tiles += (-(-(pos + 1) // chunk) - first) * chunk // 32 * hkv * (d // 32)
    tile_bytes = tk.buffer_page_size()
    assert stats.bytes_read_from(tk) == expected_tiles * tile_bytes, f"{tag}: K bytes read"
    assert stats.bytes_read_from(tv) == expected_tiles * tile_bytes, f"{tag}: V bytes read"


def test_skipped_user_output_untouched(emu_device, ttnn):
    """cur_pos_tensor -1: upstream skips the user entirely (reader, compute and writer return), so its output rows
    keep whatever the buffer held; the other user is computed. (A -1 in a cur_pos list is refused: upstream's kernels
    read UINT32_MAX in that runtime arg as "take cur_pos from the tensor".)"""
    seed = _seed(Case("skip", 2, 8, 1, 64, "bfloat16", True, 2, 64))
    g = torch.Generator().manual_seed(seed)
    q, k, v = (
        torch.randn(1, 2, 8, 64, generator=g),
        torch.randn(2, 1, 256, 64, generator=g),
        torch.randn(2, 1, 256, 64, generator=g),
    )
    tq, tk, tv = (emu_device.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT) for x in (q, k, v))
    out = emu_device.allocate([1, 2, 8, 64], ttnn.bfloat16, ttnn.TILE_LAYOUT, fill=NAN_POISON)
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), q_chunk_size=0, k_chunk_size=64, max_cores_per_head_batch=2
    )
    with pytest.raises(ValueError, match=r"cur_pos\[0\]=-1"):
        upstream.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=[-1, 130], program_config=config)
    positions = emu_device.from_torch(
        torch.tensor([-1, 130], dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT
    )
    upstream.scaled_dot_product_attention_decode(
        tq, tk, tv, cur_pos_tensor=positions, program_config=config, output_tensor=out
    )
    got = emu_device.to_torch(out).float()
    assert torch.isnan(got[:, 0]).all(), f"[seed {seed}] the skipped user's rows were written"
    expected = golden.sdpa_decode(*(emu_device.to_torch(t).float() for t in (tq, tk, tv)), cur_pos=[-1, 130])
    assert golden.pcc(got[:, 1], expected[:, 1]) >= PCC_MIN, f"[seed {seed}] user 1"


# ---- the factory's arithmetic (no kernels run) ----------------------------------------------------------------


def test_default_k_chunk_size_is_upstreams_rule():
    # min(512, largest power-of-two divisor of s) for the non-paged ops; 0 (dynamic) for paged causal decode.
    assert [default_k_chunk_size(s, paged=False, is_causal=True) for s in (96, 128, 160, 4096, 8192 + 32)] == [
        32,
        128,
        32,
        512,
        32,
    ]
    assert default_k_chunk_size(4096, paged=True, is_causal=True) == 0
    assert default_k_chunk_size(4096, paged=False, is_causal=True, config_k_chunk_size=256) == 256


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 33, 64])
def test_tree_reduction_reaches_the_root_once_per_core(n):
    """Every non-root core sends exactly once, to a parent that lists it as the child of that round, and following
    parents from any core ends at core 0 within ceil(log2 n) hops."""
    trees = [tree_reduction(i, n) for i in range(n)]
    assert trees[0].is_root and trees[0].parent == UINT32_MAX
    rounds = (n - 1).bit_length()
    for i in range(1, n):
        t = trees[i]
        assert not t.is_root and t.send_at_round < max(rounds, 1)
        assert trees[t.parent].children_per_round[t.send_at_round] == i
        hops, j = 0, i
        while j != 0:
            j, hops = trees[j].parent, hops + 1
            assert hops <= rounds
    children = sorted(c for t in trees for c in t.children_per_round if c != UINT32_MAX)
    assert children == list(range(1, n))


def test_bad_inputs_raise_before_anything_runs(emu_device, ttnn, no_launch):
    q = emu_device.from_torch(torch.randn(1, 2, 8, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    k = emu_device.from_torch(torch.randn(2, 1, 128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    v = emu_device.from_torch(torch.randn(2, 1, 128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    with pytest.raises(ValueError, match="cur_pos, cur_pos_tensor: exactly one"):
        upstream.scaled_dot_product_attention_decode(q, k, v)
    with pytest.raises(ValueError, match=r"cur_pos\[1\]=128"):
        upstream.scaled_dot_product_attention_decode(q, k, v, cur_pos=[3, 128])
    q2 = emu_device.from_torch(torch.randn(2, 2, 8, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    with pytest.raises(ValueError, match="one token per user"):
        upstream.scaled_dot_product_attention_decode(q2, k, v, cur_pos=[3, 4])
    with pytest.raises(ValueError, match="page_table_tensor"):
        upstream.paged_scaled_dot_product_attention_decode(
            q, k, v, torch.zeros(2, 4, dtype=torch.int32) + 7, cur_pos=[3, 4]
        )
    with pytest.raises(ValueError, match="k_chunk_size"):
        bad = ttnn.SDPAProgramConfig(
            compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), q_chunk_size=0, k_chunk_size=96
        )
        upstream.scaled_dot_product_attention_decode(q, k, v, cur_pos=[3, 4], program_config=bad)
    # Device values are the kernels' to read (upstream trusts them); validate_device_tensors=True reads them back.
    positions = emu_device.from_torch(
        torch.tensor([3, 500], dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT
    )
    with pytest.raises(ValueError, match=r"cur_pos_tensor\[1\]=500 \(read back"):
        upstream.scaled_dot_product_attention_decode(q, k, v, cur_pos_tensor=positions, validate_device_tensors=True)
