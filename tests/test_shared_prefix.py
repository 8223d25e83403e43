"""Shared-prefix decode (cascade attention, ttflashdecode.shared_prefix) against plain attention over each user's
concatenated cache (its group's prefix, then its own suffix), on the emulator.

Inputs are seeded random; every K/V position no query may see (past a prefix's length in its last block, past a
user's suffix position, in blocks no page table reaches) holds NaN / Inf / 3e38, so a kernel that reads or weighs
one shows it. The output starts poisoned with NaN (every element must be written). The read-once test counts the
bytes read from K and V on the emulator's DRAM counters: every prefix tile once per (group, kv head), every suffix
tile once per (user, kv head), nothing else.
"""

from __future__ import annotations

import math

import pytest
import torch

from decode_harness import int32, seed_for, tile
from output_checks import check_output
from ttflashdecode import golden
from ttflashdecode.config import ProgramConfig
from ttflashdecode.shared_prefix import shared_prefix_decode

GARBAGE = (float("nan"), float("inf"), float("-inf"), 3.0e38)


def _config(k_chunk_size: int, cores: int) -> ProgramConfig:
    return ProgramConfig(compute_with_storage_grid_size=(8, 8), k_chunk_size=k_chunk_size,
                         max_cores_per_head_batch=cores)  # fmt: skip


class Case:
    """A two-level paged cache: ``groups[g]`` share prefix g of ``prefix_lens[g]`` positions; user u's suffix holds
    positions 0 .. suffix_pos[u]. Blocks are dealt at random from one pool (prefix blocks first, then suffix blocks,
    then spare blocks nobody reaches)."""

    def __init__(self, seed, *, n_q, n_kv, d, block, groups, prefix_lens, suffix_pos, kv_dtype="bfloat16",
                 max_prefix_blocks=None, max_suffix_blocks=None, spare=2):  # fmt: skip
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
            padded = -(-length // 32) * 32
            kk = torch.zeros(1, self.n_kv, padded, self.d)
            vv = torch.zeros(1, self.n_kv, padded, self.d)
            kk[0, :, :length] = torch.stack(rows_k, dim=1)
            vv[0, :, :length] = torch.stack(rows_v, dim=1)
            outs.append(golden.sdpa_decode(q[:, u : u + 1], kk, vv, cur_pos=[length - 1]))
        return torch.cat(outs, dim=1)

    def run(self, device, *, config=None, cur_pos_on_device=False, return_result=False, **kwargs):
        self.tk = tile(device, self.k_dirty, self.kv_dtype)
        self.tv = tile(device, self.v_dirty, self.kv_dtype)
        out = tile(device, torch.full((1, self.batch, self.n_q, self.d), float("nan")))
        positions = dict(suffix_cur_pos_tensor=int32(device, self.suffix_pos)) if cur_pos_on_device else dict(
            suffix_cur_pos=list(self.suffix_pos))  # fmt: skip
        result = shared_prefix_decode(
            tile(device, self.q), self.tk, self.tv, groups=self.groups, prefix_lens=self.prefix_lens,
            prefix_page_table=int32(device, self.prefix_table), suffix_page_table=int32(device, self.suffix_table),
            program_config=config, output_tensor=out, return_result=True, **positions, **kwargs,
        )  # fmt: skip
        return result if return_result else result[0]

    def check(self, device, out, what):
        check_output(device.to_torch(out).float(), self.expected(), self.seed, what, self.kv_dtype)


# Llama-3.1-8B's per-chip GQA ratio (4 q heads per kv head), two groups of different sizes, non-consecutive users; one
# user with no suffix (-1), one whose suffix ends on a block edge, a prefix that ends mid-block.
MIXED = dict(n_q=8, n_kv=2, d=64, block=32, groups=[[0, 3, 4], [1, 2]], prefix_lens=[150, 64],
             suffix_pos=[40, -1, 31, 0, 95])  # fmt: skip


@pytest.mark.parametrize("kv_dtype", ["bfloat16", "bfloat8_b"])
def test_matches_concatenated_attention(emu_device, kv_dtype):
    case = Case(seed_for(f"shared prefix mixed {kv_dtype}"), kv_dtype=kv_dtype, **MIXED)
    out = case.run(emu_device, config=_config(64, 2))
    case.check(emu_device, out, f"shared prefix {kv_dtype}")


def test_mqa_many_users_several_row_tiles_bfloat4_b(emu_device):
    """MQA (8 q heads, 1 kv head) with 6 users in one group: 48 query rows, two row tiles of the prefix group; a
    second group of one user; suffix positions read at run time from a device tensor."""
    case = Case(seed_for("shared prefix mqa"), n_q=8, n_kv=1, d=64, block=64, groups=[[5, 0, 1, 2, 3, 4], [6]],
                prefix_lens=[300, 33], suffix_pos=[0, 10, 70, -1, 127, 5, 64], kv_dtype="bfloat4_b",
                max_suffix_blocks=4)  # fmt: skip
    out = case.run(emu_device, config=_config(128, 4), cur_pos_on_device=True)
    case.check(emu_device, out, "shared prefix mqa bfloat4_b")


def test_prefix_read_once_per_group_and_kv_head(emu_device):
    """The emulator's DRAM counters: every K/V tile of a prefix is read once per (group, kv head) however many users
    share it, every suffix tile once per (user, kv head), and no tile past a length or outside the tables."""
    case = Case(seed_for("shared prefix read once"), n_q=8, n_kv=2, d=64, block=32, groups=[[0, 1, 2, 3], [4, 5]],
                prefix_lens=[200, 96], suffix_pos=[3, 40, -1, 64, 0, 31])  # fmt: skip
    out, result = case.run(emu_device, config=_config(64, 4), return_result=True)
    case.check(emu_device, out, "shared prefix read once")
    dht = case.d // 32
    expected = {}
    for g, p in enumerate(case.prefix_lens):
        for t in range(math.ceil(p / 32)):
            blk = int(case.prefix_table[g, t * 32 // case.block])
            for h in range(case.n_kv):
                tile_row = (blk * case.n_kv + h) * (case.block // 32) + (t * 32 % case.block) // 32
                for c in range(dht):
                    expected[tile_row * dht + c] = expected.get(tile_row * dht + c, 0) + 1
    prefix_reads = {k: v for k, v in expected.items()}
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
