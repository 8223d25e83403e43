"""Modelled durations (the emulator's timing model, not silicon) of tt_transformers' per-layer cache updates:
Llama-3.1-8B on one N150 (batch 8, 8 kv heads, head_dim 128, a bfloat8_b paged cache in blocks of 64, 1024
positions a user; the new rows height-sharded in L1 one user a core, device positions and page table), the package's
``paged_update_cache`` (K) and ``paged_fused_update_cache`` (K and V in one launch).

    PYTHONPATH=<tree> .venv/bin/python perf/update_cache_timing.py

Run it on two trees to compare their update programs on the device (e.g. a kernel-argument change: docs/RUNTIME.md,
"The cache update's host cost").
"""

from __future__ import annotations

import torch

import ttemu
import ttflashdecode
from ttemu.ttnn_env import import_ttnn


def main() -> None:
    ttnn = import_ttnn()
    dev = ttemu.open_device("n150")
    gen = torch.Generator().manual_seed(27)
    b, nkv, d, S, block = 8, 8, 128, 1024, 64
    blocks = b * S // block
    rm = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)

    def one_user_a_core(row: int):
        cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, row), ttnn.CoreCoord(b - 1, row))])
        spec = ttnn.ShardSpec(cores, [32, d], ttnn.ShardOrientation.ROW_MAJOR)
        return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)

    def tiles(x, dtype, memory_config=None):
        return dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, memory_config=memory_config)

    k, v = (tiles(torch.randn(blocks, nkv, block, d, generator=gen), ttnn.bfloat8_b) for _ in range(2))
    rows = [torch.randn(1, b, nkv, d, generator=gen) for _ in range(2)]
    k_new, v_new = (tiles(x, ttnn.bfloat16, one_user_a_core(0)) for x in rows)
    table = dev.from_torch(torch.randperm(blocks, generator=gen).reshape(b, S // block).to(torch.int32), **rm)
    pos = dev.from_torch(torch.arange(b, dtype=torch.int32) * 100, **rm)
    _, one = ttflashdecode.paged_update_cache(k, k_new, update_idxs_tensor=pos, page_table=table, return_stats=True)
    _, two = ttflashdecode.paged_fused_update_cache(
        k, k_new, v, v_new, update_idxs_tensor=pos, page_table=table, return_stats=True
    )
    print(f"{ttflashdecode.__file__}: modelled durations (emulator timing model)")
    print(f"paged_update_cache {one.stats.duration_ns:.0f} ns; paged_fused_update_cache {two.stats.duration_ns:.0f} ns")
    dev.close()


if __name__ == "__main__":
    main()
