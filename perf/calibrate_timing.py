"""Calibration of the emulator's timing model through the WIRED emulator (docs/TIMING.md, issue 12 item 2).

Every figure this prints is MODELLED (no Wormhole card here), set beside the published silicon figure it is meant to
reproduce:

1. the data-movement table of ``ttemu.timing_calibration`` as the standalone model computes it, and
   its one-core DRAM read rows again through the emulator (a real kernel, ttemu/tests/kernels/dataflow/
   timing_dram_read.cpp, on core (0,0) reading bank 0 over NoC 0, as tt-metal's DRAM packet-size test does);
2. upstream's sdpa_decode (the wheel's kernels, ``ttflashdecode.upstream``) at its published Llama-3.1-70B decode
   point: one Galaxy chip, 8 users, 8 q / 1 kv heads, head_dim 128, bfloat8_b paged cache (block 32), position 127:
   9.07-10.20 us per op (tt-metal models/demos/llama3_70b_galaxy perf targets; /work/shared/WORMHOLE.md), and ours
   on the same call;
3. upstream's sdpa_decode against the FlashDecode tech report (calibration.OP_POINTS): its best bandwidth,
   "up to 180 GB/s" (section 4.1, batch 32 / kv_len 128K / head_dim 64-256 here), and its T3K finding that 16 cores
   per head beat 64 for the Llama-3.1-8B per-chip shape (section 4.2, contexts 8K / 32K / 128K here). These run on a
   timing-only device (same durations as a full run, tests/test_timing_only.py) and take minutes.

    .venv/bin/python perf/calibrate_timing.py [--skip-table] [--skip-report]
    .venv/bin/python perf/calibrate_timing.py --markdown [--out perf/out/calibration.md]   # the resolving note's table
    .venv/bin/python perf/calibrate_timing.py --heldout [--variants] [--skip-report] [--out docs/...]
    .venv/bin/python perf/calibrate_timing.py --cost        # what flow control costs the replay (CPU s, host)
    .venv/bin/python perf/calibrate_timing.py --arch blackhole [--out ...]  # Blackhole's table (docs/BLACKHOLE.md)

``--arch blackhole`` prints the Blackhole calibration table of docs/BLACKHOLE.md (section 3): every published Blackhole
figure (``timing_calibration.BH_FIGURES``), whether a Blackhole constant was fitted to it (``BH_IN_SAMPLE``) or not
(held out), the modelled value and error (variant nominal), the smallest and largest modelled value over Blackhole's
variants (``timing.variant_names("blackhole")``), and the one-core DRAM reads again through the wired emulator on an
emulated P150 (the real kernel ttemu/tests/kernels/dataflow/timing_dram_read.cpp, as the Wormhole table runs it).

``--heldout`` prints the held-out validation table of docs/TIMING.md (section 4): every published figure, whether a
constant was fitted to it (``timing_calibration.IN_SAMPLE``: in-sample) or not (held out), and the modelled value and
error without flow control (variant ``no_flow_control``, the model before it) and with it (``nominal``); with
``--variants`` also the smallest and largest modelled value over every variant of the model
(``ttemu.timing.variant_names()``). Results are cached per (variant, figure) in
``perf/out/heldout_cache.json`` keyed by the model's sources, so an interrupted run resumes.

``--markdown`` prints ONE table instead of the sections: every figure (the standalone model's data-movement and matmul
figures, the one-core DRAM reads again through the wired emulator, and upstream's sdpa_decode points of
``calibration.OP_POINTS``, each run the way the calibration test runs it) with its published value and
source, the modelled value, the error, the tolerance and pass/FAIL. The sdpa_decode points take most of the time
(about 10 minutes on the shared 2-core machine, most of it the three batch-32 x 128K calls); ``--skip-report``
leaves the two tech-report points out (about a minute).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import harness
import torch

import ttemu
import ttflashdecode
from ttemu import timing_calibration
from ttflashdecode import upstream
from ttflashdecode.upstream import calibration

REPO = harness.REPO
ttnn = harness.ttnn()
KERNEL = REPO / "ttemu" / "tests" / "kernels" / "dataflow" / "timing_dram_read.cpp"
LLAMA70B_PUBLISHED_US = (9.07, 10.20)

# (figure key, bytes per read, reads) of the one-core DRAM read rows the emulator path reproduces.
DRAM_ROWS = [(f"dram_read_latency_{n}B", n, 1) for n in (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)] + [
    ("dram_read_issue_bound", 32, 256),
    ("dram_read_bw_one_core", 8192, 256),
]


def _core_set(x, y):
    return ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(x, y), ttnn.CoreCoord(x, y))])


def dram_read_through_emulator(dev, src, nbytes: int, count: int, cb_bytes: int = 8192) -> float:
    """Time from the reader's start to its barrier's return, modelled on the emulator, in ns (cycles on Wormhole's
    1 GHz clock; cb_bytes: the CB the reads land in, at least nbytes)."""
    cores = _core_set(0, 0)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            ttnn.KernelDescriptor(
                kernel_source=str(KERNEL),
                core_ranges=cores,
                compile_time_args=[],
                runtime_args=[(ttnn.CoreCoord(0, 0), [src.buffer_address(), nbytes, count])],
                config=ttnn.ReaderConfigDescriptor(),
            )
        ],
        semaphores=[],
        cbs=[
            ttnn.CBDescriptor(
                total_size=cb_bytes,
                core_ranges=cores,
                format_descriptors=[
                    ttnn.CBFormatDescriptor(buffer_index=0, data_format=ttnn.bfloat16, page_size=cb_bytes)
                ],
            )
        ],
    )
    stats = dev.generic_op([src], pd)
    r = stats.timing.cores["0,0"]["NCRISC"]
    return r.end - r.start


def print_table(dev) -> None:
    figs = {f.key: f for f in timing_calibration.FIGURES}
    print("## Data movement and matmul: standalone model (timing_calibration.FIGURES), modelled vs published\n")
    print("| figure | published | modelled | error | tolerance |")
    print("|---|---|---|---|---|")
    for f in timing_calibration.FIGURES:
        m = f.modelled()
        print(f"| {f.what} | {f.published:g} {f.unit} | {m:.5g} | {f.error(m):+.1%} | {f.tolerance:.0%} |")
    torch.manual_seed(5)
    # bank 0: 4 pages (8 KB) back to back
    src = harness.tile(dev, torch.randn(32, 32 * 48))
    print("\n## One-core DRAM reads through the wired emulator (real kernel), modelled vs published\n")
    print("| figure | published | emulator (modelled) | error | standalone model |")
    print("|---|---|---|---|---|")
    for key, nbytes, count in DRAM_ROWS:
        f = figs[key]
        cycles = dram_read_through_emulator(dev, src, nbytes, count)
        got = count * nbytes / cycles if f.unit == "B/cycle" else cycles
        print(f"| {f.what} | {f.published:g} {f.unit} | {got:.4g} | {f.error(got):+.1%} | {f.modelled():.4g} |")
    src.deallocate()


def llama70b_decode(dev, block_size: int = 32, position: int = 127, grid=(8, 8)):
    """Upstream's and our paged decode at the published Llama-3.1-70B Galaxy per-chip point; returns both stats."""
    g = torch.Generator().manual_seed(70)
    b, hq, hkv, d = 8, 8, 1, 128
    blocks_per_user = 256 // block_size  # room for 256 positions a user; the call reads up to position 127
    num_blocks = b * blocks_per_user
    q = torch.randn(1, b, hq, d, generator=g)
    k = torch.randn(num_blocks, hkv, block_size, d, generator=g)
    v = torch.randn(num_blocks, hkv, block_size, d, generator=g)
    page_table = torch.randperm(num_blocks, generator=g).reshape(b, blocks_per_user).to(torch.int32)
    tq = harness.tile(dev, q)
    tk, tv = (harness.tile(dev, x, "bfloat8_b") for x in (k, v))
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(*grid),
        q_chunk_size=0,
        k_chunk_size=0,
        max_cores_per_head_batch=16,
    )
    kwargs = dict(cur_pos=[position] * b, program_config=config)
    theirs = harness.decode(tq, tk, tv, page_table, op=upstream.paged_scaled_dot_product_attention_decode, **kwargs)
    ours = harness.decode(tq, tk, tv, page_table, op=ttflashdecode.paged_scaled_dot_product_attention_decode, **kwargs)
    return theirs.stats, ours.stats


