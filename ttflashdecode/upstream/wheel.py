"""Upstream sdpa_decode's kernel sources in the installed ttnn wheel (found where the emulator's compiler finds them,
:func:`ttflashdecode.backend.wheel_kernel_source`, never copied into this repository): the baseline runs exactly the
sources silicon runs for this ttnn version."""

from __future__ import annotations

from pathlib import Path

from ttflashdecode.backend import wheel_kernel_source

SDPA_DECODE_KERNELS = "ttnn/operations/transformer/sdpa_decode/device/kernels"


def sdpa_decode_kernel(name: str) -> Path:
    """One of upstream sdpa_decode's kernels: ``dataflow/reader_decode_all.cpp``, ``dataflow/writer_decode_all.cpp``
    or ``compute/sdpa_flash_decode.cpp``."""
    return wheel_kernel_source(f"{SDPA_DECODE_KERNELS}/{name}")
