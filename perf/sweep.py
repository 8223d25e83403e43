"""Side by side, like for like (issue 28): ttflashdecode against upstream sdpa_decode as model code runs it and at its
best, every row under every timing-model variant. Every duration is MODELLED by the emulator's timing model
(docs/TIMING.md), not measured on silicon; the device runs timing-only (no math, K/V made by ``device.empty()``,
durations equal to the full mode's: tests/test_timing_only.py).

Calls (every row paged with 64-position blocks, bfloat8_b K/V, bfloat16 Q in DRAM, every user at the last position,
as model code runs the ops):

- **fair** (the headline): both sides with the same compute settings, tt_transformers' decode settings: HiFi4,
  ``math_approx_mode=False``, bfloat16 DST (no fp32 accumulation), the exact exp (``exp_approx_mode=False``) and the
  same exp on both sides: upstream's half tiles (causal, at most 16 q heads, bfloat16 Q: upstream/plan.py) take the
  approximate exp for P whatever ``exp_approx_mode`` says (the wheel's sdpa compute_common.hpp,
  ``sub_exp_block_bcast_cols_inplace``: ``EXP_APPROX_MODE || vector_mode != VectorMode::RC``), so on those rows ours
  runs the approximate exp too (its approximate path is upstream's: docs/PRECISION.md) and the table says so.
  * ours: no program config (``program_config`` = the default, auto, with the exp upstream computes: what a model
    that passes nothing but the exp mode gets);
  * upstream **as called**: ``SDPAProgramConfig(grid 8x8, k_chunk_size=0, max_cores_per_head_batch=16)`` (the
    dynamic chunks and 16 cores per head tt_transformers passes to ``paged_scaled_dot_product_attention_decode``;
    the Galaxy chip rows: llama3_70b_galaxy's 32 cores as the 8x4 rectangle, ours and the search over the 8x9 grid;
    the P150 rows: tt_transformers' 8x8, ours and the search over the P150's 11x10 grid);
  * upstream **at its best**: :func:`ttflashdecode.upstream.tune.search` over upstream's own knobs (k_chunk_size,
    max_cores_per_head_batch, grid) through the timing model, about ten runs a shape, ranked under the nominal
    variant. Every candidate's duration is known under every variant (below), so under each variant "at its best" is
    the fastest, under that variant, of every candidate the nominal search ran.
- **defaults**: each op with no program config and no compute config (ours: HiFi4, approximate exp; upstream: HiFi2,
  approximate math and exp, its whole grid, dynamic chunks).

Paths: MLA rows run both MLA entry points (``paged_flash_multi_latent_attention_decode``: K read once, V = its first
512 columns); q_len > 1 rows run both ops with ``spec_multi_pos_tiles`` (Tg candidates folded onto a batch row).

Chips: Wormhole rows (N150, T3K chip, Galaxy chip) and Blackhole rows (P150: ``ttemu.open_device("p150",
timing_only=True)``, timed by the engine's Blackhole constants, docs/BLACKHOLE.md section 3); the CSV's DEVICE ARCH and
the tables' chip column say which.

Variants: each row's chip's ``ttemu.timing.variant_names(arch)`` (nominal, no flow control, each
assumed constant at the low and high end of its range; Blackhole adds its own six, bh_*); each row reports the
ratio at nominal and its minimum and maximum over the variants run; a row counts as "ours faster" only where the
minimum is above 1. ``--variants`` picks a subset (the summary names it; a row runs those its chip's model has).
Each call runs once: under the nominal variant, with ``TTFD_TIMING_VARIANTS`` naming the others, so the emulator
replays the call's recorded traces under every variant (the traces do not depend on it; each replay equals a separate
run under that variant: tests/test_timing_multi_variant.py).

Outputs (perf/out/ unless ``--out``): ``sweep.csv``, one line per (shape, variant, side), readable unchanged by
tt-perf-report (the ops perf report's columns, DEVICE ID included: ``tt-perf-report perf/out/sweep.csv``), plus the
shape, side, variant, config, DRAM bytes, GB/s and SOURCE=modelled; ``sweep_summary.md`` (both tables and the
issue's goals, perf/goals.py); ``sweep_ratio.png`` (each row's ratios with their min-max over the variants);
``sweep_runs/<shape>.json`` (the raw records, so ``--append`` resumes and ``--table``
redraws without running). ``--readme-table`` prints the fair table's markdown for the README.

Cost: a shape is ~13 calls (the upstream search included), each one emulator run plus one replay per further
variant (docs/TIMING.md 3b: a timing-only call under all 30 variants took ~5x its nominal-only runtime wall at 4K,
~11x at 32K, not 30x). The whole set, ``--jobs 2``, took 24.9 min wall at load 5-56 on the shared 2-core machine;
each shape's worker time is in perf/out/sweep_summary.md's header (``--quick``: 2 shapes, 2 variants).
Upstream's runs are cached under ``perf/out/upstream_cache/`` keyed by everything they depend on (its descriptor, the
emulator and timing model, the wheel; see :func:`upstream_hash`), so re-running after a change to ours runs only ours.

    nice -n 5 .venv/bin/python perf/sweep.py --quick                 # check: 2 shapes x 2 variants
    nice -n 5 .venv/bin/python perf/sweep.py --jobs 2                # every shape, every variant
    nice -n 5 .venv/bin/python perf/sweep.py --variants nominal no_flow_control --shapes llama8b-n150-4k
    .venv/bin/python perf/sweep.py --table                           # tables and goals from sweep_runs/
    .venv/bin/python perf/sweep.py --readme-table                    # the README's table (markdown)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf/goals.py, perf/harness.py

from harness import source_tag  # noqa: E402

OUT = REPO / "perf" / "out"
OURS, UPSTREAM_OP = "ttflashdecode", "ScaledDotProductAttentionDecode"  # OP CODE (upstream's: its ops report name)
SIDES = ("ours", "upstream as called", "upstream best", "ours default", "upstream default")
FAIR_SIDES, DEFAULT_SIDES = SIDES[:3], SIDES[3:]
QUICK_VARIANTS = ("nominal", "no_flow_control")
GRID = (8, 8)
BLOCK = 64


@dataclass(frozen=True)
class Shape:
    """One row: a per-chip decode call as model code makes it (paged, bfloat8_b K/V)."""

    name: str
    label: str
    batch: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    kv_len: int
    head_dim_v: int = 0  # MLA: V is K's first head_dim_v columns
    tg: int = 0  # spec_multi_pos_tiles: q_len candidates per batch row
    model_cores: int = 16  # max_cores_per_head_batch the model passes
    board: str = "n150"  # ttemu.open_device's board: the chip the call runs on (Wormhole, or P150: Blackhole)
    grid: tuple = GRID  # the chip's worker grid: ours (auto) and upstream's search run over it
    model_grid: tuple = GRID  # the grid the model's SDPAProgramConfig names (upstream as called)

    def __post_init__(self):  # records on disk hold the grids as JSON lists
        object.__setattr__(self, "grid", tuple(self.grid))
        object.__setattr__(self, "model_grid", tuple(self.model_grid))

    @property
    def arch(self) -> str:
        """The chip's architecture (ttemu.arch's ArchSpec name, the timing model's chip): its variants."""
        from ttemu.arch import board_spec

        return board_spec(self.board).name

    @property
    def chip(self) -> str:
        """The chip, as the tables name it."""
        return f"{'Blackhole' if self.arch == 'blackhole' else 'Wormhole'} {self.board.upper()}"

    def variants(self, asked: list[str] | None) -> list[str]:
        """The timing variants this row runs: every variant of its chip's model (``timing.variant_names(arch)``), or
        those of ``asked`` the chip's model has (a Blackhole-only variant, bh_*, is not run on a Wormhole row)."""
        from ttemu import timing

        own = timing.variant_names(self.arch)
        return own if asked is None else [v for v in asked if v in own]

    @property
    def d_v(self) -> int:
        return self.head_dim_v or self.head_dim

    @property
    def q_rows(self) -> int:
        return 32 * self.tg if self.tg else self.n_q_heads

    @property
    def upstream_half_tile(self) -> bool:
        """Upstream runs this row's calls (causal, bfloat16 Q, q_rows query rows) on half tiles, whose P exp is the
        approximate one whatever exp_approx_mode says."""
        from ttflashdecode.upstream.plan import uses_half_tile

        return uses_half_tile(self.q_rows, is_causal=True, q_is_bfloat16=True)

    @property
    def fair_exp(self) -> str:
        """The exp both sides compute in the fair run."""
        return "approximate exp (upstream's half tiles force it)" if self.upstream_half_tile else "exact exp"

    def kv_bytes(self) -> float:
        """The cache a call must read once (bfloat8_b: 1088 bytes a 32x32 tile), K and V (MLA: K only)."""
        cols = self.head_dim + (0 if self.head_dim_v else self.d_v)
        return self.batch * self.n_kv_heads * self.kv_len * cols * 1088 / 1024


