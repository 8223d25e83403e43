"""The process environment of a real ttnn runtime on a mock cluster, and the worker processes that use it.

``prepare(work)`` makes, under ``work``: a TT_METAL_RUNTIME_ROOT whose sfpi is the stand-in compiler (test double,
standin_compiler.py), a private TT_METAL_CACHE (every kernel is JIT-built afresh, so every build is recorded) and the
stand-in's log. ``run_worker`` runs mock_worker.py for one board in a child process with it; ``run_on_n150`` runs a
timing script's child (host_cost_ab.py, update_host_cost.py) on a mock N150.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import standin_compiler

from ttemu import ttnn_env
from ttemu.jit_env import wheel_root

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
    env.update(
        {
            "TT_METAL_RUNTIME_ROOT": str(root),
            "TT_METAL_CACHE": str(work / "tt_metal_cache"),
            standin_compiler.LOG_ENV: str(log_dir / "commands.jsonl"),
            "TT_LOGGER_LEVEL": "error",
            "LOGURU_LEVEL": "WARNING",
        }
    )
    return env


class Worker:
    """The worker for ``board`` (its own mock cluster descriptor), started in the background."""

    def __init__(self, env: dict[str, str], board: str, out: Path, names=(), *, host_cost: bool = False):
        self.board, self.out = board, out
        # Each worker its own JIT cache and stand-in log: workers run at once, and a program's builds are the log
        # lines its own process wrote while it ran.
        self.log = Path(env[standin_compiler.LOG_ENV]).with_name(f"{out.stem}.jsonl")
        env = dict(
            env,
            **{
                ttnn_env.BOARD_ENV_VAR: board,
                standin_compiler.LOG_ENV: str(self.log),
                "TT_METAL_CACHE": str(Path(env["TT_METAL_CACHE"]) / out.stem),
            },
        )
        cmd = [
            sys.executable,
            str(WORKER),
            "--board",
            board,
            "--out",
            str(out),
            *(["--host-cost"] if host_cost else []),
            *names,
        ]
        self._log = open(out.with_suffix(".log"), "w+")
        # cwd: tt-metal writes generated/ (fabric mapping, watcher) into the working directory
        self._proc = subprocess.Popen(
            cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT, text=True, cwd=out.parent
        )

    def result(self, timeout: float = 1800) -> dict:
        """Its JSON result; raises with the worker's output when it failed."""
        code = self._proc.wait(timeout=timeout)
        self._log.seek(0)
        output = self._log.read()
        if code != 0 or not self.out.is_file():
            raise RuntimeError(f"mock worker for {self.board} failed (exit {code}):\n{output[-8000:]}")
        return json.loads(self.out.read_text())


def run_worker(env: dict[str, str], board: str, out: Path, names=(), *, host_cost: bool = False) -> dict:
    """Runs the worker for ``board`` to the end and returns its JSON result."""
    return Worker(env, board, out, names, host_cost=host_cost).result()


def run_on_n150(command: list[str], prefix: str) -> int:
    """Runs ``command`` (a script's child process) on a mock N150, the environment of :func:`prepare` under a new
    temporary directory named ``prefix...``, which is its working directory too (tt-metal writes generated/ there).
    Its exit code, or 1 (saying why) when the mock runtime cannot run here."""
    reason = unavailable()
    if reason:
        print(f"cannot run the mock runtime: {reason}")
        return 1
    work = Path(tempfile.mkdtemp(prefix=prefix))
    env = dict(prepare(work), **{ttnn_env.BOARD_ENV_VAR: "n150"})
    return subprocess.call(command, env=env, cwd=work)
