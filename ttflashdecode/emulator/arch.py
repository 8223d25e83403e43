"""Wormhole B0 facts the emulator models, read from the ttnn 0.81.1 wheel where the wheel has them.

- L1: 1464 KiB per Tensix core (``MEM_L1_SIZE`` in the wheel's ``wormhole/dev_mem_map.h``).
- L1_UNRESERVED_BASE: where the emulator starts circular buffers. tt-metal places its kernel-config buffer after the
  firmware region (``MEM_MAP_END`` = 35168 B in dev_mem_map.h) and sizes it 69 KiB by default; the emulator uses
  35168 + 69 * 1024 = 105824 (0x19D60). Approximate on purpose: CB addresses are not meant to match silicon's.
- DRAM: 6 channels x 2 GiB; tt-metal's 12 banks are the soc descriptor's ``dram_views`` (bank i = view i: a channel,
  the NOC0 endpoint core a worker uses, and an address offset of 0 or 1 GiB inside the channel).
- NOC coordinates: workers at translated coordinates (logical x + 18, logical y + 18), as UMD's Wormhole coordinate
  manager with NOC translation enabled; DRAM banks at their NOC0 coordinates from the soc descriptor.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

L1_SIZE = 1464 * 1024
L1_UNRESERVED_BASE = 35168 + 69 * 1024
DRAM_CHANNELS = 6
DRAM_CHANNEL_BYTES = 2 << 30
DRAM_BANK_BYTES = 1 << 30
NUM_DRAM_BANKS = 12
DRAM_ALIGNMENT = 32
L1_ALIGNMENT = 16
# Granule of L1 buffer addresses and sizes. Wormhole's allocator granule is L1_ALIGNMENT; 32 keeps every L1 buffer
# address also valid for 32-B-aligned DRAM <-> L1 NOC transfers. Tile sizes (and so tile shards) are multiples of 32,
# so top-down placement from the end of L1 gives the same addresses either way.
L1_BUFFER_ALIGNMENT = 32
DRAM_UNRESERVED_BASE = 32 << 20  # first byte the emulator's DRAM allocator hands out in every bank
TRANSLATED_X0 = 18
TRANSLATED_Y0 = 18
MAX_RUNTIME_ARGS = 341
NUM_CBS = 32
NUM_SEMAPHORES = 16

GRIDS = {"n150": (8, 8), "n300": (8, 7)}


@dataclass(frozen=True)
class DramBank:
    bank: int
    channel: int
    noc_x: int
    noc_y: int
    offset: int


def _soc_descriptor_path() -> Path | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec("ttnn")
        if spec is None or not spec.submodule_search_locations:
            return None
        p = Path(list(spec.submodule_search_locations)[0]) / "tt_metal/soc_descriptors/wormhole_b0_80_arch.yaml"
        return p if p.exists() else None
    except Exception:
        return None


# NOC0 coordinates of each channel's DRAM cores and the 12 views, as in wormhole_b0_80_arch.yaml (fallback when the
# wheel is not importable).
_FALLBACK_DRAM = [
    [(0, 0), (0, 1), (0, 11)], [(0, 5), (0, 6), (0, 7)], [(5, 0), (5, 1), (5, 11)],
    [(5, 2), (5, 9), (5, 10)], [(5, 3), (5, 4), (5, 8)], [(5, 5), (5, 6), (5, 7)],
]
_FALLBACK_VIEWS = [(0, 2, 0), (0, 1, 1 << 30), (1, 0, 0), (1, 2, 1 << 30), (2, 1, 0), (2, 2, 1 << 30),
                   (3, 0, 0), (3, 1, 1 << 30), (4, 2, 0), (4, 0, 1 << 30), (5, 0, 0), (5, 2, 1 << 30)]


@lru_cache(maxsize=1)
def dram_layout() -> tuple[list[list[tuple[int, int]]], list[DramBank]]:
    """(cores of each DRAM channel as NOC0 (x, y), the 12 banks)."""
    channels, views = _FALLBACK_DRAM, _FALLBACK_VIEWS
    path = _soc_descriptor_path()
    if path is not None:
        import yaml

        soc = yaml.safe_load(path.read_text())
        channels = [[tuple(int(v) for v in c.split("-")) for c in ch] for ch in soc["dram"]]
        views = [(v["channel"], v["worker_endpoint"][0], int(v["address_offset"])) for v in soc["dram_views"]]
    banks = []
    for i, (ch, ep, off) in enumerate(views):
        x, y = channels[ch][ep]
        banks.append(DramBank(i, ch, x, y, off))
    return channels, banks
