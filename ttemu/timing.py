"""Python handle on the emulator's cycle-approximate timing model (``include/emu/timing_engine.h``; the kernels'
hooks record through ``include/emu/timing.h``).

The emulator runtime calls the C++ model directly (one ``timing::Risc`` trace per kernel thread, replayed by
``timing::Engine`` after the kernels finish; see docs/TIMING.md). This module builds ``csrc/timing_capi.cpp`` into a
small shared library (in the emulator's cache, build.CACHE_ROOT, keyed by the two sources' content) and wraps it with
ctypes, so Python can record traces by hand and replay them: that is how ``timing_calibration`` reproduces tt-metal's
published data-movement micro-benchmarks without kernels.

    m = TimingModel(grid=(8, 8))      # Wormhole B0; TimingModel((11, 10), arch="blackhole") a P150
    r = m.add_risc(core=0, proc=Proc.NCRISC)
    m.read(r, dram(0), 2048)          # noc_async_read of 2 KB from DRAM bank 0
    m.barrier(r, Barrier.READ)        # noc_async_read_barrier
    m.run()
    m.risc_result(r).end - m.risc_result(r).start   # cycles, modelled

Variants (docs/TIMING.md, section 3b): the constants with no public figure (kind "A") are each varied over a range,
and flow control can be switched off. ``variant_names()`` lists them; ``TTFD_TIMING_VARIANT=<name>`` selects one for
the emulator (every program run in that environment) and for ``TimingModel`` (unless it is given ``variant=``).
Unset means "nominal": every constant at its nominal value, flow control on. A chip's own assumed constants (Blackhole's
router hop and NIU latencies) have variants of their own (``variant_names("blackhole")``); on another chip such a
variant runs nominal.

Several variants from one run: the recorded traces do not depend on the variant (only the replay reads the
constants), so ``TTFD_TIMING_VARIANTS=all`` (or a list of names, comma or space separated; :func:`variants_env`) makes
the emulator replay each run's traces again under every listed variant after the main replay. The results come back
in ``stats.timing.variants`` (name -> ``TimingStats``, each equal to a separate run with ``TTFD_TIMING_VARIANT`` set
to that name); ``stats.durations_ns()`` maps every variant replayed, the main one included, to its duration.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from pathlib import Path

from .build import CACHE_ROOT, CXX, _run, file_lock
from .errors import EmulatorError

HERE = Path(__file__).resolve().parent
HEADER = HERE / "include" / "emu" / "timing_engine.h"
RECORDING_HEADER = HERE / "include" / "emu" / "timing.h"
ARCHS = ("wormhole_b0", "blackhole")  # the chips the engine models (timing::Chip::by_name; ttemu.arch ArchSpec.name)
CAPI = HERE / "csrc" / "timing_capi.cpp"
NO_TRID = 0xFFFFFFFF
VARIANT_ENV = "TTFD_TIMING_VARIANT"
VARIANTS_ENV = "TTFD_TIMING_VARIANTS"
NOMINAL = "nominal"


class Proc(IntEnum):  # emu::Processor / timing::Proc
    BRISC = 0
    NCRISC = 1
    COMPUTE = 2


class Noc(IntEnum):
    NOC0 = 0
    NOC1 = 1


class Op(IntEnum):  # timing::Op
    MATMUL = 0
    ELTWISE_ADD = 1
    ELTWISE_MUL = 2
    REDUCE_MAX = 3
    REDUCE_SUM = 4
    COPY = 5
    TRANSPOSE = 6
    SFPU_EXP = 7
    SFPU_RECIP = 8
    SFPU_BINARY = 9
    SFPU_SIMPLE = 10


class Fidelity(IntEnum):  # ttnn.MathFidelity values
    LOFI = 0
    HIFI2 = 2
    HIFI3 = 3
    HIFI4 = 4


class Barrier(IntEnum):
    READ = 0
    WRITE = 1
    WRITES_FLUSHED = 2
    ATOMIC = 3


class Cb(IntEnum):
    WAIT_FRONT = 0
    POP_FRONT = 1
    RESERVE_BACK = 2
    PUSH_BACK = 3


class Regs(IntEnum):
    ACQUIRE = 0
    COMMIT = 1
    WAIT = 2
    RELEASE = 3


def dram(bank: int) -> int:
    """Endpoint id of DRAM bank `bank` (worker cores are their row-major index)."""
    return -1 - bank


@dataclass(frozen=True)
class RiscResult:
    start: float
    end: float
    busy: float
    wait: float
    lane_busy: tuple[float, float, float]  # compute: unpack, math, pack

    @property
    def cycles(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Link:
    noc: Noc
    origin: tuple[int, int]  # physical NoC 0 coordinates of the router the link leaves
    axis: int  # 0: along x, 1: along y (NoC 0 goes +x/+y, NoC 1 -x/-y)
    busy: float  # flit-cycles booked


@dataclass(frozen=True)
class Constant:
    name: str
    value: float
    unit: str
    kind: str  # M measured, N nominal, C a public tool's constant, D derived, A assumed (varied by the variants)
    source: str


@dataclass(frozen=True)
class RiscTiming:
    """One RISC of one core in a replay's statistics, in ns (modelled)."""

    start: float
    end: float
    busy: float  # time charged: NoC issue, API bookkeeping, compute (for TRISC: summed over its three lanes)
    wait: float  # time blocked on a CB, DST, semaphore or barrier
    lanes: dict[str, float] | None = None  # TRISC: busy time of "unpack", "math", "pack"