def print_llama70b(dev) -> None:
    lo, hi = LLAMA70B_PUBLISHED_US
    print("\n## Upstream sdpa_decode at its published point (modelled DEVICE KERNEL DURATION)\n")
    print(
        "Llama-3.1-70B decode, one chip: 8 users, 8 q / 1 kv heads, head_dim 128, bfloat8_b paged (block 32), "
        "position 127, 8x8 grid, k_chunk_size 0 (dynamic), max_cores_per_head_batch 16\n"
    )
    theirs, ours = llama70b_decode(dev)
    print("| op | published | modelled | error vs published range |")
    print("|---|---|---|---|")
    for name, st in (("upstream sdpa_decode", theirs), ("ttflashdecode", ours)):
        us = st.duration_ns / 1000 if st.duration_ns is not None else float("nan")
        err = 0.0 if lo <= us <= hi else (us - lo) / lo if us < lo else (us - hi) / hi
        pub = f"{lo}-{hi} us" if name.startswith("upstream") else "-"
        print(f"| {name} | {pub} | {us:.2f} us | {err:+.1%} |" if pub != "-" else f"| {name} | - | {us:.2f} us | - |")
        if st.timing is not None and not st.timing.ok:
            print(f"  replay error: {st.timing.error}")


def print_report_points(dev, shapes=calibration.REPORT_PEAK_SHAPES, contexts=calibration.T3K_CONTEXTS) -> None:
    """The tech report's figures: model vs published, error per figure, with the runs behind each."""
    points = {p.key: p for p in calibration.OP_POINTS}
    print("\n## Upstream sdpa_decode against the FlashDecode tech report (modelled, timing-only device)\n")
    print(
        "Bandwidth by the report's formula (2 * b * d * n_kv * kv_len bytes / duration), 8 q / 1 kv heads, "
        "bfloat8_b K/V, causal at the last position, default grid and dynamic k_chunk:\n"
    )
    print("| batch | head_dim | kv_len | modelled duration | report GB/s | DRAM GB/s (all bytes moved) |")
    print("|---|---|---|---|---|---|")
    best = 0.0
    for b, d, s in shapes:
        st = calibration.upstream_decode(dev, batch=b, n_q_heads=8, n_kv_heads=1, head_dim=d, kv_len=s)
        gbs = 2 * b * d * s / st.duration_ns
        best = max(best, gbs)
        moved = (st.dram_read_bytes + st.dram_write_bytes) / st.duration_ns
        print(f"| {b} | {d} | {s} | {st.duration_ns / 1e3:.1f} us | {gbs:.1f} | {moved:.1f} |", flush=True)
    print("\nT3K per-chip Llama-3.1-8B shape (batch 1, 4 q / 1 kv heads, head_dim 128), dynamic k_chunk:\n")
    print("| context | 16 cores per head | 64 cores per head | 64 / 16 |")
    print("|---|---|---|---|")
    ratios = []
    for ctx in contexts:
        t = {
            c: calibration.upstream_decode(
                dev, batch=1, n_q_heads=4, n_kv_heads=1, head_dim=128, kv_len=ctx, max_cores=c
            ).duration_ns
            for c in (16, 64)
        }
        ratios.append(t[64] / t[16])
        print(f"| {ctx} | {t[16] / 1e3:.1f} us | {t[64] / 1e3:.1f} us | {t[64] / t[16]:.3f} |", flush=True)
    galaxy = calibration.llama70b_galaxy_us(dev)
    modelled = {"sdpa_llama70b_galaxy": galaxy, "sdpa_report_peak_gbs": best, "sdpa_t3k_16_beats_64": min(ratios)}
    print("\n| figure | published | modelled | error | tolerance | source |")
    print("|---|---|---|---|---|---|")
    for key, m in modelled.items():
        p = points[key]
        flag = "" if abs(p.error(m)) <= p.tolerance else " OUT OF TOLERANCE"
        print(
            f"| {p.what} | {p.published_text()} {p.unit} | {m:.3g} | {p.error(m):+.1%}{flag} | {p.tolerance:.0%} | "
            f"{p.source} |"
        )
    print("\n(T3K: modelled = the smallest 64/16 ratio over the contexts above; the finding holds where it is > 1)")


