"""What ``program_config="auto"`` gains (issue 12 item 5): MODELLED duration of auto's choice against the fixed default
rule (what a call without program_config got before auto) and fixed configs, per shape.

Every duration is MODELLED by the emulator's timing model (docs/TIMING.md), not measured on silicon: each config's
real program (the descriptor the op launches) runs on an emulated chip, timing-only when the emulator has that mode,
with every user at the last position of the cache (the worst case a decode loop's program meets).

Shapes (bfloat8_b K/V, one query token, causal):
  * Llama-3.1-8B on N150: batch 1, 32 q / 8 kv heads, head_dim 128, kv_len 1K-32K;
  * the FlashDecode tech report's grid, a subset: batch 8, 8 q / 1 kv head, head_dim 64/128/256, kv_len 4K and 16K;
  * a T3K per-chip shape: Llama-3.1-8B's 4 q / 1 kv head per chip, batch 1, head_dim 128, kv_len 8K and 32K.
Configs: "rule" (the fixed default rule: whole grid, k_chunk_size from plan.default_k_chunk_size,
max_cores_per_head_batch 16), the named configs llama-3.1-8b/n150 and llama-3.1-8b/t3k from program_configs/ (their
fields are the rule's; listed so the table says so), "k512 N64" (k_chunk_size 512, up to 64 cores per group) and
"k128 N16", and "auto" (the tuner's choice, program_config="tune", ttflashdecode/tuning.py; its candidates'
durations come from its own runs).

    .venv/bin/python perf/auto_config_gain.py            # the table above: CSV, PNG, markdown (~30 min cold)
    .venv/bin/python perf/auto_config_gain.py --quick    # Llama-3.1-8B N150 at 4K and 8K only
    .venv/bin/python perf/auto_config_gain.py --small    # auto's candidates on small shapes (the rule threshold)
    nice -n 5 .venv/bin/python perf/auto_config_gain.py --jobs 2   # shapes in 2 worker processes, same table

Writes perf/out/auto_config_gain.csv, .png and .md (the markdown ends with the commit tag the rows were run at, as
perf/sweep.py writes it, and the wall time). Uses a private auto cache directory under perf/out/ unless
$TTFLASHDECODE_AUTO_CACHE is set, so the table always reflects runs of this tree's kernels; the cache's keys hash the
kernels, planner and timing model, so a re-run with nothing changed reads auto's choices back and only runs the fixed
configs auto did not evaluate. Every run is timing-only (no math; same durations as a full run).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import harness

OUT = harness.OUT
os.environ.setdefault("TTFLASHDECODE_AUTO_CACHE", str(OUT / "auto_cache"))

from ttflashdecode import tuning  # noqa: E402
from ttflashdecode.config import ProgramConfig, load_program_config  # noqa: E402
from ttflashdecode.plan import DecodeShapes, auto, plan  # noqa: E402

GRID = (8, 8)  # N150's compute grid (a T3K chip's too)
FIXED = {
    "rule": auto.rule_config(GRID),
    "llama-3.1-8b/n150": load_program_config("llama-3.1-8b/n150"),
    "llama-3.1-8b/t3k": load_program_config("llama-3.1-8b/t3k"),
    "k512 N64": ProgramConfig(GRID, k_chunk_size=512, max_cores_per_head_batch=64),
    "k128 N16": ProgramConfig(GRID, k_chunk_size=128, max_cores_per_head_batch=16),
}


@dataclass(frozen=True)
class Case:
    family: str
    batch: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    kv_len: int

    def shapes(self) -> DecodeShapes:
        return DecodeShapes(
            batch=self.batch,
            n_q_heads=self.n_q_heads,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.head_dim,
            kv_len=self.kv_len,
            k_dtype="bfloat8_b",
            v_dtype="bfloat8_b",
        )

    def label(self) -> str:
        return (
            f"{self.family} b{self.batch} {self.n_q_heads}q/{self.n_kv_heads}kv d{self.head_dim} {self.kv_len // 1024}K"
        )


def cases(quick: bool) -> list[Case]:
    llama = [Case("Llama-3.1-8B N150", 1, 32, 8, 128, kv) for kv in (1024, 2048, 4096, 8192, 16384, 32768)]
    if quick:
        return [c for c in llama if c.kv_len in (4096, 8192)]
    report = [Case("tech report", 8, 8, 1, d, kv) for d in (64, 128, 256) for kv in (4096, 16384)]
    t3k = [Case("Llama-3.1-8B T3K chip", 1, 4, 1, 128, kv) for kv in (8192, 32768)]
    return llama + report + t3k


def small_cases() -> list[Case]:
    """Small shapes (the test suite's kind, most under auto.RULE_MAX_KV_BYTES_PER_CORE), evaluated anyway to see
    what the rule leaves."""
    return [
        Case("small", 1, 8, 1, 128, 1024),
        Case("small", 1, 8, 1, 64, 4096),
        Case("small", 4, 8, 2, 64, 1024),
        Case("small", 1, 32, 8, 128, 1024),
        Case("small", 1, 4, 1, 128, 8192),
    ]


def run(cases_: list[Case], configs: dict[str, ProgramConfig], force_model: bool) -> list[dict]:
    rows = []
    for case in cases_:
        s = case.shapes()
        t0 = time.monotonic()
        if force_model:
            tuning.RULE_MAX_KV_BYTES_PER_CORE = 0
        choice = tuning.choose(s, GRID)
        auto_s = time.monotonic() - t0
        timed = {(sk, n): ns for _, sk, n, ns in choice.durations}  # by plan: (k_chunk_size, cores per group)
        row = {
            "shape": case.label(),
            "KV MB": f"{auto.kv_cache_bytes(s) / 2**20:.1f}",
            "KV KiB per rule core": f"{auto.kv_bytes_per_core(plan(s, FIXED['rule'], GRID)) / 1024:.0f}",
            "auto source": choice.source,
        }
        for name, config in configs.items():
            p = plan(s, config, GRID)
            ns = timed.get((p.k_chunk_size, p.num_cores_per_head))
            if ns is None:
                ns = timed[(p.k_chunk_size, p.num_cores_per_head)] = tuning.evaluate(p)
            row[f"{name} [ns]"] = f"{ns:.0f}"
            row[f"{name} plan"] = f"k{p.k_chunk_size} N{p.num_cores_per_head}"
        if choice.config is None:  # the rule decided (small shape): auto's plan is the rule's
            row["auto [ns]"], row["auto plan"] = row["rule [ns]"], row["rule plan"]
        else:
            p = plan(s, choice.config, GRID)
            row["auto [ns]"] = f"{timed[(p.k_chunk_size, p.num_cores_per_head)]:.0f}"
            row["auto plan"] = (
                f"k{p.k_chunk_size} N{p.num_cores_per_head} "
                f"grid {p.config.compute_with_storage_grid_size[0]}x"
                f"{p.config.compute_with_storage_grid_size[1]}"
            )
        row["auto gain vs rule"] = f"{float(row['rule [ns]']) / float(row['auto [ns]']):.3f}x"
        row["candidates"] = len(choice.durations)
        row["spread"] = (
            f"{max(t[3] for t in choice.durations) / min(t[3] for t in choice.durations):.2f}x"
            if choice.durations
            else ""
        )
        row["auto s"] = f"{auto_s:.0f}"
        rows.append(row)
        print(" | ".join(f"{k}: {v}" for k, v in row.items()), flush=True)
    return rows


def run_parallel(cases_: list[Case], configs: dict[str, ProgramConfig], force_model: bool, jobs: int) -> list[dict]:
    """:func:`run` over ``jobs`` worker processes, one case at a time each; rows in ``cases_``'s order. Workers share
    the auto disk cache and the kernel compile cache (both keyed by content); each has its own emulated chip."""
    if jobs <= 1 or len(cases_) <= 1:
        return run(cases_, configs, force_model)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = pool.map(run, [[c] for c in cases_], [configs] * len(cases_), [force_model] * len(cases_))
        return [row for rows in done for row in rows]


def _provenance(t0: float) -> str:
    return (
        f"Modelled (emulator timing model, timing-only), at {harness.source_tag()}, "
        f"{harness.utc_now()}, {time.monotonic() - t0:.0f} s wall."
    )


def write(rows: list[dict], stem: Path, configs, footer: str = "") -> None:
    shown = ["shape", "auto plan", "auto [ns]"] + [f"{n} [ns]" for n in configs] + ["auto gain vs rule"]
    lines = ["| " + " | ".join(c.replace(" [ns]", " (us)") for c in shown) + " |", "|" + "---|" * len(shown)]
    for r in rows:
        cells = [f"{float(r[c]) / 1000:.1f}" if c.endswith("[ns]") else str(r[c]) for c in shown]
        lines.append("| " + " | ".join(cells) + " |")
    markdown = "\n".join(lines) + ("\n\n" + footer if footer else "")
    harness.write_table(stem, [{**r, "SOURCE": "modelled"} for r in rows], markdown)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    names = ["auto"] + list(configs)
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        rel = [float(r["rule [ns]"]) / float(r[f"{name} [ns]"]) for r in rows]
        ax.bar([x + i * width for x in range(len(rows))], rel, width, label=name)
    ax.axhline(1.0, color="k", lw=0.7)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(rows))])
    ax.set_xticklabels([r["shape"] for r in rows], rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("speed vs the fixed default rule (modelled)")
    ax.set_title("program_config='auto' vs fixed configs: rule duration / config duration, MODELLED")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(stem.with_suffix(".png"), dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="Llama-3.1-8B N150 at 4K and 8K only")
    ap.add_argument("--small", action="store_true", help="small shapes, auto's candidates evaluated anyway")
    ap.add_argument("--jobs", type=int, default=1, help="shapes in this many worker processes")
    args = ap.parse_args()
    t0 = time.monotonic()
    if args.small:
        configs = {"rule": FIXED["rule"]}
        rows = run_parallel(small_cases(), configs, True, args.jobs)
        stem = OUT / "auto_config_small"
    else:
        configs = FIXED
        rows = run_parallel(cases(args.quick), configs, False, args.jobs)
        stem = OUT / ("auto_config_gain_quick" if args.quick else "auto_config_gain")
    footer = _provenance(t0)
    write(rows, stem, configs, footer)
    print(
        f"wrote {stem}.csv/.md/.png (all durations modelled); {footer}"
        + ("" if args.jobs > 1 else f" auto: {tuning.stats()}")
    )


if __name__ == "__main__":
    main()
