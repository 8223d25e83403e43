"""Decode attention over emulated meshes of Wormhole chips (N300, T3K), against the golden model.

Heads are sharded over the chips (q on dim 2, K/V on dim 1); every chip runs the program for its shard, concurrently.
Inputs are seeded (decode_harness.seed_for: TTFD_SEED replays), outputs are poisoned with NaN and passed in as
``output_tensor``, and each chip's DRAM counters must show exactly its own heads' live K/V tiles read once.
"""

from __future__ import annotations

import pytest
import torch

import ttemu
from decode_harness import check_close, generator, seed_for, tag
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import cache_stats, golden
from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.decode import api as op_module
from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper

ttnn = import_ttnn()
TILE = dict(layout=ttnn.TILE_LAYOUT)
ROW_MAJOR_INT = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


def shard(mesh, dim):
    return ttemu.ShardTensorToMesh(mesh, dim=dim)


def concat(mesh, dim):
    return ttemu.ConcatMeshToTensor(mesh, dim=dim)


def live_kv_bytes(positions, n_kv_heads: int, head_dim: int, page_bytes: int) -> int:
    """Bytes of the K (or V) tiles holding positions <= cur_pos of every user: what a read-once kernel reads."""
    return sum((p + 32) // 32 for p in positions if p >= 0) * n_kv_heads * (head_dim // 32) * page_bytes


def poisoned_output(mesh, q_len, batch, n_q_heads, v_head_dim):
    poison = torch.full((q_len, batch, n_q_heads, v_head_dim), float("nan"))
    return mesh.from_torch(poison, dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 2), **TILE)


# ---- the mesh itself ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "board, mesh_shape, expected",
    [
        ("n300", None, (1, 2)),
        ("t3k", None, (2, 4)),
        ("t3k", (1, 8), (1, 8)),
        ("t3k", (1, 4), (1, 4)),
        ("n300", (1, 1), (1, 1)),
    ],
)
def test_mesh_shapes_and_surface(board, mesh_shape, expected):
    """ttnn's default shapes (the wheel's n300 / t3k mesh graph descriptors), and the MeshDevice queries."""
    with ttemu.open_mesh_device(board=board, mesh_shape=mesh_shape) as mesh:
        assert tuple(mesh.shape) == expected and isinstance(mesh.shape, ttnn.MeshShape)
        chips = expected[0] * expected[1]
        assert mesh.get_num_devices() == chips and len(mesh.get_devices()) == chips
        assert len({id(d) for d in mesh.get_devices()}) == chips  # a chip each, with its own DRAM and L1
        grid = mesh.compute_with_storage_grid_size()
        assert (grid.x, grid.y) == (8, 7)  # an N300 card's chip
        assert [d.mesh_coordinate for d in mesh.get_devices()] == [divmod(i, expected[1]) for i in range(chips)]


def test_mesh_shape_errors():
    with pytest.raises(ValueError, match=r"mesh_shape=\(3, 3\).*at most the t3k's 8 chips"):
        ttemu.open_mesh_device(board="t3k", mesh_shape=(3, 3))
    with pytest.raises(ValueError, match=r"board='n150'.*expected one of n300, t3k"):
        ttemu.open_mesh_device(board="n150")