# ---- one table (--markdown) -------------------------------------------------------------------------------------


def _num(x: float) -> str:
    """Cycles and other large counts as integers, small values to 4 significant digits (no exponent notation)."""
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _row(what: str, published: str, source: str, modelled: str, error: float, tolerance: float, note: str = "") -> dict:
    return {
        "what": what,
        "published": published,
        "source": source,
        "modelled": modelled,
        "error": error,
        "tolerance": tolerance,
        "pass": abs(error) <= tolerance + 1e-12,
        "note": note,
    }


def calibration_rows(dev, fast, report: bool, peak_shapes, contexts) -> list[dict]:
    """Every figure, modelled vs published: the standalone model's FIGURES, the one-core DRAM reads through the wired
    emulator (a real kernel on `dev`), and upstream's sdpa_decode OP_POINTS measured on the timing-only `fast`
    device the way tests/test_upstream_calibration.py measures them."""
    rows = []
    figs = {f.key: f for f in timing_calibration.FIGURES}
    for f in timing_calibration.FIGURES:
        m = f.modelled()
        spread = ""
        if f.draws:
            d = f.draws()
            spread = f" (draws {min(d):.0f}-{max(d):.0f})"
        rows.append(
            _row(f.what, f"{f.published:g} {f.unit}", f.source, f"{_num(m)}{spread}", f.error(m), f.tolerance, f.note)
        )
    torch.manual_seed(5)
    src = harness.tile(dev, torch.randn(32, 32 * 48))
    try:
        for key, nbytes, count in DRAM_ROWS:
            f = figs[key]
            cycles = dram_read_through_emulator(dev, src, nbytes, count)
            got = count * nbytes / cycles if f.unit == "B/cycle" else cycles
            rows.append(
                _row(
                    f"{f.what}, through the wired emulator (real kernel)",
                    f"{f.published:g} {f.unit}",
                    f.source,
                    _num(got),
                    f.error(got),
                    f.tolerance,
                    f.note,
                )
            )
    finally:
        src.deallocate()
    points = {p.key: p for p in calibration.OP_POINTS}
    measured = {"sdpa_llama70b_galaxy": lambda: calibration.llama70b_galaxy_us(fast)}
    if report:
        measured["sdpa_report_peak_gbs"] = lambda: calibration.report_peak_gbs(fast, peak_shapes)
        measured["sdpa_t3k_16_beats_64"] = lambda: min(calibration.t3k_64_over_16(fast, c) for c in contexts)
    for key, measure in measured.items():
        p = points[key]
        m = measure()
        what = p.what + (
            f" (smallest over contexts {', '.join(f'{c // 1024}K' for c in contexts)})"
            if key == "sdpa_t3k_16_beats_64"
            else ""
        )
        rows.append(_row(what, f"{p.published_text()} {p.unit}", p.source, f"{m:.3g}", p.error(m), p.tolerance, p.note))
    return rows


