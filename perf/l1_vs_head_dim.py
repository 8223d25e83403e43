"""L1 per core against head_dim: what split-D (head-dim tiling of K and V) buys, from the planner alone.

    .venv/bin/python perf/l1_vs_head_dim.py

For one (batch, kv head) group (8 q heads on 1 kv head, bfloat16 cache, 8192 positions, up to 16 cores per
group) and each head_dim, prints the plan the op would run with: chunk size, cores per group, head-dim blocks,
the bytes of the K and V buffers, of the O-shaped state (Q, scaled Q, O, output, tree partials), and the total
against the L1 budget; and what the K and V buffers alone would take with whole-head blocks at the same chunk
size. No kernels run: these are the planner's circular buffers, the same ones the program factory allocates.
"""

from __future__ import annotations

import sys

import harness  # noqa: F401  (this tree's ttflashdecode ahead of an installed one)

from ttflashdecode.config import ProgramConfig
from ttflashdecode.plan import L1_BUDGET_BYTES, DecodeShapes, L1OverflowError, circular_buffers, plan

HEAD_DIMS = (128, 256, 512, 1024, 2048, 4096)
KV_BUFFERS = ("k", "v")
O_STATE = ("q", "q_scaled", "o", "out", "scratch", "partial_in", "partial_out")


def row(head_dim: int, fp32: bool) -> str:
    shapes = DecodeShapes(batch=1, n_q_heads=8, n_kv_heads=1, head_dim=head_dim, kv_len=8192)
    label = f"{head_dim:>8} {'fp32' if fp32 else 'bf16':>5}"
    try:
        p = plan(shapes, ProgramConfig((8, 8), max_cores_per_head_batch=16), fp32_dest_acc=fp32)
    except L1OverflowError as e:
        return f"{label}  does not fit: {e.needed:,} B needed ({e.over:,} B over)"
    size = {cb.name: cb.total_bytes for cb in p.cbs}
    kv = sum(size.get(n, 0) for n in KV_BUFFERS)
    o_state = sum(size.get(n, 0) for n in O_STATE)
    whole = circular_buffers(shapes, p.k_chunk_size, p.rounds, fp32_dest_acc=fp32)
    whole_kv = sum(cb.total_bytes for cb in whole if cb.name in KV_BUFFERS)
    blocks = f"{p.k_head_block}/{p.v_head_block} of {shapes.DHt}"
    return (
        f"{label} {p.k_chunk_size:>7} {p.num_cores_per_head:>9} {blocks:>12} {kv / 1024:>10.0f} "
        f"{whole_kv / 1024:>14.0f} {o_state / 1024:>12.0f} {p.l1_bytes / 1024:>9.0f}"
    )


def main() -> int:
    header = (
        f"{'head_dim':>8} {'DST':>5} {'k_chunk':>7} {'cores/grp':>9} {'K/V blocks':>12} {'K+V KiB':>10} "
        f"{'whole-head KiB':>14} {'O-state KiB':>12} {'L1 KiB':>9}"
    )
    print(header)
    print("-" * len(header))
    for fp32 in (False, True):
        for head_dim in HEAD_DIMS:
            print(row(head_dim, fp32))
    print(f"\nL1 budget per core: {L1_BUDGET_BYTES / 1024:.0f} KiB. K/V blocks: head-dim tiles per K block / V column")
    print("block of the head's tiles. whole-head KiB: K+V buffers at the same chunk size without split-D.")
    print("O-state (Q, scaled Q, O, output, tree partials) still grows with head_dim: FFPA keeps it in registers.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
