"""The process environment of a real ttnn runtime on a mock cluster, and the worker processes that use it.

``prepare(work)`` makes, under ``work``: a TT_METAL_RUNTIME_ROOT whose sfpi is the stand-in compiler (test double,
standin_compiler.py), a private TT_METAL_CACHE (every kernel is JIT-built afresh, so every build is recorded) and the
stand-in's log. ``run_worker`` runs mock_worker.py for one board in a child process with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import standin_compiler
from ttflashdecode import ttnn_env
from ttflashdecode.emulator.jit_env import wheel_root

HERE = Path(__file__).resolve().parent
WORKER = HERE / "mock_worker.py"


def unavailable() -> str | None:
    """Why the mock runtime cannot run here, or None."""
    if ttnn_env.has_tenstorrent_card():
        return "a Tenstorrent card is present: ttnn drives it, not a mock cluster (the device tests cover the card)"
    if wheel_root() is None:
        return "ttnn is not installed"
    return standin_compiler.binutils_missing()


def prepare(work: Path) -> dict[str, str]:
    work.mkdir(parents=True, exist_ok=True)
    root = standin_compiler.make_runtime_root(work / "runtime_root", wheel_root())
    log_dir = work / "standin"
    log_dir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in (ttnn_env.MOCK_ENV_VAR, "TT_METAL_SIMULATOR")}
    env.update({
        "TT_METAL_RUNTIME_ROOT": str(root),
        "TT_METAL_CACHE": str(work / "tt_metal_cache"),
        standin_compiler.LOG_ENV: str(log_dir / "commands.jsonl"),
        "TT_LOGGER_LEVEL": "error",
        "LOGURU_LEVEL": "WARNING",
    })  # fmt: skip
    return env


def run_worker(env: dict[str, str], board: str, out: Path, names: list[str] = (), *, host_cost: bool = False,
               timeout: float = 900) -> dict:  # fmt: skip
    """Runs the worker for ``board`` (its own mock cluster descriptor) and returns its JSON result; raises with the
    worker's output when it fails."""
    env = dict(env, **{ttnn_env.BOARD_ENV_VAR: board})
    cmd = [sys.executable, str(WORKER), "--board", board, "--out", str(out), *(["--host-cost"] if host_cost else []),
           *names]  # fmt: skip
    # cwd: tt-metal writes generated/ (fabric mapping, watcher) into the working directory
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=out.parent)
    if r.returncode != 0 or not out.is_file():
        raise RuntimeError(f"mock worker for {board} failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n"
                           f"{r.stderr[-6000:]}")  # fmt: skip
    return json.loads(out.read_text())
