"""The fused cache update + decode attention (ttflashdecode.update_cache_and_decode / paged_update_cache_and_decode)
on the emulator: one program whose attention must read the rows its own update writes.

The row at each user's cur_pos is poisoned before the call (values whose attention output is far from the real one),
so an attention that read the chunk holding cur_pos before the update landed fails the golden comparison. The caches
afterwards must be byte for byte what the separate update (paged_fused_update_cache) makes of the same caches. Inputs
are seeded random; failures print the seed.
"""

from __future__ import annotations

import pytest
import torch

import ttflashdecode
from decode_harness import emulated_n150, generator, seed_for, tag
from decode_harness import tile as tiles
from output_checks import check_output
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.config import ProgramConfig
from ttflashdecode.device_cache import device_cache

ttnn = import_ttnn()
RM = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
POISON = 30.0  # a K row of 30s dominates the softmax; a V row of -30s then dominates the output


@pytest.fixture(scope="module")
def dev():
    yield from emulated_n150()


def _case(dev, gen, dtype: str, paged: bool, positions: list[int]):
    """Caches (two identical copies: fused and separate), new rows, q, positions; the rows at the positions poisoned."""
    b, n_q, n_kv, d, block, blocks_per_user = len(positions), 4, 2, 64, 32, 8
    S = block * blocks_per_user
    if paged:
        num_blocks = b * blocks_per_user + 3
        table = torch.randperm(num_blocks, generator=gen)[: b * blocks_per_user].reshape(b, blocks_per_user).int()
        K, V = (torch.randn(num_blocks, n_kv, block, d, generator=gen) for _ in range(2))
        for u, p in enumerate(positions):
            if p >= 0:
                K[table[u, p // block], :, p % block] = POISON
                V[table[u, p // block], :, p % block] = -POISON
    else:
        table = None
        K, V = (torch.randn(b, n_kv, S, d, generator=gen) for _ in range(2))
        for u, p in enumerate(positions):
            if p >= 0:
                K[u, :, p], V[u, :, p] = POISON, -POISON
    new_k, new_v = (torch.randn(1, b, n_kv, d, generator=gen) for _ in range(2))
    q = torch.randn(1, b, n_q, d, generator=gen)
    return dict(
        K=K,
        V=V,
        table=table,
        q=q,
        new_k=new_k,
        new_v=new_v,
        caches=[(tiles(dev, K, dtype), tiles(dev, V, dtype)) for _ in range(2)],
        dev_new=(tiles(dev, new_k, "bfloat16"), tiles(dev, new_v, "bfloat16")),
        dev_q=tiles(dev, q, "bfloat16"),
        dev_table=None if table is None else dev.from_torch(table, **RM),
        pos=dev.from_torch(torch.tensor(positions, dtype=torch.int32), **RM),
    )


@pytest.mark.parametrize("paged", [False, True], ids=["unpaged", "paged"])
@pytest.mark.parametrize("dtype", ["bfloat16", "bfloat8_b"])
def test_attention_reads_the_new_rows(dev, dtype, paged):
    """Batch 3 at different positions (one user skipped when paged), k_chunk_size 64 so several cores share a user
    and only one of them holds cur_pos's chunk: the output matches the golden over the updated cache (and not the one
    over the poisoned cache), and the caches equal the separate update's bit for bit."""
    seed = seed_for(f"test_attention_reads_the_new_rows[{dtype}-{paged}]")
    gen = generator(seed)
    positions = [200, 37, -1] if paged else [200, 37, 129]
    c = _case(dev, gen, dtype, paged, positions)
    (k, v), (k_sep, v_sep) = c["caches"]
    new_k, new_v = c["dev_new"]
    config = ProgramConfig(compute_with_storage_grid_size=(8, 8), k_chunk_size=64)
    args = dict(cur_pos_tensor=c["pos"], program_config=config, return_stats=True)
    if paged:
        out, run = ttflashdecode.paged_update_cache_and_decode(c["dev_q"], k, v, new_k, new_v, c["dev_table"], **args)
    else:
        out, run = ttflashdecode.update_cache_and_decode(c["dev_q"], k, v, new_k, new_v, **args)
    assert not set(run.plan.update_cores) & set(run.plan.attention_cores), (
        f"{tag(seed)}: update and attention share a core"
    )
    assert run.plan.decode.num_cores_per_head > 1, f"{tag(seed)}: the case must split users over cores"

    # The caches: exactly what the separate update makes of the same caches.
    ttflashdecode.paged_fused_update_cache(
        k_sep, new_k, v_sep, new_v, update_idxs_tensor=c["pos"], page_table=c["dev_table"]
    )
    for name, a, b in (("K", k, k_sep), ("V", v, v_sep)):
        assert dev._read_pages(a) == dev._read_pages(b), f"{tag(seed)}: {name} cache differs from the separate update's"
    K_after, V_after = dev.to_torch(k).float(), dev.to_torch(v).float()
    for u, p in enumerate(positions):
        if p >= 0:
            index, row = (int(c["table"][u, p // 32]), p % 32) if paged else (u, p)
            assert not (K_after[index, :, row] == POISON).any(), f"{tag(seed)}: user {u}'s K row was not written"

    # The output: the golden over the updated cache; far from the golden over the poisoned one.
    got = dev.to_torch(out).float()
    kw = dict(cur_pos=positions, page_table=c["table"])
    expected = golden.sdpa_decode(c["q"].bfloat16().float(), K_after, V_after, **kw)
    skipped = [u for u, p in enumerate(positions) if p < 0]
    check_output(got, expected, seed, f"fused {dtype} paged={paged}", dtype, zero_users=skipped)
    stale = golden.sdpa_decode(c["q"].bfloat16().float(), c["K"], c["V"], **kw)
    live = [u for u, p in enumerate(positions) if p >= 0]
    assert golden.max_abs_error(got[:, live], stale[:, live]) > 10, f"{tag(seed)}: the poison does not show"


def test_one_program_over_steps_and_free_cores(dev):
    """A config grid of 8x4 leaves rows 4-7 free: the update runs there and the attention keeps its whole grid. Two
    steps with the positions rewritten in place run one program (one launch each)."""
    seed = seed_for("test_one_program_over_steps_and_free_cores")
    gen = generator(seed)
    c = _case(dev, gen, "bfloat8_b", False, [10, 150])
    (k, v), _ = c["caches"]
    new_k, new_v = c["dev_new"]
    # An explicit k_chunk_size keeps 8 cores per group, so the attention fills the 8x4 grid (a derived one would give
    # each 256-position user a single core: plan.rules.default_num_cores_per_head).
    config = ProgramConfig(compute_with_storage_grid_size=(8, 4), k_chunk_size=32)
    out = dev.allocate((1, 2, 4, 64), ttnn.bfloat16, ttnn.TILE_LAYOUT)  # poisoned; the same address every step
    programs = device_cache(dev).stats()["programs"]
    for step, positions in enumerate(([10, 150], [11, 151])):
        dev.write(c["pos"], torch.tensor(positions, dtype=torch.int32))
        _, run = ttflashdecode.update_cache_and_decode(
            c["dev_q"],
            k,
            v,
            new_k,
            new_v,
            cur_pos_tensor=c["pos"],
            program_config=config,
            output_tensor=out,
            return_stats=True,
        )
        plan = run.plan
        assert not plan.reserved_row and all(y >= 4 for _, y in plan.update_cores), f"{tag(seed)}: {plan.update_cores}"
        expected = golden.sdpa_decode(
            c["q"].bfloat16().float(), dev.to_torch(k).float(), dev.to_torch(v).float(), cur_pos=positions
        )
        check_output(dev.to_torch(out).float(), expected, seed, f"step {step}", "bfloat8_b")
    assert device_cache(dev).stats()["programs"] - programs == 1, f"{tag(seed)}: expected one program for both steps"


def test_refused_before_anything_runs(dev):
    """What the fused call does not take is refused with the argument named, before a launch."""
    gen = generator(seed_for("test_refused_before_anything_runs"))
    c = _case(dev, gen, "bfloat16", False, [5, 6, 7])
    (k, v), _ = c["caches"]
    new_k, new_v = c["dev_new"]
    q2 = tiles(dev, torch.randn(2, 3, 4, 64, generator=gen), "bfloat16")
    with pytest.raises(ValueError, match=r"^q: q_len=2"):
        ttflashdecode.update_cache_and_decode(q2, k, v, new_k, new_v, cur_pos_tensor=c["pos"])
    with pytest.raises(ValueError, match=r"^dtype=bfloat8_b"):
        ttflashdecode.update_cache_and_decode(
            c["dev_q"], k, v, new_k, new_v, cur_pos_tensor=c["pos"], dtype=ttnn.bfloat8_b
        )
    wrong = tiles(dev, torch.randn(1, 3, 2, 32, generator=gen), "bfloat16")
    with pytest.raises(ValueError, match=r"^k_new: shape"):
        ttflashdecode.update_cache_and_decode(c["dev_q"], k, v, wrong, new_v, cur_pos_tensor=c["pos"])
    with pytest.raises(ValueError, match=r"cur_pos"):
        ttflashdecode.update_cache_and_decode(c["dev_q"], k, v, new_k, new_v, cur_pos=[5, 6, 300])


def test_options_match_the_separate_calls(dev):
    """Host positions, a torch page table, a sliding window, attention sinks and a scale: the fused call's output and
    caches are exactly those of the separate update then the separate attention on a copy of the caches."""
    seed = seed_for("test_options_match_the_separate_calls")
    gen = generator(seed)
    positions = [200, 70]
    c = _case(dev, gen, "bfloat8_b", True, positions)
    (k, v), (k_sep, v_sep) = c["caches"]
    new_k, new_v = c["dev_new"]
    sink = tiles(dev, torch.randn(1, 4, generator=gen), "bfloat16")
    options = dict(cur_pos=positions, sliding_window_size=64, attention_sink=sink, scale=0.1)
    out = ttflashdecode.paged_update_cache_and_decode(c["dev_q"], k, v, new_k, new_v, c["table"], **options)
    ttflashdecode.paged_fused_update_cache(k_sep, new_k, v_sep, new_v, update_idxs=positions, page_table=c["table"])
    ref = ttflashdecode.paged_scaled_dot_product_attention_decode(c["dev_q"], k_sep, v_sep, c["table"], **options)
    got, want = dev.to_torch(out).float(), dev.to_torch(ref).float()
    assert torch.equal(got, want), f"{tag(seed)}: max |fused - separate| {(got - want).abs().max():.5f}"
    for name, a, b in (("K", k, k_sep), ("V", v, v_sep)):
        assert dev._read_pages(a) == dev._read_pages(b), f"{tag(seed)}: {name} cache differs from the separate update's"
