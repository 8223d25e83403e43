"""Which default k_chunk_size is faster: derived from kv_len (what op.py does) or from the batch's largest cur_pos
(what the README says)? Counters from the emulator plus a MODELLED critical path (not a timing).

    .venv/bin/python perf/k_chunk_default.py            # 23 cases, ~2.5 min on 2 cores (kernels compiled)
    .venv/bin/python perf/k_chunk_default.py --quick    # 3 cases

For each decode shape and cur_pos (every user of the batch at that position) it plans the call twice with
program_config k_chunk_size = 0, once as op.py does today (``plan(...)``: the rule sees kv_len) and once with
``plan(..., max_cur_pos=cur_pos)`` (the rule sees the live length), then runs the real op on the emulator with
each of the two k_chunk_sizes and group sizes (the derived plan halves the group while a core would read too few
positions: plan.rules.default_num_cores_per_head) passed explicitly through ``ProgramConfig`` (one run when both rules
agree). Each
run writes into a NaN-poisoned output and is checked against ``golden.sdpa_decode`` on the quantised inputs
with the test suite's thresholds (tests/decode_harness.py): CHECK says PASS or FAIL.

Columns per rule (counted by the emulator unless noted):
  Sk       k_chunk_size the rule picks;
  act      cores of a group with chunks to read (plan.active_cores; checked: the cores that ran matmuls);
  rnd      tree rounds actually run: ceil(log2(act));
  DRAM KB  the busiest core's bytes read from DRAM (K/V of its live tiles, Q, cur_pos);
  KV tiles the busiest core's K/V tiles multiplied by compute, "live+zero": chunks x Sk/32 position tiles x
           (DHt + vDHt) from plan.chunk_range, split into tiles holding positions <= cur_pos (read from DRAM) and
           tiles past it (zero-filled in L1 by the reader, still multiplied, then masked); cross-checked against the
           emulator's matmul_tiles counter (matmul tiles = PNHt x K/V tiles);
  NoC KB   core-to-core NoC bytes of the whole program (the partials of the reduction tree and their semaphores);
  model us the MODELLED critical path below.

MODELLED critical path (1 GHz AI clock; figures from /work/shared/WORMHOLE.md; no cycle model exists yet):
  per active core c, from its own counters:
    D(c) = dram_bytes(c) / 22 B/cycle (one core reading DRAM saturates near 22 B/cycle; one channel ~22 GB/s)
           + 2 x 400 cycles per chunk (a K and a V read barrier; 32-512 B read + barrier measured 382-398 cycles)
    C(c) = 64 x matmul_tiles (32x32x32 at HiFi4, the default fidelity)
           + 32 x fpu_tiles (eltwise/reduce: ~8 cycles per fidelity phase x 4 phases at HiFi4; an upper bound)
           + 1344 x sfpu_tiles (accurate exp, the low end of the measured 1344-2624; the default config uses exact
             exp; the few non-exp SFPU tiles (max, recip) are charged the same, which penalises extra tree merges)
    T(c) = (D + C) / n + (n - 1) / n x max(D, C) for its n chunks (K/V are double-buffered: chunk i+1 is read while
           chunk i is computed; the first read and the last compute do not overlap)
  critical path = max_c T(c) + rounds x (294 cycles + bytes of one partial / 31.1 B/cycle) (one core-to-core NoC
  write per tree round; the receiver's merge is already in its counters).
  Not modelled: dispatch (~4 us per op, the same for both rules), NoC/DRAM contention, unpack/pack.
  Sensitivity checks: "DRAM+tree" repeats the model with C = 0 (a pure bandwidth-and-latency view), and the summary
  gives the ratios with 128 cycles per SFPU tile (approximate exp) instead of 1344.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import ttemu  # noqa: E402
from decode_harness import MAX_ABS_ERR, PCC_MIN  # noqa: E402
from ttemu.ttnn_env import import_ttnn  # noqa: E402
from ttflashdecode import golden  # noqa: E402
from ttflashdecode import plan as plan_module  # noqa: E402
from ttflashdecode.config import ProgramConfig  # noqa: E402
from ttflashdecode.ops.decode import api as op_module  # noqa: E402

ttnn = import_ttnn()

GRID = (8, 8)
MAX_CORES_PER_HEAD_BATCH = 16
KV_DTYPE = "bfloat8_b"
HEAD_DIM = 128

# ---- model figures (WORMHOLE.md), cycles at 1 GHz ----
DRAM_BYTES_PER_CYCLE = 22.0
DRAM_BARRIER_CYCLES = 400
BARRIERS_PER_CHUNK = 2
MATMUL_CYCLES = 64
FPU_CYCLES = 32
SFPU_CYCLES = 1344
SFPU_APPROX_EXP_CYCLES = 128  # sensitivity only: approximate exp, the high end of the measured 70-128
NOC_WRITE_CYCLES = 294
NOC_BYTES_PER_CYCLE = 31.1


@dataclass(frozen=True)
class Shape:
    name: str
    batch: int
    n_q_heads: int
    n_kv_heads: int
    kv_len: int

    def decode_shapes(self) -> plan_module.DecodeShapes:
        return plan_module.DecodeShapes(
            batch=self.batch,
            n_q_heads=self.n_q_heads,
            n_kv_heads=self.n_kv_heads,
            head_dim=HEAD_DIM,
            kv_len=self.kv_len,
            k_dtype=KV_DTYPE,
            v_dtype=KV_DTYPE,
        )


# cur_pos None = kv_len - 1
SHAPES = [
    (Shape("8B N150 32/8 b1", 1, 32, 8, 8192), (100, 1000, 4000, None)),
    (Shape("8B N150 32/8 b1", 1, 32, 8, 32768), (100, 1000, 4000, None)),
    (Shape("70B T3K 8/1 b1", 1, 8, 1, 8192), (100, 1000, 4000, None)),
    (Shape("70B T3K 8/1 b1", 1, 8, 1, 32768), (100, 1000, 4000, None)),
    (Shape("70B T3K 8/1 b8", 8, 8, 1, 8192), (100, 1000, 4000, None)),
    (Shape("8B N150 32/8 b8", 8, 32, 8, 8192), (100, 1000, None)),  # one core per group: only cur_pos 100 differs
]
QUICK = [
    (Shape("8B N150 32/8 b1", 1, 32, 8, 8192), (100,)),
    (Shape("70B T3K 8/1 b1", 1, 8, 1, 8192), (1000,)),
    (Shape("70B T3K 8/1 b8", 8, 8, 1, 8192), (4000,)),
]


def derived_k_chunk_size(shape: Shape, max_cur_pos: int | None) -> tuple[int, int]:
    """The derived plan's (k_chunk_size, num_cores_per_head): with k_chunk_size 0 the planner derives the group size
    too (plan.rules.default_num_cores_per_head), so both are what a rule picks."""
    config = ProgramConfig(GRID, k_chunk_size=0, max_cores_per_head_batch=MAX_CORES_PER_HEAD_BATCH)
    p = plan_module.plan(shape.decode_shapes(), config, GRID, max_cur_pos=max_cur_pos)
    return p.k_chunk_size, p.num_cores_per_head


def core_key(plan, core_id: int) -> str:
    x, y = plan.cores[core_id].core
    return f"{x},{y}"


def measure(dev, shape: Shape, tensors, cur_pos: int, split: tuple[int, int]) -> dict:
    k_chunk_size, num_cores_per_head = split
    q, k, v, out_tt, golden_inputs = tensors
    pos = [cur_pos] * shape.batch
    config = ProgramConfig(GRID, k_chunk_size=k_chunk_size, max_cores_per_head_batch=num_cores_per_head)
    dev.write(out_tt, torch.full((1, shape.batch, shape.n_q_heads, HEAD_DIM), float("nan")))  # unwritten -> NaN
    t0 = time.perf_counter()
    _, run = op_module.scaled_dot_product_attention_decode(
        q, k, v, cur_pos=pos, program_config=config, output_tensor=out_tt, return_stats=True
    )
    wall = time.perf_counter() - t0
    plan, stats = run.plan, run.stats
    assert (plan.k_chunk_size, plan.num_cores_per_head) == split

    # correctness: golden on the stored (quantised) inputs, cut to the live tiles (rows quantise independently)
    live_len = (cur_pos // 32 + 1) * 32
    gq, gk, gv = golden_inputs
    expected = golden.sdpa_decode(gq, gk[:, :, :live_len], gv[:, :, :live_len], cur_pos=pos)
    out = dev.to_torch(out_tt).float()
    pcc = golden.pcc(out, expected)
    err = golden.max_abs_error(out, expected)
    ok = not torch.isnan(out).any() and pcc >= PCC_MIN[KV_DTYPE] and err <= MAX_ABS_ERR[KV_DTYPE]

    s = plan.shapes
    sk_t = k_chunk_size // 32
    # per-core chunks and K/V tiles from the plan's chunk rule
    per_core: dict[str, dict] = {}
    for c in plan.cores:
        if c.role == "idle":
            continue
        chunks = live = 0
        for b, _h in c.groups:
            start, count = plan.chunk_range(pos[b], c.index_in_group)
            chunks += count
            for chunk in range(start, start + count):
                live += sum(1 for t in range(sk_t) if (chunk * sk_t + t) * 32 <= pos[b])
        if chunks:
            key = f"{c.core[0]},{c.core[1]}"
            per_core[key] = dict(
                chunks=chunks, live=live * (s.DHt + s.vDHt), zero=(chunks * sk_t - live) * (s.DHt + s.vDHt)
            )
    dram = {}
    core_to_core = 0
    for (src, dst), n in stats.noc_bytes.items():
        if src.startswith("dram"):
            dram[dst] = dram.get(dst, 0) + n
        elif not dst.startswith("dram"):
            core_to_core += n
    mismatches = 0
    for key, d in per_core.items():
        cnt = stats.core_counters.get(key, {})
        if cnt.get("matmul_tiles", 0) != s.PNHt * (d["live"] + d["zero"]):
            mismatches += 1
        d["dram"] = dram.get(key, 0)
        d["counters"] = cnt
        d["D"] = d["dram"] / DRAM_BYTES_PER_CYCLE + BARRIERS_PER_CHUNK * DRAM_BARRIER_CYCLES * d["chunks"]
    # cores that ran matmuls are exactly the plan's active cores
    active = plan.active_cores(cur_pos)
    with_matmuls = sum(1 for c in stats.core_counters.values() if c.get("matmul_tiles", 0))
    if with_matmuls != len(per_core) or len(per_core) != active * plan.num_groups // plan.groups_per_core:
        mismatches += 1

    rounds = plan_module.tree_rounds(active) if plan.groups_per_core == 1 else 0
    sends = (active - 1) * plan.num_groups if plan.groups_per_core == 1 else 0
    partial_bytes = core_to_core / sends if sends else 0
    tree = rounds * (NOC_WRITE_CYCLES + partial_bytes / NOC_BYTES_PER_CYCLE)
    most_tiles = max(per_core.values(), key=lambda d: d["live"] + d["zero"])
    model, D, C = critical_path(per_core, tree, SFPU_CYCLES)
    return dict(
        sk=k_chunk_size,
        active=active,
        rounds=rounds,
        dram=max(d["dram"] for d in per_core.values()),
        live=most_tiles["live"],
        zero=most_tiles["zero"],
        noc=core_to_core,
        model_us=model / 1e3,
        D_us=D / 1e3,
        C_us=C / 1e3,
        tree_us=tree / 1e3,
        model_dram_us=critical_path(per_core, tree, None)[0] / 1e3,
        model_approx_exp_us=critical_path(per_core, tree, SFPU_APPROX_EXP_CYCLES)[0] / 1e3,
        pcc=pcc,
        err=err,
        ok=ok,
        wall=wall,
        mismatches=mismatches,
    )


def critical_path(per_core: dict, tree: float, sfpu_cycles: float | None) -> tuple[float, float, float]:
    """MODELLED cycles: max over active cores of the double-buffered T(c), plus the tree; and that core's D and C.
    sfpu_cycles None: compute left out (C = 0)."""

    def terms(d):
        cnt = d["counters"]
        C = (
            0.0
            if sfpu_cycles is None
            else (
                MATMUL_CYCLES * cnt.get("matmul_tiles", 0)
                + FPU_CYCLES * cnt.get("fpu_tiles", 0)
                + sfpu_cycles * cnt.get("sfpu_tiles", 0)
            )
        )
        n, D = d["chunks"], d["D"]
        return (D + C) / n + (n - 1) / n * max(D, C), D, C

    T, D, C = max((terms(d) for d in per_core.values()), key=lambda t: t[0])
    return T + tree, D, C


def make_tensors(dev, shape: Shape, seed: int):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, shape.batch, shape.n_q_heads, HEAD_DIM, generator=gen)
    k = torch.randn(shape.batch, shape.n_kv_heads, shape.kv_len, HEAD_DIM, generator=gen)
    v = torch.randn(shape.batch, shape.n_kv_heads, shape.kv_len, HEAD_DIM, generator=gen)
    kv = getattr(ttnn, KV_DTYPE)
    tt = (
        dev.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT),
        dev.from_torch(k, dtype=kv, layout=ttnn.TILE_LAYOUT),
        dev.from_torch(v, dtype=kv, layout=ttnn.TILE_LAYOUT),
        dev.from_torch(
            torch.zeros(1, shape.batch, shape.n_q_heads, HEAD_DIM), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT
        ),
    )
    stored = (
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, KV_DTYPE),
        golden.quantize_like_device(v, KV_DTYPE),
    )
    return (*tt, stored)


def fmt_rule(r: dict) -> str:
    tiles = f"{r['live']}+{r['zero']}"
    return (
        f"{r['sk']:>4} {r['active']:>3} {r['rounds']:>3} {r['dram'] / 1e3:>7.1f} {tiles:>9} "
        f"{r['noc'] / 1e3:>7.1f} {r['model_us']:>8.2f} {'PASS' if r['ok'] else 'FAIL':>5}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 cases only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--png", default=str(ROOT / "perf" / "out" / "k_chunk_default.png"))
    args = parser.parse_args()

    t_start = time.perf_counter()
    dev = ttemu.open_device(board="n150")
    rows = []
    try:
        for i, (shape, positions) in enumerate(QUICK if args.quick else SHAPES):
            tensors = make_tensors(dev, shape, args.seed + i)
            for p in positions:
                cur_pos = shape.kv_len - 1 if p is None else p
                sk_kv, sk_max = derived_k_chunk_size(shape, None), derived_k_chunk_size(shape, cur_pos)  # (Sk, N)
                by_kv = measure(dev, shape, tensors, cur_pos, sk_kv)
                by_max = by_kv if sk_max == sk_kv else measure(dev, shape, tensors, cur_pos, sk_max)
                rows.append((shape, cur_pos, by_kv, by_max))
                print(
                    f"  ran {shape.name} S={shape.kv_len} cur_pos={cur_pos}: Sk {sk_kv} vs {sk_max} "
                    f"({by_kv['wall'] + (0 if by_max is by_kv else by_max['wall']):.1f} s emulated)",
                    flush=True,
                )
            del tensors
    finally:
        dev.close()

    rule = f"{'Sk':>4} {'act':>3} {'rnd':>3} {'DRAM KB':>7} {'KV tiles':>9} {'NoC KB':>7} {'model us':>8} {'check':>5}"
    head = f"{'shape':<18} {'kv_len':>6} {'cur_pos':>7} | {rule} | {rule} | {'ratio':>5} {'DRAM+tree':>9}"
    print()
    print(
        f"{'q/kv heads, batch':<33} | {'kv_len rule (op.py today)':^53} | {'max-cur_pos rule (README)':^53} "
        "| kv/max model"
    )
    print(head)
    print("-" * len(head))
    for shape, cur_pos, a, b in rows:
        same = " (same Sk)" if a is b else ""
        ratios = f"{a['model_us'] / b['model_us']:>5.2f} {a['model_dram_us'] / b['model_dram_us']:>9.2f}{same}"
        print(f"{shape.name:<18} {shape.kv_len:>6} {cur_pos:>7} | {fmt_rule(a)} | {fmt_rule(b)} | {ratios}")
    print(
        "\nKV tiles: live+zero-filled K/V tiles the busiest core multiplies. model us: MODELLED critical path (see the"
    )
    print("docstring): max over cores of pipelined DRAM || compute, plus one NoC write per tree round. ratio > 1: the")
    print("max-cur_pos rule is faster. DRAM+tree: the same ratio with compute left out of the model.")
    print("\nModel terms of the critical core, us (DRAM / compute / tree), kv_len rule -> max-cur_pos rule:")
    for shape, cur_pos, a, b in rows:
        terms = [f"{r['D_us']:6.2f} / {r['C_us']:6.2f} / {r['tree_us']:5.2f}" for r in (a, b)]
        print(f"  {shape.name:<18} {shape.kv_len:>6} {cur_pos:>6}: {terms[0]}  ->  {terms[1]}")
    print()
    runs = [r for _, _, a, b in rows for r in ((a,) if a is b else (a, b))]
    bad = [r for r in runs if not r["ok"]]
    mism = sum(r["mismatches"] for r in runs)
    differ = [(a, b) for _, _, a, b in rows if a is not b]
    if differ:
        for key, what in (
            ("model_us", "model"),
            ("model_approx_exp_us", "model with approximate exp"),
            ("model_dram_us", "DRAM+tree only"),
        ):
            ratios = [a[key] / b[key] for a, b in differ]
            print(
                f"kv/max ratio where the rules differ ({len(differ)} cases), {what}: "
                f"{min(ratios):.2f} .. {max(ratios):.2f}"
            )
    print(
        f"{len(runs)} emulator runs, {len(bad)} FAIL; worst PCC {min(r['pcc'] for r in runs):.5f}, worst max|err| "
        f"{max(r['err'] for r in runs):.4f}; plan vs emulator (K/V tiles = matmul_tiles / PNHt, active cores): "
        f"{'all agree' if not mism else f'{mism} DISAGREE'}; total {time.perf_counter() - t_start:.0f} s"
    )
    plot(rows, Path(args.png))
    print(f"plot: {args.png}")
    return 1 if bad else 0


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys((s.name, s.kv_len) for s, *_ in rows))
    cols = min(3, len(keys))
    nrows = -(-len(keys) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.8 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        pts = [(p, a, b) for s, p, a, b in rows if (s.name, s.kv_len) == key]
        xs = [p for p, _, _ in pts]
        ax.plot(xs, [a["model_us"] for _, a, _ in pts], "o-", label="kv_len rule (op.py today)")
        ax.plot(xs, [b["model_us"] for _, _, b in pts], "s--", label="max-cur_pos rule (README)")
        for p, a, b in pts:
            ax.annotate(f"{a['sk']}", (p, a["model_us"]), textcoords="offset points", xytext=(0, 6), fontsize=7)
            ax.annotate(f"{b['sk']}", (p, b["model_us"]), textcoords="offset points", xytext=(0, -12), fontsize=7)
        ax.set_xscale("log")
        ax.margins(y=0.15)
        ax.set_title(f"{key[0]}, kv_len {key[1]}", fontsize=9)
        ax.set_xlabel("cur_pos (all users)")
        ax.set_ylabel("MODELLED critical path, us")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.suptitle(
        "Default k_chunk_size: MODELLED critical path from emulator counters (labels: k_chunk_size)", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
