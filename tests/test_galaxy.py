"""A Galaxy (32 Wormhole chips, MeshShape (8, 4)) in the emulator, and Llama-3.1-70B's decode split over it as
models/demos/llama3_70b_galaxy splits it: the 8 kv heads over the 8 mesh rows, the 32 users over the 4 columns, so
each chip runs 8 users x 8 q / 1 kv head, the shape of the published per-chip sdpa_decode figure (9.07-10.20 us).

Inputs are seeded (decode_harness.seed_for: TTFD_SEED replays), outputs are poisoned with NaN and passed in, and each
chip's DRAM counters must show exactly its own users' live K/V tiles of its own kv head, read once.
"""

from __future__ import annotations

import pytest
import torch

import ttemu
from decode_harness import check_close, generator, seed_for, tag
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.ops.decode import api as op_module
from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper

ttnn = import_ttnn()
TILE = dict(layout=ttnn.TILE_LAYOUT)
ROW_MAJOR_INT = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
GALAXY = (8, 4)


def split2d(mesh, dims):
    return ttemu.ShardTensor2dMesh(mesh, mesh_shape=GALAXY, dims=dims)


def join2d(mesh, dims):
    return ttemu.ConcatMesh2dToTensor(mesh, mesh_shape=GALAXY, dims=dims)


@pytest.fixture(scope="module")
def galaxy():
    with ttemu.open_mesh_device(board="galaxy") as mesh:
        yield mesh


def test_galaxy_mesh_and_grids(galaxy):
    """ttnn's default Galaxy shape (the wheel's single_galaxy_mesh_graph_descriptor: dims [8, 4]); unharvested chips
    with the core descriptor's grids: 8x9 with dispatch on a row (ttnn's default), 7x10 on a column."""
    assert tuple(galaxy.shape) == GALAXY and galaxy.get_num_devices() == 32
    grid = galaxy.compute_with_storage_grid_size()
    assert (grid.x, grid.y) == (8, 9)
    chip = ttemu.open_device("galaxy", dispatch_core_axis="col")
    try:
        grid = chip.compute_with_storage_grid_size()
        assert (grid.x, grid.y) == (7, 10)
    finally:
        chip.close()
    with pytest.raises(ttemu.EmulatorError, match=r"dispatch_core_axis='col'.*the emulated n300 has dispatch on a row"):
        ttemu.open_mesh_device(board="t3k", dispatch_core_axis="col")
    with pytest.raises(ValueError, match=r"mesh_shape=\(8, 8\).*at most the galaxy's 32 chips"):
        ttemu.open_mesh_device(board="galaxy", mesh_shape=(8, 8))


def test_2d_mapper_and_composer_round_trip(galaxy):
    """ShardTensor2dMesh: chip (r, c) takes piece r of dims[0] and piece c of dims[1] (None: replicated along that
    axis); ConcatMesh2dToTensor joins them back bit for bit; the topology is the mesh's 2-D one."""
    seed = seed_for("galaxy-2d-round-trip")
    gen = generator(seed)
    x = torch.randn(1, 4 * 3, 8 * 2, 64, generator=gen).to(torch.bfloat16)
    t = galaxy.from_torch(x, dtype=ttnn.bfloat16, mesh_mapper=split2d(galaxy, (2, 1)), **TILE)
    assert list(t.shape) == [1, 3, 2, 64]
    placements = t.tensor_topology().placements()
    assert [p.dim for p in placements] == [2, 1]
    chips = galaxy.shards_to_torch(t)
    for i, got in enumerate(chips):
        r, c = divmod(i, 4)
        assert torch.equal(got, x[:, 3 * c : 3 * c + 3, 2 * r : 2 * r + 2]), f"{tag(seed)} chip ({r}, {c})"
    assert torch.equal(galaxy.to_torch(t, mesh_composer=join2d(galaxy, (2, 1))), x), tag(seed)
    ints = torch.randint(-1000, 1000, (8,), generator=gen, dtype=torch.int32)
    rows_replicated = galaxy.from_torch(ints, mesh_mapper=split2d(galaxy, (None, 0)), **ROW_MAJOR_INT)
    assert isinstance(rows_replicated.tensor_topology().placements()[0], ttnn.PlacementReplicate)
    for i, got in enumerate(galaxy.shards_to_torch(rows_replicated)):
        c = i % 4
        assert torch.equal(got, ints[2 * c : 2 * c + 2]), f"{tag(seed)} chip {i}"
    with pytest.raises(ValueError, match=r"dim 1 of shape \[1, 6, 16, 64\] has size 6, which the mesh's 4 columns"):
        galaxy.from_torch(x[:, :6], dtype=ttnn.bfloat16, mesh_mapper=split2d(galaxy, (2, 1)), **TILE)
    with pytest.raises(ValueError, match=r"mesh_shape=\(4, 8\): expected the mesh's own shape \(8, 4\)"):
        ttemu.ShardTensor2dMesh(galaxy, mesh_shape=(4, 8), dims=(2, 1))
    with pytest.raises(ValueError, match=r"dims=\(1, 1\) name one dim twice"):
        galaxy.from_torch(x, dtype=ttnn.bfloat16, mesh_mapper=split2d(galaxy, (1, 1)), **TILE)


