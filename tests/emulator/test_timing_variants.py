"""The timing model's variants (docs/TIMING.md, section 3b): every constant with no public figure (kind "A") is
varied over a stated range, one at a time, and flow control can be switched off; ``TTFD_TIMING_VARIANT`` selects a
variant for the emulator and for ``TimingModel``. All durations here are MODELLED."""

from __future__ import annotations

import pytest
import torch

from ttflashdecode.emulator import timing
from ttflashdecode.emulator.timing import (
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
