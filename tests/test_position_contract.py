"""The position contract (docs/DESIGN.md): what a cache, a mask or a run-time position holds where no query may look
never reaches a visible row.

Each test plants garbage (NaN, +-Inf) or out-of-range run-time values, runs the op on the emulator, and compares
with the golden model on a clean copy of the same inputs; rows that must be zeros must be exactly zero. Inputs are
seeded per test and the seed is in every failure message.
"""

from __future__ import annotations

import pytest
import torch

from decode_harness import decode_config as _config
from decode_harness import int32 as _int32
from decode_harness import tile as _tile
from output_checks import check_output
from ttflashdecode import golden
from ttflashdecode.ops.decode import api as op_module

GARBAGE = (float("nan"), float("inf"), float("-inf"), 3.0e38)


def _poisoned_output(device, shape):
    return _tile(device, torch.full(shape, float("nan")))


def _plant(x: torch.Tensor, where, gen: torch.Generator) -> torch.Tensor:
    """``x`` with every element selected by ``where`` replaced by a random garbage value."""
    pick = torch.randint(len(GARBAGE), x.shape, generator=gen)
    garbage = torch.tensor(GARBAGE)[pick]
    return torch.where(where, garbage, x)


@pytest.mark.parametrize("kv_dtype", ["bfloat16", "bfloat8_b", "bfloat4_b"])
@pytest.mark.parametrize("window", [None, 40])
def test_garbage_outside_the_visible_positions_never_reaches_the_output(emu_device, kv_dtype, window):
    """NaN/Inf in K and V past each user's cur_pos (inside its last tile and chunk) and before its sliding window
    (inside its first tile) contribute nothing; q_len 2 makes the two query rows see different positions."""
    seed = 1000 + 100 * ["bfloat16", "bfloat8_b", "bfloat4_b"].index(kv_dtype) + (window or 0)
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, S, q_len = 3, 8, 2, 64, 256, 2
    cur_pos = [100, 37, 255]
    q = torch.randn(q_len, b, nq, d, generator=gen)
    k = torch.randn(b, nkv, S, d, generator=gen)
    v = torch.randn(b, nkv, S, d, generator=gen)
    pos = torch.arange(S)[None, None, :, None]
    last = torch.tensor(cur_pos)[:, None, None, None]
    hidden = pos > last
    if window:
        hidden |= pos < last - q_len + 1 - window + 1
    k_bad, v_bad = _plant(k, hidden.expand_as(k), gen), _plant(v, hidden.expand_as(v), gen)

    out = op_module.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k_bad, kv_dtype),
        _tile(emu_device, v_bad, kv_dtype),
        cur_pos=cur_pos,
        sliding_window_size=window,
        program_config=_config(),
        output_tensor=_poisoned_output(emu_device, (q_len, b, nq, d)),
    )
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, kv_dtype),
        golden.quantize_like_device(v, kv_dtype),
        cur_pos=cur_pos,
        sliding_window_size=window,
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, f"{kv_dtype} window={window}", kv_dtype)


def test_garbage_in_unused_page_slots_and_blocks_is_never_read(emu_device):
    """Page-table slots past a user's position hold garbage entries, and blocks no needed slot names hold NaN."""
    seed = 2024
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, block, per_user = 2, 8, 1, 64, 32, 8
    cur_pos = [70, 200]
    num_blocks = b * per_user + 4
    table = torch.randperm(num_blocks, generator=gen)[: b * per_user].reshape(b, per_user).to(torch.int32)
    used = {int(table[u, s]) for u, p in enumerate(cur_pos) for s in range(p // block + 1)}
    for u, p in enumerate(cur_pos):
        table[u, p // block + 1 :] = torch.tensor([-1, 10**6, -(2**31), num_blocks] * per_user)[
            : per_user - p // block - 1
        ]
    q = torch.randn(1, b, nq, d, generator=gen)
    k = torch.randn(num_blocks, nkv, block, d, generator=gen)
    v = torch.randn(num_blocks, nkv, block, d, generator=gen)
    unused = torch.tensor([i not in used for i in range(num_blocks)])[:, None, None, None]
    k_bad, v_bad = _plant(k, unused.expand_as(k), gen), _plant(v, unused.expand_as(v), gen)

    out = op_module.paged_scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k_bad, "bfloat8_b"),
        _tile(emu_device, v_bad, "bfloat8_b"),
        _int32(emu_device, table.tolist()),
        cur_pos=cur_pos,
        program_config=_config(),
        output_tensor=_poisoned_output(emu_device, (1, b, nq, d)),
    )
    clean_table = torch.where((table >= 0) & (table < num_blocks), table, torch.zeros_like(table))
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, "bfloat8_b"),
        golden.quantize_like_device(v, "bfloat8_b"),
        cur_pos=cur_pos,
        page_table=clean_table,
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, "paged, garbage slots", "bfloat8_b")


