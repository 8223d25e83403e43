"""Issue 12's performance goals checked row by row from ``perf/sweep.py``'s CSV, with the side-by-side table.

Every number printed comes from the CSV (and the bandwidth ceiling from the timing model's calibration); nothing is
typed in. All of it is MODELLED by the emulator's timing model (docs/TIMING.md), not measured on silicon.

Goals (issue 12 item 4):

- (a) ours at least ``GOAL_RATIO`` x upstream sdpa_decode's throughput (the CSV's RATIO TO UPSTREAM: upstream's
  duration / ours) on the FlashDecode tech report's shapes: the ``grid`` group (head_dim x batch grid and kv_len scan);
- (b) ours at least ``GOAL_CHIP_DRAM_FRACTION`` of the model's whole-chip DRAM bandwidth, as DRAM traffic (the CSV's
  GB/s: DRAM bytes read + written / duration), for Llama-3.1-8B on N150 (``llama`` group, 1 chip: batch 1, 32 q / 8 kv
  heads, head_dim 128) at contexts ``GOAL_B_CONTEXTS``;
- (c) at the T3K per-chip shape (``llama`` group, 8 chips: batch 1, 4 q / 1 kv heads, head_dim 128) ours with
  max_cores_per_head_batch 64 no slower than with 16, at each context.

The whole-chip bandwidth is the timing model's own (:func:`chip_dram_gbs`: the calibration figure of 48 readers with
the best placement on NoC 0, modelled; its published value is the tt-isa-documentation's 267.5 GB/s).

    .venv/bin/python perf/goals.py [--csv perf/out/sweep.csv] [--out perf/out/sweep_summary.md]
    .venv/bin/python perf/sweep.py --table            # the same, printed
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

OURS, UPSTREAM = "ttflashdecode", "upstream sdpa_decode"  # the CSV's OP CODE values (perf/sweep.py)
DURATION = "DEVICE KERNEL DURATION [ns]"
GOAL_RATIO = 1.25
GOAL_CHIP_DRAM_FRACTION = 0.85
GOAL_B_CONTEXTS = (32768, 131072)  # inclusive range of kv_len
CHIP_DRAM_FIGURE = "chip_dram_bw_48_best_noc0"  # timing_calibration's whole-chip read figure (the highest published)


def chip_dram_gbs() -> tuple[float, str]:
    """The model's whole-chip DRAM bandwidth (GB/s, modelled) and a line saying where it comes from."""
    from ttflashdecode.emulator import timing_calibration

    fig = next(f for f in timing_calibration.FIGURES if f.key == CHIP_DRAM_FIGURE)
    m = fig.modelled()
    return m, (f"timing_calibration `{fig.key}` ({fig.what}): modelled {m:.1f} GB/s, published {fig.published:g} "
               f"GB/s {fig.source}")


# ---- reading the CSV -------------------------------------------------------------------------------------------


def _num(r: dict | None, col: str) -> float | None:
    v = (r or {}).get(col)
    return float(v) if v not in (None, "") else None


def pairs(rows: list[dict]) -> list[dict]:
    """One entry per shape (CSV order): its identifying fields, ours and upstream's rows (either may be None)."""
    out: dict[tuple, dict] = {}
    for r in rows:
        key = tuple(r[c] for c in ("GROUP", "CHIPS", "BATCH", "Q LEN", "Q HEADS", "KV HEADS", "HEAD DIM",
                                   "HEAD DIM V", "KV LEN", "MAX CORES PER HEAD"))  # fmt: skip
        p = out.setdefault(key, {"row": r, OURS: None, UPSTREAM: None})
        p[r["OP CODE"]] = r
    return list(out.values())


def _us(r: dict | None) -> float | None:
    ns = _num(r, DURATION)
    return ns / 1e3 if ns else None


def _ratio(p: dict) -> float | None:
    return _num(p[OURS], "RATIO TO UPSTREAM") if _us(p[OURS]) and _us(p[UPSTREAM]) else None


