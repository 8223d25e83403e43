"""Test setup of both packages' tests (tests/: the op package's, ttemu/tests/: the emulator's): the emulator's fixtures
and hooks -- the seed of every test's random inputs, ``ttnn``, emulated N150 devices (ttemu/tests/fixtures.py)."""

pytest_plugins = ["ttemu.tests.fixtures"]
