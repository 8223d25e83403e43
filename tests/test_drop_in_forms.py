"""Every tensor form the op accepts as a drop-in for ``ttnn.transformer``'s decode ops, each against the golden model.

One test per accepted form: q (DRAM / L1 interleaved / L1 height-sharded TILE, ROW_MAJOR in DRAM or L1
height-sharded), the output memory config (DRAM, L1 interleaved, L1 height-sharded, the last also as a poisoned
output_tensor of one shard per (token, user) on other cores), masks (upstream's ``[b, 1, n_q_heads, S]`` and ours
``[b, 1 or n_q_heads, q_len, S]``), a cache whose logical length is not a multiple of 32, rows with nothing visible, and
the multi-latent attention (MLA) functions, whose cache must be read once, called directly and through
``patch_ttnn()`` in upstream's positional form. This file is the one home of the output memory configs (sharded
outputs included) and of MLA; the attention sink forms are tests/test_features.py's (test_attention_sink).

The golden sees the values the device stores (``golden.quantize_like_device``); inputs are seeded and the seed is in
every failure message. Where a form allows it the output is a NaN-filled ``output_tensor``, so an element the kernels
never write shows up as NaN; the form's natural call (no output_tensor) is run too and checked for its layout and
placement. The few small shapes are shared so the kernels compile a handful of times. Two more tests run the sink
forms (and the mask forms) back to back at the same address, where a cached program must not serve the other form.
"""

from __future__ import annotations

import time

import pytest
import torch

import ttflashdecode
from decode_harness import DecodeCase, assert_matches_golden, run_case, tag
from decode_harness import height_sharded as _height_sharded
from decode_harness import int32 as _int32
from decode_harness import tile as _tile
from output_checks import check_output
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.ops.decode import api as op_module

ttnn = import_ttnn()

# The suite's thresholds against the golden on the same stored inputs (tests/decode_harness.py's bfloat16 / bfloat8_b
# values); the max-abs bound scales with the output's magnitude, as in tests/test_position_contract.py.

B, NQ, NKV, D, S = 2, 8, 2, 64, 256  # the shared shape: GQA, two users
CUR_POS = [200, 37]


# ---- helpers --------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def fresh_program_cache():
    """Each test starts without the previous tests' program descriptors (kernel binaries stay cached on disk), so a
    test checks its own form; test_program_cache_* reuse descriptors on purpose."""
    op_module.clear_program_cache()


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _qkv(seed: int, b=B, nq=NQ, nkv=NKV, d=D, s=S, q_len=1):
    gen = _gen(seed)
    q = torch.randn(q_len, b, nq, d, generator=gen)
    k = torch.randn(b, nkv, s, d, generator=gen)
    v = torch.randn(b, nkv, s, d, generator=gen)  # distinct from K
    return gen, q, k, v


def _stored(x: torch.Tensor, dtype: str = "bfloat16") -> torch.Tensor:
    return golden.quantize_like_device(x, dtype)


def _poison(dev, shape, layout=ttnn.TILE_LAYOUT, memory_config=None):
    return dev.from_torch(
        torch.full(shape, float("nan")), dtype=ttnn.bfloat16, layout=layout, memory_config=memory_config
    )


def _is_mem(tensor, buffer_type, memory_layout) -> bool:
    mc = tensor.memory_config()
    return mc.buffer_type == buffer_type and mc.memory_layout == memory_layout


# ---- q ----------------------------------------------------------------------------------------------------------

Q_TILE_FORMS = {
    "dram-interleaved": lambda: ttnn.DRAM_MEMORY_CONFIG,
    "l1-interleaved": lambda: ttnn.L1_MEMORY_CONFIG,
    "l1-height-sharded": lambda: _height_sharded(B, [32, D]),  # one user's 32 padded head rows per core
}


