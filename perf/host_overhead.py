"""Host time the op spends per decode call outside the launch: validation, planning, descriptor cache lookup.

    .venv/bin/python perf/host_overhead.py

A decode loop calls the op once per token per layer, so this is paid every step. Runs the Llama-3.1-8B N150 decode
shape with a cur_pos tensor and a preallocated output (one descriptor serves every step), with the launch replaced
by a no-op, and prints milliseconds per call for the default config and a named config.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ttflashdecode import emulator  # noqa: E402
from ttflashdecode import op as op_module  # noqa: E402
from ttflashdecode.backend import Backend  # noqa: E402
from ttflashdecode.ttnn_env import import_ttnn  # noqa: E402

CALLS = 500


def main() -> int:
    ttnn = import_ttnn()
    dev = emulator.open_device(board="n150")
    tile = dict(layout=ttnn.TILE_LAYOUT)
    q = dev.from_torch(torch.randn(1, 8, 32, 128), dtype=ttnn.bfloat16, **tile)
    kv = dev.from_torch(torch.randn(8, 8, 4096, 128), dtype=ttnn.bfloat8_b, **tile)
    pos = dev.from_torch(torch.full((8,), 3000, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    out = dev.allocate([1, 8, 32, 128], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    Backend.launch = lambda self, tensors, program: None  # host work only
    print(f"{'program_config':>22} {'calls':>6} {'ms per call':>12}")
    for config in (None, "llama-3.1-8b/n150"):
        kwargs = dict(cur_pos_tensor=pos, output_tensor=out, program_config=config)
        op_module.scaled_dot_product_attention_decode(q, kv, kv, **kwargs)  # first call plans and builds
        start = time.perf_counter()
        for _ in range(CALLS):
            op_module.scaled_dot_product_attention_decode(q, kv, kv, **kwargs)
        ms = (time.perf_counter() - start) / CALLS * 1e3
        print(f"{str(config):>22} {CALLS:>6} {ms:>12.3f}")
    dev.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
