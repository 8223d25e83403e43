"""The planner's group-size rule, measured (issue 12 goals c and d): MODELLED duration of a decode call for every
group size N (cores per (batch, kv head) group) and k_chunk_size, per shape, next to what the derived plan
(program config ``k_chunk_size=0``) picks.

Every duration is MODELLED by the emulator's timing model (docs/TIMING.md), not measured on silicon: the real
program (``program_factory.build_program`` of the plan, the descriptor the op launches) runs on the emulator's
timing-only chip (``tuning.evaluate``) with every user at the case's position.

    .venv/bin/python perf/group_size_table.py              # all cases below (~2 min with kernels compiled)
    .venv/bin/python perf/group_size_table.py --quick      # the T3K chip at 4K and the Llama-70B point
    .venv/bin/python perf/group_size_table.py --exp-approx false   # the exact exp (default: the config default)
    .venv/bin/python perf/group_size_table.py --only T3K           # the cases whose label holds "T3K"

Cases (bfloat8_b K/V, head_dim 128 unless noted, one query token):
  * Llama-3.1-8B's T3K per-chip shape: batch 1, 4 q / 1 kv head, max_cores_per_head_batch 64, kv_len 1K-128K at the
    last position (a device cur_pos tensor: the plan sees kv_len);
  * the published Llama-3.1-70B per-chip point (perf/profile_decode.py --llama70b): batch 8, 8 q / 1 kv head, paged
    32-position blocks, kv_len 256, every user at position 127 (host positions: the plan sees max_cur_pos 127);
  * small shapes of perf/auto_config_gain.py --small and the tech report's b8 8q/1kv d128 at 4K (the rule's range,
    below auto's 64 KiB-per-core line), max_cores_per_head_batch 16.
For each N (powers of two up to the most the grid allows, and that most) it runs k_chunk_sizes from the one giving
each core one chunk down to a quarter of it (32..512, dividing kv_len), with the chunk and N given explicitly, and
the derived plan once. Columns: "N=n" the best time with n cores per group (its k_chunk_size), "derived" what the
planner picks and its time, "best" the fastest explicit plan, "derived/best".

Writes perf/out/group_size_table.md and .csv.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import harness

from ttflashdecode import tuning
from ttflashdecode.config import ProgramConfig
from ttflashdecode.plan import DecodeShapes, L1OverflowError, plan

GRID = (8, 8)  # N150's compute grid (a T3K chip's too)


@dataclass(frozen=True)
class Case:
    label: str
    shapes: DecodeShapes
    max_cores: int  # max_cores_per_head_batch
    cur_pos: int | None  # every user's position; None: kv_len - 1 seen through a device tensor (plan sees kv_len)


def _shapes(batch, n_q, n_kv, kv_len, head_dim=128, **kw) -> DecodeShapes:
    return DecodeShapes(
        batch=batch,
        n_q_heads=n_q,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        kv_len=kv_len,
        k_dtype="bfloat8_b",
        v_dtype="bfloat8_b",
        **kw,
    )


def cases(quick: bool) -> list[Case]:
    t3k = [
        Case(f"T3K chip b1 4q/1kv {kv // 1024}K", _shapes(1, 4, 1, kv), 64, None)
        for kv in (1024, 2048, 4096, 8192, 32768, 131072)
    ]
    llama70b = Case(
        "Llama-70B b8 8q/1kv paged pos 127", _shapes(8, 8, 1, 256, block_size=32, max_blocks_per_user=8), 64, 127
    )
    if quick:
        return [t3k[2], llama70b]
    small = [
        Case("b1 8q/1kv d128 1K", _shapes(1, 8, 1, 1024), 16, None),
        Case("b1 8q/1kv d64 4K", _shapes(1, 8, 1, 4096, head_dim=64), 16, None),
        Case("b4 8q/2kv d64 1K", _shapes(4, 8, 2, 1024, head_dim=64), 16, None),
        Case("b1 32q/8kv d128 1K", _shapes(1, 32, 8, 1024), 16, None),
        Case("b1 4q/1kv d128 8K", _shapes(1, 4, 1, 8192), 16, None),
        Case("b8 8q/1kv d128 4K", _shapes(8, 8, 1, 4096), 16, None),
        Case("b8 8q/1kv d128 4K pos 300", _shapes(8, 8, 1, 4096), 16, 300),
    ]
    return t3k + [llama70b] + small


def group_sizes(case: Case) -> list[int]:
    most = min(case.max_cores, GRID[0] * GRID[1] // case.shapes.num_groups)
    return sorted({1 << i for i in range(most.bit_length()) if 1 << i <= most} | {most})


def chunk_sizes(case: Case, n: int) -> list[int]:
    s = case.shapes
    length = s.kv_len if case.cur_pos is None else case.cur_pos + 1
    one_each = max(32, min(512, 1 << max(0, (-(-length // n) - 1).bit_length())))
    return [sk for sk in (one_each, one_each // 2, one_each // 4) if sk >= 32 and s.kv_len % sk == 0]


def measure(case: Case, exp_approx: bool | None) -> dict:
    extra = {} if exp_approx is None else {"exp_approx_mode": exp_approx}
    pos = case.cur_pos
    timed = {}  # (N, k_chunk_size) -> ns
    for n in group_sizes(case):
        for sk in chunk_sizes(case, n):
            config = ProgramConfig(GRID, k_chunk_size=sk, max_cores_per_head_batch=n, **extra)
            try:
                p = plan(case.shapes, config, GRID)
            except L1OverflowError:
                continue
            timed[(p.num_cores_per_head, p.k_chunk_size)] = tuning.evaluate(p, cur_pos=pos)
    # The op plans host positions with the batch's largest position + 1 rounded up to a power of two (op.py,
    # _positions_bound), so a decode loop meets a handful of plans; the derived plan here sees the same bound.
    bound = None if pos is None else min(case.shapes.kv_len, 1 << pos.bit_length()) - 1
    derived = plan(
        case.shapes,
        ProgramConfig(GRID, k_chunk_size=0, max_cores_per_head_batch=case.max_cores, **extra),
        GRID,
        max_cur_pos=bound,
    )
    key = (derived.num_cores_per_head, derived.k_chunk_size)
    if key not in timed:
        timed[key] = tuning.evaluate(derived, cur_pos=pos)
    best = min(timed, key=timed.get)
    row = {"shape": case.label, "max cores": case.max_cores, "cur_pos": "kv_len-1" if pos is None else pos}
    for n in group_sizes(case):
        mine = [(ns, sk) for (m, sk), ns in timed.items() if m == n]
        row[f"N={n}"] = f"{min(mine)[0] / 1e3:.2f} (k{min(mine)[1]})" if mine else ""
    row["derived"] = f"N{key[0]} k{key[1]}: {timed[key] / 1e3:.2f}"
    row["best"] = f"N{best[0]} k{best[1]}: {timed[best] / 1e3:.2f}"
    row["derived/best"] = f"{timed[key] / timed[best]:.3f}"
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the T3K chip at 4K and the Llama-70B point only")
    ap.add_argument("--only", default="", help="run only the cases whose label contains this")
    ap.add_argument(
        "--exp-approx",
        type=lambda s: s.lower() in ("1", "true"),
        default=None,
        help="ProgramConfig.exp_approx_mode for every run (default: the config's default)",
    )
    ap.add_argument("--out", default=str(harness.OUT / "group_size_table"), help="output stem (.md, .csv)")
    args = ap.parse_args()
    t0 = time.monotonic()
    rows = []
    for case in (c for c in cases(args.quick) if args.only in c.label):
        rows.append(measure(case, args.exp_approx))
        print(" | ".join(f"{k}: {v}" for k, v in rows[-1].items() if v != ""), flush=True)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    columns = (
        [c for c in columns if not c.startswith("N=")][:3]
        + sorted((c for c in columns if c.startswith("N=")), key=lambda c: int(c[2:]))
        + ["derived", "best", "derived/best"]
    )
    exp = "config default" if args.exp_approx is None else ("approximate" if args.exp_approx else "exact")
    title = f"Modelled duration, us (emulator timing model; exp: {exp}); N=n: best k_chunk_size with n cores per group"
    lines = [title, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows]
    lines += ["", f"{harness.stamp()}; `{' '.join(['perf/group_size_table.py', *sys.argv[1:]])}`"]
    table = [{**{c: r.get(c, "") for c in columns}, "SOURCE": "modelled"} for r in rows]
    stem = harness.write_table(args.out, table, "\n".join(lines))
    print(f"wrote {stem}.md/.csv (modelled) in {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
