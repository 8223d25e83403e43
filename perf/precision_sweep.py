"""Precision of the op against the golden model over random feature mixes, on the emulator.

    .venv/bin/python perf/precision_sweep.py [--seed 1] [--minutes 10]

Draws shapes (head_dim up to 2048, q_len up to 8, GQA/MQA/MHA), positions and features (paged, sliding window,
sinks, masks, output dtype and placement, bfloat16 or fp32 DST) at random, runs each on the emulator through the same harness
as the tests, and prints one row per case (PCC and max |error| against the golden on the same stored inputs, and
whether the test thresholds would pass), then the worst PCC per DST mode and head-dim range. Cases whose buffers
cannot fit L1 are counted, not run. This is an exploration, not a test: the thresholds of the test suite apply to
its own cases.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from decode_harness import DecodeCase, assert_matches_golden, run_case  # noqa: E402
from ttflashdecode import emulator  # noqa: E402
from ttflashdecode.plan import L1OverflowError  # noqa: E402
from ttflashdecode.ttnn_env import import_ttnn  # noqa: E402


def draw(rng: random.Random) -> DecodeCase:
    n_kv, g, q_len = rng.choice([1, 2]), rng.choice([1, 4, 8, 16]), rng.randint(1, 8)
    head_dim = rng.choice([64, 128, 320, 576, 1024, 2048])
    kv_len, batch = rng.choice([128, 256, 512]), rng.randint(1, 2)
    causal = rng.random() < 0.8
    fp32 = rng.random() < 0.3
    out_dtype = rng.choice(["bfloat16", "bfloat8_b"] + (["float32"] if fp32 else []))
    grid = rng.choice([(8, 8), (4, 2)])
    # L1 height-sharded output (one (token, user) block per core) for non-block-float outputs that fit the grid
    out_sharded = out_dtype != "bfloat8_b" and q_len * batch <= grid[0] * grid[1] and rng.random() < 0.3
    return DecodeCase(
        batch, n_kv * g, n_kv, head_dim, kv_len,
        tuple(rng.randint(q_len - 1, kv_len - 1) for _ in range(batch)) if causal else None,
        rng.choice(["bfloat16", "bfloat8_b"]),
        k_chunk_size=rng.choice([0, 32, 64, 128]),
        max_cores_per_head_batch=rng.choice([1, 2, 4, 16]),
        grid=grid,
        q_len=q_len,
        v_head_dim=rng.choice([None, 512]) if head_dim == 576 else None,
        sliding_window_size=rng.choice([None, 64, 200]) if causal else None,
        attention_sink=rng.random() < 0.3,
        block_size=rng.choice([None, 32, 64]) if causal else None,
        mask_heads=0 if causal else rng.choice([0, 1]),
        fp32_dest_acc_en=fp32,
        out_dtype=out_dtype,
        out_sharded=out_sharded,
        seed=rng.randrange(1 << 30),
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=10.0)
    args = parser.parse_args()
    ttnn = import_ttnn()
    rng = random.Random(args.seed)
    dev = emulator.open_device(board="n150")

    def to_device(x, dtype, **kw):
        return dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, **kw)

    rows, too_big = [], 0
    print(f"{'case':78} {'PCC':>8} {'max err':>8} {'thresholds':>10}")
    deadline = time.monotonic() + 60 * args.minutes
    try:
        while time.monotonic() < deadline:
            case = draw(rng)
            try:
                outcome = run_case(dev, case, to_device=to_device, to_torch=dev.to_torch)
            except L1OverflowError:
                too_big += 1
                continue
            except Exception:
                print(f"{str(case):78} raised (seed {case.seed}):", flush=True)
                raise
            try:
                assert_matches_golden(outcome, case)
                verdict = "pass"
            except AssertionError:
                verdict = "MISS"
            rows.append((case, outcome.pcc, outcome.max_abs_err, verdict))
            print(f"{str(case):78} {outcome.pcc:>8.5f} {outcome.max_abs_err:>8.4f} {verdict:>10}", flush=True)
    finally:
        dev.close()

    print(f"\n{len(rows)} cases run, {too_big} skipped (L1 overflow), "
          f"{sum(r[3] == 'MISS' for r in rows)} outside the test thresholds")  # fmt: skip
    print(f"{'DST':>5} {'head_dim':>10} {'cases':>6} {'worst PCC':>10} {'worst max err':>14}")
    for fp32 in (False, True):
        for low, high in ((0, 256), (257, 1024), (1025, 4096)):
            group = [r for r in rows if r[0].fp32_dest_acc_en == fp32 and low <= r[0].head_dim <= high]
            if group:
                print(f"{'fp32' if fp32 else 'bf16':>5} {f'{low}-{high}':>10} {len(group):>6} "
                      f"{min(r[1] for r in group):>10.5f} {max(r[2] for r in group):>14.4f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
