"""The tech report's multi-chip experiment on emulated T3K chips: Llama-3.1-8B decode attention, batch 1, heads split
over 1 / 2 / 4 / 8 devices, max_cores_per_head_batch 16 and 64, context up to 128K.

    .venv/bin/python perf/multichip.py                    # contexts 1K .. 128K (long: minutes per 64K+ context)
    .venv/bin/python perf/multichip.py --max-kv 8192      # a quick run
    .venv/bin/python perf/multichip.py --devices 8 --cores 16,64 --max-kv 32768

Every run is the real op on an emulated mesh (``ttemu.open_mesh_device("t3k", mesh_shape=(1, n))``: n chips, each
an 8x7 Wormhole grid with its own DRAM, running concurrently) with the heads sharded over the chips, checked
against the golden model (PCC column). Printed per run, from each chip's emulator counters (the chips of a run are
identical, so one chip's figures are shown, and the table says so if they ever differ):

- cores/head and rounds: the plan's group size (min(max_cores_per_head_batch, 56 // kv heads per chip)) and the
  reduction tree's depth;
- DRAM MB/chip (all DRAM bytes read by a chip), busiest core MB (one core's share of them) and partials KB/chip (NoC
  bytes of the reduction tree's partial results: O, m and l moved between cores);
- latency: the emulator timing model's ``duration_ns`` (the slowest chip; "modelled") when the emulator's statistics
  report one, else a bandwidth bound, max(chip's DRAM bytes / 267 GB/s, busiest core's bytes / 32 GB/s) per chip
  (perf/flash_decode_traffic.py's model: the best observed Wormhole DRAM figure and one core's NoC port,
  /work/shared/WORMHOLE.md), which ignores compute, latency, NoC contention and the tree's semaphore round trips.
  The plot (perf/out/multichip_latency.png) draws latency against context and says which of the two it is.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import harness
import torch

import ttemu
from ttflashdecode import golden
from ttflashdecode.config import ProgramConfig

ttnn = harness.ttnn()

N_Q_HEADS, N_KV_HEADS, HEAD_DIM = 32, 8, 128  # Llama-3.1-8B
KV_DTYPE = "bfloat8_b"
CHIP_GRID = (8, 7)  # a T3K chip (an N300 card's chip)
DRAM_BYTES_PER_S = 267e9  # a chip's best observed DRAM bandwidth (WORMHOLE.md)
CORE_NOC_BYTES_PER_S = 32e9  # one core's NoC port: 32 B/cycle at 1 GHz
OUT_DIR = harness.OUT


@dataclass
class Row:
    devices: int
    max_cores: int
    kv_len: int
    cores_per_head: int
    rounds: int
    k_chunk: int
    dram_mb: float  # per chip
    busiest_mb: float
    partials_kb: float  # per chip
    chips_equal: bool
    bandwidth_us: float
    modelled_us: float | None
    pcc: float
    emu_s: float

    @property
    def latency_us(self) -> float:
        return self.bandwidth_us if self.modelled_us is None else self.modelled_us


def chip_counters(stats) -> tuple[int, int, int]:
    """(DRAM bytes read, busiest core's DRAM bytes, core-to-core NoC bytes) of one chip's run."""
    per_core: dict[str, int] = {}
    partials = 0
    for (src, dst), n in stats.noc_bytes.items():
        if src.startswith("dram"):
            per_core[dst] = per_core.get(dst, 0) + n
        elif not dst.startswith("dram"):
            partials += n
    return stats.dram_read_bytes, max(per_core.values(), default=0), partials


def run_context(kv_len: int, devices: list[int], cores: list[int], seed: int) -> list[Row]:
    gen = torch.Generator().manual_seed(seed * 1_000_003 + kv_len)
    q = torch.randn(1, 1, N_Q_HEADS, HEAD_DIM, generator=gen)
    k = torch.randn(1, N_KV_HEADS, kv_len, HEAD_DIM, generator=gen, dtype=torch.bfloat16)
    v = torch.randn(1, N_KV_HEADS, kv_len, HEAD_DIM, generator=gen, dtype=torch.bfloat16)
    cur_pos = [kv_len - 1]
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, KV_DTYPE),
        golden.quantize_like_device(v, KV_DTYPE),
        cur_pos=cur_pos,
    )
    kv_dtype = getattr(ttnn, KV_DTYPE)
    rows = []
    for n in devices:
        with ttemu.open_mesh_device(board="t3k", mesh_shape=(1, n)) as mesh:
            for chip in mesh.get_devices():
                chip.default_deadline_s = 3600.0  # long contexts on a loaded host
            shard = lambda dim: ttemu.ShardTensorToMesh(mesh, dim=dim)  # noqa: E731
            tq = mesh.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, mesh_mapper=shard(2))
            tk = mesh.from_torch(k, dtype=kv_dtype, layout=ttnn.TILE_LAYOUT, mesh_mapper=shard(1))
            tv = mesh.from_torch(v, dtype=kv_dtype, layout=ttnn.TILE_LAYOUT, mesh_mapper=shard(1))
            for max_cores in cores:
                config = ProgramConfig(compute_with_storage_grid_size=CHIP_GRID, max_cores_per_head_batch=max_cores)
                call = harness.decode(tq, tk, tv, cur_pos=cur_pos, program_config=config)
                tt_out, run, emu_s = call.output, call.run, call.wall_s
                out = mesh.to_torch(tt_out, mesh_composer=ttemu.ConcatMeshToTensor(mesh, dim=2)).float()
                per_chip = [chip_counters(s) for s in run.stats.chips]
                dram, busiest, partials = max(per_chip)
                bandwidth_s = max(max(d / DRAM_BYTES_PER_S, b / CORE_NOC_BYTES_PER_S) for d, b, _ in per_chip)
                duration_ns = run.stats.duration_ns
                rows.append(
                    Row(
                        devices=n,
                        max_cores=max_cores,
                        kv_len=kv_len,
                        cores_per_head=run.plan.num_cores_per_head,
                        rounds=run.plan.rounds,
                        k_chunk=run.plan.k_chunk_size,
                        dram_mb=dram / 1e6,
                        busiest_mb=busiest / 1e6,
                        partials_kb=partials / 1e3,
                        chips_equal=len(set(per_chip)) == 1,
                        bandwidth_us=bandwidth_s * 1e6,
                        modelled_us=None if duration_ns is None else duration_ns / 1e3,
                        pcc=golden.pcc(out, expected),
                        emu_s=emu_s,
                    )
                )
                print_row(rows[-1], flush=True)
                del tt_out
    return rows


HEADER = (
    f"{'devices':>7} {'max cores':>9} {'context':>7} {'cores/head':>10} {'rounds':>6} {'k_chunk':>7} "
    f"{'DRAM MB/chip':>12} {'busiest core MB':>15} {'partials KB/chip':>16} {'bw-model us':>11} "
    f"{'modelled us':>11} {'PCC':>8} {'emu s':>6}"
)


def print_row(r: Row, flush: bool = False) -> None:
    modelled = "-" if r.modelled_us is None else f"{r.modelled_us:.1f}"
    note = "" if r.chips_equal else "  (chips differ: max shown)"
    print(
        f"{r.devices:>7} {r.max_cores:>9} {r.kv_len:>7} {r.cores_per_head:>10} {r.rounds:>6} {r.k_chunk:>7} "
        f"{r.dram_mb:>12.2f} {r.busiest_mb:>15.3f} {r.partials_kb:>16.1f} {r.bandwidth_us:>11.1f} {modelled:>11} "
        f"{r.pcc:>8.5f} {r.emu_s:>6.1f}{note}",
        flush=flush,
    )


def plot(rows: list[Row], path: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modelled = all(r.modelled_us is not None for r in rows)
    what = "modelled (emulator timing model)" if modelled else "bandwidth model, not timing"
    fig, ax = plt.subplots(figsize=(8, 5))
    for n, c in sorted({(r.devices, r.max_cores) for r in rows}):
        pts = sorted((r.kv_len, r.latency_us) for r in rows if (r.devices, r.max_cores) == (n, c))
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker="o",
            linestyle="-" if c <= 16 else "--",
            label=f"{n} device{'s' if n > 1 else ''}, max {c} cores/head",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context (KV positions)")
    ax.set_ylabel(f"decode attention latency, us ({what})")
    ax.set_title(f"Llama-3.1-8B decode attention, batch 1, bfloat8_b KV, heads over T3K chips\n{what}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return what


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-kv", type=int, default=131072, help="largest context (a power of two)")
    parser.add_argument("--min-kv", type=int, default=1024, help="smallest context (a power of two)")
    parser.add_argument("--devices", default="1,2,4,8", help="device counts (divisors of 8)")
    parser.add_argument("--cores", default="16,64", help="max_cores_per_head_batch values")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", type=Path, default=OUT_DIR / "multichip_latency.png")
    args = parser.parse_args()
    devices = [int(x) for x in args.devices.split(",")]
    cores = [int(x) for x in args.cores.split(",")]
    for n in devices:
        if n not in (1, 2, 4, 8):
            parser.error(f"--devices: {n}: expected 1, 2, 4 or 8 (Llama-3.1-8B's 8 kv heads over a T3K's chips)")
    contexts = []
    kv = args.min_kv
    while kv <= args.max_kv:
        contexts.append(kv)
        kv *= 2
    if not contexts:
        parser.error(f"--min-kv {args.min_kv} > --max-kv {args.max_kv}")

    print(HEADER)
    print("-" * len(HEADER))
    rows: list[Row] = []
    for kv_len in contexts:
        rows += run_context(kv_len, devices, cores, args.seed)
        plot(rows, args.plot)  # after every context, so a long run stopped early still leaves its plot

    print("\nOne chip's figures per run (every chip of a run does the same work); DRAM MB/chip: K/V and Q bytes read.")
    print(
        "bw-model: max(chip DRAM bytes / 267 GB/s, busiest core bytes / 32 GB/s) per chip, the slowest chip; a "
        "bandwidth bound, not a timing."
    )
    print("modelled: the emulator timing model's duration (slowest chip), when the emulator reports one; '-': not yet.")
    print("emu s: the emulator's wall time on this host, not device time.")
    what = plot(rows, args.plot)
    print(f"\nplot: {args.plot} ({what})")
    worst = min(r.pcc for r in rows)
    print(f"worst PCC against the golden: {worst:.5f}")
    return 0 if worst > 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
