"""Build the tuned table the default program config reads (``ttflashdecode/tuned/decode.json``, shipped in the
package): for each model in ``program_configs/`` on the boards it runs on, the per-chip decode shapes of its decode
loop, each with the config the emulator's timing model ranks fastest among the planner's candidates
(``ttflashdecode.tuning.choose``, the same as ``program_config="tune"``). Every duration in the file is MODELLED by
the emulator's timing model (docs/TIMING.md), not measured on silicon.

    nice -n 5 .venv/bin/python perf/build_tuned_table.py            # build (reuses the tuner's disk cache)
    .venv/bin/python perf/build_tuned_table.py --list               # the shapes, nothing run
    .venv/bin/python perf/build_tuned_table.py --check              # is the shipped table current for this tree?
    .venv/bin/python perf/build_tuned_table.py --plan-time          # host planning time of a first call (default)
    .venv/bin/python perf/build_tuned_table.py --summary            # the shipped table as markdown (docs/TUNING.md)

Shapes (per chip, bfloat8_b K/V cache, bfloat16 Q and output, one query token, causal; heads split over the board's
chips as the op splits them on a mesh). The batch sizes and cache lengths are ASSUMED, a small set a decode loop
commonly allocates (batch 1 and 32; caches of 4K-32K positions); a shape the table does not hold takes the rule:

* Llama-3.1-8B (32 q / 8 kv heads, head_dim 128) on N150 (1 chip, 8x8 grid), N300 (2 chips, 16 q / 4 kv heads each,
  8x7 grid), T3K (8 chips, 4 q / 1 kv head each, 8x7 grid) and P150 (1 Blackhole chip, 11x10 grid: its L1 budget and
  64-byte DRAM read alignment, the planner's inputs a P150 call passes; the candidates run on an emulated P150);
* Llama-3.1-70B (64 q / 8 kv heads, head_dim 128) on T3K (8 q / 1 kv head per chip) and Galaxy (kv heads over the
  8 mesh rows, users over the 4 columns: batch 32 -> 8 users of 8 q / 1 kv head per chip, 8x9 grid; batch 1 does not
  split over the columns, so it has no Galaxy entry); its weights do not fit the memory of an N150 or N300, so it has
  no entry there.

Shapes under the tuner's line (``tuning.RULE_MAX_KV_BYTES_PER_CORE`` of K/V per core) are recorded as the rule's
without runs. The tuner's disk cache (``$TTFLASHDECODE_AUTO_CACHE``, default ``~/.cache/ttflashdecode/auto``) keys
every choice by the kernels' and timing model's sources, so a re-run on an unchanged tree runs nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ttflashdecode import tuning  # noqa: E402
from ttflashdecode.device_arch import BLACKHOLE, WORMHOLE_B0, ChipFacts  # noqa: E402
from ttflashdecode.plan import DecodeShapes, plan  # noqa: E402
from ttflashdecode.plan import auto as plan_auto  # noqa: E402

# Per-chip compute grids of the emulated boards (ttemu.arch.GRIDS; a T3K chip is an N300 card's, a
# Galaxy chip is unharvested; a P150 presents 11x10). The count is the chips heads split over; a Galaxy splits over both
# mesh axes.
BOARDS = {"n150": (1, (8, 8)), "n300": (2, (8, 7)), "t3k": (8, (8, 7)), "galaxy": (8, (8, 9)), "p150": (1, (11, 10))}
# The chip of each board (ttflashdecode.device_arch): its L1 budget and DRAM read alignment are planner inputs, so an
# entry is keyed and planned with the values a call on that chip passes. Boards not listed are Wormhole B0.
BOARD_CHIP = {"p150": BLACKHOLE}
# Boards whose mesh also splits users: models/demos/llama3_70b_galaxy puts the kv heads over the (8, 4) mesh's 8 rows
# and the 32 users over its 4 columns; a batch that does not divide over the columns has no per-chip shape.
USER_SPLIT = {"galaxy": 4}
MODELS = {  # name: (q heads, kv heads, head_dim, boards it runs on)
    "llama-3.1-8b": (32, 8, 128, ("n150", "n300", "t3k", "p150")),
    "llama-3.1-70b": (64, 8, 128, ("t3k", "galaxy")),
}
BATCHES = (1, 32)
KV_LENS = {1: (8192, 32768), 32: (4096,)}  # ASSUMED decode-loop cache lengths per batch size


@dataclass(frozen=True)
class Entry:
    model: str
    board: str
    shapes: DecodeShapes
    grid: tuple[int, int]

    @property
    def chip(self) -> ChipFacts:
        return BOARD_CHIP.get(self.board, WORMHOLE_B0)

    @property
    def l1_budget(self) -> int:
        return self.chip.l1_budget

    @property
    def label(self) -> str:
        s = self.shapes
        return (
            f"{self.model} {self.board} b{s.batch} {s.n_q_heads}q/{s.n_kv_heads}kv d{s.head_dim} "
            f"{s.kv_len // 1024}K {s.k_dtype}"
        )


def entries(quick: bool = False) -> list[Entry]:
    out = []
    for model, (n_q, n_kv, d, boards) in MODELS.items():
        for board in boards:
            chips, grid = BOARDS[board]
            # One kv head (fewer than the chips) is replicated on every chip; else each chip takes 1/chips of them.
            chip_q, chip_kv = n_q // chips, max(1, n_kv // chips)
            users = USER_SPLIT.get(board, 1)
            for batch in BATCHES:
                if batch % users or batch < users:
                    continue
                for kv_len in KV_LENS[batch]:
                    s = DecodeShapes(
                        batch=batch // users,
                        n_q_heads=chip_q,
                        n_kv_heads=chip_kv,
                        head_dim=d,
                        kv_len=kv_len,
                        k_dtype="bfloat8_b",
                        v_dtype="bfloat8_b",
                        dram_alignment=BOARD_CHIP.get(board, WORMHOLE_B0).dram_alignment,
                    )
                    out.append(Entry(model, board, s, grid))
    if quick:
        out = [e for e in out if e.shapes.batch == 1 and e.shapes.kv_len == 8192]
    return out


def build(rows: list[Entry], keep: list[dict] = ()) -> dict:
    """The table of ``rows`` (each run through the tuner), with the entries ``keep`` of other shapes kept as they
    are. An entry records the kernel and model hashes it was chosen with and whether every candidate ran."""
    started = time.monotonic()
    table = []
    for i, e in enumerate(rows, 1):
        t0 = time.monotonic()
        tuning._HASHES.clear()  # the kernels may change between entries (a long build): each records its own
        before = tuning.stats()
        choice = tuning.choose(e.shapes, e.grid, l1_budget=e.l1_budget)
        after = tuning.stats()
        rule = plan(e.shapes, plan_auto.rule_config(e.grid), e.grid, l1_budget=e.l1_budget)
        rule_key = (e.grid, rule.k_chunk_size, rule.num_cores_per_head)
        rule_ns = next((ns for g, sk, n, ns in choice.durations if (tuple(g), sk, n) == rule_key), None)
        chosen_ns = choice.durations[0][3] if choice.durations else None
        table.append(
            {
                "label": e.label,
                "model": e.model,
                "board": e.board,
                "shapes": asdict(e.shapes),
                "grid": list(e.grid),
                "fp32_dest_acc": False,
                "l1_budget": e.l1_budget,
                "config": None if choice.config is None else asdict(choice.config),
                "decided_by": _decided_by(choice, rule, before, after),
                "kernel_source_hash": tuning.kernel_source_hash(),
                "model_hash": tuning.model_hash(),
                "kv_bytes_per_core": plan_auto.kv_bytes_per_core(rule),
                "modelled_ns": {"chosen": chosen_ns, "rule": rule_ns},
                "candidates_modelled_ns": [[list(g), sk, n, ns] for g, sk, n, ns in choice.durations],
            }
        )
        gain = f", {rule_ns / chosen_ns:.3f}x the rule (modelled)" if rule_ns and chosen_ns else ""
        print(
            f"[{i}/{len(rows)}] {e.label}: {table[-1]['decided_by']}, "
            f"{plan_auto.describe(choice.config) if choice.config else 'the rule'}{gain} "
            f"({choice.source}, {time.monotonic() - t0:.0f} s)",
            flush=True,
        )

    def key(t: dict) -> str:
        return plan_auto.table_key(DecodeShapes(**t["shapes"]), t["grid"], t["fp32_dest_acc"])

    ran = {key(t) for t in table}
    table += [t for t in keep if key(t) not in ran]
    order = {e.label: i for i, e in enumerate(entries())}
    table.sort(key=lambda t: order.get(t["label"], len(order)))
    return {
        "format": plan_auto.TABLE_FORMAT,
        "what": "per-chip decode shapes -> program config chosen by the emulator's timing model (MODELLED durations)",
        "command": "perf/build_tuned_table.py",
        "built": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "build_seconds": round(time.monotonic() - started, 1),
        "tuner_stats": tuning.stats(),
        "kernel_source_hash": tuning.kernel_source_hash(),
        "model_hash": tuning.model_hash(),
        "entries": table,
    }


def _decided_by(choice, rule_plan, before: dict, after: dict) -> str:
    """How an entry was decided: the tuner's line, every candidate modelled, or some candidates failing to run (the
    rule, or the fastest of those that ran: a build to repeat)."""
    if choice.source == "rule" and after["evaluations"] == before["evaluations"]:
        return "rule (under the tuner's line)"
    if choice.source == "rule":
        return "rule (no candidate ran: rebuild)"
    listed = len(plan_auto.candidates(rule_plan.shapes, rule_plan.grid, l1_budget=rule_plan.l1_budget))
    if len(choice.durations) < listed:
        return f"timing model, {len(choice.durations)} of {listed} candidates ran: rebuild"
    return "timing model"


def summary() -> int:
    """The shipped table as a markdown table (every duration MODELLED)."""
    data = plan_auto.load_table()
    print("| shape (per chip) | grid | chosen | chosen (us) | rule (us) | rule / chosen |")
    print("|---|---|---|---|---|---|")
    for e in data["entries"]:
        c, ns = e["config"], e["modelled_ns"]
        chosen = (
            "the rule"
            if c is None
            else (
                f"k{c['k_chunk_size']} N{c['max_cores_per_head_batch']} grid "
                f"{c['compute_with_storage_grid_size'][0]}x"
                f"{c['compute_with_storage_grid_size'][1]}"
            )
        )
        us = lambda v: "-" if v is None else f"{v / 1000:.1f}"  # noqa: E731
        gain = f"{ns['rule'] / ns['chosen']:.3f}x" if ns["rule"] and ns["chosen"] else "-"
        print(
            f"| {e['label']} | {e['grid'][0]}x{e['grid'][1]} | {chosen} | {us(ns['chosen'])} | {us(ns['rule'])} "
            f"| {gain} |"
        )
    print(
        f"\nModelled (emulator timing model, timing-only), built {data.get('built')} in "
        f"{data.get('build_seconds', 0) / 60:.0f} min; kernels {data.get('kernel_source_hash')}, model "
        f"{data.get('model_hash')}."
    )
    return 0


def check() -> int:
    """0 when the shipped table was built from this tree's kernels and timing model, 1 (and why) otherwise."""
    data = plan_auto.load_table()
    now = {"kernel_source_hash": tuning.kernel_source_hash(), "model_hash": tuning.model_hash()}
    stale = {k: (data.get(k), v) for k, v in now.items() if data.get(k) != v}
    for k, (was, is_) in stale.items():
        print(f"{k}: table built with {was}, tree has {is_}")
    # An --only build rewrites the file's hashes; the entries it kept still carry the ones they were chosen with.
    older = [e["label"] for e in data["entries"] if any(e.get(k) != v for k, v in now.items())]
    for label in older:
        print(f"chosen with other kernels or another timing model: {label}")
    stale = stale or older
    missing = [e.label for e in entries() if plan_auto.table_entry(e.shapes, e.grid) is None]
    for label in missing:
        print(f"not in the table: {label}")
    print("current" if not stale and not missing else "stale: re-run perf/build_tuned_table.py")
    return 1 if stale or missing else 0