@pytest.mark.parametrize("with_sink", [False, True])
def test_minus_inf_masks(emu_device, with_sink):
    """A padding mask of -inf over a whole k chunk of one row is exact; a user the mask hides everywhere gets zeros
    (with or without attention sinks), never NaN."""
    seed = 77 + with_sink
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, S = 3, 8, 2, 64, 256
    q = torch.randn(1, b, nq, d, generator=gen)
    k, v = torch.randn(b, nkv, S, d, generator=gen), torch.randn(b, nkv, S, d, generator=gen)
    mask = torch.randn(b, nq, 1, S, generator=gen)
    mask[0, :, :, :128] = float("-inf")  # chunks 0-1 of user 0 hidden from every head
    mask[1, 3, :, 64:] = float("-inf")  # head 3 of user 1 sees only chunk 0
    mask[2] = float("-inf")  # user 2 sees nothing
    sink = torch.randn(1, nq, generator=gen) * 2 if with_sink else None
    kwargs = {"attention_sink": _tile(emu_device, sink)} if with_sink else {}

    out = op_module.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k),
        _tile(emu_device, v),
        is_causal=False,
        attn_mask=_tile(emu_device, mask),
        program_config=_config(),
        output_tensor=_poisoned_output(emu_device, (1, b, nq, d)),
        **kwargs,
    )
    expected = golden.sdpa_decode(
        *(golden.quantize_like_device(x, "bfloat16") for x in (q, k, v)),
        is_causal=False,
        attn_mask=golden.quantize_like_device(mask, "bfloat16"),
        attention_sink=None if sink is None else golden.quantize_like_device(sink, "bfloat16"),
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, f"-inf mask, sink={with_sink}", zero_users=(2,))


@pytest.mark.parametrize("q_len", [1, 2])
def test_out_of_range_device_positions_skip_their_user(emu_device, q_len):
    """cur_pos values the kernels cannot use (below -1, past the cache, too small for q_len) give zero rows for
    that user only; nothing outside the cache is read."""
    seed = 31 + q_len
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, S = 5, 8, 2, 64, 256
    cur_pos = [-7, S, 130, S + 10**6, q_len - 2]  # users 0, 1, 3 and 4 are out of contract
    q = torch.randn(q_len, b, nq, d, generator=gen)
    k, v = torch.randn(b, nkv, S, d, generator=gen), torch.randn(b, nkv, S, d, generator=gen)
    tk = _tile(emu_device, k, "bfloat8_b")
    out, run = op_module.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        tk,
        _tile(emu_device, v, "bfloat8_b"),
        cur_pos_tensor=_int32(emu_device, cur_pos),
        program_config=_config(),
        output_tensor=_poisoned_output(emu_device, (q_len, b, nq, d)),
        return_stats=True,
    )
    clean = [p if q_len - 1 <= p < S else -1 for p in cur_pos]
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, "bfloat8_b"),
        golden.quantize_like_device(v, "bfloat8_b"),
        cur_pos=clean,
    )
    check_output(
        emu_device.to_torch(out).float(), expected, seed, f"q_len={q_len}", "bfloat8_b", zero_users=(0, 1, 3, 4)
    )
    # Only user 2's K tiles were read: positions 0..130 of both kv heads.
    reads = run.stats.pages_read(tk)
    assert sum(reads.values()) == nkv * (130 // 32 + 1) * (d // 32), f"[seed {seed}] K pages read: {dict(reads)}"


def test_page_table_entries_outside_the_cache_skip_their_user(emu_device):
    """A needed page-table entry below 0 or past the last block skips that user (zeros) instead of reading outside
    the K/V tensors; the other users are unaffected."""
    seed = 4242
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, block, per_user = 3, 8, 1, 64, 64, 4
    num_blocks = b * per_user
    table = torch.randperm(num_blocks, generator=gen).reshape(b, per_user).to(torch.int32)
    cur_pos = [200, 150, 255]
    table[0, 1] = num_blocks + 3  # needed by user 0 (positions 64..127)
    table[1, 2] = -7  # needed by user 1 (positions 128..150)
    q = torch.randn(1, b, nq, d, generator=gen)
    k = torch.randn(num_blocks, nkv, block, d, generator=gen)
    v = torch.randn(num_blocks, nkv, block, d, generator=gen)
    tk = _tile(emu_device, k)
    out, run = op_module.paged_scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        tk,
        _tile(emu_device, v),
        _int32(emu_device, table.tolist()),
        cur_pos_tensor=_int32(emu_device, cur_pos),
        program_config=_config(),
        output_tensor=_poisoned_output(emu_device, (1, b, nq, d)),
        return_stats=True,
    )
    clean_table = torch.where((table >= 0) & (table < num_blocks), table, torch.zeros_like(table))
    expected = golden.sdpa_decode(
        *(golden.quantize_like_device(x, "bfloat16") for x in (q, k, v)),
        cur_pos=[-1, -1, 255],
        page_table=clean_table,
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, "bad page entries", zero_users=(0, 1))
    reads = run.stats.pages_read(tk)
    assert all(0 <= page < tk.buffer_num_pages() for page in reads), f"[seed {seed}] read outside K: {dict(reads)}"
    assert sum(reads.values()) == nkv * (255 // 32 + 1) * (d // 32), f"[seed {seed}] K pages read: {dict(reads)}"
