"""The timing model as the emulator runs it (docs/TIMING.md): real kernels on the emulated chip, their API calls
recorded per RISC and replayed after the run. Every duration here is MODELLED, not measured on silicon.

- a one-core DRAM read benchmark (tt-metal's DRAM packet-size test shape) through the real emulator path lands on the
  published silicon figures within the calibration table's tolerances (timing_calibration.FIGURES);
- the same program twice gives identical durations and trace digests (the replay ignores host thread scheduling);
- a program reports a duration and a per-core / per-RISC breakdown (:func:`check_breakdown`, which the FlashDecode
  op's and upstream sdpa_decode's timing tests use too: tests/test_decode_timing.py);
- a compute kernel running exact exp is modelled slower than the approximate one by the published per-tile ratio.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from ttemu import timing_calibration
from ttemu.tests.conformance.factories import eltwise_unary_program
from ttemu.timing import constants

from .emu_helpers import cb, crs, kernel

FIGURES = {f.key: f for f in timing_calibration.FIGURES}
K = SimpleNamespace(**{c.name: c.value for c in constants()})  # the model's constants, as compiled
CORE = (0, 0)  # the calibration's reader core; it reads DRAM bank 0 on NoC 0 (ReaderConfigDescriptor)


def _dram_read_cycles(dev, ttnn, src, nbytes: int, count: int):
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("timing_dram_read.cpp", crs(CORE), rt={CORE: [src.buffer_address(), nbytes, count]})],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 8192, 1, crs(CORE))],
    )
    stats = dev.generic_op([src], pd)
    assert stats.timing is not None and stats.timing.ok, stats.timing and stats.timing.error
    ncrisc = stats.timing.cores["0,0"]["NCRISC"]
    return (ncrisc.end - ncrisc.start) * K.kClockGHz, stats


@pytest.fixture(scope="module")
def dram_src(emu_device, ttnn):
    # 48 bf16 tiles: bank 0 holds pages 0, 12, 24, 36 back to back, so an 8 KB read from its start stays inside them.
    torch.manual_seed(5)
    t = emu_device.from_torch(torch.randn(32, 32 * 48), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    yield t
    t.deallocate()


@pytest.mark.parametrize(
    "key,nbytes,count,unit",
    [
        ("dram_read_latency_32B", 32, 1, "cycles"),
        ("dram_read_latency_2048B", 2048, 1, "cycles"),
        ("dram_read_issue_bound", 32, 256, "cycles"),
        ("dram_read_bw_one_core", 8192, 256, "B/cycle"),
    ],
)
def test_dram_read_through_the_emulator_matches_calibration(emu_device, ttnn, dram_src, key, nbytes, count, unit):
    fig = FIGURES[key]
    cycles, stats = _dram_read_cycles(emu_device, ttnn, dram_src, nbytes, count)
    got = count * nbytes / cycles if unit == "B/cycle" else cycles
    err = (got - fig.published) / fig.published
    assert abs(err) <= fig.tolerance, (
        f"{key}: modelled {got:.1f} {unit} vs published {fig.published} ({err:+.1%}, tolerance {fig.tolerance:.0%})"
    )
    # The emulator path and the standalone model agree (the hooks add nothing the benchmark does not do).
    assert got == pytest.approx(fig.modelled(), rel=0.02)
    assert stats.duration_ns >= cycles / K.kClockGHz
    assert stats.dram_bank_read_bytes[0] == count * nbytes


def test_same_program_twice_gives_identical_durations(emu_device, ttnn, dram_src):
    _, a = _dram_read_cycles(emu_device, ttnn, dram_src, 2048, 64)
    _, b = _dram_read_cycles(emu_device, ttnn, dram_src, 2048, 64)
    assert a.duration_ns == b.duration_ns
    assert a.timing.trace_digest == b.timing.trace_digest
    assert a.timing.cores == b.timing.cores


def check_breakdown(stats, what: str):
    t = stats.timing
    assert t is not None and t.ok, f"{what}: {t and t.error}"
    assert stats.duration_ns == t.duration_ns > 0
    assert t.duration_ns == pytest.approx(t.last_end_ns - t.first_start_ns)
    assert t.cores, f"{what}: no per-core timing"
    math_ns = 0.0
    for core, riscs in t.cores.items():
        for name, r in riscs.items():
            assert t.first_start_ns <= r.start <= r.end <= t.last_end_ns, f"{what} {core} {name}: {r}"
            assert r.busy >= 0 and r.wait >= 0
            if name == "TRISC":
                assert r.lanes is not None, f"{what} {core}: TRISC without its unpack / math / pack lanes"
                math_ns += r.lanes["math"]
    assert math_ns > 0, f"{what}: no core's compute did any math"  # (a launched core may have no work: upstream's)


def _exp_run(emu_device, ttnn, src, op: str):
    out = emu_device.allocate(list(src.shape), ttnn.bfloat16, ttnn.TILE_LAYOUT)
    stats = emu_device.generic_op([src, out], eltwise_unary_program(ttnn, (1, 1), src, out, op))
    out.deallocate()
    check_breakdown(stats, op)
    return stats


def test_exact_exp_is_modelled_slower_than_approximate_by_the_published_ratio(emu_device, ttnn):
    torch.manual_seed(17)
    src = emu_device.from_torch(torch.rand(1, 1, 128, 128) * 20 - 12, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    exact, approx = (_exp_run(emu_device, ttnn, src, op) for op in ("exp", "exp_approx"))
    src.deallocate()
    tiles = 16
    math_exact = exact.timing.cores["0,0"]["TRISC"].lanes["math"] * K.kClockGHz / tiles
    math_approx = approx.timing.cores["0,0"]["TRISC"].lanes["math"] * K.kClockGHz / tiles
    # Per tile: the SFPU function's published cycles plus the copy_tile that brings the tile into DST, plus the
    # kernel's *_init calls on the math lane (kComputeInitCycles each; the same calls in both runs).
    inits_exact = math_exact - (K.kExpAccurateTile + K.kCopyTile + 2 * K.kTileOpOverhead)
    inits_approx = math_approx - (K.kExpApproxTile + K.kCopyTile + 2 * K.kTileOpOverhead)
    assert inits_exact == pytest.approx(inits_approx, abs=0.5)
    n_inits = inits_exact * tiles / K.kComputeInitCycles
    assert n_inits == pytest.approx(round(n_inits), abs=0.05) and round(n_inits) >= 1, n_inits
    sfpu_exact, sfpu_approx = math_exact - inits_exact, math_approx - inits_approx
    published = K.kExpAccurateTile / K.kExpApproxTile  # [exp]: 748 / 189 cycles a tile on Wormhole
    assert sfpu_exact / sfpu_approx == pytest.approx(published, rel=0.1)
    assert exact.duration_ns > approx.duration_ns + 0.5 * tiles * (K.kExpAccurateTile - K.kExpApproxTile)
    assert not math.isnan(exact.duration_ns)