GALAXY = dict(board="galaxy", grid=(8, 9), model_grid=(8, 4))
# A P150 (Blackhole): ttnn's default dispatch leaves an 11x10 compute grid (docs/BLACKHOLE.md section 1).
# tt_transformers' model_config names SDPA_DECODE_PROGCFG's grid (8, 8) on every chip, Blackhole included (the same
# block picks Blackhole-only shard configs under is_blackhole()), so as called runs on the 8x8 rectangle; ours and
# upstream's search run over the whole 11x10 grid.
P150 = dict(board="p150", grid=(11, 10), model_grid=(8, 8))
SHAPES = [
    Shape("llama8b-n150-4k", "Llama-3.1-8B N150 b1 32q/8kv d128 4K", 1, 32, 8, 128, 4096),
    Shape("llama8b-n150-32k", "Llama-3.1-8B N150 b1 32q/8kv d128 32K", 1, 32, 8, 128, 32768),
    Shape("llama8b-t3k-4k", "Llama-3.1-8B T3K chip b1 4q/1kv d128 4K", 1, 4, 1, 128, 4096),
    Shape("llama8b-t3k-32k", "Llama-3.1-8B T3K chip b1 4q/1kv d128 32K", 1, 4, 1, 128, 32768),
    Shape("grid-b8-1k", "tech report b8 8q/1kv d128 1K", 8, 8, 1, 128, 1024),
    Shape("grid-b8-4k", "tech report b8 8q/1kv d128 4K", 8, 8, 1, 128, 4096),
    Shape("grid-b8-16k", "tech report b8 8q/1kv d128 16K", 8, 8, 1, 128, 16384),
    Shape("mla-b8-4k", "DeepSeek MLA b8 16q/1kv d576/512 4K", 8, 16, 1, 576, 4096, head_dim_v=512),
    Shape("spec4-b8-4k", "q_len 4 (spec_multi_pos_tiles 4) b8 8q/1kv d128 4K", 8, 8, 1, 128, 4096, tg=4),
    # Llama-3.1-70B on a Galaxy: kv heads over the mesh's 8 rows, the 32 users over its 4 columns, so a chip runs
    # b8 8q/1kv. Its chips are unharvested (8x9 worker grid). models/demos/llama3_70b_galaxy's paged decode config
    # names a 32-core sub_core_grids with compute_with_storage_grid_size (8, 4) and k_chunk_size 0; the reproduced
    # factory takes rectangles from (0, 0), so as called runs on the 8x4 rectangle (the same core count). The
    # published per-chip point is position 127 with 32-position blocks; this sweep's blocks are 64.
    Shape("llama70b-galaxy-128", "Llama-3.1-70B Galaxy chip b8 8q/1kv d128 128 positions", 8, 8, 1, 128, 128, **GALAXY),
    Shape("llama70b-galaxy-4k", "Llama-3.1-70B Galaxy chip b8 8q/1kv d128 4K", 8, 8, 1, 128, 4096, **GALAXY),
    # Llama-3.1-8B on one P150 (Blackhole): the N150 rows' call on the P150's 11x10 grid, timed by the engine's
    # Blackhole constants (docs/BLACKHOLE.md section 3) under Blackhole's own variants.
    Shape("llama8b-p150-4k", "Llama-3.1-8B P150 b1 32q/8kv d128 4K", 1, 32, 8, 128, 4096, **P150),
    Shape("llama8b-p150-32k", "Llama-3.1-8B P150 b1 32q/8kv d128 32K", 1, 32, 8, 128, 32768, **P150),
]
QUICK_SHAPES = ("llama8b-n150-4k", "grid-b8-4k")
SHAPE_BY_NAME = {s.name: s for s in SHAPES}


