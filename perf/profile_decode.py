"""Where a FlashDecode call's time goes (issue 12 item 4): one shape, ours and upstream's sdpa_decode kernels
(``ttflashdecode.upstream``) on the same emulated chip, with the timing model's per-core / per-RISC breakdown.

Every figure is MODELLED by the emulator's timing model (docs/TIMING.md), not measured on silicon.

For each op it prints the DEVICE KERNEL DURATION, then per RISC kind (reader NCRISC, compute TRISC, writer BRISC) the
busy / wait time over the active cores (mean and the max), the compute lanes (unpack / math / pack), the DRAM banks'
utilisation, and the critical path: the core that ends last, when each of its RISCs ended, and how much of the run
its reader, compute and writer were busy. Reading it: a reader ending long before compute means compute-bound (exp,
pack/unpack round trips); compute waiting most of the run means reader-bound (DRAM, issue); the root's writer ending
well after its compute means the tree merge / output write is on the critical path.

    .venv/bin/python perf/profile_decode.py --batch 8 --head-dim 64 --kv-len 1024
    .venv/bin/python perf/profile_decode.py --llama70b          # the published Llama-3.1-70B per-chip point
    .venv/bin/python perf/profile_decode.py --head-dim 128 --kv-len 8192 --k-chunk-size 256 --max-cores 16

--host-profile (issue 24) answers a different question: where the HOST's time goes when the emulator runs one warm
Llama-3.1-8B decode call (32 q / 8 kv heads, d128, bfloat8_b, --batch users at --kv-len): it runs the call under
Linux ``perf record`` and prints the share of samples per process and shared object -- the kernels' libraries (the
runtime loads one copy per core, named k<kernel id>_c<core>.so, summed here per kernel; ours are 0 reader, 1
compute, 2 writer), the runtime executable (CBs, NOC, timing-model record and replay), the OS kernel (thread
wake-ups and waits), libc / libm, and the Python side (format conversion, planning) -- then the top symbols. The
per-core copies are deleted once loaded, so perf cannot name the functions inside a kernel's library.

    .venv/bin/python perf/profile_decode.py --host-profile --batch 1 --kv-len 32768
"""

from __future__ import annotations

import argparse
import statistics
import sys

import harness
import torch

import ttflashdecode
from ttflashdecode import upstream

REPO = harness.REPO
ttnn = harness.ttnn()
# Both ops put the reader on RISCV_1 (NCRISC, NoC 0) and the writer on RISCV_0 (BRISC, NoC 1), as tt-metal's
# Reader/WriterDataMovementConfig do.
RISC_ROLE = {"NCRISC": "reader", "TRISC": "compute", "BRISC": "writer"}


def run_both(dev, args):
    """Runs upstream then ours on the same tensors; returns [(name, stats, plan or None)]."""
    g = torch.Generator().manual_seed(args.seed)
    b, hq, hkv, d, kv = args.batch, args.q_heads, args.kv_heads, args.head_dim, args.kv_len
    q = torch.randn(1, b, hq, d, generator=g)
    grid = ttnn.CoreCoord(8, 8)
    extra = {} if args.exp_approx is None else {"exp_approx_mode": args.exp_approx}
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=grid,
        q_chunk_size=0,
        k_chunk_size=args.k_chunk_size,
        max_cores_per_head_batch=args.max_cores,
        **extra,
    )
    pos = args.kv_len - 1 if args.pos is None else args.pos
    kwargs = dict(cur_pos=[pos] * b, program_config=config, return_stats=True)
    if args.fidelity:
        kwargs["compute_kernel_config"] = ttnn.WormholeComputeKernelConfig(
            math_fidelity=getattr(ttnn.MathFidelity, args.fidelity),
            math_approx_mode=True,
            fp32_dest_acc_en=False,
            packer_l1_acc=False,
        )
    tq = harness.tile(dev, q)
    if args.block_size:
        blocks_per_user = kv // args.block_size
        num_blocks = b * blocks_per_user
        k = torch.randn(num_blocks, hkv, args.block_size, d, generator=g)
        v = torch.randn(num_blocks, hkv, args.block_size, d, generator=g)
        pt = torch.randperm(num_blocks, generator=g).reshape(b, blocks_per_user).to(torch.int32)
        tk, tv = (harness.tile(dev, x, args.kv_dtype) for x in (k, v))
        calls = [
            (
                "upstream sdpa_decode",
                lambda: upstream.paged_scaled_dot_product_attention_decode(tq, tk, tv, pt, **kwargs),
            ),
            (
                "ttflashdecode",
                lambda: ttflashdecode.paged_scaled_dot_product_attention_decode(tq, tk, tv, pt, **kwargs),
            ),
        ]
    else:
        k = torch.randn(b, hkv, kv, d, generator=g)
        v = torch.randn(b, hkv, kv, d, generator=g)
        tk, tv = (harness.tile(dev, x, args.kv_dtype) for x in (k, v))
        calls = [
            ("upstream sdpa_decode", lambda: upstream.scaled_dot_product_attention_decode(tq, tk, tv, **kwargs)),
            ("ttflashdecode", lambda: ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, **kwargs)),
        ]
    reference = None
    if not args.block_size:
        # float64 attention over the values the device holds (Q as bfloat16, K/V as stored), positions 0..pos
        qd, kd, vd = (dev.to_torch(t).to(torch.float64) for t in (tq, tk, tv))
        g_ = hq // hkv
        kk = kd[:, :, : pos + 1].repeat_interleave(g_, dim=1)  # [b, hq, pos+1, d]
        vv = vd[:, :, : pos + 1].repeat_interleave(g_, dim=1)
        scores = torch.einsum("bhd,bhsd->bhs", qd[0], kk) * d**-0.5
        reference = torch.einsum("bhs,bhsd->bhd", scores.softmax(-1), vv)[None]
    results = []
    for name, call in calls:
        if args.only and args.only not in name:
            continue
        out, run = call()
        if reference is not None:
            got = dev.to_torch(out).to(torch.float64)[..., :hq, :d]
            err = (got - reference).abs().max().item()
            pcc = torch.corrcoef(torch.stack([got.flatten(), reference.flatten()]))[0, 1].item()
            print(f"{name}: vs float64 reference PCC {pcc:.6f}, max |error| {err:.4g}")
        out.deallocate()
        results.append((name, run.stats, None if name.startswith("upstream") else run.plan))
    return results


