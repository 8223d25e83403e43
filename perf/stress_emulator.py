"""Emulator stress: the same decode calls repeated as a model loop repeats them, counting every run that faults.

    nice -n 10 .venv/bin/python perf/stress_emulator.py [--calls 20000] [--minutes M] [--workloads issue,decode,...]
                                                      [--load 1] [--sanitize address|thread]

Each workload builds its tensors once and then makes one call over and over (a fresh emulator child process per
call, as every launch). A call counts as a fault when it raises anything (KernelFault, EmulatorHang, EmulatorError,
SanitizerReport) or when its output differs by one bit from the workload's first output (same program, same inputs:
the emulator is deterministic, so a difference is corruption); the first output is checked against the golden once.
``--load N`` runs N spinning processes at nice 19 beside the calls, so the kernel threads are preempted at arbitrary
points even on an idle machine. ``--sanitize`` runs the same calls on the sanitizer builds (TTFD_EMU_SANITIZE; every
kernel variant compiles once more, instrumented): a report counts as a fault and its first lines are printed.

Workloads (every call shape issue #29 names, plus the other program kinds):
  issue     the report's call: batch 4, 16 q / 4 kv heads, d 128, 2,048 positions bfloat8_b, cur_pos_tensor
            [100, 2000, 7, 1500], preallocated output, no program_config
  decode    batch 2, 8 q / 1 kv, d 64, 256 positions bfloat16, device positions, explicit 8x8 grid (16 groups of 4)
  paged     the paged op, batch 2, 8 q / 2 kv, d 64, blocks of 32, shuffled page table, bfloat8_b
  mesh      an N300 mesh (two chips, one child per chip), heads split over the chips
  fused     update_cache_and_decode: the cache update and the attention in one program
  upstream  upstream's own sdpa_decode kernels (ttflashdecode.upstream), the same small shape as `decode`

Prints, per workload and in total, the calls run, the faults seen and seconds per call; exit status 1 when any fault
was seen. ttemu/tests/test_stress.py runs a short form of the same loop.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ttemu.ttnn_env import import_ttnn  # noqa: E402

ttnn = import_ttnn()

import ttemu  # noqa: E402
import ttflashdecode  # noqa: E402
from ttflashdecode import golden, upstream  # noqa: E402
from ttflashdecode.config import ProgramConfig  # noqa: E402

TILE = dict(layout=ttnn.TILE_LAYOUT)
ROW_MAJOR_INT = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


@dataclass
class Workload:
    """One call made over and over: ``call()`` runs it and returns the output as a torch tensor; ``expected`` is the
    golden for the first output; ``close()`` releases the devices."""

    name: str
    call: Callable[[], torch.Tensor]
    expected: torch.Tensor
    close: Callable[[], None]
    reference: torch.Tensor | None = None  # the first output, bit for bit what every later call must return


def _rand(gen, *shape):
    return torch.randn(*shape, generator=gen)


def _q(x, dtype):
    return golden.quantize_like_device(x, dtype)


def issue(seed: int) -> Workload:
    gen = torch.Generator().manual_seed(seed)
    dev = ttemu.open_device("n150")
    positions = [100, 2000, 7, 1500]
    q, k, v = _rand(gen, 1, 4, 16, 128), _rand(gen, 4, 4, 2048, 128), _rand(gen, 4, 4, 2048, 128)
    tq = dev.from_torch(q, dtype=ttnn.bfloat16, **TILE)
    tk, tv = (dev.from_torch(x, dtype=ttnn.bfloat8_b, **TILE) for x in (k, v))
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **ROW_MAJOR_INT)
    out = dev.allocate((1, 4, 16, 128), ttnn.bfloat16, ttnn.TILE_LAYOUT)

    def call():
        r = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos_tensor=pos, output_tensor=out)
        return dev.to_torch(r)

    expected = golden.sdpa_decode(_q(q, "bfloat16"), _q(k, "bfloat8_b"), _q(v, "bfloat8_b"), cur_pos=positions)
    return Workload("issue", call, expected, dev.close)


def _small(gen):
    positions = [200, 37]
    q, k, v = _rand(gen, 1, 2, 8, 64), _rand(gen, 2, 1, 256, 64), _rand(gen, 2, 1, 256, 64)
    return positions, q, k, v


def decode(seed: int) -> Workload:
    gen = torch.Generator().manual_seed(seed)
    dev = ttemu.open_device("n150")
    positions, q, k, v = _small(gen)
    tq, tk, tv = (dev.from_torch(x, dtype=ttnn.bfloat16, **TILE) for x in (q, k, v))
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **ROW_MAJOR_INT)
    config = ProgramConfig(compute_with_storage_grid_size=(8, 8), k_chunk_size=32)

    def call():
        return dev.to_torch(
            ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos_tensor=pos, program_config=config)
        )

    expected = golden.sdpa_decode(_q(q, "bfloat16"), _q(k, "bfloat16"), _q(v, "bfloat16"), cur_pos=positions)
    return Workload("decode", call, expected, dev.close)


def paged(seed: int) -> Workload:
    gen = torch.Generator().manual_seed(seed)
    dev = ttemu.open_device("n150")
    batch, n_kv, block, blocks_per_user, d = 2, 2, 32, 8, 64
    num_blocks = batch * blocks_per_user
    positions = [250, 64]
    table = torch.randperm(num_blocks, generator=gen).reshape(batch, blocks_per_user).to(torch.int32)
    q = _rand(gen, 1, batch, 8, d)
    k, v = _rand(gen, num_blocks, n_kv, block, d), _rand(gen, num_blocks, n_kv, block, d)
    tq = dev.from_torch(q, dtype=ttnn.bfloat16, **TILE)
    tk, tv = (dev.from_torch(x, dtype=ttnn.bfloat8_b, **TILE) for x in (k, v))
    tt_table = dev.from_torch(table, **ROW_MAJOR_INT)
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **ROW_MAJOR_INT)
    config = ProgramConfig(compute_with_storage_grid_size=(8, 4), k_chunk_size=32)

    def call():
        return dev.to_torch(
            ttflashdecode.paged_scaled_dot_product_attention_decode(
                tq, tk, tv, tt_table, cur_pos_tensor=pos, program_config=config
            )
        )

    expected = golden.sdpa_decode(
        _q(q, "bfloat16"), _q(k, "bfloat8_b"), _q(v, "bfloat8_b"), cur_pos=positions, page_table=table
    )
    return Workload("paged", call, expected, dev.close)


def mesh(seed: int) -> Workload:
    gen = torch.Generator().manual_seed(seed)
    m = ttemu.open_mesh_device(board="n300")
    positions = [255, 90]
    q, k, v = _rand(gen, 1, 2, 8, 64), _rand(gen, 2, 2, 256, 64), _rand(gen, 2, 2, 256, 64)
    tq = m.from_torch(q, dtype=ttnn.bfloat16, mesh_mapper=ttemu.ShardTensorToMesh(m, dim=2), **TILE)
    tk, tv = (
        m.from_torch(x, dtype=ttnn.bfloat16, mesh_mapper=ttemu.ShardTensorToMesh(m, dim=1), **TILE) for x in (k, v)
    )
    pos = m.from_torch(torch.tensor(positions, dtype=torch.int32), **ROW_MAJOR_INT)
    config = ProgramConfig(compute_with_storage_grid_size=(8, 4), k_chunk_size=32)

    def call():
        r = ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos_tensor=pos, program_config=config)
        return m.to_torch(r, mesh_composer=ttemu.ConcatMeshToTensor(m, dim=2))

    expected = golden.sdpa_decode(_q(q, "bfloat16"), _q(k, "bfloat16"), _q(v, "bfloat16"), cur_pos=positions)
    return Workload("mesh", call, expected, m.close)


def fused(seed: int) -> Workload:
    gen = torch.Generator().manual_seed(seed)
    dev = ttemu.open_device("n150")
    positions = [10, 150]
    b, n_kv, d = 2, 2, 64
    K, V = _rand(gen, b, n_kv, 256, d), _rand(gen, b, n_kv, 256, d)
    new_k, new_v = _rand(gen, 1, b, n_kv, d), _rand(gen, 1, b, n_kv, d)
    q = _rand(gen, 1, b, 4, d)
    tk, tv = (dev.from_torch(x, dtype=ttnn.bfloat8_b, **TILE) for x in (K, V))
    tnk, tnv, tq = (dev.from_torch(x, dtype=ttnn.bfloat16, **TILE) for x in (new_k, new_v, q))
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **ROW_MAJOR_INT)
    config = ProgramConfig(compute_with_storage_grid_size=(8, 4), k_chunk_size=32)
    out = dev.allocate((1, b, 4, d), ttnn.bfloat16, ttnn.TILE_LAYOUT)

    def call():
        # The same rows written at the same positions every call: the cache, and so the output, stay the same.
        ttflashdecode.update_cache_and_decode(
            tq, tk, tv, tnk, tnv, cur_pos_tensor=pos, program_config=config, output_tensor=out
        )
        return dev.to_torch(out)

    for u, p in enumerate(positions):
        K[u, :, p], V[u, :, p] = new_k[0, u], new_v[0, u]
    expected = golden.sdpa_decode(_q(q, "bfloat16"), _q(K, "bfloat8_b"), _q(V, "bfloat8_b"), cur_pos=positions)
    return Workload("fused", call, expected, dev.close)


def upstream_kernels(seed: int) -> Workload:
    gen = torch.Generator().manual_seed(seed)
    dev = ttemu.open_device("n150")
    positions, q, k, v = _small(gen)
    tq, tk, tv = (dev.from_torch(x, dtype=ttnn.bfloat16, **TILE) for x in (q, k, v))
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **ROW_MAJOR_INT)
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
        q_chunk_size=0,
        k_chunk_size=32,
        max_cores_per_head_batch=16,
    )

    def call():
        return dev.to_torch(
            upstream.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos_tensor=pos, program_config=config)
        )

    expected = golden.sdpa_decode(_q(q, "bfloat16"), _q(k, "bfloat16"), _q(v, "bfloat16"), cur_pos=positions)
    return Workload("upstream", call, expected, dev.close)


WORKLOADS: dict[str, Callable[[int], Workload]] = {
    "issue": issue,
    "decode": decode,
    "paged": paged,
    "mesh": mesh,
    "fused": fused,
    "upstream": upstream_kernels,
}


def golden_check(name: str, got: torch.Tensor, expected: torch.Tensor) -> None:
    """The first output against the golden (loose: this checks the workload is wired right; the suite's tests hold
    the tight thresholds)."""
    got, expected = got.float().flatten(), expected.float().flatten()
    pcc = torch.corrcoef(torch.stack([got, expected]))[0, 1].item()
    if not pcc > 0.99:
        raise AssertionError(f"stress workload {name}: first output's PCC against the golden is {pcc:.5f} (< 0.99)")


@dataclass
class Tally:
    calls: int = 0
    faults: int = 0
    seconds: float = 0.0
    kinds: Counter = field(default_factory=Counter)
    first_messages: list[str] = field(default_factory=list)


def one_call(w: Workload, t: Tally, keep: int = 3) -> None:
    """Runs `w` once and records the outcome in `t`."""
    t0 = time.monotonic()
    try:
        got = w.call()
        if w.reference is None:
            golden_check(w.name, got, w.expected)
            w.reference = got.clone()
            problem = None
        elif not torch.equal(
            got.view(torch.int16) if got.dtype == torch.bfloat16 else got,
            w.reference.view(torch.int16) if w.reference.dtype == torch.bfloat16 else w.reference,
        ):
            problem = ("mismatch", f"{w.name}: output differs from the first call's (same program, same inputs)")
        else:
            problem = None
    except Exception as e:  # every failure of a call is what this counts
        problem = (type(e).__name__, f"{w.name}: {type(e).__name__}: {e}")
    t.seconds += time.monotonic() - t0
    t.calls += 1
    if problem:
        t.faults += 1
        t.kinds[problem[0]] += 1
        if len(t.first_messages) < keep:
            t.first_messages.append(problem[1])


def start_load(n: int) -> list[subprocess.Popen]:
    """n spinning processes at nice 19: they take the cores whenever the calls leave them, preempting kernel threads
    at arbitrary points."""
    spin = "while True: pass"
    return [subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", spin]) for _ in range(n)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()


def run_stress(
    names: list[str],
    calls: int,
    *,
    seconds: float | None = None,
    load: int = 0,
    seed: int = 29,
    report: Callable[[str], None] = print,
) -> dict[str, Tally]:
    """Round-robin over the workloads until `calls` calls ran (or `seconds` passed); per-workload tallies."""
    workloads = [WORKLOADS[n](seed + i) for i, n in enumerate(names)]
    tallies = {w.name: Tally() for w in workloads}
    procs = start_load(load)
    start = time.monotonic()
    try:
        done = 0
        while done < calls and (seconds is None or time.monotonic() - start < seconds):
            w = workloads[done % len(workloads)]
            one_call(w, tallies[w.name])
            done += 1
            if done % 250 == 0:
                faults = sum(t.faults for t in tallies.values())
                report(f"  {done} calls, {faults} faults, {time.monotonic() - start:.0f} s")
    finally:
        stop_load(procs)
        for w in workloads:
            w.close()
    return tallies


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long even if --calls is not reached")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)}")
    ap.add_argument("--load", type=int, default=1, help="spinning nice-19 processes beside the calls")
    ap.add_argument("--sanitize", choices=("address", "thread"), default=None)
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args()
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error(f"--workloads: unknown {', '.join(unknown)}; expected some of {', '.join(WORKLOADS)}")
    if args.sanitize:
        os.environ["TTFD_EMU_SANITIZE"] = args.sanitize
    print(
        f"stress: {', '.join(names)}; up to {args.calls} calls"
        + (f" or {args.minutes} min" if args.minutes else "")
        + f"; load {args.load}"
        + (f"; sanitizer {args.sanitize}" if args.sanitize else ""),
        flush=True,
    )
    t0 = time.monotonic()
    tallies = run_stress(
        names,
        args.calls,
        seconds=args.minutes * 60 if args.minutes else None,
        load=args.load,
        seed=args.seed,
        report=lambda s: print(s, flush=True),
    )
    print(f"{'workload':<10} {'calls':>7} {'faults':>7} {'s/call':>7}  kinds")
    for name, t in tallies.items():
        kinds = ", ".join(f"{k} {n}" for k, n in t.kinds.items()) or "-"
        print(f"{name:<10} {t.calls:>7} {t.faults:>7} {t.seconds / max(t.calls, 1):>7.3f}  {kinds}")
    total_calls = sum(t.calls for t in tallies.values())
    total_faults = sum(t.faults for t in tallies.values())
    print(f"total: {total_calls} calls run, {total_faults} faults seen, {time.monotonic() - t0:.0f} s")
    for t in tallies.values():
        for m in t.first_messages:
            print("---\n" + "\n".join(m.splitlines()[:40]))
    return 1 if total_faults else 0


if __name__ == "__main__":
    sys.exit(main())