def markdown(rows: list[dict]) -> str:
    notes: list[str] = []
    lines = ["| figure | published | source | modelled | error | tolerance | pass |", "|---|---|---|---|---:|---:|---|"]
    for r in rows:
        mark = ""
        if r["note"]:
            if r["note"] not in notes:
                notes.append(r["note"])
            mark = f" [{notes.index(r['note']) + 1}]"
        lines.append(
            f"| {r['what']}{mark} | {r['published']} | {r['source']} | {r['modelled']} | {r['error']:+.1%} | "
            f"{r['tolerance']:.0%} | {'pass' if r['pass'] else 'FAIL'} |"
        )
    passed = sum(r["pass"] for r in rows)
    lines += [
        "",
        f"{passed} of {len(rows)} figures within tolerance (all modelled values from the emulator's timing "
        "model; sdpa_decode points: the wheel's kernels through ttflashdecode.upstream, timing-only device).",
    ]
    lines += [""] + [f"[{i + 1}] {n}" for i, n in enumerate(notes)] if notes else []
    sources = "\n".join(
        module.__doc__.split("Sources:")[1].split("\n\n")[0].strip("\n") for module in (timing_calibration, calibration)
    )
    where = "ttemu/timing_calibration.py, ttflashdecode/upstream/calibration.py"
    return "\n".join(lines + ["", f"Sources ({where}):", "", "```", sources, "```"])