PLAN_TIME_SCRIPT = """
import json, sys, time
import ttemu
from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper
from ttemu.ttnn_env import import_ttnn
from ttflashdecode.plan import DecodeShapes, auto
ttnn = import_ttnn()
dev = ttemu.open_device("n150")
shape = json.loads(sys.argv[1])
s = DecodeShapes(**shape)
wrapper = FlashDecodeWrapper(dev)  # program_config=None: the default
kw = dict(batch=s.batch, n_q_heads=s.n_q_heads, n_kv_heads=s.n_kv_heads, head_dim=s.head_dim, kv_len=s.kv_len,
          kv_dtype=getattr(ttnn, s.k_dtype))
t0 = time.perf_counter(); first = wrapper.plan(**kw); t1 = time.perf_counter()
wrapper.plan(**kw); t2 = time.perf_counter()
hit = auto.table_entry(s, (8, 8)) is not None
print(json.dumps({"hit": hit, "first_ms": (t1 - t0) * 1e3, "again_ms": (t2 - t1) * 1e3,
                  "k_chunk_size": first.k_chunk_size, "cores_per_group": first.num_cores_per_head}))
dev.close()
"""


def plan_time(repeats: int = 3) -> int:
    """Host time of ``FlashDecodeWrapper(device).plan(...)`` with the default config (no program_config) on an
    emulated N150, each in a fresh process (so the first call pays the table's load): a shape the table holds and
    one it does not; and the same call again (the device's plan table)."""
    import subprocess

    hit = next(e for e in entries() if e.board == "n150")
    unseen = DecodeShapes(
        batch=3, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=8192 + 96, k_dtype="bfloat8_b", v_dtype="bfloat8_b"
    )
    for label, s in (("table hit", hit.shapes), ("unseen shape", unseen)):
        runs = []
        for _ in range(repeats):
            done = subprocess.run(
                [sys.executable, "-c", PLAN_TIME_SCRIPT, json.dumps(asdict(s))],
                capture_output=True,
                text=True,
                cwd=REPO,
            )
            if done.returncode:
                raise RuntimeError(f"the timing process failed:\n{done.stderr[-3000:]}")
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        first = sorted(r["first_ms"] for r in runs)
        again = sorted(r["again_ms"] for r in runs)
        where = "in" if runs[0]["hit"] else "not in"
        print(
            f"{label} ({where} the table; plan k_chunk_size {runs[0]['k_chunk_size']}, "
            f"{runs[0]['cores_per_group']} cores per group): first call {first[0]:.1f}-{first[-1]:.1f} ms, "
            f"again {again[0]:.2f}-{again[-1]:.2f} ms ({repeats} fresh processes, host wall time)"
        )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the shapes and exit")
    ap.add_argument("--check", action="store_true", help="is the shipped table current for this tree?")
    ap.add_argument("--quick", action="store_true", help="batch 1 at 8K only (a smoke run)")
    ap.add_argument("--plan-time", action="store_true", help="host planning time of a first call (default config)")
    ap.add_argument("--summary", action="store_true", help="print the shipped table as markdown")
    ap.add_argument("--only", default="", help="rebuild only the shapes whose label contains this; keep the rest")
    ap.add_argument("--out", type=Path, default=plan_auto.TUNED_TABLE_PATH)
    args = ap.parse_args()
    if args.check:
        return check()
    if args.plan_time:
        return plan_time()
    if args.summary:
        return summary()
    rows = entries(args.quick)
    if args.list:
        for e in rows:
            print(e.label)
        return 0
    keep = []
    if args.only:
        rows = [e for e in rows if args.only in e.label]
        keep = plan_auto.load_table(args.out)["entries"] if args.out.exists() else []
        for t in keep:
            t.pop("index", None)
    data = build(rows, keep)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out}: {len(rows)} shapes in {data['build_seconds']:.0f} s; tuner: {data['tuner_stats']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
