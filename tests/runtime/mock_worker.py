"""Child process of the mock-runtime tests: opens a real ttnn device (or MeshDevice) on a mock cluster and runs
programs of tests/runtime/programs.py through the card path, recording for each what ttnn did.

Run as ``python mock_worker.py --board n150 --out result.json [names...]`` with the environment
tests/runtime/mock_env.py builds (mock cluster descriptor, TT_METAL_RUNTIME_ROOT with the stand-in compiler, a private
TT_METAL_CACHE, TTFD_STANDIN_LOG). ttnn reads its environment once per process, and each board needs its own
cluster descriptor, so every board runs in a process of its own.

Per program the result holds: ``status`` ("accepted", or "rejected" with ttnn's message), the descriptors launched
(their kernels' names), the stand-in compiler's log lines of the JIT builds it caused, the emulator's JIT
environment for the same kernels (tests/runtime/jit_parity.py) and, for the host-cost entry, timings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # programs, jit_parity; tests/ (decode_harness)

import torch  # noqa: E402

from ttemu.ttnn_env import import_ttnn  # noqa: E402

ttnn = import_ttnn()

import jit_parity  # noqa: E402
import programs  # noqa: E402
import standin_compiler  # noqa: E402

MESH_SHAPES = {"n300": (1, 2), "t3k": (2, 4)}


class Recorder:
    """Wraps ttnn.generic_op and ttnn.MeshProgramDescriptor (looked up by the package at call time) to keep the
    ProgramDescriptors each launch carried."""

    def __init__(self):
        self.launches: list[list] = []
        # per launch: the io tensors' buffer addresses and the id of the launchable (a cached launch is the same object)
        self.calls: list[tuple] = []
        self._mesh_programs: dict[int, list] = {}
        self._generic_op, self._mesh_pd = ttnn.generic_op, ttnn.MeshProgramDescriptor

    def install(self):
        def mesh_program_descriptor(ranges):
            obj = self._mesh_pd(ranges)
            self._mesh_programs[id(obj)] = list(ranges.values())
            return obj

        def generic_op(io_tensors, program):
            programs_ = self._mesh_programs.get(id(program), [program])
            self.launches.append(programs_)
            self.calls.append((tuple(t.buffer_address() for t in io_tensors), id(program)))
            return self._generic_op(io_tensors, program)

        ttnn.generic_op, ttnn.MeshProgramDescriptor = generic_op, mesh_program_descriptor

    def uninstall(self):
        ttnn.generic_op, ttnn.MeshProgramDescriptor = self._generic_op, self._mesh_pd


def _log_lines(log: Path) -> list[dict]:
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _error_text(e: BaseException) -> str:
    """ttnn's message without its backtrace (TT_THROW appends one)."""
    text = str(e)
    return text.split("\nbacktrace:")[0].strip()[:4000]


def open_device(board: str):
    if board == "n150":
        return ttnn.open_device(device_id=0)
    return ttnn.open_mesh_device(ttnn.MeshShape(*MESH_SHAPES[board]))


def close_device(board: str, dev) -> None:
    if board == "n150":
        ttnn.close_device(dev)
    else:
        ttnn.close_mesh_device(dev)


def run_programs(board: str, names: list[str], log: Path) -> dict:
    dev = open_device(board)
    grid = dev.compute_with_storage_grid_size()
    grid = (int(grid.x), int(grid.y))
    recorder = Recorder()
    recorder.install()
    results = {}
    try:
        for name in names:
            _, fn = programs.CATALOGUE[name]
            first = len(_log_lines(log))
            start = len(recorder.launches)
            ctx = programs.Ctx(dev, grid, torch.Generator().manual_seed(abs(hash(name)) % (2**31)))
            t0 = time.perf_counter()
            try:
                fn(ctx)
                status, error = "accepted", None
            except Exception as e:  # noqa: BLE001 - the test reports whatever ttnn (or the op) raised
                status, error = "rejected", _error_text(e) + "\n" + "".join(traceback.format_tb(e.__traceback__)[-3:])
            launches = recorder.launches[start:]
            calls = recorder.calls[start:]
            builds = _log_lines(log)[first:]
            entry = {
                "status": status,
                "error": error,
                "seconds": time.perf_counter() - t0,
                "launches": [[jit_parity.kernel_names(p) for p in progs] for progs in launches],
                "jit_builds": [b for b in builds if b.get("kind") in ("compile", "link")],
            }
            per_call = programs.HIT_CHECKED.get(name)
            if per_call and status == "accepted":
                # the last call (a fast-path hit) against the one before (the full path, same arguments)
                entry["hit_check"] = {
                    "full": [list(c) for c in calls[-2 * per_call : -per_call]],
                    "hit": [list(c) for c in calls[-per_call:]],
                }
            if status == "accepted":
                try:
                    entry["parity"] = jit_parity.compare_launches(launches, builds, grid)
                except Exception as e:  # noqa: BLE001
                    entry["parity_error"] = "".join(traceback.format_exception(e))[-3000:]
            results[name] = entry
    finally:
        recorder.uninstall()
        close_device(board, dev)
    return {"board": board, "grid": list(grid), "programs": results}


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--board", required=True, choices=["n150", "n300", "t3k"])
    p.add_argument("--out", required=True)
    p.add_argument("--host-cost", action="store_true", help="measure the card path's host cost per cached call")
    p.add_argument("names", nargs="*")
    args = p.parse_args(argv)
    log = Path(os.environ[standin_compiler.LOG_ENV])
    if args.host_cost:
        import host_cost  # noqa: PLC0415

        dev = open_device(args.board)
        try:
            result = host_cost.measure(dev)
        finally:
            close_device(args.board, dev)
    else:
        names = args.names or [n for n, (b, _) in programs.CATALOGUE.items() if b == args.board]
        result = run_programs(args.board, names, log)
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
