"""Demo: one decode step of Llama-3.1-8B's attention on the host emulator, checked against the golden model.

    python -m ttflashdecode.demo [--batch 8] [--max-pos 4096] [--kv-dtype bfloat8_b] [--seed 0]

Says what it is doing at each step (the first run builds the emulator and compiles the kernels: a minute or more),
then prints the program config the op chose, the core split, the DRAM bytes the run read, the timing model's
duration and bandwidth (MODELLED, not measured on a card) next to the DRAM roofline, and the PCC and max-abs error
against the torch golden model on the same quantised KV cache.
"""

from __future__ import annotations

import argparse
import sys
import time

from ttflashdecode.backend import import_ttnn

# Llama-3.1-8B attention: 32 query heads share 8 KV heads of width 128.
N_Q_HEADS, N_KV_HEADS, HEAD_DIM = 32, 8, 128

# The roofline: one chip's DRAM bandwidth. 288 GB/s is the N150 specification (Wormhole specification page); 267 GB/s
# the best measured (tt-metal tech report "Saturating DRAM bandwidth", 265.5-267.6 GB/s; ../shared/WORMHOLE.md). The
# demo runs on one chip, so an N300 has the same per-chip figures.
DRAM_SPEC_BYTES_PER_S = 288e9
DRAM_BEST_MEASURED_BYTES_PER_S = 267e9


def _step(text: str) -> float:
    print(f"-- {text}", flush=True)
    return time.perf_counter()


