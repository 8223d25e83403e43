"""Is one program for a layer's cache update + decode attention worth it? Separate vs fused, modelled.

Per shape (Llama-3.1-8B's attention on one chip: 32 q heads, 8 kv heads, head_dim 128; and Llama-3.1-70B's per chip
of a T3K: 8 q heads, 1 kv head; users at different positions near the end of the cache) and cache dtype, on the
emulator's timing model:

* separate: ``paged_fused_update_cache`` (K and V in one launch) then ``scaled_dot_product_attention_decode``: two
  launches, each its modelled device duration plus the model's op dispatch cost ``kOpDispatchNs``;
* fused: ``update_cache_and_decode``, one launch: its modelled duration plus one ``kOpDispatchNs``.

Both attentions use the planner's fixed rule on the full 8x8 grid (``ProgramConfig((8, 8))``); the fused planner
then runs the update on cores that plan leaves free, or on the grid's last row, which the attention then goes
without (the ``update on`` column). Durations are the timing model's (``stats.duration_ns``, "modelled"), on a
timing-only emulated N150 with caches of undefined contents (``EmuDevice.empty``): nothing here is silicon.

    .venv/bin/python perf/fused_update_attention.py                 # the default shapes (SHAPES)
    .venv/bin/python perf/fused_update_attention.py --batches 1,8 --kv-lens 128,1024 --dtypes bfloat8_b   # a grid

Every shape compiles its own kernels (shapes are compile-time args): the default list takes ~15 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import time

import torch

import ttemu
import ttflashdecode
from ttemu import timing
from ttemu.ttnn_env import import_ttnn
from ttflashdecode.config import ProgramConfig

HEAD_DIM = 128
LLAMA_8B, LLAMA_70B_T3K = (32, 8), (8, 1)  # (q heads, kv heads) on one chip
# (batch, kv_len, cache dtype, heads): every batch and cache length of the question once, both dtypes where it is
# cheap; 70B's one kv head leaves cores free at batch 1 (16 cores per group at most).
SHAPES = (
    (1, 128, "bfloat16", LLAMA_8B),
    (1, 128, "bfloat8_b", LLAMA_8B),
    (1, 1024, "bfloat8_b", LLAMA_8B),
    (1, 8192, "bfloat8_b", LLAMA_8B),
    (1, 32768, "bfloat8_b", LLAMA_8B),
    (8, 128, "bfloat8_b", LLAMA_8B),
    (8, 1024, "bfloat16", LLAMA_8B),
    (8, 1024, "bfloat8_b", LLAMA_8B),
    (8, 8192, "bfloat8_b", LLAMA_8B),
    (32, 128, "bfloat8_b", LLAMA_8B),
    (32, 1024, "bfloat8_b", LLAMA_8B),
    (1, 1024, "bfloat8_b", LLAMA_70B_T3K),
    (1, 8192, "bfloat8_b", LLAMA_70B_T3K),
    (8, 1024, "bfloat8_b", LLAMA_70B_T3K),
)


def dispatch_ns() -> float:
    """The timing model's named op-to-op dispatch cost (not part of any duration_ns)."""
    return next(c.value for c in timing.constants() if c.name == "kOpDispatchNs")


