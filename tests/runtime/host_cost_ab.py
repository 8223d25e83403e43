"""Two trees of the package timed against each other in one process: the paged hit of tests/runtime/host_cost.py.

Alternating runs of host_cost.py cannot resolve a change of a microsecond or two: the project's VM moves by 2x between
runs (docs/RUNTIME.md). Here both trees are imported into one process (each its own ``ttflashdecode`` module objects:
the base tree's are imported first and moved out of ``sys.modules``), open nothing twice (one mock N150, one set of
tensors) and take turns block by block on the same call, so a change is compared under the same load. Each tree keeps
its own device cache and programs (its kernels' paths differ, so do their program hashes).

Rows: each tree's paged call with ``ttnn.generic_op`` replaced by a no-op (the package's own work: what a change of
the package moves), then, unless ``--package-only``, each tree's real call, upstream's paged op, and ``generic_op``'s
C++ op alone on the descriptor each tree launches (what a change of the descriptor moves). ``--exp-approx``: the call
with the approximate exp (upstream's default) instead of tt_transformers' exact one. Per row the 10th percentile and
median of the wall times and the median CPU time per call, as host_cost.py reports them.

    PYTHONPATH=<tree> .venv/bin/python tests/runtime/host_cost_ab.py <base tree> [--calls 3000] [--package-only]
        [--exp-approx]

``<base tree>`` is a directory holding a ``ttflashdecode`` package, e.g. ``git archive HEAD ttflashdecode | tar -x -C
/tmp/base``; the tree under test is the one Python imports (PYTHONPATH).
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "ttflashdecode"


def _is_package_module(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def load_tree(root: str | None) -> dict:
    """The package imported from ``root`` (None: from sys.path as it stands): its modules by name, taken out of
    ``sys.modules`` so that another tree can be imported next to it (:func:`activate` puts them back)."""
    if root is not None:
        sys.path.insert(0, root)
    activate({})
    importlib.import_module(PACKAGE)
    modules = {name: module for name, module in sys.modules.items() if _is_package_module(name)}
    activate({})
    if root is not None:
        sys.path.remove(root)
    return modules


def activate(modules: dict) -> None:
    """Make ``modules`` (a tree's, from :func:`load_tree`) the package's modules in ``sys.modules``: a module's deferred
    import (the full path's planning imports some) then finds its own tree's."""
    for name in [m for m in sys.modules if _is_package_module(m)]:
        del sys.modules[name]
    sys.modules.update(modules)


def paged_call(dev, ttnn, exp_approx: bool = False):
    """tt_transformers' paged decode call of host_cost.py (Llama-3.1-8B on one chip: batch 8, 32 q / 8 kv heads,
    head_dim 128, bfloat8_b blocks of 64 positions, 1024 a user; q height-sharded one user a core; device page table
    and positions; a DRAM output the op allocates): ``call(op)`` calls ``op`` (a paged decode function) with it.
    ``exp_approx``: the approximate exp (upstream's default) instead of tt_transformers' exact one."""
    import torch

    gen = torch.Generator().manual_seed(27)
    b, nq, nkv, d, S, block = 8, 32, 8, 128, 1024, 64
    blocks = b * S // block
    grid = dev.compute_with_storage_grid_size()

    def up(x, dtype, layout=ttnn.TILE_LAYOUT, memory_config=ttnn.DRAM_MEMORY_CONFIG):
        return ttnn.to_device(ttnn.from_torch(x, dtype=dtype, layout=layout), dev, memory_config=memory_config)

    users = ttnn.num_cores_to_corerangeset(b, grid, row_wise=True)
    sharded = ttnn.MemoryConfig(
        ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
        ttnn.BufferType.L1,
        ttnn.ShardSpec(users, [32, d], ttnn.ShardOrientation.ROW_MAJOR),
    )
    q = up(torch.randn(1, b, nq, d, generator=gen), ttnn.bfloat16, memory_config=sharded)
    k = up(torch.randn(blocks, nkv, block, d, generator=gen), ttnn.bfloat8_b)
    v = up(torch.randn(blocks, nkv, block, d, generator=gen), ttnn.bfloat8_b)
    table = torch.randperm(blocks, generator=gen).reshape(b, S // block).to(torch.int32)
    page_table = up(table, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
    pos = up(torch.arange(b, dtype=torch.int32) * 100, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=grid, q_chunk_size=256, k_chunk_size=256, exp_approx_mode=exp_approx
    )
    hifi4 = ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=False, fp32_dest_acc_en=False, packer_l1_acc=False
    )

    def call(op):
        return op(
            q,
            k,
            v,
            page_table,
            cur_pos_tensor=pos,
            scale=d**-0.5,
            program_config=config,
            compute_kernel_config=hifi4,
            memory_config=ttnn.DRAM_MEMORY_CONFIG,
        )

    def upstream():
        return ttnn.transformer.paged_scaled_dot_product_attention_decode(
            q,
            k,
            v,
            cur_pos_tensor=pos,
            page_table_tensor=page_table,
            scale=d**-0.5,
            program_config=config,
            compute_kernel_config=hifi4,
            memory_config=ttnn.DRAM_MEMORY_CONFIG,
        )

    return call, upstream


def time_rows(rows: dict, calls: int, setups: dict, block: int = 30) -> dict:
    """host_cost.py's way: two warm-up calls a row, then blocks of ``block`` calls taking turns; ``setups[name]``
    (if any) runs before a row's warm-up and each of its blocks, untimed."""
    wall = {name: [] for name in rows}
    cpu = {name: [] for name in rows}
    for name, fn in rows.items():
        setups.get(name, lambda: None)()
        fn(), fn()
    for _ in range(max(1, calls // block)):
        for name, fn in rows.items():
            setups.get(name, lambda: None)()
            samples, start = wall[name], time.process_time_ns()
            for _ in range(block):
                t0 = time.perf_counter_ns()
                fn()
                samples.append(time.perf_counter_ns() - t0)
            cpu[name].append((time.process_time_ns() - start) / block)
    return {
        name: (
            statistics.quantiles(wall[name], n=10)[0] / 1000,
            statistics.median(wall[name]) / 1000,
            statistics.median(cpu[name]) / 1000,
        )
        for name in rows
    }


class Trees:
    """The base tree and the tree under test in one process, on one device: each tree its own modules and its own
    device cache.

    The package keeps its cache of a device (programs, the fast path's table of calls) on the device object under one
    attribute name (device_cache._ATTR), the same in both trees: each tree gets its own, swapped in with its modules
    (:meth:`use`), or one tree's calls would hit the other's entries and launch its descriptor."""

    def __init__(self, base: str, dev):
        self.modules = {"base": load_tree(base), "this": load_tree(None)}
        self.packages = {name: tree[PACKAGE] for name, tree in self.modules.items()}
        self.dev, self._caches = dev, {}
        print("\n".join(f"{name}: {Path(p.__file__).parent.parent}" for name, p in self.packages.items()))

    def prime(self, name: str, first_calls):
        """``first_calls(package)``: the tree's first calls (the full path: validation, planning, the build), made
        with its own modules in sys.modules and a new device cache of its own, which is returned. The timed calls
        after them are cache hits."""
        tree = self.modules[name]
        activate(tree)
        self._attribute = importlib.import_module(f"{PACKAGE}.device_cache")._ATTR
        vars(self.dev).pop(self._attribute, None)
        first_calls(self.packages[name])
        self._caches[name] = vars(self.dev)[self._attribute]
        tree.update({m: module for m, module in sys.modules.items() if _is_package_module(m)})  # its late imports
        return self._caches[name]

    def use(self, name: str) -> None:
        """Make ``name``'s modules and device cache the current ones (a row's setup, before its blocks)."""
        activate(self.modules[name])
        vars(self.dev)[self._attribute] = self._caches[name]


def launch_of(ttnn, call):
    """The (io tensors, launchable) ``call()`` hands ``ttnn.generic_op`` (which does not run)."""
    real, launched = ttnn.generic_op, {}
    ttnn.generic_op = lambda io, program: launched.setdefault("args", (io, program))
    try:
        call()
    finally:
        ttnn.generic_op = real
    return launched["args"]


def generic_op_alone(ttnn, trees: Trees, name: str, call):
    """A row: ``generic_op``'s C++ op alone on the descriptor tree ``name`` launches for ``call()`` (a program-cache
    hit): what a change of the descriptor moves, without the package's work around it."""
    trees.use(name)
    launched, launch = launch_of(ttnn, call), ttnn.generic_op.function
    return lambda: launch(*launched)


def without_launch(ttnn, call):
    """``call`` with ``ttnn.generic_op`` a no-op while it runs: the package's own work."""
    real = ttnn.generic_op

    def run():
        ttnn.generic_op = lambda io, program: None
        try:
            call()
        finally:
            ttnn.generic_op = real

    return run


def print_rows(rows: dict, calls: int, setups: dict) -> None:
    """Times ``rows`` (:func:`time_rows`) and prints the table; every row must be a cache hit."""
    load = os.getloadavg()[0]
    result = time_rows(rows, calls, setups)
    print("| row | wall 10th percentile (us) | wall median (us) | CPU median (us) |\n|---|---|---|---|")
    for name, (p10, median, cpu) in result.items():
        print(f"| {name} | {p10:.2f} | {median:.2f} | {cpu:.2f} |")
    after = os.getloadavg()[0]
    slow = [name for name, (p10, _, _) in result.items() if p10 > 1000]  # a full-path call takes milliseconds
    assert not slow, f"rows whose calls were not cache hits: {slow}"
    print(f"{calls} calls a row in blocks of 30; load average (1 min) before, after: {load:.1f}, {after:.1f}")


def child(base: str, calls: int, package_only: bool, exp_approx: bool) -> int:
    from ttemu.ttnn_env import import_ttnn

    ttnn = import_ttnn()
    dev = ttnn.open_device(device_id=0)
    try:
        trees = Trees(base, dev)
        call, upstream = paged_call(dev, ttnn, exp_approx)
        for name in trees.packages:
            # the op read off the package with its tree active: the package imports its functions on first use
            cache = trees.prime(name, lambda p: [call(p.paged_scaled_dot_product_attention_decode) for _ in range(2)])
            root = Path(trees.packages[name].__file__).parent
            files = {type(entry.owner).run_hit.__code__.co_filename for entry in cache.calls.values()}
            assert files and all(Path(f).is_relative_to(root) for f in files), f"{name}'s entries run {files}"

        rows, setups = {}, {}
        ops = {name: p.paged_scaled_dot_product_attention_decode for name, p in trees.packages.items()}
        for name, op in ops.items():
            rows[f"{name}, generic_op a no-op"] = without_launch(ttnn, lambda op=op: call(op))
            setups[f"{name}, generic_op a no-op"] = lambda name=name: trees.use(name)
        if not package_only:
            for name, op in ops.items():
                rows[f"{name}, the call"] = lambda op=op: call(op)
                setups[f"{name}, the call"] = lambda name=name: trees.use(name)
            rows["upstream's paged op"] = upstream
            for name, op in ops.items():
                rows[f"{name}, generic_op's C++ op alone on its descriptor"] = generic_op_alone(
                    ttnn, trees, name, lambda op=op: call(op)
                )
        print_rows(rows, calls, setups)
    finally:
        ttnn.close_device(dev)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", help="a directory holding the base tree's ttflashdecode package")
    p.add_argument("--calls", type=int, default=3000, help="timed calls per row")
    p.add_argument("--package-only", action="store_true", help="only the rows with generic_op a no-op")
    p.add_argument("--exp-approx", action="store_true", help="the call with the approximate exp (upstream's default)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.base, args.calls, args.package_only, args.exp_approx)
    sys.path.insert(0, str(HERE))
    import mock_env  # noqa: PLC0415

    command = [sys.executable, __file__, str(Path(args.base).resolve()), "--child", "--calls", str(args.calls)]
    command += ["--package-only"] if args.package_only else []
    command += ["--exp-approx"] if args.exp_approx else []
    return mock_env.run_on_n150(command, "ttfd_host_cost_ab_")


if __name__ == "__main__":
    sys.exit(main())
