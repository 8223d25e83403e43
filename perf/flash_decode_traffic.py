"""FlashDecode traffic on the emulator, and the DRAM-bound time it implies on Wormhole (a MODEL, not a timing).

    .venv/bin/python perf/flash_decode_traffic.py [--seed 0]

Runs the real op (the same ProgramDescriptor a card would get) on the host emulator for decode shapes of
Llama-3.1-8B and -70B, and prints from the emulator's counters:
  - K/V bytes read vs the bytes of the K/V tiles that hold live positions (<= cur_pos): 1.00 = read exactly once;
  - the busiest core's DRAM bytes (the split across cores) and the partials' NoC bytes (the reduction tree);
  - a bandwidth-bound time: max(all DRAM bytes / 267 GB/s, busiest core's bytes / 32 GB/s). 267 GB/s is the best
    N150 DRAM figure in ../shared/WORMHOLE.md; 32 GB/s is one core's NoC port (32 B/cycle at 1 GHz). Compute,
    NoC contention and latency are not modelled, so real runs are slower (upstream FlashDecode reaches ~180 GB/s).
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass

import harness
import torch

from ttflashdecode import golden
from ttflashdecode.config import ProgramConfig

DRAM_BYTES_PER_S = 267e9  # N150 best observed (WORMHOLE.md)
CORE_NOC_BYTES_PER_S = 32e9  # 32 B/cycle at 1 GHz per NoC port


@dataclass(frozen=True)
class Case:
    name: str
    batch: int
    n_q_heads: int
    n_kv_heads: int
    kv_len: int
    max_cores_per_head_batch: int
    head_dim: int = 128
    kv_dtype: str = "bfloat8_b"


CASES = [
    Case("Llama-3.1-8B N150, b=8", 8, 32, 8, 4096, 16),
    Case("Llama-3.1-8B N150, b=1", 1, 32, 8, 8192, 16),
    Case("Llama-3.1-8B T3K chip, b=1", 1, 4, 1, 8192, 4),
    Case("Llama-3.1-8B T3K chip, b=1", 1, 4, 1, 8192, 16),
    Case("Llama-3.1-8B T3K chip, b=1", 1, 4, 1, 8192, 64),
    Case("Llama-3.1-70B T3K chip, b=32", 32, 8, 1, 2048, 16),
    Case("head_dim 2048 (split-D), b=1", 1, 8, 1, 4096, 16, head_dim=2048),
]


def run(dev, case: Case, seed: int):
    # Inputs depend on the shape only, so rows that differ in the split alone see the same cur_pos.
    rng = random.Random(f"{seed}/{case.batch}/{case.n_q_heads}/{case.n_kv_heads}/{case.kv_len}/{case.head_dim}")
    gen = torch.Generator().manual_seed(rng.randrange(1 << 30))
    q = torch.randn(1, case.batch, case.n_q_heads, case.head_dim, generator=gen)
    k = torch.randn(case.batch, case.n_kv_heads, case.kv_len, case.head_dim, generator=gen)
    v = torch.randn(case.batch, case.n_kv_heads, case.kv_len, case.head_dim, generator=gen)
    cur_pos = [rng.randrange(case.kv_len // 2, case.kv_len) for _ in range(case.batch)]
    tt_q, tt_k, tt_v = harness.tile(dev, q), harness.tile(dev, k, case.kv_dtype), harness.tile(dev, v, case.kv_dtype)
    config = ProgramConfig(
        compute_with_storage_grid_size=(8, 8), max_cores_per_head_batch=case.max_cores_per_head_batch
    )
    call = harness.decode(tt_q, tt_k, tt_v, cur_pos=cur_pos, program_config=config)
    tt_out, run, wall = call.output, call.run, call.wall_s
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, case.kv_dtype),
        golden.quantize_like_device(v, case.kv_dtype),
        cur_pos=cur_pos,
    )
    pcc = golden.pcc(dev.to_torch(tt_out).float(), expected)

    stats = run.stats
    tiles_per_row = case.head_dim // 32
    live = (
        sum((p + 32) // 32 for p in cur_pos)
        * case.n_kv_heads
        * tiles_per_row
        * (tt_k.buffer_page_size() + tt_v.buffer_page_size())
    )
    kv_read = stats.bytes_read_from(tt_k) + stats.bytes_read_from(tt_v)
    per_core_dram: dict[str, int] = {}
    partial_noc = 0
    for (src, dst), n in stats.noc_bytes.items():
        if src.startswith("dram"):
            per_core_dram[dst] = per_core_dram.get(dst, 0) + n
        elif not dst.startswith("dram"):
            partial_noc += n
    busiest = max(per_core_dram.values())
    model_s = max(stats.dram_read_bytes / DRAM_BYTES_PER_S, busiest / CORE_NOC_BYTES_PER_S)
    return dict(
        case=case.name,
        plan=run.plan,
        kv_read=kv_read,
        live=live,
        busiest=busiest,
        partial_noc=partial_noc,
        model_us=model_s * 1e6,
        gbs=stats.dram_read_bytes / model_s / 1e9,
        pcc=pcc,
        wall=wall,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dev = harness.open_device()
    rows = []
    try:
        for case in CASES:
            rows.append(run(dev, case, args.seed))
    finally:
        dev.close()

    header = (
        f"{'case':30} {'heads q/kv':>10} {'kv_len':>6} {'cores/grp':>9} {'rounds':>6} {'k_chunk':>7} "
        f"{'K/V blk':>7} {'K/V read MB':>11} {'read/live':>9} {'busiest core MB':>15} {'partials NoC KB':>15} "
        f"{'model us':>8} {'model GB/s':>10} {'PCC':>8} {'emu s':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        p = r["plan"]
        s = p.shapes
        print(
            f"{r['case']:30} {f'{s.n_q_heads}/{s.n_kv_heads}':>10} {s.kv_len:>6} {p.num_cores_per_head:>9} "
            f"{p.rounds:>6} {p.k_chunk_size:>7} {f'{p.k_head_block}/{p.v_head_block}':>7} "
            f"{r['kv_read'] / 1e6:>11.2f} {r['kv_read'] / r['live']:>9.3f} "
            f"{r['busiest'] / 1e6:>15.3f} {r['partial_noc'] / 1e3:>15.1f} {r['model_us']:>8.1f} "
            f"{r['gbs']:>10.1f} {r['pcc']:>8.5f} {r['wall']:>6.1f}"
        )
    print("\nread/live: K/V bytes read / bytes of K/V tiles holding positions <= cur_pos (1.000 = each read once).")
    print("K/V blk: head-dim tiles per K block / V column block (the whole head unless L1 needs split-D).")
    print("model: bandwidth bound only (see the module docstring); emu s: emulator wall time, not device time.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
