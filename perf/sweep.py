"""Side-by-side benchmark (issue 12 item 3): ttflashdecode vs upstream's sdpa_decode kernels (``ttflashdecode.upstream``,
the wheel's sources) on the same emulated chip and the same timing model.

Every duration is MODELLED by the emulator's timing model (docs/TIMING.md), not measured on silicon. By default the
device runs in timing-only mode (``emulator.open_device(timing_only=True)``: no math, K/V caches made by
``device.empty()``), whose durations equal the full mode's exactly (tests/emulator/test_timing_only.py); ``--full``
runs the math on random K/V instead (slow, same numbers).

Groups (``--groups``; each call goes through the public entry points, every user at the last position, causal):

- ``grid``: the FlashDecode tech report's shapes (tech_reports/FlashDecode section 4.1): bfloat16 Q, bfloat8_b K/V,
  batch 8/16/32, head_dim 64/128/256, 8 q heads / 1 kv head, at ``--grid-kv-len``; plus a kv_len scan up to 128K at
  ``--scan-batches`` x ``--scan-head-dims``. Default program configs (as a model calls the op).
- ``llama``: Llama-3.1-8B per-chip shapes with heads split over 1/2/4/8 chips (section 4.2: batch 1, head_dim 128,
  32/N q heads, 8/N kv heads), ``max_cores_per_head_batch`` 16 and 64, contexts ``--contexts``.
- ``mla``: DeepSeek-style MLA, K 576 / V 512 (V = K's first 512 columns), 16 q heads / 1 kv head. Ours uses its MLA
  path (``flash_multi_latent_attention_decode``: K read once); ``ttflashdecode.upstream`` has no MLA entry point
  (upstream's ``flash_multi_latent_attention_decode`` is not reproduced there), so its row runs sdpa_decode on K 576
  with a separate V 512 cache, which reads V too: the ratio is against that call and says so in NOTE.
- ``qlen4``: four query tokens per user (speculative decode). Upstream decodes one token per user, so its row is four
  calls (4 x the q_len 1 duration), which is what a model would do with it; NOTE says so.

CSV (``perf/out/sweep.csv``, rewritten after every shape, in one order whatever order shapes finish in): tt-metal ops
perf report columns (OP CODE, DEVICE KERNEL DURATION [ns]) plus the shape, DRAM bytes, GB/s (DRAM bytes read + written
/ duration), REPORT GB/s and TFLOPs/s (the tech report's formulas: 2 * b * d * n_kv * kv_len bytes and
4 * b * kv_len * d * n_q flops, q_len x for several tokens), the ratio to upstream (upstream's duration / this op's:
above 1 is faster) and SOURCE=modelled. ``sweep.meta.json``: the commit (``<hash>`` or ``<hash>+dirty-<diff hash>``
when the package, kernels or configs differ from HEAD), dates, argv, --jobs, wall time, and per shape the commit it was
measured at, its wall seconds and what ``program_config="auto"`` did (model runs or its disk cache). PNGs (named after
the CSV): ``sweep_gbs.png`` / ``sweep_tflops.png`` (against head_dim, batch and kv_len) and
``sweep_llama_latency.png`` (latency against context for 1/2/4/8 chips); ``sweep_summary.md``: the side-by-side table
and issue 12's goals checked row by row (perf/goals.py).

``--jobs N`` runs each shape in its own worker process, N at a time, longest first (a shape's last recorded time,
else its K/V size); a worker that dies is retried once, then its row is kept with an empty duration and the reason.
Where the time goes (measured on the shared 2-core machine): after a kernel edit most of a shape's time is compiling
the kernel variants of auto's candidate plans (b8 d64/d128 16K: 7 candidate runs took 150 s with the compiles, 9-18 s
once compiled; timing-only runs of even 128K shapes take seconds to a minute). g++ uses one core, so ``--jobs 2``
overlaps compiles (the two shapes above: 204 s wall for 2 x ~150 s); with everything compiled ``--jobs 1`` is as fast
(a worker's start-up, ~5-20 s of imports on a loaded machine, is paid per shape).
``--append`` resumes: shapes already in the CSV with a duration for both ops AND measured at this commit (the meta's
record) are skipped; everything else runs. ``--list`` prints what would run, with the recorded or guessed seconds.
Upstream's row of a shape is read back from ``perf/out/upstream_cache/`` when everything it depends on is unchanged
(``UPSTREAM_SOURCES``: its descriptor, the emulator and timing model, argument checks; the wheel; ``Runner``), so a
re-run after a change to our kernels or planner runs only ours; ``--no-upstream-cache`` runs upstream anyway.

    nice -n 5 .venv/bin/python perf/sweep.py --jobs 2                        # the default set
    nice -n 5 .venv/bin/python perf/sweep.py --jobs 2 --append               # resume it (same commit)
    .venv/bin/python perf/sweep.py --table                                   # the tables and goals from the CSV
    .venv/bin/python perf/sweep.py --list --append                           # what a resume would run
    .venv/bin/python perf/sweep.py --groups grid --grid-kv-len 4096 --scan-kv-lens 1024 4096 --csv /tmp/q.csv
    .venv/bin/python perf/sweep.py --groups llama --chips 8 --contexts 8192 131072 --csv /tmp/t3k.csv
    .venv/bin/python perf/sweep.py --plots-only                              # redraw the PNGs from the CSV
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf/goals.py

import ttflashdecode  # noqa: E402
from ttflashdecode import emulator, upstream  # noqa: E402
from ttflashdecode.ttnn_env import import_ttnn  # noqa: E402

ttnn = import_ttnn()
OUT = REPO / "perf" / "out"
OURS, UPSTREAM = "ttflashdecode", "upstream sdpa_decode"
COLUMNS = ["OP CODE", "GROUP", "CHIPS", "BATCH", "Q LEN", "Q HEADS", "KV HEADS", "HEAD DIM", "HEAD DIM V", "KV LEN",
           "KV DTYPE", "MAX CORES PER HEAD", "DEVICE KERNEL DURATION [ns]", "DRAM BYTES", "GB/s", "REPORT GB/s",
           "TFLOPs/s", "RATIO TO UPSTREAM", "SOURCE", "NOTE"]  # fmt: skip


@dataclass(frozen=True)
class Shape:
    group: str
    batch: int
    head_dim: int
    kv_len: int
    n_q_heads: int = 8
    n_kv_heads: int = 1
    q_len: int = 1
    head_dim_v: int | None = None  # MLA: V is K's first head_dim_v columns
    chips: int = 1  # Llama head split: per-chip shape of an N-chip tensor-parallel model
    max_cores: int | None = None  # max_cores_per_head_batch (None: the op's default program config)

    @property
    def d_v(self) -> int:
        return self.head_dim_v or self.head_dim

    def flops(self) -> float:  # the tech report's formula (QK^T and PV, 2 flops a MAC), per query token
        return 2.0 * self.batch * self.kv_len * self.n_q_heads * (self.head_dim + self.d_v) * self.q_len

    def report_bytes(self) -> float:  # the tech report's KV size: one byte a bfloat8_b datum, K and V
        v = 0 if self.head_dim_v else self.d_v
        return float(self.batch * self.n_kv_heads * self.kv_len * (self.head_dim + v))


@dataclass
class Result:
    duration_ns: float | None
    dram_bytes: int = 0
    note: str = ""
    extra: dict = field(default_factory=dict)


def _config(s: Shape):
    if s.max_cores is None:
        return None
    return ttnn.SDPAProgramConfig(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), q_chunk_size=0,
                                  k_chunk_size=0, max_cores_per_head_batch=s.max_cores)


class Runner:
    """Makes the tensors of a shape once (undefined K/V in timing-only mode) and runs both ops on them."""

    def __init__(self, dev, full: bool, seed: int):
        self.dev, self.full, self.seed = dev, full, seed

    def _kv(self, shape, g):
        if self.full:
            return self.dev.from_torch(torch.randn(*shape, generator=g), dtype=ttnn.bfloat8_b)
        return self.dev.empty(shape, ttnn.bfloat8_b)

    def run(self, s: Shape, upstream_result: Result | None = None, ours: bool = True) -> dict[str, Result]:
        """Both ops' results; upstream's is not run when ``upstream_result`` is given (the upstream cache's), ours
        not when ``ours`` is False (--upstream-only)."""
        g = torch.Generator().manual_seed(self.seed)
        dev = self.dev
        q = dev.from_torch(torch.randn(s.q_len, s.batch, s.n_q_heads, s.head_dim, generator=g), dtype=ttnn.bfloat16,
                           layout=ttnn.TILE_LAYOUT)
        k = self._kv((s.batch, s.n_kv_heads, s.kv_len, s.head_dim), g)
        v = self._kv((s.batch, s.n_kv_heads, s.kv_len, s.d_v), g)  # upstream's V (and ours unless MLA)
        pos = [s.kv_len - 1] * s.batch
        cfg = _config(s)
        res: dict[str, Result] = {}
        try:
            if ours:
                res[OURS] = self._call(OURS, lambda: (
                    ttflashdecode.flash_multi_latent_attention_decode(q, k, head_dim_v=s.head_dim_v, cur_pos=pos,
                                                                      program_config=cfg) if s.head_dim_v else
                    ttflashdecode.scaled_dot_product_attention_decode(q, k, v, cur_pos=pos, program_config=cfg)))
                res[OURS].note = "MLA path: K read once, V = K[..., :512]" if s.head_dim_v else ""
            else:
                res[OURS] = Result(None, note="not run (--upstream-only)")
            res[UPSTREAM] = upstream_result or self._upstream(s, q, k, v, pos, cfg, g)
        finally:
            for t in (q, k, v):
                t.deallocate()
        return res

    def _upstream(self, s: Shape, q, k, v, pos, cfg, g) -> Result:
        dev = self.dev
        q1 = q if s.q_len == 1 else dev.from_torch(torch.randn(1, s.batch, s.n_q_heads, s.head_dim, generator=g),
                                                   dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
        try:
            up = self._call(UPSTREAM, lambda: upstream.scaled_dot_product_attention_decode(
                q1, k, v, cur_pos=pos, program_config=cfg))
            if s.q_len > 1 and up.duration_ns is not None:
                up = Result(up.duration_ns * s.q_len, up.dram_bytes * s.q_len,
                            f"{s.q_len} calls of q_len 1 (upstream decodes one token per user)")
            if s.head_dim_v:
                tried = ""
                if up.duration_ns is None and "L1 overflow" in up.note:  # its default k_chunk does not fit d 576
                    tried = f"; default config refused ({up.note[:60]}...), run with k_chunk_size 32"
                    small = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
                                                   q_chunk_size=0, k_chunk_size=32, max_cores_per_head_batch=16)
                    up = self._call(UPSTREAM, lambda: upstream.scaled_dot_product_attention_decode(
                        q1, k, v, cur_pos=pos, program_config=small))
                up.note = ("no MLA entry point in ttflashdecode.upstream: sdpa_decode with a separate V 512 cache"
                           + tried + (f"; refused: {up.note}" if up.note else ""))
            return up
        finally:
            if q1 is not q:
                q1.deallocate()

    def _call(self, op: str, fn) -> Result:
        try:
            out = fn()
        except Exception as e:  # an op refusing a shape is a result (recorded), not the end of the sweep
            return Result(None, note=f"{type(e).__name__}: {str(e).splitlines()[0][:160]}")
        stats = (ttflashdecode.op.last_run if op == OURS else upstream.last_run).stats
        out.deallocate()
        return Result(stats.duration_ns, stats.dram_read_bytes + stats.dram_write_bytes)


def shape_key(s: Shape) -> tuple[str, ...]:
    """The CSV's identifying columns of a shape (GROUP .. MAX CORES PER HEAD), as strings."""
    return tuple(str(v) for v in (s.group, s.chips, s.batch, s.q_len, s.n_q_heads, s.n_kv_heads, s.head_dim, s.d_v,
                                  s.kv_len, s.max_cores if s.max_cores is not None else "default"))


def rows_for(s: Shape, res: dict[str, Result]) -> list[dict]:
    up = res.get(UPSTREAM)
    rows = []
    for op, r in res.items():
        ns = r.duration_ns
        ratio = (f"{up.duration_ns / ns:.3f}" if ns and up and up.duration_ns else "")
        rows.append({
            "OP CODE": op, "GROUP": s.group, "CHIPS": s.chips, "BATCH": s.batch, "Q LEN": s.q_len,
            "Q HEADS": s.n_q_heads, "KV HEADS": s.n_kv_heads, "HEAD DIM": s.head_dim, "HEAD DIM V": s.d_v,
            "KV LEN": s.kv_len, "KV DTYPE": "BFLOAT8_B",
            "MAX CORES PER HEAD": s.max_cores if s.max_cores is not None else "default",
            "DEVICE KERNEL DURATION [ns]": f"{ns:.0f}" if ns else "", "DRAM BYTES": r.dram_bytes,
            "GB/s": f"{r.dram_bytes / ns:.1f}" if ns else "",
            "REPORT GB/s": f"{s.report_bytes() / ns:.1f}" if ns else "",
            "TFLOPs/s": f"{s.flops() / ns / 1e3:.3f}" if ns else "", "RATIO TO UPSTREAM": ratio,
            "SOURCE": "modelled", "NOTE": r.note,
        })  # fmt: skip
    return rows


def shapes(args) -> list[Shape]:
    out: list[Shape] = []
    if "grid" in args.groups:
        for b in args.batches:
            for d in args.head_dims:
                out.append(Shape("grid", b, d, args.grid_kv_len))
        for b in args.scan_batches:
            for d in args.scan_head_dims:
                out += [Shape("grid", b, d, kv) for kv in args.scan_kv_lens if kv != args.grid_kv_len
                        or b not in args.batches or d not in args.head_dims]
    if "llama" in args.groups:
        for n in args.chips:
            for cores in args.max_cores:
                groups = 1 * (8 // n)  # batch 1 x kv heads per chip
                if cores > 16 and 64 // groups <= 16:
                    continue  # the grid gives every head at most 16 cores anyway: same program as cores=16
                out += [Shape("llama", 1, 128, ctx, 32 // n, 8 // n, chips=n, max_cores=cores)
                        for ctx in args.contexts]
    if "mla" in args.groups:
        out += [Shape("mla", args.mla_batch, 576, kv, 16, 1, head_dim_v=512) for kv in args.mla_kv_lens]
    if "qlen4" in args.groups:
        out += [Shape("qlen4", args.qlen_batch, 128, kv, 8, 1, q_len=4) for kv in args.qlen_kv_lens]
    return out


# ---- plots ---------------------------------------------------------------------------------------------------


def _f(r, col):
    return float(r[col]) if r.get(col) not in (None, "") else None


def _series(ax, rows, x_col, y_col, key_fn, label_fn):
    keys = sorted({key_fn(r) for r in rows})
    colors = {k: f"C{i}" for i, k in enumerate(sorted({key[1:] for key in keys}))}  # same shape, same colour
    for key in keys:
        pts = sorted((_f(r, x_col), _f(r, y_col)) for r in rows if key_fn(r) == key and _f(r, y_col) is not None)
        if pts:
            op = key[0]
            ax.plot(*zip(*pts), marker="o" if op == OURS else "s", linestyle="-" if op == OURS else "--",
                    color=colors[key[1:]], label=label_fn(key))


def plot_throughput(rows: list[dict], y_col: str, ylabel: str, path: Path, grid_kv: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = [r for r in rows if r["GROUP"] == "grid"]
    at_kv = [r for r in grid if int(r["KV LEN"]) == grid_kv]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
    _series(axes[0], at_kv, "HEAD DIM", y_col, lambda r: (r["OP CODE"], int(r["BATCH"])),
            lambda k: f"{k[0]}, batch {k[1]}")
    axes[0].set_xlabel("head_dim")
    axes[0].set_title(f"against head_dim (kv_len {grid_kv})")
    _series(axes[1], at_kv, "BATCH", y_col, lambda r: (r["OP CODE"], int(r["HEAD DIM"])),
            lambda k: f"{k[0]}, head_dim {k[1]}")
    axes[1].set_xlabel("batch")
    axes[1].set_title(f"against batch (kv_len {grid_kv})")
    scan = [r for r in grid if sum(1 for x in grid if (x["OP CODE"], x["BATCH"], x["HEAD DIM"]) ==
                                   (r["OP CODE"], r["BATCH"], r["HEAD DIM"])) > 1]
    _series(axes[2], scan, "KV LEN", y_col, lambda r: (r["OP CODE"], int(r["BATCH"]), int(r["HEAD DIM"])),
            lambda k: f"{k[0]}, b{k[1]} d{k[2]}")
    axes[2].set_xscale("log", base=2)
    axes[2].set_xlabel("kv_len")
    axes[2].set_title("against kv_len")
    for ax in axes:
        ax.set_ylabel(f"{ylabel} (modelled)")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a subset's CSV may leave a panel empty
            ax.legend(fontsize=6.5, loc="best")
    fig.suptitle(f"FlashDecode (solid) vs upstream sdpa_decode (dashed), 8 q / 1 kv heads, bfloat8_b K/V: {ylabel}, "
                 "MODELLED by the emulator's timing model")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_llama(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ll = [r for r in rows if r["GROUP"] == "llama"]
    if not ll:
        return
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True)
    for ax, op in zip(axes, (OURS, UPSTREAM)):
        sub = [dict(r, **{"US": str(_f(r, "DEVICE KERNEL DURATION [ns]") / 1e3)}) for r in ll
               if r["OP CODE"] == op and r["DEVICE KERNEL DURATION [ns]"]]
        for key in sorted({(int(r["CHIPS"]), int(r["MAX CORES PER HEAD"])) for r in sub}):
            pts = sorted((int(r["KV LEN"]), float(r["US"])) for r in sub
                         if (int(r["CHIPS"]), int(r["MAX CORES PER HEAD"])) == key)
            ax.plot(*zip(*pts), marker="o", linestyle="-" if key[1] == 16 else ":",
                    label=f"{key[0]} chip{'s' if key[0] > 1 else ''} ({32 // key[0]} q / {8 // key[0]} kv heads), "
                          f"max {key[1]} cores/head")
        ax.set_title(op)
        ax.set_xlabel("context (kv_len)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("latency, us (modelled)")
    fig.suptitle("Llama-3.1-8B per-chip decode attention, batch 1, head_dim 128, bfloat8_b K/V: latency against "
                 "context, MODELLED")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_all(rows: list[dict], out_dir: Path, grid_kv: int, stem: str = "sweep") -> list[Path]:
    """The PNGs, named after the CSV (sweep.csv: sweep_gbs.png, ...), so a subset's CSV does not redraw the sweep's."""
    paths = [out_dir / f"{stem}_gbs.png", out_dir / f"{stem}_tflops.png", out_dir / f"{stem}_llama_latency.png"]
    plot_throughput(rows, "GB/s", "DRAM GB/s", paths[0], grid_kv)
    plot_throughput(rows, "TFLOPs/s", "TFLOPs/s", paths[1], grid_kv)
    plot_llama(rows, paths[2])
    return [p for p in paths if p.exists()]


# ---- running: in this process, or in --jobs worker processes --------------------------------------------------

IDENT = ("GROUP", "CHIPS", "BATCH", "Q LEN", "Q HEADS", "KV HEADS", "HEAD DIM", "HEAD DIM V", "KV LEN",
         "MAX CORES PER HEAD")  # fmt: skip
GROUP_ORDER = ("grid", "llama", "mla", "qlen4")
# What decides a modelled duration: the package (planner, factories, emulator and its timing model), the kernels and
# the named configs. A row is "at a commit" only if these matched that commit when it ran.
SOURCE_PATHS = ("ttflashdecode", "program_configs")


def row_key(r: dict) -> tuple[str, ...]:
    return tuple(str(r[c]) for c in IDENT)


def key_text(key: tuple[str, ...]) -> str:
    """A shape's name in sweep.meta.json (the CSV's identifying columns joined)."""
    return "|".join(key)


def sort_rows(rows: list[dict]) -> list[dict]:
    """The CSV's order, the same whatever order the shapes finished in: group, chips, max cores per head (default
    first), batch, q_len, heads, head_dim, kv_len; ours before upstream."""
    def order(r):
        g, cores = r["GROUP"], r["MAX CORES PER HEAD"]
        return (GROUP_ORDER.index(g) if g in GROUP_ORDER else len(GROUP_ORDER), g, int(r["CHIPS"]),
                -1 if cores == "default" else int(cores), int(r["BATCH"]), int(r["Q LEN"]), int(r["Q HEADS"]),
                int(r["KV HEADS"]), int(r["HEAD DIM"]), int(r["HEAD DIM V"]), int(r["KV LEN"]),
                0 if r["OP CODE"] == OURS else 1, r["OP CODE"])  # fmt: skip

    return sorted(rows, key=order)


def _git(*argv: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *argv], capture_output=True, text=True, check=True).stdout


def source_tag() -> str:
    """HEAD's short hash, with ``+dirty-<hash>`` when SOURCE_PATHS differ from HEAD (uncommitted edits or new files;
    the hash is of the difference, so two different dirty trees never share a tag). ``--append`` compares it: a row
    measured on other sources is measured again. $TTFD_SWEEP_COMMIT overrides (a run from an exported snapshot)."""
    if os.environ.get("TTFD_SWEEP_COMMIT"):
        return os.environ["TTFD_SWEEP_COMMIT"]
    try:
        head = _git("rev-parse", "--short", "HEAD").strip()
        status = _git("status", "--porcelain", "--untracked-files=all", "--", *SOURCE_PATHS)
        if not status.strip():
            return head
        h = hashlib.sha1(subprocess.run(["git", "-C", str(REPO), "diff", "HEAD", "--", *SOURCE_PATHS],
                                        capture_output=True, check=True).stdout)  # fmt: skip
        for line in status.splitlines():
            if line.startswith("??"):
                path = REPO / line[3:]
                h.update(line.encode() + (path.read_bytes() if path.is_file() else b""))
        return f"{head}+dirty-{h.hexdigest()[:8]}"
    except Exception:
        return "unknown"


def cost_guess(s: Shape, seconds: dict[str, float]) -> float:
    """Seconds a shape is expected to take: its last recorded wall time when the meta has one, else a rough guess
    (emulator runs x (a few seconds of set-up + K/V MB at ~7 MB/s timing-only); a default-config shape also pays
    program_config='auto''s candidate runs, up to 7). Orders the work longest first, so the last worker does not
    start a 128K shape alone, and feeds --list."""
    known = seconds.get(key_text(shape_key(s)))
    if known:
        return known
    mb = s.batch * s.n_kv_heads * s.kv_len * (s.head_dim + (0 if s.head_dim_v else s.d_v)) * 1.0625 / 2**20
    runs = 2 if s.max_cores is not None else 9
    return runs * (8.0 + 0.15 * mb)


def _open_device(full: bool):
    dev = emulator.open_device("n150", timing_only=not full)
    dev.default_hang_ms = max(dev.default_hang_ms, 2000)  # a loaded shared machine stalls threads for a while
    dev.default_deadline_s = max(dev.default_deadline_s, 3600.0)  # a 128K x batch 32 call takes minutes
    return dev


# Upstream's rows depend only on these (its descriptor, the emulator and its timing model, the mock cluster, argument
# checks), the wheel and how Runner makes a call, never on our kernels or planner: a re-run after a change to ours
# reads them back instead of running upstream again (perf/out/upstream_cache/, one JSON file per shape and hash).
UPSTREAM_SOURCES = ("ttflashdecode/upstream", "ttflashdecode/emulator", "ttflashdecode/cluster_descriptors",
                    "ttflashdecode/backend.py", "ttflashdecode/ttnn_env.py", "ttflashdecode/validate.py")
UPSTREAM_CACHE = OUT / "upstream_cache"


def upstream_hash() -> str:
    """Hash of everything an upstream row depends on: UPSTREAM_SOURCES' files, the ttnn wheel's version and
    Runner's source (how a call is made)."""
    import importlib.metadata
    import inspect

    h = hashlib.sha256()
    for top in UPSTREAM_SOURCES:
        root = REPO / top
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(importlib.metadata.version("ttnn").encode() + inspect.getsource(Runner).encode())
    return h.hexdigest()[:16]


def _upstream_cache_path(s: Shape, seed: int, uhash: str) -> Path:
    key = json.dumps([asdict(s), seed, uhash], sort_keys=True)  # timing-only and full give the same durations
    return UPSTREAM_CACHE / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def measure(runner: Runner, s: Shape, use_upstream_cache: bool = True, ours: bool = True) -> dict:
    """One shape, both ops: the CSV rows, the wall seconds, what program_config='auto' did (model runs or disk) and
    whether upstream's row was run or read from the upstream cache (only durations are cached, never a failure)."""
    from ttflashdecode import tuning as plan_auto

    before, t0 = plan_auto.stats(), time.monotonic()
    uhash = upstream_hash()
    path = _upstream_cache_path(s, runner.seed, uhash)
    cached = None
    if use_upstream_cache and path.exists():
        try:
            cached = Result(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            cached = None
    res = runner.run(s, cached, ours)
    if res[OURS].duration_ns is not None:  # what ours ran (auto or the planner may differ from the config asked)
        p = ttflashdecode.op.last_run.plan
        gx, gy = p.config.compute_with_storage_grid_size
        res[OURS].note = "; ".join(x for x in (f"plan: k_chunk_size {p.k_chunk_size}, {p.num_cores_per_head} cores "
                                               f"per head, grid {gx}x{gy}", res[OURS].note) if x)
    up = res[UPSTREAM]
    if cached is None and up.duration_ns is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"duration_ns": up.duration_ns, "dram_bytes": up.dram_bytes, "note": up.note}))
        tmp.replace(path)
    after = plan_auto.stats()
    did = {k: round(after[k] - before.get(k, 0), 1) for k in after if after[k] != before.get(k, 0)}
    return {"rows": rows_for(s, res), "seconds": round(time.monotonic() - t0, 1), "auto": did,
            "upstream": f"{'cache' if cached else 'run'} {uhash}"}


def run_worker(args) -> None:
    """--worker: one shape in this process (started by --jobs); the result goes to --worker-out as JSON."""
    s = Shape(**json.loads(args.worker))
    dev = _open_device(args.full)
    try:
        result = measure(Runner(dev, args.full, args.seed), s, not args.no_upstream_cache, not args.upstream_only)
    finally:
        dev.close()
    tmp = args.worker_out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(args.worker_out)


def run_in_process(todo: list[Shape], args, done) -> None:
    dev = _open_device(args.full)
    try:
        runner = Runner(dev, args.full, args.seed)
        for s in todo:
            done(s, measure(runner, s, not args.no_upstream_cache, not args.upstream_only))
    finally:
        dev.close()


def run_in_workers(todo: list[Shape], args, done) -> None:
    """Every shape in its own process (``--worker``), at most ``args.jobs`` at once, longest first. A process per
    shape costs a few seconds of start-up against shapes of 30 s to minutes, and a worker that dies (the emulator
    once faulted while kernels were being recompiled) loses one shape, not the sweep: it is retried once, then
    recorded with an empty duration and the reason in NOTE."""
    pending = [(i, s, 0) for i, s in enumerate(todo)]
    running: dict[subprocess.Popen, tuple] = {}
    tmp = Path(tempfile.mkdtemp(prefix="ttfd-sweep-"))
    try:
        while pending or running:
            while pending and len(running) < args.jobs:
                i, s, attempt = pending.pop(0)
                out, log = tmp / f"{i}-{attempt}.json", tmp / f"{i}-{attempt}.log"
                argv = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(asdict(s)),
                        "--worker-out", str(out), "--seed", str(args.seed)] + (["--full"] if args.full else [])
                argv += ["--no-upstream-cache"] if args.no_upstream_cache else []
                argv += ["--upstream-only"] if args.upstream_only else []
                with open(log, "w") as f:
                    p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
                running[p] = (i, s, attempt, out, log, time.monotonic())
            time.sleep(0.5)
            for p in [p for p in running if p.poll() is not None]:
                i, s, attempt, out, log, t0 = running.pop(p)
                if p.returncode == 0 and out.exists():
                    done(s, json.loads(out.read_text()))
                    continue
                tail = " / ".join(log.read_text(errors="replace").strip().splitlines()[-3:])[-300:]
                why = f"worker exited with code {p.returncode} after {time.monotonic() - t0:.0f} s: {tail}"
                if attempt == 0:
                    print(f"  {describe(s)}: {why}; retrying once", flush=True)
                    pending.insert(0, (i, s, 1))
                    continue
                failed = {op: Result(None, note=why) for op in (OURS, UPSTREAM)}
                done(s, {"rows": rows_for(s, failed), "seconds": round(time.monotonic() - t0, 1), "auto": {}})
    finally:
        for p in running:  # interrupted: our own workers only
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def describe(s: Shape) -> str:
    return (f"{s.group} chips {s.chips} b{s.batch} q_len {s.q_len} {s.n_q_heads}q/{s.n_kv_heads}kv "
            f"d{s.head_dim}/{s.d_v} kv {s.kv_len} cores {s.max_cores if s.max_cores is not None else 'default'}")


def write_csv(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(sort_rows(rows))
    tmp.replace(path)  # a reader (or --table while the sweep runs) never sees half a file


def read_meta(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def write_meta(path: Path, meta: dict, rows: list[dict]) -> None:
    """sweep.meta.json: this invocation (commit tag, dates, argv, jobs, wall time) and, per shape in the CSV, the
    tag it was measured at, its wall seconds and what auto did; ``commits`` counts the CSV's shapes per tag."""
    keys = {key_text(row_key(r)) for r in rows}
    meta["shapes"] = {k: v for k, v in sorted(meta.get("shapes", {}).items()) if k in keys}
    tags: dict[str, int] = {}
    for k in keys:
        tag = meta["shapes"].get(k, {}).get("commit", "unknown")
        tags[tag] = tags.get(tag, 0) + 1
    meta["commits"] = dict(sorted(tags.items(), key=lambda t: -t[1]))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta, indent=1) + "\n")
    tmp.replace(path)


# ---- main ----------------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", nargs="+", default=list(GROUP_ORDER), choices=list(GROUP_ORDER))
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--head-dims", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--grid-kv-len", type=int, default=16384, help="kv_len of the head_dim x batch grid")
    ap.add_argument("--scan-batches", type=int, nargs="+", default=[8])
    ap.add_argument("--scan-head-dims", type=int, nargs="+", default=[128])
    ap.add_argument("--scan-kv-lens", type=int, nargs="+", default=[1024, 4096, 16384, 65536, 131072])
    ap.add_argument("--chips", type=int, nargs="+", default=[1, 2, 4, 8], choices=[1, 2, 4, 8])
    ap.add_argument("--max-cores", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--contexts", type=int, nargs="+", default=[4096, 32768, 131072])
    ap.add_argument("--mla-batch", type=int, default=8)
    ap.add_argument("--mla-kv-lens", type=int, nargs="+", default=[4096, 32768])
    ap.add_argument("--qlen-batch", type=int, default=8)
    ap.add_argument("--qlen-kv-lens", type=int, nargs="+", default=[4096, 32768])
    ap.add_argument("--full", action="store_true", help="run the math on random K/V (slow; same durations)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--csv", type=Path, default=OUT / "sweep.csv")
    ap.add_argument("--jobs", type=int, default=1,
                    help="run shapes in this many worker processes (one process per shape, longest first); the CSV "
                         "is one file in the same order whatever --jobs is")
    ap.add_argument("--append", action="store_true",
                    help="resume: keep the CSV's rows and skip the shapes it already has, with a duration for every "
                         "op, measured at this commit (sweep.meta.json records each shape's); others run again")
    ap.add_argument("--no-upstream-cache", action="store_true",
                    help="run upstream on every shape (by default its row is read back from perf/out/upstream_cache/ "
                         "when nothing it depends on changed: UPSTREAM_SOURCES, the wheel, Runner)")
    ap.add_argument("--upstream-only", action="store_true",
                    help="fill perf/out/upstream_cache/ for the selected shapes (upstream runs only; no CSV, no meta), "
                         "so a later sweep at the same upstream hash runs only ours")
    ap.add_argument("--list", action="store_true", help="print the shapes this command would run, and exit")
    ap.add_argument("--table", action="store_true",
                    help="print the side-by-side table and the issue's goals from --csv (perf/goals.py), and exit")
    ap.add_argument("--plots-only", action="store_true", help="redraw the PNGs from --csv")
    ap.add_argument("--merge", type=Path, nargs="+", default=[],
                    help="with --plots-only: concatenate these CSVs (e.g. parallel runs of different groups) into --csv")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # one shape as JSON (--jobs starts these)
    ap.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return run_worker(args)
    if args.table:
        import goals

        print(goals.summary(args.csv))
        return
    out_dir = args.csv.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    meta_path = args.csv.with_suffix(".meta.json")
    rows: list[dict] = []
    for path in args.merge or ([args.csv] if (args.plots_only or args.append or args.list) and args.csv.exists()
                               else []):
        with open(path, newline="") as f:
            rows += list(csv.DictReader(f))
    if args.merge:
        write_csv(args.csv, rows)
    if not args.plots_only:
        old = read_meta(meta_path) if (args.append or args.list) else {}
        tag = source_tag()
        todo = shapes(args)
        if args.append or args.list:  # resume: shapes measured at this tag, every op with a duration, are kept
            at_tag = {k for k, v in old.get("shapes", {}).items() if v.get("commit") == tag}
            complete = {row_key(r) for r in rows} - {row_key(r) for r in rows if not r["DEVICE KERNEL DURATION [ns]"]}
            keep = {k for k in complete if key_text(k) in at_tag}
            again = [s for s in todo if shape_key(s) in complete - keep]
            todo = [s for s in todo if shape_key(s) not in keep]
            print(f"at {tag}: {len(keep)} shapes in {args.csv.name} kept, {len(todo)} to run"
                  + (f" ({len(again)} of them measured at another commit)" if again else ""), flush=True)
        seconds = {k: v.get("seconds", 0) for k, v in read_meta(meta_path).get("shapes", {}).items()}
        todo.sort(key=lambda s: -cost_guess(s, seconds))
        if args.list:
            recorded = [s for s in todo if seconds.get(key_text(shape_key(s)))]
            for s in todo:
                known = "recorded" if s in recorded else "guessed from its K/V size"
                print(f"  {describe(s)}  ~{cost_guess(s, seconds):.0f} s ({known})")
            print(f"{len(todo)} shapes, ~{sum(cost_guess(s, seconds) for s in todo) / 60:.0f} min of one-at-a-time "
                  f"wall time ({len(recorded)} recorded in {meta_path.name}, {len(todo) - len(recorded)} guessed)")
            return
        started, t_start = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), time.monotonic()
        meta = {"commit": tag, "date_utc": started, "mode": "full" if args.full else "timing-only",
                "argv": sys.argv[1:], "jobs": args.jobs, "cpus": os.cpu_count(),
                "loadavg_at_start": [round(x, 2) for x in os.getloadavg()], "shapes_run": 0, "wall_s": None,
                "source": "modelled (emulator timing model)", "shapes": old.get("shapes", {})}  # fmt: skip
        count = len(todo)

        def done(s: Shape, result: dict) -> None:
            nonlocal rows
            if args.upstream_only:
                up = next(r for r in result["rows"] if r["OP CODE"] == UPSTREAM)
                print(f"{describe(s)}: upstream {up['DEVICE KERNEL DURATION [ns]'] or up['NOTE']} ns "
                      f"({result['upstream']}, {result['seconds']:.0f} s; modelled)", flush=True)
                return
            new = result["rows"]
            keys = {row_key(r) for r in new}
            rows = [r for r in rows if row_key(r) not in keys] + new
            meta["shapes_run"] += 1
            meta["shapes"][key_text(shape_key(s))] = {
                "commit": tag, "seconds": result["seconds"], "auto": result.get("auto", {}),
                "upstream": result.get("upstream", ""),
                "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}  # fmt: skip
            meta["wall_s"] = round(time.monotonic() - t_start)
            write_csv(args.csv, rows)  # after every shape: a partial sweep counts, and --append resumes it
            write_meta(meta_path, meta, rows)
            cached = "; upstream from cache" if result.get("upstream", "").startswith("cache") else ""
            print(f"[{meta['shapes_run']}/{count}] {describe(s)}: "
                  + " | ".join(f"{r['OP CODE']} {r['DEVICE KERNEL DURATION [ns]'] or r['NOTE']} ns "
                               f"{r['GB/s']} GB/s x{r['RATIO TO UPSTREAM']}" for r in new)
                  + f"  ({result['seconds']:.0f} s{cached}; {meta['wall_s'] / 60:.1f} min in; modelled)", flush=True)

        (run_in_workers if args.jobs > 1 else run_in_process)(todo, args, done)
        if args.upstream_only:
            print(f"upstream cache filled for {count} shapes in {(time.monotonic() - t_start) / 60:.1f} min")
            return
        meta["wall_s"] = round(time.monotonic() - t_start)
        meta["date_utc"] = f"{started} - {time.strftime('%H:%M:%S', time.gmtime())}"
        if source_tag() != tag:
            meta["warning"] = (f"the sources changed while the sweep ran (started at {tag}, ended at {source_tag()}): "
                               "rows may mix two trees")
            print(f"WARNING: {meta['warning']}", flush=True)
        write_csv(args.csv, rows)
        write_meta(meta_path, meta, rows)
        print(f"{meta['shapes_run']} shapes in {meta['wall_s'] / 60:.1f} min wall (--jobs {args.jobs})")
    paths = plot_all(rows, out_dir, args.grid_kv_len, args.csv.stem)
    if rows:
        import goals

        summary_path = args.csv.with_name(args.csv.stem + "_summary.md")
        summary_path.write_text(goals.summary(args.csv) + "\n")
        paths.append(summary_path)
    print(f"wrote {args.csv} and {', '.join(str(p) for p in paths)} (all durations modelled)")


if __name__ == "__main__":
    main()
