"""The cache update's host cost on a cache hit: tt_transformers' per-layer K/V cache update through the real
``ttnn.generic_op`` on a mock N150, two trees of the package against each other in one process (host_cost_ab.py's
way: its trees, warm-ups, blocks and statistics), next to upstream's ops on the same tensors.

The call is Llama-3.1-8B's on one chip, as tt_transformers makes it each layer of a decode step: the new K (and V)
rows ``[1, b, n_kv_heads, head_dim]`` bfloat16, height-sharded in L1 one user a core (nlp_create_qkv_heads_decode's
output), a device ``update_idxs_tensor`` and page table, a bfloat8_b paged cache (batch 8, 8 kv heads, head_dim 128,
blocks of 64, 1024 positions a user). Rows, for ``paged_update_cache`` (K) and ``paged_fused_update_cache`` (K and V
in one launch): each tree's call with ``ttnn.generic_op`` a no-op (the package's own work), each tree's call,
upstream's ``ttnn.experimental`` op with the same arguments, and generic_op's C++ op alone on the descriptor each tree
launches (``ttnn.generic_op.function``: what a change of the descriptor moves). Per row the 10th percentile and median
of the wall times and the median CPU time per call.

    PYTHONPATH=<tree> .venv/bin/python tests/runtime/update_host_cost.py <base tree> [--calls 3000]

``<base tree>`` is a directory holding a ``ttflashdecode`` package (``git archive <commit> ttflashdecode | tar -x -C
/tmp/base``); the tree under test is the one Python imports (PYTHONPATH). Both may be the same commit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from host_cost_ab import Trees, generic_op_alone, print_rows, without_launch  # noqa: E402


def update_calls(dev, ttnn):
    """``{op name: call(package)}`` for tt_transformers' two cache-update calls (see the module docstring), and
    ``{op name: upstream's call}``."""
    import torch

    gen = torch.Generator().manual_seed(27)
    b, nkv, d, S, block = 8, 8, 128, 1024, 64
    blocks = b * S // block
    grid = dev.compute_with_storage_grid_size()

    def up(x, dtype, layout=ttnn.TILE_LAYOUT, memory_config=ttnn.DRAM_MEMORY_CONFIG):
        return ttnn.to_device(ttnn.from_torch(x, dtype=dtype, layout=layout), dev, memory_config=memory_config)

    def one_user_a_core(first: int):
        """Height-sharded in L1, one user's rows a core, on the cores ``first ..`` of the grid (row by row)."""
        start = ttnn.CoreCoord(first % grid.x, first // grid.x)
        users = ttnn.num_cores_to_corerangeset_in_subcoregrids(
            start,
            b,
            ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(grid.x - 1, grid.y - 1))]),
            row_wise=True,
        )
        spec = ttnn.ShardSpec(users, [32, d], ttnn.ShardOrientation.ROW_MAJOR)
        return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)

    k_new = up(torch.randn(1, b, nkv, d, generator=gen), ttnn.bfloat16, memory_config=one_user_a_core(0))
    v_rows = torch.randn(1, b, nkv, d, generator=gen)
    v_new = up(v_rows, ttnn.bfloat16, memory_config=one_user_a_core(0))
    # Upstream's fused op refuses inputs whose shard grids overlap (its TT_FATAL "must not overlap"): V's rows for it
    # on the next b cores. Ours gets them on K's cores, the one form a package before 2026-11-27 takes (a base tree);
    # the descriptor of either form has the same size.
    v_new_apart = up(v_rows, ttnn.bfloat16, memory_config=one_user_a_core(b))
    k = up(torch.randn(blocks, nkv, block, d, generator=gen), ttnn.bfloat8_b)
    v = up(torch.randn(blocks, nkv, block, d, generator=gen), ttnn.bfloat8_b)
    table = torch.randperm(blocks, generator=gen).reshape(b, S // block).to(torch.int32)
    page_table = up(table, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
    pos = up(torch.arange(b, dtype=torch.int32) * 100, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
    ours = {
        "paged_update_cache": lambda p: p.paged_update_cache(k, k_new, update_idxs_tensor=pos, page_table=page_table),
        "paged_fused_update_cache": lambda p: p.paged_fused_update_cache(
            k, k_new, v, v_new, update_idxs_tensor=pos, page_table=page_table
        ),
    }
    upstream = ttnn.experimental
    theirs = {
        "paged_update_cache": lambda: upstream.paged_update_cache(
            k, k_new, update_idxs_tensor=pos, page_table=page_table
        ),
        "paged_fused_update_cache": lambda: upstream.paged_fused_update_cache(
            k, k_new, v, v_new_apart, update_idxs_tensor=pos, page_table=page_table
        ),
    }
    return ours, theirs


def child(base: str, calls: int) -> int:
    from ttemu.ttnn_env import import_ttnn

    ttnn = import_ttnn()
    dev = ttnn.open_device(device_id=0)
    try:
        trees = Trees(base, dev)
        ours, theirs = update_calls(dev, ttnn)
        for name in trees.packages:
            trees.prime(name, lambda p: [call(p) for call in ours.values() for _ in range(2)])
        rows, setups = {}, {}

        def row(label: str, tree: str, fn) -> None:
            rows[label] = fn
            setups[label] = lambda: trees.use(tree)

        for op, call in ours.items():
            for name, p in trees.packages.items():
                row(f"{name}, {op}, generic_op a no-op", name, without_launch(ttnn, lambda c=call, p=p: c(p)))
            for name, p in trees.packages.items():
                row(f"{name}, {op}", name, lambda c=call, p=p: c(p))
            rows[f"upstream's {op}"] = theirs[op]
            for name, p in trees.packages.items():
                rows[f"{name}, {op}: generic_op's C++ op alone on its descriptor"] = generic_op_alone(
                    ttnn, trees, name, lambda c=call, p=p: c(p)
                )
        print_rows(rows, calls, setups)
    finally:
        ttnn.close_device(dev)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", help="a directory holding the base tree's ttflashdecode package")
    p.add_argument("--calls", type=int, default=3000, help="timed calls per row")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.base, args.calls)
    import mock_env  # noqa: PLC0415

    command = [sys.executable, __file__, str(Path(args.base).resolve()), "--child", "--calls", str(args.calls)]
    return mock_env.run_on_n150(command, "ttfd_update_host_cost_")


if __name__ == "__main__":
    sys.exit(main())
