"""Cache fills (ttflashdecode.fill_cache / paged_fill_cache) on the emulator, against a host model.

The host model: the user's positions of the cache hold the prefill's values as Wormhole's packer writes them in the
cache's format (:func:`packer_model.packed_by_the_packer`, per 16-datum face row); every other value of the cache is
exactly what it was. Inputs are seeded random; the cache starts random too (a fill that writes nothing, or the wrong
user or block, cannot pass). Failures print the seed.
"""

from __future__ import annotations

import re

import pytest
import torch

import ttflashdecode
from decode_harness import emulated_n150, generator, seed_for, tag
from decode_harness import tile as tiles
from packer_model import packed_by_the_packer
from ttemu.ttnn_env import import_ttnn

ttnn = import_ttnn()
RM = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


@pytest.fixture(scope="module")
def dev():
    yield from emulated_n150()


def stored(values: torch.Tensor, dtype: str) -> torch.Tensor:
    """``values`` as a ``dtype`` tile holds them: bfloat16 input rows packed by the packer (rows of 16 datums)."""
    return packed_by_the_packer(values.to(torch.bfloat16).float(), dtype)


@pytest.mark.parametrize("cache_dtype", ["bfloat16", "bfloat8_b"])
def test_fill_cache_writes_one_users_prefill(dev, cache_dtype):
    """fill_cache(cache, input, batch_idx): user batch_idx's first seq_len positions get the prefill (converted from
    bfloat16 to the cache's format), from update_idx on; every other value stays."""
    seed = seed_for(f"test_fill_cache_writes_one_users_prefill[{cache_dtype}]")
    gen = generator(seed)
    b, n_kv, S, d, seq = 3, 2, 128, 64, 64
    cache = tiles(dev, torch.randn(b, n_kv, S, d, generator=gen), cache_dtype)
    before = dev.to_torch(cache).float()
    prefill = torch.randn(1, n_kv, seq, d, generator=gen)
    for batch_idx, update_idx in ((1, 0), (2, 32)):
        out, run = ttflashdecode.fill_cache(
            cache, tiles(dev, prefill, "bfloat16"), batch_idx, update_idx=update_idx, return_stats=True
        )
        assert out is cache
        before[batch_idx, :, update_idx : update_idx + seq] = stored(prefill[0], cache_dtype)
        after = dev.to_torch(cache).float()
        bad = (after != before).nonzero().tolist()
        assert not bad, f"{tag(seed)} batch_idx={batch_idx}: {len(bad)} values differ, first at {bad[:3]}"
    assert run.stats.bytes_written_to(cache) == n_kv * (seq // 32) * (d // 32) * cache.buffer_page_size()


@pytest.mark.parametrize("input_dtype", ["bfloat16", "bfloat8_b"])
def test_paged_fill_cache_through_the_page_table(dev, input_dtype):
    """paged_fill_cache with a device page table and batch_idx (tt_transformers' prefill call) and with a device
    batch_idx_tensor over two input rows: each user's blocks hold its prefill (a partial last block keeps its tail),
    blocks of other users and unused blocks stay; a bfloat8_b input into a bfloat8_b cache is copied exactly."""
    seed = seed_for(f"test_paged_fill_cache_through_the_page_table[{input_dtype}]")
    gen = generator(seed)
    n_kv, block, d, blocks_per_user, users = 2, 64, 32, 3, 3
    num_blocks = users * blocks_per_user + 1
    table = torch.randperm(num_blocks, generator=gen)[: users * blocks_per_user].reshape(users, blocks_per_user)
    cache = tiles(dev, torch.randn(num_blocks, n_kv, block, d, generator=gen), "bfloat8_b")
    page_table = dev.from_torch(table.to(torch.int32), **RM)
    expected = dev.to_torch(cache).float()

    def put(user, values):  # values [n_kv, seq, d], as stored
        for start in range(0, values.shape[1], block):
            chunk = values[:, start : start + block]
            expected[int(table[user, start // block]), :, : chunk.shape[1]] = chunk

    seq = 96  # one and a half blocks
    prefill = torch.randn(1, n_kv, seq, d, generator=gen)
    src = tiles(dev, prefill, input_dtype)
    ttflashdecode.paged_fill_cache(cache, src, page_table, batch_idx=2)
    put(2, stored(dev.to_torch(src).float()[0], "bfloat8_b"))
    assert torch.equal(dev.to_torch(cache).float(), expected), f"{tag(seed)} batch_idx=2"

    two = torch.randn(2, n_kv, 2 * block, d, generator=gen)
    src = tiles(dev, two, input_dtype)
    rows = dev.from_torch(torch.tensor([1, 0], dtype=torch.int32), **RM)
    ttflashdecode.paged_fill_cache(cache, src, page_table, batch_idx_tensor=rows)
    host = dev.to_torch(src).float()
    put(1, stored(host[0], "bfloat8_b"))
    put(0, stored(host[1], "bfloat8_b"))
    bad = (dev.to_torch(cache).float() != expected).nonzero().tolist()
    assert not bad, f"{tag(seed)} batch_idx_tensor: {len(bad)} values differ, first at {bad[:3]}"


def test_paged_fill_skips_targets_outside_the_cache_at_run_time(dev):
    """A device batch index past the page table's rows, or a table entry past the cache's blocks, writes nothing."""
    seed = seed_for("test_paged_fill_skips_targets_outside_the_cache_at_run_time")
    gen = generator(seed)
    cache = tiles(dev, torch.randn(4, 1, 32, 32, generator=gen), "bfloat16")
    table = dev.from_torch(torch.tensor([[0, 1], [2, 9]], dtype=torch.int32), **RM)  # user 1's block 1: outside
    before = dev.to_torch(cache).float()
    prefill = torch.randn(2, 1, 64, 32, generator=gen)
    rows = dev.from_torch(torch.tensor([5, 1], dtype=torch.int32), **RM)  # row 0: user 5 does not exist
    ttflashdecode.paged_fill_cache(cache, tiles(dev, prefill, "bfloat16"), table, batch_idx_tensor=rows)
    before[2, :, :32] = stored(prefill[1, :, :32], "bfloat16")  # user 1's block 0 only
    assert torch.equal(dev.to_torch(cache).float(), before), tag(seed)


@pytest.mark.parametrize("valid_len", [None, 200], ids=["padded_end", "valid_seq_len"])
def test_paged_fill_into_a_ring_keeps_the_last_positions(dev, valid_len):
    """cache_position_modulo (a sliding-window layer's ring of 128 positions: two blocks of 64, in 3-column page-table
    rows whose third column names a block no ring uses): a 320-position prefill keeps only its last 128 positions,
    position p at ring row p % 128; with valid_seq_len_tensor = 200 the ring ends at 200 rounded up to whole blocks
    (256), not at the padded 320, and keeps 128..255. The input is longer than the page table reaches."""
    seed = seed_for(f"test_paged_fill_into_a_ring_keeps_the_last_positions[{valid_len}]")
    gen = generator(seed)
    n_kv, block, d, ring, users, seq = 2, 64, 32, 128, 2, 320
    num_blocks = users * 3
    table = torch.randperm(num_blocks, generator=gen).reshape(users, 3)
    cache = tiles(dev, torch.randn(num_blocks, n_kv, block, d, generator=gen), "bfloat8_b")
    expected = dev.to_torch(cache).float()
    prefill = torch.randn(1, n_kv, seq, d, generator=gen)
    valid = None if valid_len is None else dev.from_torch(torch.tensor([valid_len], dtype=torch.int32), **RM)
    user = 1
    _, run = ttflashdecode.paged_fill_cache(
        cache,
        tiles(dev, prefill, "bfloat16"),
        dev.from_torch(table.to(torch.int32), **RM),
        batch_idx=user,
        cache_position_modulo=ring,
        valid_seq_len_tensor=valid,
        return_stats=True,
    )
    end = seq if valid_len is None else -(-valid_len // block) * block
    values = stored(prefill[0], "bfloat8_b")
    for p in range(end - ring, end):
        r = p % ring
        expected[int(table[user, r // block]), :, r % block] = values[:, p]
    bad = (dev.to_torch(cache).float() != expected).nonzero().tolist()
    assert not bad, f"{tag(seed)}: {len(bad)} values differ, first at {bad[:3]}"
    assert run.stats.bytes_written_to(cache) == n_kv * (ring // 32) * cache.buffer_page_size(), tag(seed)


@pytest.mark.parametrize(
    "call, named",
    [
        (lambda c, x, t: ttflashdecode.fill_cache(c, x, 4), "batch_idx=4"),
        (lambda c, x, t: ttflashdecode.fill_cache(c, x, 0, update_idx=16), "update_idx=16"),
        (lambda c, x, t: ttflashdecode.fill_cache(c, x, 0, update_idx=96), "update_idx=96"),
        (lambda c, x, t: ttflashdecode.paged_fill_cache(c, x, t, batch_idx=2), "batch_idx=2"),
        (lambda c, x, t: ttflashdecode.paged_fill_cache(c, x, torch.tensor([[7, 0]]), batch_idx=0), "page_table[0]"),
        (
            lambda c, x, t: ttflashdecode.paged_fill_cache(c, x, t, cache_position_modulo=64),
            "cache_position_modulo=64: expected a positive multiple of block_size=128",
        ),
        (
            lambda c, x, t: ttflashdecode.paged_fill_cache(c, x, t, cache_position_modulo=384),
            "cache_position_modulo=384: expected at most max_blocks_per_user * block_size = 2 * 128",
        ),
        (
            lambda c, x, t: ttflashdecode.paged_fill_cache(c, x, t, valid_seq_len_tensor=t),
            "valid_seq_len_tensor: only supported when cache_position_modulo is set",
        ),
        (
            lambda c, x, t: ttflashdecode.paged_fill_cache(c, x, t, cache_position_modulo=128, valid_seq_len_tensor=t),
            "valid_seq_len_tensor: expected a rank-1 tensor, got shape [1, 2]",
        ),
    ],
    ids=[
        "batch_idx",
        "update_idx_unaligned",
        "update_idx_past_end",
        "paged_batch_idx",
        "host_table_entry",
        "modulo",
        "modulo_past_table",
        "valid_len_without_ring",
        "valid_len_shape",
    ],
)
def test_bad_calls_raise_naming_the_argument(dev, call, named, no_launch):
    cache = tiles(dev, torch.zeros(2, 1, 128, 32), "bfloat16")
    prefill = tiles(dev, torch.zeros(1, 1, 64, 32), "bfloat16")
    table = dev.from_torch(torch.tensor([[0, 1]], dtype=torch.int32), **RM)
    with pytest.raises(ValueError, match=re.escape(named)):
        call(cache, prefill, table)