def _kv(n: int) -> str:
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def label(p: dict) -> str:
    r = p["row"]
    g, kv = r["GROUP"], _kv(int(r["KV LEN"]))
    heads = f"b{r['BATCH']} {r['Q HEADS']}q/{r['KV HEADS']}kv"
    d = r["HEAD DIM"] if r["HEAD DIM"] == r["HEAD DIM V"] else f"{r['HEAD DIM']}/{r['HEAD DIM V']}"
    cores = "" if r["MAX CORES PER HEAD"] == "default" else f", {r['MAX CORES PER HEAD']} cores/head"
    if g == "llama":
        chips = int(r["CHIPS"])
        where = {1: "N150 (1 chip)", 2: "N300 (2 chips)", 8: "T3K chip (8 chips)"}.get(chips, f"{chips} chips")
        return f"Llama-3.1-8B {where} {heads} d{d} {kv}{cores}"
    if g == "grid":
        return f"grid {heads} d{d} {kv}{cores}"
    if g == "mla":
        return f"MLA {heads} d{d} {kv}{cores}"
    return f"q_len {r['Q LEN']} {heads} d{d} {kv}{cores}"


_PLAN = re.compile(r"^plan: k_chunk_size (\d+), (\d+) cores per head, grid (\d+x\d+)(?:; )?")


def plan_of(r: dict | None) -> str:
    """Ours' plan as perf/sweep.py records it at the head of NOTE, short: k<k_chunk_size> N<cores per head> <grid>."""
    m = _PLAN.match((r or {}).get("NOTE", ""))
    return f"k{m[1]} N{m[2]} {m[3]}" if m else "-"


def note_of(r: dict | None) -> str:
    """NOTE without the plan."""
    return _PLAN.sub("", (r or {}).get("NOTE", ""))


def _f(x: float | None, spec: str, missing: str = "-") -> str:
    return format(x, spec) if x is not None else missing


# ---- the tables ------------------------------------------------------------------------------------------------


