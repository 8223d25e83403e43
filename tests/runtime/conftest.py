"""The mock-runtime tier's fixtures: one worker process per board, run once per session (mock_env.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import mock_env  # noqa: E402


class MockSession:
    """Runs each board's programs once (lazily) and keeps the results."""

    BOARDS = ("n150", "n300", "t3k")

    def __init__(self, work: Path):
        self.work = work
        self.env = mock_env.prepare(work)
        self.workers: dict[str, mock_env.Worker] = {}
        self.results: dict[str, dict] = {}
        self.host_cost: dict | None = None

    def board(self, board: str) -> dict:
        if not self.workers:  # the three boards at once: the mesh workers are short, the N150 one is long
            self.workers = {b: mock_env.Worker(self.env, b, self.work / f"{b}.json") for b in self.BOARDS}
        if board not in self.results:
            self.results[board] = self.workers[board].result()
        return self.results[board]

    def measure_host_cost(self) -> dict:
        if self.host_cost is None:
            for b in self.workers:  # timed alone: no worker may share the machine with it
                self.board(b)
            self.host_cost = mock_env.run_worker(self.env, "n150", self.work / "host_cost.json", host_cost=True)
        return self.host_cost


@pytest.fixture(scope="session")
def mock_session(tmp_path_factory):
    reason = mock_env.unavailable()
    if reason:
        pytest.skip(reason)
    return MockSession(tmp_path_factory.mktemp("mock_runtime"))
