"""Upstream's model-code paths on the emulator, against the golden: MLA (plain and paged) and spec_multi_pos_tiles.

``ttflashdecode.upstream`` runs the installed wheel's sdpa_decode kernels with the program its factory builds. Besides
plain and paged decode (tests/test_upstream_sdpa_decode.py) model code calls two more paths, and the side-by-side
(perf/sweep.py) compares ours with them, so each is checked here on seeded random inputs:

* ``flash_multi_latent_attention_decode`` / ``paged_flash_multi_latent_attention_decode`` (DeepSeek MLA): V is K's
  first head_dim_v columns, read out of each K chunk in L1 (``reuse_k``): the cache is read from DRAM once, as K.
* ``paged_scaled_dot_product_attention_decode(..., spec_multi_pos_tiles=Tg)`` (speculative verify): Tg candidates per
  batch row, each with its own causal bound; the row's K/V is read once for all of them.

The output starts as NaN so every element the op should write is checked to have been written; the thresholds (PCC
0.999 and a max error of 4% of the largest output) fail a kernel that reads the wrong V columns, the wrong bound or the
wrong page (each gives PCC well below 0.99 on these inputs).
"""

from __future__ import annotations

import os

import pytest
import torch

from ttflashdecode import golden, upstream

NAN_POISON = 0x7FC07FC0
PCC_MIN = 0.999
MAX_ABS_ERR = 0.04


def _seed(name: str) -> int:
    return int(os.environ.get("TTFD_SEED", 0)) or (sum(map(ord, name)) * 7919) % 100_000


def _config(ttnn, k_chunk_size: int, cores: int):
    return ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
        q_chunk_size=0,
        k_chunk_size=k_chunk_size,
        max_cores_per_head_batch=cores,
    )


def _check(tag, got, expected):
    assert not torch.isnan(got).any(), f"{tag}: an output element was never written (still the NaN poison)"
    pcc, err = golden.pcc(got, expected), golden.max_abs_error(got, expected)
    bound = MAX_ABS_ERR * max(1.0, float(expected.abs().max()))
    assert pcc >= PCC_MIN, f"{tag}: PCC {pcc:.6f} < {PCC_MIN}"
    assert err <= bound, f"{tag}: max |error| {err:.4f} > {bound:.4f}"


