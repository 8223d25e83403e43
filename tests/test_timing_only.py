"""Timing-only mode (docs/TIMING.md, section 6): a device opened with ``timing_only=True`` skips compute arithmetic
and the bytes of tensors made by ``empty()``, yet every program must report exactly the full run's modelled duration
and the same timing trace (digest and per-core / per-RISC breakdown): the mode may only drop work that cannot change
control flow. Positions, page tables and Q stay real tensors, so kernels that branch on them see the same values.

Each case runs ttflashdecode and upstream's sdpa_decode (``ttflashdecode.upstream``) on a full device with random
K/V and on a timing-only device with undefined K/V, and compares. Every duration is MODELLED.
"""

from __future__ import annotations

import os

import pytest
import torch

import ttemu
import ttflashdecode
from ttflashdecode import upstream


@pytest.fixture(scope="module")
def timing_only_device():
    dev = ttemu.open_device("n150", timing_only=True)
    yield dev
    dev.close()


OPS = {"ours": ttflashdecode, "upstream": upstream}
CASES = {
    # one user over 8 cores: both ops' reduction trees (3 rounds), causal position inside the last chunk
    "tree": dict(batch=1, hq=8, hkv=1, d=64, s=512, paged=False, cores=8, k_chunk=64, pos=[449]),
    # paged, a shuffled page table and per-user positions in a device cur_pos tensor (both read by the readers)
    "paged": dict(batch=2, hq=8, hkv=1, d=128, s=256, paged=True, cores=4, k_chunk=32, pos=[255, 70]),
    # GQA with two kv heads, positions differing per user
    "gqa": dict(batch=2, hq=4, hkv=2, d=64, s=256, paged=False, cores=2, k_chunk=64, pos=[31, 200]),
}


def _run(dev, ttnn, op: str, case: dict, seed: int, timing_only: bool):
    module = OPS[op]
    g = torch.Generator().manual_seed(seed)
    b, hq, hkv, d, s = (case[k] for k in ("batch", "hq", "hkv", "d", "s"))
    q = dev.from_torch(torch.randn(1, b, hq, d, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    block = 32
    kv_shape = (b * s // block, hkv, block, d) if case["paged"] else (b, hkv, s, d)
    if timing_only:
        k, v = (dev.empty(kv_shape, ttnn.bfloat8_b) for _ in range(2))
    else:
        k, v = (dev.from_torch(torch.randn(*kv_shape, generator=g), dtype=ttnn.bfloat8_b) for _ in range(2))
    pos = dev.from_torch(torch.tensor(case["pos"], dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
        q_chunk_size=0,
        k_chunk_size=case["k_chunk"],
        max_cores_per_head_batch=case["cores"],
    )
    if case["paged"]:
        perm = torch.randperm(b * s // block, generator=torch.Generator().manual_seed(seed + 1))
        table = dev.from_torch(
            perm.reshape(b, s // block).to(torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT
        )
        out, run = module.paged_scaled_dot_product_attention_decode(
            q, k, v, table, cur_pos_tensor=pos, program_config=config, return_stats=True
        )
        table.deallocate()
    else:
        out, run = module.scaled_dot_product_attention_decode(
            q, k, v, cur_pos_tensor=pos, program_config=config, return_stats=True
        )
    stats = run.stats
    for t in (q, k, v, pos, out):
        t.deallocate()
    return stats


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("op", sorted(OPS))
def test_timing_only_durations_equal_full_mode(emu_device, timing_only_device, ttnn, op, case):
    seed = int(os.environ.get("TTFD_SEED", 0)) or 1212
    full = _run(emu_device, ttnn, op, CASES[case], seed, timing_only=False)
    fast = _run(timing_only_device, ttnn, op, CASES[case], seed, timing_only=True)
    what = f"{op} {case} [seed {seed}]"
    assert full.timing.ok and fast.timing.ok, what
    assert fast.duration_ns == full.duration_ns, what
    assert fast.timing.trace_digest == full.timing.trace_digest, what
    assert fast.timing.cores == full.timing.cores, what
    # The same traffic was issued and counted, though undefined K/V bytes were not copied.
    assert (fast.dram_read_bytes, fast.dram_write_bytes) == (full.dram_read_bytes, full.dram_write_bytes), what


def test_timing_only_moves_no_bytes_of_undefined_tensors(timing_only_device, ttnn):
    """An empty() KV cache costs no host memory: reading it in a timing-only run commits none of its pages (the
    DRAM image is a sparse memfd, so committed pages show in its block count)."""
    dev = timing_only_device
    fd = dev._fd
    case = dict(CASES["tree"], s=8192, cores=16, pos=[8191])
    before = os.fstat(fd).st_blocks * 512
    stats = _run(dev, ttnn, "ours", case, 7, timing_only=True)
    grown = os.fstat(fd).st_blocks * 512 - before
    kv_bytes = 2 * 8192 * 64 * 1088 // 1024
    assert stats.dram_read_bytes >= kv_bytes
    assert grown < kv_bytes // 8, f"the DRAM image grew by {grown} B for {kv_bytes} B of undefined K/V"


def test_timing_only_needs_the_timing_model(ttnn, monkeypatch):
    monkeypatch.setenv("TTFD_EMU_TIMING", "0")
    with ttemu.open_device("n150", timing_only=True) as dev:
        x = dev.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
        with pytest.raises(ttemu.EmulatorError, match="timing_only=True needs the timing model"):
            ttflashdecode.scaled_dot_product_attention_decode(
                dev.from_torch(torch.ones(1, 1, 8, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT),
                dev.from_torch(torch.ones(1, 1, 64, 64), dtype=ttnn.bfloat8_b),
                dev.from_torch(torch.ones(1, 1, 64, 64), dtype=ttnn.bfloat8_b),
                cur_pos=[3],
            )
        x.deallocate()
