"""The timing model's variants (docs/TIMING.md, section 3b): every constant with no public figure (kind "A") is
varied over a stated range, one at a time, and flow control can be switched off; ``TTFD_TIMING_VARIANT`` selects a
variant for the emulator and for ``TimingModel``. All durations here are MODELLED."""

from __future__ import annotations

import pytest
import torch

from ttemu import timing
from ttemu.timing import (
    Barrier,
    Proc,
    TimingModel,
    assumed_constants,
    constants,
    dram,
    variant_env,
    variant_names,
)

from .test_timing_wired import _dram_read_cycles, _exp_run, dram_src  # noqa: F401  (fixture)


def test_every_assumed_constant_has_a_low_and_a_high_variant_around_its_nominal_value():
    names = variant_names()
    assert names[:2] == ["nominal", "no_flow_control"]
    assert len(names) == len(set(names))
    assumed = {a.name: a for a in assumed_constants()}
    kind_a = {c.name for c in constants() if c.kind == "A"}
    assert kind_a == set(assumed), "every kind-A constant needs a range, and only they"
    for a in assumed.values():
        assert a.low < a.high and a.low <= a.nominal <= a.high, a
        assert f"{a.stem}_low" in names and f"{a.stem}_high" in names
        assert a.why


def test_an_unknown_variant_is_refused_with_its_name_and_the_list(monkeypatch):
    with pytest.raises(ValueError, match=r"'fast_silicon'.*nominal, no_flow_control"):
        TimingModel(variant="fast_silicon")
    monkeypatch.setenv(timing.VARIANT_ENV, "fast_silicon")
    with pytest.raises(ValueError, match=r"'fast_silicon' \(from TTFD_TIMING_VARIANT"):
        timing.current_variant()
    monkeypatch.setenv(timing.VARIANT_ENV, "")
    assert timing.current_variant() == "nominal"


def _poll_heavy(variant: str) -> float:
    # One DRAM read, then 64 local semaphore sets: each costs kLocalPollCycles on the RISC, nothing else.
    m = TimingModel(variant=variant)
    r = m.add_risc(0, Proc.NCRISC)
    m.read(r, dram(0), 32)
    m.barrier(r, Barrier.READ)
    for k in range(64):
        m.sem_set(r, 0x100, k)
    m.run()
    return m.duration_cycles


def test_a_variant_moves_the_constant_it_names_and_nothing_else():
    lo, nom, hi = (_poll_heavy(v) for v in ("local_poll_low", "nominal", "local_poll_high"))
    a = {x.name: x for x in assumed_constants()}["kLocalPollCycles"]
    assert nom - lo == pytest.approx(64 * (a.nominal - a.low))
    assert hi - nom == pytest.approx(64 * (a.high - a.nominal))
    assert _poll_heavy("cb_api_high") == nom  # no CB call in this trace


