"""What the emulator's kernel compiles cost: how many distinct libraries each kernel source has in the kernel cache,
and what one compile of each costs in CPU seconds at the optimisation levels a kernel could be built at.

    nice -n 5 .venv/bin/python perf/kernel_compile_cost.py [--top 6] [--levels O2,O1,O0] [--cache DIR]

Part 1 (count, no compiler run): reads the metadata (``<key>.json``) the compiler writes next to every library in the
kernel cache (default: ``TTFD_CACHE_DIR`` or ``~/.cache/ttemu``; only read, never written) and counts, per
kernel source, the libraries built since the source's last commit (``git log -1``; sources no longer at their path are
left out), i.e. builds of the source's current text as far as a library's time tells, and how many distinct values
each varying flag takes among them. The count covers whatever ran on the machine with that cache since (the suite,
perf sweeps, tuning, other checkouts sharing the cache), so on a shared development machine it is an upper bound on
what a cold suite builds, not the suite's own count.

Part 2 (compile cost): for the ``--top`` sources with the most libraries, takes the newest library's flags and
compiles that source again into a temporary directory (never the cache), as compiler.py does (compute kernels in its
two steps: preprocess, then compile the ``.ii``), once with ``-fsyntax-only`` (the parse) and once per ``--levels``
entry, timing the child's CPU seconds (user + system: less sensitive to a shared machine than wall time, which is
printed beside it with the load average). Part 3 multiplies each source's library count by its per-compile CPU cost:
the cold compile CPU of the libraries counted in part 1, per level.

These are host compile costs of the emulator (not a model of any Tenstorrent timing).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ttemu import build as emu_build  # noqa: E402
from ttemu import compiler, jit_env  # noqa: E402


def _roots() -> list[tuple[str, str]]:
    return compiler.location_roots(None)


def _last_commit_time(source: Path) -> float:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%ct", "--", str(source)], capture_output=True, text=True
        ).stdout.strip()
        return float(out) if out else 0.0
    except OSError:
        return 0.0


def cache_entries(cache: Path) -> list[dict]:
    """Every library of the kernel cache with its metadata: source and flags (local paths), the library's mtime."""
    roots = _roots()
    found = []
    for meta in (cache / "kernels").glob("*.json"):
        lib = meta.with_suffix(".so")
        try:
            m = json.loads(meta.read_text())
            mtime = lib.stat().st_mtime
        except (OSError, ValueError):
            continue
        found.append(
            {
                "source": compiler.local_paths(m["source"], roots),
                "flags": [compiler.local_paths(f, roots) for f in m["flags"]],
                "mtime": mtime,
                "lib": lib,
            }
        )
    return found


def current_builds(entries: list[dict]) -> dict[str, list[dict]]:
    """Per source: the libraries built since the source's last commit (newest last)."""
    by_source = collections.defaultdict(list)
    for e in entries:
        by_source[e["source"]].append(e)
    current = {}
    for source, es in by_source.items():
        if not Path(source).is_file():  # a source since moved or deleted: its libraries are not the suite's now
            continue
        since = _last_commit_time(Path(source)) if Path(source).is_relative_to(ROOT) else 0.0
        kept = sorted((e for e in es if e["mtime"] >= since), key=lambda e: e["mtime"])
        if kept:
            current[source] = kept
    return current


def varying_flags(builds: list[dict]) -> dict[str, int]:
    """Flag name (a -D name, or 'generated headers' for the per-build generated directory) -> distinct values."""
    values = collections.defaultdict(set)
    for b in builds:
        names = set()
        for f in b["flags"]:
            if f.startswith("-D"):
                name, _, value = f[2:].partition("=")
                values[name].add(value)
                names.add(name)
            elif f.startswith("-I") and "/kernels/generated/" in f:
                values["generated headers"].add(f)
        for name in list(values):
            if name != "generated headers" and name not in names:
                values[name].add("<unset>")
    return {k: len(v) for k, v in sorted(values.items(), key=lambda kv: -len(kv[1])) if len(v) > 1}


