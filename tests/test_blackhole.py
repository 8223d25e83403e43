"""The op on an emulated Blackhole card (P150, P100; a P300 mesh): the chip facts the emulator models, and golden
cases on the P150's 11x10 grid (ttemu/arch.py: Blackhole as shipped since firmware v19.5.0): one case of every
feature tests/test_features.py covers on the N150 (the same DecodeCase definitions), the cache ops against the host
models of their N150 tests, upstream's sdpa_decode, and a P300 mesh. Blackhole programs are timed with Blackhole's
constants (docs/BLACKHOLE.md section 3); the golden cases check that a P150 run reports a modelled duration, and
ttemu/tests/test_timing_blackhole.py checks what it is."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import test_cache_ops_fill
import test_features as features
import test_fused_update_decode
import test_update_cache
import ttemu
from decode_harness import (
    DecodeCase,
    check_close,
    generator,
    run_on_emulator,
    seed_for,
)
from ttemu.errors import EmulatorError
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.ops.decode import api as op_module

P150_GRID = (11, 10)


def golden_bf8(q, k, v, positions):
    """The golden decode over the values the device stores: Q as bfloat16, K and V as bfloat8_b."""
    return golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, "bfloat8_b"),
        golden.quantize_like_device(v, "bfloat8_b"),
        cur_pos=positions,
    )


def test_p150_and_p100_facts():
    ttnn = import_ttnn()
    with ttemu.open_device(board="p150") as dev:
        assert dev.arch() == ttnn.Arch.BLACKHOLE
        g = dev.compute_with_storage_grid_size()
        assert (g.x, g.y) == P150_GRID
        assert dev.l1_size_per_core() == 1536 * 1024
        assert len(dev.banks) == 8 and {b.noc_x for b in dev.banks} == {0, 9}
        # Translated worker x skips the die's non-Tensix columns 8 and 9 (UMD's Blackhole coordinate manager).
        xs = [dev.worker_core_from_logical_core(ttnn.CoreCoord(x, 0)).x for x in range(P150_GRID[0])]
        assert xs == [1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13]
        assert dev.worker_core_from_logical_core(ttnn.CoreCoord(0, 9)).y == 11
        t = dev.from_torch(torch.zeros(1, 1, 1, 8, dtype=torch.int32), layout=ttnn.ROW_MAJOR_LAYOUT)
        assert t.buffer_aligned_page_size() == 64  # 32 B of data, DRAM alignment 64 B on Blackhole
    with ttemu.open_device(board="p100") as dev:
        assert dev.compute_with_storage_grid_size().x == 11 and len(dev.banks) == 7


def test_blackhole_dispatch_axis_refused():
    with pytest.raises(EmulatorError, match="dispatch_core_axis='row'.*'col'"):
        ttemu.open_device(board="p150", dispatch_core_axis="row")


P150_CASES = [
    # paged bfloat8_b GQA over the whole grid (multicasts and merges cross the gap between columns 7 and 10)
    DecodeCase(4, 8, 2, 64, 1024, (1023, 500, 64, 0), "bfloat8_b", block_size=64, grid=P150_GRID),
    # MLA: V is the first 512 columns of K's 576
    DecodeCase(
        1,
        8,
        1,
        576,
        256,
        (255,),
        "bfloat8_b",
        k_chunk_size=32,
        max_cores_per_head_batch=4,
        v_head_dim=512,
        grid=P150_GRID,
    ),
    # two query tokens per user, attention sinks
    DecodeCase(2, 8, 1, 64, 512, (300, 511), "bfloat16", q_len=2, attention_sink=True, grid=P150_GRID),
    # a non-causal call with a user mask
    DecodeCase(2, 8, 2, 64, 256, None, "bfloat8_b", mask_heads=1, grid=P150_GRID),
]


@pytest.mark.parametrize("case", P150_CASES, ids=str)
def test_p150_golden(p150, case):
    outcome = run_on_emulator(p150, case)
    st = outcome.stats
    assert st.timing is not None and st.timing.ok and st.duration_ns > 0, st.timing  # modelled on Blackhole


def test_p300_mesh_golden():
    """A P300 (two P150 chips, MeshShape (1, 2)) with Llama-3.1-8B's heads split over its chips (32 q / 8 kv heads,
    head_dim 128, bfloat8_b cache), checked against the golden."""
    ttnn = import_ttnn()
    nq, nkv, d, kv_len, positions = 32, 8, 128, 512, [511, 300]
    seed = seed_for("p300-llama8b")
    gen = generator(seed)
    q = torch.randn(1, 2, nq, d, generator=gen)
    k = torch.randn(2, nkv, kv_len, d, generator=gen)
    v = torch.randn(2, nkv, kv_len, d, generator=gen)
    with ttemu.open_mesh_device(board="p300") as mesh:
        assert mesh.get_num_devices() == 2 and mesh.arch() == ttnn.Arch.BLACKHOLE
        g = mesh.compute_with_storage_grid_size()
        assert (g.x, g.y) == P150_GRID

        def on_mesh(x, dtype, dim):
            return mesh.from_torch(
                x, dtype=dtype, layout=ttnn.TILE_LAYOUT, mesh_mapper=ttemu.ShardTensorToMesh(mesh, dim=dim)
            )

        out = op_module.scaled_dot_product_attention_decode(
            on_mesh(q, ttnn.bfloat16, 2),
            on_mesh(k, ttnn.bfloat8_b, 1),
            on_mesh(v, ttnn.bfloat8_b, 1),
            cur_pos=positions,
        )
        got = mesh.to_torch(out, mesh_composer=ttemu.ConcatMeshToTensor(mesh, dim=2)).float()
    expected = golden_bf8(q, k, v, positions)
    check_close(got, expected, "bfloat8_b", seed, "Llama-3.1-8B over a P300's 2 chips")


def test_upstream_sdpa_decode_on_p150(p150):
    """The baseline: the wheel's sdpa_decode kernels (their Blackhole build: ARCH_BLACKHOLE data movement) on the
    P150's grid, paged bfloat8_b GQA, checked against the golden."""
    ttnn = import_ttnn()
    from ttflashdecode import upstream  # noqa: PLC0415

    seed = seed_for("p150-upstream-paged")
    gen = generator(seed)
    b, nq, nkv, d, block, blocks = 4, 8, 2, 64, 64, 8
    positions = [511, 300, 64, 0]
    q = torch.randn(1, b, nq, d, generator=gen)
    k = torch.randn(b, nkv, block * blocks, d, generator=gen)
    v = torch.randn(b, nkv, block * blocks, d, generator=gen)
    perm = torch.randperm(b * blocks, generator=gen)
    page_table = perm.reshape(b, blocks).to(torch.int32)

    def paged(x):  # [b, nkv, S, d] -> the physical blocks [b * blocks, nkv, block, d] the page table points into
        out = torch.empty(b * blocks, nkv, block, d)
        for u in range(b):
            for j in range(blocks):
                out[page_table[u, j]] = x[u, :, j * block : (j + 1) * block]
        return out

    def tiles(x, dtype):
        return p150.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)

    out = upstream.paged_scaled_dot_product_attention_decode(
        tiles(q, ttnn.bfloat16),
        tiles(paged(k), ttnn.bfloat8_b),
        tiles(paged(v), ttnn.bfloat8_b),
        p150.from_torch(page_table, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT),
        cur_pos=positions,
    )
    got = p150.to_torch(out).float()
    expected = golden_bf8(q, k, v, positions)
    check_close(got, expected, "bfloat8_b", seed, "upstream sdpa_decode on a P150")


