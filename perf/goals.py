"""The side-by-side tables and issue 28's goals from ``perf/sweep.py``'s records (perf/out/sweep_runs/).

Every number printed comes from the records (and the bandwidth ceiling from the timing model's calibration); nothing
is typed in. All of it is MODELLED by the emulator's timing model (docs/TIMING.md), not measured on silicon.

Ratios are upstream's duration / ours (above 1: ours is faster), taken per timing variant; a row's ratio is shown at
the nominal variant with its minimum and maximum over the variants that ran, and a row counts as "ours faster" only
where the minimum is above 1.

Goals (issue 28 item 5; like for like: the fair table, upstream at its best, minimum over variants):

- no row below 1.00x;
- geometric mean >= 1.20x over the rows at <= 8K positions;
- geometric mean >= 1.10x over the rows at >= 32K positions;
- ours >= 90% of the model's whole-chip DRAM bandwidth (DRAM bytes / duration, minimum over variants) for
  Llama-3.1-8B on N150 at >= 32K positions.

The goals are Wormhole's (issue 28 set them for N150 / T3K / Galaxy rows); the Blackhole (P150) rows, issue 26's,
are reported against the same bars on their own line and do not enter the Wormhole goals.

    .venv/bin/python perf/sweep.py --table          # writes perf/out/sweep_summary.md and prints it
    .venv/bin/python perf/sweep.py --readme-table   # the fair table for the README
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHIP_DRAM_FIGURE = "chip_dram_bw_48_best_noc0"  # timing_calibration's whole-chip read figure (the highest published)
GOAL_NO_ROW_BELOW = 1.00
GOAL_SHORT = (8192, 1.20)  # rows at <= 8K positions: geometric mean of the minimum ratio
GOAL_LONG = (32768, 1.10)  # rows at >= 32K positions
GOAL_DRAM_FRACTION = 0.90  # Llama-3.1-8B N150 at >= 32K
NOMINAL = "nominal"


def chip_dram_gbs() -> tuple[float, str]:
    """The model's whole-chip DRAM bandwidth (GB/s, modelled) and a line saying where it comes from."""
    from ttemu import timing_calibration

    fig = next(f for f in timing_calibration.FIGURES if f.key == CHIP_DRAM_FIGURE)
    m = fig.modelled()
    return m, (
        f"timing_calibration `{fig.key}` ({fig.what}): modelled {m:.1f} GB/s, published {fig.published:g} "
        f"GB/s {fig.source}"
    )


# ---- reading the records ---------------------------------------------------------------------------------------


class Row:
    """One shape's records: side -> variant -> record."""

    def __init__(self, shape, records: list[dict]):
        self.shape = shape
        self.by: dict[str, dict[str, dict]] = {}
        for r in records:
            if r["shape"] == shape.name:
                self.by.setdefault(r["side"], {})[r["variant"]] = r

    def ns(self, side: str, variant: str = NOMINAL) -> float | None:
        return self.by.get(side, {}).get(variant, {}).get("ns")

    def rec(self, side: str, variant: str = NOMINAL) -> dict:
        return self.by.get(side, {}).get(variant, {})

    def variants(self) -> list[str]:
        return sorted({v for side in self.by.values() for v in side}, key=lambda v: (v != NOMINAL, v))

    def ratios(self, up_side: str, ours_side: str) -> dict[str, float]:
        """variant -> upstream / ours, where both ran."""
        out = {}
        for v in self.variants():
            u, o = self.ns(up_side, v), self.ns(ours_side, v)
            if u and o:
                out[v] = u / o
        return out

    def gbs(self, side: str) -> dict[str, float]:
        out = {}
        for v in self.variants():
            r = self.rec(side, v)
            if r.get("ns") and r.get("bytes"):
                out[v] = r["bytes"] / r["ns"]
        return out


def is_blackhole(row: Row) -> bool:
    return row.shape.arch == "blackhole"


def _us(x: float | None) -> str:
    return f"{x / 1e3:.1f}" if x else "-"


def _ratio_cell(ratios: dict[str, float]) -> str:
    if not ratios:
        return "-"
    nominal = ratios.get(NOMINAL)
    lo, hi = min(ratios.values()), max(ratios.values())
    head = f"{nominal:.2f}x" if nominal is not None else "-"
    return f"{head} [{lo:.2f}-{hi:.2f}]"


def _faster(ratios: dict[str, float]) -> str:
    if not ratios:
        return "-"
    lo, hi = min(ratios.values()), max(ratios.values())
    return "ours faster" if lo > 1 else ("upstream faster" if hi < 1 else "within the model's range")


def _variants_line(rows: list[Row], metas: dict[str, dict]) -> str:
    counts = sorted({len(r.variants()) for r in rows})
    names = sorted({v for r in rows for v in r.variants()}, key=lambda v: (v != NOMINAL, v))
    commits = sorted({m.get("commit", "?") for m in metas.values()})
    dates = sorted(m.get("date_utc", "") for m in metas.values())
    seconds = [m["seconds"] for m in metas.values() if "seconds" in m]
    took = f" Each shape's worker took {min(seconds)}-{max(seconds)} s wall." if seconds else ""
    return (
        f"Variants per row: {', '.join(map(str, counts))} ({', '.join(names)}). Measured at "
        f"{', '.join(commits)}, {dates[0] if dates else '?'} - {dates[-1] if dates else '?'} UTC.{took}"
    )