def _llama70b_inputs(gen, positions, blocks_per_user, block, d=128, nq=64, nkv=8, users=32, spare_blocks=3):
    """Host tensors of a Galaxy decode step: each mesh column holds the paged cache of its 8 users (its own block
    numbering, spare blocks filled with garbage the kernels must never read), stacked on dim 0 over the columns."""
    cols = GALAXY[1]
    per_col = users // cols
    blocks = per_col * blocks_per_user + spare_blocks
    q = torch.randn(1, users, nq, d, generator=gen)
    k = torch.randn(cols * blocks, nkv, block, d, generator=gen)
    v = torch.randn(cols * blocks, nkv, block, d, generator=gen)
    tables = [
        torch.randperm(blocks, generator=gen)[: per_col * blocks_per_user].reshape(per_col, blocks_per_user)
        for _ in range(cols)
    ]
    for c, table in enumerate(tables):  # garbage in the blocks no user of the column owns
        unused = sorted(set(range(blocks)) - set(table.flatten().tolist()))
        k[[c * blocks + b for b in unused]] = float("nan")
        v[[c * blocks + b for b in unused]] = float("inf")
    return q, k, v, tables, blocks


def test_llama_3_1_70b_galaxy_decode():
    """Llama-3.1-70B decode on a Galaxy: q [1, 32, 64, 128] with heads over the rows and users over the columns, a
    paged bfloat8_b cache per column (kv heads over the rows), per-column page tables and positions as device
    tensors split over the columns (one user at -1, positions at tile and block edges), the output poisoned and
    joined back with ConcatMesh2dToTensor; every chip reads its users' live tiles of its kv head once."""
    seed = seed_for("galaxy-llama70b")
    gen = generator(seed)
    nq, d, users, block, blocks_per_user = 64, 128, 32, 32, 8
    kv_len = block * blocks_per_user
    positions = torch.randint(0, kv_len, (users,), generator=gen)
    positions[:6] = torch.tensor([kv_len - 1, 0, 31, 32, -1, 127])
    q, k, v, tables, blocks = _llama70b_inputs(gen, positions, blocks_per_user, block)
    with ttemu.open_mesh_device(board="galaxy") as mesh:
        tq = mesh.from_torch(q, dtype=ttnn.bfloat16, mesh_mapper=split2d(mesh, (2, 1)), **TILE)
        tk = mesh.from_torch(k, dtype=ttnn.bfloat8_b, mesh_mapper=split2d(mesh, (1, 0)), **TILE)
        tv = mesh.from_torch(v, dtype=ttnn.bfloat8_b, mesh_mapper=split2d(mesh, (1, 0)), **TILE)
        table = mesh.from_torch(
            torch.cat(tables).to(torch.int32), mesh_mapper=split2d(mesh, (None, 0)), **ROW_MAJOR_INT
        )
        pos = mesh.from_torch(positions.to(torch.int32), mesh_mapper=split2d(mesh, (None, 0)), **ROW_MAJOR_INT)
        poison = torch.full((1, users, nq, d), float("nan"))
        out_tensor = mesh.from_torch(poison, dtype=ttnn.bfloat16, mesh_mapper=split2d(mesh, (2, 1)), **TILE)
        tt_out, run = op_module.paged_scaled_dot_product_attention_decode(
            tq,
            tk,
            tv,
            table,
            cur_pos_tensor=pos,
            output_tensor=out_tensor,
            return_stats=True,
        )
        out = mesh.to_torch(tt_out, mesh_composer=join2d(mesh, (2, 1))).float()
        assert (run.plan.shapes.batch, run.plan.shapes.n_q_heads, run.plan.shapes.n_kv_heads) == (8, 8, 1)
        qq, kq, vq = (
            golden.quantize_like_device(q, "bfloat16"),
            golden.quantize_like_device(k, "bfloat8_b"),
            golden.quantize_like_device(v, "bfloat8_b"),
        )
        per_col = users // GALAXY[1]
        expected = torch.cat(
            [
                golden.sdpa_decode(
                    qq[:, per_col * c : per_col * (c + 1)],
                    kq[blocks * c : blocks * (c + 1)],
                    vq[blocks * c : blocks * (c + 1)],
                    cur_pos=positions[per_col * c : per_col * (c + 1)].tolist(),
                    page_table=tables[c],
                )
                for c in range(GALAXY[1])
            ],
            dim=1,
        )
        check_close(out, expected, "bfloat8_b", seed, "Llama-3.1-70B on a Galaxy")
        assert torch.count_nonzero(out[:, 4]) == 0, f"{tag(seed)} user 4 at -1 must get zero rows"
        page = tk.buffer_page_size()
        for i, (chip, shard) in enumerate(zip(run.stats.chips, tk.shards)):
            c = i % GALAXY[1]
            col_positions = positions[per_col * c : per_col * (c + 1)].tolist()
            live = sum((p + 32) // 32 for p in col_positions if p >= 0) * (d // 32) * page
            assert chip.bytes_read_from(shard) == live, f"{tag(seed)} chip {i} read {chip.bytes_read_from(shard)}"
        # MODELLED: every chip runs concurrently; the launch takes the slowest chip's time.
        assert run.stats.duration_ns == max(s.duration_ns for s in run.stats.chips)
        # The wrapper plans the same split from the model's shape (users over the columns) and computes the same.
        wrapper = FlashDecodeWrapper(mesh)
        plan = wrapper.plan(
            batch=users,
            n_q_heads=nq,
            n_kv_heads=8,
            head_dim=d,
            kv_dtype=ttnn.bfloat8_b,
            block_size=block,
            max_blocks_per_user=blocks_per_user,
            users_mesh_axis=1,
        )
        assert (plan.shapes.batch, plan.shapes.n_q_heads, plan.shapes.n_kv_heads) == (8, 8, 1)
        again = wrapper.run(tq, tk, tv, cur_pos_tensor=pos, page_table_tensor=table)
        assert torch.equal(mesh.to_torch(again, mesh_composer=join2d(mesh, (2, 1))).float(), out), tag(seed)
        with pytest.raises(ValueError, match=r"batch=10: users_mesh_axis=1 splits the mesh \(8, 4\)'s users over"):
            wrapper.plan(batch=10, n_q_heads=nq, n_kv_heads=8, head_dim=d, kv_len=256, users_mesh_axis=1)
        with pytest.raises(ValueError, match=r"users_mesh_axis=2: expected 0 \(the mesh's rows\), 1"):
            wrapper.plan(batch=users, n_q_heads=nq, n_kv_heads=8, head_dim=d, kv_len=256, users_mesh_axis=2)


def test_galaxy_split_refusals(galaxy):
    """Users split over the columns need positions and page tables split the same way; anything else would give each
    column's users another column's positions or blocks: refused before anything runs, naming the argument."""
    gen = generator(seed_for("galaxy-refusals"))
    positions = torch.full((32,), 100)
    q, k, v, tables, _ = _llama70b_inputs(gen, positions, 4, 32)
    tq = galaxy.from_torch(q, dtype=ttnn.bfloat16, mesh_mapper=split2d(galaxy, (2, 1)), **TILE)
    tk = galaxy.from_torch(k, dtype=ttnn.bfloat8_b, mesh_mapper=split2d(galaxy, (1, 0)), **TILE)
    table = galaxy.from_torch(
        torch.cat(tables).to(torch.int32), mesh_mapper=split2d(galaxy, (None, 0)), **ROW_MAJOR_INT
    )
    pos = galaxy.from_torch(positions.to(torch.int32), mesh_mapper=split2d(galaxy, (None, 0)), **ROW_MAJOR_INT)
    call = op_module.paged_scaled_dot_product_attention_decode
    with pytest.raises(
        ValueError, match=r"cur_pos: host positions are the same on every chip, but q's users are split"
    ):
        call(tq, tk, tk, table, cur_pos=positions.tolist())
    replicated_pos = galaxy.from_torch(positions[:8].to(torch.int32), **ROW_MAJOR_INT)
    with pytest.raises(ValueError, match=r"cur_pos_tensor: replicated along the mesh's 4 columns .*expected its users"):
        call(tq, tk, tk, table, cur_pos_tensor=replicated_pos)
    replicated_table = galaxy.from_torch(tables[0].to(torch.int32), **ROW_MAJOR_INT)
    with pytest.raises(ValueError, match=r"page_table_tensor: replicated along the mesh's 4 columns"):
        call(tq, tk, tk, replicated_table, cur_pos_tensor=pos)
    k_all_heads = galaxy.from_torch(k, dtype=ttnn.bfloat8_b, mesh_mapper=split2d(galaxy, (None, 0)), **TILE)
    with pytest.raises(
        ValueError, match=r"k: replicated along the mesh's 8 rows of the mesh \(8, 4\), which split q's heads"
    ):
        call(tq, k_all_heads, k_all_heads, table, cur_pos_tensor=pos)
    with pytest.raises(ValueError, match=r"attn_mask: not supported while q's users are split"):
        call(tq, tk, tk, table, cur_pos_tensor=pos, attn_mask=tq)


def test_published_per_chip_point_on_a_galaxy_chip(galaxy):
    """The only published per-shape sdpa_decode timing is a Galaxy chip's (Llama-3.1-70B decode, 8 users, 8 q / 1 kv
    heads, position 127: 9.07-10.20 us, timing_calibration's [galaxy] point): upstream's kernels on one chip of the
    emulated Galaxy reproduce it within the calibration's tolerance (MODELLED)."""
    from ttflashdecode.upstream import calibration as tc

    point = next(p for p in tc.OP_POINTS if p.key == "sdpa_llama70b_galaxy")
    chip = galaxy.get_devices()[galaxy.get_num_devices() - 1]  # the chip at mesh coordinate (7, 3)
    modelled = tc.llama70b_galaxy_us(chip)
    assert abs(point.error(modelled)) <= point.tolerance, (
        f"modelled {modelled:.3f} us vs published {point.published_text()} us on a Galaxy chip"
    )
