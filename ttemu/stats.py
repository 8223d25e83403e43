"""Statistics of one emulated program run (returned by ``EmuDevice.generic_op``).

The counts are functional facts of the run (bytes moved, pages touched, tiles processed). ``timing`` is the timing
model's replay of the run (docs/TIMING.md): ``duration_ns`` (first kernel start to last kernel end, as the device
profiler's DEVICE KERNEL DURATION) and a per-core / per-RISC busy / wait breakdown, all MODELLED, not measured. Per-page
buffer counts cover DRAM buffers (bytes read from / written to each page over the NOC) and L1 sharded and
L1-interleaved buffers (bytes NOC transfers moved out of / into each page, from any core including the one holding the
page; direct pointer accesses by kernels are not seen).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .timing import TimingStats

COUNTER_NAMES = ("tiles_unpacked", "tiles_packed", "matmul_tiles", "fpu_tiles", "sfpu_tiles")


@dataclass
class EmulatorStats:
    dram_bank_read_bytes: list[int]
    dram_bank_write_bytes: list[int]
    noc_bytes: dict[tuple[str, str], int]  # (source node, destination node) -> bytes; nodes "x,y" or "dramN"
    core_counters: dict[str, dict[str, int]]  # "x,y" -> counter name -> value
    cb_high_water: dict[str, dict[int, int]]  # "x,y" -> CB index -> max pages resident
    buffer_page_read_bytes: dict[int, list[int]] = field(repr=False)
    buffer_page_write_bytes: dict[int, list[int]] = field(repr=False)
    buffer_page_sizes: dict[int, int] = field(repr=False)
    wall_seconds: float = 0.0
    timing: TimingStats | None = None  # None when the run was made with the timing model off
    # Host wall seconds of the emulator child's phases in order (load_program, setup_memory, load_kernels, kernels,
    # replay): where an emulated run's host time goes; the rest of wall_seconds is process start-up, the result's
    # writing and Python.
    host_phases_s: dict[str, float] = field(default_factory=dict)

    @property
    def duration_ns(self) -> float | None:
        """Modelled DEVICE KERNEL DURATION [ns]; None with timing off or when the replay could not finish (the reason
        is in ``timing.error``)."""
        if self.timing is None or not self.timing.ok:
            return None
        return self.timing.duration_ns

    def durations_ns(self) -> dict[str, float | None]:
        """Modelled DEVICE KERNEL DURATION [ns] under every timing variant this run replayed (its main variant
        first, then those TTFD_TIMING_VARIANTS asked for); empty with timing off."""
        return {} if self.timing is None else self.timing.durations_ns()

    @property
    def dram_read_bytes(self) -> int:
        return sum(self.dram_bank_read_bytes)

    @property
    def dram_write_bytes(self) -> int:
        return sum(self.dram_bank_write_bytes)

    def counter(self, name: str) -> int:
        """Sum of a runtime counter (see COUNTER_NAMES) over all cores."""
        return sum(c.get(name, 0) for c in self.core_counters.values())

    def bytes_read_from(self, tensor) -> int:
        return sum(self.buffer_page_read_bytes.get(tensor.buffer_id, []))

    def bytes_written_to(self, tensor) -> int:
        return sum(self.buffer_page_write_bytes.get(tensor.buffer_id, []))

    def _pages(self, table, tensor) -> Counter:
        size = self.buffer_page_sizes[tensor.buffer_id]
        out = Counter()
        for i, b in enumerate(table.get(tensor.buffer_id, [])):
            if b:
                out[i] = b // size if b % size == 0 else b / size
        return out

    def pages_read(self, tensor) -> Counter:
        """page index -> times read (bytes read from the page / page size; fractional for partial reads)."""
        return self._pages(self.buffer_page_read_bytes, tensor)

    def pages_written(self, tensor) -> Counter:
        return self._pages(self.buffer_page_write_bytes, tensor)

    def page_read_bytes(self, tensor) -> list[int]:
        return list(self.buffer_page_read_bytes.get(tensor.buffer_id, []))

    @classmethod
    def from_result(cls, s: dict, page_sizes: dict[int, int], wall: float) -> EmulatorStats:
        cores = s.get("cores", {})
        return cls(
            dram_bank_read_bytes=list(s.get("dram_bank_read", [])),
            dram_bank_write_bytes=list(s.get("dram_bank_write", [])),
            noc_bytes={(a, b): n for a, b, n in s.get("noc", [])},
            core_counters={k: dict(zip(COUNTER_NAMES, v["counters"])) for k, v in cores.items()},
            cb_high_water={k: {int(i): n for i, n in v["cb_high_water"].items()} for k, v in cores.items()},
            buffer_page_read_bytes={int(k): v["read"] for k, v in s.get("buffers", {}).items()},
            buffer_page_write_bytes={int(k): v["written"] for k, v in s.get("buffers", {}).items()},
            buffer_page_sizes=page_sizes,
            wall_seconds=wall,
            timing=TimingStats.from_json(s["timing"], s.get("timing_variants")) if s.get("timing") else None,
            host_phases_s=dict(s.get("host_phases_s", {})),
        )