@pytest.mark.parametrize("board", ["n300", "t3k"])
def test_mapper_composer_round_trip(board):
    """Shard on every dim and join back, bit for bit (bfloat16, int32 row-major) and as the device stores it
    (bfloat8_b); replicate; the topology ttnn would report; each chip holds its own slice."""
    seed = seed_for(f"mesh-round-trip-{board}")
    gen = generator(seed)
    with ttemu.open_mesh_device(board=board) as mesh:
        n = mesh.get_num_devices()
        x = torch.randn(n, 2 * n, 8 * n, 4 * n, generator=gen).to(torch.bfloat16)  # tiles padded per chip
        for dim in range(4):
            t = mesh.from_torch(x, dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, dim), **TILE)
            (placement,) = t.tensor_topology().placements()
            assert isinstance(placement, ttnn.PlacementShard) and placement.dim == dim, f"{tag(seed)} dim {dim}"
            assert list(t.shape) == [s // n if d == dim else s for d, s in enumerate(x.shape)]
            for i, piece in enumerate(torch.chunk(x, n, dim=dim)):
                assert torch.equal(mesh.get_devices()[i].to_torch(t.shards[i]), piece), f"{tag(seed)} chip {i}"
            assert torch.equal(mesh.to_torch(t, mesh_composer=concat(mesh, dim)), x), f"{tag(seed)} dim {dim}"
        bfp8 = mesh.from_torch(x.float(), dtype=ttnn.bfloat8_b, mesh_mapper=shard(mesh, 1), **TILE)
        stored = torch.cat([golden.quantize_like_device(p, "bfloat8_b") for p in torch.chunk(x.float(), n, dim=1)], 1)
        assert torch.equal(mesh.to_torch(bfp8, mesh_composer=concat(mesh, 1)), stored), tag(seed)
        ints = torch.randint(-1000, 1000, (4 * n, 7), generator=gen, dtype=torch.int32)
        t = mesh.from_torch(ints, mesh_mapper=shard(mesh, 0), **ROW_MAJOR_INT)
        assert torch.equal(mesh.to_torch(t, mesh_composer=concat(mesh, 0)), ints), tag(seed)
        rep = mesh.from_torch(ints, mesh_mapper=ttemu.ReplicateTensorToMesh(mesh), **ROW_MAJOR_INT)
        assert isinstance(rep.tensor_topology().placements()[0], ttnn.PlacementReplicate)
        assert all(torch.equal(s, ints) for s in mesh.shards_to_torch(rep)), tag(seed)
        assert torch.equal(mesh.to_torch(rep, mesh_composer=concat(mesh, 0)), ints.repeat(n, 1)), tag(seed)
        with pytest.raises(ValueError, match="mesh_composer=None: the tensor spans"):
            mesh.to_torch(rep)
        odd = torch.zeros(1, n + 1, 32, 32)
        with pytest.raises(
            ValueError, match=rf"dim 1 of shape \[1, {n + 1}, 32, 32\] has size {n + 1}.*multiple of {n}"
        ):
            mesh.from_torch(odd, dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 1), **TILE)


# ---- Llama-3.1-8B at 1/2/4/8-way head splits --------------------------------------------------------------------

MESHES = {1: ("n300", (1, 1)), 2: ("n300", None), 4: ("t3k", (1, 4)), 8: ("t3k", None)}
LLAMA_8B = dict(n_q_heads=32, n_kv_heads=8, head_dim=128)


