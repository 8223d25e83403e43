"""The one place that prepares ttnn's process environment.

ttnn needs a cluster descriptor even to build host tensors. On a machine with a Tenstorrent card
UMD discovers the cluster itself; without one, ttnn reads a mock descriptor named by
``TT_METAL_MOCK_CLUSTER_DESC_PATH``. This module points that variable at one of the descriptors the
package ships (N150, N300, T3K), but only when no card is present and the user has not set it.
It must run before the first ``import ttnn``: every module of the emulator, and of the op packages built on it,
gets ttnn through :func:`import_ttnn`.

It also keeps ttnn's import quiet: ttnn logs its whole configuration (a ~600-character "Initial ttnn.CONFIG" line)
at DEBUG through loguru when imported, and loguru's default handler prints DEBUG. :func:`import_ttnn` silences ttnn's
loguru messages for the import alone, unless debug output was asked for (``TTFD_LOG_LEVEL`` or ``LOGURU_LEVEL`` set
to DEBUG or TRACE).
"""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path

MOCK_ENV_VAR = "TT_METAL_MOCK_CLUSTER_DESC_PATH"
BOARD_ENV_VAR = "TTEMU_BOARD"
DEVICE_NODE = Path("/dev/tenstorrent")
BOARDS = ("n150", "n300", "t3k")
DEFAULT_BOARD = "n150"
LOG_LEVEL_ENV_VAR = "TTFD_LOG_LEVEL"
DEBUG_LEVELS = ("DEBUG", "TRACE")

_ttnn = None


def has_tenstorrent_card() -> bool:
    """True when the kernel driver exposes at least one Tenstorrent device."""
    return DEVICE_NODE.exists()


def cluster_descriptor_path(board: str) -> Path:
    """Path of the mock cluster descriptor YAML shipped for ``board`` (one of BOARDS)."""
    if board not in BOARDS:
        raise ValueError(f"board={board!r}: expected one of {', '.join(BOARDS)}")
    return Path(str(resources.files("ttemu") / "cluster_descriptors" / f"{board}.yaml"))


def configure(board: str | None = None) -> str | None:
    """Point ttnn at a mock cluster descriptor when needed; return the path used, or None.

    ``board`` defaults to ``$TTEMU_BOARD`` or n150. Leaves the environment alone when a card
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


def debug_output_requested() -> bool:
    """True when ``TTFD_LOG_LEVEL`` or ``LOGURU_LEVEL`` asks for DEBUG or TRACE output."""
    return any(os.environ.get(var, "").strip().upper() in DEBUG_LEVELS for var in (LOG_LEVEL_ENV_VAR, "LOGURU_LEVEL"))


def import_ttnn():
    """Configure the environment (once) and return the ttnn module, imported without its DEBUG config dump unless
    debug output was asked for (:func:`debug_output_requested`)."""
    global _ttnn
    if _ttnn is None:
        configure()
        if "ttnn" in sys.modules or debug_output_requested():
            import ttnn  # noqa: PLC0415 - deliberately deferred until the environment is set
        else:
            from loguru import logger  # noqa: PLC0415

            # For the import alone: ttnn's later messages (warnings, fallbacks) keep reaching the user's handlers.
            logger.disable("ttnn")
            try:
                import ttnn  # noqa: PLC0415
            finally:
                logger.enable("ttnn")
        _ttnn = ttnn
    return _ttnn
