"""What the perf scripts share: this tree on the path, the emulated device, a seeded decode call with its modelled
duration and counters, and the stamp and files a table is written with.

A script in perf/ imports it first (``import harness``: perf/ is on sys.path when the script runs), which puts this
tree ahead of an installed ttflashdecode, so the script measures the code beside it. Every duration it hands back
comes from the emulator's timing model (docs/TIMING.md): modelled, never a silicon measurement, and ``stamp()``
says so next to the commit and time a table was made at.
"""

from __future__ import annotations

import csv
import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "perf" / "out"
if str(REPO) not in sys.path[:1]:
    sys.path.insert(0, str(REPO))


@cache
def ttnn():
    """The ttnn module the emulator stands in for (ttemu's when no card's ttnn is installed)."""
    from ttemu.ttnn_env import import_ttnn

    return import_ttnn()


def open_device(board: str = "n150", *, timing_only: bool = False, hang_ms: int | None = None):
    """An emulated chip. ``timing_only``: kernels run without arithmetic (the same modelled durations, no outputs);
    ``hang_ms``: how long no thread may progress before a program counts as hung (raise it on a loaded machine)."""
    import ttemu

    dev = ttemu.open_device(board, timing_only=timing_only)
    if hang_ms is not None:
        dev.default_hang_ms = max(dev.default_hang_ms, hang_ms)
    return dev


def tile(dev, x, dtype: str = "bfloat16", **kwargs):
    """``x`` (a torch tensor) on ``dev`` in tile layout as ``dtype`` (a ttnn dtype's name)."""
    t = ttnn()
    return dev.from_torch(x, dtype=getattr(t, dtype), layout=t.TILE_LAYOUT, **kwargs)


def int32(dev, values):
    """``values`` (nested lists) as the int32 row-major tensor that positions (``cur_pos_tensor``) and page tables
    are."""
    import torch

    t = ttnn()
    return dev.from_torch(torch.tensor(values, dtype=torch.int32), dtype=t.int32, layout=t.ROW_MAJOR_LAYOUT)


def seeded_inputs(
    dev,
    batch: int,
    n_q_heads: int,
    n_kv_heads: int,
    kv_len: int,
    head_dim: int = 128,
    kv_dtype: str = "bfloat8_b",
    seed: int = 0,
    timing_only: bool = False,
):
    """Q, K and V of a decode call on ``dev``: standard normal values drawn in that order from one generator seeded
    with ``seed`` (K and V left undefined when ``timing_only``: nothing reads their values)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    q = tile(dev, torch.randn(1, batch, n_q_heads, head_dim, generator=g))
    kv_shape = (batch, n_kv_heads, kv_len, head_dim)
    if timing_only:
        k, v = (dev.empty(kv_shape, getattr(ttnn(), kv_dtype)) for _ in range(2))
    else:
        k, v = (tile(dev, torch.randn(*kv_shape, generator=g), kv_dtype) for _ in range(2))
    return q, k, v


@dataclass
class Decoded:
    """One decode call: its output tensor, the op's run record (``stats``: the emulator's counters and modelled
    timing; ``plan``) and the host's wall seconds for the call."""

    output: Any
    run: Any
    wall_s: float

    @property
    def stats(self):
        return self.run.stats

    @property
    def plan(self):
        return self.run.plan

    @property
    def duration_ns(self) -> float | None:
        """The modelled duration (None when the emulator reports no timing)."""
        return self.run.stats.duration_ns


def decode(*tensors, op=None, **kwargs) -> Decoded:
    """Run ``op`` (default ttflashdecode's ``scaled_dot_product_attention_decode``) on ``tensors`` (Q, K, V and, for a
    paged op, the page table) with ``return_stats=True``."""
    if op is None:
        import ttflashdecode

        op = ttflashdecode.scaled_dot_product_attention_decode
    t0 = time.perf_counter()
    output, run = op(*tensors, return_stats=True, **kwargs)
    return Decoded(output, run, time.perf_counter() - t0)


def _git(*argv: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *argv], capture_output=True, text=True, check=True).stdout


SOURCE_PATHS = ("ttflashdecode", "program_configs")


def source_tag() -> str:
    """HEAD's short hash, with ``+dirty-<hash>`` when SOURCE_PATHS differ from HEAD (the hash is of the difference,
    so two different dirty trees never share a tag). $TTFD_SWEEP_COMMIT overrides. Every table in perf/out is
    tagged with it (perf/sweep.py's records too), so two tables at the same tag ran the same op code."""
    if os.environ.get("TTFD_SWEEP_COMMIT"):
        return os.environ["TTFD_SWEEP_COMMIT"]
    try:
        head = _git("rev-parse", "--short", "HEAD").strip()
        status = _git("status", "--porcelain", "--untracked-files=all", "--", *SOURCE_PATHS)
        if not status.strip():
            return head
        h = hashlib.sha1(
            subprocess.run(
                ["git", "-C", str(REPO), "diff", "HEAD", "--", *SOURCE_PATHS], capture_output=True, check=True
            ).stdout
        )
        for line in status.splitlines():
            if line.startswith("??"):
                path = REPO / line[3:]
                h.update(line.encode() + (path.read_bytes() if path.is_file() else b""))
        return f"{head}+dirty-{h.hexdigest()[:8]}"
    except Exception:
        return "unknown"


def utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def stamp() -> str:
    """What a table of the emulator's durations is: "modelled, at <commit>, <UTC time>"."""
    return f"modelled, at {source_tag()}, {utc_now()}"


def write_table(stem: Path | str, rows: list[dict], markdown: str) -> Path:
    """``rows`` to ``<stem>.csv`` (one column a key, in the first row's order) and ``markdown`` to ``<stem>.md``;
    returns the stem. The directory is made when missing (perf/out by default)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    with stem.with_suffix(".csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
        w.writeheader()
        w.writerows(rows)
    stem.with_suffix(".md").write_text(markdown if markdown.endswith("\n") else markdown + "\n")
    return stem