# ---- held-out validation (--heldout) ----------------------------------------------------------------------------
HELDOUT_CACHE = harness.OUT / "heldout_cache.json"


def _model_key() -> str:
    """Digest of everything a modelled figure depends on: the timing model and the calibration's benchmarks."""
    import hashlib

    h = hashlib.sha256()
    for rel in (
        "ttemu/include/emu/timing.h",
        "ttemu/include/emu/timing_engine.h",
        "ttemu/timing_calibration.py",
        "ttflashdecode/upstream/calibration.py",
    ):
        h.update((REPO / rel).read_bytes())
    return h.hexdigest()[:16]


def _heldout_figures(report: bool, peak_shapes, contexts, sdpa: bool = True):
    """(key, what, published text, unit, source, measure(fast) -> float, error(m) -> float) of every figure;
    sdpa False: the data-movement and matmul figures only."""
    out = []
    for f in timing_calibration.FIGURES:
        out.append((f.key, f.what, f"{f.published:g} {f.unit}", f.source, (lambda fast, f=f: f.modelled()), f.error))
    if not sdpa:
        return out
    points = {p.key: p for p in calibration.OP_POINTS}
    measures = {"sdpa_llama70b_galaxy": lambda fast: calibration.llama70b_galaxy_us(fast)}
    if report:
        measures["sdpa_report_peak_gbs"] = lambda fast: calibration.report_peak_gbs(fast, peak_shapes)
        measures["sdpa_t3k_16_beats_64"] = lambda fast: min(calibration.t3k_64_over_16(fast, c) for c in contexts)
    for key, m in measures.items():
        p = points[key]
        what = p.what + (
            f" (smallest over {', '.join(f'{c // 1024}K' for c in contexts)})" if key == "sdpa_t3k_16_beats_64" else ""
        )
        out.append((key, what, f"{p.published_text()} {p.unit}", p.source, m, p.error))
    return out


def heldout_values(variants: list[str], report: bool, peak_shapes, contexts, fast, sdpa: bool = True) -> dict:
    """{variant: {figure key: modelled}} for every figure, from the cache where the model has not changed."""
    import json

    from ttemu import timing

    key = _model_key()
    cache = json.loads(HELDOUT_CACHE.read_text()) if HELDOUT_CACHE.exists() else {}
    if cache.get("model") != key:
        cache = {"model": key, "values": {}}
    figs = _heldout_figures(report, peak_shapes, contexts, sdpa)

    def cache_key(fkey: str) -> str:  # the sdpa points depend on the contexts / head dims they were run at
        return (
            fkey
            + (f"@{','.join(map(str, contexts))}" if fkey == "sdpa_t3k_16_beats_64" else "")
            + (f"@{','.join(str(d) for _, d, _ in peak_shapes)}" if fkey == "sdpa_report_peak_gbs" else "")
        )

    for v in variants:
        vals = cache["values"].setdefault(v, {})
        with timing.variant_env(v):
            for fkey, _, _, _, measure, _ in figs:
                ck = cache_key(fkey)
                if ck not in vals:
                    t0 = time.monotonic()
                    vals[ck] = measure(fast)
                    print(
                        f"  [{v}] {fkey}: {vals[ck]:.5g} ({time.monotonic() - t0:.1f} s)", file=sys.stderr, flush=True
                    )
                    HELDOUT_CACHE.parent.mkdir(parents=True, exist_ok=True)
                    HELDOUT_CACHE.write_text(json.dumps(cache, indent=1))
    return {v: {fkey: cache["values"][v][cache_key(fkey)] for fkey, *_ in figs} for v in variants}


