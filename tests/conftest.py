"""Shared fixtures: the emulator device, a real device (only with a card), and the device-test skip."""

from __future__ import annotations

import pytest

from ttflashdecode import ttnn_env


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