@pytest.mark.parametrize("form", list(Q_TILE_FORMS))
def test_q_tile(emu_device, form):
    seed = 100 + list(Q_TILE_FORMS).index(form)
    _, q, k, v = _qkv(seed)
    mc = Q_TILE_FORMS[form]()
    tq = _tile(emu_device, q, memory_config=mc)
    assert tq.memory_config().buffer_type == mc.buffer_type and tq.memory_config().memory_layout == mc.memory_layout
    tk, tv = _tile(emu_device, k), _tile(emu_device, v)
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=CUR_POS)

    out = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=CUR_POS)
    assert out.layout == ttnn.TILE_LAYOUT, f"[seed {seed}] q {form}: output layout {out.layout}, expected TILE"
    assert _is_mem(out, ttnn.BufferType.DRAM, ttnn.TensorMemoryLayout.INTERLEAVED), f"q {form}: default output DRAM"
    check_output(emu_device.to_torch(out).float(), expected, seed, f"q {form}")
    del out
    poisoned = _poison(emu_device, (1, B, NQ, D))
    out = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=CUR_POS, output_tensor=poisoned)
    assert out is poisoned
    check_output(emu_device.to_torch(out).float(), expected, seed, f"q {form}, poisoned output_tensor")


def test_q_row_major_dram(emu_device):
    """A ROW_MAJOR q in DRAM gives a ROW_MAJOR output of logical shape [1, b, n_q_heads, head_dim]."""
    seed = 110
    _, q, k, v = _qkv(seed)
    tq = emu_device.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT)
    tk, tv = _tile(emu_device, k), _tile(emu_device, v)
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=CUR_POS)

    out = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=CUR_POS)
    assert out.layout == ttnn.ROW_MAJOR_LAYOUT, f"[seed {seed}] row-major q: output layout {out.layout}"
    assert tuple(out.shape) == (1, B, NQ, D), f"[seed {seed}] row-major q: output shape {tuple(out.shape)}"
    check_output(emu_device.to_torch(out).float(), expected, seed, "row-major q in DRAM")
    del out
    poisoned = _poison(emu_device, (1, B, NQ, D), layout=ttnn.ROW_MAJOR_LAYOUT)
    out = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=CUR_POS, output_tensor=poisoned)
    check_output(
        emu_device.to_torch(out).float(), expected, seed, "row-major q in DRAM, poisoned row-major output_tensor"
    )


def test_q_row_major_l1_height_sharded(emu_device):
    """Upstream's row-major q form: L1 height-sharded, one user's [n_q_heads, head_dim] rows per core."""
    seed = 111
    _, q, k, v = _qkv(seed)
    mc = _height_sharded(B, [NQ, D])
    tq = emu_device.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, memory_config=mc)
    tk, tv = _tile(emu_device, k), _tile(emu_device, v)
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=CUR_POS)

    out = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=CUR_POS)
    assert out.layout == ttnn.ROW_MAJOR_LAYOUT, f"[seed {seed}] row-major sharded q: output layout {out.layout}"
    assert tuple(out.shape) == (1, B, NQ, D)
    check_output(emu_device.to_torch(out).float(), expected, seed, "row-major height-sharded q")
    del out
    poisoned = _poison(emu_device, (1, B, NQ, D), layout=ttnn.ROW_MAJOR_LAYOUT)
    out = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=CUR_POS, output_tensor=poisoned)
    check_output(emu_device.to_torch(out).float(), expected, seed, "row-major height-sharded q, poisoned output_tensor")


# ---- output memory config ---------------------------------------------------------------------------------------

OUT_FORMS = {
    "dram-interleaved": (lambda: ttnn.DRAM_MEMORY_CONFIG, ttnn.BufferType.DRAM, ttnn.TensorMemoryLayout.INTERLEAVED),
    "l1-interleaved": (lambda: ttnn.L1_MEMORY_CONFIG, ttnn.BufferType.L1, ttnn.TensorMemoryLayout.INTERLEAVED),
    "l1-height-sharded": (
        lambda: _height_sharded(B, [32, D]),
        ttnn.BufferType.L1,
        ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
    ),
}


@pytest.mark.parametrize("form", list(OUT_FORMS))
def test_output_memory_config(emu_device, form):
    seed = 120 + list(OUT_FORMS).index(form)
    _, q, k, v = _qkv(seed)
    make_mc, buffer_type, memory_layout = OUT_FORMS[form]
    tq, tk, tv = _tile(emu_device, q), _tile(emu_device, k), _tile(emu_device, v)
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=CUR_POS)

    out = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=CUR_POS, memory_config=make_mc())
    assert _is_mem(out, buffer_type, memory_layout), f"[seed {seed}] output {form}: got {out.memory_config()}"
    check_output(emu_device.to_torch(out).float(), expected, seed, f"output {form}")
    del out
    poisoned = _poison(emu_device, (1, B, NQ, D), memory_config=make_mc())
    out = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=CUR_POS, output_tensor=poisoned)
    check_output(emu_device.to_torch(out).float(), expected, seed, f"output {form}, poisoned output_tensor")


