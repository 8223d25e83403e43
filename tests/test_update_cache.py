"""Cache update ops (ttflashdecode.update_cache / paged_update_cache) on the emulator, against a host model.

The host model of an update is upstream's (untilize, replace the row, tilize): the cache's values with the user's row
replaced by the new row (bfloat16) as Wormhole's packer packs it into the cache's format (:func:`packed_by_the_packer`:
shared exponent per 16-datum face row, ties rounding up), every other value unchanged. A correct kernel matches it
exactly; a kernel that writes the wrong row, position, head, block or tile, or touches another row, does not. Every
input is seeded random (never zeros); failures print the seed.
"""

from __future__ import annotations

import pytest
import torch

import ttflashdecode
from decode_harness import emulated_n150, generator, seed_for, tag
from decode_harness import tile as tiles
from packer_model import packed_by_the_packer
from ttemu.ttnn_env import import_ttnn
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.descriptors import ComputeSettings

ttnn = import_ttnn()
DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b")
RM = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


@pytest.fixture(scope="module")
def dev():
    yield from emulated_n150()


def expected_after(dev, before: torch.Tensor, new: torch.Tensor, rows, dtype: str) -> torch.Tensor:
    """Upstream's update on the host: each (user, cache_batch_index, row) of ``rows`` gets the user's new row as the
    packer packs it; every other datum keeps its value (re-packing values the format holds exactly changes nothing,
    since a block-float exponent belongs to one face row, i.e. one position)."""
    out = before.clone()
    for user, index, row in rows:
        out[index, :, row] = packed_by_the_packer(new[0, user], dtype)
    return out


