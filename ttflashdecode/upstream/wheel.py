"""Where the installed ttnn wheel keeps Tenstorrent's own kernel sources.

Upstream kernels are loaded from the wheel that is installed (the path comes from ``ttnn.__file__``), never copied into
this repository: the baseline and the emulator's conformance suite run exactly the sources silicon runs for this ttnn
version. In the wheel the tt-metal source root is the ttnn package directory; kernels live under ``ttnn/cpp``.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ttflashdecode.ttnn_env import import_ttnn

OPERATIONS = "ttnn/operations"
SDPA_DECODE_KERNELS = f"{OPERATIONS}/transformer/sdpa_decode/device/kernels"


@functools.lru_cache(maxsize=1)
def wheel_root() -> Path:
    """The installed ttnn package directory (tt-metal's source root in the wheel)."""
    return Path(import_ttnn().__file__).resolve().parent


def kernel_source(relative: str) -> Path:
    """Absolute path of a kernel source given as upstream's factories name it below ``ttnn/cpp``
    (e.g. ``ttnn/operations/eltwise/unary/device/kernels/dataflow/reader_unary_interleaved_start_id.cpp``).

    A leading ``ttnn/cpp/`` (the form ``CreateKernel`` calls use) is accepted too."""
    rel = relative[len("ttnn/cpp/") :] if relative.startswith("ttnn/cpp/") else relative
    path = wheel_root() / "ttnn" / "cpp" / rel
    if not path.is_file():
        raise FileNotFoundError(
            f"upstream kernel {relative!r} is not in the installed ttnn wheel (looked for {path}); "
            "the baseline needs the wheel's own kernel sources"
        )
    return path


def sdpa_decode_kernel(name: str) -> Path:
    """One of upstream sdpa_decode's kernels: ``dataflow/reader_decode_all.cpp``, ``dataflow/writer_decode_all.cpp``
    or ``compute/sdpa_flash_decode.cpp``."""
    return kernel_source(f"{SDPA_DECODE_KERNELS}/{name}")
