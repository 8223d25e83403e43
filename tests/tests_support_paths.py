"""Paths the tests share."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KERNEL_ROOT = REPO / "ttflashdecode" / "ops"  # every op's kernels: <op>/kernels/{dataflow,compute}
DEVICE_KERNELS = KERNEL_ROOT / "decode" / "kernels"  # FlashDecode's reader, compute, writer and shared header
HOST_SHIMS = Path(__file__).resolve().parent / "kernels_host"
