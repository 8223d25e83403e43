"""Shared-prefix decode (cascade attention, ttflashdecode.ops.shared_prefix) against plain attention over each user's
concatenated cache (its group's prefix, then its own suffix), on the emulator.

Inputs are seeded random; every K/V position no query may see (past a prefix's length in its last block, past a
user's suffix position, in blocks no page table reaches) holds NaN / Inf / 3e38, so a kernel that reads or weighs
one shows it. The output starts poisoned with NaN (every element must be written). The read-once test counts the
bytes read from K and V on the emulator's DRAM counters: every prefix tile once per (group, kv head), every suffix
tile once per (user, kv head), nothing else.
"""

from __future__ import annotations

import math
import re

import pytest
import torch

from decode_harness import int32, seed_for, tile
from output_checks import check_output
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.config import ProgramConfig
from ttflashdecode.device_arch import chip_facts
from ttflashdecode.ops.shared_prefix import SharedPrefixDecodeWrapper, shared_prefix_decode
from ttflashdecode.plan import check_l1

GARBAGE = (float("nan"), float("inf"), float("-inf"), 3.0e38)


def _config(k_chunk_size: int, cores: int) -> ProgramConfig:
    return ProgramConfig(
        compute_with_storage_grid_size=(8, 8), k_chunk_size=k_chunk_size, max_cores_per_head_batch=cores
    )