def _cpu_run(cmd: list[str]) -> tuple[float, float, int]:
    """(child CPU seconds, wall seconds, return code) of one compiler run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if res.returncode != 0:
        sys.stderr.write(res.stderr[-2000:])
    return cpu, wall, res.returncode


def _with_level(flags: list[str], level: str) -> list[str]:
    return [f"-{level}" if re.fullmatch(r"-O[0-3sgz]", f) else f for f in flags]


def compile_cost(source: str, flags: list[str], levels: list[str], tmp: Path) -> dict[str, tuple[float, float]]:
    """{'preprocess' (compute only), 'parse', level...: (CPU s, wall s)} of compiling `source` with `flags`."""
    out: dict[str, tuple[float, float]] = {}
    compute = "-DCOMPILE_FOR_TRISC" in flags
    if compute:
        ii = tmp / "k.ii"
        cpu, wall, rc = _cpu_run([emu_build.CXX, *(f for f in flags if f != "-shared"), "-E", source, "-o", str(ii)])
        if rc != 0:
            return out
        ii.write_text(jit_env.host_compile_source(ii.read_text()))
        out["preprocess"] = (cpu, wall)
        base, src = jit_env.non_preprocessor_flags(flags), str(ii)
    else:
        base, src = list(flags), source
    syntax = [f for f in base if f not in ("-shared", "-g1", "-gz")]
    cpu, wall, rc = _cpu_run([emu_build.CXX, *syntax, "-fsyntax-only", src])
    out["parse"] = (cpu, wall)
    for level in levels:
        cpu, wall, rc = _cpu_run([emu_build.CXX, *_with_level(base, level), src, "-o", str(tmp / f"k-{level}.so")])
        if rc == 0:
            out[level] = (cpu, wall)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=emu_build.CACHE_ROOT, help="the cache to count (only read)")
    ap.add_argument("--top", type=int, default=6, help="time the sources with the most libraries (0: count only)")
    ap.add_argument("--levels", default="O2,O1,O0", help="optimisation levels to time, comma separated")
    args = ap.parse_args()
    levels = [lv.strip().lstrip("-") for lv in args.levels.split(",") if lv.strip()]

    current = current_builds(cache_entries(args.cache))
    total = sum(len(v) for v in current.values())
    print(f"kernel cache {args.cache}: {total} libraries of {len(current)} sources built since each source's last")
    print("commit (everything that ran with this cache since, not only the suite)")
    ranked = sorted(current.items(), key=lambda kv: -len(kv[1]))
    roots = _roots()
    for source, builds in ranked[:15]:
        var = ", ".join(f"{k} {n}" for k, n in list(varying_flags(builds).items())[:6])
        print(f"  {len(builds):5d}  {compiler.stable_paths(source, roots)}  (distinct values: {var})")

    if args.top <= 0:
        return
    print(f"\ncompile cost of one library (CPU s; wall s in brackets), load average {os.getloadavg()[0]:.2f} at start:")
    header = ["source", "libs", "preprocess", "parse", *levels]
    print("  " + " | ".join(header))
    cost_by_level = collections.Counter()
    timed_libs = 0
    with tempfile.TemporaryDirectory(prefix="ttfd-compile-cost-") as d:
        for source, builds in ranked[: args.top]:
            cost = compile_cost(source, builds[-1]["flags"], levels, Path(d))
            if not cost:
                print(f"  {Path(source).name}: the newest library's flags no longer compile; skipped")
                continue
            timed_libs += len(builds)
            cells = [Path(source).name, str(len(builds))]
            for key in ["preprocess", "parse", *levels]:
                cells.append(f"{cost[key][0]:.2f} ({cost[key][1]:.2f})" if key in cost else "-")
            print("  " + " | ".join(cells))
            pre = cost.get("preprocess", (0.0, 0.0))[0]
            for level in levels:
                if level in cost:
                    cost_by_level[level] += len(builds) * (pre + cost[level][0])
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    print(f"\ncold compile CPU of the {timed_libs} counted libraries of the timed sources (count x one compile's CPU):")
    for level in levels:
        secs = cost_by_level[level]
        print(f"  -{level}: {secs / 60:.1f} CPU min ({secs / 60 / 2:.1f} min wall on 2 cores at best)")


if __name__ == "__main__":
    main()
