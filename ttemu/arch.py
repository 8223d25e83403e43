"""Wormhole B0 facts the emulator models, read from the ttnn 0.81.1 wheel where the wheel has them.

- L1: 1464 KiB per Tensix core (``MEM_L1_SIZE`` in the wheel's ``wormhole/dev_mem_map.h``).
- L1_UNRESERVED_BASE: where the emulator starts circular buffers. tt-metal places its kernel-config buffer after the
  firmware region (``MEM_MAP_END`` = 35168 B in dev_mem_map.h) and sizes it 69 KiB by default; the emulator uses
  35168 + 69 * 1024 = 105824 (0x19D60). Approximate on purpose: CB addresses are not meant to match silicon's.
- DRAM: 6 channels x 2 GiB; tt-metal's 12 banks are the soc descriptor's ``dram_views`` (bank i = view i: a channel,
  the endpoint core a worker uses on each NoC, the same tile for both on Wormhole, and an address offset of 0 or 1 GiB
  inside the channel).
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
    """Bank `bank` of channel `channel`: the DRAM tile NoC 0 reaches it at (noc_x, noc_y) and the one NoC 1 reaches it
    at (noc1_x, noc1_y), both as NoC 0 coordinates. A dram_view's worker_endpoint is [NoC 0's, NoC 1's] subchannel of
    its channel (the soc descriptors' comment above dram_views), and tt-metal fills dram_bank_to_noc_xy[noc][bank] with
    get_preferred_worker_core_for_dram_view(channel, noc). Wormhole's views name one tile for both NoCs; Blackhole's
    name two (channel 0: 0-11 on NoC 0, 0-1 on NoC 1)."""

    bank: int
    channel: int
    noc_x: int
    noc_y: int
    offset: int
    noc1_x: int
    noc1_y: int

    def xy(self, noc: int) -> tuple[int, int]:
        return (self.noc1_x, self.noc1_y) if noc == 1 else (self.noc_x, self.noc_y)


def _soc_descriptor_path(name: str = "wormhole_b0_80_arch.yaml") -> Path | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec("ttnn")
        if spec is None or not spec.submodule_search_locations:
            return None
        p = Path(list(spec.submodule_search_locations)[0]) / "tt_metal/soc_descriptors" / name
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
# (channel, (NoC 0's, NoC 1's worker endpoint), address offset): Wormhole's views name one endpoint for both NoCs.
_FALLBACK_VIEWS = [
    (0, (2, 2), 0),
    (0, (1, 1), 1 << 30),
    (1, (0, 0), 0),
    (1, (2, 2), 1 << 30),
    (2, (1, 1), 0),
    (2, (2, 2), 1 << 30),
    (3, (0, 0), 0),
    (3, (1, 1), 1 << 30),
    (4, (2, 2), 0),
    (4, (0, 0), 1 << 30),
    (5, (0, 0), 0),
    (5, (2, 2), 1 << 30),
]


# ---- the chip a device models, as a value it carries --------------------------------------------------------------
# Module constants above are Wormhole B0's and stay the defaults; a device carries an ArchSpec (EmuDevice.spec) and
# everything that depends on the chip reads it from there, so one process can hold Wormhole and Blackhole devices.


@dataclass(frozen=True)
class ArchSpec:
    """One chip architecture's facts the emulator models (see the module docstring and BLACKHOLE's comments)."""

    name: str  # "wormhole_b0" / "blackhole"
    define: str  # the kernel build's ARCH_* define (tt-metal's JIT build: ARCH_WORMHOLE / ARCH_BLACKHOLE)
    soc_descriptor: str  # the wheel's tt_metal/soc_descriptors/<name>
    # The wheel's LLK trees compute kernels compile against (tt_metal/hw/ckernels/<ckernels>, tt_metal/tt-llk/<llk>),
    # with `define` as tt-metal's JIT build sets it: a Blackhole compute kernel runs Blackhole's SFPU algorithms on the
    # emulator's Blackhole instructions (include/emu/compute_sfpu_blackhole.h) and takes Blackhole's compute API
    # paths (fast untilize: include/api/compute/experimental/fast_untilize.h).
    ckernels: str
    llk: str
    l1_size: int
    l1_unreserved_base: int
    dram_channel_bytes: int
    dram_bank_bytes: int
    dram_alignment: int
    l1_alignment: int
    # Translated NOC x of each logical worker column (Wormhole: 18 + x) and translated y of logical row 0.
    worker_x: tuple[int, ...]
    worker_y0: int
    default_dispatch_axis: str  # ttnn's default dispatch_core_axis on this arch

    @property
    def affine_x(self) -> bool:
        """True when the translated x of logical column x is worker_x[0] + x for every column (Wormhole)."""
        return self.worker_x == tuple(range(self.worker_x[0], self.worker_x[0] + len(self.worker_x)))

    def translated(self, x: int, y: int) -> tuple[int, int]:
        return self.worker_x[x], self.worker_y0 + y


WORMHOLE_B0 = ArchSpec(
    name="wormhole_b0",
    define="ARCH_WORMHOLE",
    soc_descriptor="wormhole_b0_80_arch.yaml",
    ckernels="wormhole_b0",
    llk="tt_llk_wormhole_b0",
    l1_size=L1_SIZE,
    l1_unreserved_base=L1_UNRESERVED_BASE,
    dram_channel_bytes=DRAM_CHANNEL_BYTES,
    dram_bank_bytes=DRAM_BANK_BYTES,
    dram_alignment=DRAM_ALIGNMENT,
    l1_alignment=L1_ALIGNMENT,
    worker_x=tuple(range(TRANSLATED_X0, TRANSLATED_X0 + 10)),
    worker_y0=TRANSLATED_Y0,
    default_dispatch_axis="row",
)

# Blackhole (the ttnn 0.81.1 wheel unless said otherwise):
# - L1 1536 KiB (MEM_L1_SIZE in hw/inc/internal/tt-1xx/blackhole/dev_mem_map.h); MEM_MAP_END there is 41088 B, and CBs
#   start after tt-metal's kernel-config buffer as on Wormhole (69 KiB, the same default): 41088 + 69 * 1024.
# - DRAM: 8 GDDR6 channels, one bank each (soc_descriptors/blackhole_140_arch.yaml: 8 dram_views, address_offset 0,
#   dram_bank_size 4278190080 = 4 GiB - 16 MiB); a channel is 4 GiB (32 GB per P150 card). DRAM alignment 64 B
#   (blackhole/noc/noc_parameters.h: NOC_DRAM_READ_ALIGNMENT_BYTES 64), L1 alignment 16 B as on Wormhole. Each view
#   names two of its channel's three tiles, one per NoC (worker_endpoint [2, 1]: channel 0 is 0-11 on NoC 0, 0-1 on
#   NoC 1), and a core reaches the bank over NoC n through NoC n's tile (DramBank).
# - Tensix columns at NOC0 x 1..7 and 10..16, rows y 2..11 (the soc descriptor's functional_workers). UMD's
#   BlackholeCoordinateManager (fill_tensix_physical_translated_mapping) gives a worker the translated coordinates of
#   the "virtual" core: logical column x -> the x-th Tensix column of the die, harvested columns moved to the end,
#   so which columns a card has harvested never shows. Logical (x, y) -> (TENSIX_COLS[x], 2 + y).
# - ttnn's default dispatch on Blackhole is a column (core_descriptors/blackhole_140_arch.yaml lists only "col"
#   entries; dispatch_cores at x = -1, the last enabled column).
BLACKHOLE_TENSIX_COLS = (1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16)
BLACKHOLE = ArchSpec(
    name="blackhole",
    define="ARCH_BLACKHOLE",
    soc_descriptor="blackhole_140_arch.yaml",
    ckernels="blackhole",
    llk="tt_llk_blackhole",
    l1_size=1536 * 1024,
    l1_unreserved_base=41088 + 69 * 1024,
    dram_channel_bytes=4 << 30,
    dram_bank_bytes=4278190080,
    dram_alignment=64,
    l1_alignment=16,
    worker_x=BLACKHOLE_TENSIX_COLS,
    worker_y0=2,
    default_dispatch_axis="col",
)

# Board -> (chip arch, DRAM channels the card has). Blackhole cards as shipped: since tt-system-firmware v19.5.0
# (January 2026) every P150 (and the P100) presents 120 Tensix cores, 12 of the die's 14 columns (tt-metal issue
# #47014 / PR #47015: "11x10 = 110 compute grid"; tt-mlir PR #9248: metal's P150 mock reports 10x11). With dispatch on
# the last column (core_descriptors/blackhole_140_arch.yaml "2xharvested": compute [0, 0]-[10, 9]) the compute grid
# is 11x10. P100: 7 of the 8 GDDR6 channels (28 GB; Tenstorrent's p100a specification; which channel is harvested
# varies per card, the emulator drops the last). P300: two chips, each taken as a P150's (UMD's soc descriptor for
# the P300 local chip is the P150's, tt-umd PR #437; its Tensix count is assumed the same 120).
BOARD_ARCH = {"n150": WORMHOLE_B0, "n300": WORMHOLE_B0, "galaxy": WORMHOLE_B0, "p150": BLACKHOLE, "p100": BLACKHOLE}
BOARD_DRAM_CHANNELS = {"p100": 7}
GRIDS.update({"p150": (11, 10), "p100": (11, 10)})
# Blackhole boards' grid is with dispatch on a column (ttnn's default there); a row-dispatch Blackhole is not modelled.
DEFAULT_AXIS_ONLY = {"p150", "p100"}


def board_spec(board: str) -> ArchSpec:
    return BOARD_ARCH.get(board, WORMHOLE_B0)


@cache
def dram_layout_for(spec: ArchSpec, channels: int | None = None) -> tuple[list[list[tuple[int, int]]], list[DramBank]]:
    """(cores of each DRAM channel as NOC0 (x, y), the banks) of `spec`'s chip; `channels`: keep only the first ones
    (a card with harvested DRAM)."""
    if spec is WORMHOLE_B0 and channels is None:
        return dram_layout()
    path = _soc_descriptor_path(spec.soc_descriptor)
    if path is None:
        raise RuntimeError(f"the ttnn wheel's soc descriptor {spec.soc_descriptor} is needed for {spec.name}")
    import yaml

    soc = yaml.safe_load(path.read_text())
    chans = [[tuple(int(v) for v in c.split("-")) for c in ch] for ch in soc["dram"]]
    views = _views(soc)
    if channels is not None:
        chans = chans[:channels]
        views = [v for v in views if v[0] < channels]
    return chans, _banks(chans, views)


def _views(soc: dict) -> list[tuple[int, tuple[int, int], int]]:
    """(channel, (NoC 0's, NoC 1's worker endpoint), address offset) of each of the soc descriptor's dram_views."""
    return [
        (v["channel"], (int(v["worker_endpoint"][0]), int(v["worker_endpoint"][1])), int(v["address_offset"]))
        for v in soc["dram_views"]
    ]


def _banks(channels, views) -> list[DramBank]:
    return [
        DramBank(i, ch, *channels[ch][ep0], off, *channels[ch][ep1]) for i, (ch, (ep0, ep1), off) in enumerate(views)
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
        views = _views(soc)
    return channels, _banks(channels, views)


def _libstdcxx_shuffle_minstd0(n: int) -> list[int]:
    """``std::shuffle(ids 0..n-1, std::default_random_engine(0))`` as libstdc++ computes it.

    libstdc++'s default_random_engine is minstd_rand0 (x <- 16807 x mod 2^31-1; seed 0 gives state 1). Its
    std::shuffle (bits/stl_algo.h) draws two swap positions per engine call via __gen_two_uniform_ints when the engine's
    range covers n * n, else one per element; uniform_int_distribution downscales (rejects results at or above
    range * scaling and divides by scaling). ttemu/tests/test_l1_interleaved.py checks this against the
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