def measure(dev, batch: int, kv_len: int, dtype: str, heads: tuple[int, int], seed: int) -> dict:
    n_q, n_kv = heads
    ttnn = import_ttnn()
    gen = torch.Generator().manual_seed(seed)
    tile, rm = dict(layout=ttnn.TILE_LAYOUT), dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    cache_dtype = getattr(ttnn, dtype)
    k, v = (dev.empty((batch, n_kv, kv_len, HEAD_DIM), cache_dtype, ttnn.TILE_LAYOUT) for _ in range(2))
    positions = [kv_len - 1 - (u * 5) % min(kv_len, 96) for u in range(batch)]  # different positions, near the end
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **rm)
    q = dev.from_torch(torch.randn(1, batch, n_q, HEAD_DIM, generator=gen), dtype=ttnn.bfloat16, **tile)
    k_new, v_new = (
        dev.from_torch(torch.randn(1, batch, n_kv, HEAD_DIM, generator=gen), dtype=ttnn.bfloat16, **tile)
        for _ in range(2)
    )
    config = ProgramConfig(compute_with_storage_grid_size=(8, 8))

    _, update = ttflashdecode.paged_fused_update_cache(k, k_new, v, v_new, update_idxs_tensor=pos, return_stats=True)
    update_ns = update.stats.duration_ns
    _, attention = ttflashdecode.scaled_dot_product_attention_decode(
        q, k, v, cur_pos_tensor=pos, program_config=config, return_stats=True
    )
    attention_ns = attention.stats.duration_ns
    attention_cores = sum(c.role != "idle" for c in attention.plan.cores)
    _, run = ttflashdecode.update_cache_and_decode(
        q, k, v, k_new, v_new, cur_pos_tensor=pos, program_config=config, return_stats=True
    )
    return dict(
        update_ns=update_ns,
        attention_ns=attention_ns,
        fused_ns=run.stats.duration_ns,
        attention_cores=attention_cores,
        fused_attention_cores=len(run.plan.attention_cores),
        update_cores=len(run.plan.update_cores),
        reserved_row=run.plan.reserved_row,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", help="with --kv-lens and --dtypes: their cross product instead of SHAPES")
    parser.add_argument("--kv-lens", default="128,1024,8192,32768")
    parser.add_argument("--dtypes", default="bfloat16,bfloat8_b")
    parser.add_argument("--heads", default="32/8", help="q heads / kv heads of the cross product")
    parser.add_argument("--only", help="rows of SHAPES to run, e.g. 11,12,13 (0-based)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dev = ttemu.open_device("n150", timing_only=True)
    dev.default_hang_ms = max(dev.default_hang_ms, 5000)  # a loaded machine: see perf/model_parity.py
    dispatch = dispatch_ns()
    rows = []
    started = time.time()
    header = (
        "| heads q/kv | batch | kv_len | cache | update | attention | separate (2 launches) | fused (1 launch) "
        "| saved | attention cores separate / fused | update on |"
    )
    print(f"modelled; kOpDispatchNs = {dispatch:.0f} ns per launch; durations in us\n")
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    shapes = SHAPES if not args.only else [SHAPES[int(i)] for i in args.only.split(",")]
    if args.batches:
        heads = tuple(int(h) for h in args.heads.split("/"))
        shapes = [
            (int(b), int(s), d, heads)
            for b in args.batches.split(",")
            for s in args.kv_lens.split(",")
            for d in args.dtypes.split(",")
        ]
    for batch, kv_len, dtype, heads in shapes:
        m = measure(dev, batch, kv_len, dtype, heads, args.seed)
        separate = m["update_ns"] + m["attention_ns"] + 2 * dispatch
        one = m["fused_ns"] + dispatch
        where = "last row (reserved)" if m["reserved_row"] else "free cores"
        rows.append((batch, kv_len, dtype, separate, one))
        print(
            f"| {heads[0]}/{heads[1]} | {batch} | {kv_len} | {dtype} | {m['update_ns'] / 1e3:.2f} "
            f"| {m['attention_ns'] / 1e3:.2f} | "
            f"{separate / 1e3:.2f} | {one / 1e3:.2f} | {100 * (separate - one) / separate:+.1f}% | "
            f"{m['attention_cores']} / {m['fused_attention_cores']} | {m['update_cores']} cores, {where} |",
            flush=True,
        )
    dev.close()
    wins = [r for r in rows if r[4] < r[3]]
    gains = [(r[3] - r[4]) / r[3] for r in rows]
    print(
        f"\nfused faster in {len(wins)} of {len(rows)} shapes; best {max(gains):+.1%}, worst {min(gains):+.1%} "
        f"(modelled; {time.time() - started:.0f} s)"
    )


if __name__ == "__main__":
    main()
