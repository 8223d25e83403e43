"""perf/sweep.py's CSV is an ops perf report tt-perf-report reads unchanged (issue 28 item 6).

The sweep's own writer (``csv_rows`` + ``write_csv``) writes a small CSV from stand-in records (no emulator run: the
durations are made up and labelled so in NOTE); tt-perf-report (PyPI ``tt-perf-report``, in the dev extra) must read
it without error, find every op, and report the durations the CSV holds. A CSV missing DEVICE ID (the sweep's old
form) is refused by the tool, which this test also pins, so the check is not vacuous.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "perf"))

import sweep  # noqa: E402

TOOL = shutil.which("tt-perf-report", path=str(Path(sys.executable).parent)) or shutil.which("tt-perf-report")
needs_tool = pytest.mark.skipif(TOOL is None, reason="tt-perf-report is not installed (pip install -e '.[dev]')")


def _stand_in_records() -> tuple[list, list[dict]]:
    """Three shapes (two on Wormhole, one on a P150) x two variants x every side, with made-up durations (a test
    double for a sweep's records)."""
    shapes = [sweep.SHAPE_BY_NAME[n] for n in ("llama8b-n150-4k", "mla-b8-4k", "llama8b-p150-4k")]
    records = []
    for i, s in enumerate(shapes):
        for variant in ("nominal", "no_flow_control"):
            for j, side in enumerate(sweep.SIDES):
                ns = 40_000.0 + 1_000 * i + 500 * j + (300 if variant != "nominal" else 0)
                records.append(
                    {
                        "shape": s.name,
                        "variant": variant,
                        "side": side,
                        "ns": ns,
                        "bytes": 10_000_000,
                        "plan": "k256 N8 8x8",
                        "cores": 64,
                        "config": "stand-in",
                        "note": "made-up duration",
                    }
                )
    return shapes, records


def _write(tmp_path: Path) -> tuple[Path, list[dict]]:
    shapes, records = _stand_in_records()
    rows = sweep.csv_rows(shapes, records)
    path = tmp_path / "sweep.csv"
    sweep.write_csv(path, rows)
    return path, rows


def test_sweep_csv_has_the_ops_report_columns(tmp_path):
    path, rows = _write(tmp_path)
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    assert header[: len(sweep.PERF_REPORT_COLUMNS)] == sweep.PERF_REPORT_COLUMNS
    assert {"DEVICE ID", "OP CODE", "DEVICE KERNEL DURATION [ns]", "SOURCE"} <= set(header)
    assert len(rows) == 3 * 2 * len(sweep.SIDES) and all(r["SOURCE"] == "modelled" for r in rows)
    # each line names its row's chip: the architecture and the worker cores its grid has
    chips = {(r["SHAPE"].split()[1], r["DEVICE ARCH"], r["AVAILABLE WORKER CORE COUNT"]) for r in rows}
    assert ("N150", "wormhole_b0", 64) in chips and ("P150", "blackhole", 110) in chips, chips


@needs_tool
def test_tt_perf_report_reads_the_sweep_csv_unchanged(tmp_path):
    path, rows = _write(tmp_path)
    out_csv = tmp_path / "report.csv"
    res = subprocess.run(
        [TOOL, str(path), "--no-color", "--no-advice", "--csv", str(out_csv)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, f"tt-perf-report failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    assert "missing" not in res.stdout.lower(), res.stdout[-3000:]
    with open(out_csv, newline="") as f:
        report = list(csv.DictReader(f))
    assert len(report) == len(rows), f"tt-perf-report listed {len(report)} ops, the CSV holds {len(rows)}"
    codes = {r.get("OP Code", r.get("OP Code Joined", "")) for r in report}
    assert any(sweep.OURS in c for c in codes) and any(sweep.UPSTREAM_OP in c for c in codes), codes
    # its device times are the CSV's durations (it reports microseconds)
    times = sorted(round(float(r["Device Time"]), 1) for r in report)
    expected = sorted(round(float(r["DEVICE KERNEL DURATION [ns]"]) / 1e3, 1) for r in rows)
    assert times == expected


@needs_tool
def test_tt_perf_report_refuses_a_csv_without_device_id(tmp_path):
    path, _ = _write(tmp_path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    bad = tmp_path / "no_device_id.csv"
    with open(bad, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[c for c in sweep.COLUMNS if c != "DEVICE ID"])
        w.writeheader()
        w.writerows({k: v for k, v in r.items() if k != "DEVICE ID"} for r in rows)
    res = subprocess.run([TOOL, str(bad), "--no-color"], capture_output=True, text=True, timeout=300)
    assert res.returncode != 0 and "DEVICE ID" in res.stdout + res.stderr
