"""Precision of the op against the golden model over random feature mixes, on the emulator.

    .venv/bin/python perf/precision_sweep.py [--seed 1] [--minutes 10]
    .venv/bin/python perf/precision_sweep.py --exp [--seed 1] [--rows NAME,...]

``--exp`` measures the softmax's exp instead (README "Precision"): on realistic decode shapes (Llama-3.1-8B on N150 at
several positions, the tech report's b8 8q/1kv d64/d128, a T3K chip's 4q/1kv, a paged bfloat8_b cache, a causal
-inf mask passed by the caller, garbage past cur_pos) it runs ours with exp_approx_mode unset (our default: the
approximate exp) and False (exact), and upstream's sdpa_decode kernels (``ttflashdecode.upstream``) unset (its default:
approximate exp, HiFi2) and False, each with its own default compute config, on the same device tensors, plus upstream
unset with ours's compute config (HiFi4) to separate the exp from the fidelity. It prints PCC and max |error| of
each against a float64 reference on the values the device stores (:func:`ttflashdecode.golden.sdpa_decode`).

Draws shapes (head_dim up to 2048, q_len up to 8, GQA/MQA/MHA), positions and features (paged, sliding window,
sinks, masks, output dtype and placement, bfloat16 or fp32 DST) at random, runs each on the emulator through the same
harness as the tests, and prints one row per case (PCC and max |error| against the golden on the same stored inputs, and
whether the test thresholds would pass), then the worst PCC per DST mode and head-dim range. Cases whose buffers
cannot fit L1 are counted, not run. This is an exploration, not a test: the thresholds of the test suite apply to
its own cases.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from dataclasses import dataclass

import harness
import torch

sys.path.insert(0, str(harness.REPO / "tests"))  # the tests' decode cases and thresholds

import ttflashdecode  # noqa: E402
from decode_harness import DecodeCase, assert_matches_golden, run_case  # noqa: E402
from ttflashdecode import golden, upstream  # noqa: E402
from ttflashdecode.plan import L1OverflowError  # noqa: E402


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
        batch,
        n_kv * g,
        n_kv,
        head_dim,
        kv_len,
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
    )


# ---- --exp: our default exp against upstream's --------------------------------------------------------------------


@dataclass(frozen=True)
class ExpRow:
    """One realistic decode call. ``positions`` is every user's cur_pos (None: all at kv_len - 1). ``mask``: the call
    is non-causal with a caller's additive mask, 0 up to each user's position and -inf past it (as model code builds
    a causal mask). ``garbage``: K/V rows past each user's position hold this magnitude times randn (a stale cache)."""

    name: str
    batch: int
    q_heads: int
    kv_heads: int
    head_dim: int
    kv_len: int
    positions: tuple[int, ...] | None = None
    kv_dtype: str = "bfloat8_b"
    block_size: int = 0
    mask: bool = False
    garbage: float = 0.0
    max_cores: int = 16


EXP_ROWS = [
    ExpRow("llama8b-n150-p127", 1, 32, 8, 128, 4096, (127,)),
    ExpRow("llama8b-n150-p1023", 1, 32, 8, 128, 4096, (1023,)),
    ExpRow("llama8b-n150-p4095", 1, 32, 8, 128, 4096, (4095,)),
    ExpRow("b8-8q1kv-d64", 8, 8, 1, 64, 2048),
    ExpRow("b8-8q1kv-d128", 8, 8, 1, 128, 2048),
    ExpRow("t3k-4q1kv-d128-c16", 1, 4, 1, 128, 8192),
    ExpRow("t3k-4q1kv-d128-c64", 1, 4, 1, 128, 8192, max_cores=64),
    ExpRow("paged-b8-8q1kv-d128-p127", 8, 8, 1, 128, 256, (127,) * 8, block_size=32),
    ExpRow("paged-b4-32q8kv-d128", 4, 32, 8, 128, 1024, (1000, 517, 64, 1023), block_size=64),
    ExpRow("mask-inf-b8-8q1kv-d128", 8, 8, 1, 128, 1024, (1023, 700, 511, 300, 129, 64, 31, 0), mask=True),
    ExpRow("garbage-b8-8q1kv-d128", 8, 8, 1, 128, 1024, (1000, 700, 511, 300, 129, 64, 31, 0), garbage=8.0),
    ExpRow("garbage1e4-b4-32q8kv-d128", 4, 32, 8, 128, 1024, (900, 333, 96, 5), garbage=1e4),
]


