"""The timing model on Blackhole (docs/BLACKHOLE.md, sections 3-4): the P150's constants and calibration figures and
the variant constants that move only Blackhole (the FlashDecode op's modelled P150 durations:
tests/test_decode_timing.py). Every duration here is MODELLED."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ttemu import timing, timing_calibration
from ttemu.timing import Barrier, Op, Proc, TimingModel, dram

REPO = Path(__file__).resolve().parents[2]


def test_blackhole_constants_are_listed_in_the_docs():
    """docs/BLACKHOLE.md section 3 lists every constant of Blackhole's own table with the code's value and kind."""
    doc = (REPO / "docs" / "BLACKHOLE.md").read_text()
    rows = {
        m.group(1): (float(m.group(2)), m.group(3))
        for m in re.finditer(r"^\| `(k\w+)` \| ([\d.]+) \| [^|]* \| ([NMCDA]) \|", doc, re.M)
    }
    assert rows == {c.name: (c.value, c.kind) for c in timing.constants("blackhole")}


def test_blackhole_figures_within_their_tolerance():
    for f in timing_calibration.BH_FIGURES:
        m = f.modelled()
        assert abs(f.error(m)) <= f.tolerance + 1e-12, (f.key, f.published, m)
    # The in-sample figures are close: a constant fitted to a figure reproduces it.
    for key in timing_calibration.BH_IN_SAMPLE:
        f = next(x for x in timing_calibration.BH_FIGURES if x.key == key)
        assert abs(f.error()) <= 0.05, (key, f.modelled())


def test_chip_constants_reach_the_engine():
    """The same trace on both chips: a 1 MiB read from one DRAM bank is channel bound, so it takes about 1 MiB over
    each chip's channel rate (22.3 / 47 B/cycle) in cycles, and the chip's clock converts cycles to ns."""
    out = {}
    for arch, grid in (("wormhole_b0", (8, 8)), ("blackhole", (11, 10))):
        m = TimingModel(grid, arch=arch, variant="nominal")
        r = m.add_risc(0, Proc.NCRISC)
        for _ in range(64):
            m.read(r, dram(0), 16384)
        m.barrier(r, Barrier.READ)
        m.run()
        out[arch] = (m.duration_cycles, m.stats().duration_ns)
    k = {a: {c.name: c.value for c in timing.constants(a)} for a in ("wormhole_b0", "blackhole")}
    for a, (cycles, ns) in out.items():
        assert (1 << 20) / k[a]["kDramReadBpc"] < cycles < 1.1 * (1 << 20) / k[a]["kDramReadBpc"], (a, cycles)
        assert ns == pytest.approx(cycles / k[a]["kClockGHz"], abs=1e-3)  # the JSON carries ns to 3 decimals


def test_blackhole_variants_move_only_blackhole():
    """bh_hop / bh_niu / bh_sfpu vary Blackhole's assumed constants; Wormhole's list has no such variant and runs it
    nominal."""
    assert "bh_hop_high" in timing.variant_names("blackhole")
    assert "bh_hop_high" not in timing.variant_names()
    assert {a.name for a in timing.assumed_constants("blackhole") if a.chip} == {
        "kHopCycles",
        "kNiuCycles",
        "kSfpuScale",
    }

    def one_read(arch, grid, variant):
        m = TimingModel(grid, arch=arch, variant=variant)
        r = m.add_risc(0, Proc.NCRISC)
        m.read(r, grid[0] + 1, 64)
        m.barrier(r, Barrier.READ)
        m.run()
        return m.duration_cycles

    assert one_read("blackhole", (11, 10), "bh_hop_low") < one_read("blackhole", (11, 10), "nominal")
    assert one_read("blackhole", (11, 10), "bh_hop_high") > one_read("blackhole", (11, 10), "nominal")
    assert one_read("wormhole_b0", (8, 8), "bh_hop_high") == one_read("wormhole_b0", (8, 8), "nominal")

    def exp_tiles(arch, grid, variant):
        m = TimingModel(grid, arch=arch, variant=variant)
        r = m.add_risc(0, Proc.COMPUTE)
        m.compute(r, Op.SFPU_EXP, 8)
        m.run()
        return m.duration_cycles

    bh = {v: exp_tiles("blackhole", (11, 10), v) for v in ("bh_sfpu_low", "nominal", "bh_sfpu_high")}
    assert bh["bh_sfpu_low"] < bh["nominal"] < bh["bh_sfpu_high"], bh
    assert exp_tiles("wormhole_b0", (8, 8), "bh_sfpu_high") == exp_tiles("wormhole_b0", (8, 8), "nominal")
