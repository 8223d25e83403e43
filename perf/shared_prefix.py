"""Shared-prefix decode against the plain paged decode: the same batch, the same cache, MODELLED bytes and time.

Issue 25's benchmark. Every duration is MODELLED by the emulator's timing model (docs/TIMING.md), not measured on
silicon; bytes are the emulator's DRAM counters of the K and V tensors. Both sides run on an emulated N150 chip in
timing-only mode (no math: the same durations as a full run), K/V uninitialised (``EmuDevice.empty``), the default
program config ("auto": the tuned table or the fixed rule) and the default compute settings, bfloat8_b K/V.

One prefix group of U users ("n samples of one prompt"): every user's cache is the prompt's P positions (the same
blocks for every user) and then S positions of its own. Like for like:

* plain:  ``paged_scaled_dot_product_attention_decode``, each user's page table = the prefix's blocks, then its own,
  cur_pos = P + S - 1 (one program);
* shared: ``shared_prefix_decode`` over the same blocks, prefix_lens = [P], suffix_cur_pos = S - 1 (-1 for S = 0)
  (three programs: prefix level, suffix level, merge; their modelled durations are added, as they run one after
  another).

Shapes (per chip): Llama-3.1-8B on N150 (32 q / 8 kv heads, head_dim 128) and Llama-3.1-70B on a T3K chip (64 q / 8
kv heads over 8 chips: 8 q / 1 kv head, head_dim 128). Block size 64.

    nice -n 5 .venv/bin/python perf/shared_prefix.py           # the default grid (see DEFAULT below; ~25 min)
    nice -n 5 .venv/bin/python perf/shared_prefix.py --quick   # 6 points (~4 min)
    nice -n 5 .venv/bin/python perf/shared_prefix.py --full    # prefix 1K-32K x suffix 0-4K x 4-64 users, both models

Writes perf/out/shared_prefix.csv, .md (the table docs/SHARED_PREFIX.md carries) and .png (matplotlib).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import harness
import torch

BLOCK = 64
KV_DTYPE = "bfloat8_b"
MODELS = {  # name: (n_q_heads, n_kv_heads, head_dim) per chip
    "Llama-3.1-8B N150": (32, 8, 128),
    "Llama-3.1-70B T3K chip": (8, 1, 128),
}
QUICK = [(m, p, s, u) for m in MODELS for (p, s, u) in ((4096, 0, 16), (4096, 512, 4), (1024, 4096, 16))]
DEFAULT = [(m, p, s, u) for m in MODELS for p in (1024, 8192, 32768) for s in (0, 4096) for u in (4, 16, 64)]
FULL = [(m, p, s, u) for m in MODELS for p in (1024, 4096, 8192, 32768) for s in (0, 512, 4096) for u in (4, 16, 64)]


@dataclass
class Row:
    model: str
    prefix: int
    suffix: int
    users: int
    plain_kv_mib: float
    shared_kv_mib: float
    plain_us: float
    shared_us: float
    prefix_us: float
    suffix_us: float
    merge_us: float

    @property
    def speedup(self) -> float:
        return self.plain_us / self.shared_us

    @property
    def bytes_ratio(self) -> float:
        return self.plain_kv_mib / self.shared_kv_mib


def measure(device, model: str, prefix: int, suffix: int, users: int, max_group_rows: int | None = None) -> Row:
    import ttflashdecode

    ttnn = harness.ttnn()
    n_q, n_kv, d = MODELS[model]
    prefix_blocks = prefix // BLOCK
    suffix_blocks = -(-suffix // BLOCK)
    num_blocks = prefix_blocks + users * suffix_blocks + 1
    dtype = getattr(ttnn, KV_DTYPE)
    k = device.empty([num_blocks, n_kv, BLOCK, d], dtype, ttnn.TILE_LAYOUT)
    v = device.empty([num_blocks, n_kv, BLOCK, d], dtype, ttnn.TILE_LAYOUT)
    q = harness.tile(device, torch.zeros(1, users, n_q, d))

    def int32(values):
        return harness.int32(device, values)

    own = [[prefix_blocks + u * suffix_blocks + i for i in range(suffix_blocks)] for u in range(users)]
    width = max(suffix_blocks, 1)
    plain_table = int32([list(range(prefix_blocks)) + own[u] + [0] * (width - suffix_blocks) for u in range(users)])
    cur_pos = int32([prefix + suffix - 1] * users)
    plain = harness.decode(
        q, k, v, plain_table, op=ttflashdecode.paged_scaled_dot_product_attention_decode, cur_pos_tensor=cur_pos
    ).stats
    plain_bytes = plain.bytes_read_from(k) + plain.bytes_read_from(v)

    suffix_table = int32([own[u] + [0] * (width - suffix_blocks) for u in range(users)])
    prefix_table = int32([list(range(prefix_blocks))])
    _, result = ttflashdecode.shared_prefix_decode(
        q,
        k,
        v,
        groups=[list(range(users))],
        prefix_lens=[prefix],
        prefix_page_table=prefix_table,
        suffix_page_table=suffix_table,
        suffix_cur_pos_tensor=int32([suffix - 1] * users),
        return_stats=True,
        **({} if max_group_rows is None else {"max_group_rows": max_group_rows}),
    )
    shared_bytes = sum(s.bytes_read_from(k) + s.bytes_read_from(v) for s in (result.prefix_stats, result.suffix_stats))
    mib = 1 << 20
    return Row(
        model,
        prefix,
        suffix,
        users,
        plain_bytes / mib,
        shared_bytes / mib,
        plain.duration_ns / 1000,
        result.duration_ns / 1000,
        result.prefix_stats.duration_ns / 1000,
        result.suffix_stats.duration_ns / 1000,
        result.merge_stats.duration_ns / 1000,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--out", default=str(harness.OUT / "shared_prefix"))
    args = parser.parse_args()
    points = QUICK if args.quick else FULL if args.full else DEFAULT
    device = harness.open_device(timing_only=True)
    rows: list[Row] = []
    t0 = time.monotonic()
    for i, point in enumerate(points):
        t = time.monotonic()
        row = measure(device, *point)
        rows.append(row)
        print(
            f"[{i + 1}/{len(points)}] {row.model} prefix {row.prefix} suffix {row.suffix} users {row.users}: "
            f"plain {row.plain_us:.1f} us {row.plain_kv_mib:.1f} MiB, shared {row.shared_us:.1f} us "
            f"{row.shared_kv_mib:.1f} MiB: {row.speedup:.2f}x ({time.monotonic() - t:.0f} s)",
            flush=True,
        )
    device.close()
    write(rows, Path(args.out), time.monotonic() - t0, "--quick" if args.quick else "--full" if args.full else "")


def write(rows: list[Row], out: Path, wall: float, mode: str) -> None:
    table = [
        {
            "model": r.model,
            "prefix": r.prefix,
            "suffix": r.suffix,
            "users": r.users,
            "plain_kv_MiB": f"{r.plain_kv_mib:.2f}",
            "shared_kv_MiB": f"{r.shared_kv_mib:.2f}",
            "plain_us_modelled": f"{r.plain_us:.1f}",
            "shared_us_modelled": f"{r.shared_us:.1f}",
            "prefix_level_us": f"{r.prefix_us:.1f}",
            "suffix_level_us": f"{r.suffix_us:.1f}",
            "merge_us": f"{r.merge_us:.1f}",
            "speedup_modelled": f"{r.speedup:.3f}",
        }
        for r in rows
    ]
    lines = [
        "| model (per chip) | prefix | suffix | users | K/V read plain / shared (MiB) | plain (us, modelled) | "
        "shared (us, modelled: prefix + suffix + merge) | speedup (modelled) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.prefix} | {r.suffix} | {r.users} | {r.plain_kv_mib:.1f} / {r.shared_kv_mib:.1f} | "
            f"{r.plain_us:.1f} | {r.shared_us:.1f} ({r.prefix_us:.1f} + {r.suffix_us:.1f} + {r.merge_us:.1f}) | "
            f"{r.speedup:.2f}x |"
        )
    lines.append("")
    lines.append(
        f"bfloat8_b K/V, block 64, one prefix group, emulated N150 chip, timing-only; at "
        f"{harness.source_tag()}, `perf/shared_prefix.py {mode}`, {wall / 60:.1f} min wall."
    )
    harness.write_table(out, table, "\n".join(lines))
    plot(rows, out.with_suffix(".png"))
    print(f"wrote {out.with_suffix('.csv')}, .md, .png")


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({r.model for r in rows})
    suffixes = sorted({r.suffix for r in rows})
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.5), squeeze=False)
    for ax, model in zip(axes[0], models, strict=True):
        for s in suffixes:
            for p in sorted({r.prefix for r in rows}):
                pts = sorted((r.users, r.speedup) for r in rows if r.model == model and r.suffix == s and r.prefix == p)
                if len(pts) > 1:
                    ax.plot(*zip(*pts, strict=True), marker="o", label=f"prefix {p // 1024}K, suffix {s}")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("users sharing the prefix")
        ax.set_ylabel("plain / shared time (modelled)")
        ax.set_title(model)
        ax.legend(fontsize=7)
    fig.suptitle("Shared-prefix decode vs plain paged decode (MODELLED, emulated N150 chip, bfloat8_b K/V)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