def heldout_markdown(values: dict, report: bool, peak_shapes, contexts, sdpa: bool = True) -> str:
    from ttemu.timing import NOMINAL

    figs = _heldout_figures(report, peak_shapes, contexts, sdpa)
    with_variants = len(values) > 2
    head = "| figure | published | source | fitted to it | no flow control | error | flow control (nominal) | error |"
    rule = "|---|---|---|---|---:|---:|---:|---:|"
    if with_variants:
        head += " min-max over the variants |"
        rule += "---|"
    lines = [head, rule]
    errs = {"in": {"no_flow_control": [], NOMINAL: []}, "out": {"no_flow_control": [], NOMINAL: []}}
    for fkey, what, published, source, _, error in figs:
        fitted = timing_calibration.IN_SAMPLE.get(fkey, "")
        role = "in" if fitted else "out"
        cells = []
        for v in ("no_flow_control", NOMINAL):
            m = values[v][fkey]
            errs[role][v].append(abs(error(m)))
            cells += [_num(m), f"{error(m):+.1%}"]
        row = f"| {what} | {published} | {source} | {fitted or '**held out**'} | " + " | ".join(cells) + " |"
        if with_variants:
            ms = [values[v][fkey] for v in values]
            row += f" {_num(min(ms))}-{_num(max(ms))} |"
        lines.append(row)
    lines.append("")
    for role, name in (("in", "in-sample"), ("out", "held out")):
        for v in ("no_flow_control", NOMINAL):
            e = errs[role][v]
            if e:
                lines.append(
                    f"- {name}, {v}: {len(e)} figures, median |error| {100 * sorted(e)[len(e) // 2]:.1f}%, "
                    f"largest {100 * max(e):.1f}%"
                )
    if with_variants:
        lines.append(f"- variants: {', '.join(values)}")
    return "\n".join(lines)


def decode_cost() -> None:
    """Ours and upstream's sdpa_decode at Llama-3.1-8B on one chip (batch 1, 32 q / 8 kv heads, head_dim 128,
    bfloat8_b, 32K positions, non-paged, each op's default config) on a timing-only device, without and with flow
    control: modelled duration and host wall time of the call (kernels compiled beforehand)."""
    from ttemu import timing

    with ttemu.open_device("n150", timing_only=True) as dev:
        dev.default_deadline_s = 3600.0

        def ours():
            q = harness.tile(dev, torch.randn(1, 1, 32, 128))
            k, v = (dev.empty((1, 8, 32768, 128), ttnn.bfloat8_b) for _ in range(2))
            call = harness.decode(q, k, v, cur_pos=[32767])
            for t in (q, k, v, call.output):
                t.deallocate()
            return call.stats

        def theirs():
            return calibration.upstream_decode(dev, batch=1, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=32768)

        ours(), theirs()  # compile both programs' kernels first
        for v in ("no_flow_control", "nominal"):
            with timing.variant_env(v):
                cells = []
                for name, run in (("ours", ours), ("upstream", theirs)):
                    t0 = time.monotonic()
                    st = run()
                    cells.append(f"{name} {st.duration_ns / 1e3:.2f} us modelled, {time.monotonic() - t0:.1f} s wall")
                print(f"{v:16s} Llama-3.1-8B 32K: " + "; ".join(cells), flush=True)


def measure_cost() -> None:
    """What flow control costs the replay: a FlashDecode-like trace (64 cores: a reader of 512 bfloat8_b tiles from
    the 12 banks, 8 in flight per barrier; a compute stream; a writer merging to a neighbour) recorded once per
    variant, replay CPU time (host) measured three times, best kept."""
    from ttemu.timing import Barrier, Cb, Op, Proc, TimingModel, dram

    def build(variant):
        m = TimingModel((8, 8), variant=variant)
        for core in range(64):
            rd, cp, wr = (m.add_risc(core, p) for p in (Proc.NCRISC, Proc.COMPUTE, Proc.BRISC))
            m.configure_cb(core, 0, 16)
            for blk in range(64):
                m.cb(rd, Cb.RESERVE_BACK, 0, 8)
                for t in range(8):
                    m.read(rd, dram((core + blk * 8 + t) % 12), 1088)
                m.barrier(rd, Barrier.READ)
                m.cb(rd, Cb.PUSH_BACK, 0, 8)
                m.cb(cp, Cb.WAIT_FRONT, 0, 8)
                m.compute(cp, Op.MATMUL, 8, 9, 1088)
                m.cb(cp, Cb.POP_FRONT, 0, 8)
            m.write(wr, (core + 1) % 64, 8192)
            m.barrier(wr, Barrier.WRITE)
        return m

    decode_cost()
    for v in ("no_flow_control", "nominal"):
        best, dur = float("inf"), 0.0
        for _ in range(3):
            m = build(v)
            t0 = time.process_time()
            m.run()
            best = min(best, time.process_time() - t0)
            dur = m.duration_cycles
        print(f"{v:16s} replay {best:.3f} s CPU (64 cores x 3 RISCs, 32768 reads), modelled {dur / 1000:.1f} us")


