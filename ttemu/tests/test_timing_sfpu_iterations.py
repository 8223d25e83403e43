"""An SFPU call is charged the rows it really runs (docs/TIMING.md; every duration MODELLED).

tt-llk's _llk_math_eltwise_sfpu_apply_vector_mode_ (tt_llk_wormhole_b0/llk_lib/llk_math_eltwise_sfpu_common.h) calls
the SFPU function once per face for RC (4 calls), R and C (2), and once for VectorMode::None; each call runs the
function's ITERATIONS 32-lane row steps, 8 a 16x16 face. Upstream's sdpa covers a whole 32x32 tile with
exp_tile<true, false, InputClamping::None, 32>(j, VectorMode::None) (sdpa compute_common.hpp,
sub_exp_block_bcast_cols_inplace). So None x 32 iterations costs (and writes) what RC x 8 does, None x 8 a quarter of
it (face 0 only), R x 8 half. The same charge in timing-only mode (no arithmetic).

Runs upstream's eltwise_sfpu.cpp (UnaryProgramFactory, ttemu/tests/conformance/factories.py) with the exp call as its
SFPU_OP_CHAIN define.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
import torch

import ttemu
from ttemu.tests.conformance import factories
from ttemu.timing import constants

K = SimpleNamespace(**{c.name: c.value for c in constants()})
TILES = 4
EXP = "exp_tile<true, false, InputClamping::ClampToNegative, {iters}>(0, VectorMode::{mode});"
CALLS = {  # name: (VectorMode, ITERATIONS, faces of the tile the call covers)
    "rc8": ("RC", 8, (0, 1, 2, 3)),
    "none32": ("None", 32, (0, 1, 2, 3)),
    "none8": ("None", 8, (0,)),
    "r8": ("R", 8, (0, 1)),
}


@pytest.fixture(scope="module")
def timing_only_device():
    dev = ttemu.open_device("n150", timing_only=True)
    yield dev
    dev.close()


def _run(dev, ttnn, src, name: str, monkeypatch, read: bool):
    mode, iters, _ = CALLS[name]
    chain = ("SFPU_OP_EXP_INCLUDE", "exp_tile_init<1u>();", EXP.format(iters=iters, mode=mode))
    monkeypatch.setitem(factories.UNARY_CHAINS, name, chain)
    out = dev.allocate(list(src.shape), ttnn.bfloat16, ttnn.TILE_LAYOUT)
    stats = dev.generic_op([src, out], factories.eltwise_unary_program(ttnn, (1, 1), src, out, name))
    assert stats.timing is not None and stats.timing.ok, stats.timing and stats.timing.error
    result = dev.to_torch(out) if read else None
    out.deallocate()
    return stats, result


def _sfpu_cycles_per_tile(stats) -> float:
    """The math lane per tile less the copy_tile that brings it into DST and the two ops' fixed overheads."""
    math = stats.timing.cores["0,0"]["TRISC"].lanes["math"] * K.kClockGHz / TILES
    return math - K.kCopyTile - 2 * K.kTileOpOverhead


def _faces(t: torch.Tensor) -> list[torch.Tensor]:
    """The four 16x16 faces of every 32x32 tile of a 2D tensor, face f as [tiles, 16, 16]."""
    h, w = t.shape
    tiles = t.reshape(h // 32, 32, w // 32, 32).permute(0, 2, 1, 3).reshape(-1, 32, 32)
    return [tiles[:, (f // 2) * 16 : (f // 2) * 16 + 16, (f % 2) * 16 : (f % 2) * 16 + 16] for f in range(4)]


def test_exp_cost_and_coverage_follow_the_iterations(emu_device, timing_only_device, ttnn, monkeypatch):
    seed = int(os.environ.get("TTFD_SEED", 0)) or 4242
    torch.manual_seed(seed)
    x = torch.rand(64, 64) * 8 - 6
    src = emu_device.from_torch(x.reshape(1, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    src_fast = timing_only_device.from_torch(x.reshape(1, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    xin = x.to(torch.bfloat16).float()
    ref = torch.exp(xin)
    cycles, outs = {}, {}
    for name, (_, _, faces) in CALLS.items():
        what = f"{name} [seed {seed}]"
        full, out = _run(emu_device, ttnn, src, name, monkeypatch, read=True)
        # The same program with no arithmetic: the same charge.
        fast_stats, _ = _run(timing_only_device, ttnn, src_fast, name, monkeypatch, read=False)
        assert fast_stats.duration_ns == full.duration_ns, what
        assert fast_stats.timing.cores == full.timing.cores, what
        cycles[name] = _sfpu_cycles_per_tile(full)
        got = out.reshape(64, 64).float()
        outs[name] = got
        # Faces the call covers hold exp(x) (the approximation's few-percent error); the others keep x untouched.
        for f, (g, r, xi) in enumerate(zip(_faces(got), _faces(ref), _faces(xin))):
            if f in faces:
                assert torch.allclose(g, r, rtol=0.08, atol=1e-3), f"{what}: face {f} not exp'd"
            else:
                assert torch.equal(g, xi), f"{what}: face {f} written outside VectorMode::{CALLS[name][0]}"
    # The kernel's *_init calls also cost the math lane (kComputeInitCycles each, the same calls for every name):
    # count them from the rc8 program under compute_init_high, and leave them out of the per-tile SFPU cycles.
    from ttemu.timing import assumed_constants, variant_env

    init = {a.name: a for a in assumed_constants()}["kComputeInitCycles"]
    with variant_env("compute_init_high"):
        high, _ = _run(timing_only_device, ttnn, src_fast, "rc8", monkeypatch, read=False)
    n_inits = (_sfpu_cycles_per_tile(high) - cycles["rc8"]) * TILES / (init.high - init.nominal)
    assert n_inits == pytest.approx(round(n_inits), abs=0.01) and round(n_inits) >= 1, n_inits
    cycles = {k: c - round(n_inits) * init.nominal / TILES for k, c in cycles.items()}
    src.deallocate()
    src_fast.deallocate()
    # None x 32 iterations is RC x 8 row for row: the same values and the same charge, a whole tile.
    assert torch.equal(outs["none32"], outs["rc8"]), f"seed {seed}"
    assert cycles["rc8"] == pytest.approx(K.kExpApproxTile, rel=0.02)
    assert cycles["none32"] == pytest.approx(cycles["rc8"], rel=1e-6)
    assert cycles["none8"] == pytest.approx(cycles["rc8"] / 4, rel=1e-6)
    assert cycles["r8"] == pytest.approx(cycles["rc8"] / 2, rel=1e-6)