@pytest.mark.parametrize("paged", [False, True], ids=["unpaged", "paged"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_written_over_steps(dev, dtype, paged):
    """Three decode steps with a device position tensor rewritten in place (one program for all of them): every step,
    each user's row lands at its own position (a skipped user, -1, writes nothing), and every other value of the
    cache, in the touched tiles too, is exactly what it was."""
    seed = seed_for(f"test_rows_written_over_steps[{dtype}-{paged}]")
    gen = generator(seed)
    b, n_kv, d = 3, 2, 96  # head_dim 96: three tiles per row, an odd untilize block
    block, blocks_per_user = 32, 4
    S = block * blocks_per_user
    if paged:
        num_blocks = b * blocks_per_user + 2
        table = torch.randperm(num_blocks, generator=gen)[: b * blocks_per_user].reshape(b, blocks_per_user)
        physical = torch.randn(num_blocks, n_kv, block, d, generator=gen)
        cache = tiles(dev, physical, dtype)
        page_table = dev.from_torch(table.to(torch.int32), **RM)
    else:
        cache = tiles(dev, torch.randn(b, n_kv, S, d, generator=gen), dtype)
        table = page_table = None
    start = torch.randint(0, S - 4, (b,), generator=gen)
    pos = dev.from_torch(start.to(torch.int32), **RM)
    programs = device_cache(dev).stats()["programs"]
    for step in range(3):
        positions = (start + step).tolist()
        if step == 1:
            positions[1] = -1  # user 1 skips this step
        dev.write(pos, torch.tensor(positions, dtype=torch.int32))
        new = torch.randn(1, b, n_kv, d, generator=gen) * (1 + 10 * step)  # other magnitudes: other exponents
        before = dev.to_torch(cache).float()
        if paged:
            _, run = ttflashdecode.paged_update_cache(
                cache, tiles(dev, new, "bfloat16"), update_idxs_tensor=pos, page_table=page_table, return_stats=True
            )
            rows = [(u, int(table[u, p // block]), p % block) for u, p in enumerate(positions) if p >= 0]
        else:
            _, run = ttflashdecode.paged_update_cache(
                cache, tiles(dev, new, "bfloat16"), update_idxs_tensor=pos, return_stats=True
            )
            rows = [(u, u, p) for u, p in enumerate(positions) if p >= 0]
        after = dev.to_torch(cache).float()
        expected = expected_after(dev, before, new, rows, dtype)
        bad = (after != expected).nonzero().tolist()
        assert not bad, f"{tag(seed)} step {step} positions {positions}: {len(bad)} values differ, first at {bad[:3]}"
        written = torch.zeros_like(after, dtype=torch.bool)
        for _, index, row in rows:
            written[index, :, row] = True
        assert torch.equal(after[~written], before[~written]), f"{tag(seed)} step {step}: an unwritten row changed"
        assert not torch.equal(after[written], before[written]), f"{tag(seed)} step {step}: nothing was written"
    stats = run.stats
    assert stats.bytes_written_to(cache) == n_kv * (b - 0) * (d // 32) * cache.buffer_page_size(), tag(seed)
    assert device_cache(dev).stats()["programs"] - programs == 1, f"{tag(seed)}: expected one program for 3 steps"


def test_ring_positions_wrap_before_the_page_table(dev):
    """cache_position_modulo (upstream's ring): a device position p lands at ring row p % ring of the user's table
    (positions far past the table's reach, 2**31 - 1 among them), host update_idxs wrap the same way, -1 and any
    other negative entry write nothing, and table columns past the ring are never written through."""
    seed = seed_for("test_ring_positions_wrap_before_the_page_table")
    gen = generator(seed)
    b, n_kv, d, block, ring = 4, 2, 64, 32, 64
    num_blocks = 2 * b + 2
    ring_table = torch.randperm(num_blocks, generator=gen)[: 2 * b].reshape(b, 2)
    # Two more columns per user naming blocks no ring uses: a write through them would show.
    spare = torch.tensor([num_blocks - 2, num_blocks - 1]).expand(b, -1)
    table = torch.cat([ring_table, spare], dim=1).to(torch.int32)
    cache = tiles(dev, torch.randn(num_blocks, n_kv, block, d, generator=gen), "bfloat8_b")
    page_table = dev.from_torch(table, **RM)
    for step, positions in enumerate([[70, 2**31 - 1, -1, 4157], [127, 64, -5, 33]]):
        new = torch.randn(1, b, n_kv, d, generator=gen)
        before = dev.to_torch(cache).float()
        if step == 0:
            pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **RM)
            _, run = ttflashdecode.paged_update_cache(
                cache,
                tiles(dev, new, "bfloat16"),
                update_idxs_tensor=pos,
                page_table=page_table,
                cache_position_modulo=ring,
                return_stats=True,
            )
        else:
            positions[2] = -1  # host positions: -1 is the only negative accepted
            _, run = ttflashdecode.paged_update_cache(
                cache,
                tiles(dev, new, "bfloat16"),
                update_idxs=positions,
                page_table=table,
                cache_position_modulo=ring,
                return_stats=True,
            )
        rows = [(u, int(table[u, p % ring // block]), p % ring % block) for u, p in enumerate(positions) if p >= 0]
        expected = expected_after(dev, before, new, rows, "bfloat8_b")
        after = dev.to_torch(cache).float()
        bad = (after != expected).nonzero().tolist()
        assert not bad, f"{tag(seed)} positions {positions}: {len(bad)} values differ, first at {bad[:3]}"
        assert run.stats.bytes_written_to(cache) == len(rows) * n_kv * (d // 32) * cache.buffer_page_size()
    with pytest.raises(ValueError, match=r"update_idxs\[2\]=-5"):
        ttflashdecode.paged_update_cache(
            cache, tiles(dev, new, "bfloat16"), update_idxs=[1, 2, -5, 3], page_table=table, cache_position_modulo=ring
        )


def test_host_positions_and_upstream_int_form(dev):
    """update_cache(cache, input, update_idx) takes upstream's heads-major input [1, n_kv_heads, b padded to 32, d]
    (user u's row of head h at [0, h, u]; two kv heads and two users, so a transposed read would pass the shape
    checks and fail the values), update_idx an int (upstream's form: every user) or a list."""
    seed = seed_for("test_host_positions_and_upstream_int_form")
    gen = generator(seed)
    b, n_kv, S, d = 2, 2, 64, 64
    cache = tiles(dev, torch.randn(b, n_kv, S, d, generator=gen), "bfloat8_b")
    for update_idx, positions in ((37, [37, 37]), ([3, 63], [3, 63])):
        new = torch.randn(1, b, n_kv, d, generator=gen)
        heads_major = torch.nn.functional.pad(new.permute(0, 2, 1, 3), (0, 0, 0, 32 - b))  # [1, n_kv, 32, d]
        before = dev.to_torch(cache).float()
        out = ttflashdecode.update_cache(cache, tiles(dev, heads_major, "bfloat16"), update_idx)
        assert out is cache
        expected = expected_after(dev, before, new, [(u, u, p) for u, p in enumerate(positions)], "bfloat8_b")
        assert torch.equal(dev.to_torch(cache).float(), expected), f"{tag(seed)} update_idx={update_idx}"


def test_paged_host_table_and_update_idxs(dev):
    """paged_update_cache with host update_idxs and a torch page table (checked, then uploaded)."""
    seed = seed_for("test_paged_host_table_and_update_idxs")
    gen = generator(seed)
    b, n_kv, block, d = 2, 4, 64, 32
    table = torch.tensor([[5, 2], [0, 7]], dtype=torch.int32)
    cache = tiles(dev, torch.randn(8, n_kv, block, d, generator=gen), "bfloat16")
    new = torch.randn(1, b, n_kv, d, generator=gen)
    before = dev.to_torch(cache).float()
    ttflashdecode.paged_update_cache(cache, tiles(dev, new, "bfloat16"), update_idxs=[70, 1], page_table=table)
    expected = expected_after(dev, before, new, [(0, 2, 6), (1, 0, 1)], "bfloat16")
    assert torch.equal(dev.to_torch(cache).float(), expected), tag(seed)


@pytest.mark.parametrize("dtype", ["bfloat16", "bfloat8_b"])
def test_positions_outside_the_cache_write_nothing(dev, dtype):
    """Device positions past the cache, below -1, or whose page-table entry (or column) does not exist: nothing is
    written, the cache is unchanged byte for byte in value, and no DRAM write reaches it."""
    seed = seed_for(f"test_positions_outside_the_cache_write_nothing[{dtype}]")
    gen = generator(seed)
    b, n_kv, block, d = 4, 2, 32, 64
    cache = tiles(dev, torch.randn(b, n_kv, 100, d, generator=gen), dtype)  # 100 positions, stored as 128
    before = dev.to_torch(cache).float()
    new = tiles(dev, torch.randn(1, b, n_kv, d, generator=gen), "bfloat16")
    pos = dev.from_torch(torch.tensor([100, 127, -7, 1 << 30], dtype=torch.int32), **RM)
    _, run = ttflashdecode.paged_update_cache(cache, new, update_idxs_tensor=pos, return_stats=True)
    assert torch.equal(dev.to_torch(cache).float(), before), f"{tag(seed)}: a position outside the cache wrote"
    assert run.stats.bytes_written_to(cache) == 0, tag(seed)

    paged = tiles(dev, torch.randn(6, n_kv, block, d, generator=gen), dtype)
    paged_before = dev.to_torch(paged).float()
    table = dev.from_torch(torch.tensor([[0, 6], [1, -1], [2, 3], [4, 5]], dtype=torch.int32), **RM)
    # user 0: block 6 does not exist; user 1: entry -1; user 2: column 2 is past the table; user 3: -1 skips
    pos = dev.from_torch(torch.tensor([40, 33, 64, -1], dtype=torch.int32), **RM)
    _, run = ttflashdecode.paged_update_cache(paged, new, update_idxs_tensor=pos, page_table=table, return_stats=True)
    assert torch.equal(dev.to_torch(paged).float(), paged_before), f"{tag(seed)}: a bad page-table entry wrote"
    assert run.stats.bytes_written_to(paged) == 0, tag(seed)


def test_bad_calls_raise_before_anything_runs(dev, no_launch):
    """Each bad argument raises, naming the argument, the value and what was expected; nothing is launched."""
    gen = generator(seed_for("test_bad_calls_raise_before_anything_runs"))
    cache = tiles(dev, torch.randn(2, 2, 64, 64, generator=gen), "bfloat8_b")
    new = tiles(dev, torch.randn(1, 2, 2, 64, generator=gen), "bfloat16")
    before = dev.to_torch(cache)
    table = torch.tensor([[0], [1]], dtype=torch.int32)
    cases = [
        (
            lambda: ttflashdecode.update_cache(cache, new, 64),
            ValueError,
            r"update_idx\[0\]=64: expected an int in \[-1, 64\)",
        ),
        (
            lambda: ttflashdecode.update_cache(cache, new, [1, 2, 3]),
            ValueError,
            r"update_idx: expected 2 entries, got 3",
        ),
        (lambda: ttflashdecode.update_cache(cache, new, 1.5), TypeError, r"update_idx"),
        (
            lambda: ttflashdecode.update_cache(cache, new, 3, batch_offset=31),
            ValueError,
            r"batch_offset=31: the 2 users of cache take input rows batch_offset .. batch_offset \+ 1, past input's 32",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(cache, new, update_idxs=[1, 2], batch_offset=2),
            ValueError,
            r"batch_offset=2: not supported by ttflashdecode.paged_update_cache",
        ),
        (
            lambda: ttflashdecode.update_cache(cache, tiles(dev, torch.randn(1, 2, 2, 64), "bfloat8_b"), 3),
            TypeError,
            r"input: dtype bfloat8_b not supported; expected one of bfloat16",
        ),
        (
            lambda: ttflashdecode.update_cache(cache, tiles(dev, torch.randn(1, 4, 2, 64), "bfloat16"), 3),
            ValueError,
            r"input: shape \[1, 4, 2, 64\] does not match cache \[2, 2, 64, 64\]: expected n_kv_heads=2",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(
                cache, tiles(dev, torch.randn(1, 3, 2, 64), "bfloat16"), update_idxs=[1, 2, 3]
            ),
            ValueError,
            r"cache: has 2 users but input has b=3",
        ),
        (lambda: ttflashdecode.update_cache(torch.zeros(2, 2, 64, 64), new, 3), TypeError, r"cache: expected a ttnn"),
        (
            lambda: ttflashdecode.update_cache(cache, new, dev.from_torch(torch.zeros(3, dtype=torch.int32), **RM)),
            ValueError,
            r"update_idx: expected 2 entries \(one position per user\), got shape \[3\]",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(
                cache, new, update_idxs=[1, 2], page_table=torch.tensor([[0], [2]], dtype=torch.int32)
            ),
            ValueError,
            r"page_table\[1\]=2: expected an int in \[0, 2\)",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(cache, new, page_table=torch.tensor([[0], [1]])),
            ValueError,
            r"expected exactly one of them, got neither",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(cache, new, update_idxs=[1, 2], share_cache=True),
            ValueError,
            r"share_cache=True: not supported",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(cache, new, update_idxs=[1, 2], cache_position_modulo=64),
            ValueError,
            r"cache_position_modulo=64: only supported in paged mode \(when page_table is provided\)",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(
                cache, new, update_idxs=[1, 2], page_table=table, cache_position_modulo=32
            ),
            ValueError,
            r"cache_position_modulo=32: expected a positive multiple of block_size=64",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(
                cache, new, update_idxs=[1, 2], page_table=table, cache_position_modulo=0
            ),
            ValueError,
            r"cache_position_modulo=0: expected a positive multiple",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(
                cache, new, update_idxs=[1, 2], page_table=table, cache_position_modulo=128
            ),
            ValueError,
            r"cache_position_modulo=128: expected at most max_blocks_per_user \* block_size = 1 \* 64",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(
                cache, new, update_idxs=[1, 2], page_table=table, cache_position_modulo=64.0
            ),
            TypeError,
            r"cache_position_modulo=64.0 \(float\): expected a positive int or None",
        ),
        (
            lambda: ttflashdecode.paged_update_cache(
                cache, new, update_idxs=[2**31, 2], page_table=table, cache_position_modulo=64
            ),
            ValueError,
            r"update_idxs\[0\]=2147483648: expected an int in \[-1, 2147483648\) \(a ring position",
        ),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
    assert torch.equal(dev.to_torch(cache), before)


@pytest.mark.parametrize("paged", [False, True], ids=["unpaged", "paged"])
def test_fused_k_and_v_update(dev, paged):
    """paged_fused_update_cache: K and V (two caches, two inputs) updated at the same positions by one launch."""
    seed = seed_for(f"test_fused_k_and_v_update[{paged}]")
    gen = generator(seed)
    b, n_kv, block, d = 2, 2, 32, 64
    table = torch.tensor([[3, 0], [1, 2]], dtype=torch.int32) if paged else None
    shape = (4, n_kv, block, d) if paged else (b, n_kv, 2 * block, d)
    caches = [tiles(dev, torch.randn(*shape, generator=gen), "bfloat8_b") for _ in range(2)]
    news = [torch.randn(1, b, n_kv, d, generator=gen) for _ in range(2)]
    befores = [dev.to_torch(c).float() for c in caches]
    positions = [45, 6]
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **RM)
    page_table = dev.from_torch(table, **RM) if paged else None
    out, run = ttflashdecode.paged_fused_update_cache(
        caches[0],
        tiles(dev, news[0], "bfloat16"),
        caches[1],
        tiles(dev, news[1], "bfloat16"),
        update_idxs_tensor=pos,
        page_table=page_table,
        return_stats=True,
    )
    assert out[0] is caches[0] and out[1] is caches[1]
    rows = [(u, int(table[u, p // block]) if paged else u, p % block if paged else p) for u, p in enumerate(positions)]
    for which in range(2):
        expected = expected_after(dev, befores[which], news[which], rows, "bfloat8_b")
        assert torch.equal(dev.to_torch(caches[which]).float(), expected), f"{tag(seed)} cache {which + 1}"
    assert run.shapes.num_caches == 2
    with pytest.raises(ValueError, match=r"cache_tensor2: shape, dtype and placement"):
        ttflashdecode.paged_fused_update_cache(
            caches[0],
            tiles(dev, news[0], "bfloat16"),
            tiles(dev, torch.randn(*shape), "bfloat16"),
            tiles(dev, news[1], "bfloat16"),
            update_idxs=positions,
        )


def test_a_repeated_call_launches_its_checked_program_without_checks(dev, monkeypatch):
    """The fast path (ops/update_cache/fast_path.py): a call repeating a checked one (same tensors' addresses and
    forms, same arguments) launches the program the first built, without the host checks, and writes exactly the
    rows the full path writes; a call not plain enough to sign (host positions) or differing in an argument takes the
    full path; a bad call after an entry exists raises the full path's error; hits count as program hits."""
    from ttflashdecode.ops.update_cache import api

    seed = seed_for("test_a_repeated_call_launches_its_checked_program_without_checks")
    gen = generator(seed)
    b, n_kv, block, d, num_blocks = 2, 2, 32, 64, 6
    table = torch.tensor([[4, 1, 0], [2, 5, 3]], dtype=torch.int32)
    caches = [tiles(dev, torch.randn(num_blocks, n_kv, block, d, generator=gen), "bfloat8_b") for _ in range(2)]
    page_table = dev.from_torch(table, **RM)
    pos = dev.from_torch(torch.tensor([3, 70], dtype=torch.int32), **RM)
    checks = []
    check_update = api.check_update
    monkeypatch.setattr(api, "check_update", lambda *a, **k: checks.append(1) or check_update(*a, **k))
    stats = device_cache(dev).stats()
    new_k = new_v = None
    for step, positions in enumerate(([3, 70], [4, 95], [-1, 40])):
        dev.write(pos, torch.tensor(positions, dtype=torch.int32))
        news = [torch.randn(1, b, n_kv, d, generator=gen) for _ in range(2)]
        befores = [dev.to_torch(c).float() for c in caches]
        new_k = new_v = None  # last step's rows dropped first, as a model drops them: the new ones take their place
        new_k, new_v = (tiles(dev, new, "bfloat16") for new in news)
        ttflashdecode.paged_fused_update_cache(
            caches[0], new_k, caches[1], new_v, update_idxs_tensor=pos, page_table=page_table
        )
        rows = [(u, int(table[u, p // block]), p % block) for u, p in enumerate(positions) if p >= 0]
        for which in range(2):
            expected = expected_after(dev, befores[which], news[which], rows, "bfloat8_b")
            assert torch.equal(dev.to_torch(caches[which]).float(), expected), f"{tag(seed)} step {step} {which}"
        assert len(checks) == 1, f"{tag(seed)} step {step}: {len(checks)} checked calls, expected the first only"
    after = device_cache(dev).stats()
    assert after["programs"] - stats["programs"] == 1, tag(seed)
    assert after["program_hits"] - stats["program_hits"] == 2, f"{tag(seed)}: the hits count as program hits"
    # another argument (host positions: not signed) and another compute config: the full path
    ttflashdecode.paged_fused_update_cache(
        caches[0], new_k, caches[1], new_v, update_idxs=[1, 2], page_table=page_table
    )
    ttflashdecode.paged_update_cache(caches[0], new_k, update_idxs_tensor=pos, page_table=page_table)
    ttflashdecode.paged_update_cache(
        caches[0], new_k, update_idxs_tensor=pos, page_table=page_table, compute_kernel_config=ComputeSettings()
    )
    assert len(checks) == 4, tag(seed)
    # an argument the checks refuse, at the signed call's addresses: the full path's error
    with pytest.raises(TypeError, match=r"cache: expected a ttnn or emulator device tensor, got NoneType"):
        ttflashdecode.paged_update_cache(None, new_k, update_idxs_tensor=pos, page_table=page_table)
    with pytest.raises(ValueError, match=r"batch_offset=1: not supported"):
        ttflashdecode.paged_update_cache(
            caches[0], new_k, update_idxs_tensor=pos, page_table=page_table, batch_offset=1
        )


def test_one_build_serves_every_cache_size(dev):
    """The cache's size (users, positions, page-table columns, blocks) is in the reader's common args: two paged
    caches of other sizes give every update kernel the same compile-time args (one JIT build on a card), and no
    kernel has per-core runtime args."""
    from ttflashdecode.ops.update_cache.factory import build_update_program
    from ttflashdecode.ops.update_cache.validate import check_update

    gen = generator(seed_for("test_one_build_serves_every_cache_size"))
    n_kv, block, d = 2, 32, 64
    kernels = []
    for b, num_blocks, max_blocks in ((2, 6, 3), (3, 20, 5)):
        cache = tiles(dev, torch.randn(num_blocks, n_kv, block, d, generator=gen), "bfloat8_b")
        new = tiles(dev, torch.randn(1, b, n_kv, d, generator=gen), "bfloat16")
        table = dev.from_torch(torch.randperm(num_blocks)[: b * max_blocks].reshape(b, max_blocks).int(), **RM)
        pos = dev.from_torch(torch.zeros(b, dtype=torch.int32), **RM)
        call = check_update([(cache, new)], pos, table, None, index_name="update_idxs_tensor")
        program = build_update_program(call.shapes, call.pairs, pos, table, (8, 8), ComputeSettings())
        kernels.append(program.kernels)
        assert all(not kernel.runtime_args for kernel in program.kernels), "per-core runtime args"
    for first, second in zip(*kernels, strict=True):
        assert list(first.compile_time_args) == list(second.compile_time_args), first.kernel_source


def test_fused_update_of_rows_sharded_on_cores_of_their_own(dev):
    """upstream's form of paged_fused_update_cache: K's and V's new rows height-sharded one user a core on two
    disjoint sets of cores (upstream refuses overlapping ones). Both caches get exactly their own rows."""
    seed = seed_for("test_fused_update_of_rows_sharded_on_cores_of_their_own")
    gen = generator(seed)
    b, n_kv, block, d = 3, 2, 32, 64
    table = torch.tensor([[3, 0], [1, 2], [5, 4]], dtype=torch.int32)
    caches = [tiles(dev, torch.randn(6, n_kv, block, d, generator=gen), "bfloat8_b") for _ in range(2)]
    news = [torch.randn(1, b, n_kv, d, generator=gen) for _ in range(2)]
    befores = [dev.to_torch(c).float() for c in caches]

    def one_user_a_core(row: int):
        cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, row), ttnn.CoreCoord(b - 1, row))])
        spec = ttnn.ShardSpec(cores, [32, d], ttnn.ShardOrientation.ROW_MAJOR)
        return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)

    positions = [45, 6, 63]
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **RM)
    ttflashdecode.paged_fused_update_cache(
        caches[0],
        tiles(dev, news[0], "bfloat16", memory_config=one_user_a_core(0)),
        caches[1],
        tiles(dev, news[1], "bfloat16", memory_config=one_user_a_core(2)),
        update_idxs_tensor=pos,
        page_table=dev.from_torch(table, **RM),
    )
    rows = [(u, int(table[u, p // block]), p % block) for u, p in enumerate(positions)]
    for which in range(2):
        expected = expected_after(dev, befores[which], news[which], rows, "bfloat8_b")
        assert torch.equal(dev.to_torch(caches[which]).float(), expected), f"{tag(seed)} cache {which + 1}"
