"""The pytest fixtures and hooks the emulator's tests share with the tests of packages built on it (the checkout's
conftest.py loads this module as a plugin): the seed of every test's random inputs, the ``ttnn`` module and emulated
N150 devices.

Seeds. Every test starts with torch's global generator seeded by :func:`seed_for` of its node id, so every run sees the
same inputs; ``TTFD_SEED`` overrides the seed (``TTFD_SEED=123 pytest ...`` tries other inputs or replays a failure),
and a failing test's report names its seed and the command that replays it."""

from __future__ import annotations

import os
import zlib

import pytest
import torch

import ttemu
from ttemu import ttnn_env

SEED_ENV = "TTFD_SEED"
_SEED_KEY = pytest.StashKey[int]()


def seed_for(key: str) -> int:
    """The seed of a test's random inputs: ``TTFD_SEED`` when set, else a stable hash of ``key`` (the test's name and
    parameters, or ``str(case)``)."""
    env = os.environ.get(SEED_ENV, "").strip()
    if env:
        return int(env, 0)
    return zlib.crc32(key.encode()) & 0x7FFFFFFF


@pytest.fixture(autouse=True)
def _seeded_global_rng(request):
    """Seeds torch's global generator for every test (tests that draw with ``torch.randn(...)`` and no generator of
    their own): ``TTFD_SEED`` when set, else a stable hash of the test's node id, so every run sees the same inputs
    and a failure replays. The generator's state is restored afterwards."""
    seed = seed_for(request.node.nodeid)
    request.node.stash[_SEED_KEY] = seed
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Every failing test's report names the seed of torch's global generator and the command that replays it."""
    report = yield
    seed = item.stash.get(_SEED_KEY, None)
    if report.failed and seed is not None:
        report.sections.append(
            ("random inputs", f"global torch seed {seed}; replay: {SEED_ENV}={seed} pytest '{item.nodeid}'")
        )
    return report


@pytest.fixture(scope="session")
def ttnn():
    return ttnn_env.import_ttnn()


def _emulated_n150():
    device = ttemu.open_device(board="n150")
    yield device
    device.close()


@pytest.fixture(scope="session")
def emu_device():
    """One emulated N150 for the session (opening is cheap, but compiled kernels are shared anyway)."""
    yield from _emulated_n150()


@pytest.fixture(scope="session")
def other_emu_device():
    """A second emulated N150, for tensors that must live on another device than ``emu_device``'s."""
    yield from _emulated_n150()
