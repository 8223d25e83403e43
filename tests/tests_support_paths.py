"""Paths the tests share."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEVICE_KERNELS = REPO / "device_kernels"
HOST_SHIMS = Path(__file__).resolve().parent / "kernels_host"
