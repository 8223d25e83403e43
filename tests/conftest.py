"""The op package's fixtures: a real device (only with a card), the device-test skip and the --backend option; the
emulated devices, ``ttnn`` and the seed of every test's random inputs are the emulator's (ttemu/tests/fixtures.py,
loaded for both packages' tests by the checkout's conftest.py)."""

from __future__ import annotations

import pytest

from ttemu import ttnn_env


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
def tt_device(ttnn):
    """Device 0 of the machine's card(s); only used by tests marked ``device``."""
    device = ttnn.open_device(device_id=0)
    yield device
    ttnn.close_device(device)


@pytest.fixture
def no_launch(monkeypatch):
    """Inside the test, any program launch on an emulated device fails it: for calls that must be refused on the host,
    before anything runs."""
    from ttemu import EmuDevice

    def refuse(*args, **kwargs):
        raise AssertionError("a call that must be refused on the host launched a program")

    monkeypatch.setattr(EmuDevice, "generic_op", refuse)


@pytest.fixture(scope="module")
def p150():
    """An emulated Blackhole P150 (11x10 grid, 64-B DRAM alignment) for a module's tests; a longer hang limit, since
    its first runs compile Blackhole kernels."""
    import ttemu

    device = ttemu.open_device(board="p150")
    device.default_hang_ms = max(device.default_hang_ms, 2000)
    yield device
    device.close()
