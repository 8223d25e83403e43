"""Child process of test_ttsim.py: ttnn on Tenstorrent's simulator (ttsim), through the real runtime.

``python ttsim_worker.py open --out r.json``: opens the simulated N150 (ttflashdecode.sim_env.configure, then
``ttnn.open_device``) and records how far it got: "opened", or the error that stopped it (without Tenstorrent's
RISC-V compiler, sfpi, ttnn stops at its JIT build).

``python ttsim_worker.py golden --out r.json NAME...``: runs the named golden cases (test_ttsim.GOLDEN_CASES, passed
as JSON in ``$TTFD_TTSIM_CASES``) through the op on the simulated chip and checks each against the golden model with
the suite's thresholds (decode_harness.assert_matches_golden).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]  # tests/ (decode_harness)

from ttflashdecode import sim_env  # noqa: E402

CASES_ENV = "TTFD_TTSIM_CASES"


def _open(ttnn):
    return ttnn.open_device(device_id=0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["open", "golden"])
    p.add_argument("--out", required=True)
    p.add_argument("names", nargs="*")
    args = p.parse_args(argv)
    sim_env.configure("n150")
    from ttemu.ttnn_env import import_ttnn

    ttnn = import_ttnn()
    result: dict = {"simulator": os.environ.get(sim_env.SIMULATOR_ENV)}
    try:
        dev = _open(ttnn)
    except Exception as e:  # noqa: BLE001 - the test judges where it stopped
        result.update(status="stopped", error=str(e).split("\nbacktrace:")[0].strip())
        Path(args.out).write_text(json.dumps(result))
        return 0
    result["status"] = "opened"
    if args.mode == "golden":
        import decode_harness as H  # noqa: PLC0415

        specs = json.loads(os.environ[CASES_ENV])
        grid = dev.compute_with_storage_grid_size()

        def to_device(x, dtype, **mem):
            host = ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
            return ttnn.to_device(host, dev, memory_config=mem.get("memory_config", ttnn.DRAM_MEMORY_CONFIG))

        cases = {}
        for name in args.names:
            spec = dict(specs[name])
            spec["cur_pos"] = None if spec.get("cur_pos") is None else tuple(spec["cur_pos"])
            case = H.DecodeCase(grid=(grid.x, grid.y), **spec)
            try:
                outcome = H.run_case(dev, case, to_device=to_device, to_torch=lambda t: ttnn.to_torch(t).float())
                H.assert_matches_golden(outcome, case)
                cases[name] = {"passed": True, "pcc": outcome.pcc, "max_abs_err": outcome.max_abs_err}
            except Exception as e:  # noqa: BLE001
                cases[name] = {"passed": False, "error": "".join(traceback.format_exception(e))[-3000:]}
        result["cases"] = cases
    ttnn.close_device(dev)
    Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