def test_p100_golden():
    """A P100: the same grid with 7 DRAM banks (a page-to-bank map that is not a power of two)."""
    with ttemu.open_device(board="p100") as dev:
        dev.default_hang_ms = max(dev.default_hang_ms, 2000)
        run_on_emulator(
            dev, DecodeCase(4, 8, 2, 64, 1024, (1023, 500, 64, 0), "bfloat8_b", block_size=64, grid=P150_GRID)
        )


# ---- every feature's golden case on the P150 -----------------------------------------------------------------------


def on_p150(case: DecodeCase) -> DecodeCase:
    """``case`` on the P150's whole 11x10 grid when it asked for the N150's whole 8x8 one (a smaller grid is kept: it
    is what the case is about); its seed follows from the new case, so the P150 draws inputs of its own."""
    return dataclasses.replace(case, grid=P150_GRID) if case.grid == (8, 8) else case


# One representative of each feature test in tests/test_features.py (the N150's), the same DecodeCase run on the P150
# against the golden at the same thresholds (decode_harness.run_on_emulator: poisoned output, seeded inputs).
FEATURE_CASES = {
    "paged": features.paged_case(32),
    "attn_mask": features.attn_mask_case(8, "bfloat8_b"),
    "non_causal": features.NON_CAUSAL_CASE,
    "sliding_window": features.sliding_window_case(129),
    "attention_sink": features.attention_sink_case(None, False, None),
    "attention_sink_upstream_form": features.attention_sink_case(200, True, None),
    "multi_token": features.multi_token_case(5),
    "multi_token_non_causal": features.multi_token_non_causal_case(1),
    "share_cache": features.SHARE_CACHE_CASE,
    "large_head_dim": features.large_head_dim_case(1024, None, "bfloat16"),
    "head_dim_tiling": features.head_dim_tiling_case(2, True),
    "fp32_dest_acc": features.FP32_DEST_CASE,
    "l1_sharded_output": features.L1_SHARDED_OUTPUT_CASE,
    "float32_output": features.FLOAT32_OUTPUT_CASE,
    "bfloat8_b_output": features.bfloat8_b_output_case(False),
    "paged_window_sink": features.PAGED_WINDOW_SINK_CASE,
    "paged_multi_token": features.PAGED_MULTI_TOKEN_CASE,
    "bfloat4_b_kv": features.BFLOAT4_CASE,
}


@pytest.mark.parametrize("feature", list(FEATURE_CASES))
def test_p150_feature_golden(p150, feature):
    case = on_p150(FEATURE_CASES[feature])
    outcome = run_on_emulator(p150, case)
    if feature == "float32_output":
        features.check_float32_output(outcome, case)
    elif feature == "bfloat8_b_output":
        features.check_bfloat8_b_output(p150, outcome, case.fp32_dest_acc_en)


# ---- the cache ops on the P150: the N150 tests' bodies, against the same host models --------------------------------


def test_p150_paged_update_cache_bfloat8_b(p150):
    test_update_cache.test_rows_written_over_steps(p150, "bfloat8_b", True)


def test_p150_paged_fused_update_cache_bfloat8_b(p150):
    test_update_cache.test_fused_k_and_v_update(p150, True)


def test_p150_paged_fill_cache(p150):
    test_cache_ops_fill.test_paged_fill_cache_through_the_page_table(p150, "bfloat8_b")


def test_p150_paged_update_cache_and_decode(p150):
    test_fused_update_decode.test_attention_reads_the_new_rows(p150, "bfloat8_b", True)
