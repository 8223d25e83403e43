"""The card path's host cost per decode call on a cache hit, through the real ``ttnn.generic_op`` on a mock device.

Measured in the mock worker's process (mock_worker.py --host-cost). A mock cluster executes nothing, so what is timed
is host work alone: the op's fast path (the call's key, the cached plan and descriptor), the output's allocation, the
position upload when positions come from the host, and ttnn's generic_op (its program-cache lookup by the
descriptor's hash, the copy of the descriptor's runtime args into the cached program, the enqueue, which a mock
device drops). The 30 us goal is issue 27's.

How: every row is timed in blocks of ``BLOCK`` calls, the rows taking turns block by block (so a shared machine's
load falls on all of them alike), after two warm-up calls per row (the first builds and JIT-compiles the program).
Per row: the median and the 10th percentile of the wall-clock times of its ``repeats`` calls (on a shared machine the
low percentile is the nearer to an idle machine's figure: host work is the same every call, other processes' load
only adds to it), and the median over its blocks of the process's CPU time per call (all of ttnn's threads; it runs
above wall time when ttnn's own threads work alongside). The machine's load average is recorded before and after.

Rows "before": the same calls with the descriptor launched without ``custom_program_hash`` (what the package did
before ``backend.seal_program_hash``: ttnn then walks the whole descriptor on every call to find the cached program);
the package's caches are rebuilt at each switch, outside the timed calls.

    .venv/bin/python tests/runtime/host_cost.py      # prints the table (runs the mock worker; no pytest session)
"""

from __future__ import annotations

import os
import statistics
import sys
import time

GOAL_US = 30.0
BLOCK = 30


