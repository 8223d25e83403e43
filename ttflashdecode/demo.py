"""Demo: one decode step of Llama-3.1-8B's attention on the host emulator, checked against the golden model.

    python -m ttflashdecode.demo [--batch 8] [--max-pos 4096] [--kv-dtype bfloat8_b] [--seed 0]

Prints the program config the op chose, the core split, the PCC and max-abs error against the torch golden
model on the same quantised KV cache, and the DRAM bytes the run read.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from ttflashdecode import emulator, golden
from ttflashdecode.op import scaled_dot_product_attention_decode
from ttflashdecode import op as op_module
from ttflashdecode.ttnn_env import import_ttnn

# Llama-3.1-8B attention: 32 query heads share 8 KV heads of width 128.
N_Q_HEADS, N_KV_HEADS, HEAD_DIM = 32, 8, 128


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-pos", type=int, default=4096, help="KV cache length; positions are drawn below it")
    parser.add_argument("--kv-dtype", default="bfloat8_b", choices=golden.QUANT_DTYPE_NAMES)
    parser.add_argument("--board", default="n150", choices=("n150", "n300"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    ttnn = import_ttnn()
    torch.manual_seed(args.seed)
    b, kv_len = args.batch, args.max_pos
    q = torch.randn(1, b, N_Q_HEADS, HEAD_DIM)
    k = torch.randn(b, N_KV_HEADS, kv_len, HEAD_DIM)
    v = torch.randn(b, N_KV_HEADS, kv_len, HEAD_DIM)
    cur_pos = torch.randint(0, kv_len, (b,)).tolist()
    kv_dtype = getattr(ttnn, args.kv_dtype)

    print(f"Llama-3.1-8B decode attention: batch {b}, {N_Q_HEADS} q heads / {N_KV_HEADS} kv heads, "
          f"head_dim {HEAD_DIM}, KV cache {kv_len} positions in {args.kv_dtype}")
    print(f"cur_pos: {cur_pos}")

    device = emulator.open_device(board=args.board)
    try:
        tt_q = device.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
        tt_k = device.from_torch(k, dtype=kv_dtype, layout=ttnn.TILE_LAYOUT)
        tt_v = device.from_torch(v, dtype=kv_dtype, layout=ttnn.TILE_LAYOUT)
        start = time.perf_counter()
        tt_out = scaled_dot_product_attention_decode(tt_q, tt_k, tt_v, cur_pos=cur_pos)
        elapsed = time.perf_counter() - start
        out = device.to_torch(tt_out).float()
        run = op_module.last_run
        # K/V bytes a decode must read: every tile of 32 positions holding a position <= cur_pos, once.
        tiles_per_row = HEAD_DIM // 32
        live_kv_bytes = sum((p + 32) // 32 for p in cur_pos) * N_KV_HEADS * tiles_per_row * (
            tt_k.buffer_page_size() + tt_v.buffer_page_size())
    finally:
        device.close()

    # Reference on the values the device actually stores (bf16 Q, quantised K/V).
    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, args.kv_dtype),
        golden.quantize_like_device(v, args.kv_dtype),
        cur_pos=cur_pos,
    )
    pcc = golden.pcc(out, expected)
    err = golden.max_abs_error(out, expected)

    cfg = run.plan.config
    print("\nprogram config:")
    print(f"  compute_with_storage_grid_size={cfg.compute_with_storage_grid_size}, k_chunk_size={cfg.k_chunk_size}, "
          f"max_cores_per_head_batch={cfg.max_cores_per_head_batch}, exp_approx_mode={cfg.exp_approx_mode}")
    print("core split:")
    for line in run.plan.describe().splitlines():
        print(f"  {line}")
    stats = run.stats
    print("emulator run:")
    print(f"  DRAM bytes read: {stats.dram_read_bytes:,}, of which K/V {stats.bytes_read_from(tt_k) + stats.bytes_read_from(tt_v):,} "
          f"(K/V tiles up to cur_pos: {live_kv_bytes:,})")
    print(f"  DRAM bytes written: {stats.dram_write_bytes:,}; wall time {elapsed:.2f} s")
    print("\nresult vs golden:")
    print(f"  PCC {pcc:.6f}   max |error| {err:.4f}")
    ok = pcc >= 0.999
    print("  PASS" if ok else "  FAIL: PCC below 0.999")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
