"""Side-by-side benchmark (issue 12 item 3, first part): ttflashdecode vs upstream's sdpa_decode kernels
(``ttflashdecode.upstream``, the wheel's sources) on the same emulated chip and the same timing model.

Every duration is MODELLED by the emulator's timing model (docs/TIMING.md), not measured on silicon.

Grid: the FlashDecode tech report's shapes: bfloat8_b K/V, batch 8/16/32, head_dim 64/128/256, 8 q heads / 1 kv
head, kv_len up to 128K, every user at the last position (causal). Each call goes through the public entry points
with their default program configs, as a model would call them.

Writes ``perf/out/sweep.csv`` in the column style of tt-metal's ops perf report (OP CODE, DEVICE KERNEL DURATION
[ns]) plus DRAM bytes, GB/s (bytes read and written / duration) and the ratio to upstream (upstream's duration / this
op's: above 1 is faster than upstream), and PNGs of GB/s against kv_len per head_dim and batch (perf/out/).

    .venv/bin/python perf/sweep.py --batches 8 --head-dims 64 128 --kv-lens 1024 4096   # a quick subset
    .venv/bin/python perf/sweep.py                                                    # the whole grid (hours)
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import ttflashdecode  # noqa: E402
from ttflashdecode import emulator, upstream  # noqa: E402
from ttflashdecode.ttnn_env import import_ttnn  # noqa: E402

ttnn = import_ttnn()
OUT = REPO / "perf" / "out"
COLUMNS = ["OP CODE", "BATCH", "Q HEADS", "KV HEADS", "HEAD DIM", "KV LEN", "KV DTYPE",
           "DEVICE KERNEL DURATION [ns]", "DRAM BYTES", "GB/s", "RATIO TO UPSTREAM", "SOURCE"]  # fmt: skip
OPS = {"ttflashdecode": (ttflashdecode, lambda: ttflashdecode.op.last_run.stats),
       "upstream sdpa_decode": (upstream, lambda: upstream.last_run.stats)}  # fmt: skip


@dataclass(frozen=True)
class Shape:
    batch: int
    head_dim: int
    kv_len: int
    n_q_heads: int = 8
    n_kv_heads: int = 1


def run_shape(dev, s: Shape, seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, s.batch, s.n_q_heads, s.head_dim, generator=g)
    k = torch.randn(s.batch, s.n_kv_heads, s.kv_len, s.head_dim, generator=g)
    v = torch.randn(s.batch, s.n_kv_heads, s.kv_len, s.head_dim, generator=g)
    tq = dev.from_torch(q, dtype=ttnn.bfloat16)
    tk, tv = (dev.from_torch(x, dtype=ttnn.bfloat8_b) for x in (k, v))
    rows = []
    for name, (module, last_stats) in OPS.items():
        out = module.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=[s.kv_len - 1] * s.batch)
        stats = last_stats()
        out.deallocate()
        ns = stats.duration_ns
        moved = stats.dram_read_bytes + stats.dram_write_bytes
        rows.append({
            "OP CODE": name, "BATCH": s.batch, "Q HEADS": s.n_q_heads, "KV HEADS": s.n_kv_heads,
            "HEAD DIM": s.head_dim, "KV LEN": s.kv_len, "KV DTYPE": "BFLOAT8_B",
            "DEVICE KERNEL DURATION [ns]": f"{ns:.0f}" if ns is not None else "",
            "DRAM BYTES": moved, "GB/s": f"{moved / ns:.1f}" if ns else "", "SOURCE": "modelled",
        })  # fmt: skip
    up = float(rows[1]["DEVICE KERNEL DURATION [ns]"] or "nan")
    for r in rows:
        d = float(r["DEVICE KERNEL DURATION [ns]"] or "nan")
        r["RATIO TO UPSTREAM"] = f"{up / d:.3f}"
    for t in (tq, tk, tv):
        t.deallocate()
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = sorted({int(r["HEAD DIM"]) for r in rows})
    fig, axes = plt.subplots(1, len(dims), figsize=(5 * len(dims), 4), squeeze=False)
    for ax, d in zip(axes[0], dims):
        for (op, b) in sorted({(r["OP CODE"], int(r["BATCH"])) for r in rows if int(r["HEAD DIM"]) == d}):
            pts = sorted((int(r["KV LEN"]), float(r["GB/s"])) for r in rows
                         if r["OP CODE"] == op and int(r["BATCH"]) == b and int(r["HEAD DIM"]) == d and r["GB/s"])
            if pts:
                ax.plot(*zip(*pts), marker="o", linestyle="-" if op == "ttflashdecode" else "--",
                        label=f"{op}, batch {b}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("kv_len")
        ax.set_ylabel("GB/s (modelled)")
        ax.set_title(f"head_dim {d}, 8 q / 1 kv heads, bfloat8_b K/V")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("FlashDecode vs upstream sdpa_decode: DRAM GB/s, MODELLED by the emulator's timing model")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--head-dims", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--kv-lens", type=int, nargs="+", default=[1024, 4096, 16384, 32768, 65536, 131072])
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--csv", type=Path, default=OUT / "sweep.csv")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    dev = emulator.open_device("n150")
    rows: list[dict] = []
    try:
        for b in args.batches:
            for d in args.head_dims:
                for kv in args.kv_lens:
                    t0 = time.monotonic()
                    new = run_shape(dev, Shape(b, d, kv), args.seed)
                    rows += new
                    print(" | ".join(f"{r['OP CODE']}: {r['DEVICE KERNEL DURATION [ns]']} ns, {r['GB/s']} GB/s, "
                                     f"x{r['RATIO TO UPSTREAM']}" for r in new)
                          + f"  (batch {b}, head_dim {d}, kv_len {kv}; modelled; {time.monotonic() - t0:.0f} s)",
                          flush=True)  # fmt: skip
                    with open(args.csv, "w", newline="") as f:  # rewritten after every shape: a partial sweep counts
                        w = csv.DictWriter(f, fieldnames=COLUMNS)
                        w.writeheader()
                        w.writerows(rows)
    finally:
        dev.close()
    png = args.csv.with_suffix(".png")
    plot(rows, png)
    print(f"wrote {args.csv} and {png} (all durations modelled)")


if __name__ == "__main__":
    main()
