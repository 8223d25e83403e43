"""``./run demo`` (python -m ttflashdecode.demo): says what it does at each step, prints the modelled duration and
bandwidth next to the DRAM roofline, and passes against the golden model. A small batch and cache keep it short."""

from __future__ import annotations

import re

from ttflashdecode import demo


def test_demo_reports_steps_modelled_timing_and_roofline(capsys):
    assert demo.main(["--batch", "1", "--max-pos", "512", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    steps = [line for line in out.splitlines() if line.startswith("-- ")]
    assert len(steps) >= 4 and out.count("   done in ") == len(steps), out
    duration = re.search(r"duration ([0-9.]+) us \(modelled\); DRAM traffic ([0-9]+) GB/s \(modelled\)", out)
    assert duration, out
    roofline = re.search(
        r"roofline for the ([0-9,]+) bytes .*: ([0-9.]+) us at 267 GB/s \(best measured\), "
        r"([0-9.]+) us at 288 GB/s \(spec\)",
        out,
    )
    assert roofline, out
    # No implementation beats the roofline of the bytes it must move; the 288 GB/s one is the lower.
    us, best, spec = float(duration[1]), float(roofline[2]), float(roofline[3])
    assert spec < best <= us, out
    pcc = re.search(r"PCC ([0-9.]+)", out)
    assert pcc and float(pcc[1]) >= 0.999 and "PASS" in out, out
