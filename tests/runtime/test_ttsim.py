"""Tenstorrent's simulator (ttsim) through the real ttnn runtime: ready for the day its compiler is installed.

``./run sim-setup`` builds libttsim from the vendored source (ttflashdecode.sim_env). Then:

- test_ttnn_opens_the_simulated_n150: ttnn loads the simulator and opens the simulated chip; without Tenstorrent's
  RISC-V compiler (sfpi) it stops exactly at its JIT build ("sfpi not found"), which is as far as a machine without
  network access gets.
- test_golden_on_ttsim (``pytest --backend ttsim``): the op's golden cases run on the simulated chip and are checked
  against the golden model with the suite's thresholds. Skipped, saying why, unless the backend is ttsim, the
  simulator is built and sfpi is installed where ttnn looks for it.

Each runs in a child process (ttsim_worker.py): ttnn reads its environment once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ttemu import ttnn_env
from ttflashdecode import sim_env

WORKER = Path(__file__).resolve().parent / "ttsim_worker.py"

# The op's golden cases on ttsim (decode_harness.DecodeCase fields; the grid is the simulated chip's).
BASE = dict(batch=2, n_q_heads=8, n_kv_heads=2, head_dim=64, kv_len=256, cur_pos=[100, 200], k_chunk_size=64)
GOLDEN_CASES = {
    "causal_bfloat16": {},
    "causal_bfloat8_b": {"kv_dtype": "bfloat8_b"},
    "skipped_user": {"cur_pos": [-1, 255]},
    "paged": {"block_size": 64, "kv_dtype": "bfloat8_b"},
    "q_len_2": {"q_len": 2},
    "mask_per_head": {"cur_pos": None, "mask_heads": 8},
    "sinks": {"attention_sink": True},
    "window": {"sliding_window_size": 64},
    "out_sharded": {"out_sharded": True},
    "out_bfloat8_b": {"out_dtype": "bfloat8_b"},
    "fp32_dest_acc_exact_exp": {"fp32_dest_acc_en": True, "exp_approx_mode": False},
}
SIM_TIMEOUT_S = 3600  # ttsim is functional, not fast: a decode program takes minutes, not milliseconds


def _not_built() -> str | None:
    if ttnn_env.has_tenstorrent_card():
        return "a Tenstorrent card is present: ttnn drives the card, not the simulator"
    if sim_env.simulator_path("n150") is None:
        return f"ttsim is not built in {sim_env.simulator_dir('n150')}: run ./run sim-setup"
    return None


def _run(mode: str, tmp_path: Path, names=(), env_extra=None, timeout=600) -> tuple[dict, str]:
    out = tmp_path / f"{mode}.json"
    env = {k: v for k, v in os.environ.items() if k != ttnn_env.MOCK_ENV_VAR}
    env.update({"TT_LOGGER_LEVEL": "info", **(env_extra or {})})
    r = subprocess.run(
        [sys.executable, str(WORKER), mode, "--out", str(out), *names],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert r.returncode == 0 and out.is_file(), f"ttsim worker failed ({r.returncode}):\n{r.stderr[-5000:]}"
    return json.loads(out.read_text()), r.stdout + r.stderr


def test_ttnn_opens_the_simulated_n150(tmp_path):
    reason = _not_built()
    if reason:
        pytest.skip(reason)
    result, log = _run("open", tmp_path)
    assert result["simulator"] == str(sim_env.simulator_path("n150"))
    # UMD created the simulated chip (ttsim's TTSimTTDevice), not a mock or a card
    assert "Creating Simulation device" in log and "TTSimTTDevice" in log, log[-3000:]
    if sim_env.sfpi_compiler() is None:
        assert result["status"] == "stopped", "opened without sfpi: ttnn must JIT-build firmware with it"
        assert "sfpi not found" in result["error"], result["error"]
    else:
        assert result["status"] == "opened", result.get("error")


@pytest.fixture(scope="module")
def ttsim_golden(request, tmp_path_factory):
    backend = request.config.getoption("--backend")
    if backend != "ttsim":
        pytest.skip("the golden cases run on ttsim with `pytest --backend ttsim` (the default backend is the emulator)")
    reason = _not_built()
    if reason:
        pytest.skip(reason)
    if sim_env.sfpi_compiler() is None:
        pytest.skip(
            "Tenstorrent's RISC-V compiler (sfpi 7.89.0) is not installed (<ttnn>/runtime/sfpi or "
            "/opt/tenstorrent/sfpi): ttnn cannot JIT-build firmware or kernels for ttsim; it ships as a GitHub "
            "release binary (ttnn's download_sfpi.py fetches it)"
        )
    specs = {n: {**BASE, **kw} for n, kw in GOLDEN_CASES.items()}
    result, log = _run(
        "golden",
        tmp_path_factory.mktemp("ttsim"),
        list(GOLDEN_CASES),
        {"TTFD_TTSIM_CASES": json.dumps(specs)},
        timeout=SIM_TIMEOUT_S,
    )
    assert result["status"] == "opened", result.get("error")
    return result["cases"]


@pytest.mark.parametrize("name", list(GOLDEN_CASES))
def test_golden_on_ttsim(ttsim_golden, name):
    r = ttsim_golden[name]
    assert r["passed"], r.get("error")