def _done(start: float) -> None:
    print(f"   done in {time.perf_counter() - start:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-pos", type=int, default=4096, help="KV cache length; positions are drawn below it")
    parser.add_argument("--kv-dtype", default="bfloat8_b", help="bfloat16, bfloat8_b or bfloat4_b")
    parser.add_argument("--board", default="n150", choices=("n150", "n300"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(
        f"Llama-3.1-8B decode attention: batch {args.batch}, {N_Q_HEADS} q heads / {N_KV_HEADS} kv heads, "
        f"head_dim {HEAD_DIM}, KV cache {args.max_pos} positions in {args.kv_dtype}",
        flush=True,
    )

    t = _step("loading torch, ttnn and the op")
    import torch  # noqa: PLC0415 - after the first line of output: these imports take seconds

    from ttflashdecode import golden  # noqa: PLC0415
    from ttflashdecode.backend import emulator  # noqa: PLC0415
    from ttflashdecode.ops.decode.api import scaled_dot_product_attention_decode  # noqa: PLC0415

    ttnn = import_ttnn()
    _done(t)
    if args.kv_dtype not in golden.QUANT_DTYPE_NAMES:
        parser.error(f"--kv-dtype {args.kv_dtype!r}: expected one of {', '.join(golden.QUANT_DTYPE_NAMES)}")
    torch.manual_seed(args.seed)
    b, kv_len = args.batch, args.max_pos
    q = torch.randn(1, b, N_Q_HEADS, HEAD_DIM)
    k = torch.randn(b, N_KV_HEADS, kv_len, HEAD_DIM)
    v = torch.randn(b, N_KV_HEADS, kv_len, HEAD_DIM)
    cur_pos = torch.randint(0, kv_len, (b,)).tolist()
    kv_dtype = getattr(ttnn, args.kv_dtype)

    print(f"cur_pos: {cur_pos}")

    t = _step(
        f"opening an emulated {args.board.upper()} (host emulator: every Tensix core's kernels as host threads; "
        "the first run builds its runtime with g++)"
    )
    device = emulator().open_device(board=args.board)
    _done(t)
    try:
        t = _step(f"writing Q, K and V to the emulated DRAM (K/V in {args.kv_dtype} tiles)")
        tt_q = device.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
        tt_k = device.from_torch(k, dtype=kv_dtype, layout=ttnn.TILE_LAYOUT)
        tt_v = device.from_torch(v, dtype=kv_dtype, layout=ttnn.TILE_LAYOUT)
        _done(t)
        t = _step(
            "decoding: plan the program, compile its kernels (first run only: about a minute, cached in "
            "~/.cache/ttemu), run it on the emulator with the timing model (tens of seconds)"
        )
        tt_out, run = scaled_dot_product_attention_decode(tt_q, tt_k, tt_v, cur_pos=cur_pos, return_stats=True)
        out = device.to_torch(tt_out).float()
        elapsed = time.perf_counter() - t
        _done(t)
        # K/V bytes a decode must read: every tile of 32 positions holding a position <= cur_pos, once.
        tiles_per_row = HEAD_DIM // 32
        live_kv_bytes = (
            sum((p + 32) // 32 for p in cur_pos)
            * N_KV_HEADS
            * tiles_per_row
            * (tt_k.buffer_page_size() + tt_v.buffer_page_size())
        )
        # What any implementation moves through DRAM here: Q in, the live K/V tiles, the output out.
        stats = run.stats
        must_move = live_kv_bytes + stats.bytes_read_from(tt_q) + stats.bytes_written_to(tt_out)
    finally:
        device.close()

    t = _step("the golden model (torch, float32) on the values the device stores")
    # Reference on the values the device actually stores (bf16 Q, quantised K/V).
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, args.kv_dtype),
        golden.quantize_like_device(v, args.kv_dtype),
        cur_pos=cur_pos,
    )
    pcc = golden.pcc(out, expected)
    err = golden.max_abs_error(out, expected)
    _done(t)

    cfg = run.plan.config
    print("\nprogram config:")
    print(
        f"  compute_with_storage_grid_size={cfg.compute_with_storage_grid_size}, k_chunk_size={cfg.k_chunk_size}, "
        f"max_cores_per_head_batch={cfg.max_cores_per_head_batch}, exp_approx_mode={cfg.exp_approx_mode}"
    )
    print("core split:")
    for line in run.plan.describe().splitlines():
        print(f"  {line}")
    print("emulator run:")
    kv_read = stats.bytes_read_from(tt_k) + stats.bytes_read_from(tt_v)
    print(
        f"  DRAM bytes read: {stats.dram_read_bytes:,}, of which K/V {kv_read:,} "
        f"(K/V tiles up to cur_pos: {live_kv_bytes:,})"
    )
    print(
        f"  DRAM bytes written: {stats.dram_write_bytes:,}; host wall time of the decode call {elapsed:.2f} s "
        "(the emulator's, not a card's)"
    )
    print("modelled on Wormhole (the emulator's timing model, docs/TIMING.md; not a measurement):")
    roof_spec = must_move / DRAM_SPEC_BYTES_PER_S * 1e6
    roof_best = must_move / DRAM_BEST_MEASURED_BYTES_PER_S * 1e6
    duration_ns = stats.duration_ns
    if duration_ns is None:
        reason = stats.timing.error if stats.timing is not None else "the timing model was off"
        print(f"  no modelled duration ({reason})")
    else:
        moved = stats.dram_read_bytes + stats.dram_write_bytes
        print(
            f"  duration {duration_ns / 1e3:.1f} us (modelled); DRAM traffic {moved / duration_ns:.0f} GB/s (modelled)"
        )
        print(
            f"  roofline for the {must_move:,} bytes a decode must move (Q, live K/V tiles, output): "
            f"{roof_best:.1f} us at {DRAM_BEST_MEASURED_BYTES_PER_S / 1e9:.0f} GB/s (best measured), "
            f"{roof_spec:.1f} us at {DRAM_SPEC_BYTES_PER_S / 1e9:.0f} GB/s (spec)"
        )
        print(
            f"  modelled duration = {duration_ns / 1e3 / roof_best:.2f}x the "
            f"{DRAM_BEST_MEASURED_BYTES_PER_S / 1e9:.0f} GB/s roofline ({must_move / duration_ns:.0f} GB/s of useful "
            "bytes, modelled)"
        )
    print("\nresult vs golden:")
    print(f"  PCC {pcc:.6f}   max |error| {err:.4f}")
    ok = pcc >= 0.999
    print("  PASS" if ok else "  FAIL: PCC below 0.999")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