@pytest.mark.parametrize(
    "split, positions, device_positions",
    [(1, (511, 300), False), (2, (400, -1), True), (4, (511, 5), False), (8, (256, 500), True)],
)
def test_llama_3_1_8b_head_splits(split, positions, device_positions):
    """Llama-3.1-8B (32 q / 8 kv heads, head_dim 128, bfloat8_b cache) with its heads over 1/2/4/8 chips."""
    board, mesh_shape = MESHES[split]
    nq, nkv, d = LLAMA_8B["n_q_heads"], LLAMA_8B["n_kv_heads"], LLAMA_8B["head_dim"]
    batch, kv_len = len(positions), 512
    seed = seed_for(f"mesh-llama8b-{split}-{positions}-{device_positions}")
    gen = generator(seed)
    q = torch.randn(1, batch, nq, d, generator=gen)
    k = torch.randn(batch, nkv, kv_len, d, generator=gen)
    v = torch.randn(batch, nkv, kv_len, d, generator=gen)
    with ttemu.open_mesh_device(board=board, mesh_shape=mesh_shape) as mesh:
        assert mesh.get_num_devices() == split
        tq = mesh.from_torch(q, dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 2), **TILE)
        tk = mesh.from_torch(k, dtype=ttnn.bfloat8_b, mesh_mapper=shard(mesh, 1), **TILE)
        tv = mesh.from_torch(v, dtype=ttnn.bfloat8_b, mesh_mapper=shard(mesh, 1), **TILE)
        where = dict(cur_pos=list(positions))
        if device_positions:  # replicated: every chip's kernels read the same positions from their own DRAM
            where = dict(cur_pos_tensor=mesh.from_torch(torch.tensor(positions, dtype=torch.int32), **ROW_MAJOR_INT))
        out_tensor = poisoned_output(mesh, 1, batch, nq, d)
        before = cache_stats()
        tt_out, run = op_module.scaled_dot_product_attention_decode(
            tq, tk, tv, output_tensor=out_tensor, **where, return_stats=True
        )
        after = cache_stats()
        out = mesh.to_torch(tt_out, mesh_composer=concat(mesh, 2)).float()
        expected = golden.sdpa_decode(
            golden.quantize_like_device(q, "bfloat16"),
            golden.quantize_like_device(k, "bfloat8_b"),
            golden.quantize_like_device(v, "bfloat8_b"),
            cur_pos=list(positions),
        )
        check_close(out, expected, "bfloat8_b", seed, f"Llama-3.1-8B over {split} chips")
        for b, p in enumerate(positions):
            if p == -1:
                assert torch.count_nonzero(out[:, b]) == 0, f"{tag(seed)} skipped user {b} must get zero rows"
        # One plan (one chip's share: nq/split q, nkv/split kv heads) and one descriptor for all chips (lock-step
        # allocation gives every chip the same addresses).
        assert (run.plan.shapes.n_q_heads, run.plan.shapes.n_kv_heads) == (nq // split, nkv // split)
        assert after["plans"] - before["plans"] == 1 and after["programs"] - before["programs"] == 1, tag(seed)
        # Each chip read its own heads' live K and V tiles once, nothing of the others'.
        live = live_kv_bytes(positions, nkv // split, d, tk.buffer_page_size())
        for i, chip in enumerate(run.stats.chips):
            got = (chip.bytes_read_from(tk.shards[i]), chip.bytes_read_from(tv.shards[i]))
            assert got == (live, live), f"{tag(seed)} chip {i} read K/V {got} bytes, expected {live} each"


def test_chips_at_different_addresses_get_their_own_descriptors():
    """A tensor made on one chip alone shifts that chip's later allocations: the op then builds a descriptor per
    address set (a MeshProgramDescriptor with a range per chip) and every chip still computes its own heads
    (Llama-3.1-8B over an N300, as in the 2-way case above)."""
    seed = seed_for("mesh-different-addresses")
    gen = generator(seed)
    nq, nkv, d, kv_len, positions = 32, 8, 128, 512, [511, 77]
    q = torch.randn(1, 2, nq, d, generator=gen)
    k = torch.randn(2, nkv, kv_len, d, generator=gen)
    v = torch.randn(2, nkv, kv_len, d, generator=gen)
    with ttemu.open_mesh_device(board="n300") as mesh:
        spacer = mesh.get_devices()[0].allocate((1, 1, 32, 32), ttnn.bfloat16)  # chip 0 only
        tq = mesh.from_torch(q, dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 2), **TILE)
        tk = mesh.from_torch(k, dtype=ttnn.bfloat8_b, mesh_mapper=shard(mesh, 1), **TILE)
        tv = mesh.from_torch(v, dtype=ttnn.bfloat8_b, mesh_mapper=shard(mesh, 1), **TILE)
        assert tk.shards[0].buffer_address() != tk.shards[1].buffer_address()
        pos = mesh.from_torch(torch.tensor(positions, dtype=torch.int32), **ROW_MAJOR_INT)
        before = cache_stats()
        tt_out = op_module.scaled_dot_product_attention_decode(
            tq, tk, tv, cur_pos_tensor=pos, output_tensor=poisoned_output(mesh, 1, 2, nq, d)
        )
        assert cache_stats()["programs"] - before["programs"] == 2, tag(seed)
        out = mesh.to_torch(tt_out, mesh_composer=concat(mesh, 2)).float()
        expected = golden.sdpa_decode(
            golden.quantize_like_device(q, "bfloat16"),
            golden.quantize_like_device(k, "bfloat8_b"),
            golden.quantize_like_device(v, "bfloat8_b"),
            cur_pos=positions,
        )
        check_close(out, expected, "bfloat8_b", seed, "chips at different addresses")
        del spacer


# ---- Llama-3.1-70B on T3K: 8 q / 1 kv head per chip, batch 32, paged, bfloat8_b ---------------------------------


def test_llama_3_1_70b_t3k_paged_batch32_per_chip_page_tables():
    """Llama-3.1-70B's decode on a T3K: 64 q / 8 kv heads over 8 chips (8 q / 1 kv head each), 32 users, a paged
    bfloat8_b cache whose blocks each chip lays out differently (per-chip page tables, sharded on dim 0 of a stacked
    [8 * 32, blocks] table), positions as a replicated device tensor (one user at -1), planned once with
    FlashDecodeWrapper and run on the mesh."""
    seed = seed_for("mesh-llama70b-t3k")
    gen = generator(seed)
    nq, nkv, d, batch, block, blocks_per_user = 64, 8, 128, 32, 32, 4
    kv_len = block * blocks_per_user
    num_blocks = batch * blocks_per_user + 3
    positions = torch.randint(0, kv_len, (batch,), generator=gen)
    positions[3] = -1
    positions[0], positions[1] = kv_len - 1, 0
    q = torch.randn(1, batch, nq, d, generator=gen)
    k = torch.randn(num_blocks, nkv, block, d, generator=gen)
    v = torch.randn(num_blocks, nkv, block, d, generator=gen)
    with ttemu.open_mesh_device(board="t3k") as mesh:
        n = mesh.get_num_devices()
        tables = [
            torch.randperm(num_blocks, generator=gen)[: batch * blocks_per_user]
            .reshape(batch, blocks_per_user)
            .to(torch.int32)
            for _ in range(n)
        ]
        tq = mesh.from_torch(q, dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 2), **TILE)
        tk = mesh.from_torch(k, dtype=ttnn.bfloat8_b, mesh_mapper=shard(mesh, 1), **TILE)
        tv = mesh.from_torch(v, dtype=ttnn.bfloat8_b, mesh_mapper=shard(mesh, 1), **TILE)
        table = mesh.from_torch(torch.cat(tables), mesh_mapper=shard(mesh, 0), **ROW_MAJOR_INT)
        pos = mesh.from_torch(positions.to(torch.int32), **ROW_MAJOR_INT)  # replicated (no mapper)
        wrapper = FlashDecodeWrapper(mesh, program_config=ProgramConfig(compute_with_storage_grid_size=(8, 7)))
        plan = wrapper.plan(
            batch=batch,
            n_q_heads=nq,
            n_kv_heads=nkv,
            head_dim=d,
            kv_dtype=ttnn.bfloat8_b,
            block_size=block,
            max_blocks_per_user=blocks_per_user,
        )
        assert (plan.shapes.n_q_heads, plan.shapes.n_kv_heads) == (8, 1)
        tt_out, run = wrapper.run(
            tq,
            tk,
            tv,
            cur_pos_tensor=pos,
            page_table_tensor=table,
            return_stats=True,
            output_tensor=poisoned_output(mesh, 1, batch, nq, d),
            validate_device_tensors=True,
        )
        out = mesh.to_torch(tt_out, mesh_composer=concat(mesh, 2)).float()
        qq, kq, vq = (
            golden.quantize_like_device(q, "bfloat16"),
            golden.quantize_like_device(k, "bfloat8_b"),
            golden.quantize_like_device(v, "bfloat8_b"),
        )
        per = nq // n
        expected = torch.cat(
            [
                golden.sdpa_decode(
                    qq[:, :, c * per : (c + 1) * per],
                    kq[:, c : c + 1],
                    vq[:, c : c + 1],
                    cur_pos=positions.tolist(),
                    page_table=tables[c],
                )
                for c in range(n)
            ],
            dim=2,
        )
        check_close(out, expected, "bfloat8_b", seed, "Llama-3.1-70B T3K paged batch 32")
        assert torch.count_nonzero(out[:, 3]) == 0, f"{tag(seed)} user 3 at -1 must get zero rows"
        live = live_kv_bytes(positions.tolist(), 1, d, tk.buffer_page_size())
        assert [c.bytes_read_from(s) for c, s in zip(run.stats.chips, tk.shards)] == [live] * n, tag(seed)