def measure(dev, repeats: int = 300) -> dict:
    """Llama-3.1-8B's decode step on one N150 chip (batch 8, 32 q / 8 kv heads, head_dim 128, bfloat8_b cache of
    1024 positions, device positions), the op called as a decode loop calls it."""
    import torch

    import ttflashdecode
    from ttemu.ttnn_env import import_ttnn
    from ttflashdecode import backend as backend_module
    from ttflashdecode.backend import backend_for
    from ttflashdecode.config import ProgramConfig
    from ttflashdecode.ops.decode import args as kernel_args
    from ttflashdecode.ops.decode.args import ComputeCommonArgs, ReaderCommonArgs, WriterCommonArgs
    from ttflashdecode.ops.descriptors import runtime_arg_names

    ttnn = import_ttnn()
    gen = torch.Generator().manual_seed(27)
    b, nq, nkv, d, S = 8, 32, 8, 128, 1024
    grid = dev.compute_with_storage_grid_size()

    def up(x, dtype, layout=ttnn.TILE_LAYOUT):
        host = ttnn.from_torch(x, dtype=dtype, layout=layout)
        return ttnn.to_device(host, dev, memory_config=ttnn.DRAM_MEMORY_CONFIG)

    q = up(torch.randn(1, b, nq, d, generator=gen), ttnn.bfloat16)
    k = up(torch.randn(b, nkv, S, d, generator=gen), ttnn.bfloat8_b)
    v = up(torch.randn(b, nkv, S, d, generator=gen), ttnn.bfloat8_b)
    pos = up(torch.arange(b, dtype=torch.int32) * 100, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
    out = ttnn.allocate_tensor_on_device(
        ttnn.Shape([1, b, nq, d]), ttnn.bfloat16, ttnn.TILE_LAYOUT, dev, ttnn.DRAM_MEMORY_CONFIG
    )
    config = ProgramConfig(compute_with_storage_grid_size=(grid.x, grid.y), k_chunk_size=128)
    host_positions = [int(p) for p in torch.arange(b) * 100]
    op = ttflashdecode.scaled_dot_product_attention_decode
    upstream = ttnn.transformer

    # Like for like with upstream's op: the same call in ttnn's own types (ttnn.SDPAProgramConfig, a compute kernel
    # config) to ttnn.transformer's op and to ours. Upstream's op has no output_tensor argument: it allocates its
    # output on every call, so ours allocates too. The paged pair is tt_transformers' decode call (its
    # SDPA_DECODE_PROGCFG chunk sizes, q height-sharded one user per core, a device page table and positions, a DRAM
    # output: upstream refuses a sharded output for GQA) over the same 1024 positions per user in blocks of 64.
    sdpa_config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=grid, q_chunk_size=0, k_chunk_size=128, exp_approx_mode=False
    )
    hifi4 = ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=False, fp32_dest_acc_en=False, packer_l1_acc=False
    )
    block = 64
    blocks = b * S // block
    user_cores = ttnn.num_cores_to_corerangeset(b, grid, row_wise=True)
    k_paged = up(torch.randn(blocks, nkv, block, d, generator=gen), ttnn.bfloat8_b)
    v_paged = up(torch.randn(blocks, nkv, block, d, generator=gen), ttnn.bfloat8_b)
    page_table = up(
        torch.randperm(blocks, generator=gen).reshape(b, S // block).to(torch.int32), ttnn.int32, ttnn.ROW_MAJOR_LAYOUT
    )
    paged_config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=grid, q_chunk_size=256, k_chunk_size=256, exp_approx_mode=False
    )
    paged_op = ttflashdecode.paged_scaled_dot_product_attention_decode
    scale = d**-0.5
    q_sharded = None  # made for the paged rows only (an L1 tensor: every L1 line read then converts a block table)
    l1_reader, witness = backend_for(dev).l1_line_reader(), [None]  # the fast path's reader; q_sharded's address
    # A decode loop whose op allocates an L1 height-sharded output (one user's rows per core) and holds it until the
    # next step's call returns (``out = op(...)``): the two live outputs take turns as the lowest L1 buffer.
    l1_output = ttnn.MemoryConfig(
        ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
        ttnn.BufferType.L1,
        ttnn.ShardSpec(user_cores, [32, d], ttnn.ShardOrientation.ROW_MAJOR),
    )
    held = [None]  # the previous step's output

    def l1_output_call():
        return op(q, k, v, cur_pos_tensor=pos, program_config=config, memory_config=l1_output)

    calls = {
        # a decode loop's call: device positions, the output allocated by the op
        "op_device_positions": lambda: op(q, k, v, cur_pos_tensor=pos, program_config=config),
        # the same with the output passed in (no allocation)
        "op_device_positions_output_given": lambda: op(
            q, k, v, cur_pos_tensor=pos, program_config=config, output_tensor=out
        ),
        # host positions: uploaded by the op every call
        "op_host_positions": lambda: op(q, k, v, cur_pos=host_positions, program_config=config),
        # upstream's arguments (ttnn's config types), the output allocated by the op: the pair of upstream's row
        "op_upstream_arguments": lambda: op(
            q, k, v, cur_pos_tensor=pos, program_config=sdpa_config, compute_kernel_config=hifi4
        ),
    }
    upstream_calls = {
        "upstream_op": lambda: upstream.scaled_dot_product_attention_decode(
            q, k, v, cur_pos_tensor=pos, program_config=sdpa_config, compute_kernel_config=hifi4
        ),
    }

    # The launched descriptor (captured from the op's own launch) for the generic_op rows.
    captured = {}
    real, real_mesh_pd = ttnn.generic_op, ttnn.MeshProgramDescriptor

    def capture(io, program):
        captured["args"] = (io, program)
        return real(io, program)

    def capture_mesh_pd(ranges):
        # ttnn.open_device gives a 1x1 MeshDevice: the op launches a MeshProgramDescriptor around one program
        captured["range"], captured["program"] = next(iter(ranges.items()))
        return real_mesh_pd(ranges)

    def launch_of(sealed: bool):
        """The op's (io tensors, launchable, program) as it launches them, its descriptor sealed or not."""
        seal = backend_module.seal_program_hash
        if not sealed:
            backend_module.seal_program_hash = lambda program: None
        ttnn.generic_op, ttnn.MeshProgramDescriptor = capture, capture_mesh_pd
        try:
            ttflashdecode.clear_program_cache()  # the launchable is cached by the fast path: rebuild it, captured
            calls["op_device_positions_output_given"]()
        finally:
            ttnn.generic_op, ttnn.MeshProgramDescriptor = real, real_mesh_pd
            backend_module.seal_program_hash = seal
        io, launchable = captured["args"]
        return io, launchable, captured.get("program", launchable)

    io, sealed_launchable, sealed_program = launch_of(sealed=True)
    _, plain_launchable, plain_program = launch_of(sealed=False)
    structural = ttnn.compute_program_descriptor_hash(plain_program)

    # What each part of the descriptor costs generic_op per call: the op's descriptor rebuilt and cut down in one
    # respect (a mock device runs nothing, so a cut-down program launches as well as the real one; each is its own
    # program under its own key, JIT-built by the stand-in at its first launch).
    def variant(cut):
        _, _, program = launch_of(sealed=False)
        cut(program)
        backend_module.seal_program_hash(program)
        return ttnn.MeshProgramDescriptor({captured["range"]: program})

    def edit_kernels(program, edit):
        kernels = list(program.kernels)
        for kernel in kernels:
            edit(kernel)
        program.kernels = kernels

    # each kernel's own compile-time args, in order (its TensorAccessorArgs follow them)
    own_ct_args = {
        "reader": kernel_args.READER_ARGS,
        "compute": kernel_args.COMPUTE_ARGS,
        "writer": kernel_args.WRITER_ARGS,
    }

    def own_names(kernel) -> tuple[str, ...]:
        return next(names for role, names in own_ct_args.items() if role in str(kernel.kernel_source))

    def no_compile_time_args(program):
        def drop(kernel):
            kernel.compile_time_args = []
            kernel.named_compile_time_args = []

        edit_kernels(program, drop)

    def named_args(program):
        """Each kernel's own compile-time args passed by name, as the package passed them before they were positional
        (the TensorAccessorArgs stay positional)."""

        def name(kernel):
            names, values = own_names(kernel), [int(v) for v in kernel.compile_time_args]
            kernel.named_compile_time_args = list(zip(names, values[: len(names)], strict=True))
            kernel.compile_time_args = values[len(names) :]

        edit_kernels(program, name)

    def previous_layout(program):
        """The descriptor as the package built it before its kernels took their work from a table in their common
        runtime args: one CoreRange per core in every core range set, and per-core runtime args on every core (the
        reader's 7 addresses and 4 work values, the compute kernel's 4, the writer's address, 4 work values and its
        tree parent). A mock device runs nothing, so the values are placeholders of the right count."""

        def cores_of(ranges):
            return [
                ttnn.CoreCoord(x, y)
                for r in ranges.ranges()
                for y in range(r.start.y, r.end.y + 1)
                for x in range(r.start.x, r.end.x + 1)
            ]

        def singles_of(cores):
            return ttnn.CoreRangeSet([ttnn.CoreRange(c, c) for c in cores])

        kernels = list(program.kernels)
        # each kernel on its own cores (a DRAM-bound plan's NoC 1 reader and writer are kernels of their own)
        per_core_args = {"reader": 11, "compute": 4, "writer": 7}
        for kernel in kernels:
            cores = cores_of(kernel.core_ranges)
            count = next(n for role, n in per_core_args.items() if role in str(kernel.kernel_source))
            kernel.core_ranges = singles_of(cores)
            kernel.runtime_args = [(core, list(range(count))) for core in cores]
        singles = singles_of(cores_of(program.cbs[0].core_ranges))
        program.kernels = kernels
        cbs = list(program.cbs)
        for cb in cbs:
            cb.core_ranges = singles
        program.cbs = cbs
        semaphores = list(program.semaphores)
        for semaphore in semaphores:
            semaphore.core_ranges = singles
        program.semaphores = semaphores

    def no_common_runtime_args(program):
        edit_kernels(program, lambda kernel: setattr(kernel, "common_runtime_args", []))

    def no_cbs(program):
        program.cbs = []

    def no_work_table(program):
        """The common runtime args without the work tables (each kernel's, after its own fields): what they cost."""
        own = {"reader": ReaderCommonArgs, "compute": ComputeCommonArgs, "writer": WriterCommonArgs}

        def drop(kernel):
            kind = next(k for role, k in own.items() if role in str(kernel.kernel_source))
            names = own_names(kernel)
            shards = int(kernel.compile_time_args[names.index("work_args_at")]) if "work_args_at" in names else 0
            at = shards + len(runtime_arg_names(kind))
            kernel.common_runtime_args = list(kernel.common_runtime_args)[:at]

        edit_kernels(program, drop)

    variants = {
        "no_compile_time_args": variant(no_compile_time_args),
        "named_args": variant(named_args),
        "previous_layout": variant(previous_layout),
        "no_common_runtime_args": variant(no_common_runtime_args),
        "no_cbs": variant(no_cbs),
        "no_work_table": variant(no_work_table),
    }
    for launchable in variants.values():
        real(io, launchable)  # built and JIT-compiled once, outside the timed calls

    # A one-core, one-kernel program: the floor of generic_op's per-call cost on this machine.
    core = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 0))])
    tiny = ttnn.ProgramDescriptor(
        kernels=[
            ttnn.KernelDescriptor(
                kernel_source="void kernel_main() {}",
                source_type=ttnn.KernelDescriptor.SourceType.SOURCE_CODE,
                core_ranges=core,
                runtime_args=[(ttnn.CoreCoord(0, 0), [0])],
                config=ttnn.ReaderConfigDescriptor(),
            )
        ],
        semaphores=[],
        cbs=[],
    )
    backend_module.seal_program_hash(tiny)
    tiny_launchable = ttnn.MeshProgramDescriptor({captured["range"]: tiny})
    tiny_io = [q, out]

    # name -> (mode, call): mode "sealed" / "unsealed" is how the op seals the descriptors it builds (None: the row
    # does not go through the op)
    rows = {name: ("sealed", fn) for name, fn in calls.items()}
    rows["op_device_positions_output_given_before"] = ("unsealed", calls["op_device_positions_output_given"])
    rows.update({name: (None, fn) for name, fn in upstream_calls.items()})
    # The paged pair is timed after the other rows, with q height-sharded in L1 alive: an L1 tensor makes the fast
    # path's L1 line read a block table (the lowest-L1 row is timed again then), which the other rows do not pay.
    paged_rows = {
        "op_paged_upstream_arguments": (
            "sealed",
            lambda: paged_op(
                q_sharded,
                k_paged,
                v_paged,
                page_table,
                cur_pos_tensor=pos,
                scale=scale,
                program_config=paged_config,
                compute_kernel_config=hifi4,
                memory_config=ttnn.DRAM_MEMORY_CONFIG,
            ),
        ),
        "upstream_paged_op": (
            None,
            lambda: upstream.paged_scaled_dot_product_attention_decode(
                q_sharded,
                k_paged,
                v_paged,
                cur_pos_tensor=pos,
                page_table_tensor=page_table,
                scale=scale,
                program_config=paged_config,
                compute_kernel_config=hifi4,
                memory_config=ttnn.DRAM_MEMORY_CONFIG,
            ),
        ),
        # the paged hit's parts, each alone (q's L1 shards alive)
        "op_paged_launch_no_op": ("sealed", lambda: paged_launch_no_op()),
        "signature_paged_alone": (None, lambda: pipeline_module.call_signature(*paged_signed)),
        "allocate_from_spec_alone": (None, lambda: allocate_from_spec(out_spec, dev)),
        "lowest_l1_alone_l1_tensor": (None, backend_for(dev).lowest_l1_buffer_address),
        # as the paged call's hits read it: q's shards (the lowest L1 buffer) the witness, its address from the key
        "lowest_l1_witness_l1_tensor": (None, lambda: l1_reader(witness[0])),
        "paged_ttnn_calls_alone": (None, lambda: paged_ttnn_calls()),
    }
    # Timed last, on its own (q's L1 shards still alive, as in tt_transformers' loop): the held outputs are L1 buffers
    # that every other row's L1 line would otherwise read too.
    l1_output_rows = {"op_l1_output_held": ("sealed", lambda: held.__setitem__(0, l1_output_call()))}

    # what a hit calls: the C++ functions under ttnn's Python op wrappers (Backend.output_allocator, card_launcher)
    allocate_from_spec = ttnn.allocate_tensor_on_device.function
    launch_itself = ttnn.generic_op.function
    out_spec = out.spec  # the paged output's spec too ([1, b, n_q_heads, head_dim] bfloat16 tiles in DRAM)
    paged_signed = []  # (the paged call's request, its tensors), made once q_sharded exists

    memory_view, l1_buffers = ttnn._ttnn.device.GetMemoryView, ttnn.BufferType.L1

    def paged_ttnn_calls():
        """The ttnn calls the paged call's hit makes, in one flat function without the package's Python around them
        (its frames, the key and check it builds, the lookups, the comparisons): each tensor's address, device and
        spec; the SDPAProgramConfig's and the compute config's fields; the L1 allocator's memory view and the three
        totals the witness reads; the output allocated from its spec (dropped) and its address. What the paged call
        with generic_op a no-op takes beyond it is the package's own Python."""
        facts = [(t.buffer_address(), t.device(), t.spec) for t in (q_sharded, k_paged, v_paged, pos, page_table)]
        c, h = paged_config, hifi4
        grid = c.compute_with_storage_grid_size
        config = (grid.x, grid.y, c.q_chunk_size, c.k_chunk_size, c.exp_approx_mode, c.max_cores_per_head_batch)
        later = (c.sub_core_grids, c.max_k_splits, c.matmul_math_fidelity, c.segmented_accumulation)
        compute = (h.math_fidelity, h.math_approx_mode, h.fp32_dest_acc_en)
        view = memory_view(dev, l1_buffers)
        allocated, free = view.total_bytes_allocated_per_bank, view.total_bytes_free_per_bank
        totals = (allocated, free, view.largest_contiguous_bytes_free_per_bank)
        return facts, config, later, compute, totals, allocate_from_spec(out_spec, dev).buffer_address()

    def paged_launch_no_op():
        """The paged call's own work on a hit (its output allocated and dropped), generic_op replaced by a no-op."""
        ttnn.generic_op = lambda io, program: None
        try:
            paged_rows["op_paged_upstream_arguments"][1]()
        finally:
            ttnn.generic_op = real

    def package_alone():
        """The op's own work on a hit: the output-given call with generic_op replaced by a no-op."""
        ttnn.generic_op = lambda io, program: None
        try:
            calls["op_device_positions_output_given"]()
        finally:
            ttnn.generic_op = real

    def package_alone_allocating():
        """The op's own work on a hit that allocates its output (the output dropped at once, as a decode step drops
        the previous step's), generic_op replaced by a no-op."""
        ttnn.generic_op = lambda io, program: None
        try:
            calls["op_device_positions"]()
        finally:
            ttnn.generic_op = real

    def parts_in_sequence():
        """The package's own work (generic_op a no-op) and then generic_op's C++ op alone on the same descriptor (as
        a hit launches it), in one timed call: against the op's own row it shows what the op costs beyond the sum of
        its two parts."""
        package_alone()
        launch_itself(io, sealed_launchable)

    from ttflashdecode.ops.decode import api as op_module
    from ttflashdecode.ops.decode import pipeline as pipeline_module
    from ttflashdecode.ops.decode.request import DecodeRequest

    # the request "op_device_positions_output_given" makes (built once: the row times the signature alone)
    signed = DecodeRequest(q=q, k=k, v=v, cur_pos_tensor=pos, program_config=config, output_tensor=out)
    rows["op_output_given_launch_no_op"] = ("sealed", package_alone)
    rows["package_then_generic_op"] = ("sealed", parts_in_sequence)
    rows["signature_alone"] = (None, lambda: pipeline_module.call_signature(signed, signed.tensors))

    def request_alone():
        """The public function up to the run: its call and the DecodeRequest it builds by keyword, _decode a no-op
        (what the arguments' travel as one object costs a call)."""
        decode = op_module.run_request
        op_module.run_request = lambda request, return_stats: None
        try:
            calls["op_device_positions_output_given"]()
        finally:
            op_module.run_request = decode

    rows["request_alone"] = (None, request_alone)
    rows["lowest_l1_alone"] = (None, backend_for(dev).lowest_l1_buffer_address)
    rows["op_output_allocated_launch_no_op"] = ("sealed", package_alone_allocating)
    out_shape = ttnn.Shape([1, b, nq, d])
    rows["allocate_tensor_on_device_alone"] = (
        None,
        lambda: ttnn.allocate_tensor_on_device(
            out_shape, ttnn.bfloat16, ttnn.TILE_LAYOUT, dev, ttnn.DRAM_MEMORY_CONFIG
        ),
    )
    rows.update(
        {
            "generic_op_alone": (None, lambda: real(io, sealed_launchable)),
            "generic_op_function_alone": (None, lambda: launch_itself(io, sealed_launchable)),
            "generic_op_alone_before": (None, lambda: real(io, plain_launchable)),
            "compute_program_descriptor_hash_before": (
                None,
                lambda: ttnn.compute_program_descriptor_hash(plain_program),
            ),
            "generic_op_one_core_program": (None, lambda: real(tiny_io, tiny_launchable)),
            "generic_op_no_compile_time_args": (None, lambda: real(io, variants["no_compile_time_args"])),
            "generic_op_named_args": (None, lambda: real(io, variants["named_args"])),
            "generic_op_previous_layout": (None, lambda: real(io, variants["previous_layout"])),
            "generic_op_no_common_runtime_args": (None, lambda: real(io, variants["no_common_runtime_args"])),
            "generic_op_no_cbs": (None, lambda: real(io, variants["no_cbs"])),
            "generic_op_no_work_table": (None, lambda: real(io, variants["no_work_table"])),
        }
    )
    seal, mode = backend_module.seal_program_hash, {"now": None}
    wall = {name: [] for name in (*rows, *paged_rows, *l1_output_rows)}
    cpu = {name: [] for name in wall}

    def switch(to):
        """Make the op build its descriptors ``to`` ("sealed" / "unsealed"): its caches are dropped and every row of
        that mode is called twice (rebuilt, launched once), outside the timed calls."""
        if to is None or to == mode["now"]:
            return
        backend_module.seal_program_hash = seal if to == "sealed" else (lambda program: None)
        ttflashdecode.clear_program_cache()
        for row_mode, fn in rows.values():
            if row_mode == to:
                fn(), fn()
        mode["now"] = to

    cache_entries = []  # ttnn's program-cache entries before and after each set's timed calls (after warm-up)

    def time_rows(timed: dict) -> None:
        for row_mode, fn in timed.values():
            switch(row_mode)
            fn(), fn()
        cache_entries.append(dev.num_program_cache_entries())
        for _ in range(max(1, repeats // BLOCK)):
            for name, (row_mode, fn) in timed.items():
                switch(row_mode)
                samples = wall[name]
                start_cpu = time.process_time_ns()
                for _ in range(BLOCK):
                    t0 = time.perf_counter_ns()
                    fn()
                    samples.append(time.perf_counter_ns() - t0)
                cpu[name].append((time.process_time_ns() - start_cpu) / BLOCK)
        cache_entries.append(dev.num_program_cache_entries())

    try:
        load_before = os.getloadavg()
        time_rows(rows)
        q_sharded = ttnn.to_device(
            ttnn.from_torch(torch.randn(1, b, nq, d, generator=gen), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT),
            dev,
            memory_config=ttnn.MemoryConfig(
                ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
                ttnn.BufferType.L1,
                ttnn.ShardSpec(user_cores, [32, d], ttnn.ShardOrientation.ROW_MAJOR),
            ),
        )
        witness[0] = q_sharded.buffer_address()
        paged_request = DecodeRequest(
            q=q_sharded,
            k=k_paged,
            v=v_paged,
            page_table=page_table,
            cur_pos_tensor=pos,
            scale=scale,
            program_config=paged_config,
            compute_kernel_config=hifi4,
            memory_config=ttnn.DRAM_MEMORY_CONFIG,
            paged=True,
        )
        paged_signed[:] = (paged_request, paged_request.tensors)
        time_rows(paged_rows)
        time_rows(l1_output_rows)
        load_after = os.getloadavg()
        held[0] = None
        ttnn.deallocate(q_sharded)
    finally:
        backend_module.seal_program_hash = seal

    m = {name: statistics.median(s) / 1000.0 for name, s in wall.items()}
    c = {name: statistics.median(s) / 1000.0 for name, s in cpu.items()}
    p10 = {name: statistics.quantiles(s, n=10)[0] / 1000.0 for name, s in wall.items()}
    for table in (m, c, p10):
        # a hit launches generic_op's C++ op itself (Backend.card_launcher)
        table["package_share_output_given"] = (
            table["op_device_positions_output_given"] - table["generic_op_function_alone"]
        )

    # The fast path's L1 line (Backend.lowest_l1_buffer_address, from the allocator's memory view) against every
    # L1 buffer ttnn reports, without an L1 buffer and with an interleaved L1 tensor alive.
    def reported_l1():
        found = [int(x.address) for x in ttnn._ttnn.reports.get_buffers(dev) if x.buffer_type == ttnn.BufferType.L1]
        return min(found) if found else None

    no_l1 = {"backend_no_l1": backend_for(dev).lowest_l1_buffer_address(), "reports_no_l1": reported_l1()}
    l1 = [
        ttnn.to_device(
            ttnn.from_torch(torch.zeros(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT),
            dev,
            memory_config=ttnn.L1_MEMORY_CONFIG,
        )
    ]
    l1_line = {"backend": backend_for(dev).lowest_l1_buffer_address(), "reports": reported_l1(), **no_l1}
    del l1
    return {
        "shape": dict(batch=b, n_q_heads=nq, n_kv_heads=nkv, head_dim=d, kv_len=S, kv_dtype="bfloat8_b"),
        "repeats": len(next(iter(wall.values()))),
        "block": BLOCK,
        "goal_us": GOAL_US,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "cpus": os.cpu_count(),
        "median_us": m,
        "cpu_median_us": c,
        "p10_us": p10,
        "l1_line": l1_line,
        # ttnn's program-cache entries before and after the timed calls of the rows, of the paged rows and of the L1
        # output's row: each pair equal when every timed call (upstream's op's among them) was a program-cache hit
        "program_cache_entries": cache_entries,
        "program_hash": {
            "sealed": sealed_program.custom_program_hash,
            "unsealed": plain_program.custom_program_hash,
            "structural": structural,
        },
    }


ROW_LABELS = {
    "op_device_positions_output_given": "op, device positions, output given",
    "op_device_positions_output_given_before": "  the same, descriptor without custom_program_hash (before)",
    "op_device_positions": "op, device positions, output allocated by the op",
    "op_host_positions": "op, host positions (uploaded every call)",
    "op_upstream_arguments": "op, upstream's arguments (ttnn.SDPAProgramConfig, compute config), output allocated",
    "upstream_op": "  upstream's `ttnn.transformer.scaled_dot_product_attention_decode`, the same arguments",
    "op_paged_upstream_arguments": "op, paged, tt_transformers' call (q height-sharded, DRAM output), output allocated",
    "upstream_paged_op": "  upstream's `ttnn.transformer.paged_scaled_dot_product_attention_decode`, the same call",
    "op_paged_launch_no_op": "  the paged call with generic_op replaced by a no-op (the package's own work)",
    "signature_paged_alone": "  of it: the paged call's fast-path signature (pipeline.call_signature)",
    "allocate_from_spec_alone": "  of it: the output allocated from its TensorSpec, as a hit does (dropped at once)",
    "lowest_l1_alone_l1_tensor": "  the lowest live L1 buffer with q's L1 shards alive (timed with the paged pair)",
    "lowest_l1_witness_l1_tensor": "  the same, q's shards the witness (the paged call's hit: the allocator's totals)",
    "paged_ttnn_calls_alone": "  the paged hit's ttnn calls alone (reads, memory view, allocation), no package Python",
    "op_l1_output_held": "op, L1 height-sharded output allocated by the op, held to the next call (q's shards alive)",
    "generic_op_alone": "`ttnn.generic_op` alone on the op's descriptor",
    "generic_op_function_alone": "  the same, the C++ op under ttnn's Python op wrapper (what a hit launches)",
    "generic_op_alone_before": "  the same, descriptor without custom_program_hash (before)",
    "compute_program_descriptor_hash_before": "`ttnn.compute_program_descriptor_hash` walking the descriptor",
    "generic_op_one_core_program": "`ttnn.generic_op` on a one-core, one-kernel program (its floor)",
    "generic_op_no_compile_time_args": "  the op's descriptor without its compile-time args",
    "generic_op_named_args": "  the op's descriptor with each kernel's own compile-time args named (as before)",
    "generic_op_previous_layout": "  the op's descriptor laid out as before (per-core runtime args, a range a core)",
    "generic_op_no_common_runtime_args": "  the op's descriptor without its common runtime args (the work table)",
    "generic_op_no_cbs": "  the op's descriptor without its circular buffers",
    "generic_op_no_work_table": "  the op's descriptor without the work table at the end of its common runtime args",
    "op_output_given_launch_no_op": "op, output given, generic_op replaced by a no-op (the package's own work)",
    "package_share_output_given": "op, output given, minus generic_op's C++ op alone",
    "package_then_generic_op": "  the package's own work then generic_op's C++ op alone, in one timed call",
    "signature_alone": "  of the package's work: the call's fast-path signature (pipeline.call_signature)",
    "request_alone": "  of the package's work: the public function building its DecodeRequest (run_request a no-op)",
    "lowest_l1_alone": "  of the package's work: the lowest live L1 buffer (Backend.lowest_l1_buffer_address)",
    "op_output_allocated_launch_no_op": "op, output allocated by the op, generic_op replaced by a no-op",
    "allocate_tensor_on_device_alone": "`ttnn.allocate_tensor_on_device` of the output alone (dropped at once)",
}


def table(result: dict) -> str:
    """The result as the markdown table docs/RUNTIME.md shows."""
    m, c, p10 = result["median_us"], result["cpu_median_us"], result["p10_us"]
    lines = [
        "| call (cache hit) | wall median (us) | wall 10th percentile (us) | CPU median (us) |",
        "|---|---|---|---|",
    ]
    for key, label in ROW_LABELS.items():
        lines.append(f"| {label} | {m[key]:.1f} | {p10[key]:.1f} | {c[key]:.1f} |")
    load = ", ".join(f"{x:.1f}" for x in (*result["load_average_before"][:1], *result["load_average_after"][:1]))
    lines.append(
        f"\n{result['repeats']} calls per row in blocks of {result['block']}; load average (1 min) before, "
        f"after: {load} on {result['cpus']} CPUs; goal {result['goal_us']:.0f} us"
    )
    return "\n".join(lines)


def main() -> int:
    """Run the mock worker's host-cost entry alone (tests/runtime/mock_env.py) and print the table."""
    import json
    import tempfile
    from pathlib import Path

    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    import mock_env  # noqa: PLC0415

    reason = mock_env.unavailable()
    if reason:
        print(f"cannot run the mock runtime: {reason}")
        return 1
    work = Path(tempfile.mkdtemp(prefix="ttfd_host_cost_"))
    result = mock_env.run_worker(mock_env.prepare(work), "n150", work / "host_cost.json", host_cost=True)
    print(table(result))
    print(json.dumps({k: result[k] for k in ("l1_line", "program_hash", "program_cache_entries")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