def _constant_of(variant: str, arch: str | None = None) -> str:
    """The assumed constant a "<stem>_low/high" variant moves on chip ``arch`` (``timing.assumed_constants(arch)``);
    else ""."""
    from ttemu import timing

    for a in timing.assumed_constants(arch):
        if variant in (f"{a.stem}_low", f"{a.stem}_high"):
            return a.name
    return ""


def extremes_table(rows: list[Row]) -> list[str]:
    """Per row, the variants that give its ratio vs upstream at its best its minimum and maximum, and the next value
    on each side: when the runner-up is close to the nominal ratio, one constant alone decides that end."""
    out = [
        "| shape | nominal | minimum (variant) | next lowest | maximum (variant) | next highest |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratios = sorted(r.ratios("upstream best", "ours").items(), key=lambda t: t[1])
        if len(ratios) < 3:
            continue
        nominal = r.ratios("upstream best", "ours").get(NOMINAL)
        lo, lo2, hi2, hi = (_variant_cell(*ratios[i], r.shape.arch) for i in (0, 1, -2, -1))
        out.append(f"| {r.shape.label} | {f'{nominal:.3f}x' if nominal else '-'} | {lo} | {lo2} | {hi} | {hi2} |")
    return out


def _variant_cell(variant: str, ratio: float, arch: str) -> str:
    c = _constant_of(variant, arch)
    return f"{ratio:.3f}x ({variant}{': ' + c if c else ''})"


def fair_table(rows: list[Row]) -> list[str]:
    out = [
        "| shape | chip | ours (us) | upstream as called (us) | upstream at its best (us, config) | ratio vs as "
        "called [min-max] | ratio vs best [min-max] | verdict (vs best) |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        best = r.rec("upstream best")
        cfg = (best.get("config") or "").split(" (best")[0]
        vs_best = r.ratios("upstream best", "ours")
        out.append(
            f"| {r.shape.label} | {r.shape.chip} | {_us(r.ns('ours'))} | {_us(r.ns('upstream as called'))} | "
            f"{_us(r.ns('upstream best'))} ({cfg}) | {_ratio_cell(r.ratios('upstream as called', 'ours'))} | "
            f"{_ratio_cell(vs_best)} | {_faster(vs_best)} |"
        )
    return out


def defaults_table(rows: list[Row]) -> list[str]:
    out = [
        "| shape | chip | ours, defaults (us) | upstream, defaults (us) | ratio [min-max] | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        ratios = r.ratios("upstream default", "ours default")
        out.append(
            f"| {r.shape.label} | {r.shape.chip} | {_us(r.ns('ours default'))} | {_us(r.ns('upstream default'))} | "
            f"{_ratio_cell(ratios)} | {_faster(ratios)} |"
        )
    return out


def _geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _min_vs_best(rows: list[Row]) -> dict[str, float | None]:
    return {r.shape.name: min(r.ratios("upstream best", "ours").values(), default=None) for r in rows}


def goals(rows: list[Row]) -> list[str]:
    chip, chip_src = chip_dram_gbs()
    blackhole = [r for r in rows if is_blackhole(r)]
    rows = [r for r in rows if not is_blackhole(r)]
    mins = _min_vs_best(rows)
    have = [r for r in rows if mins[r.shape.name] is not None]
    lines = []
    below = [r for r in have if mins[r.shape.name] < GOAL_NO_ROW_BELOW]
    lines.append(
        f"- No row below {GOAL_NO_ROW_BELOW:.2f}x (minimum over variants, vs upstream at its best): "
        + ("no rows" if not have else "MET" if not below else "NOT MET")
        + f": {len(have) - len(below)} of {len(have)} rows at or above"
        + (f"; below: {', '.join(f'{r.shape.label} {mins[r.shape.name]:.2f}x' for r in below)}" if below else "")
    )
    for (limit, goal), cmp, what in (
        (GOAL_SHORT, lambda kv, lim: kv <= lim, "<="),
        (GOAL_LONG, lambda kv, lim: kv >= lim, ">="),
    ):
        sel = [mins[r.shape.name] for r in have if cmp(r.shape.kv_len, limit)]
        g = _geomean(sel)
        verdict = "no rows" if g is None else ("MET" if g >= goal else "NOT MET")
        lines.append(
            f"- Geometric mean >= {goal:.2f}x at {what} {limit // 1024}K positions: {verdict}"
            + (f": {g:.3f}x over {len(sel)} rows" if g is not None else "")
        )
    llama = [r for r in rows if r.shape.name.startswith("llama8b-n150") and r.shape.kv_len >= GOAL_LONG[0]]
    fr = {r.shape.label: min(r.gbs("ours").values(), default=0.0) / chip for r in llama}
    verdict = "no rows" if not fr else ("MET" if min(fr.values()) >= GOAL_DRAM_FRACTION else "NOT MET")
    lines.append(
        f"- Ours >= {GOAL_DRAM_FRACTION:.0%} of the chip's modelled DRAM bandwidth ({chip:.1f} GB/s) for "
        f"Llama-3.1-8B N150 at >= 32K (minimum over variants): {verdict}"
        + "".join(f"; {k}: {v:.1%}" for k, v in fr.items())
    )
    if blackhole:
        lines.append(blackhole_line(blackhole))
    lines.append(f"\nChip bandwidth: {chip_src}.")
    return lines


def blackhole_line(rows: list[Row]) -> str:
    """The Blackhole rows against the Wormhole goals' bars (no goal of issue 28 covers them): each row's minimum ratio
    vs upstream at its best and whether it is above 1.00x."""
    mins = _min_vs_best(rows)
    cells = [f"{r.shape.label} {mins[r.shape.name]:.2f}x" for r in rows if mins[r.shape.name] is not None]
    below = [r for r in rows if mins[r.shape.name] is not None and mins[r.shape.name] < GOAL_NO_ROW_BELOW]
    return (
        "- Blackhole (P150) rows, not in the goals above (minimum over Blackhole's variants, vs upstream at its "
        "best): "
        + (", ".join(cells) if cells else "no rows ran")
        + (f"; {len(below)} below {GOAL_NO_ROW_BELOW:.2f}x" if below else "; none below 1.00x" if cells else "")
    )


README_INTRO = (
    "All durations MODELLED by the emulator's timing model (not measured on silicon); paged bfloat8_b K/V, every "
    "user at the last position; both ops HiFi4, bfloat16 DST, the same exp: exact, except on rows with at most 16 q "
    "heads, where upstream's half tiles take the approximate exp whatever the config says and ours runs it too. "
    "Ratio = upstream / ours at the nominal "
    'model [minimum-maximum over the timing model\'s variants]; "ours faster" only where the minimum is above 1.'
)
SUMMARY_ROWS = (
    "Every row paged (64-position blocks), bfloat8_b K/V, bfloat16 Q in DRAM, every user at the last position. "
    'Ratio = upstream\'s duration / ours at the nominal model, [minimum-maximum] over the variants; "ours faster" '
    "only where the minimum is above 1."
)
SUMMARY_SIDES = (
    "Ours: no program config (auto). Upstream as called: k_chunk_size 0 (dynamic), 16 cores per head, 8x8 grid "
    "(a Galaxy chip: 8x4; a P150 too runs tt_transformers' 8x8 within its 11x10). Blackhole rows (chip P150) are "
    "timed by the model's Blackhole constants and varied over Blackhole's own variants. "
    "Upstream at its best, under each variant: the fastest, under that variant, of every candidate upstream.tune's "
    "search over k_chunk_size, max_cores_per_head_batch and grid ran (the search ranks under the nominal model; each "
    "call's recorded traces are replayed under every variant, so every candidate's duration is known under each)."
)
DEFAULTS_HEADING = (
    "### Each op's defaults (no program config, no compute config: ours HiFi4 + approximate exp, upstream HiFi2 "
    "+ approximate math and exp)"
)


def readme_table(shapes, records: list[dict], metas: dict[str, dict], runs: str = "perf/out/sweep_runs/") -> str:
    """The fair table's markdown, naming ``runs`` (the folder of run records it was made from)."""
    rows = [Row(s, records) for s in shapes]
    return "\n".join(
        [
            README_INTRO,
            "",
            *fair_table(rows),
            "",
            _variants_line(rows, metas),
            f"Generated by `perf/sweep.py --readme-table` from {runs}.",
        ]
    )


def summary(shapes, records: list[dict], metas: dict[str, dict]) -> str:
    rows = [Row(s, records) for s in shapes]
    return "\n".join(
        [
            "## ttflashdecode vs upstream sdpa_decode, like for like, MODELLED (emulator timing model; `sweep.csv`)",
            "",
            _variants_line(rows, metas),
            "",
            SUMMARY_ROWS,
            "",
            "### Like for like (both ops HiFi4, bfloat16 DST, the same exp: tt_transformers' decode settings)",
            "",
            "The exp is the exact one (tt_transformers passes exp_approx_mode=False) except on rows with at most 16 q "
            "heads: there upstream's half tiles take the approximate exp whatever the config says (the wheel's "
            "compute_common.hpp, sub_exp_block_bcast_cols_inplace), so ours runs the approximate exp too.",
            "",
            SUMMARY_SIDES,
            "",
            *fair_table(rows),
            "",
            DEFAULTS_HEADING,
            "",
            *defaults_table(rows),
            "",
            "### Goals (issue 28 item 5)",
            "",
            *goals(rows),
            "",
            "### Which variants decide each row's range (ratio vs upstream at its best)",
            "",
            *extremes_table(rows),
        ]
    )