# ---- MLA: q heads over the chips, the one latent cache replicated ---------------------------------------------


def test_paged_mla_over_n300():
    """DeepSeek-style MLA on an N300: 16 q heads split over the 2 chips, the paged latent cache (one kv head)
    replicated on both, V the first head_dim_v columns of K."""
    seed = seed_for("mesh-mla-n300")
    gen = generator(seed)
    nq, d, dv, batch, block, blocks_per_user = 16, 96, 64, 2, 32, 4
    num_blocks = batch * blocks_per_user + 2
    positions = [127, 40]
    q = torch.randn(1, batch, nq, d, generator=gen)
    kvpe = torch.randn(num_blocks, 1, block, d, generator=gen)
    table = torch.randperm(num_blocks, generator=gen)[: batch * blocks_per_user].reshape(batch, blocks_per_user)
    with ttemu.open_mesh_device(board="n300") as mesh:
        tq = mesh.from_torch(q, dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 2), **TILE)
        tk = mesh.from_torch(kvpe, dtype=ttnn.bfloat8_b, **TILE)  # replicated
        tt_table = mesh.from_torch(table.to(torch.int32), **ROW_MAJOR_INT)
        tt_out = op_module.paged_flash_multi_latent_attention_decode(
            tq, tk, tt_table, head_dim_v=dv, cur_pos=positions, output_tensor=poisoned_output(mesh, 1, batch, nq, dv)
        )
        out = mesh.to_torch(tt_out, mesh_composer=concat(mesh, 2)).float()
        kq = golden.quantize_like_device(kvpe, "bfloat8_b")
        expected = golden.sdpa_decode(
            golden.quantize_like_device(q, "bfloat16"),
            kq,
            kq[..., :dv],
            cur_pos=positions,
            page_table=table.to(torch.int32),
        )
        check_close(out, expected, "bfloat8_b", seed, "paged MLA over an N300")


