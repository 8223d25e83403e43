"""The paged op's three arguments from ttnn 0.81.1's ``paged_scaled_dot_product_attention_decode``:
``cache_position_modulo`` (a ring-buffer cache indexed by logical positions), ``paged_cache_geometry`` (a cache read
through another layer's (block_size, num_kv_heads) view) and ``spec_multi_pos_tiles`` (speculative candidates folded
into a batch row), each on the emulator against ``golden.paged_sdpa_decode`` with seeded inputs, outputs poisoned with
NaN and garbage (NaN, +-Inf) wherever the kernels must not look: ring rows outside each query's window, page-table
slots past the ring, blocks no user needs. Run through the op and through ``patch_ttnn()``'s
``ttnn.transformer.paged_scaled_dot_product_attention_decode``; invalid values raise naming the argument before
anything runs.
"""

from __future__ import annotations

import pytest
import torch

import ttflashdecode
from decode_harness import decode_config as _config
from decode_harness import int32 as _int32
from decode_harness import seed_for, spec_paged_inputs
from decode_harness import tile as _tile
from output_checks import check_output
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.ops.decode import api as op_module

GARBAGE = (float("nan"), float("inf"), float("-inf"), 3.0e38)
BLOCK = 32


def _poisoned(device, shape):
    return _tile(device, torch.full(shape, float("nan")))


