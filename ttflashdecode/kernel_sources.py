"""Where the package's device kernels live: ``ops/<op>/kernels/{dataflow,compute}`` inside the package, as upstream
lays out ``ttnn/operations/<op>/device/kernels``. They are found through the package, so an installed wheel (which
carries them as package data) runs exactly the sources an editable checkout runs."""

from pathlib import Path

OPS = Path(__file__).resolve().parent / "ops"

DECODE_KERNELS = OPS / "decode" / "kernels"
UPDATE_CACHE_KERNELS = OPS / "update_cache" / "kernels"
FILL_CACHE_KERNELS = OPS / "fill_cache" / "kernels"
CONVERT_KERNELS = OPS / "convert" / "kernels"


def all_kernel_files() -> list[Path]:
    """Every kernel source and header the package ships (what a wheel must contain)."""
    return sorted(p for p in OPS.rglob("*") if p.suffix in (".cpp", ".hpp", ".h"))