def side_by_side(ps: list[dict], chip_gbs: float) -> list[str]:
    notes: list[str] = []

    def mark(p: dict) -> str:
        marks = []
        for op in (OURS, UPSTREAM):
            n = note_of(p[op])
            if n:
                text = f"{'ours' if op == OURS else 'upstream'}: {n}"
                if text not in notes:
                    notes.append(text)
                marks.append(f"[{notes.index(text) + 1}]")
        return " " + "".join(marks) if marks else ""

    lines = [f"| shape | ours (us) | upstream (us) | ours GB/s | % of chip DRAM ({chip_gbs:.0f} GB/s) | "
             "ratio (upstream / ours) | ours' plan |", "|---|---:|---:|---:|---:|---:|---|"]
    for p in ps:
        o, u = p[OURS], p[UPSTREAM]
        gbs = _num(o, "GB/s")
        lines.append(f"| {label(p)}{mark(p)} | {_f(_us(o), '.1f', 'failed')} | {_f(_us(u), '.1f', 'failed')} | "
                     f"{_f(gbs, '.1f')} | {_f(gbs and 100 * gbs / chip_gbs, '.0f')}% | "
                     f"{_f(_ratio(p), '.3f')}x | {plan_of(o)} |")
    if notes:
        lines += [""] + [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    return lines


def goal_a(ps: list[dict], chip_gbs: float) -> tuple[list[str], str]:
    """Goal (a) row by row, with the ratio a kernel would reach moving ours' DRAM bytes at the whole chip's
    bandwidth: where even that is below the goal, no kernel can meet it in this model."""
    rows = [p for p in ps if p["row"]["GROUP"] == "grid"]
    if not rows:
        return [], "not evaluated (no `grid` rows in the CSV)"
    lines = ["| shape | ours (us) | upstream (us) | ratio | ratio at the chip's DRAM ceiling | goal (a) |",
             "|---|---:|---:|---:|---:|---|"]  # fmt: skip
    met = reachable = 0
    for p in rows:
        ratio = _ratio(p)
        ok = ratio is not None and ratio >= GOAL_RATIO
        up_us, nbytes = _us(p[UPSTREAM]), _num(p[OURS], "DRAM BYTES")
        ceiling = up_us * 1e3 / (nbytes / chip_gbs) if up_us and nbytes else None  # GB/s = bytes per ns
        can = ceiling is not None and ceiling >= GOAL_RATIO
        met += ok
        reachable += can
        verdict = "met" if ok else ("not met" if can else "not met (beyond the ceiling)")
        lines.append(f"| {label(p)} | {_f(_us(p[OURS]), '.1f', 'failed')} | {_f(up_us, '.1f', 'failed')} "
                     f"| {_f(ratio, '.3f')}x | {_f(ceiling, '.3f')}x | {verdict} |")
    ratios = [r for r in map(_ratio, rows) if r is not None]
    spread = f"; ratios {min(ratios):.3f}-{max(ratios):.3f}x" if ratios else ""
    return lines, (f"{'MET' if met == len(rows) else 'NOT MET'}: {met} of {len(rows)} rows at >= {GOAL_RATIO}x{spread}; "
                   f"{reachable} of {len(rows)} rows could reach it at all (ours' DRAM bytes at {chip_gbs:.1f} GB/s)")


def goal_b(ps: list[dict], chip_gbs: float) -> tuple[list[str], str]:
    lo, hi = GOAL_B_CONTEXTS
    rows = [p for p in ps if p["row"]["GROUP"] == "llama" and p["row"]["CHIPS"] == "1"
            and lo <= int(p["row"]["KV LEN"]) <= hi]
    need = GOAL_CHIP_DRAM_FRACTION * chip_gbs
    if not rows:
        return [], f"not evaluated (no 1-chip `llama` rows at {_kv(lo)}-{_kv(hi)} in the CSV)"
    lines = [f"| shape | ours (us) | ours GB/s | % of {chip_gbs:.1f} GB/s | upstream GB/s | goal (b): >= {need:.1f} "
             "GB/s |", "|---|---:|---:|---:|---:|---|"]
    met = 0
    for p in rows:
        gbs = _num(p[OURS], "GB/s")
        ok = gbs is not None and gbs >= need
        met += ok
        lines.append(f"| {label(p)} | {_f(_us(p[OURS]), '.1f', 'failed')} | {_f(gbs, '.1f')} | "
                     f"{_f(gbs and 100 * gbs / chip_gbs, '.1f')}% | {_f(_num(p[UPSTREAM], 'GB/s'), '.1f')} | "
                     f"{'met' if ok else 'not met'} |")
    fr = [g / chip_gbs for g in (_num(p[OURS], "GB/s") for p in rows) if g]
    spread = f"; {100 * min(fr):.1f}-{100 * max(fr):.1f}% of the chip" if fr else ""
    return lines, (f"{'MET' if met == len(rows) else 'NOT MET'}: {met} of {len(rows)} rows at >= "
                   f"{100 * GOAL_CHIP_DRAM_FRACTION:.0f}%{spread}")


def goal_c(ps: list[dict]) -> tuple[list[str], str]:
    t3k = [p for p in ps if p["row"]["GROUP"] == "llama" and p["row"]["CHIPS"] == "8"]
    by_ctx: dict[int, dict[str, dict]] = {}
    for p in t3k:
        by_ctx.setdefault(int(p["row"]["KV LEN"]), {})[p["row"]["MAX CORES PER HEAD"]] = p
    ctxs = sorted(c for c, d in by_ctx.items() if "16" in d and "64" in d)
    if not ctxs:
        return [], "not evaluated (no 8-chip `llama` rows with both 16 and 64 cores per head in the CSV)"
    lines = ["| context | ours 16 cores/head (us) | ours 64 (us) | ours 16 / 64 | ours' plans (16; 64) | "
             "upstream 16 (us) | upstream 64 (us) | goal (c): 64 no slower than 16 |",
             "|---|---:|---:|---:|---|---:|---:|---|"]
    met = 0
    for c in ctxs:
        a, b = by_ctx[c]["16"], by_ctx[c]["64"]
        t16, t64 = _us(a[OURS]), _us(b[OURS])
        ok = t16 is not None and t64 is not None and t64 <= t16
        met += ok
        lines.append(f"| {_kv(c)} | {_f(t16, '.1f', 'failed')} | {_f(t64, '.1f', 'failed')} | "
                     f"{_f(t16 / t64 if t16 and t64 else None, '.3f')} | {plan_of(a[OURS])}; {plan_of(b[OURS])} | "
                     f"{_f(_us(a[UPSTREAM]), '.1f', 'failed')} | "
                     f"{_f(_us(b[UPSTREAM]), '.1f', 'failed')} | {'met' if ok else 'not met'} |")
    same = [c for c in ctxs if plan_of(by_ctx[c]["16"][OURS]) == plan_of(by_ctx[c]["64"][OURS]) != "-"]
    caveat = (f" (at {', '.join(_kv(c) for c in same)} ours ran the same plan for both: the planner chose the group "
              "size)" if same else "")
    return lines, f"{'MET' if met == len(ctxs) else 'NOT MET'}: {met} of {len(ctxs)} contexts{caveat}"


def losses(ps: list[dict]) -> list[str]:
    lost = sorted((p for p in ps if _ratio(p) is not None and _ratio(p) < 1.0), key=_ratio)
    failed = [p for p in ps if _us(p[OURS]) is None or _us(p[UPSTREAM]) is None]
    lines = [f"- {label(p)}: {_ratio(p):.3f}x (ours {_us(p[OURS]):.1f} us, upstream {_us(p[UPSTREAM]):.1f} us)"
             for p in lost]
    lines += [f"- {label(p)}: no ratio ({'ours' if _us(p[OURS]) is None else 'upstream'} failed: "
              f"{((p[OURS] if _us(p[OURS]) is None else p[UPSTREAM]) or {}).get('NOTE', 'no row')})" for p in failed]
    return lines or ["- none: every shape in the CSV is at least upstream's speed"]


def _provenance(csv_path: Path) -> str:
    try:
        meta = json.loads(csv_path.with_suffix(".meta.json").read_text())
    except (OSError, ValueError):
        return "no sweep.meta.json beside the CSV: commit unknown"
    commits = meta.get("commits") or {meta.get("commit", "unknown"): "all"}
    at = ", ".join(f"{c} ({n} shapes)" if n != "all" else c for c, n in commits.items())
    wall = f", {meta['wall_s'] / 60:.0f} min wall" if meta.get("wall_s") else ""
    jobs = f", --jobs {meta['jobs']}" if meta.get("jobs") else ""
    return (f"measured at {at}; {meta.get('mode', '?')} run {meta.get('date_utc', '?')} UTC{jobs}{wall}"
            + (f"; WARNING: {meta['warning']}" if meta.get("warning") else ""))


def summary(csv_path: Path) -> str:
    with open(csv_path, newline="") as f:
        ps = pairs(list(csv.DictReader(f)))
    chip_gbs, chip_src = chip_dram_gbs()
    (la, sa), (lb, sb), (lc, sc) = goal_a(ps, chip_gbs), goal_b(ps, chip_gbs), goal_c(ps)
    la, lb, lc = (lines or [f"- {status}"] for lines, status in ((la, sa), (lb, sb), (lc, sc)))
    out = [
        f"## ttflashdecode vs upstream sdpa_decode, MODELLED (emulator timing model; `{csv_path.name}`)", "",
        f"Source: {csv_path} ({_provenance(csv_path)}). Whole-chip DRAM bandwidth: {chip_src}. "
        "GB/s = DRAM bytes read + written / DEVICE KERNEL DURATION; ratio = upstream's duration / ours (above 1: "
        "ours is faster).", "",
        "### Goals (issue 12)", "",
        f"- (a) >= {GOAL_RATIO}x upstream on the tech report's grid and kv_len scan: {sa}",
        f"- (b) >= {100 * GOAL_CHIP_DRAM_FRACTION:.0f}% of the model's whole-chip DRAM bandwidth ({chip_gbs:.1f} GB/s)"
        f" for Llama-3.1-8B on N150 at {_kv(GOAL_B_CONTEXTS[0])}-{_kv(GOAL_B_CONTEXTS[1])}: {sb}",
        f"- (c) T3K per-chip shape, 64 cores per head no slower than 16 at each context: {sc}", "",
        "### Side by side", "", *side_by_side(ps, chip_gbs), "",
        "### (a) tech report grid and scan", "", *la, "",
        "### (b) Llama-3.1-8B on N150 (one chip), DRAM bandwidth", "", *lb, "",
        "### (c) T3K per-chip shape, 64 vs 16 cores per head (ours)", "", *lc, "",
        "### Where ours loses (ratio < 1)", "", *losses(ps),
    ]  # fmt: skip
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=REPO / "perf" / "out" / "sweep.csv")
    ap.add_argument("--out", type=Path, help="also write the markdown here")
    args = ap.parse_args()
    text = summary(args.csv)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