def test_the_environment_selects_the_emulators_variant(emu_device, ttnn):
    torch.manual_seed(23)
    src = emu_device.from_torch(torch.rand(1, 1, 128, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    nominal = _exp_run(emu_device, ttnn, src, "exp")
    with variant_env("tile_op_overhead_high"):
        high = _exp_run(emu_device, ttnn, src, "exp")
    src.deallocate()
    assert nominal.timing.variant == "nominal" and high.timing.variant == "tile_op_overhead_high"
    assert high.duration_ns > nominal.duration_ns
    assert high.timing.trace_digest == nominal.timing.trace_digest  # the same events, other constants


def test_an_unknown_variant_in_the_environment_stops_an_emulator_run(emu_device, ttnn, dram_src, monkeypatch):  # noqa: F811
    monkeypatch.setenv(timing.VARIANT_ENV, "fast_silicon")
    with pytest.raises(Exception, match=r"TTFD_TIMING_VARIANT='fast_silicon' is not a variant"):
        _dram_read_cycles(emu_device, ttnn, dram_src, 32, 1)


# ---- flow control (nominal variant) against the model without it; all durations MODELLED
def _model(variant: str) -> TimingModel:
    from ttemu import timing_calibration as cal

    return TimingModel(cal.GRID, cal._bank_xy(), variant=variant)


def _dram_writer(variant: str, count: int = 256) -> tuple[float, float]:
    # One core writes `count` x 8 KB to DRAM bank 0; returns (cycles until its data has left L1: the writes-flushed
    # barrier, cycles until the acks are back). Its NIU injects 31.1 B/cycle, the channel takes 22.0: the
    # controller's queue fills.
    out = []
    for barrier in (Barrier.WRITES_FLUSHED, Barrier.WRITE):
        m = _model(variant)
        r = m.add_risc(0, Proc.BRISC)
        for _ in range(count):
            m.write(r, dram(0), 8192)
        m.barrier(r, barrier)
        m.run()
        res = m.risc_result(r)
        out.append(res.busy + res.wait if barrier == Barrier.WRITES_FLUSHED else res.cycles)
    return out[0], out[1]


def test_a_full_dram_write_queue_back_pressures_the_writer():
    free_ns, free_total = _dram_writer("no_flow_control")
    fc_ns, fc_total = _dram_writer("nominal")
    rate_ns = 256 * 8192 / 22.0  # the channel's rate: what the writer is held to once the queue is full
    # Without flow control the data leaves L1 at the NIU's rate and waits in the network; with it the writer is
    # held back to within the controller queue's worth of the channel's rate.
    assert free_ns < 0.8 * rate_ns < fc_ns
    # The channel is the bottleneck either way: the acks come back at about the same time.
    assert fc_total == pytest.approx(free_total, rel=0.03)


def _writers_sharing_links(variant: str) -> float:
    # Core (0,0) fills DRAM bank 0's write queue (its NIU injects 31.1 B/cycle, the channel takes 22.0); once it has
    # (after 30,000 cycles), core (1,0) writes 64 x 8 KB to core (7,0)'s L1 over links both routes use on NoC 0 (+x
    # along row 0 of the worker grid). Returns core (1,0)'s time from its first write to its last ack.
    m = _model(variant)
    hog = m.add_risc(0, Proc.BRISC)
    victim = m.add_risc(1, Proc.BRISC)
    for _ in range(512):
        m.write(hog, dram(0), 8192)
    m.barrier(hog, Barrier.WRITE)
    m.delay(victim, 30000)
    for _ in range(64):
        m.write(victim, 7, 8192)
    m.barrier(victim, Barrier.WRITE)
    m.run()
    return m.risc_result(victim).cycles - 30000


def test_reads_in_flight_limit_orders_the_variants():
    def spread_reads(variant: str) -> float:
        m = _model(variant)
        r = m.add_risc(0, Proc.NCRISC)
        for k in range(512):
            m.read(r, dram(k % 12), 64)
        m.barrier(r, Barrier.READ)
        m.run()
        return m.duration_cycles

    free, low, nominal, high = (
        spread_reads(v) for v in ("no_flow_control", "max_reads_in_flight_low", "nominal", "max_reads_in_flight_high")
    )
    assert free <= high <= nominal <= low
    # 64 B reads issue every ~20 cycles and take ~385: about 19 in flight keep the issue rate, so even the low end
    # of the range (20) costs little here: [dm-dram]'s issue-bound figure (5469 cycles for 256 x 32 B) holds.
    assert low <= 1.1 * free


def test_a_stalled_writer_blocks_traffic_sharing_its_links():
    # Without flow control the DRAM-bound writer books all its packets onto the row at its NIU's rate (unbounded
    # buffers) and the other writer gets what is left; with it, the full queue holds the DRAM-bound writer to the
    # channel's rate, and its stalled packets block the row for kHolShare (assumed, 0.25-1) of their stall
    # (head-of-line blocking, [hol] tt-metal #23294).
    free, low, nominal, high = (
        _writers_sharing_links(v) for v in ("no_flow_control", "hol_share_low", "nominal", "hol_share_high")
    )
    assert low < nominal < high < 0.5 * free
    alone = 64 * 8192 / 31.1  # the second writer's NIU rate
    assert high > 1.5 * alone


def test_inits_and_reconfigs_are_charged_on_their_lanes():
    def run(variant: str, lanes: int, reconfig: bool) -> tuple[float, float, float]:
        m = TimingModel(variant=variant)
        r = m.add_risc(0, Proc.COMPUTE)
        for _ in range(10):
            m.config(r, lanes, reconfig)
        m.run()
        return m.risc_result(r).lane_busy

    a = {x.name: x for x in assumed_constants()}
    assert run("nominal", 0b011, False) == (10 * a["kComputeInitCycles"].nominal,) * 2 + (0.0,)
    assert run("reconfig_high", 0b100, True) == (0.0, 0.0, 10 * a["kReconfigCycles"].high)
    assert run("compute_init_low", 0b010, False) == (0.0, 10 * a["kComputeInitCycles"].low, 0.0)


def test_docs_list_every_assumed_constant_with_the_codes_range():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "TIMING.md").read_text()
    rows = {
        m.group(1): tuple(float(m.group(i)) for i in (2, 3, 4))
        for m in re.finditer(
            r"^\| `(k\w+)` \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \| `\w+_low`, `\w+_high` \|", doc, re.M
        )
    }
    assert rows == {a.name: (a.nominal, a.low, a.high) for a in assumed_constants()}