@dataclass(frozen=True)
class TimingStats:
    """The timing part of a program run's statistics: what the runtime writes under "timing" in its result file and
    ``EmulatorStats`` will expose (docs/TIMING.md, section 6). All times in ns, modelled."""

    ok: bool
    error: str  # replay deadlock description when not ok
    duration_ns: float  # first kernel start to last kernel end: the device profiler's DEVICE KERNEL DURATION
    first_start_ns: float
    last_end_ns: float
    trace_digest: str
    cores: dict[str, dict[str, RiscTiming]]  # "x,y" -> "BRISC" / "NCRISC" / "TRISC" -> timing
    dram_bank_busy_ns: list[float]
    busiest_links: list[Link]
    variant: str = NOMINAL  # the timing model's variant that produced these figures
    # The same run's traces replayed under further variants (TTFD_TIMING_VARIANTS): name -> their statistics.
    variants: dict[str, TimingStats] = field(default_factory=dict, repr=False, compare=False)

    def under(self, variant: str) -> TimingStats:
        """The statistics under `variant`: these (the main replay's) or one of ``variants``; a KeyError naming the
        variants replayed otherwise."""
        if variant == self.variant:
            return self
        try:
            return self.variants[variant]
        except KeyError:
            raise KeyError(
                f"timing variant {variant!r} was not replayed in this run (replayed: "
                f"{', '.join([self.variant, *self.variants])}; ask for it with {VARIANTS_ENV})"
            ) from None

    def durations_ns(self) -> dict[str, float | None]:
        """Every variant replayed (the main one first) -> its duration in ns (None where the replay deadlocked)."""
        return {
            t.variant: (t.duration_ns if t.ok else None) for t in (self, *(self.variants[v] for v in self.variants))
        }

    @classmethod
    def from_json(cls, d: dict, variants: dict | None = None) -> TimingStats:
        """`d`: the result file's "timing" object; `variants`: its "timing_variants" object (name -> the same)."""
        cores = {
            core: {
                risc: RiscTiming(
                    v["start"],
                    v["end"],
                    v["busy"],
                    v["wait"],
                    {k: v[k] for k in ("unpack", "math", "pack")} if "math" in v else None,
                )
                for risc, v in riscs.items()
            }
            for core, riscs in d["cores"].items()
        }
        links = [Link(Noc(n), (x, y), axis, busy) for n, x, y, axis, busy in d["busiest_links"]]
        return cls(
            d["ok"],
            d["error"],
            d["duration_ns"],
            d["first_start_ns"],
            d["last_end_ns"],
            d["trace_digest"],
            cores,
            list(d["dram_bank_busy"]),
            links,
            d.get("variant", NOMINAL),
            {name: cls.from_json(v) for name, v in (variants or {}).items()},
        )


def _digest() -> str:
    h = hashlib.sha256()
    for p in (HEADER, RECORDING_HEADER, CAPI):
        h.update(p.read_bytes())
    return h.hexdigest()[:20]


@lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """The timing model's C API, built on first use (any change to timing*.h / timing_capi.cpp rebuilds)."""
    out = CACHE_ROOT / f"timing-{_digest()}" / "libttfd_timing.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(out.parent / ".lock"):
            if not out.exists():
                tmp = out.with_suffix(f".{os.getpid()}")
                _run(
                    [
                        CXX,
                        "-std=c++17",
                        "-O2",
                        "-fPIC",
                        "-shared",
                        f"-I{HEADER.parent.parent}",
                        str(CAPI),
                        "-o",
                        str(tmp),
                    ]
                )
                tmp.rename(out)
    lib = ctypes.CDLL(str(out))
    vp, i, u, d, s = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_double, ctypes.c_char_p
    sigs = {
        "ttfd_tm_new": ([s, i, i, ctypes.POINTER(i), ctypes.POINTER(i), i, s], vp),
        "ttfd_tm_num_variants": ([s], i),
        "ttfd_tm_variant_name": ([s, i], s),
        "ttfd_tm_assumed": (
            [
                s,
                i,
                ctypes.POINTER(ctypes.c_char_p),
                ctypes.POINTER(ctypes.c_char_p),
                ctypes.POINTER(d),
                ctypes.POINTER(d),
                ctypes.POINTER(ctypes.c_char_p),
                ctypes.POINTER(ctypes.c_char_p),
            ],
            i,
        ),
        "ttfd_tm_free": ([vp], None),
        "ttfd_tm_add_risc": ([vp, i, i, i], i),
        "ttfd_tm_configure_cb": ([vp, i, u, u], None),
        "ttfd_tm_init_semaphore": ([vp, i, u, u], None),
        "ttfd_tm_read": ([vp, i, i, u, i, u], None),
        "ttfd_tm_write": ([vp, i, i, u, i, u], None),
        "ttfd_tm_write_multicast": ([vp, i, i, i, u, i, i], None),
        "ttfd_tm_sem_inc": ([vp, i, i, u, u, i], None),
        "ttfd_tm_sem_inc_multicast": ([vp, i, i, i, u, u, i], None),
        "ttfd_tm_sem_write_remote": ([vp, i, i, u, u, i], None),
        "ttfd_tm_sem_wait": ([vp, i, u, u, i], None),
        "ttfd_tm_sem_set": ([vp, i, u, u], None),
        "ttfd_tm_barrier": ([vp, i, i, u, i], None),
        "ttfd_tm_compute": ([vp, i, i, u, u, u, i, i, d], None),
        "ttfd_tm_pack": ([vp, i, u, u], None),
        "ttfd_tm_tile_regs": ([vp, i, i], None),
        "ttfd_tm_cb": ([vp, i, i, u, u], None),
        "ttfd_tm_delay": ([vp, i, d], None),
        "ttfd_tm_config": ([vp, i, i, i], None),
        "ttfd_tm_run": ([vp], i),
        "ttfd_tm_trace_digest": ([vp], ctypes.c_ulonglong),
        "ttfd_tm_error": ([vp], ctypes.c_char_p),
        "ttfd_tm_result_json": ([vp], ctypes.c_char_p),
        "ttfd_tm_duration": ([vp], d),
        "ttfd_tm_risc_result": ([vp, i, ctypes.POINTER(d)], None),
        "ttfd_tm_dram_busy": ([vp, i], d),
        "ttfd_tm_busiest_link": ([vp, i, ctypes.POINTER(i)], d),
        "ttfd_tm_hops": ([s, i, i, i, i, i], i),
        "ttfd_tm_worker_xy": ([s, i, i, i, ctypes.POINTER(i)], None),
        "ttfd_tm_num_constants": ([s], i),
        "ttfd_tm_constant": (
            [
                s,
                i,
                ctypes.POINTER(ctypes.c_char_p),
                ctypes.POINTER(ctypes.c_char_p),
                ctypes.POINTER(ctypes.c_char),
                ctypes.POINTER(ctypes.c_char_p),
            ],
            d,
        ),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = res
    return lib


def _arch(arch: str | None) -> str:
    a = "wormhole_b0" if arch is None else arch
    if a not in ARCHS:
        raise ValueError(f"arch={arch!r}: the timing model has the chips {', '.join(ARCHS)}")
    return a


def constants(arch: str | None = None) -> list[Constant]:
    """The model's table of constants, as compiled: Wormhole B0's (timing::constant_table(), every constant) or, with
    arch="blackhole", Blackhole's own (timing::blackhole_constant_table(); the rest are Wormhole's)."""
    lib = library()
    out = []
    chip = _arch(arch).encode()
    for k in range(lib.ttfd_tm_num_constants(chip)):
        name, unit, source = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
        kind = ctypes.c_char()
        v = lib.ttfd_tm_constant(
            chip, k, ctypes.byref(name), ctypes.byref(unit), ctypes.byref(kind), ctypes.byref(source)
        )
        out.append(Constant(name.value.decode(), v, unit.value.decode(), kind.value.decode(), source.value.decode()))
    return out


def variant_names(arch: str | None = None) -> list[str]:
    """The timing model's variants on chip `arch` (default Wormhole B0): "nominal" (the default: every constant
    nominal, flow control on), "no_flow_control", and "<stem>_low" / "<stem>_high" for each assumed constant
    (``assumed_constants(arch)``). arch="all": every chip's (the names a variant may take)."""
    lib = library()
    chip = (arch if arch == "all" else _arch(arch)).encode()
    return [lib.ttfd_tm_variant_name(chip, k).decode() for k in range(lib.ttfd_tm_num_variants(chip))]


@dataclass(frozen=True)
class AssumedConstant:
    """A constant with no public figure (kind "A"), the range the variants vary it over, and why that range."""

    name: str  # the k:: (or, for a chip's own, kbh::) name, as in constants(arch)
    stem: str  # its variants are "<stem>_low" and "<stem>_high"
    nominal: float
    low: float
    high: float
    why: str
    chip: str = ""  # the chip whose own constant this is ("": every chip's)


def assumed_constants(arch: str | None = None) -> list[AssumedConstant]:
    """The assumed constants of chip `arch` (default Wormhole B0): every chip's, and the chip's own."""
    lib = library()
    a = _arch(arch)
    wormhole = {c.name: c.value for c in constants()}
    own = {c.name: c.value for c in constants(a)}
    out, k = [], 0
    name, stem, why, chip = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
    lo, hi = ctypes.c_double(), ctypes.c_double()
    while lib.ttfd_tm_assumed(
        a.encode(),
        k,
        ctypes.byref(name),
        ctypes.byref(stem),
        ctypes.byref(lo),
        ctypes.byref(hi),
        ctypes.byref(why),
        ctypes.byref(chip),
    ):
        n, c = name.value.decode(), chip.value.decode()
        nominal = own[n] if c else wormhole[n]
        out.append(AssumedConstant(n, stem.value.decode(), nominal, lo.value, hi.value, why.value.decode(), c))
        k += 1
    return out


def check_variant(name: str) -> str:
    """`name` if it is a variant; a ValueError naming it and listing the variants otherwise."""
    names = variant_names("all")
    if name not in names:
        raise ValueError(
            f"timing variant {name!r} (from {VARIANT_ENV} or variant=) is not one of the timing "
            f"model's variants: {', '.join(names)}"
        )
    return name


def current_variant() -> str:
    """The variant ``TTFD_TIMING_VARIANT`` selects ("nominal" when unset or empty), checked."""
    return check_variant(os.environ.get(VARIANT_ENV, "").strip() or NOMINAL)


def requested_variants(value: str | None = None) -> list[str]:
    """The variants ``TTFD_TIMING_VARIANTS`` (or `value`) asks for, checked: "all" is every variant; names are
    separated by commas or spaces; empty or unset: none."""
    value = os.environ.get(VARIANTS_ENV, "") if value is None else value
    names = [n for n in value.replace(",", " ").split() if n]
    if names == ["all"]:
        return variant_names()
    known = variant_names("all")
    for n in names:
        if n not in known:
            raise ValueError(
                f"{VARIANTS_ENV} names {n!r}, not one of the timing model's variants ({', '.join(known)}) nor 'all'"
            )
    return list(dict.fromkeys(names))


@contextmanager
def variants_env(names):
    """Run the body with ``TTFD_TIMING_VARIANTS`` set: every emulator run in it replays its traces under each of
    `names` ("all", or an iterable of variant names) besides its main variant."""
    value = names if isinstance(names, str) else ",".join(names)
    requested_variants(value)
    old = os.environ.get(VARIANTS_ENV)
    os.environ[VARIANTS_ENV] = value
    try:
        yield requested_variants(value)
    finally:
        if old is None:
            os.environ.pop(VARIANTS_ENV, None)
        else:
            os.environ[VARIANTS_ENV] = old


@contextmanager
def variant_env(name: str):
    """Run the body with ``TTFD_TIMING_VARIANT=name`` (emulator programs and TimingModels it creates use it)."""
    check_variant(name)
    old = os.environ.get(VARIANT_ENV)
    os.environ[VARIANT_ENV] = name
    try:
        yield name
    finally:
        if old is None:
            os.environ.pop(VARIANT_ENV, None)
        else:
            os.environ[VARIANT_ENV] = old


def hops(a: tuple[int, int], b: tuple[int, int], noc: int, arch: str | None = None) -> int:
    """Router hops of the unicast route a -> b (physical NoC 0 coordinates) on `noc` of chip `arch`'s torus."""
    return library().ttfd_tm_hops(_arch(arch).encode(), a[0], a[1], b[0], b[1], int(noc))


def worker_xy(grid: tuple[int, int], core: int, arch: str | None = None) -> tuple[int, int]:
    """Physical NoC 0 coordinates the model gives core `core` (row-major) of a compute grid `grid` (w, h)."""
    xy = (ctypes.c_int * 2)()
    library().ttfd_tm_worker_xy(_arch(arch).encode(), grid[0], grid[1], core, xy)
    return xy[0], xy[1]


class TimingReplayError(EmulatorError):
    pass


def _xy_array(xys: list[tuple[int, int]] | None):
    """(x, y) pairs as the flat C int array the library takes, or None (a null pointer)."""
    if not xys:
        return None
    flat = [v for xy in xys for v in xy]
    return (ctypes.c_int * len(flat))(*flat)


class TimingModel:
    """One timing::Engine: add RISCs, record their events in program order, then run() the replay once."""

    def __init__(
        self,
        grid: tuple[int, int] = (8, 8),
        dram_banks: list[tuple[int, int]] | None = None,
        variant: str | None = None,
        arch: str | None = None,
        dram_banks_noc1: list[tuple[int, int]] | None = None,
    ):
        """variant: one of variant_names(); None: the one TTFD_TIMING_VARIANT selects (nominal when unset).
        arch: "wormhole_b0" (default) or "blackhole"; dram_banks default to the chip's soc descriptor table.
        dram_banks_noc1: each bank's NoC 1 endpoint (dram_bank_to_noc_xy[1]; Blackhole's differ from NoC 0's), with
        dram_banks; None: NoC 0's."""
        self._lib = library()
        self.arch = _arch(arch)
        self.variant = current_variant() if variant is None else check_variant(variant)
        if dram_banks_noc1 is not None and (not dram_banks or len(dram_banks_noc1) != len(dram_banks)):
            raise ValueError(
                f"dram_banks_noc1 has {len(dram_banks_noc1)} banks; expected one per dram_banks entry "
                f"({len(dram_banks or [])})"
            )
        arr, arr1 = _xy_array(dram_banks), _xy_array(dram_banks_noc1)
        self._h = self._lib.ttfd_tm_new(
            self.arch.encode(), grid[0], grid[1], arr, arr1, len(dram_banks or []), self.variant.encode()
        )
        self.grid = grid

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._lib.ttfd_tm_free(h)

    # ---- setup
    def add_risc(self, core: int, proc: Proc, dst_buffers: int = 2) -> int:
        return self._lib.ttfd_tm_add_risc(self._h, core, int(proc), dst_buffers)

    def configure_cb(self, core: int, cb: int, num_pages: int) -> None:
        self._lib.ttfd_tm_configure_cb(self._h, core, cb, num_pages)

    def init_semaphore(self, core: int, l1_off: int, value: int) -> None:
        self._lib.ttfd_tm_init_semaphore(self._h, core, l1_off, value)

    # ---- events (program order per RISC)
    def read(self, risc: int, src: int, nbytes: int, noc: Noc = Noc.NOC0, trid: int = NO_TRID) -> None:
        self._lib.ttfd_tm_read(self._h, risc, src, nbytes, int(noc), trid)

    def write(self, risc: int, dst: int, nbytes: int, noc: Noc = Noc.NOC0, trid: int = NO_TRID) -> None:
        self._lib.ttfd_tm_write(self._h, risc, dst, nbytes, int(noc), trid)

    def write_multicast(
        self, risc: int, first: int, last: int, nbytes: int, noc: Noc = Noc.NOC0, include_self: bool = False
    ) -> None:
        self._lib.ttfd_tm_write_multicast(self._h, risc, first, last, nbytes, int(noc), int(include_self))

    def sem_inc(self, risc: int, core: int, l1_off: int, incr: int = 1, noc: Noc = Noc.NOC0) -> None:
        self._lib.ttfd_tm_sem_inc(self._h, risc, core, l1_off, incr, int(noc))

    def sem_inc_multicast(
        self, risc: int, first: int, last: int, l1_off: int, incr: int = 1, noc: Noc = Noc.NOC0
    ) -> None:
        """noc_semaphore_inc_multicast to the cores of the rectangle with corners `first` and `last` (row-major)."""
        self._lib.ttfd_tm_sem_inc_multicast(self._h, risc, first, last, l1_off, incr, int(noc))

    def sem_write_remote(self, risc: int, core: int, l1_off: int, value: int, noc: Noc = Noc.NOC0) -> None:
        self._lib.ttfd_tm_sem_write_remote(self._h, risc, core, l1_off, value, int(noc))

    def sem_wait(self, risc: int, l1_off: int, value: int, at_least: bool = False) -> None:
        self._lib.ttfd_tm_sem_wait(self._h, risc, l1_off, value, int(at_least))

    def sem_set(self, risc: int, l1_off: int, value: int) -> None:
        self._lib.ttfd_tm_sem_set(self._h, risc, l1_off, value)

    def barrier(self, risc: int, kind: Barrier = Barrier.READ, trid: int = NO_TRID, noc: Noc = Noc.NOC0) -> None:
        """Wait for this RISC's transfers of `kind` issued on `noc` (tt-metal's barriers take a NoC and wait on that
        NIU's counters only)."""
        self._lib.ttfd_tm_barrier(self._h, risc, int(kind), trid, int(noc))

    def compute(
        self,
        risc: int,
        op: Op,
        math_tiles: int,
        unpack_tiles: int = 0,
        tile_bytes: int = 2048,
        fidelity: Fidelity = Fidelity.HIFI4,
        approx: bool = False,
        tile_fraction: float = 1.0,
    ) -> None:
        """`tile_fraction`: share of a 32x32 tile the math touches (16-row in0 tiles of a matmul, or an SFPU op on
        two of four faces: 0.5)."""
        self._lib.ttfd_tm_compute(
            self._h,
            risc,
            int(op),
            math_tiles,
            unpack_tiles,
            tile_bytes,
            int(fidelity),
            int(approx),
            float(tile_fraction),
        )

    def pack(self, risc: int, tiles: int, tile_bytes: int = 2048) -> None:
        self._lib.ttfd_tm_pack(self._h, risc, tiles, tile_bytes)

    def tile_regs(self, risc: int, which: Regs) -> None:
        self._lib.ttfd_tm_tile_regs(self._h, risc, int(which))

    def cb(self, risc: int, kind: Cb, cb: int, pages: int) -> None:
        self._lib.ttfd_tm_cb(self._h, risc, int(kind), cb, pages)

    def delay(self, risc: int, cycles: float) -> None:
        self._lib.ttfd_tm_delay(self._h, risc, float(cycles))

    def config(self, risc: int, lanes: int, reconfig: bool = False) -> None:
        """An op's *_init (kComputeInitCycles) or a format reconfig (kReconfigCycles) on each compute lane in
        `lanes` (bit 0 unpack, 1 math, 2 pack)."""
        self._lib.ttfd_tm_config(self._h, risc, int(lanes), int(bool(reconfig)))

    # ---- replay and results
    def trace_digest(self) -> int:
        """Digest of every recorded event (equal digests replay to equal durations)."""
        return self._lib.ttfd_tm_trace_digest(self._h)

    def run(self, check: bool = True) -> None:
        """Replay once. A replay deadlock raises TimingReplayError (check=False: leave it in stats().error)."""
        if self._lib.ttfd_tm_run(self._h) != 0 and check:
            raise TimingReplayError(self._lib.ttfd_tm_error(self._h).decode().strip())

    def stats(self) -> TimingStats:
        """The replay's statistics, through the same JSON the emulator runtime will write."""
        return TimingStats.from_json(json.loads(self._lib.ttfd_tm_result_json(self._h).decode()))

    @property
    def duration_cycles(self) -> float:
        """First kernel start to last kernel end (the device profiler's DEVICE KERNEL DURATION), cycles."""
        return self._lib.ttfd_tm_duration(self._h)

    def risc_result(self, risc: int) -> RiscResult:
        v = (ctypes.c_double * 7)()
        self._lib.ttfd_tm_risc_result(self._h, risc, v)
        return RiscResult(v[0], v[1], v[2], v[3], (v[4], v[5], v[6]))

    def dram_busy(self, bank: int) -> float:
        return self._lib.ttfd_tm_dram_busy(self._h, bank)

    def busiest_links(self) -> list[Link]:
        """The most occupied NoC links of the replay (up to 16), busiest first."""
        out, v = [], (ctypes.c_int * 4)()
        while (busy := self._lib.ttfd_tm_busiest_link(self._h, len(out), v)) > 0:
            out.append(Link(Noc(v[0]), (v[1], v[2]), v[3], busy))
        return out