# ---- one shape's calls ---------------------------------------------------------------------------------------


class Runner:
    """A shape's tensors (made once, undefined K/V in timing-only mode) and its calls on both ops."""

    def __init__(self, dev, s: Shape):
        import torch

        from ttemu.ttnn_env import import_ttnn

        self.ttnn = ttnn = import_ttnn()
        self.dev, self.s = dev, s
        blocks = s.kv_len // BLOCK
        g = torch.Generator().manual_seed(12)
        self.q = dev.from_torch(
            torch.randn(1, s.batch, s.q_rows, s.head_dim, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT
        )
        self.k = dev.empty((s.batch * blocks, s.n_kv_heads, BLOCK, s.head_dim), ttnn.bfloat8_b)
        self.v = None if s.head_dim_v else dev.empty((s.batch * blocks, s.n_kv_heads, BLOCK, s.d_v), ttnn.bfloat8_b)
        self.table = torch.arange(s.batch * blocks, dtype=torch.int32).reshape(s.batch, blocks)
        if s.tg:  # candidate j of a row at kv_len - tg + j: ascending, the last at the cache's end
            pos = [s.kv_len - s.tg + j for _ in range(s.batch) for j in range(s.tg)]
        else:
            pos = [s.kv_len - 1] * s.batch
        self.pos = dev.from_torch(torch.tensor(pos, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)

    def fair_compute(self):
        return self.ttnn.WormholeComputeKernelConfig(
            math_fidelity=self.ttnn.MathFidelity.HiFi4,
            math_approx_mode=False,
            fp32_dest_acc_en=False,
            packer_l1_acc=False,
        )

    def call(self, module, program_config, compute_kernel_config) -> dict:
        """One call of ``module``'s paged entry point; a record (duration, bytes, plan) or the refusal."""
        s = self.s
        kw = dict(
            cur_pos_tensor=self.pos,
            program_config=program_config,
            compute_kernel_config=compute_kernel_config,
            return_stats=True,
        )
        try:
            if s.head_dim_v:
                out, run = module.paged_flash_multi_latent_attention_decode(
                    self.q, self.k, self.table, head_dim_v=s.head_dim_v, **kw
                )
            else:
                if s.tg:
                    kw["spec_multi_pos_tiles"] = s.tg
                out, run = module.paged_scaled_dot_product_attention_decode(self.q, self.k, self.v, self.table, **kw)
        except Exception as e:  # a refusal is a result (recorded), not the end of the sweep
            return {"ns": None, "note": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        out.deallocate()
        return {
            "ns": run.stats.duration_ns,
            "ns_by_variant": run.stats.durations_ns(),  # every variant the run replayed (TTFD_TIMING_VARIANTS)
            "bytes": run.stats.dram_read_bytes + run.stats.dram_write_bytes,
            "plan": _plan_text(run.plan),
            "cores": _plan_cores(run.plan),
            "note": "",
        }

    def close(self):
        for t in (self.q, self.k, self.v, self.pos):
            if t is not None:
                t.deallocate()


def _plan_text(p) -> str:
    if hasattr(p, "num_active_cores"):  # upstream's SdpaDecodePlan
        k = p.k_chunk_size or "dyn"
        return f"k{k} N{p.num_cores_per_head} {p.grid[0]}x{p.grid[1]}"
    gx, gy = p.config.compute_with_storage_grid_size
    return f"k{p.k_chunk_size} N{p.num_cores_per_head} {gx}x{gy}"


def _plan_cores(p) -> int:
    if hasattr(p, "num_active_cores"):
        return int(p.num_active_cores)
    return sum(1 for c in p.cores if c.role != "idle")


# ---- upstream's cache ----------------------------------------------------------------------------------------

# Upstream's records depend only on these (its descriptor, the emulator and its timing model, the mock cluster,
# argument checks), the wheel and how Runner makes a call: never on our kernels or planner.
UPSTREAM_SOURCES = (
    "ttflashdecode/upstream",
    "ttemu",
    "ttemu/cluster_descriptors",
    "ttflashdecode/backend.py",
    "ttflashdecode/ops/descriptors.py",
    "ttemu/ttnn_env.py",
    "ttflashdecode/checks.py",
)
UPSTREAM_CACHE = OUT / "upstream_cache"


def upstream_hash() -> str:
    """Hash of everything an upstream record depends on: UPSTREAM_SOURCES' files, the ttnn wheel's version and
    Runner's source."""
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


class UpstreamCache:
    def __init__(self, enabled: bool):
        self.enabled, self.hash = enabled, upstream_hash()

    def _path(self, key: list) -> Path:
        digest = hashlib.sha256(json.dumps([self.hash, *key], sort_keys=True).encode()).hexdigest()[:32]
        return UPSTREAM_CACHE / f"{digest}.json"

    def get(self, key: list) -> dict | None:
        if not self.enabled:
            return None
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: list, record: dict) -> None:
        if record.get("ns") is None:
            return  # failures are never cached
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(path)


# ---- measuring a shape -----------------------------------------------------------------------------------------


def measure_shape(s: Shape, variants: list[str], cache: UpstreamCache, log=print, save=None) -> list[dict]:
    """Every side of ``s`` under every variant in ``variants``, from one run of each call: the calls run under the
    nominal variant with ``TTFD_TIMING_VARIANTS`` naming the others, so the emulator replays each call's recorded
    traces under every variant (docs/TIMING.md, section 3b; equal to separate runs, test_timing_multi_variant.py).
    Upstream's search ranks its candidates under the nominal variant; "upstream best" under a variant is the fastest,
    under that variant, of every candidate the search ran. Returns the records (one per variant and side);
    ``save(records, variants_done)`` is called at the end."""
    import ttemu
    import ttflashdecode
    from ttemu import timing
    from ttflashdecode import upstream
    from ttflashdecode.config import AutoProgramConfig
    from ttflashdecode.upstream import tune

    variants = sorted(dict.fromkeys(variants), key=lambda v: v != timing.NOMINAL)
    dev = ttemu.open_device(s.board, timing_only=True)
    dev.default_hang_ms = max(dev.default_hang_ms, 2000)  # a loaded shared machine stalls threads for a while
    dev.default_deadline_s = max(dev.default_deadline_s, 3600.0)
    runner = Runner(dev, s)
    ttnn = runner.ttnn
    fair = runner.fair_compute()

    def up(cand: tune.Candidate | None, exp_approx, compute, label: str) -> dict:
        # Keyed by the program the factory builds (max_cores_per_head_batch as it applies it), so the as-called config
        # and the search's equal candidate share one run; a cached record serves when it holds every variant asked.
        cand = cand and tune.effective(cand, s.batch * s.n_kv_heads)
        key = [s.name, "all variants of one run", cand and asdict(cand), label]
        rec = cache.get(key)
        if rec is None or not set(variants) <= set(rec.get("ns_by_variant", {})):
            cfg = None if cand is None else cand.to_ttnn(ttnn, exp_approx)
            rec = runner.call(upstream, cfg, compute)
            cache.put(key, rec)
            rec["cached"] = False
        else:
            rec["cached"] = True
        return rec

    def show(what: str, rec: dict) -> None:
        ns = rec.get("ns")
        log(
            f"  {s.name} {what}: "
            + (f"{ns / 1e3:.1f} us modelled (nominal; {rec.get('plan', '')})" if ns else f"refused: {rec.get('note')}")
        )

    t0 = time.monotonic()
    try:
        with timing.variant_env(timing.NOMINAL), timing.variants_env(variants):
            auto_fair = AutoProgramConfig(compute_with_storage_grid_size=s.grid, exp_approx_mode=s.upstream_half_tile)
            ours = runner.call(ttflashdecode, auto_fair, fair)
            show("ours", ours)
            called = tune.Candidate(s.model_grid, 0, s.model_cores)
            n_eff = tune.effective(called, s.batch * s.n_kv_heads).max_cores_per_head
            as_called = up(called, False, fair, "fair")
            show("upstream as called", as_called)
            searched: dict[tune.Candidate, dict] = {}

            def run(c: tune.Candidate):
                searched[c] = rec = up(c, False, fair, "fair")
                show(f"upstream search {c.label()}", rec)
                return rec.get("ns")

            tune.search(
                run,
                grid=s.grid,
                batch=s.batch,
                n_kv_heads=s.n_kv_heads,
                kv_len=s.kv_len,
                paged=True,
                start_k_chunk_size=0,
            )
            ours_default = runner.call(ttflashdecode, None, None)
            show("ours default", ours_default)
            up_default = up(None, None, None, "default")
            show("upstream default", up_default)
    finally:
        runner.close()
        dev.close()

    def under(rec: dict, variant: str) -> dict:
        # The call's record with its duration under `variant` (bytes, plan and cores do not depend on it).
        out = {k: v for k, v in rec.items() if k != "ns_by_variant"}
        out["ns"] = (rec.get("ns_by_variant") or {}).get(variant) if rec.get("ns") is not None else None
        return out

    records: list[dict] = []
    called_text = (
        f"k_chunk_size 0, max_cores_per_head_batch {s.model_cores}"
        + (f" (the factory applies {n_eff})" if n_eff != s.model_cores else "")
        + f", {s.model_grid[0]}x{s.model_grid[1]}, {s.fair_exp}, HiFi4"
    )
    for variant in variants:

        def add(side: str, rec: dict, config: str) -> None:
            records.append(dict(under(rec, variant), shape=s.name, variant=variant, side=side, config=config))

        add("ours", ours, f"no program config (auto), {s.fair_exp}, HiFi4")
        add("upstream as called", as_called, called_text)
        ok = [(c, r) for c, r in searched.items() if under(r, variant)["ns"] is not None]
        if ok:
            c, r = min(ok, key=lambda t: under(t[1], variant)["ns"])
            add(
                "upstream best",
                r,
                f"{c.label()} (best under this variant of the {len(searched)} candidates the nominal search ran), "
                f"{s.fair_exp}, HiFi4",
            )
        else:
            add("upstream best", {"ns": None, "note": "every candidate refused"}, "search")
        add("ours default", ours_default, "no program config, no compute config")
        add("upstream default", up_default, "no program config, no compute config")
    nominal = {r["side"]: r["ns"] for r in records if r["variant"] == variants[0]}
    log(
        f"  {s.name}: {len(variants)} variants from {len(searched) + 4} calls in {time.monotonic() - t0:.0f} s; "
        + ", ".join(f"{k} {v / 1e3:.1f} us" if v else f"{k} refused" for k, v in nominal.items())
        + f" [{variants[0]}, modelled]"
    )
    if save is not None:
        save(records, list(variants))
    return records


# ---- records on disk, CSV, tables ------------------------------------------------------------------------------


def runs_dir(out: Path) -> Path:
    return out / "sweep_runs"


def save_records(out: Path, s: Shape, records: list[dict], meta: dict) -> None:
    d = runs_dir(out)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f"{s.name}.json.tmp"
    tmp.write_text(json.dumps({"shape": asdict(s), "meta": meta, "records": records}, indent=1))
    tmp.replace(d / f"{s.name}.json")


def load_records(out: Path) -> tuple[list[Shape], list[dict], dict[str, dict]]:
    shapes, records, metas = [], [], {}
    for path in sorted(runs_dir(out).glob("*.json")):
        data = json.loads(path.read_text())
        s = Shape(**data["shape"])
        shapes.append(s)
        records += data["records"]
        metas[s.name] = data["meta"]
    order = {s.name: i for i, s in enumerate(SHAPES)}
    shapes.sort(key=lambda s: order.get(s.name, len(order)))
    return shapes, records, metas


PERF_REPORT_COLUMNS = [
    # tt-metal's ops perf report (tt-perf-report reads these; DEVICE ID is required)
    "OP CODE",
    "OP TYPE",
    "GLOBAL CALL COUNT",
    "DEVICE ID",
    "ATTRIBUTES",
    "MATH FIDELITY",
    "CORE COUNT",
    "AVAILABLE WORKER CORE COUNT",
    "PARALLELIZATION STRATEGY",
    "HOST START TS",
    "HOST END TS",
    "HOST DURATION [ns]",
    "DEVICE FW START CYCLE",
    "DEVICE FW END CYCLE",
    "OP TO OP LATENCY [ns]",
    "DEVICE FW DURATION [ns]",
    "DEVICE KERNEL DURATION [ns]",
    "DEVICE ARCH",
    "INPUT_0_W",
    "INPUT_0_Z",
    "INPUT_0_Y",
    "INPUT_0_X",
    "INPUT_0_LAYOUT",
    "INPUT_0_DATATYPE",
    "INPUT_0_MEMORY",
    "INPUT_1_W",
    "INPUT_1_Z",
    "INPUT_1_Y",
    "INPUT_1_X",
    "INPUT_1_LAYOUT",
    "INPUT_1_DATATYPE",
    "INPUT_1_MEMORY",
    "OUTPUT_0_W",
    "OUTPUT_0_Z",
    "OUTPUT_0_Y",
    "OUTPUT_0_X",
    "OUTPUT_0_LAYOUT",
    "OUTPUT_0_DATATYPE",
    "OUTPUT_0_MEMORY",
]
EXTRA_COLUMNS = [
    "SHAPE",
    "SIDE",
    "TABLE",
    "VARIANT",
    "CONFIG",
    "PLAN",
    "KV LEN",
    "DRAM BYTES",
    "GB/s",
    "SOURCE",
    "NOTE",
]
COLUMNS = PERF_REPORT_COLUMNS + EXTRA_COLUMNS


def csv_rows(shapes: list[Shape], records: list[dict]) -> list[dict]:
    """One ops-perf-report line per record (shape, variant, side), in shape / variant / side order. Durations are
    modelled (SOURCE); host columns are 0 (no host ran); HOST START TS orders the lines (tt-perf-report sorts by it)."""
    by_shape = {s.name: s for s in shapes}
    rows = []
    for rec in sorted(
        records,
        key=lambda r: (
            [s.name for s in shapes].index(r["shape"]),
            r["variant"] != "nominal",
            r["variant"],
            SIDES.index(r["side"]),
        ),
    ):
        s = by_shape[rec["shape"]]
        i = len(rows) + 1
        ns = rec.get("ns")
        fidelity = "HiFi2" if rec["side"] == "upstream default" else "HiFi4"
        blocks = s.batch * s.kv_len // BLOCK
        rows.append(
            {
                "OP CODE": OURS if rec["side"].startswith("ours") else UPSTREAM_OP,
                "OP TYPE": "tt_dnn_device",
                "GLOBAL CALL COUNT": i,
                "DEVICE ID": 0,
                "ATTRIBUTES": json.dumps(
                    {
                        "shape": s.label,
                        "side": rec["side"],
                        "variant": rec["variant"],
                        "config": rec.get("config", ""),
                        "paged_block_size": BLOCK,
                        "spec_multi_pos_tiles": s.tg,
                        "head_dim_v": s.d_v,
                    }
                ),
                "MATH FIDELITY": fidelity,
                "CORE COUNT": rec.get("cores", ""),
                "AVAILABLE WORKER CORE COUNT": s.grid[0] * s.grid[1],
                "PARALLELIZATION STRATEGY": "",
                "HOST START TS": i,
                "HOST END TS": i,
                "HOST DURATION [ns]": 0,
                "DEVICE FW START CYCLE": 0,
                "DEVICE FW END CYCLE": 0,
                "OP TO OP LATENCY [ns]": 0,
                "DEVICE FW DURATION [ns]": f"{ns:.0f}" if ns else "",
                "DEVICE KERNEL DURATION [ns]": f"{ns:.0f}" if ns else "",
                "DEVICE ARCH": s.arch,
                "INPUT_0_W": 1,
                "INPUT_0_Z": s.batch,
                "INPUT_0_Y": s.q_rows,
                "INPUT_0_X": s.head_dim,
                "INPUT_0_LAYOUT": "TILE",
                "INPUT_0_DATATYPE": "BFLOAT16",
                "INPUT_0_MEMORY": "DEV_0_DRAM_INTERLEAVED",
                "INPUT_1_W": blocks,
                "INPUT_1_Z": s.n_kv_heads,
                "INPUT_1_Y": BLOCK,
                "INPUT_1_X": s.head_dim,
                "INPUT_1_LAYOUT": "TILE",
                "INPUT_1_DATATYPE": "BFLOAT8_B",
                "INPUT_1_MEMORY": "DEV_0_DRAM_INTERLEAVED",
                "OUTPUT_0_W": 1,
                "OUTPUT_0_Z": s.batch,
                "OUTPUT_0_Y": s.q_rows,
                "OUTPUT_0_X": s.d_v,
                "OUTPUT_0_LAYOUT": "TILE",
                "OUTPUT_0_DATATYPE": "BFLOAT16",
                "OUTPUT_0_MEMORY": "DEV_0_DRAM_INTERLEAVED",
                "SHAPE": s.label,
                "SIDE": rec["side"],
                "TABLE": "fair" if rec["side"] in FAIR_SIDES else "defaults",
                "VARIANT": rec["variant"],
                "CONFIG": rec.get("config", ""),
                "PLAN": rec.get("plan", ""),
                "KV LEN": s.kv_len,
                "DRAM BYTES": rec.get("bytes", ""),
                "GB/s": f"{rec['bytes'] / ns:.1f}" if ns and rec.get("bytes") else "",
                "SOURCE": "modelled",
                "NOTE": rec.get("note", ""),
            }
        )
    return rows


def write_csv(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def plot_ratios(shapes: list[Shape], records: list[dict], path: Path) -> None:
    """sweep_ratio.png: per row, upstream / ours at the nominal model with the min-max over variants as an error bar,
    against upstream as called and at its best (fair table), and each op's defaults."""
    import matplotlib

    matplotlib.use("Agg")
    import goals
    import matplotlib.pyplot as plt

    rows = [goals.Row(s, records) for s in shapes]
    fig, ax = plt.subplots(figsize=(max(8.0, 1.3 * len(rows)), 5.0))
    pairs = (
        ("upstream as called", "ours", "vs upstream as called"),
        ("upstream best", "ours", "vs upstream at its best"),
        ("upstream default", "ours default", "defaults vs defaults"),
    )
    width = 0.8 / len(pairs)
    for k, (up_side, ours_side, label) in enumerate(pairs):
        xs, ys, lo, hi = [], [], [], []
        for i, r in enumerate(rows):
            ratios = r.ratios(up_side, ours_side)
            if not ratios:
                continue
            mid = ratios.get(goals.NOMINAL, sum(ratios.values()) / len(ratios))
            xs.append(i + (k - 1) * width)
            ys.append(mid)
            lo.append(mid - min(ratios.values()))
            hi.append(max(ratios.values()) - mid)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=label, color=f"C{k}")
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r.shape.label.replace(" b", "\nb", 1) for r in rows], fontsize=7, rotation=20, ha="right")
    ax.set_ylabel("upstream duration / ours (above 1: ours faster)")
    ax.set_title(
        "ttflashdecode vs upstream sdpa_decode, MODELLED\n(bars: nominal model; whiskers: min-max over the "
        "timing model's variants)",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(out: Path) -> Path:
    """sweep.csv, sweep_summary.md and sweep_ratio.png from sweep_runs/."""
    import goals

    shapes, records, metas = load_records(out)
    write_csv(out / "sweep.csv", csv_rows(shapes, records))
    summary = out / "sweep_summary.md"
    summary.write_text(goals.summary(shapes, records, metas) + "\n")
    if records:
        plot_ratios(shapes, records, out / "sweep_ratio.png")
    return summary


# ---- main ------------------------------------------------------------------------------------------------------


def _worker(args) -> None:
    s = SHAPE_BY_NAME[args.worker]
    t0 = time.monotonic()
    tag, uhash = source_tag(), upstream_hash()
    variants = s.variants(args.variants)

    def save(records: list[dict], variants_done: list[str]) -> None:
        meta = {
            "commit": tag,
            "upstream_hash": uhash,
            "variants": variants_done,
            "variants_asked": variants,
            "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "seconds": round(time.monotonic() - t0),
            "source": "modelled (emulator timing model, timing-only)",
        }
        save_records(args.out, s, records, meta)

    measure_shape(s, variants, UpstreamCache(not args.no_upstream_cache), log=lambda m: print(m, flush=True), save=save)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", nargs="+", choices=list(SHAPE_BY_NAME), help="rows to run (default: all)")
    ap.add_argument(
        "--variants",
        nargs="+",
        help="timing variants to run (default: every variant of each row's chip, variant_names(arch); a row runs "
        "those of these its chip's model has)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"{len(QUICK_SHAPES)} shapes ({', '.join(QUICK_SHAPES)}) x {len(QUICK_VARIANTS)} variants "
        f"({', '.join(QUICK_VARIANTS)}), for checking",
    )
    ap.add_argument("--jobs", type=int, default=1, help="shapes run in this many worker processes at once")
    ap.add_argument(
        "--append",
        action="store_true",
        help="skip shapes sweep_runs/ holds at this commit with every variant asked for",
    )
    ap.add_argument("--no-upstream-cache", action="store_true", help="run upstream even when its cache has the call")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--table",
        action="store_true",
        help="rewrite sweep.csv and sweep_summary.md from sweep_runs/, print the summary and exit",
    )
    ap.add_argument("--readme-table", action="store_true", help="print the fair table's markdown and exit")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.readme_table:
        import goals

        shapes, records, metas = load_records(args.out)
        runs = args.out / "sweep_runs"
        runs = runs.relative_to(REPO) if runs.is_relative_to(REPO) else runs
        print(goals.readme_table(shapes, records, metas, f"{runs}/"))
        return
    if args.table:
        print(write_outputs(args.out).read_text())
        return
    if args.variants is None and args.quick:
        args.variants = list(QUICK_VARIANTS)
    if args.worker:
        return _worker(args)
    names = args.shapes or (list(QUICK_SHAPES) if args.quick else [s.name for s in SHAPES])
    for n in names:
        if not SHAPE_BY_NAME[n].variants(args.variants):
            ap.error(f"--variants {' '.join(args.variants)}: none is a variant of {n}'s chip ({SHAPE_BY_NAME[n].arch})")
    if args.append:
        _, _, metas = load_records(args.out)
        tag = source_tag()
        names = [
            n
            for n in names
            if not (
                metas.get(n, {}).get("commit") == tag
                and set(SHAPE_BY_NAME[n].variants(args.variants)) <= set(metas[n].get("variants", []))
            )
        ]
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    counts = sorted({len(SHAPE_BY_NAME[n].variants(args.variants)) for n in names})
    print(
        f"{len(names)} shapes x {'/'.join(map(str, counts))} variants, --jobs {args.jobs} (all durations modelled)",
        flush=True,
    )
    pending, running = list(names), {}
    while pending or running:
        while pending and len(running) < args.jobs:
            name = pending.pop(0)
            argv = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                name,
                "--out",
                str(args.out),
            ]
            argv += ["--variants", *args.variants] if args.variants else []
            argv += ["--no-upstream-cache"] if args.no_upstream_cache else []
            running[subprocess.Popen(argv, cwd=REPO)] = (name, time.monotonic())
        time.sleep(1)
        for p in [p for p in running if p.poll() is not None]:
            name, started = running.pop(p)
            print(f"[{name}] exit {p.returncode} after {time.monotonic() - started:.0f} s", flush=True)
    summary = write_outputs(args.out)
    print(summary.read_text())
    print(
        f"{len(names)} shapes in {(time.monotonic() - t0) / 60:.1f} min wall; wrote {args.out / 'sweep.csv'} and "
        f"{summary} (all durations modelled)"
    )


if __name__ == "__main__":
    main()