@pytest.mark.parametrize("q_len", [1, 2])
def test_l1_height_sharded_output_tensor(emu_device, q_len):
    """A poisoned L1 height-sharded output_tensor, one shard per (token, user) on cores other than the ones computing
    it: the writer scatters rows into them by NOC; a skipped user (cur_pos -1) gets its zeros, every tile written."""
    case = DecodeCase(
        4,
        8,
        2,
        64,
        512,
        (511, 100, -1, 300),
        "bfloat8_b",
        k_chunk_size=64,
        max_cores_per_head_batch=4,
        q_len=q_len,
        out_sharded=True,
    )
    outcome = run_case(
        emu_device,
        case,
        to_device=lambda x, dtype, **kw: _tile(emu_device, x, dtype, **kw),
        to_torch=emu_device.to_torch,
    )
    assert_matches_golden(outcome, case)
    written = outcome.stats.pages_written(outcome.out_tensor)
    assert len(written) == outcome.out_tensor.buffer_num_pages(), f"{tag(outcome.seed)} every output tile is written"


# ---- attention sinks --------------------------------------------------------------------------------------------

# The two sink forms (upstream's [32, 32] tile, ours [1, n_q_heads]) each against the golden: tests/test_features.py,
# their one home (test_attention_sink). Here they run back to back through the program cache.
SINK_SCALE = 0.1  # not the default 1/sqrt(64): the sink must meet the call's scale


def test_program_cache_tells_sink_forms_apart(emu_device):
    """Upstream's [32, 32] sink, then ours [1, n_q_heads] at the same address, every other tensor the same: the
    second call must not reuse the first call's program (which reads the sink in the other form)."""
    seed = 132
    gen, q, k, v = _qkv(seed)
    tq, tk, tv = _tile(emu_device, q), _tile(emu_device, k), _tile(emu_device, v)
    pos, out = _int32(emu_device, CUR_POS), _poison(emu_device, (1, B, NQ, D))
    logits = torch.randn(NQ, generator=gen) * 2
    upstream = torch.zeros(32, 32)
    upstream[:NQ, 0] = logits / SINK_SCALE
    ours = logits.reshape(1, NQ) + 1.0  # different logits, so a mix-up shows
    addresses = []
    for what, sink, golden_sink in (
        ("[32, 32] sink", upstream, SINK_SCALE * _stored(upstream)[:NQ, 0].reshape(1, NQ)),
        ("[1, n_q_heads] sink after a [32, 32] one at the same address", ours, _stored(ours)),
    ):
        tsink = _tile(emu_device, sink)
        addresses.append(tsink.buffer_address())
        ttflashdecode.scaled_dot_product_attention_decode(
            tq, tk, tv, cur_pos_tensor=pos, scale=SINK_SCALE, attention_sink=tsink, output_tensor=out
        )
        expected = golden.sdpa_decode(
            _stored(q), _stored(k), _stored(v), cur_pos=CUR_POS, scale=SINK_SCALE, attention_sink=golden_sink
        )
        check_output(emu_device.to_torch(out).float(), expected, seed, what)
        tsink.deallocate()
    assert addresses[0] == addresses[1], f"the sinks must share an address for this test to mean anything: {addresses}"


# ---- attention masks --------------------------------------------------------------------------------------------


def _random_mask(gen, shape, hidden_fraction=0.3):
    mask = torch.randn(*shape, generator=gen)
    hidden = torch.rand(mask.shape, generator=gen) < hidden_fraction
    hidden[..., 0] = False  # every row keeps a visible position
    return mask.masked_fill(hidden, float("-inf"))