@pytest.mark.parametrize("paged", [False, True], ids=["plain", "paged"])
def test_upstream_mla_reads_v_out_of_k(emu_device, ttnn, paged):
    name = f"upstream-mla-{paged}"
    seed = _seed(name)
    tag = f"[seed {seed}; replay with TTFD_SEED={seed}] {name}"
    g = torch.Generator().manual_seed(seed)
    # 16 q heads (half tiles) plain; 32 q heads (full tiles) paged. d 96 = 64 latent + 32 rope columns, V = the 64.
    b, hq, d, dv = 2, (32 if paged else 16), 96, 64
    block, per_user, num_blocks = 32, 8, 21
    kv_len = block * per_user if paged else 256
    q = torch.randn(1, b, hq, d, generator=g)
    k = torch.randn(num_blocks if paged else b, 1, block if paged else kv_len, d, generator=g)
    tq = emu_device.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    tk = emu_device.from_torch(k, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT)
    out = emu_device.allocate([1, b, hq, dv], ttnn.bfloat16, ttnn.TILE_LAYOUT, fill=NAN_POISON)
    positions = [kv_len - 37, 70]
    pos = emu_device.from_torch(
        torch.tensor(positions, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT
    )
    kwargs = dict(
        cur_pos_tensor=pos,
        program_config=_config(ttnn, 0 if paged else 64, 4),
        output_tensor=out,
        return_stats=True,
    )
    table = None
    if paged:
        table = torch.randperm(num_blocks, generator=g)[: b * per_user].reshape(b, per_user).to(torch.int32)
        _, run = upstream.paged_flash_multi_latent_attention_decode(tq, tk, table, head_dim_v=dv, **kwargs)
    else:
        _, run = upstream.flash_multi_latent_attention_decode(tq, tk, dv, **kwargs)
    plan = run.plan
    assert plan.reuse_k and plan.vDHt == dv // 32 and plan.DHt == d // 32, f"{tag}: {plan.summary()}"

    qd, kd = (emu_device.to_torch(t).float() for t in (tq, tk))
    expected = golden.sdpa_decode(qd, kd, kd[..., :dv], cur_pos=positions, page_table=table)
    _check(tag, emu_device.to_torch(out).float(), expected)

    # V comes out of K's L1 chunk: from DRAM only K, each tile of the chunks a user needs once.
    k_chunk = plan.k_chunk_size
    tiles = 0
    for p in positions:
        chunk = k_chunk or 32 * min(plan.max_dynamic_chunk_size, 1 << (p // 32).bit_length())
        tiles += -(-(p + 1) // chunk) * chunk // 32 * (d // 32)
    assert run.stats.bytes_read_from(tk) == tiles * tk.buffer_page_size(), f"{tag}: K bytes read"


def test_upstream_spec_multi_pos_tiles_reads_a_row_once(emu_device, ttnn):
    name = "upstream-spec-multi-pos"
    seed = _seed(name)
    tag = f"[seed {seed}; replay with TTFD_SEED={seed}] {name}"
    g = torch.Generator().manual_seed(seed)
    # Upstream reads whole chunks (here up to 256 tokens past the last bound), taking the pages of the padded tail
    # from the page table too: each row's table covers 16 blocks (512 tokens), as a model's max_seq_len table does.
    # A shorter table leaves the reader indexing stale L1 past the row, i.e. an arbitrary page.
    b, tg, d, block, per_user = 2, 3, 64, 32, 16
    num_blocks = b * per_user + 3
    q = torch.randn(1, b, tg * 32, d, generator=g)
    k = torch.randn(num_blocks, 1, block, d, generator=g)
    v = torch.randn(num_blocks, 1, block, d, generator=g)
    tq = emu_device.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    tk, tv = (emu_device.from_torch(x, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT) for x in (k, v))
    out = emu_device.allocate([1, b, tg * 32, d], ttnn.bfloat16, ttnn.TILE_LAYOUT, fill=NAN_POISON)
    # Row 0's candidates straddle a chunk boundary (each bound masks inside its own chunk); row 1's sit in one chunk.
    positions = [253, 254, 256, 95, 96, 97]
    table = torch.randperm(num_blocks, generator=g)[: b * per_user].reshape(b, per_user).to(torch.int32)
    pos = emu_device.from_torch(
        torch.tensor(positions, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT
    )
    _, run = upstream.paged_scaled_dot_product_attention_decode(
        tq,
        tk,
        tv,
        table,
        cur_pos_tensor=pos,
        spec_multi_pos_tiles=tg,
        program_config=_config(ttnn, 0, 4),
        output_tensor=out,
        return_stats=True,
    )
    plan = run.plan
    assert plan.spec_multi_pos_T == tg and plan.PNHt == tg and not plan.use_half_tile, f"{tag}: {plan.summary()}"

    qd, kd, vd = (emu_device.to_torch(t).float() for t in (tq, tk, tv))
    expected = golden.paged_sdpa_decode(qd, kd, vd, table, cur_pos=positions, spec_multi_pos_tiles=tg)
    _check(tag, emu_device.to_torch(out).float(), expected)

    # Each row's K and V are read once for all its candidates, up to the chunk holding its last bound.
    tiles = 0
    for r in range(b):
        last = positions[r * tg + tg - 1]
        chunk = 32 * min(plan.max_dynamic_chunk_size, 1 << (last // 32).bit_length())
        tiles += -(-(last + 1) // chunk) * chunk // 32 * (d // 32)
    stats = run.stats
    assert stats.bytes_read_from(tk) == tiles * tk.buffer_page_size(), f"{tag}: K bytes read"
    assert stats.bytes_read_from(tv) == tiles * tv.buffer_page_size(), f"{tag}: V bytes read"


def test_upstream_paths_refuse_bad_arguments(emu_device, ttnn, no_launch):
    q = emu_device.from_torch(torch.randn(1, 2, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    k = emu_device.from_torch(torch.randn(8, 1, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    table = torch.arange(8, dtype=torch.int32).reshape(2, 4)
    with pytest.raises(ValueError, match=r"spec_multi_pos_tiles=3 needs 96 rows"):
        upstream.paged_scaled_dot_product_attention_decode(
            q, k, k, table, cur_pos_tensor=torch.tensor([1] * 6), spec_multi_pos_tiles=3
        )
    with pytest.raises(ValueError, match=r"cur_pos_tensor: .*reads its 2 x 2 candidate bounds"):
        upstream.paged_scaled_dot_product_attention_decode(q, k, k, table, cur_pos=[1, 2, 3, 4], spec_multi_pos_tiles=2)
    with pytest.raises(ValueError, match=r"cur_pos_tensor\[2:4\]=\[9, 3\].*non-decreasing"):
        upstream.paged_scaled_dot_product_attention_decode(
            q, k, k, table, cur_pos_tensor=torch.tensor([1, 2, 9, 3]), spec_multi_pos_tiles=2
        )
    with pytest.raises(ValueError, match=r"head_dim_v=None"):
        upstream.flash_multi_latent_attention_decode(q, k, cur_pos=[1, 2])
    with pytest.raises(ValueError, match=r"head_dim_v=96: must be at most k's head dim 64"):
        upstream.paged_flash_multi_latent_attention_decode(q, k, table, head_dim_v=96, cur_pos=[1, 2])