def _garbage_like(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    return torch.tensor(GARBAGE)[torch.randint(len(GARBAGE), x.shape, generator=gen)]


def _q(x):
    return golden.quantize_like_device(x, "bfloat16")


@pytest.fixture
def transformer():
    return import_ttnn().transformer


# ---- cache_position_modulo ------------------------------------------------------------------------------------------


def _ring_case(seed, cur_pos, ring, window, kv_dtype):
    """Users with rings of ``ring`` positions at the head of 8-slot page-table rows; every ring row outside a user's
    visible positions, every slot past the ring and every block no ring names holds garbage."""
    gen = torch.Generator().manual_seed(seed)
    b, nq, d, per_user = len(cur_pos), 8, 64, 8
    ring_blocks = ring // BLOCK
    num_blocks = b * ring_blocks + 3
    table = torch.randperm(num_blocks, generator=gen)[: b * ring_blocks].reshape(b, ring_blocks).to(torch.int32)
    slots_past_ring = torch.tensor([-1, 10**6, -(2**31), num_blocks] * per_user)[: per_user - ring_blocks]
    device_table = torch.cat([table, slots_past_ring.expand(b, -1).to(torch.int32)], dim=1)
    q = torch.randn(1, b, nq, d, generator=gen)
    k = torch.randn(num_blocks, 1, BLOCK, d, generator=gen)
    v = torch.randn(num_blocks, 1, BLOCK, d, generator=gen)
    seen = torch.zeros(num_blocks, BLOCK, dtype=torch.bool)
    for u, p in enumerate(cur_pos):
        first = max(0, p - window + 1) if window else 0
        for pos in range(first, p + 1):
            r = pos % ring
            seen[table[u, r // BLOCK], r % BLOCK] = True
    hidden = ~seen[:, None, :, None].expand_as(k)
    k_bad = torch.where(hidden, _garbage_like(k, gen), k)
    v_bad = torch.where(hidden, _garbage_like(v, gen), v)
    expected_table = torch.cat([table, torch.zeros(b, per_user - ring_blocks, dtype=torch.int32)], dim=1)
    expected = golden.paged_sdpa_decode(
        _q(q),
        golden.quantize_like_device(k, kv_dtype),
        golden.quantize_like_device(v, kv_dtype),
        expected_table,
        cur_pos=cur_pos,
        cache_position_modulo=ring,
        sliding_window_size=window,
    )
    return q, k_bad, v_bad, device_table, expected


@pytest.mark.parametrize("kv_dtype", ["bfloat16", "bfloat8_b"])
def test_ring_cache_reads_logical_positions_modulo_the_ring(emu_device, kv_dtype):
    """Sliding window 64 over a ring of 128 positions in a 256-position page table: positions far past the table's
    reach (1000, 4157) wrap onto the ring, a window straddling the wrap (300: 237..300) reads both ends, a young user
    (20) reads from 0."""
    seed = seed_for(f"ring {kv_dtype}")
    cur_pos, ring, window = [300, 20, 1000, 4157], 128, 64
    q, k, v, table, expected = _ring_case(seed, cur_pos, ring, window, kv_dtype)
    out = op_module.paged_scaled_dot_product_attention_decode(
        _tile(emu_device, q),
        _tile(emu_device, k, kv_dtype),
        _tile(emu_device, v, kv_dtype),
        _int32(emu_device, table.tolist()),
        cur_pos_tensor=_int32(emu_device, cur_pos),
        sliding_window_size=window,
        cache_position_modulo=ring,
        program_config=_config(),
        output_tensor=_poisoned(emu_device, tuple(q.shape)),
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, f"ring {ring} window {window}", kv_dtype)


def test_ring_without_window_through_patched_ttnn(emu_device, transformer):
    """No window: positions below the ring are a plain cache (upstream's call through patch_ttnn(), device cur_pos);
    a position at or past the ring would see ring rows twice, so that user is skipped (zeros)."""
    seed = seed_for("ring without window")
    cur_pos, ring = [127, 40, 5], 128
    q, k, v, table, expected = _ring_case(seed, cur_pos, ring, None, "bfloat16")
    positions = [*cur_pos[:2], ring]  # user 2 past the ring
    with ttflashdecode.patch_ttnn():
        out = transformer.paged_scaled_dot_product_attention_decode(
            _tile(emu_device, q),
            _tile(emu_device, k),
            _tile(emu_device, v),
            _int32(emu_device, table.tolist()),
            cur_pos_tensor=_int32(emu_device, positions),
            cache_position_modulo=ring,
            program_config=_config(),
        )
    check_output(emu_device.to_torch(out).float(), expected, seed, "ring, no window", zero_users=(2,))


# ---- paged_cache_geometry -------------------------------------------------------------------------------------------


def test_golden_view_recuts_each_blocks_tiles_in_order():
    """The golden's view, checked against the tile order written out: view tile (h, t, c) of a block is the block's
    tile number (h * view_bs_tiles + t) * view_d_tiles + c, tiles numbered (head, position tile, column tile)."""
    cache = torch.randn(3, 2, 64, 64)
    view = golden.paged_cache_view(cache, 32, 2, 128)
    tiles = [
        cache[n, h, 32 * t : 32 * t + 32, 32 * c : 32 * c + 32]
        for n in range(3)
        for h in range(2)
        for t in range(2)
        for c in range(2)
    ]
    for n in range(3):
        for h in range(2):
            for c in range(4):
                number = n * 8 + h * 4 + c
                assert torch.equal(view[n, h, :, 32 * c : 32 * c + 32], tiles[number])
    assert torch.equal(golden.paged_cache_view(view, 64, 2, 64), cache)


@pytest.mark.parametrize(
    "cache_shape, view",
    [((1, 64, 128), (32, 2)), ((4, 64, 64), (64, 2))],
    ids=["kv1-b64-to-kv2-b32", "kv4-d64-to-kv2-d128"],
)
def test_geometry_view_of_another_layers_cache(emu_device, transformer, cache_shape, view):
    """A cache allocated [num_blocks, *cache_shape] read as (block_size, num_kv_heads) = view with q's head dim 128 and
    GQA 4:1, through the op and through patch_ttnn() with a ttnn.PagedCacheGeometryOverride; blocks no user needs hold
    garbage."""
    seed = seed_for(f"geometry {cache_shape} {view}")
    gen = torch.Generator().manual_seed(seed)
    ttnn = import_ttnn()
    block_size, num_kv_heads = view
    b, nq, d, per_user = 2, 8, 128, 4
    cur_pos = [block_size * per_user - 1, 45]
    num_blocks = b * per_user + 2
    table = torch.randperm(num_blocks, generator=gen)[: b * per_user].reshape(b, per_user).to(torch.int32)
    k_view = torch.randn(num_blocks, num_kv_heads, block_size, d, generator=gen)
    v_view = torch.randn(num_blocks, num_kv_heads, block_size, d, generator=gen)
    unused = torch.ones(num_blocks, dtype=torch.bool)
    unused[table[0]] = False
    unused[table[1, : cur_pos[1] // block_size + 1]] = False
    k_view = torch.where(unused[:, None, None, None], _garbage_like(k_view, gen), k_view)
    v_view = torch.where(unused[:, None, None, None], _garbage_like(v_view, gen), v_view)
    k_cache = golden.paged_cache_view(k_view, cache_shape[1], cache_shape[0], cache_shape[2])
    v_cache = golden.paged_cache_view(v_view, cache_shape[1], cache_shape[0], cache_shape[2])
    q = torch.randn(1, b, nq, d, generator=gen)
    clean = torch.where(unused[:, None, None, None], 0.0, 1.0)
    k_clean, v_clean = (
        golden.paged_cache_view(x.nan_to_num(0, 0, 0) * clean, cache_shape[1], cache_shape[0], cache_shape[2])
        for x in (k_view, v_view)
    )
    expected = golden.paged_sdpa_decode(
        _q(q), _q(k_clean), _q(v_clean), table, cur_pos=cur_pos, paged_cache_geometry=(block_size, num_kv_heads)
    )
    args = (
        _tile(emu_device, q),
        _tile(emu_device, k_cache),
        _tile(emu_device, v_cache),
        _int32(emu_device, table.tolist()),
    )
    geometry = ttnn.PagedCacheGeometryOverride(block_size=block_size, num_kv_heads=num_kv_heads)
    out = op_module.paged_scaled_dot_product_attention_decode(
        *args,
        cur_pos=cur_pos,
        paged_cache_geometry=geometry,
        program_config=_config(),
        output_tensor=_poisoned(emu_device, (1, b, nq, d)),
    )
    check_output(emu_device.to_torch(out).float(), expected, seed, f"geometry {view} of {cache_shape}")
    with ttflashdecode.patch_ttnn():
        patched = transformer.paged_scaled_dot_product_attention_decode(
            *args,
            cur_pos_tensor=_int32(emu_device, cur_pos),
            paged_cache_geometry=geometry,
            program_config=_config(),
        )
    check_output(emu_device.to_torch(patched).float(), expected, seed, f"patched geometry {view} of {cache_shape}")


# ---- spec_multi_pos_tiles -------------------------------------------------------------------------------------------


def test_spec_multi_pos_candidates_have_their_own_bounds(emu_device, transformer):
    """Two batch rows of three candidates each (q [1, 2, 96, 64], one 32-head tile per candidate, a page-table row per
    batch row): every candidate attends up to its own cur_pos entry, including bounds in different chunks and tiles
    of one row; garbage past each row's last bound. Through the op (device cur_pos) and patch_ttnn()."""
    seed = seed_for("spec multi pos")
    gen = torch.Generator().manual_seed(seed)
    rows, tg, d, per_user = 2, 3, 64, 8
    cur_pos = [100, 101, 102, 31, 63, 200]
    table, q, k, v, hidden = spec_paged_inputs(gen, cur_pos, tg, d, per_user, BLOCK)
    k_bad = torch.where(hidden, _garbage_like(k, gen), k)
    v_bad = torch.where(hidden, _garbage_like(v, gen), v)
    expected = golden.paged_sdpa_decode(_q(q), _q(k), _q(v), table, cur_pos=cur_pos, spec_multi_pos_tiles=tg)
    args = (
        _tile(emu_device, q),
        _tile(emu_device, k_bad),
        _tile(emu_device, v_bad),
        _int32(emu_device, table.tolist()),
    )
    out = op_module.paged_scaled_dot_product_attention_decode(
        *args,
        cur_pos_tensor=_int32(emu_device, cur_pos),
        spec_multi_pos_tiles=tg,
        program_config=_config(),
        output_tensor=_poisoned(emu_device, tuple(q.shape)),
    )
    # check_output's users are dim 1: view both as [1, candidates, 32, d]
    as_users = (1, rows * tg, 32, d)
    check_output(emu_device.to_torch(out).float().reshape(as_users), expected.reshape(as_users), seed, "spec")
    # Each candidate is its batch row's legacy user (upstream's own test): the same numbers as B * Tg rows.
    legacy = golden.paged_sdpa_decode(
        _q(q).reshape(as_users), _q(k), _q(v), table.repeat_interleave(tg, dim=0), cur_pos=cur_pos
    )
    assert torch.equal(legacy.reshape(q.shape), expected)
    with ttflashdecode.patch_ttnn():
        patched = transformer.paged_scaled_dot_product_attention_decode(
            *args,
            cur_pos_tensor=_int32(emu_device, cur_pos),
            spec_multi_pos_tiles=tg,
            program_config=_config(),
        )
    assert tuple(patched.shape) == tuple(q.shape)
    check_output(
        emu_device.to_torch(patched).float().reshape(as_users), expected.reshape(as_users), seed, "spec, patched"
    )


# ---- invalid values -----------------------------------------------------------------------------------------------


def _invalid_cases():
    ttnn = import_ttnn()
    geo = ttnn.PagedCacheGeometryOverride
    return [
        ({"cache_position_modulo": 48}, ValueError, ["cache_position_modulo=48", "multiple of block_size=32"]),
        ({"cache_position_modulo": 0}, ValueError, ["cache_position_modulo=0"]),
        ({"cache_position_modulo": 512}, ValueError, ["cache_position_modulo=512", "256"]),
        (
            {"cache_position_modulo": 64, "sliding_window_size": 96},
            ValueError,
            ["cache_position_modulo=64", "sliding_window_size=96"],
        ),
        ({"cache_position_modulo": 64.0}, TypeError, ["cache_position_modulo=64.0"]),
        (
            {"paged_cache_geometry": geo(block_size=32, num_kv_heads=1)},
            ValueError,
            ["paged_cache_geometry", "num_kv_heads=1", "block_size=32", "expected equal"],
        ),
        (
            {"paged_cache_geometry": geo(block_size=16, num_kv_heads=4)},
            ValueError,
            ["paged_cache_geometry", "block_size=16", "multiple of 32"],
        ),
        ({"paged_cache_geometry": geo()}, ValueError, ["paged_cache_geometry", "expected both > 0"]),
        ({"paged_cache_geometry": (32, 2)}, TypeError, ["paged_cache_geometry=(32, 2)"]),
        ({"spec_multi_pos_tiles": 2}, ValueError, ["spec_multi_pos_tiles=2", "[1, b, 64, head_dim]"]),
        ({"spec_multi_pos_tiles": -1}, ValueError, ["spec_multi_pos_tiles=-1"]),
    ]


@pytest.mark.parametrize("case", range(11))
def test_invalid_values_are_refused_naming_the_argument(emu_device, case):
    """Each bad value raises before anything is uploaded, allocated or launched (the program cache does not move)."""
    bad, error, named = _invalid_cases()[case]
    q = _tile(emu_device, torch.zeros(1, 2, 8, 64))
    kv = _tile(emu_device, torch.zeros(18, 2, 32, 64))
    table = _int32(emu_device, torch.arange(16).reshape(2, 8).tolist())
    before = op_module.program_cache_stats()
    with pytest.raises(error) as raised:
        op_module.paged_scaled_dot_product_attention_decode(q, kv, kv, table, cur_pos=[3, 9], **bad)
    for text in named:
        assert text in str(raised.value), f"{bad}: {raised.value!s} does not name {text!r}"
    assert op_module.program_cache_stats() == before


def test_spec_requirements_are_upstreams(emu_device):
    """spec_multi_pos_tiles: one kv head, causal, no window, a page-table row per batch row, b * Tg positions."""
    q = _tile(emu_device, torch.zeros(1, 2, 64, 64))
    one, two = (_tile(emu_device, torch.zeros(18, h, 32, 64)) for h in (1, 2))
    table = _int32(emu_device, torch.arange(16).reshape(2, 8).tolist())
    spec = {"spec_multi_pos_tiles": 2}
    cases = [
        ((q, two, two, table), dict(cur_pos=[1, 2, 3, 4]), ["num_kv_heads == 1, got 2"]),
        ((q, one, one, table), dict(cur_pos=[1, 2, 3, 4], sliding_window_size=8), ["sliding_window_size=8"]),
        ((q, one, one, _int32(emu_device, [[0] * 8] * 4)), dict(cur_pos=[1, 2, 3, 4]), ["page_table_tensor", "2 rows"]),
        ((q, one, one, table), dict(cur_pos=[1, 2]), ["cur_pos", "expected 4 entries"]),
    ]
    for args, kwargs, named in cases:
        with pytest.raises(ValueError) as raised:
            op_module.paged_scaled_dot_product_attention_decode(*args, **kwargs, **spec)
        for text in named:
            assert text in str(raised.value), f"{kwargs}: {raised.value!s} does not name {text!r}"
