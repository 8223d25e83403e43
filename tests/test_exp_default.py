"""The softmax's exp: the default is upstream's (approximate), False is exact, and the default is at least as precise
as upstream's default.

Upstream's sdpa_decode factory reads an unset ``SDPAProgramConfig.exp_approx_mode`` as the approximate exp (and its
16-row half tiles always take it); this package does the same (README "Precision"). These tests run the op on the
emulator with fresh seeded inputs: the default call and ``exp_approx_mode=True`` give the same bits; False gives a
different, more accurate output (its error against the golden below the approximate one on the same inputs); and
against the float64 golden the default is no less precise than upstream's own kernels (``ttflashdecode.upstream``) at
their default, on a half-tile shape (8 q heads) and a full-tile one (32 q heads). The realistic shapes are measured by
``perf/precision_sweep.py --exp``.
"""

from __future__ import annotations

import pytest
import torch

import ttflashdecode
from decode_harness import PCC_MIN, generator, seed_for, tag
from ttflashdecode import golden, upstream

# (batch, q heads, kv heads, head_dim, kv_len, cur_pos per user), bfloat8_b K/V
HALF_TILE = (8, 8, 1, 64, 512, (511, 300, 129, 64, 31, 0, 480, 255))  # upstream: 16x32 tiles, approximate exp always
FULL_TILE = (2, 32, 8, 128, 512, (511, 200))  # upstream: 32x32 tiles, exp_approx_mode decides


def _inputs(emu_device, ttnn, shape, seed):
    b, hq, hkv, d, s, pos = shape
    g = generator(seed)
    q, k, v = (
        torch.randn(1, b, hq, d, generator=g),
        torch.randn(b, hkv, s, d, generator=g),
        torch.randn(b, hkv, s, d, generator=g),
    )
    tq = emu_device.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    tk, tv = (emu_device.from_torch(x, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT) for x in (k, v))
    stored = [emu_device.to_torch(t).to(torch.float64) for t in (tq, tk, tv)]
    expected = golden.sdpa_decode(*stored, cur_pos=list(pos), dtype=torch.float64)
    return (tq, tk, tv), list(pos), expected


def _config(ttnn, **extra):
    return ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), q_chunk_size=0, k_chunk_size=0, **extra
    )


def _rms(got, expected) -> float:
    return float(((got - expected) ** 2).mean().sqrt())


def _run(emu_device, module, tensors, pos, **kw):
    """(output as float64, the call's result: its plan and statistics)."""
    out, run = module.scaled_dot_product_attention_decode(*tensors, cur_pos=pos, return_stats=True, **kw)
    got = emu_device.to_torch(out).to(torch.float64)
    out.deallocate()
    return got, run


def test_default_is_approximate_and_false_is_exact(emu_device, ttnn):
    seed = seed_for("test_default_is_approximate_and_false_is_exact")
    tensors, pos, expected = _inputs(emu_device, ttnn, HALF_TILE, seed)
    _, run = _run(emu_device, ttflashdecode, tensors, pos)  # no program_config: the op's default
    assert run.plan.config.exp_approx_mode is True, f"{tag(seed)} the op's default is exact"
    unset, _ = _run(emu_device, ttflashdecode, tensors, pos, program_config=_config(ttnn))
    approx, _ = _run(emu_device, ttflashdecode, tensors, pos, program_config=_config(ttnn, exp_approx_mode=True))
    exact, run = _run(emu_device, ttflashdecode, tensors, pos, program_config=_config(ttnn, exp_approx_mode=False))
    assert run.plan.config.exp_approx_mode is False, tag(seed)
    assert torch.equal(unset, approx), f"{tag(seed)} exp_approx_mode unset must run the approximate exp (as True)"
    assert not torch.equal(exact, approx), f"{tag(seed)} exp_approx_mode=False gave the approximate exp's output"
    results = {
        name: (golden.pcc(x, expected), golden.max_abs_error(x, expected), _rms(x, expected))
        for name, x in (("approx", approx), ("exact", exact))
    }
    assert min(r[0] for r in results.values()) >= PCC_MIN["bfloat8_b"], f"{tag(seed)} (PCC, max, RMS): {results}"
    # The exact exp's error is the storage and bfloat16 arithmetic alone. Measured on this shape over 5 seeds: RMS
    # error 0.0013-0.0016 exact vs 0.0031-0.0038 approximate (ratio 0.35-0.42); max |error| smaller every time.
    (_, exact_max, exact_rms), (_, approx_max, approx_rms) = results["exact"], results["approx"]
    assert exact_rms < 0.6 * approx_rms and exact_max < approx_max, (
        f"{tag(seed)} exact vs approximate exp: RMS error {exact_rms:.5f} vs {approx_rms:.5f}, max |error| "
        f"{exact_max:.5f} vs {approx_max:.5f}: exp_approx_mode=False is not the accurate exp"
    )


# PCC ignores a uniform scale, the RMS and max errors do not. On these two short-cache shapes ours's default had the
# lower RMS error on every seed measured (9: 0.0031-0.0038 vs 0.0042-0.0052 half-tile, 0.0023-0.0027 vs 0.0025-0.0029
# full-tile); its max |error| and 1 - PCC, single-sample figures, landed either side of upstream's (0.56-1.03x and
# 0.97-1.12x). On longer caches the RMS errors are within a few % either way (README "Precision"). So: RMS error at
# least as good here, the other two within GAP of upstream's; a kernel that drops a chunk or a rescale moves them by
# orders of magnitude.
GAP = 1.25


@pytest.mark.parametrize("shape", [HALF_TILE, FULL_TILE], ids=["b8-8q1kv-d64-half-tile", "b2-32q8kv-d128-full-tile"])
def test_default_at_least_as_precise_as_upstreams_default(emu_device, ttnn, shape):
    seed = seed_for(f"test_default_at_least_as_precise_as_upstreams_default-{shape}")
    tensors, pos, expected = _inputs(emu_device, ttnn, shape, seed)
    # Both ops at their defaults: exp_approx_mode unset, no compute_kernel_config (ours HiFi4, upstream's HiFi2).
    ours, _ = _run(emu_device, ttflashdecode, tensors, pos, program_config=_config(ttnn))
    theirs, _ = _run(emu_device, upstream, tensors, pos, program_config=_config(ttnn))
    assert not torch.isnan(ours).any(), f"{tag(seed)} NaN in our output"
    pcc = golden.pcc(ours, expected), golden.pcc(theirs, expected)
    err = golden.max_abs_error(ours, expected), golden.max_abs_error(theirs, expected)
    rms = _rms(ours, expected), _rms(theirs, expected)
    what = (
        f"{tag(seed)} ours (default) vs upstream (default) against the float64 golden: RMS error {rms[0]:.5f} vs "
        f"{rms[1]:.5f}, max |error| {err[0]:.5f} vs {err[1]:.5f}, PCC {pcc[0]:.6f} vs {pcc[1]:.6f}"
    )
    assert rms[0] <= rms[1], what
    assert err[0] <= GAP * err[1] and 1 - pcc[0] <= GAP * (1 - pcc[1]), what