# ---- Blackhole (--arch blackhole) ---------------------------------------------------------------------------------
# (figure key, bytes per read, reads) of the one-core DRAM read rows run again through the wired emulator on a P150.
BH_DRAM_ROWS = [
    ("bh_dram_read_latency_64B", 64, 1),
    ("bh_dram_read_latency_16KB", 16384, 1),
    ("bh_dram_read_issue_bound", 64, 256),
    ("bh_dram_read_bw_one_core", 16384, 256),
]


def blackhole_markdown() -> str:
    """The Blackhole calibration table (docs/BLACKHOLE.md, section 3), every value modelled."""
    from ttemu import timing

    variants = timing.variant_names("blackhole")
    spread: dict[str, list[float]] = {}
    for v in variants:
        with timing.variant_env(v):
            for f in timing_calibration.BH_FIGURES:
                spread.setdefault(f.key, []).append(f.modelled())
    notes: list[str] = []
    lines = [
        "| figure | published | source | fitted to it | modelled (nominal) | error | tolerance | "
        "min-max over the variants |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    errs: dict[str, list[float]] = {"in": [], "out": []}
    for f in timing_calibration.BH_FIGURES:
        m = f.modelled()
        fitted = timing_calibration.BH_IN_SAMPLE.get(f.key, "")
        errs["in" if fitted else "out"].append(abs(f.error(m)))
        mark = ""
        if f.note:
            if f.note not in notes:
                notes.append(f.note)
            mark = f" [{notes.index(f.note) + 1}]"
        flag = "" if abs(f.error(m)) <= f.tolerance + 1e-12 else " FAIL"
        lo, hi = min(spread[f.key]), max(spread[f.key])
        lines.append(
            f"| {f.what}{mark} | {f.published:g} {f.unit} | {f.source} | {fitted or '**held out**'} | {_num(m)} | "
            f"{f.error(m):+.1%}{flag} | {f.tolerance:.0%} | {_num(lo)}-{_num(hi)} |"
        )
    figs = {f.key: f for f in timing_calibration.BH_FIGURES}
    clock_ghz = {c.name: c.value for c in timing.constants("blackhole")}["kClockGHz"]  # the timing stats are in ns
    torch.manual_seed(5)
    with ttemu.open_device("p150") as dev:
        # 64 bf16 tiles over 8 banks: 8 tiles (16 KB) back to back in bank 0, room for the 16 KB reads
        src = harness.tile(dev, torch.randn(32, 32 * 64))
        try:
            for key, nbytes, count in BH_DRAM_ROWS:
                f = figs[key]
                cycles = dram_read_through_emulator(dev, src, nbytes, count, cb_bytes=16384) * clock_ghz
                got = count * nbytes / cycles if f.unit == "B/cycle" else cycles
                fitted = timing_calibration.BH_IN_SAMPLE.get(key, "")
                lines.append(
                    f"| {f.what}, through the wired emulator (real kernel, P150) | {f.published:g} {f.unit} | "
                    f"{f.source} | {fitted or '**held out**'} | {_num(got)} | {f.error(got):+.1%} | "
                    f"{f.tolerance:.0%} | - |"
                )
        finally:
            src.deallocate()
    lines.append("")
    for role, name in (("in", "in-sample"), ("out", "held out")):
        e = errs[role]
        lines.append(
            f"- {name} (standalone model, nominal): {len(e)} figures, median |error| "
            f"{100 * sorted(e)[len(e) // 2]:.1f}%, largest {100 * max(e):.1f}%"
        )
    lines.append(f"- variants ({len(variants)}): {', '.join(variants)}")
    lines += [""] + [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-table", action="store_true", help="skip the data-movement table")
    ap.add_argument("--skip-report", action="store_true", help="skip the tech report's points (the slow part)")
    ap.add_argument("--skip-galaxy", action="store_true", help="skip the full-mode Llama-3.1-70B section")
    ap.add_argument("--peak-head-dims", type=int, nargs="+", default=[d for _, d, _ in calibration.REPORT_PEAK_SHAPES])
    ap.add_argument("--t3k-contexts", type=int, nargs="+", default=list(calibration.T3K_CONTEXTS))
    ap.add_argument(
        "--markdown",
        action="store_true",
        help="print one table (figure, published and source, modelled, error, tolerance, pass) instead",
    )
    ap.add_argument("--out", type=Path, help="with --markdown / --heldout: also write the table here")
    ap.add_argument(
        "--heldout",
        action="store_true",
        help="the held-out validation table: each figure's role, error without and with flow control",
    )
    ap.add_argument("--variants", action="store_true", help="with --heldout: also the spread over every variant")
    ap.add_argument(
        "--no-sdpa",
        action="store_true",
        help="with --heldout: the data-movement and matmul figures only (seconds a variant)",
    )
    ap.add_argument("--cost", action="store_true", help="replay CPU time without and with flow control")
    ap.add_argument(
        "--arch",
        choices=["wormhole_b0", "blackhole"],
        default="wormhole_b0",
        help="blackhole: the Blackhole calibration table (docs/BLACKHOLE.md section 3) instead",
    )
    args = ap.parse_args()
    if args.arch == "blackhole":
        t0 = time.monotonic()
        text = blackhole_markdown()
        text += (
            f"\n\nModelled by `perf/calibrate_timing.py --arch blackhole`, "
            f"{harness.utc_now()}, {time.monotonic() - t0:.0f} s wall."
        )
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
        return
    if args.cost:
        measure_cost()
        return
    if args.heldout:
        from ttemu.timing import variant_names

        t0 = time.monotonic()
        shapes = [(32, d, 131072) for d in args.peak_head_dims]
        variants = variant_names() if args.variants else ["no_flow_control", "nominal"]
        variants = ["no_flow_control", "nominal"] + [v for v in variants if v not in ("no_flow_control", "nominal")]
        with ttemu.open_device("n150", timing_only=True) as fast:
            fast.default_deadline_s = 3600.0
            fast.default_hang_ms = 2000
            values = heldout_values(variants, not args.skip_report, shapes, args.t3k_contexts, fast, not args.no_sdpa)
        text = heldout_markdown(values, not args.skip_report, shapes, args.t3k_contexts, not args.no_sdpa)
        flags = " ".join(a for a in sys.argv[1:] if a not in ("--out",) and not a.endswith(".md"))
        text += (
            f"\n\nModelled by `perf/calibrate_timing.py {flags}`, {harness.utc_now()}, "
            f"{time.monotonic() - t0:.0f} s wall (cached figures excluded)."
        )
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
        return
    if args.markdown:
        t0 = time.monotonic()
        with ttemu.open_device("n150") as dev, ttemu.open_device("n150", timing_only=True) as fast:
            fast.default_deadline_s = 3600.0  # a batch-32 x 128K call takes minutes on a loaded machine
            fast.default_hang_ms = 2000
            shapes = [(32, d, 131072) for d in args.peak_head_dims]
            text = markdown(calibration_rows(dev, fast, not args.skip_report, shapes, args.t3k_contexts))
        text += f"\n\nRun at {harness.source_tag()}, {harness.utc_now()}, {time.monotonic() - t0:.0f} s wall."
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
        return
    if not (args.skip_table and args.skip_galaxy):
        dev = ttemu.open_device("n150")
        try:
            if not args.skip_table:
                print_table(dev)
            if not args.skip_galaxy:
                print_llama70b(dev)
        finally:
            dev.close()
    if not args.skip_report:
        with ttemu.open_device("n150", timing_only=True) as fast:
            fast.default_deadline_s = 3600.0  # a batch-32 x 128K call takes minutes on a loaded machine
            fast.default_hang_ms = 2000
            shapes = [(32, d, 131072) for d in args.peak_head_dims]
            print_report_points(fast, shapes, args.t3k_contexts)


if __name__ == "__main__":
    main()
