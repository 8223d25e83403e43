"""The one place that prepares ttnn's process environment.

ttnn needs a cluster descriptor even to build host tensors. On a machine with a Tenstorrent card
UMD discovers the cluster itself; without one, ttnn reads a mock descriptor named by
``TT_METAL_MOCK_CLUSTER_DESC_PATH``. This module points that variable at one of the descriptors the
package ships (N150, N300, T3K), but only when no card is present and the user has not set it.
It must run before the first ``import ttnn``: every module in the package gets ttnn through
:func:`import_ttnn`.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

MOCK_ENV_VAR = "TT_METAL_MOCK_CLUSTER_DESC_PATH"
BOARD_ENV_VAR = "TTFLASHDECODE_BOARD"
DEVICE_NODE = Path("/dev/tenstorrent")
BOARDS = ("n150", "n300", "t3k")
DEFAULT_BOARD = "n150"

_ttnn = None


def has_tenstorrent_card() -> bool:
    """True when the kernel driver exposes at least one Tenstorrent device."""
    return DEVICE_NODE.exists()


def cluster_descriptor_path(board: str) -> Path:
    """Path of the mock cluster descriptor YAML shipped for ``board`` (one of BOARDS)."""
    if board not in BOARDS:
        raise ValueError(f"board={board!r}: expected one of {', '.join(BOARDS)}")
    return Path(str(resources.files("ttflashdecode") / "cluster_descriptors" / f"{board}.yaml"))


def configure(board: str | None = None) -> str | None:
    """Point ttnn at a mock cluster descriptor when needed; return the path used, or None.

    ``board`` defaults to ``$TTFLASHDECODE_BOARD`` or n150. Leaves the environment alone when a card
    is present or the user already chose a descriptor.
    """
    if has_tenstorrent_card():
        return None
    if os.environ.get(MOCK_ENV_VAR):
        return os.environ[MOCK_ENV_VAR]
    board = board or os.environ.get(BOARD_ENV_VAR, DEFAULT_BOARD)
    path = str(cluster_descriptor_path(board))
    os.environ[MOCK_ENV_VAR] = path
    # ttnn logs every mocked UMD call at info level; keep the console for our own output.
    os.environ.setdefault("TT_LOGGER_LEVEL", "error")
    return path


def import_ttnn():
    """Configure the environment (once) and return the ttnn module."""
    global _ttnn
    if _ttnn is None:
        configure()
        import ttnn  # noqa: PLC0415 - deliberately deferred until the environment is set

        _ttnn = ttnn
    return _ttnn
