"""Upstream's sdpa_decode (the wheel's kernels, ``ttflashdecode.upstream``) on the emulator's timing model against
its published silicon figures (upstream.calibration.OP_POINTS, docs/TIMING.md section 4). Every value is MODELLED.

The figures run on a timing-only device (durations equal a full run's: test_timing_only.py). The tech report's
peak-bandwidth point needs batch 32 x 128K-token caches (minutes): it runs only with TTFD_SLOW_CALIBRATION=1
(``perf/calibrate_timing.py`` prints it with the rest).
"""

from __future__ import annotations

import os

import pytest

import ttemu
from ttflashdecode.upstream import calibration as tc

POINTS = {p.key: p for p in tc.OP_POINTS}


@pytest.fixture(scope="module")
def timing_only_device():
    dev = ttemu.open_device("n150", timing_only=True)
    dev.default_deadline_s = 3600.0  # the peak point's batch-32 x 128K calls take minutes on a loaded machine
    yield dev
    dev.close()


def _check(key: str, modelled: float):
    p = POINTS[key]
    err = p.error(modelled)
    assert abs(err) <= p.tolerance, (
        f"{key}: modelled {modelled:.4g} {p.unit} vs published {p.published_text()} "
        f"({err:+.1%}, tolerance {p.tolerance:.0%}; {p.source})"
    )


def test_upstream_at_the_published_llama70b_galaxy_point(timing_only_device):
    _check("sdpa_llama70b_galaxy", tc.llama70b_galaxy_us(timing_only_device))


def test_upstream_16_cores_per_head_beat_64_at_the_t3k_llama8b_shape(timing_only_device):
    _check("sdpa_t3k_16_beats_64", tc.t3k_64_over_16(timing_only_device, tc.T3K_CONTEXTS[0]))


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("TTFD_SLOW_CALIBRATION") != "1",
    reason="batch 32 x 128K caches take minutes: TTFD_SLOW_CALIBRATION=1 runs it",
)
def test_upstream_peak_bandwidth_against_the_tech_report(timing_only_device):
    _check("sdpa_report_peak_gbs", tc.report_peak_gbs(timing_only_device))
