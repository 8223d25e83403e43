"""The same FlashDecode checks on a Wormhole card (N150 / N300 / T3K chip 0), plus card-vs-emulator agreement, and
decode over a mesh of chips (N300, T3K: ``ttnn.open_mesh_device``, heads sharded with ``ttnn.ShardTensorToMesh``, one
``ttnn.MeshProgramDescriptor`` through ``ttnn.generic_op``), the same calls tests/test_mesh.py runs on emulated
meshes.

Every test here is marked ``device`` and skipped without /dev/tenstorrent; they run unchanged on a card. The mesh tests
come first: each opens (and closes) its own mesh, before the single-chip tests open chip 0 for the session.
"""

from __future__ import annotations

import random

import pytest
import torch

from decode_harness import DecodeCase, assert_matches_golden, check_close, generator, run_case, seed_for, tag
from test_flash_decode import MATRIX
from ttflashdecode import golden
from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.decode import api as op_module
from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper

pytestmark = pytest.mark.device


# ---- meshes: N300 (2 chips), T3K (8) ------------------------------------------------------------------------------

MESH_SHAPES = {2: (1, 2), 4: (1, 4), 8: (2, 4)}  # 8: ttnn's default T3K mesh (t3k_mesh_graph_descriptor.textproto)


@pytest.fixture
def tt_mesh(ttnn, request):
    """A ttnn MeshDevice of ``request.param`` chips (skipped when the machine has fewer), closed after the test."""
    chips = request.param
    available = ttnn.get_num_devices()
    if available < chips:
        pytest.skip(f"needs {chips} Wormhole chips, this machine has {available}")
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(*MESH_SHAPES[chips]))
    yield mesh
    ttnn.close_mesh_device(mesh)


def _mesh_tensor(ttnn, mesh, x, dtype, dim=None, layout=None):
    mapper = ttnn.ReplicateTensorToMesh(mesh) if dim is None else ttnn.ShardTensorToMesh(mesh, dim=dim)
    return ttnn.from_torch(
        x,
        dtype=dtype,
        layout=layout or ttnn.TILE_LAYOUT,
        device=mesh,
        memory_config=ttnn.DRAM_MEMORY_CONFIG,
        mesh_mapper=mapper,
    )


@pytest.mark.parametrize("tt_mesh", [2, 4, 8], indirect=True, ids=lambda n: f"{n}chips")
def test_llama_3_1_8b_heads_over_mesh_on_card(ttnn, tt_mesh):
    """Llama-3.1-8B (32 q / 8 kv heads) with its heads split over 2 / 4 / 8 chips; device positions, replicated."""
    chips = tt_mesh.get_num_devices()
    seed = seed_for(f"card-mesh-llama8b-{chips}")
    gen = generator(seed)
    positions = [1023, 300, -1, 17]
    q = torch.randn(1, 4, 32, 128, generator=gen)
    k, v = (torch.randn(4, 8, 1024, 128, generator=gen) for _ in range(2))
    tq = _mesh_tensor(ttnn, tt_mesh, q, ttnn.bfloat16, dim=2)
    tk, tv = (_mesh_tensor(ttnn, tt_mesh, x, ttnn.bfloat8_b, dim=1) for x in (k, v))
    pos = _mesh_tensor(
        ttnn, tt_mesh, torch.tensor(positions, dtype=torch.int32), ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT
    )
    out = _mesh_tensor(ttnn, tt_mesh, torch.full((1, 4, 32, 128), float("nan")), ttnn.bfloat16, dim=2)
    out = op_module.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos_tensor=pos, output_tensor=out)
    got = ttnn.to_torch(out, mesh_composer=ttnn.ConcatMeshToTensor(tt_mesh, dim=2)).float()
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, "bfloat8_b"),
        golden.quantize_like_device(v, "bfloat8_b"),
        cur_pos=positions,
    )
    check_close(got, expected, "bfloat8_b", seed, f"Llama-3.1-8B over {chips} chips")
    assert torch.count_nonzero(got[:, 2]) == 0, f"{tag(seed)} user 2 at -1 must get zero rows"


