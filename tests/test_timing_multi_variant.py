"""Several timing variants from one emulator run (docs/TIMING.md, section 3b): ``TTFD_TIMING_VARIANTS`` makes the
runtime replay a run's recorded traces again under each listed variant, on a fresh engine per variant. The recorded
events do not depend on the variant, so each of those results must equal, to the last bit, a separate run made with
``TTFD_TIMING_VARIANT`` set to that variant: duration, trace digest, every core's and RISC's start / end / busy /
wait, DRAM bank occupancy and the busiest links. Checked on ttflashdecode and on upstream's sdpa_decode
(``ttflashdecode.upstream``), timing-only, paged, with the variants that move these programs most (flow control off,
the read queue and DRAM queue shallow, tile and CB API overheads at an end of their ranges). All durations are
MODELLED."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import ttemu
import ttflashdecode
from ttemu import timing
from ttflashdecode import upstream

VARIANTS = [
    "no_flow_control",
    "max_reads_in_flight_low",
    "dram_queue_low",
    "tile_op_overhead_high",
    "cb_api_low",
]
OPS = {"ours": ttflashdecode, "upstream": upstream}
# b2 8q/1kv d128, 4096 positions in 32-position blocks under a shuffled page table, users at different positions,
# 8 cores per user: both ops' reduction trees and enough reads in flight for the flow-control variants to matter.
B, HQ, HKV, D, S, BLOCK, POS = 2, 8, 1, 128, 4096, 32, [4095, 3000]


@pytest.fixture(scope="module")
def device():
    dev = ttemu.open_device("n150", timing_only=True)
    yield dev
    dev.close()


def _call(dev, ttnn, op: str):
    module = OPS[op]
    q = dev.from_torch(
        torch.randn(1, B, HQ, D, generator=torch.Generator().manual_seed(5)),
        dtype=ttnn.bfloat16,
        layout=ttnn.TILE_LAYOUT,
    )
    blocks = B * S // BLOCK
    k, v = (dev.empty((blocks, HKV, BLOCK, D), ttnn.bfloat8_b) for _ in range(2))
    perm = torch.randperm(blocks, generator=torch.Generator().manual_seed(6)).reshape(B, S // BLOCK)
    table = dev.from_torch(perm.to(torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    pos = dev.from_torch(torch.tensor(POS, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
        q_chunk_size=0,
        k_chunk_size=128,
        max_cores_per_head_batch=8,
    )
    out, run = module.paged_scaled_dot_product_attention_decode(
        q, k, v, table, cur_pos_tensor=pos, program_config=config, return_stats=True
    )
    stats = run.stats
    for t in (q, k, v, table, pos, out):
        t.deallocate()
    return stats


@pytest.mark.parametrize("op", sorted(OPS))
def test_each_variant_of_one_run_equals_a_separate_run_under_it(device, ttnn, op):
    # The main replay under a non-nominal variant, nominal among the further ones: the order of replays and which
    # one is "main" must not matter either.
    with timing.variant_env("dram_queue_high"), timing.variants_env(["nominal", *VARIANTS]):
        multi = _call(device, ttnn, op)
    assert multi.timing.variant == "dram_queue_high"
    assert list(multi.durations_ns()) == ["dram_queue_high", "nominal", *VARIANTS]
    separate = {}
    for v in ["nominal", "dram_queue_high", *VARIANTS]:
        with timing.variant_env(v):
            separate[v] = _call(device, ttnn, op).timing
        assert separate[v].variant == v
        got = multi.timing.under(v)
        assert got.ok, (op, v, got.error)
        # Dataclass equality: duration, first start / last end, digest, every core's RISCs, DRAM banks, links.
        assert got == separate[v], (op, v, got.duration_ns, separate[v].duration_ns)
    # The comparison has teeth: these variants change this program's timing statistics (a replay that ignored its
    # variant would report the nominal ones for them).
    nominal = separate["nominal"]
    moved = [v for v in VARIANTS if dataclasses.replace(separate[v], variant="nominal") != nominal]
    print(op, moved, {v: separate[v].duration_ns for v in separate})
    assert separate["tile_op_overhead_high"].duration_ns > nominal.duration_ns
    assert len(moved) >= 3, (op, moved)


def test_all_replays_every_variant_and_an_unknown_name_is_refused(device, ttnn, monkeypatch):
    with timing.variants_env("all"):
        stats = _call(device, ttnn, "ours")
    assert list(stats.durations_ns()) == timing.variant_names()
    assert all(d is not None and d > 0 for d in stats.durations_ns().values())
    with pytest.raises(ValueError, match=r"TTFD_TIMING_VARIANTS names 'fast_silicon', not one of .*nominal"):
        timing.requested_variants("nominal,fast_silicon")
    # The runtime checks too (the variable set without the Python helper).
    monkeypatch.setenv(timing.VARIANTS_ENV, "no_flow_control fast_silicon")
    with pytest.raises(Exception, match=r"TTFD_TIMING_VARIANTS: 'fast_silicon' is not a variant"):
        _call(device, ttnn, "ours")
    with pytest.raises(KeyError, match=r"'no_flow_control' was not replayed in this run"):
        dataclasses.replace(stats.timing, variants={}).under("no_flow_control")