def test_attn_mask_upstream_form(emu_device):
    """Upstream's decode mask [b, 1, n_q_heads, S] (q_len 1: its rows are the heads), non-causal."""
    seed = 140
    gen, q, k, v = _qkv(seed)
    mask = _random_mask(gen, (B, 1, NQ, S))
    golden_mask = _stored(mask).permute(0, 2, 1, 3)  # -> [b, n_q_heads, q_len 1, S]
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), is_causal=False, attn_mask=golden_mask)
    out = ttflashdecode.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k),
        _tile(emu_device, v),
        is_causal=False,
        attn_mask=_tile(emu_device, mask),
        output_tensor=_poison(emu_device, (1, B, NQ, D)),
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, "mask [b, 1, n_q_heads, S] (upstream form)")


@pytest.mark.parametrize("mask_heads, q_len", [(1, 1), (NQ, 2)])
def test_attn_mask_our_form(emu_device, mask_heads, q_len):
    """Ours: [b, 1 or n_q_heads, q_len, S], non-causal."""
    seed = 141 + q_len
    gen, q, k, v = _qkv(seed, q_len=q_len)
    mask = _random_mask(gen, (B, mask_heads, q_len, S))
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), is_causal=False, attn_mask=_stored(mask))
    out = ttflashdecode.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k),
        _tile(emu_device, v),
        is_causal=False,
        attn_mask=_tile(emu_device, mask),
        output_tensor=_poison(emu_device, (q_len, B, NQ, D)),
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, f"mask [b, {mask_heads}, {q_len}, S] (our form)")


def test_program_cache_tells_mask_forms_apart(emu_device):
    """Ours [b, n_q_heads, 1, S], then upstream's [b, 1, n_q_heads, S] at the same address (same heads, same page
    size, another page order), every other tensor the same: the second call must not reuse the first call's
    program."""
    seed = 143
    gen, q, k, v = _qkv(seed)
    tq, tk, tv = _tile(emu_device, q), _tile(emu_device, k), _tile(emu_device, v)
    out = _poison(emu_device, (1, B, NQ, D))
    ours = _random_mask(gen, (B, NQ, 1, S))
    upstream = _random_mask(gen, (B, 1, NQ, S))
    tmask = _tile(emu_device, ours)
    first = tmask.buffer_address()
    ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, is_causal=False, attn_mask=tmask, output_tensor=out)
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), is_causal=False, attn_mask=_stored(ours))
    check_output(emu_device.to_torch(out).float(), expected, seed, "[b, n_q_heads, 1, S] mask")
    # The smaller upstream mask takes the first one's place; a filler takes the rest of it, so the positions the op
    # uploads for a non-causal call land where they did in the first call (12 DRAM banks, one tile per bank and row).
    freed_pages = tmask.buffer_num_pages()
    tmask.deallocate()
    tmask = _tile(emu_device, upstream)
    filler_rows = -(-freed_pages // 12) - -(-tmask.buffer_num_pages() // 12)
    filler = _tile(emu_device, torch.zeros(12 * filler_rows * 32, 32)) if filler_rows else None
    assert tmask.buffer_address() == first, f"the masks must share an address: {first} != {tmask.buffer_address()}"
    ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, is_causal=False, attn_mask=tmask, output_tensor=out)
    expected = golden.sdpa_decode(
        _stored(q), _stored(k), _stored(v), is_causal=False, attn_mask=_stored(upstream).permute(0, 2, 1, 3)
    )
    check_output(
        emu_device.to_torch(out).float(),
        expected,
        seed,
        "[b, 1, n_q_heads, S] mask after a [b, n_q_heads, 1, S] one at the same address",
    )
    del filler


# ---- a cache of 1000 positions (stored as 1024 rows) ------------------------------------------------------------

S_ODD = 1000


def _negative_score_inputs(seed: int):
    """q >= 0 and k <= 0, so every real score is clearly negative (about -5 after scaling): a padded key (score 0)
    that were attended would outweigh each real key ~e^5 times and shrink the output visibly."""
    gen, q, k, v = _qkv(seed, s=S_ODD)
    return gen, q.abs(), -k.abs(), v


def test_kv_len_1000_causal(emu_device):
    seed = 150
    _, q, k, v = _negative_score_inputs(seed)
    cur_pos = [S_ODD - 1, 500]
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=cur_pos)
    out = ttflashdecode.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k),
        _tile(emu_device, v),
        cur_pos=cur_pos,
        output_tensor=_poison(emu_device, (1, B, NQ, D)),
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, f"kv_len {S_ODD}, causal, cur_pos {cur_pos}")