def exp_row_inputs(row: ExpRow, g: torch.Generator) -> dict:
    b, hq, hkv, d, s = row.batch, row.q_heads, row.kv_heads, row.head_dim, row.kv_len
    positions = list(row.positions) if row.positions else [s - 1] * b
    t = {"q": torch.randn(1, b, hq, d, generator=g), "positions": positions}
    k = torch.randn(b, hkv, s, d, generator=g)
    v = torch.randn(b, hkv, s, d, generator=g)
    if row.garbage:
        for u, p in enumerate(positions):
            k[u, :, p + 1 :] = row.garbage * torch.randn(hkv, s - p - 1, d, generator=g)
            v[u, :, p + 1 :] = row.garbage * torch.randn(hkv, s - p - 1, d, generator=g)
    if row.block_size:
        per_user = s // row.block_size
        table = torch.randperm(b * per_user, generator=g).reshape(b, per_user).to(torch.int32)
        # block table[u, j] holds user u's positions j*block_size .. (paged layout [num_blocks, hkv, block, d])
        kb = torch.empty(b * per_user, hkv, row.block_size, d)
        vb = torch.empty_like(kb)
        for u in range(b):
            for j in range(per_user):
                kb[table[u, j]] = k[u, :, j * row.block_size : (j + 1) * row.block_size]
                vb[table[u, j]] = v[u, :, j * row.block_size : (j + 1) * row.block_size]
        k, v, t["page_table"] = kb, vb, table
    t["k"], t["v"] = k, v
    if row.mask:
        mask = torch.zeros(b, 1, hq, s)
        for u, p in enumerate(positions):
            mask[u, :, :, p + 1 :] = float("-inf")
        t["attn_mask"] = mask
    return t


def _errors(got: torch.Tensor, expected: torch.Tensor) -> tuple[float, float, float]:
    """(PCC, max |error|, RMS error) against the reference. PCC ignores a uniform scale or offset; the RMS and max
    errors do not, so all three are reported."""
    return golden.pcc(got, expected), golden.max_abs_error(got, expected), float(((got - expected) ** 2).mean().sqrt())


def run_exp_row(dev, ttnn, row: ExpRow, seed: int) -> dict[str, tuple[float, float, float]]:
    """{variant: (PCC, max |error|, RMS error)} of every variant against the float64 reference for ``row``."""
    t = exp_row_inputs(row, torch.Generator().manual_seed(seed))
    tq = harness.tile(dev, t["q"])
    tk, tv = (harness.tile(dev, t[n], row.kv_dtype) for n in ("k", "v"))
    kw = {}
    if row.mask:
        kw["is_causal"] = False
        kw["attn_mask"] = harness.tile(dev, t["attn_mask"])
    else:
        kw["cur_pos"] = t["positions"]
    # Golden on the values the device stores (bf16 Q and mask, quantised K/V), float64 throughout.
    stored = {n: dev.to_torch(x).to(torch.float64) for n, x in (("q", tq), ("k", tk), ("v", tv))}
    expected = golden.sdpa_decode(
        stored["q"],
        stored["k"],
        stored["v"],
        is_causal=not row.mask,
        cur_pos=None if row.mask else t["positions"],
        attn_mask=dev.to_torch(kw["attn_mask"]).to(torch.float64).transpose(1, 2) if row.mask else None,
        page_table=t.get("page_table"),
        dtype=torch.float64,
    )

    def config(exp):
        extra = {} if exp is None else {"exp_approx_mode": exp}
        return ttnn.SDPAProgramConfig(
            compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
            q_chunk_size=0,
            k_chunk_size=0,
            max_cores_per_head_batch=row.max_cores,
            **extra,
        )

    hifi4 = ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=False, fp32_dest_acc_en=False
    )  # ours's default compute settings
    results = {}
    for name, (module, exp, compute) in {
        "ours default": (ttflashdecode, None, None),
        "ours exact": (ttflashdecode, False, None),
        "upstream default": (upstream, None, None),
        "upstream exact": (upstream, False, None),
        "upstream dflt HiFi4": (upstream, None, hifi4),
    }.items():
        call_kw = dict(kw, program_config=config(exp), compute_kernel_config=compute)
        if row.block_size:
            out = module.paged_scaled_dot_product_attention_decode(tq, tk, tv, t["page_table"], **call_kw)
        else:
            out = module.scaled_dot_product_attention_decode(tq, tk, tv, **call_kw)
        got = dev.to_torch(out).to(torch.float64)[..., : row.q_heads, : row.head_dim]
        out.deallocate()
        results[name] = _errors(got, expected)
    return results


