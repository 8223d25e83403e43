"""Shared fixtures: the emulator device, a real device (only with a card), the device-test skip, and the seed of
every test's random inputs."""

from __future__ import annotations

import pytest
import torch

from decode_harness import SEED_ENV, seed_for
from ttflashdecode import ttnn_env

_SEED_KEY = pytest.StashKey[int]()


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


def pytest_addoption(parser):
    parser.addoption(
        "--backend",
        choices=("emulator", "ttsim"),
        default="emulator",
        help="ttsim: also run the op's golden cases on Tenstorrent's simulator through the real ttnn runtime "
        "(tests/runtime/test_ttsim.py; needs ./run sim-setup and Tenstorrent's sfpi compiler)",
    )


def pytest_collection_modifyitems(config, items):
    if ttnn_env.has_tenstorrent_card():
        return
    skip = pytest.mark.skip(reason="needs a Tenstorrent Wormhole card (/dev/tenstorrent absent)")
    for item in items:
        if "device" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def ttnn():
    return ttnn_env.import_ttnn()


def _emulated_n150():
    from ttflashdecode import emulator

    device = emulator.open_device(board="n150")
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


@pytest.fixture(scope="session")
def tt_device(ttnn):
    """Device 0 of the machine's card(s); only used by tests marked ``device``."""
    device = ttnn.open_device(device_id=0)
    yield device
    ttnn.close_device(device)


@pytest.fixture
def no_launch(monkeypatch):
    """Inside the test, any program launch on an emulated device fails it: for calls that must be refused on the host,
    before anything runs."""
    from ttflashdecode.emulator import EmuDevice

    def refuse(*args, **kwargs):
        raise AssertionError("a call that must be refused on the host launched a program")

    monkeypatch.setattr(EmuDevice, "generic_op", refuse)