@pytest.mark.parametrize("tt_mesh", [8], indirect=True, ids=lambda n: f"{n}chips")
def test_llama_3_1_70b_paged_on_t3k(ttnn, tt_mesh):
    """Llama-3.1-70B on a T3K: 8 q / 1 kv head per chip, batch 32, paged bfloat8_b cache, replicated page table and
    positions, planned once with FlashDecodeWrapper."""
    seed = seed_for("card-mesh-llama70b")
    gen = generator(seed)
    batch, block, blocks_per_user = 32, 64, 16
    num_blocks = batch * blocks_per_user
    positions = torch.randint(0, block * blocks_per_user, (batch,), generator=gen)
    positions[5] = -1
    table = torch.randperm(num_blocks, generator=gen).reshape(batch, blocks_per_user).to(torch.int32)
    q = torch.randn(1, batch, 64, 128, generator=gen)
    k, v = (torch.randn(num_blocks, 8, block, 128, generator=gen) for _ in range(2))
    tq = _mesh_tensor(ttnn, tt_mesh, q, ttnn.bfloat16, dim=2)
    tk, tv = (_mesh_tensor(ttnn, tt_mesh, x, ttnn.bfloat8_b, dim=1) for x in (k, v))
    rm = dict(layout=ttnn.ROW_MAJOR_LAYOUT)
    tt_table = _mesh_tensor(ttnn, tt_mesh, table, ttnn.int32, **rm)
    pos = _mesh_tensor(ttnn, tt_mesh, positions.to(torch.int32), ttnn.int32, **rm)
    grid = tt_mesh.compute_with_storage_grid_size()
    wrapper = FlashDecodeWrapper(tt_mesh, program_config=ProgramConfig(compute_with_storage_grid_size=(grid.x, grid.y)))
    wrapper.plan(
        batch=batch,
        n_q_heads=64,
        n_kv_heads=8,
        head_dim=128,
        kv_dtype=ttnn.bfloat8_b,
        block_size=block,
        max_blocks_per_user=blocks_per_user,
    )
    out = wrapper.run(tq, tk, tv, cur_pos_tensor=pos, page_table_tensor=tt_table)
    got = ttnn.to_torch(out, mesh_composer=ttnn.ConcatMeshToTensor(tt_mesh, dim=2)).float()
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, "bfloat8_b"),
        golden.quantize_like_device(v, "bfloat8_b"),
        cur_pos=positions.tolist(),
        page_table=table,
    )
    check_close(got, expected, "bfloat8_b", seed, "Llama-3.1-70B on T3K")


# ---- one chip ---------------------------------------------------------------------------------------------------


def _adapters(ttnn, device):
    def to_device(x, dtype, memory_config=None):
        return ttnn.from_torch(
            x,
            dtype=dtype,
            layout=ttnn.TILE_LAYOUT,
            device=device,
            memory_config=memory_config or ttnn.DRAM_MEMORY_CONFIG,
        )

    return to_device, ttnn.to_torch


@pytest.mark.parametrize("case", MATRIX, ids=str)
def test_matrix_on_card(ttnn, tt_device, case):
    grid = tt_device.compute_with_storage_grid_size()
    if case.grid[0] > grid.x or case.grid[1] > grid.y:
        pytest.skip(f"case grid {case.grid} exceeds this card's {grid.x}x{grid.y}")
    to_device, to_torch = _adapters(ttnn, tt_device)
    assert_matches_golden(run_case(tt_device, case, to_device=to_device, to_torch=to_torch), case)


# The decode features of test_features.py, one representative case each, on a card.
FEATURES = [
    DecodeCase(
        2,
        8,
        2,
        64,
        1024,
        (1000, 333),
        "bfloat8_b",
        k_chunk_size=64,
        max_cores_per_head_batch=4,
        block_size=64,
        sliding_window_size=200,
        attention_sink=True,
    ),
    DecodeCase(3, 16, 4, 128, 1024, (1023, 300, 2), "bfloat8_b", k_chunk_size=128, q_len=3),
    DecodeCase(2, 8, 2, 64, 512, None, "bfloat8_b", k_chunk_size=64, mask_heads=8, mask_dtype="bfloat8_b"),
    DecodeCase(4, 8, 1, 64, 1024, (900, 10, 512, 1023), "bfloat8_b", k_chunk_size=128, share_cache=True),
    DecodeCase(2, 16, 1, 2048, 256, (250, 77), "bfloat8_b", k_chunk_size=64, max_cores_per_head_batch=2, q_len=4),
    DecodeCase(1, 8, 1, 576, 256, (255,), "bfloat8_b", k_chunk_size=32, v_head_dim=512),
    DecodeCase(4, 8, 2, 64, 512, (511, 100, -1, 300), "bfloat8_b", k_chunk_size=64, out_dtype="bfloat8_b"),
    DecodeCase(2, 8, 2, 64, 512, (511, 100), "bfloat16", k_chunk_size=64, fp32_dest_acc_en=True, out_dtype="float32"),
    DecodeCase(4, 8, 2, 64, 512, (511, 100, -1, 300), "bfloat8_b", k_chunk_size=64, q_len=2, out_sharded=True),
]


@pytest.mark.parametrize("case", FEATURES, ids=str)
def test_features_on_card(ttnn, tt_device, case):
    to_device, to_torch = _adapters(ttnn, tt_device)
    assert_matches_golden(run_case(tt_device, case, to_device=to_device, to_torch=to_torch), case)


def test_card_and_emulator_agree(ttnn, tt_device, emu_device):
    """Same inputs, same descriptor: the card's and the emulator's outputs are close (not bit-equal: the
    emulator models SFPU exp/recip to within their documented accuracy, not bit for bit)."""
    # One fresh seed for both runs, so both backends see the same inputs.
    case = DecodeCase(
        4,
        32,
        8,
        128,
        2048,
        (0, 2047, 1000, 64),
        "bfloat8_b",
        k_chunk_size=256,
        max_cores_per_head_batch=2,
        seed=random.randrange(1 << 30),
    )
    to_device, to_torch = _adapters(ttnn, tt_device)
    on_card = run_case(tt_device, case, to_device=to_device, to_torch=to_torch).out
    on_emu = run_case(
        emu_device,
        case,
        to_device=lambda x, dtype: emu_device.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT),
        to_torch=emu_device.to_torch,
    ).out
    assert torch.corrcoef(torch.stack([on_card.flatten(), on_emu.flatten()]))[0, 1] > 0.9995
    assert (on_card - on_emu).abs().max() < 0.05