def test_kv_len_1000_non_causal_without_mask(emu_device):
    """The tile-padded tail (positions 1000..1023) must not be attended."""
    seed = 151
    _, q, k, v = _negative_score_inputs(seed)
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), is_causal=False)
    out = ttflashdecode.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k),
        _tile(emu_device, v),
        is_causal=False,
        output_tensor=_poison(emu_device, (1, B, NQ, D)),
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, f"kv_len {S_ODD}, non-causal, no mask")


def test_kv_len_1000_non_causal_with_mask(emu_device):
    """A mask of the logical length 1000 (upstream's form [b, 1, n_q_heads, 1000])."""
    seed = 152
    gen, q, k, v = _negative_score_inputs(seed)
    mask = _random_mask(gen, (B, 1, NQ, S_ODD))
    golden_mask = _stored(mask).permute(0, 2, 1, 3)
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), is_causal=False, attn_mask=golden_mask)
    out = ttflashdecode.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k),
        _tile(emu_device, v),
        is_causal=False,
        attn_mask=_tile(emu_device, mask),
        output_tensor=_poison(emu_device, (1, B, NQ, D)),
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, f"kv_len {S_ODD}, non-causal, mask of {S_ODD}")


def test_kv_len_1000_cur_pos_past_the_logical_length_is_refused(emu_device):
    """Positions are checked against the logical length (upstream checks host positions against the padded one)."""
    _, q, k, v = _qkv(153, s=S_ODD)
    with pytest.raises(ValueError, match=r"cur_pos\[0\]=1000: expected an int in \[-1, 1000\)"):
        ttflashdecode.scaled_dot_product_attention_decode(
            _tile(emu_device, q), _tile(emu_device, k), _tile(emu_device, v), cur_pos=[S_ODD, 5]
        )


# ---- rows with no visible position ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["host-list", "cur_pos_tensor"])
def test_cur_pos_minus_one_rows_exactly_zero(emu_device, source):
    seed = 160
    _, q, k, v = _qkv(seed)
    cur_pos = [-1, 100] if source == "host-list" else [100, -1]
    skipped = cur_pos.index(-1)
    positions = {"cur_pos": cur_pos} if source == "host-list" else {"cur_pos_tensor": _int32(emu_device, cur_pos)}
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=cur_pos)
    out = ttflashdecode.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k),
        _tile(emu_device, v),
        **positions,
        output_tensor=_poison(emu_device, (1, B, NQ, D)),
    )
    check_output(
        emu_device.to_torch(out).float(), expected, seed, f"cur_pos {cur_pos} ({source})", zero_users=(skipped,)
    )


@pytest.mark.parametrize("with_sink", [False, True])
def test_mask_all_minus_inf_user_exactly_zero(emu_device, with_sink):
    """A user whose mask is -inf everywhere gets exactly zero (with or without upstream's sink), never NaN."""
    seed = 170 + with_sink
    gen, q, k, v = _qkv(seed)
    mask = _random_mask(gen, (B, 1, NQ, S))
    mask[0] = float("-inf")
    kwargs, golden_sink = {}, None
    if with_sink:
        sink = torch.zeros(32, 32)
        sink[:NQ, 0] = torch.randn(NQ, generator=gen) * 2 / SINK_SCALE
        kwargs["attention_sink"] = _tile(emu_device, sink)
        golden_sink = SINK_SCALE * _stored(sink)[:NQ, 0].reshape(1, NQ)
    expected = golden.sdpa_decode(
        _stored(q),
        _stored(k),
        _stored(v),
        is_causal=False,
        scale=SINK_SCALE,
        attn_mask=_stored(mask).permute(0, 2, 1, 3),
        attention_sink=golden_sink,
    )
    out = ttflashdecode.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k),
        _tile(emu_device, v),
        is_causal=False,
        scale=SINK_SCALE,
        attn_mask=_tile(emu_device, mask),
        output_tensor=_poison(emu_device, (1, B, NQ, D)),
        **kwargs,
    )
    check_output(
        emu_device.to_torch(out).float(), expected, seed, f"user 0 fully masked, sink={with_sink}", zero_users=(0,)
    )


# ---- multi-latent attention: V = the first head_dim_v columns of K, the cache read once ------------------------

MLA_NQ, MLA_D, MLA_DV = 16, 96, 64
MLA_BLOCK = 32