# ---- errors before anything runs --------------------------------------------------------------------------------


def test_mesh_that_does_not_divide_the_heads():
    """A T3K's 8 chips cannot split 4 kv heads (or 12 q heads): the plan, the call and the mapper say so, naming the
    argument, the values and what was expected, and nothing is planned, built or launched."""
    gen = generator(seed_for("mesh-errors"))
    with ttemu.open_mesh_device(board="t3k") as mesh:
        wrapper = FlashDecodeWrapper(mesh)
        with pytest.raises(
            ValueError,
            match=r"n_kv_heads=4: the mesh \(2, 4\) splits the heads over its 8 chips; "
            r"expected a multiple of 8",
        ):
            wrapper.plan(batch=1, n_q_heads=32, n_kv_heads=4, head_dim=128, kv_len=256)
        with pytest.raises(ValueError, match=r"n_q_heads=12: .*expected a multiple of 8"):
            wrapper.plan(batch=1, n_q_heads=12, n_kv_heads=1, head_dim=128, kv_len=256)
        with pytest.raises(ValueError, match=r"dim 1 of shape \[1, 4, 256, 64\] has size 4, which the mesh's 8 chips"):
            mesh.from_torch(
                torch.randn(1, 4, 256, 64, generator=gen), dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 1), **TILE
            )
        before = cache_stats()
        q12 = mesh.from_torch(torch.randn(1, 1, 12, 64, generator=gen), dtype=ttnn.bfloat16, **TILE)  # replicated
        k = mesh.from_torch(
            torch.randn(1, 8, 256, 64, generator=gen), dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 1), **TILE
        )
        with pytest.raises(
            ValueError,
            match=r"q: replicated on every chip of the mesh \(2, 4\) \(n_q_heads=12, 12 per "
            r"chip\); expected its heads \(dim 2\) sharded over all 8 chips: "
            r"mesh_mapper=ShardTensorToMesh\(mesh, dim=2\), which needs n_q_heads a "
            r"multiple of 8; 12 is not",
        ):
            op_module.scaled_dot_product_attention_decode(q12, k, k, cur_pos=[100])
        q = mesh.from_torch(
            torch.randn(1, 1, 32, 64, generator=gen), dtype=ttnn.bfloat16, mesh_mapper=shard(mesh, 2), **TILE
        )
        k_rep = mesh.from_torch(torch.randn(1, 8, 256, 64, generator=gen), dtype=ttnn.bfloat16, **TILE)
        with pytest.raises(
            ValueError,
            match=r"k: replicated on every chip .*\(n_kv_heads=8, 8 per chip\); expected its "
            r"heads \(dim 1\) sharded over all 8 chips",
        ):
            op_module.scaled_dot_product_attention_decode(q, k_rep, k_rep, cur_pos=[100])
        # a device position one chip holds out of range: validate_device_tensors names the chip
        pos = mesh.from_torch(
            torch.tensor([100] * 7 + [9999], dtype=torch.int32), mesh_mapper=shard(mesh, 0), **ROW_MAJOR_INT
        )  # per chip: [1], chip 7's out of range
        with pytest.raises(ValueError, match=r"cur_pos_tensor\[0\]=9999 .*\(chip 7 of the mesh's 8\)"):
            op_module.scaled_dot_product_attention_decode(q, k, k, cur_pos_tensor=pos, validate_device_tensors=True)
        after = cache_stats()
        assert after["programs"] == before["programs"], "a refused call built a program"


def test_mesh_program_descriptor_of_a_launch():
    """What ttnn.generic_op gets on a card's MeshDevice (and the emulated mesh's generic_op alike): one program over
    the whole mesh when the chips share their addresses, else one range per chip."""
    from ttflashdecode.backend import CARD, Backend

    class CardMesh:  # the two MeshDevice queries the launch reads
        shape = ttnn.MeshShape(2, 4)

        def get_num_devices(self):
            return 8

    backend = Backend(CardMesh(), CARD)
    same = ttnn.ProgramDescriptor()
    ranges = [[tuple(c) for c in r] for r, _ in backend.mesh_program([same] * 8)]
    assert ranges == [[(r, c) for r in range(2) for c in range(4)]]
    per_chip = [ttnn.ProgramDescriptor() for _ in range(8)]
    ranges = sorted(tuple(tuple(c) for c in r) for r, _ in backend.mesh_program(per_chip))
    assert ranges == [((r, c),) for r in range(2) for c in range(4)]