class Case:
    """A two-level paged cache: ``groups[g]`` share prefix g of ``prefix_lens[g]`` positions; user u's suffix holds
    positions 0 .. suffix_pos[u]. Blocks are dealt at random from one pool (prefix blocks first, then suffix blocks,
    then spare blocks nobody reaches)."""

    def __init__(
        self,
        seed,
        *,
        n_q,
        n_kv,
        d,
        block,
        groups,
        prefix_lens,
        suffix_pos,
        kv_dtype="bfloat16",
        max_prefix_blocks=None,
        max_suffix_blocks=None,
        spare=2,
    ):
        self.seed, self.kv_dtype = seed, kv_dtype
        self.groups, self.prefix_lens, self.suffix_pos = groups, prefix_lens, suffix_pos
        self.batch = sum(len(g) for g in groups)
        self.n_q, self.n_kv, self.d, self.block = n_q, n_kv, d, block
        gen = torch.Generator().manual_seed(seed)
        prefix_need = [math.ceil(p / block) for p in prefix_lens]
        suffix_need = [(s + 1 + block - 1) // block for s in suffix_pos]
        self.max_prefix_blocks = max_prefix_blocks or max(prefix_need) + 1
        self.max_suffix_blocks = max_suffix_blocks or max(max(suffix_need), 1) + 1
        num_blocks = sum(prefix_need) + sum(suffix_need) + spare
        order = torch.randperm(num_blocks, generator=gen).tolist()
        taken = iter(order)
        # Entries past what a group / user needs are never read: they hold values no block has.
        self.prefix_table = torch.full((len(groups), self.max_prefix_blocks), 10**6, dtype=torch.int32)
        for g, n in enumerate(prefix_need):
            self.prefix_table[g, :n] = torch.tensor([next(taken) for _ in range(n)])
        self.suffix_table = torch.full((self.batch, self.max_suffix_blocks), -7, dtype=torch.int32)
        for u, n in enumerate(suffix_need):
            self.suffix_table[u, :n] = torch.tensor([next(taken) for _ in range(n)], dtype=torch.int32)
        self.q = torch.randn(1, self.batch, n_q, d, generator=gen)
        k = golden.quantize_like_device(torch.randn(num_blocks, n_kv, block, d, generator=gen), kv_dtype)
        v = golden.quantize_like_device(torch.randn(num_blocks, n_kv, block, d, generator=gen), kv_dtype)
        self.k, self.v = k, v
        visible = torch.zeros(num_blocks, block, dtype=torch.bool)  # (block, position in block) some query sees
        for g, p in enumerate(prefix_lens):
            for i in range(p):
                visible[self.prefix_table[g, i // block], i % block] = True
        for u, s in enumerate(suffix_pos):
            for i in range(s + 1):
                visible[self.suffix_table[u, i // block], i % block] = True
        hidden = (~visible)[:, None, :, None].expand(k.shape)
        junk_k = torch.tensor(GARBAGE)[torch.randint(len(GARBAGE), k.shape, generator=gen)]
        junk_v = torch.tensor(GARBAGE)[torch.randint(len(GARBAGE), v.shape, generator=gen)]
        self.k_dirty, self.v_dirty = torch.where(hidden, junk_k, k), torch.where(hidden, junk_v, v)

    def user_group(self, u):
        return next(g for g, users in enumerate(self.groups) if u in users)

    def expected(self) -> torch.Tensor:
        """Plain decode attention over each user's concatenated cache, prefix then suffix (golden.sdpa_decode)."""
        q = golden.quantize_like_device(self.q, "bfloat16")
        outs = []
        for u in range(self.batch):
            g = self.user_group(u)
            rows_k, rows_v = [], []
            for i in range(self.prefix_lens[g]):
                blk = int(self.prefix_table[g, i // self.block])
                rows_k.append(self.k[blk, :, i % self.block])
                rows_v.append(self.v[blk, :, i % self.block])
            for i in range(self.suffix_pos[u] + 1):
                blk = int(self.suffix_table[u, i // self.block])
                rows_k.append(self.k[blk, :, i % self.block])
                rows_v.append(self.v[blk, :, i % self.block])
            length = len(rows_k)
            if length == 0:  # nothing to attend to (only the tests' deliberately wrong goldens): zeros
                outs.append(torch.zeros(1, 1, self.n_q, self.d))
                continue
            padded = -(-length // 32) * 32
            kk = torch.zeros(1, self.n_kv, padded, self.d)
            vv = torch.zeros(1, self.n_kv, padded, self.d)
            kk[0, :, :length] = torch.stack(rows_k, dim=1)
            vv[0, :, :length] = torch.stack(rows_v, dim=1)
            outs.append(golden.sdpa_decode(q[:, u : u + 1], kk, vv, cur_pos=[length - 1]))
        return torch.cat(outs, dim=1)

    def run(self, device, *, config=None, cur_pos_on_device=False, return_stats=False, **kwargs):
        self.tk = tile(device, self.k_dirty, self.kv_dtype)
        self.tv = tile(device, self.v_dirty, self.kv_dtype)
        out = tile(device, torch.full((1, self.batch, self.n_q, self.d), float("nan")))
        positions = (
            dict(suffix_cur_pos_tensor=int32(device, self.suffix_pos))
            if cur_pos_on_device
            else dict(suffix_cur_pos=list(self.suffix_pos))
        )
        result = shared_prefix_decode(
            tile(device, self.q),
            self.tk,
            self.tv,
            groups=self.groups,
            prefix_lens=self.prefix_lens,
            prefix_page_table=int32(device, self.prefix_table),
            suffix_page_table=int32(device, self.suffix_table),
            program_config=config,
            output_tensor=out,
            return_stats=True,
            **positions,
            **kwargs,
        )
        return result if return_stats else result[0]

    def check(self, device, out, what):
        check_output(device.to_torch(out).float(), self.expected(), self.seed, what, self.kv_dtype)


# Llama-3.1-8B's per-chip GQA ratio (4 q heads per kv head), two groups of different sizes, non-consecutive users; one
# user with no suffix (-1), one whose suffix ends on a block edge, a prefix that ends mid-block.
MIXED = dict(
    n_q=8, n_kv=2, d=64, block=32, groups=[[0, 3, 4], [1, 2]], prefix_lens=[150, 64], suffix_pos=[40, -1, 31, 0, 95]
)


@pytest.mark.parametrize("kv_dtype, grid", [("bfloat16", (8, 8)), ("bfloat8_b", (2, 2))])
def test_matches_concatenated_attention(emu_device, kv_dtype, grid):
    """On a 2x2 grid every core serves several groups of both levels one after another."""
    case = Case(seed_for(f"shared prefix mixed {kv_dtype}"), kv_dtype=kv_dtype, **MIXED)
    config = ProgramConfig(compute_with_storage_grid_size=grid, k_chunk_size=64, max_cores_per_head_batch=2)
    out = case.run(emu_device, config=config)
    case.check(emu_device, out, f"shared prefix {kv_dtype} grid {grid}")


def test_mqa_many_users_several_row_tiles_bfloat4_b(emu_device):
    """MQA (8 q heads, 1 kv head) with 6 users in one group: 48 query rows, two row tiles of the prefix group; a
    second group of one user; suffix positions read at run time from a device tensor."""
    case = Case(
        seed_for("shared prefix mqa"),
        n_q=8,
        n_kv=1,
        d=64,
        block=64,
        groups=[[5, 0, 1, 2, 3, 4], [6]],
        prefix_lens=[300, 33],
        suffix_pos=[0, 10, 70, -1, 127, 5, 64],
        kv_dtype="bfloat4_b",
        max_suffix_blocks=4,
    )
    out, result = case.run(
        emu_device, config=_config(128, 4), cur_pos_on_device=True, max_group_rows=24, return_stats=True
    )
    # 24 rows = 3 users a sub-group: the group of 6 in two sub-groups, the group of 1 in one.
    assert [len(u) for _, u in result.plan.groups.subgroups] == [3, 3, 1]
    case.check(emu_device, out, "shared prefix mqa bfloat4_b")
    # The op form keeps its planned wrapper on the device: a second call with the same arguments plans nothing.
    _, again = case.run(
        emu_device, config=_config(128, 4), cur_pos_on_device=True, max_group_rows=24, return_stats=True
    )
    assert again.plan is result.plan


@pytest.mark.parametrize("max_group_rows, reads", [(128, (1, 1)), (8, (2, 1))])
def test_prefix_read_once_per_group_and_kv_head(emu_device, max_group_rows, reads):
    """The emulator's DRAM counters: every K/V tile of a prefix is read once per (group, kv head) however many users
    share it (once per sub-group when max_group_rows splits a group: 8 rows = 2 users here), every suffix tile once per
    (user, kv head), and no tile past a length or outside the tables."""
    case = Case(
        seed_for("shared prefix read once"),
        n_q=8,
        n_kv=2,
        d=64,
        block=32,
        groups=[[0, 1, 2, 3], [4, 5]],
        prefix_lens=[200, 96],
        suffix_pos=[3, 40, -1, 64, 0, 31],
    )
    out, result = case.run(emu_device, config=_config(64, 4), return_stats=True, max_group_rows=max_group_rows)
    case.check(emu_device, out, "shared prefix read once")
    dht = case.d // 32
    expected = {}
    for g, p in enumerate(case.prefix_lens):
        for t in range(math.ceil(p / 32)):
            blk = int(case.prefix_table[g, t * 32 // case.block])
            for h in range(case.n_kv):
                tile_row = (blk * case.n_kv + h) * (case.block // 32) + (t * 32 % case.block) // 32
                for c in range(dht):
                    expected[tile_row * dht + c] = expected.get(tile_row * dht + c, 0) + reads[g]
    prefix_reads = dict(expected)
    for u, s in enumerate(case.suffix_pos):
        for t in range((s + 1 + 31) // 32):
            blk = int(case.suffix_table[u, t * 32 // case.block])
            for h in range(case.n_kv):
                tile_row = (blk * case.n_kv + h) * (case.block // 32) + (t * 32 % case.block) // 32
                for c in range(dht):
                    expected[tile_row * dht + c] = expected.get(tile_row * dht + c, 0) + 1
    for name, tensor in (("K", case.tk), ("V", case.tv)):
        prefix = result.prefix_stats.pages_read(tensor)
        assert dict(prefix) == prefix_reads, f"{name}: prefix level's tile reads"
        total = prefix + result.suffix_stats.pages_read(tensor)
        assert dict(total) == expected, f"{name}: both levels' tile reads"
        assert result.merge_stats.bytes_read_from(tensor) == 0


def test_float32_output_single_user_groups(emu_device):
    """A float32 output, and groups of one user each (one slot a sub-group: no padding, no shared rows)."""
    case = Case(
        seed_for("shared prefix fp32"),
        n_q=4,
        n_kv=2,
        d=32,
        block=32,
        groups=[[2], [0], [1]],
        prefix_lens=[1, 45, 32],
        suffix_pos=[5, -1, 33],
    )
    ttnn = import_ttnn()
    out = shared_prefix_decode(
        tile(emu_device, case.q),
        tile(emu_device, case.k_dirty),
        tile(emu_device, case.v_dirty),
        groups=case.groups,
        prefix_lens=case.prefix_lens,
        prefix_page_table=case.prefix_table,
        suffix_page_table=case.suffix_table,
        suffix_cur_pos=list(case.suffix_pos),
        dtype=ttnn.float32,
        program_config=_config(32, 2),
    )
    assert str(out.dtype).endswith("FLOAT32"), out.dtype
    case.check(emu_device, out, "shared prefix float32 output")


def test_wrapper_plans_once_and_runs_each_step(emu_device):
    """The plan / run form over a decode loop: one plan, two steps whose suffix positions grow (read at run time from
    the same device tensor, rewritten between steps), the programs built once."""
    case = Case(
        seed_for("shared prefix wrapper"),
        n_q=4,
        n_kv=1,
        d=64,
        block=32,
        groups=[[1, 0], [2]],
        prefix_lens=[70, 40],
        suffix_pos=[11, 21, 0],
        max_suffix_blocks=2,
    )
    ttnn = import_ttnn()
    wrapper = SharedPrefixDecodeWrapper(emu_device, _config(32, 2))
    wrapper.plan(
        groups=case.groups,
        prefix_lens=case.prefix_lens,
        batch=3,
        n_q_heads=4,
        n_kv_heads=1,
        head_dim=64,
        block_size=32,
        max_prefix_blocks=case.max_prefix_blocks,
        max_suffix_blocks=2,
        kv_dtype=ttnn.bfloat16,
    )
    q, k, v = tile(emu_device, case.q), tile(emu_device, case.k_dirty), tile(emu_device, case.v_dirty)
    tables = dict(
        prefix_page_table=int32(emu_device, case.prefix_table), suffix_page_table=int32(emu_device, case.suffix_table)
    )
    positions = int32(emu_device, case.suffix_pos)
    out = tile(emu_device, torch.full((1, 3, 4, 64), float("nan")))  # the loop's output, at one address
    for step, suffix_pos in enumerate(([10, 20, -1], [11, 21, 0])):
        emu_device.write(positions, torch.tensor(suffix_pos, dtype=torch.int32))
        emu_device.write(out, torch.full((1, 3, 4, 64), float("nan")))
        case.suffix_pos = suffix_pos  # the golden's positions (garbage sits past the last step's)
        wrapper.run(q, k, v, suffix_cur_pos_tensor=positions, output_tensor=out, **tables)
        case.check(emu_device, out, f"wrapper step {step}")
    assert len(wrapper._programs) == 1, "one program set for the whole loop"


def test_thresholds_reject_a_dropped_level(emu_device):
    """The tests' bound fails an output that drops either level: attention over the prefix alone, or the suffix alone
    (what a merge that loses one partial gives), against the concatenated cache's golden."""
    case = Case(seed_for("shared prefix drop"), **MIXED)
    expected = case.expected()
    for drop in ("prefix", "suffix"):
        wrong = Case(seed_for("shared prefix drop"), **MIXED)
        if drop == "suffix":
            wrong.suffix_pos = [-1] * wrong.batch
        else:
            wrong.prefix_lens, live = [0] * len(wrong.groups), [u for u, s in enumerate(wrong.suffix_pos) if s >= 0]
        out = wrong.expected()
        with pytest.raises(AssertionError):
            users = live if drop == "prefix" else list(range(case.batch))
            check_output(out[:, users], expected[:, users], case.seed, f"dropped {drop}", case.kv_dtype)


@pytest.mark.parametrize(
    "change, argument",
    [
        (dict(groups=[[0, 3], [1, 2]]), "groups: users [4]"),
        (dict(groups=[[0, 3, 4], [1, 2, 0]]), "groups[1]: user 0 is already in groups[0]"),
        (dict(prefix_lens=[150, 0]), "prefix_lens[1]=0"),
        (dict(suffix_cur_pos=[40, -1, 31, 0, 10**6]), "suffix_cur_pos[4]"),
        (dict(max_group_rows=0), "max_group_rows=0"),
    ],
)
def test_bad_arguments_are_named(emu_device, change, argument):
    case = Case(seed_for("shared prefix errors"), **MIXED)
    kwargs = dict(
        groups=case.groups,
        prefix_lens=case.prefix_lens,
        prefix_page_table=case.prefix_table,
        suffix_page_table=case.suffix_table,
        suffix_cur_pos=list(case.suffix_pos),
    )
    kwargs.update(change)
    with pytest.raises((ValueError, TypeError), match=re.escape(argument)):
        shared_prefix_decode(
            tile(emu_device, case.q),
            tile(emu_device, case.k, case.kv_dtype),
            tile(emu_device, case.v, case.kv_dtype),
            **kwargs,
        )


def test_q_len_above_one_is_refused(emu_device):
    case = Case(seed_for("shared prefix q_len"), **MIXED)
    q = tile(emu_device, torch.randn(2, case.batch, case.n_q, case.d))
    with pytest.raises(ValueError, match="q_len=2"):
        shared_prefix_decode(
            q,
            tile(emu_device, case.k),
            tile(emu_device, case.v),
            groups=case.groups,
            prefix_lens=case.prefix_lens,
            prefix_page_table=case.prefix_table,
            suffix_page_table=case.suffix_table,
            suffix_cur_pos=list(case.suffix_pos),
        )


def test_p150_matches_concatenated_attention(p150):
    """On an emulated Blackhole P150 (11x10 grid, 64-B DRAM read alignment): the MIXED case, whose prefix level has
    6 slots (a 24-B cur_pos page) and 6-entry page-table rows, both short of one 64-B DRAM read."""
    case = Case(seed_for("shared prefix p150"), **MIXED)
    config = ProgramConfig(compute_with_storage_grid_size=(11, 10), k_chunk_size=64, max_cores_per_head_batch=2)
    out, result = case.run(p150, config=config, return_stats=True)
    case.check(p150, out, "shared prefix p150")
    chip = chip_facts(p150)
    for level in (result.plan.prefix, result.plan.suffix):
        assert level.shapes.dram_alignment == 64
        pages = {cb.name: cb.page_size for cb in level.cbs if cb.name in ("cur_pos", "writer_cur_pos", "page_table")}
        assert pages and all(size % 64 == 0 for size in pages.values()), pages
        assert level.l1_bytes == check_l1(level.cbs, level.k_chunk_size, chip.l1_budget)
    assert result.duration_ns is not None and result.duration_ns > 0
