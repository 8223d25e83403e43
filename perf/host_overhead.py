"""Host time per decode call on a program-cache hit: eager calls and trace replay, before and after.

    .venv/bin/python perf/host_overhead.py                      # this tree
    git worktree add --detach /tmp/before <rev>
    .venv/bin/python perf/host_overhead.py --before /tmp/before # this tree and <rev>'s, side by side

A decode loop calls the op once per layer per token with the same tensors, so this is paid every step (Llama-3.1-8B:
32 layers). The script runs the Llama-3.1-8B N150 decode shape (batch 8, 32 q / 8 kv heads, head_dim 128, a 4K
bfloat8_b cache) with a cur_pos tensor and a preallocated output, and prints host microseconds per call:

* op / wrapper.run, default and named config: the module-level function and FlashDecodeWrapper.run on a cache hit,
  the launch itself replaced by a no-op (only the host work before ``generic_op``);
* trace replay: 32 such calls captured once with ``ttemu.begin_trace_capture`` and replayed with
  ``execute_trace``. The op does no host work in a replay (it is not called: counted); the row is the emulator's
  replay dispatch per captured call with the program run replaced by a no-op. On a card the per-step cost is
  ``ttnn.execute_trace``'s, which cannot be measured here.

Times are this process's CPU time per call (wall time in brackets), each the best of 25 batches of 200 calls: the host
path is pure host work, so the two agree on an idle machine, and CPU time is what a shared machine's load does not
inflate. ``--before`` runs the same measurements against another tree in a subprocess (its own
ttflashdecode, not the editable install's); a tree without trace support prints n/a.

On a machine with a Wormhole card (``/dev/tenstorrent``), ``--card`` also times ``ttnn.generic_op`` with our
descriptor: the op with the real launch (``ttnn.synchronize_device`` once at the end) minus the host-only call gives
generic_op's own per-call cost (its program-cache lookup, by the custom_program_hash the op sets once per descriptor,
the copy of the descriptor's runtime args into the cached program, and the dispatch). Without a card,
``tests/runtime/host_cost.py`` times the same calls through the real generic_op on a mock N150 (docs/RUNTIME.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

CALLS, BATCHES, LAYERS = 200, 25, 32
CONFIGS = (None, "llama-3.1-8b/n150")


def _use_tree(tree: Path) -> None:
    """Import ttflashdecode from ``tree``: the venv's editable install maps the package to /work/main through a
    meta-path finder that wins over sys.path, so drop that finder first."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
    sys.path.insert(0, str(tree))


def _timed(fn) -> tuple[float, float]:
    """(CPU, wall) microseconds per call of ``fn``, each the best of BATCHES batches of CALLS calls. The host path is
    pure host work, so on an idle machine the two agree; on a shared one the process's CPU time is the figure that
    other processes' load does not inflate."""
    cpu, wall = [], []
    for _ in range(BATCHES):
        start_cpu, start = time.process_time(), time.perf_counter()
        for _ in range(CALLS):
            fn()
        cpu.append((time.process_time() - start_cpu) / CALLS * 1e6)
        wall.append((time.perf_counter() - start) / CALLS * 1e6)
    return min(cpu), min(wall)


