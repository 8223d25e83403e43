"""Issue 24's decode rows on two source trees, on this machine in one run: how much faster the emulator got.

    git archive a98c37e | tar -x -C /tmp/before24      # the tree issue 24 was filed against
    .venv/bin/python perf/emulator_before_after.py --before /tmp/before24 [--rounds 3] [--rows b8-8k,tune]

Each measurement is a fresh process with ``PYTHONPATH=<tree>`` (that tree's ttflashdecode and emulator, this venv's
ttnn and torch), the trees alternated row by row so that both see the same load. A row is one warm Llama-3.1-8B decode
call (32 q / 8 kv heads, d128, bfloat8_b K/V, every user at the last position, each tree's default program config;
a first, untimed call compiles and plans) or, for ``tune``, ``program_config="tune"`` choosing for the b8 8K shape with
its kernels compiled. It prints each tree's median wall seconds and the CPU seconds of the call's emulator children
(user + system: what the call cost whatever else ran), the MODELLED duration each tree's program has (the op's
kernels changed between trees too: the programs differ), and each tree's timing-only speed-up over its full b8 8K call.

The tree before the emulator became its own package (``ttflashdecode.emulator``, the op's stats on
``ttflashdecode.op.last_run``) is run through the names it had then; nothing else of it is assumed. For the same
reason the measuring side imports nothing of this tree's perf/ (perf/harness.py puts this tree first on sys.path, and
emulator_throughput.py's rows run through it): a worker must run the tree on its PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

ROWS = {  # name -> (label, batch, kv_len, timing_only); None: the tuner
    "b1-8k": ("Llama-3.1-8B b1 8K, one decode call", 1, 8192, False),
    "b8-8k": ("Llama-3.1-8B b8 8K, one decode call", 8, 8192, False),
    "b1-32k": ("Llama-3.1-8B b1 32K, one decode call", 1, 32768, False),
    "b8-8k-timing": ("Llama-3.1-8B b8 8K, timing-only", 8, 8192, True),
    "tune": ("Llama-3.1-8B b8 8K, tune (all candidates)", None, None, None),
}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def emulator_modules():
    """(the emulator package, import_ttnn) of the tree on PYTHONPATH, under the names that tree uses."""
    try:
        from ttflashdecode.ttnn_env import import_ttnn

        from ttflashdecode import emulator  # the tree before ttemu
    except ImportError:
        import ttemu as emulator
        from ttemu.ttnn_env import import_ttnn
    return emulator, import_ttnn


def measure_decode(batch: int, kv_len: int, timing_only: bool) -> tuple[float, float, float]:
    """(wall s, children's CPU s, modelled us) of one warm decode call on this process's tree."""
    import torch

    import ttflashdecode

    emulator, import_ttnn = emulator_modules()
    ttnn = import_ttnn()
    dev = emulator.open_device("n150", timing_only=timing_only)
    g = torch.Generator().manual_seed(24)
    hq, hkv, d = 32, 8, 128
    q = dev.from_torch(torch.randn(1, batch, hq, d, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    if timing_only:
        k, v = (dev.empty((batch, hkv, kv_len, d), ttnn.bfloat8_b) for _ in range(2))
    else:
        shape = (batch, hkv, kv_len, d)
        k, v = (
            dev.from_torch(torch.randn(*shape, generator=g), dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT)
            for _ in range(2)
        )
    pos = [kv_len - 1] * batch
    ttflashdecode.scaled_dot_product_attention_decode(q, k, v, cur_pos=pos).deallocate()  # compile, plan
    cpu0, t0 = children_cpu(), time.perf_counter()
    if hasattr(ttflashdecode, "op"):  # the tree before: the last call's result on ttflashdecode.op
        ttflashdecode.scaled_dot_product_attention_decode(q, k, v, cur_pos=pos)
        stats = ttflashdecode.op.last_run.stats
    else:
        stats = ttflashdecode.scaled_dot_product_attention_decode(q, k, v, cur_pos=pos, return_stats=True)[1].stats
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    dev.close()
    return wall, cpu, stats.duration_ns / 1000


def measure_tune() -> tuple[float, float, float]:
    """(wall s, children's CPU s, modelled us of the choice) of the tuner choosing for the b8 8K shape, its kernels
    compiled by a first, untimed choice; the tuner's disk cache a private, emptied directory."""
    from ttflashdecode import tuning
    from ttflashdecode.plan.shapes import DecodeShapes

    shapes = DecodeShapes(
        batch=8, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=8192, k_dtype="bfloat8_b", v_dtype="bfloat8_b"
    )
    with tempfile.TemporaryDirectory(prefix="tune-") as cache:
        os.environ[tuning.AUTO_CACHE_ENV_VAR] = cache
        tuning.clear(memory_only=False)
        tuning.choose(shapes, (8, 8))
        tuning.clear(memory_only=False)
        cpu0, t0 = children_cpu(), time.perf_counter()
        choice = tuning.choose(shapes, (8, 8))
        return time.perf_counter() - t0, children_cpu() - cpu0, choice.durations[0][3] / 1000


def run_row(tree: Path, row: str) -> tuple[float, float, float]:
    """One measurement of ``row`` in a fresh process on ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", row]
    out = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("MEASURED ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{row} on {tree} failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    wall, cpu, modelled = (float(x) for x in lines[-1].split()[1:])
    return wall, cpu, modelled


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="the source tree to compare with (a `git archive` export)")
    ap.add_argument("--after", type=Path, default=REPO, help="the newer tree (default: this one)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of: {', '.join(ROWS)}")
    ap.add_argument("--measure", choices=sorted(ROWS), help=argparse.SUPPRESS)  # worker mode: one row, this tree
    args = ap.parse_args()
    if args.measure:
        _, batch, kv_len, timing_only = ROWS[args.measure]
        r = measure_tune() if batch is None else measure_decode(batch, kv_len, timing_only)
        print("MEASURED " + " ".join(f"{x:.4f}" for x in r), flush=True)
        return
    if args.before is None:
        ap.error("--before is required: the tree to compare with")
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        ap.error(f"--rows: unknown {unknown}; expected some of {list(ROWS)}")
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    got = {(t, r): [] for t in trees for r in rows}
    load0 = os.getloadavg()[0]
    for _ in range(args.rounds):
        for row in rows:
            for name, tree in trees.items():
                got[name, row].append(run_row(tree, row))
    load1 = os.getloadavg()[0]

    def med(name, row, i):
        return statistics.median(m[i] for m in got[name, row])

    print(f"issue 24 before/after on this machine: before = {trees['before']}, after = {trees['after']}")
    print(f"{args.rounds} rounds, trees alternated; 1-minute load average {load0:.1f} at the start, {load1:.1f} at end")
    print(
        f"{'run':<44}{'wall s before':>15}{'after':>8}{'child CPU s before':>20}{'after':>8}{'x (CPU)':>9}"
        f"{'modelled us before':>20}{'after':>8}"
    )
    for row in rows:
        cpu_b, cpu_a = med("before", row, 1), med("after", row, 1)
        print(
            f"{ROWS[row][0]:<44}{med('before', row, 0):>15.2f}{med('after', row, 0):>8.2f}{cpu_b:>20.2f}{cpu_a:>8.2f}"
            f"{cpu_b / cpu_a:>9.1f}{med('before', row, 2):>20.1f}{med('after', row, 2):>8.1f}"
        )
    if {"b8-8k", "b8-8k-timing"} <= set(rows):
        for name in trees:
            full, timing = med(name, "b8-8k", 0), med(name, "b8-8k-timing", 0)
            print(f"{name}: the timing-only b8 8K call {full / timing:.1f}x faster than the full one (median walls)")
    print("wall s: the call's wall time (median); child CPU s: its emulator children's CPU (median); x: before / after")


if __name__ == "__main__":
    main()