def report(name: str, stats, plan) -> None:
    t = stats.timing
    print(f"\n== {name}: {stats.duration_ns / 1000:.2f} us modelled" + ("" if t.ok else f"  (replay error: {t.error})"))
    if plan is not None:
        print(
            f"   plan: num_cores_per_head {plan.num_cores_per_head}, k_chunk_size {plan.k_chunk_size}, "
            f"rounds {plan.rounds}, head blocks K {plan.k_head_block} / V {plan.v_head_block}, "
            f"L1 {plan.l1_bytes / 1024:.0f} KiB"
        )
    t0 = t.first_start_ns
    dur = t.duration_ns
    active = {c: r for c, r in t.cores.items() if any(x.busy > 0 for x in r.values())}
    print(f"   {len(active)} active cores; times relative to the first kernel start, ns")
    print(f"   {'risc':<16}{'busy mean':>10}{'busy max':>10}{'wait mean':>10}{'end mean':>10}{'end max':>10}")
    for risc, role in RISC_ROLE.items():
        rs = [r[risc] for r in active.values() if risc in r]
        if not rs:
            continue
        print(
            f"   {role + ' ' + risc:<16}{statistics.mean(x.busy for x in rs):>10.0f}{max(x.busy for x in rs):>10.0f}"
            f"{statistics.mean(x.wait for x in rs):>10.0f}{statistics.mean(x.end - t0 for x in rs):>10.0f}"
            f"{max(x.end - t0 for x in rs):>10.0f}"
        )
    lanes = [r["TRISC"].lanes for r in active.values() if "TRISC" in r and r["TRISC"].lanes]
    if lanes:
        print(
            "   compute lanes busy (mean / max over cores): "
            + ", ".join(
                f"{k} {statistics.mean(l[k] for l in lanes):.0f} / {max(l[k] for l in lanes):.0f}"
                for k in ("unpack", "math", "pack")
            )
        )
    banks = t.dram_bank_busy_ns
    print(
        f"   DRAM banks busy: mean {statistics.mean(banks) / dur:.0%} of the run, max {max(banks) / dur:.0%}; "
        f"{(stats.dram_read_bytes + stats.dram_write_bytes) / dur:.1f} GB/s"
    )
    last_core, last = max(active.items(), key=lambda kv: max(x.end for x in kv[1].values()))
    print(f"   critical path: core {last_core} ends last")
    for risc, role in RISC_ROLE.items():
        if risc in last:
            x = last[risc]
            extra = ""
            if x.lanes:
                extra = "  lanes " + ", ".join(f"{k} {v:.0f}" for k, v in x.lanes.items())
            print(
                f"     {role:<8} start {x.start - t0:>7.0f} end {x.end - t0:>7.0f} busy {x.busy:>7.0f} "
                f"wait {x.wait:>7.0f}{extra}"
            )
    if args_verbose:
        for c, r in sorted(active.items(), key=lambda kv: -max(x.end for x in kv[1].values()))[:args_verbose]:
            print(
                f"     core {c:<6} "
                + " | ".join(
                    f"{RISC_ROLE[k][:1]} end {v.end - t0:.0f} busy {v.busy:.0f} wait {v.wait:.0f}" for k, v in r.items()
                )
            )