def measure() -> dict:
    """Every row of the table for the ttflashdecode on sys.path."""
    import torch

    import ttemu
    from ttemu.ttnn_env import import_ttnn
    from ttflashdecode import FlashDecodeWrapper
    from ttflashdecode.backend import Backend
    from ttflashdecode.ops.decode import api as op_module

    ttnn = import_ttnn()
    dev = ttemu.open_device(board="n150")
    tile = dict(layout=ttnn.TILE_LAYOUT)
    q = dev.from_torch(torch.randn(1, 8, 32, 128), dtype=ttnn.bfloat16, **tile)
    kv = dev.from_torch(torch.randn(8, 8, 4096, 128), dtype=ttnn.bfloat8_b, **tile)
    pos = dev.from_torch(torch.full((8,), 3000, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    out = dev.allocate([1, 8, 32, 128], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    # Host work only: the launch (generic_op) is a no-op. Older trees launch through Backend.launch.
    seam = "run" if hasattr(Backend, "run") else "launch"
    real_launch = getattr(Backend, seam)
    setattr(Backend, seam, lambda self, tensors, programs: None)
    rows = {}
    for config in CONFIGS:
        name = config or "default"
        kwargs = dict(cur_pos_tensor=pos, output_tensor=out, program_config=config)
        op_module.scaled_dot_product_attention_decode(q, kv, kv, **kwargs)  # the first call plans and builds
        rows[f"op, {name} config"] = _timed(lambda: op_module.scaled_dot_product_attention_decode(q, kv, kv, **kwargs))
        wrapper = FlashDecodeWrapper(dev, program_config=config)
        wrapper.plan(batch=8, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=4096, kv_dtype=ttnn.bfloat8_b)
        wrapper.run(q, kv, kv, cur_pos_tensor=pos, output_tensor=out)
        run = wrapper.run
        rows[f"wrapper.run, {name} config"] = _timed(lambda: run(q, kv, kv, cur_pos_tensor=pos, output_tensor=out))
    setattr(Backend, seam, real_launch)
    if hasattr(ttemu, "begin_trace_capture"):
        rows[f"trace replay, per captured call ({LAYERS} calls)"] = _trace_replay(dev, op_module, q, kv, pos, out)
    dev.close()
    return rows


def _trace_replay(dev, op_module, q, kv, pos, out) -> tuple[float, float]:
    """Capture LAYERS op calls once; time execute_trace per captured call. Kernel builds and program runs are no-ops
    (the emulator's own work, not the host path); the op must not be called during a replay."""
    import ttemu
    from ttemu import device as device_module

    device_module.build_plan = lambda descriptor, grid: SimpleNamespace(cbs=[])
    device_module.run_program = lambda plan, **launch: None
    kwargs = dict(cur_pos_tensor=pos, output_tensor=out)
    trace_id = ttemu.begin_trace_capture(dev, cq_id=0)
    for _ in range(LAYERS):
        op_module.scaled_dot_product_attention_decode(q, kv, kv, **kwargs)
    ttemu.end_trace_capture(dev, trace_id, cq_id=0)
    calls = []
    real_decode = op_module.run_request
    op_module.run_request = lambda *a, **k: calls.append(1) or real_decode(*a, **k)
    cpu, wall = _timed(lambda: ttemu.execute_trace(dev, trace_id, cq_id=0, blocking=True))
    op_module.run_request = real_decode
    assert not calls, "a replay called the op"
    ttemu.release_trace(dev, trace_id)
    return cpu / LAYERS, wall / LAYERS


def card() -> None:
    """On a card: ttnn.generic_op's own cost per call with our descriptor (real launch minus host-only call), and a
    32-call decode step replayed with ttnn.execute_trace."""
    import torch

    from ttemu.ttnn_env import has_tenstorrent_card, import_ttnn
    from ttflashdecode.backend import Backend
    from ttflashdecode.ops.decode import api as op_module

    if not has_tenstorrent_card():
        print(
            "card: not measured (no /dev/tenstorrent): ttnn.generic_op's per-call cost on silicon (cache lookup, "
            "runtime-arg copy, dispatch) and ttnn.execute_trace need a Wormhole card; tests/runtime/host_cost.py "
            "times generic_op on a mock N150"
        )
        return
    ttnn = import_ttnn()
    device = ttnn.open_device(device_id=0, trace_region_size=1 << 22)
    try:
        on = dict(device=device, layout=ttnn.TILE_LAYOUT)
        q = ttnn.from_torch(torch.randn(1, 8, 32, 128), dtype=ttnn.bfloat16, **on)
        kv = ttnn.from_torch(torch.randn(8, 8, 4096, 128), dtype=ttnn.bfloat8_b, **on)
        pos = ttnn.from_torch(
            torch.full((8,), 3000, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT, device=device
        )
        out = ttnn.allocate_tensor_on_device(ttnn.Shape([1, 8, 32, 128]), ttnn.bfloat16, ttnn.TILE_LAYOUT, device)
        kwargs = dict(cur_pos_tensor=pos, output_tensor=out)

        def call():
            op_module.scaled_dot_product_attention_decode(q, kv, kv, **kwargs)

        call()
        ttnn.synchronize_device(device)
        start = time.perf_counter()
        for _ in range(CALLS):
            call()
        enqueue = (time.perf_counter() - start) / CALLS * 1e6  # host time with the real generic_op (async dispatch)
        ttnn.synchronize_device(device)
        real_run, Backend.run = Backend.run, lambda self, tensors, launchable: None
        _, host_only = _timed(call)
        Backend.run = real_run
        print(
            f"card: op call with ttnn.generic_op {enqueue:.1f} us, host path alone {host_only:.1f} us -> "
            f"generic_op {enqueue - host_only:.1f} us per call"
        )
        trace_id = ttnn.begin_trace_capture(device, cq_id=0)
        for _ in range(LAYERS):
            call()
        ttnn.end_trace_capture(device, trace_id, cq_id=0)
        _, best = _timed(lambda: ttnn.execute_trace(device, trace_id, cq_id=0, blocking=False))
        ttnn.synchronize_device(device)
        print(f"card: ttnn.execute_trace of {LAYERS} calls {best:.1f} us host time ({best / LAYERS:.2f} us per call)")
        ttnn.release_trace(device, trace_id)
    finally:
        ttnn.close_device(device)


def _cell(value) -> str:
    return "n/a" if value is None else f"{value[0]:.1f} ({value[1]:.1f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another tree (e.g. a git worktree at the old revision)")
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1], help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a --before subprocess's output
    parser.add_argument("--card", action="store_true", help="also time ttnn.generic_op and ttnn trace on a card")
    args = parser.parse_args()
    _use_tree(args.tree)
    if args.json:
        print(json.dumps(measure()))
        return 0
    columns = []
    if args.before is not None:
        revision = subprocess.run(
            ["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip() or str(args.before)
        env = dict(os.environ, TT_LOGGER_LEVEL="error")
        result = subprocess.run(
            [sys.executable, __file__, "--tree", str(args.before), "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        columns.append((f"before ({revision})", json.loads(result.stdout.strip().splitlines()[-1])))
    revision = subprocess.run(
        ["git", "-C", str(args.tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(args.tree), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    columns.append((f"after ({revision}{' + working tree' if dirty else ''})", measure()))
    rows = list(dict.fromkeys(row for _, values in columns for row in values))
    width = max(len(r) for r in rows) + 2
    print(f"host us per decode call, CPU time (wall time): best of {BATCHES} batches of {CALLS} calls")
    print(f"{'':<{width}}" + "".join(f"{title:>34}" for title, _ in columns))
    for row in rows:
        print(f"{row:<{width}}" + "".join(f"{_cell(values.get(row)):>34}" for _, values in columns))
    if args.card:
        card()
    return 0


if __name__ == "__main__":
    sys.exit(main())