def _expected_k_pages(cur_pos, head_dim, n_kv_heads, rows_per_user, block_of=None):
    """Page -> 1 for every K tile holding positions 0..cur_pos of each user (head_dim / 32 tiles per position
    tile); ``block_of(u, position_tile)`` maps to a paged cache's (block, tile in block)."""
    dht, expected = head_dim // 32, {}
    for u, p in enumerate(cur_pos):
        if p < 0:
            continue
        for h in range(n_kv_heads):
            for s in range(p // 32 + 1):
                if block_of is None:
                    row_tile = (u * n_kv_heads + h) * (rows_per_user // 32) + s
                else:
                    block, t = block_of(u, s)
                    row_tile = (block * n_kv_heads + h) * (rows_per_user // 32) + t
                for d in range(dht):
                    expected[row_tile * dht + d] = expected.get(row_tile * dht + d, 0) + 1
    return expected


def _check_read_once(run, tk, expected_pages, seed, what):
    reads = dict(run.stats.pages_read(tk))
    total = sum(reads.values())
    assert total == sum(expected_pages.values()), (
        f"[seed {seed}] {what}: {total} K tile reads, expected exactly the {sum(expected_pages.values())} live K "
        "tiles (V must come from the K tiles already in L1, not a second read)"
    )
    assert reads == expected_pages, f"[seed {seed}] {what}: K tiles read != each live tile once"


# Each MLA function twice: called directly with host positions (V from a K of 96 columns), and through
# ttflashdecode.patch_ttnn() in upstream's positional form (q, k, None, head_dim_v) with a position tensor, over another
# head dim and, paged, another block size and K dtype. The call forms' argument mapping is checked cheaply with spies
# in tests/test_ttnn_patch.py; here each form runs end to end and the cache must be read once.
MLA_CALLS = {
    # name: (seeds plain / paged, n_q_heads, head_dim, block size and K dtype of the paged cache, through patched ttnn)
    "package-host-positions": ((180, 181), MLA_NQ, MLA_D, MLA_BLOCK, "bfloat8_b", False),
    "ttnn-positional-position-tensor": ((2024, 2025), 8, 128, 64, "bfloat16", True),
}


@pytest.mark.parametrize("call", list(MLA_CALLS))
def test_mla_flash_multi_latent_attention_decode(emu_device, call):
    (seed, _), nq, d, _, _, through_ttnn = MLA_CALLS[call]
    gen = _gen(seed)
    q = torch.randn(1, B, nq, d, generator=gen)
    k = torch.randn(B, 1, S, d, generator=gen)
    tq, tk = _tile(emu_device, q), _tile(emu_device, k)
    if through_ttnn:
        with ttflashdecode.patch_ttnn():
            out, run = ttnn.transformer.flash_multi_latent_attention_decode(
                tq, tk, None, MLA_DV, cur_pos_tensor=_int32(emu_device, CUR_POS), return_stats=True
            )
    else:
        out, run = ttflashdecode.flash_multi_latent_attention_decode(
            tq,
            tk,
            head_dim_v=MLA_DV,
            cur_pos=CUR_POS,
            output_tensor=_poison(emu_device, (1, B, nq, MLA_DV)),
            return_stats=True,
        )
    ks = _stored(k)
    expected = golden.sdpa_decode(_stored(q), ks, ks[..., :MLA_DV], cur_pos=CUR_POS)
    check_output(emu_device.to_torch(out).float(), expected, seed, f"MLA {d}/{MLA_DV}, {call}")
    _check_read_once(run, tk, _expected_k_pages(CUR_POS, d, 1, S), seed, f"MLA {d}/{MLA_DV}, {call}")


@pytest.mark.parametrize("call", list(MLA_CALLS))
def test_mla_paged_flash_multi_latent_attention_decode(emu_device, call):
    (_, seed), nq, d, block, kv_dtype, through_ttnn = MLA_CALLS[call]
    gen = _gen(seed)
    per_user = S // block
    num_blocks = B * per_user + (2 if through_ttnn else 3)
    table = torch.randperm(num_blocks, generator=gen)[: B * per_user].reshape(B, per_user).to(torch.int32)
    q = torch.randn(1, B, nq, d, generator=gen)
    k = torch.randn(num_blocks, 1, block, d, generator=gen)
    tq, tk, tt_table = _tile(emu_device, q), _tile(emu_device, k, kv_dtype), _int32(emu_device, table.tolist())
    if through_ttnn:
        with ttflashdecode.patch_ttnn():
            out, run = ttnn.transformer.paged_flash_multi_latent_attention_decode(
                tq, tk, None, MLA_DV, tt_table, cur_pos_tensor=_int32(emu_device, CUR_POS), return_stats=True
            )
    else:
        out, run = ttflashdecode.paged_flash_multi_latent_attention_decode(
            tq,
            tk,
            tt_table,
            head_dim_v=MLA_DV,
            cur_pos=CUR_POS,
            output_tensor=_poison(emu_device, (1, B, nq, MLA_DV)),
            return_stats=True,
        )
    ks = _stored(k, kv_dtype)
    expected = golden.sdpa_decode(_stored(q), ks, ks[..., :MLA_DV], cur_pos=CUR_POS, page_table=table)
    what = f"paged MLA {d}/{MLA_DV}, block {block}, {kv_dtype} K, {call}"
    check_output(emu_device.to_torch(out).float(), expected, seed, what, kv_dtype=kv_dtype)
    tpb = block // 32
    block_of = lambda u, s: (int(table[u, s // tpb]), s % tpb)  # noqa: E731
    _check_read_once(run, tk, _expected_k_pages(CUR_POS, d, 1, block, block_of), seed, what)


def test_mla_with_its_own_v_through_ttnn(emu_device):
    """Upstream's MLA function given its own V tensor (V head dim 64 < K's 128) is the plain op on that V: the patched
    call runs it end to end (tests/test_ttnn_patch.py checks the routing with spies)."""
    seed = 77
    gen = _gen(seed)
    q = torch.randn(1, B, 8, 128, generator=gen)
    k, v = torch.randn(B, 1, S, 128, generator=gen), torch.randn(B, 1, S, MLA_DV, generator=gen)
    with ttflashdecode.patch_ttnn():
        out = ttnn.transformer.flash_multi_latent_attention_decode(
            *(_tile(emu_device, x) for x in (q, k, v)), MLA_DV, cur_pos=CUR_POS
        )
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=CUR_POS)
    check_output(emu_device.to_torch(out).float(), expected, seed, "MLA with its own V (the plain op)")


DS_NQ, DS_D, DS_DV, DS_S = 128, 576, 512, 128  # DeepSeek-V3 per chip: 128 heads, 512 latent + 64 rope
DS_SECONDS = 120  # one call, kernels compiled on a cold cache included (measured ~5 s on a 2-core machine)


def test_mla_deepseek_576_512_short_cache(emu_device):
    seed = 182
    gen = _gen(seed)
    cur_pos = [DS_S - 1, 60]
    q = torch.randn(1, B, DS_NQ, DS_D, generator=gen)
    k = torch.randn(B, 1, DS_S, DS_D, generator=gen)
    tq, tk = _tile(emu_device, q), _tile(emu_device, k, "bfloat8_b")
    scale = DS_D**-0.5 * 1.3  # DeepSeek passes its own (mscale-adjusted) scale
    poisoned = _poison(emu_device, (1, B, DS_NQ, DS_DV))
    start = time.monotonic()
    out, run = ttflashdecode.flash_multi_latent_attention_decode(
        tq, tk, head_dim_v=DS_DV, cur_pos=cur_pos, scale=scale, output_tensor=poisoned, return_stats=True
    )
    got = emu_device.to_torch(out).float()
    seconds = time.monotonic() - start
    assert seconds < DS_SECONDS, f"[seed {seed}] MLA 576/512: one call took {seconds:.1f} s (> {DS_SECONDS} s)"
    ks = _stored(k, "bfloat8_b")
    expected = golden.sdpa_decode(_stored(q), ks, ks[..., :DS_DV], cur_pos=cur_pos, scale=scale)
    check_output(got, expected, seed, f"MLA {DS_D}/{DS_DV}, {DS_NQ} heads", kv_dtype="bfloat8_b")
    _check_read_once(run, tk, _expected_k_pages(cur_pos, DS_D, 1, DS_S), seed, f"MLA {DS_D}/{DS_DV}")
