"""Wormhole B0 facts the emulator models, read from the ttnn 0.81.1 wheel where the wheel has them.

- L1: 1464 KiB per Tensix core (``MEM_L1_SIZE`` in the wheel's ``wormhole/dev_mem_map.h``).
- L1_UNRESERVED_BASE: where the emulator starts circular buffers. tt-metal places its kernel-config buffer after the
  firmware region (``MEM_MAP_END`` = 35168 B in dev_mem_map.h) and sizes it 69 KiB by default; the emulator uses
  35168 + 69 * 1024 = 105824 (0x19D60). Approximate on purpose: CB addresses are not meant to match silicon's.
- DRAM: 6 channels x 2 GiB; tt-metal's 12 banks are the soc descriptor's ``dram_views`` (bank i = view i: a channel,
  the NOC0 endpoint core a worker uses, and an address offset of 0 or 1 GiB inside the channel).
- NOC coordinates: workers at translated coordinates (logical x + 18, logical y + 18), as UMD's Wormhole coordinate
  manager with NOC translation enabled; DRAM banks at their NOC0 coordinates from the soc descriptor.
- L1 banks (L1-interleaved buffers): one bank per core of the compute grid, numbered as tt-metal's allocator does
  (see ``l1_bank_cores``); an L1 buffer has the same address in every bank, 16-B granule (``L1_ALIGNMENT``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

L1_SIZE = 1464 * 1024
L1_UNRESERVED_BASE = 35168 + 69 * 1024
DRAM_CHANNELS = 6
DRAM_CHANNEL_BYTES = 2 << 30
DRAM_BANK_BYTES = 1 << 30
NUM_DRAM_BANKS = 12
DRAM_ALIGNMENT = 32
L1_ALIGNMENT = 16
# Granule of L1 buffer addresses and sizes: tt-metal's L1 allocator aligns to the HAL's L1 alignment, which on Wormhole
# is L1_ALIGNMENT = 16 (the wheel's wormhole/noc/noc_parameters.h: max of NOC_L1_READ/WRITE_ALIGNMENT_BYTES). Tile
# sizes (and so tile shards) are multiples of 32, so only L1-interleaved ROW_MAJOR buffers whose per-bank size is an
# odd multiple of 16 B can leave later L1 buffers at addresses that are 16 mod 32, as on silicon.
L1_BUFFER_ALIGNMENT = L1_ALIGNMENT
DRAM_UNRESERVED_BASE = 32 << 20  # first byte the emulator's DRAM allocator hands out in every bank
TRANSLATED_X0 = 18
TRANSLATED_Y0 = 18
MAX_RUNTIME_ARGS = 341
NUM_CBS = 32
NUM_SEMAPHORES = 16

# Compute grid (w, h) of each board's chip with ttnn's default dispatch cores (a row, on Wormhole). n150 / n300: the
# harvested chips of those cards. galaxy: a Galaxy's chips are unharvested (8x10 Tensix); the wheel's
# core_descriptors/wormhole_b0_80_arch.yaml "galaxy" entry gives the compute grid [0, 0]-[7, 8] with dispatch on a row
# and [0, 0]-[6, 9] with dispatch on a column (COL_DISPATCH_GRIDS), as models/demos/llama3_70b_galaxy runs it.
GRIDS = {"n150": (8, 8), "n300": (8, 7), "galaxy": (8, 9)}
COL_DISPATCH_GRIDS = {"galaxy": (7, 10)}


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
    [(0, 0), (0, 1), (0, 11)],
    [(0, 5), (0, 6), (0, 7)],
    [(5, 0), (5, 1), (5, 11)],
    [(5, 2), (5, 9), (5, 10)],
    [(5, 3), (5, 4), (5, 8)],
    [(5, 5), (5, 6), (5, 7)],
]
_FALLBACK_VIEWS = [
    (0, 2, 0),
    (0, 1, 1 << 30),
    (1, 0, 0),
    (1, 2, 1 << 30),
    (2, 1, 0),
    (2, 2, 1 << 30),
    (3, 0, 0),
    (3, 1, 1 << 30),
    (4, 2, 0),
    (4, 0, 1 << 30),
    (5, 0, 0),
    (5, 2, 1 << 30),
]


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


def _libstdcxx_shuffle_minstd0(n: int) -> list[int]:
    """``std::shuffle(ids 0..n-1, std::default_random_engine(0))`` as libstdc++ computes it.

    libstdc++'s default_random_engine is minstd_rand0 (x <- 16807 x mod 2^31-1; seed 0 gives state 1). Its
    std::shuffle (bits/stl_algo.h) draws two swap positions per engine call via __gen_two_uniform_ints when the engine's
    range covers n * n, else one per element; uniform_int_distribution downscales (rejects results at or above
    range * scaling and divides by scaling). tests/emulator/test_l1_interleaved.py checks this against the
    std::shuffle instantiation libtt_metal.so of the ttnn wheel exports."""
    m = 2147483647
    state = 1
    urng_min, urng_range = 1, m - 2

    def uniform(a: int, b: int) -> int:
        nonlocal state
        span = b - a
        if urng_range > span:
            scaling = urng_range // (span + 1)
            past = (span + 1) * scaling
            while True:
                state = state * 16807 % m
                r = state - urng_min
                if r < past:
                    return a + r // scaling
        assert urng_range == span
        state = state * 16807 % m
        return a + state - urng_min

    v = list(range(n))
    if n <= 1:
        return v
    if urng_range // n >= n:
        i = 1
        if n % 2 == 0:
            j = uniform(0, 1)
            v[i], v[j] = v[j], v[i]
            i += 1
        while i != n:
            r = i + 1
            x = uniform(0, r * (r + 1) - 1)
            for p in (x // (r + 1), x % (r + 1)):
                v[i], v[p] = v[p], v[i]
                i += 1
        return v
    for i in range(1, n):
        j = uniform(0, i)
        v[i], v[j] = v[j], v[i]
    return v


@cache
def l1_bank_cores(grid: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """Logical core of each L1 bank (element b = bank b) of a device whose compute grid is `grid` (w, h).

    tt-metal's ``AllocatorImpl::init_compute_and_storage_l1_bank_manager`` (tt_metal/impl/allocator/
    l1_banking_allocator.cpp; the ttnn 0.81.1 wheel's libtt_metal.so calls the same std::shuffle with a
    linear_congruential_engine<16807, 0, 2^31-1> whose state it sets to 1) makes one L1 bank per ComputeAndStore
    core: it walks the worker grid row by row (corerange_to_cores(worker_grid, nullopt, row_wise=true)) and gives the
    k-th compute core bank id shuffled[k], where shuffled = 0..n-1 permuted by std::shuffle with
    std::default_random_engine(0) ("randomize remap"; no l1_bank_remap is passed by ttnn.open_device). On n150 / n300
    the worker grid's extra row holds the dispatch cores, at the bottom (the wheel's
    core_descriptors/wormhole_b0_80_arch.yaml: dispatch_cores at y = -1), so the k-th compute core is logical
    (k % w, k // w) of the compute grid. Bank offsets
    (bank_to_l1_offset) are all 0: an L1-interleaved buffer sits at one address in every bank. Kernels reach bank b at
    l1_bank_to_noc_xy[noc][b], the translated NOC coordinates of its core."""
    w, h = grid
    shuffled = _libstdcxx_shuffle_minstd0(w * h)
    cores: list[tuple[int, int] | None] = [None] * (w * h)
    for k, bank in enumerate(shuffled):
        cores[bank] = (k % w, k // w)
    return tuple(cores)  # type: ignore[arg-type]
