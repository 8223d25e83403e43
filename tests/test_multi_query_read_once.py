"""Several queries per user read the user's cache once: q_len > 1 (consecutive tokens of one user) and upstream's
``spec_multi_pos_tiles`` (Tg speculative candidates of one batch row, each with its own causal bound).

Decode attention is memory bound, so what a multi-query call must not do is read a chunk of K/V once per query
position. Each test runs one call on the emulator, checks it against the golden (seeded inputs, output poisoned with
NaN, K/V garbage wherever no query looks) and counts the bytes read from the K and V tensors: exactly one read of
every position tile the group's queries need (the kernels read no tile past the last bound's), however many query
positions share it. A kernel that reads a chunk once per query position reads q_len (or Tg) times these bytes.
"""

from __future__ import annotations

import pytest
import torch

from decode_harness import decode_config as _config
from decode_harness import int32 as _int32
from decode_harness import seed_for, spec_paged_inputs
from decode_harness import tile as _tile
from output_checks import check_output
from ttflashdecode import golden
from ttflashdecode.ops.decode import api as op_module

GARBAGE = (float("nan"), float("inf"), float("-inf"), 3.0e38)
BLOCK = 32


def _garbage_where(x: torch.Tensor, hidden: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    junk = torch.tensor(GARBAGE)[torch.randint(len(GARBAGE), x.shape, generator=gen)]
    return torch.where(hidden, junk, x)


def _q(x):
    return golden.quantize_like_device(x, "bfloat16")


def _tiles_read(last_positions, head_dim: int) -> int:
    """Tiles of K (or V) one read of every position tile up to each group's last bound takes."""
    return sum((p // 32 + 1) * (head_dim // 32) for p in last_positions if p >= 0)


# Row 0's candidates sit in three chunks of 64 in no particular order; row 1's last candidate is skipped (-1) and the
# others share a tile; row 2 has a single live candidate.
SPEC_POSITIONS = [[203, 64, 130, 201], [95, 93, 94, -1], [-1, -1, 37, -1]]


@pytest.mark.parametrize("cores", [1, 4])
def test_spec_multi_pos_reads_a_row_once(emu_device, cores):
    seed = seed_for(f"spec read once {cores}")
    gen = torch.Generator().manual_seed(seed)
    rows, tg, d, per_user = len(SPEC_POSITIONS), len(SPEC_POSITIONS[0]), 64, 8
    cur_pos = [p for row in SPEC_POSITIONS for p in row]
    table, q, k, v, hidden = spec_paged_inputs(gen, cur_pos, tg, d, per_user, BLOCK)
    expected = golden.paged_sdpa_decode(_q(q), _q(k), _q(v), table, cur_pos=cur_pos, spec_multi_pos_tiles=tg)
    tk, tv = _tile(emu_device, _garbage_where(k, hidden, gen)), _tile(emu_device, _garbage_where(v, hidden, gen))
    out, run = op_module.paged_scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        tk,
        tv,
        _int32(emu_device, table.tolist()),
        cur_pos_tensor=_int32(emu_device, cur_pos),
        spec_multi_pos_tiles=tg,
        program_config=_config(64, cores),
        output_tensor=_tile(emu_device, torch.full(q.shape, float("nan"))),
        return_stats=True,
    )
    # One (batch row, kv head) group a row: its candidates' Tg tiles of rows share the row's chunks.
    assert run.plan.num_groups == rows and run.plan.shapes.PNHt == tg, run.plan.describe()
    as_users = (1, rows * tg, 32, d)
    skipped = [u for u, p in enumerate(cur_pos) if p < 0]
    check_output(
        emu_device.to_torch(out).float().reshape(as_users), expected.reshape(as_users), seed, "spec", zero_users=skipped
    )
    tiles = _tiles_read([max(row) for row in SPEC_POSITIONS], d)
    assert run.stats.bytes_read_from(tk) == tiles * tk.buffer_page_size(), "K bytes read"
    assert run.stats.bytes_read_from(tv) == tiles * tv.buffer_page_size(), "V bytes read"


def test_q_len_4_reads_each_chunk_once(emu_device):
    """q [4, b, 8, d], one kv head: the 4 tokens x 8 heads of a user are the 32 rows of one group."""
    seed = seed_for("q_len 4 read once")
    gen = torch.Generator().manual_seed(seed)
    q_len, b, nq, d, kv_len = 4, 3, 8, 64, 256
    cur_pos = [200, 3, 131]
    q = torch.randn(q_len, b, nq, d, generator=gen)
    k = torch.randn(b, 1, kv_len, d, generator=gen)
    v = torch.randn(b, 1, kv_len, d, generator=gen)
    hidden = (torch.arange(kv_len)[None, :] > torch.tensor(cur_pos)[:, None])[:, None, :, None].expand_as(k)
    expected = golden.sdpa_decode(_q(q), _q(k), _q(v), cur_pos=cur_pos)
    tk, tv = _tile(emu_device, _garbage_where(k, hidden, gen)), _tile(emu_device, _garbage_where(v, hidden, gen))
    out, run = op_module.scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        tk,
        tv,
        cur_pos_tensor=_int32(emu_device, cur_pos),
        program_config=_config(64, 4),
        return_stats=True,
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, "q_len 4")
    tiles = _tiles_read(cur_pos, d)
    assert run.stats.bytes_read_from(tk) == tiles * tk.buffer_page_size(), "K bytes read"
    assert run.stats.bytes_read_from(tv) == tiles * tv.buffer_page_size(), "V bytes read"


def test_groups_of_several_row_tiles_take_two_chunks_a_core():
    """The derived k_chunk_size gives a compute-bound group (query rows over one tile: q_len x heads, or spec
    candidates) two chunks a core, so compute overlaps the next chunk's reads; one tile of rows keeps one chunk."""
    from ttflashdecode.plan import DecodeShapes
    from ttflashdecode.plan.rules import default_k_chunk_size

    one_tile = DecodeShapes(batch=8, n_q_heads=8, n_kv_heads=1, head_dim=128, kv_len=4096, q_len=4)
    q_len_8 = DecodeShapes(batch=8, n_q_heads=8, n_kv_heads=1, head_dim=128, kv_len=4096, q_len=8)
    spec_4 = DecodeShapes(batch=32, n_q_heads=32, n_kv_heads=1, head_dim=128, kv_len=4096, users_per_page_row=4)
    assert (one_tile.PNHt, q_len_8.PNHt, spec_4.PNHt) == (1, 2, 4)
    assert default_k_chunk_size(one_tile, 8, num_cores=8) == 512  # 8 cores: not DRAM-bound (plan.rules)
    assert default_k_chunk_size(q_len_8, 8) == default_k_chunk_size(spec_4, 8) == 256
    long_spec_4 = DecodeShapes(batch=32, n_q_heads=32, n_kv_heads=1, head_dim=128, kv_len=16384, users_per_page_row=4)
    assert default_k_chunk_size(long_spec_4, 8) == 512  # past 512 positions a chunk: the cap, as before