args_verbose = 0


def host_profile(args) -> None:
    """perf record of one warm decode call (see the module docstring), aggregated per process and library."""
    import os
    import re
    import subprocess
    import tempfile
    from collections import Counter

    if os.environ.get("TTFD_HOST_PROFILE_INNER"):
        import emulator_throughput

        dev = harness.open_device()
        wall, _, stats = emulator_throughput.llama_decode(dev, args.batch, args.kv_len, False)
        dev.close()
        print(f"one decode call: wall {wall:.2f} s, of which the emulator child {stats.wall_seconds:.2f} s")
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = f"{tmp}/perf.data"
        env = dict(os.environ, TTFD_HOST_PROFILE_INNER="1")
        cmd = ["perf", "record", "-F", "200", "-g", "-o", data, "--", sys.executable, *sys.argv]
        print(subprocess.run(cmd, env=env, capture_output=True, text=True).stdout.strip())

        def report(*extra):
            out = subprocess.run(
                ["perf", "report", "-i", data, "--no-children", "--stdio", "-g", "none", *extra],
                capture_output=True,
                text=True,
            ).stdout
            return [line.split() for line in out.splitlines() if re.match(r"\s+[0-9.]+%", line)]

        where = Counter()
        for pct, comm, dso, *_ in report("--sort", "comm,dso"):
            where[(comm, re.sub(r"_c\d+\.so$", "_c*.so", dso))] += float(pct.rstrip("%"))
        print("host samples by process and library (the whole run, warm-up call included):")
        for (comm, dso), pct in where.most_common(10):
            print(f"  {pct:6.2f}%  {comm:<14}{dso}")
        print("top symbols (kernel libraries: offsets only):")
        for row in report("--sort", "comm,dso,sym")[:12]:
            print(f"  {row[0]:>7}  {row[1]:<14}{row[2]:<28}{' '.join(row[4:])[:70]}")


def main() -> None:
    global args_verbose
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--q-heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--kv-len", type=int, default=1024)
    ap.add_argument("--pos", type=int, default=None, help="every user's cur_pos (default kv_len - 1)")
    ap.add_argument("--kv-dtype", choices=("bfloat8_b", "bfloat16"), default="bfloat8_b")
    ap.add_argument("--block-size", type=int, default=0, help="paged cache with this block size")
    ap.add_argument("--k-chunk-size", type=int, default=0)
    ap.add_argument("--max-cores", type=int, default=16, help="max_cores_per_head_batch")
    ap.add_argument(
        "--exp-approx",
        type=lambda s: s.lower() in ("1", "true"),
        default=None,
        help="SDPAProgramConfig.exp_approx_mode (default: unset, each op's default)",
    )
    ap.add_argument(
        "--fidelity",
        choices=("LoFi", "HiFi2", "HiFi3", "HiFi4"),
        default=None,
        help="pass a compute_kernel_config with this math fidelity (math_approx_mode on, fp32 dest off)",
    )
    ap.add_argument("--only", default="", help="run only the op whose name contains this")
    ap.add_argument(
        "--llama70b",
        action="store_true",
        help="8 users, 8q/1kv, d 128, bfloat8_b paged block 32, pos 127, 256 positions a user",
    )
    ap.add_argument("--cores", type=int, default=0, help="also list the N latest-ending cores")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--host-profile", action="store_true", help="where the host's time goes (perf record; see above)")
    args = ap.parse_args()
    if args.host_profile:
        host_profile(args)
        return
    args_verbose = args.cores
    if args.llama70b:
        args.batch, args.q_heads, args.kv_heads, args.head_dim = 8, 8, 1, 128
        args.kv_len, args.pos, args.block_size, args.kv_dtype = 256, 127, 32, "bfloat8_b"
    print(
        f"batch {args.batch}, {args.q_heads} q / {args.kv_heads} kv heads, head_dim {args.head_dim}, "
        f"kv_len {args.kv_len}, {args.kv_dtype}"
        + (f" paged block {args.block_size}" if args.block_size else "")
        + f", k_chunk_size {args.k_chunk_size or 'auto'}, max_cores_per_head_batch {args.max_cores} (modelled)"
    )
    dev = harness.open_device()
    try:
        results = run_both(dev, args)
    finally:
        dev.close()
    for name, stats, plan in results:
        report(name, stats, plan)
    if len(results) == 2:
        up, ours = results[0][1].duration_ns, results[1][1].duration_ns
        print(f"\nratio upstream / ours: {up / ours:.3f} (above 1: ours faster; modelled)")


if __name__ == "__main__":
    main()