EXP_VARIANTS = ("ours default", "ours exact", "upstream default", "upstream exact", "upstream dflt HiFi4")


def exp_main(args) -> int:
    ttnn = harness.ttnn()
    by_name = {r.name: r for r in EXP_ROWS}
    rows = [by_name[n] for n in args.rows.split(",")] if args.rows else EXP_ROWS  # in the order asked
    dev = harness.open_device()
    print(
        "Against float64 on the stored inputs (emulator, full math): PCC / max |error| / RMS error. ours default ="
        " exp_approx_mode unset (approximate exp, HiFi4); upstream default = unset (approximate exp, HiFi2)."
    )
    print(
        "The last column: ours default vs upstream default, '+' where ours is at least as good, '-' where not, for"
        " PCC, max |error|, RMS error."
    )
    print(f"{'row':27}" + "".join(f"{n:>29}" for n in EXP_VARIANTS) + f"{'vs up':>7}")
    worse = []
    try:
        for row in rows:
            res = run_exp_row(dev, ttnn, row, args.seed * 1000 + zlib.crc32(row.name.encode()) % 1000)
            ours, up = res["ours default"], res["upstream default"]
            better = (ours[0] >= up[0], ours[1] <= up[1], ours[2] <= up[2])
            if not all(better):
                worse.append((row.name, ours, up))
            print(
                f"{row.name:27}"
                + "".join(f"{res[n][0]:>11.6f} {res[n][1]:>7.4f} {res[n][2]:>8.5f}" for n in EXP_VARIANTS)
                + f"{''.join('+' if b else '-' for b in better):>7}",
                flush=True,
            )
    finally:
        dev.close()
    for name, ours, up in worse:
        print(
            f"ours default below upstream default on {name}: PCC {ours[0]:.6f} vs {up[0]:.6f} "
            f"(1 - PCC {1 - ours[0]:.2e} vs {1 - up[0]:.2e}), max |error| {ours[1]:.5f} vs {up[1]:.5f}, "
            f"RMS {ours[2]:.5f} vs {up[2]:.5f}"
        )
    print(f"{len(rows) - len(worse)} of {len(rows)} rows: ours default at least upstream default on all three")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--exp", action="store_true", help="our default exp against upstream's (realistic shapes)")
    parser.add_argument("--rows", default="", help="with --exp: only these rows (comma-separated names)")
    args = parser.parse_args()
    if args.exp:
        return exp_main(args)
    ttnn = harness.ttnn()
    rng = random.Random(args.seed)
    dev = harness.open_device()

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

    print(
        f"\n{len(rows)} cases run, {too_big} skipped (L1 overflow), "
        f"{sum(r[3] == 'MISS' for r in rows)} outside the test thresholds"
    )
    print(f"{'DST':>5} {'head_dim':>10} {'cases':>6} {'worst PCC':>10} {'worst max err':>14}")
    for fp32 in (False, True):
        for low, high in ((0, 256), (257, 1024), (1025, 4096)):
            group = [r for r in rows if r[0].fp32_dest_acc_en == fp32 and low <= r[0].head_dim <= high]
            if group:
                print(
                    f"{'fp32' if fp32 else 'bf16':>5} {f'{low}-{high}':>10} {len(group):>6} "
                    f"{min(r[1] for r in group):>10.5f} {max(r[2] for r in group):>14.4f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
