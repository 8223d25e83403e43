"""Every program the package builds, called as a user on a card calls it: ttnn tensors on a ttnn device.

Each entry runs one public op (or a few, for a decode step's update + attention) on a real ttnn device or MeshDevice,
so the op takes the card path: its descriptors go through ``ttnn.generic_op`` (a ``ttnn.MeshProgramDescriptor`` on a
mesh). On a mock cluster nothing executes, so outputs are not checked here (the emulator tests check values); what
is checked is that ttnn accepts the program (tests/runtime/test_mock_runtime.py). Inputs are seeded.

``CATALOGUE`` maps a name to (board, function(ctx)); ``ctx`` is a :class:`Ctx`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import decode_harness as H
import ttflashdecode
from ttemu.ttnn_env import import_ttnn
from ttflashdecode.config import ProgramConfig

ttnn = import_ttnn()


@dataclass
class Ctx:
    device: Any  # a ttnn device, or a MeshDevice for the mesh entries
    grid: tuple[int, int]
    gen: torch.Generator

    def _mapper(self, mesh_dim: int | None) -> dict:
        if mesh_dim is not None:
            return {"mesh_mapper": ttnn.ShardTensorToMesh(self.device, dim=mesh_dim)}
        if isinstance(self.device, ttnn.MeshDevice):
            return {"mesh_mapper": ttnn.ReplicateTensorToMesh(self.device)}
        return {}

    def _upload(self, host, memory_config):
        # Tiled and converted on the host, then written: from_torch(device=...) would run ttnn's own tilize /
        # typecast programs on the device, whose grid on the mock N300 / T3K chips (8x8) is larger than the
        # chips' worker grid (8x7), and whose JIT builds would mix with ours in the stand-in's log.
        mc = ttnn.DRAM_MEMORY_CONFIG if memory_config is None else memory_config
        return ttnn.to_device(host, self.device, memory_config=mc)

    def tile(self, x, dtype="bfloat16", memory_config=None, mesh_dim: int | None = None):
        dtype = getattr(ttnn, dtype) if isinstance(dtype, str) else dtype
        host = ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, **self._mapper(mesh_dim))
        return self._upload(host, memory_config)

    def int32(self, values, mesh_dim: int | None = None):
        host = ttnn.from_torch(
            torch.as_tensor(values).to(torch.int32),
            dtype=ttnn.int32,
            layout=ttnn.ROW_MAJOR_LAYOUT,
            **self._mapper(mesh_dim),
        )
        return self._upload(host, None)

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.gen)


def _case(**kw) -> Callable[[Ctx], None]:
    """A decode_harness case through the op (its golden is computed but not compared: nothing runs on a mock)."""

    def run(ctx: Ctx) -> None:
        case = H.DecodeCase(grid=ctx.grid, **kw)

        def to_device(x, dtype, **mem):
            return ctx.tile(x, dtype, **mem)

        H.run_case(ctx.device, case, to_device=to_device, to_torch=lambda t: torch.zeros(tuple(t.shape)))

    return run


BASE = dict(batch=2, n_q_heads=8, n_kv_heads=2, head_dim=64, kv_len=256, cur_pos=(100, 200), k_chunk_size=64)


def _with(**kw):
    return _case(**{**BASE, **kw})


def _then_hit(call) -> None:
    """``call(output_tensor)`` as a decode loop makes it: once without an output, then twice with the first call's
    output (and no memory_config or dtype: the output's are used); the second call is planned and launched by the full
    path, the third is a fast-path hit. The worker checks that the hit hands ``ttnn.generic_op`` what the full path
    did (programs listed in :data:`HIT_CHECKED`)."""
    out = call(None)
    call(out)
    call(out)


def _device_positions(ctx: Ctx) -> None:
    """cur_pos as a device tensor (one program for every step), bfloat8_b cache, exact exp."""
    q, k, v = ctx.randn(1, 2, 8, 64), ctx.randn(2, 2, 256, 64), ctx.randn(2, 2, 256, 64)
    q, k, v, pos = ctx.tile(q), ctx.tile(k, "bfloat8_b"), ctx.tile(v, "bfloat8_b"), ctx.int32([17, 255])
    _then_hit(
        lambda out: ttflashdecode.scaled_dot_product_attention_decode(
            q,
            k,
            v,
            cur_pos_tensor=pos,
            program_config=H.decode_config(64, cores=4),
            compute_kernel_config=H.hifi4(),
            output_tensor=out,
        )
    )


def _mask_sinks_bf8_out(ctx: Ctx) -> None:
    """Non-causal with an attention mask (the op's own constant positions), sinks and a bfloat8_b output (the decode
    program and the tile convert program on every call)."""
    q, k, v = ctx.randn(1, 2, 8, 64), ctx.randn(2, 2, 256, 64), ctx.randn(2, 2, 256, 64)
    q, k, v = ctx.tile(q), ctx.tile(k, "bfloat8_b"), ctx.tile(v, "bfloat8_b")
    mask, sink = ctx.tile(ctx.randn(2, 1, 1, 256)), ctx.tile(ctx.randn(1, 8))
    _then_hit(
        lambda out: ttflashdecode.scaled_dot_product_attention_decode(
            q,
            k,
            v,
            is_causal=False,
            attn_mask=mask,
            attention_sink=sink,
            program_config=H.decode_config(64, cores=4),
            dtype=None if out is not None else ttnn.bfloat8_b,
            output_tensor=out,
        )
    )


def _tt_transformers_paged(ctx: Ctx) -> None:
    """Llama-3.1-8B as tt_transformers calls it: Q height-sharded one user per core, paged cache with device page
    table and positions, ttnn.SDPAProgramConfig, height-sharded output."""
    batch, n_q, n_kv, d, block, per_user = 2, 32, 8, 128, 64, 4
    blocks = batch * per_user + 2
    table = torch.randperm(blocks, generator=ctx.gen)[: batch * per_user].reshape(batch, per_user)
    k, v = ctx.randn(blocks, n_kv, block, d), ctx.randn(blocks, n_kv, block, d)
    q = ctx.tile(ctx.randn(1, batch, n_q, d), memory_config=H.height_sharded(batch, [32, d]))
    k, v, table, pos = ctx.tile(k, "bfloat8_b"), ctx.tile(v, "bfloat8_b"), ctx.int32(table), ctx.int32([70, 200])
    _then_hit(
        lambda out: ttflashdecode.paged_scaled_dot_product_attention_decode(
            q,
            k,
            v,
            table,
            cur_pos_tensor=pos,
            scale=d**-0.5,
            program_config=H.sdpa_config(64),
            compute_kernel_config=H.hifi4(),
            output_tensor=out,
            memory_config=None if out is not None else H.height_sharded(batch, [32, d]),
        )
    )


def _l1_output_loop(ctx: Ctx) -> None:
    """A decode loop whose op allocates an L1 height-sharded output, the previous step's output dropped after the call
    (a model's ``x = op(...)``): the two live outputs take turns as the lowest L1 buffer on ttnn's own allocator. The
    fast path keeps both lines: after one full-path call per line (no L1 buffer, then each output's) every step must
    be a hit (raises otherwise, which the test reports as a rejection)."""
    from ttflashdecode.backend import backend_for
    from ttflashdecode.ops.decode.pipeline import DecodePipeline

    config = ProgramConfig(compute_with_storage_grid_size=ctx.grid, k_chunk_size=64)
    q, k, v = ctx.tile(ctx.randn(1, 2, 8, 64)), ctx.tile(ctx.randn(2, 2, 256, 64)), ctx.tile(ctx.randn(2, 2, 256, 64))
    pos, hits = ctx.int32([100, 200]), []
    run_hit = DecodePipeline.run_hit

    def counted(self, *args, **kwargs):
        hits.append(len(lines))
        return run_hit(self, *args, **kwargs)

    DecodePipeline.run_hit = counted
    try:
        lines, out = [], None
        for _ in range(6):
            lines.append(backend_for(ctx.device).lowest_l1_buffer_address())
            out = ttflashdecode.scaled_dot_product_attention_decode(  # noqa: F841 - the previous output dies here
                q, k, v, cur_pos_tensor=pos, memory_config=H.height_sharded(2, [32, 64]), program_config=config
            )
    finally:
        DecodePipeline.run_hit = run_hit
    assert lines[0] is None and len(set(lines[1:])) == 2, f"the case needs the line to alternate: {lines}"
    assert hits == [4, 5, 6], f"steps that took the fast path (1-based) {hits}, expected 4-6; L1 lines {lines}"


def _l1_line_witness(ctx: Ctx) -> None:
    """The card's L1 line reader with a witness (Backend.l1_line_reader: a live L1 buffer of the call lets it answer
    from the allocator's totals) against ttnn's own list of buffers, on ttnn's real allocator: first the layout the
    totals alone would misread (one free block on top, the witness at top - allocated, a buffer below it), which must
    be answered from the block table; then random allocations and frees of sharded and interleaved L1 tensors, every
    live tensor a witness after every step; then a decode loop's call whose witness is q
    (:func:`_l1_line_witness_miss`). Raises (a rejection in the test) on any wrong line, or when the totals never
    answered (the check would be vacuous)."""
    from ttflashdecode import backend as backend_module
    from ttflashdecode.backend import backend_for

    dev, l1 = ctx.device, ttnn.BufferType.L1
    reader = backend_for(dev).l1_line_reader()
    grid = dev.compute_with_storage_grid_size()
    every_core = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(grid.x - 1, grid.y - 1))])

    def rows(per_core: int, cores=every_core, count: int = grid.x * grid.y):
        """An L1 tensor of ``per_core`` 16-byte rows in every bank (ROW_MAJOR shards of 8 bfloat16)."""
        spec = ttnn.ShardSpec(cores, [per_core, 8], ttnn.ShardOrientation.ROW_MAJOR)
        mc = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, l1, spec)
        shape = ttnn.Shape([1, 1, per_core * count, 8])
        return ttnn.allocate_tensor_on_device(shape, ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT, dev, mc)

    def check(live: list) -> None:
        listed = [int(b.address) for b in ttnn._ttnn.reports.get_buffers(dev) if b.buffer_type == l1]
        want = min(listed) if listed else None
        got = [reader()] + [reader(t.buffer_address()) for t in live]
        assert set(got) == {want}, f"L1 line {got} (without a witness, then with each live tensor's), ttnn: {want}"

    answered = []
    totals = backend_module._l1_line_from_totals

    def counted(view, allocated):
        answered.append(totals(view, allocated))
        return answered[-1]

    backend_module._l1_line_from_totals = counted
    try:
        # top, then the middle, then the bottom X bytes of every bank; the top one freed: one free block (X bytes) on
        # top, the middle one's address is top - allocated, and the bottom one lies below it
        x = 16384
        top = rows(x // 16)
        view = ttnn.get_memory_view(dev, l1)
        middle = rows((view.total_bytes_free_per_bank - x) // 16)
        bottom = rows(x // 16)
        top_address = top.buffer_address() + x
        ttnn.deallocate(top)
        view = ttnn.get_memory_view(dev, l1)
        allocated, free = view.total_bytes_allocated_per_bank, view.total_bytes_free_per_bank
        assert middle.buffer_address() == top_address - allocated > bottom.buffer_address() and free == x, (
            "the case needs one free block on top and a witness at top - allocated above another buffer"
        )
        check([middle, bottom])
        assert answered == [False], f"the totals answered a layout they cannot tell apart: {answered}"
        for t in (middle, bottom):
            ttnn.deallocate(t)
        rng, live = torch.Generator().manual_seed(27), []
        for _ in range(200):
            if live and (len(live) > 12 or torch.rand(1, generator=rng).item() < 0.45):
                ttnn.deallocate(live.pop(int(torch.randint(len(live), (1,), generator=rng))))
            else:
                pick = int(torch.randint(3, (1,), generator=rng))
                size = int(torch.randint(1, 64, (1,), generator=rng)) * 32
                if pick == 0:
                    live.append(rows(size))
                elif pick == 1:
                    count = int(torch.randint(1, 9, (1,), generator=rng))
                    live.append(rows(size, ttnn.num_cores_to_corerangeset(count, grid, row_wise=True), count))
                else:
                    shape, mc = ttnn.Shape([1, 1, size, 32]), ttnn.L1_MEMORY_CONFIG  # interleaved
                    live.append(ttnn.allocate_tensor_on_device(shape, ttnn.bfloat16, ttnn.TILE_LAYOUT, dev, mc))
            check(live)
        for t in live:
            ttnn.deallocate(t)
        assert any(answered), "the totals never answered: the random layouts tested nothing of them"
    finally:
        backend_module._l1_line_from_totals = totals
    _l1_line_witness_miss(ctx)


def _l1_line_witness_miss(ctx: Ctx) -> None:
    """tt_transformers' paged call (q height-sharded in L1, its shards the lowest L1 buffer: the witness of its
    fast-path entry): after a hit, an L1 tensor allocated below q must send the next call down the full path, and the
    call after it hits again (the full path made the same plan there); freeing the tensor brings back a line the entry
    has seen, which hits at once. Raises (a rejection in the test) otherwise."""
    from ttflashdecode.ops.decode.pipeline import DecodePipeline

    batch, n_q, n_kv, d, block, per_user = 2, 32, 8, 128, 64, 4
    blocks = batch * per_user + 2
    table = torch.randperm(blocks, generator=ctx.gen)[: batch * per_user].reshape(batch, per_user)
    k, v = ctx.randn(blocks, n_kv, block, d), ctx.randn(blocks, n_kv, block, d)
    q = ctx.tile(ctx.randn(1, batch, n_q, d), memory_config=H.height_sharded(batch, [32, d]))
    k, v, table, pos = ctx.tile(k, "bfloat8_b"), ctx.tile(v, "bfloat8_b"), ctx.int32(table), ctx.int32([70, 200])
    calls, hits = [], []
    run_hit = DecodePipeline.run_hit

    def counted(self, *args, **kwargs):
        hits.append(len(calls))
        return run_hit(self, *args, **kwargs)

    def call():
        calls.append(1)
        ttflashdecode.paged_scaled_dot_product_attention_decode(
            q,
            k,
            v,
            table,
            cur_pos_tensor=pos,
            scale=d**-0.5,
            program_config=H.sdpa_config(64),
            compute_kernel_config=H.hifi4(),
            memory_config=ttnn.DRAM_MEMORY_CONFIG,
        )

    DecodePipeline.run_hit = counted
    try:
        call(), call()  # full, then a hit (q's shards the witness)
        below = ttnn.allocate_tensor_on_device(
            ttnn.Shape([1, 1, 32, 32]), ttnn.bfloat16, ttnn.TILE_LAYOUT, ctx.device, ttnn.L1_MEMORY_CONFIG
        )
        assert below.buffer_address() < q.buffer_address(), "the case needs an L1 tensor below q's shards"
        call(), call()  # the line moved: full; then a hit at the new line
        ttnn.deallocate(below)
        call()  # back at q's line: a hit
    finally:
        DecodePipeline.run_hit = run_hit
    assert hits == [2, 4, 5], f"calls (1-based) that took the fast path {hits}, expected 2, 4, 5"


def _mla(ctx: Ctx) -> None:
    """DeepSeek-V3 MLA: Q [1, b, 128, 576] height-sharded, paged latent cache (bfloat8_b), V = first 512 columns,
    height-sharded output."""
    batch, n_q, d, dv, block, per_user = 2, 128, 576, 512, 32, 4
    blocks = batch * per_user + 1
    table = torch.randperm(blocks, generator=ctx.gen)[: batch * per_user].reshape(batch, per_user)
    shards = batch * n_q // 32
    q = ctx.tile(ctx.randn(1, batch, n_q, d), memory_config=H.height_sharded(shards, [32, d]))
    k, table, pos = ctx.tile(ctx.randn(blocks, 1, block, d), "bfloat8_b"), ctx.int32(table), ctx.int32([100, 30])
    _then_hit(
        lambda out: ttflashdecode.paged_flash_multi_latent_attention_decode(
            q,
            k,
            table,
            cur_pos_tensor=pos,
            head_dim_v=dv,
            scale=d**-0.5,
            program_config=H.sdpa_config(32),
            compute_kernel_config=H.hifi4(),
            output_tensor=out,
            memory_config=None if out is not None else H.height_sharded(shards, [32, dv]),
        )
    )


def _update_cache_heads_major(ctx: Ctx) -> None:
    cache = ctx.tile(ctx.randn(4, 2, 128, 64), "bfloat8_b")
    ttflashdecode.update_cache(cache, ctx.tile(ctx.randn(1, 2, 32, 64)), 37)


def _paged_update_cache(ctx: Ctx) -> None:
    """K rows of a decode step into a paged cache: device positions and page table."""
    table = torch.randperm(10, generator=ctx.gen)[:8].reshape(2, 4)
    cache = ctx.tile(ctx.randn(10, 2, 32, 64))
    ttflashdecode.paged_update_cache(
        cache, ctx.tile(ctx.randn(1, 2, 2, 64)), update_idxs_tensor=ctx.int32([5, 90]), page_table=ctx.int32(table)
    )


def _paged_update_cache_sharded_ring(ctx: Ctx) -> None:
    """Height-sharded new rows (one user per core, as nlp_create_qkv_heads_decode gives them) into a ring cache."""
    table = torch.randperm(10, generator=ctx.gen)[:8].reshape(2, 4)
    cache = ctx.tile(ctx.randn(10, 2, 32, 64), "bfloat8_b")
    rows = ctx.tile(ctx.randn(1, 2, 2, 64), memory_config=H.height_sharded(2, [32, 64]))
    ttflashdecode.paged_update_cache(
        cache, rows, update_idxs=[130, 7], page_table=ctx.int32(table), cache_position_modulo=64
    )


def _paged_fused_update_cache(ctx: Ctx) -> None:
    table = torch.randperm(10, generator=ctx.gen)[:8].reshape(2, 4)
    k, v = ctx.tile(ctx.randn(10, 2, 32, 64)), ctx.tile(ctx.randn(10, 2, 32, 64))
    ttflashdecode.paged_fused_update_cache(
        k,
        ctx.tile(ctx.randn(1, 2, 2, 64)),
        v,
        ctx.tile(ctx.randn(1, 2, 2, 64)),
        update_idxs_tensor=ctx.int32([3, 100]),
        page_table=ctx.int32(table),
    )


def _fill_cache(ctx: Ctx) -> None:
    cache = ctx.tile(ctx.randn(2, 2, 256, 64), "bfloat8_b")
    ttflashdecode.fill_cache(cache, ctx.tile(ctx.randn(1, 2, 96, 64)), 1, update_idx=32)


def _paged_fill_cache(ctx: Ctx) -> None:
    table = torch.randperm(10, generator=ctx.gen)[:8].reshape(2, 4)
    cache = ctx.tile(ctx.randn(10, 2, 32, 64))
    ttflashdecode.paged_fill_cache(
        cache, ctx.tile(ctx.randn(1, 2, 100, 64)), ctx.int32(table), batch_idx_tensor=ctx.int32([1])
    )


def _fused_update_decode(ctx: Ctx) -> None:
    """The cache update and the attention of one step as one program (contiguous cache, host positions)."""
    q, k, v = ctx.randn(1, 2, 8, 64), ctx.randn(2, 2, 256, 64), ctx.randn(2, 2, 256, 64)
    ttflashdecode.update_cache_and_decode(
        ctx.tile(q),
        ctx.tile(k),
        ctx.tile(v),
        ctx.tile(ctx.randn(1, 2, 2, 64)),
        ctx.tile(ctx.randn(1, 2, 2, 64)),
        cur_pos=[40, 130],
        program_config=H.decode_config(64, cores=4),
    )


def _paged_fused_update_decode(ctx: Ctx) -> None:
    table = torch.randperm(18, generator=ctx.gen)[:16].reshape(2, 8)
    k, v = ctx.tile(ctx.randn(18, 2, 32, 64), "bfloat8_b"), ctx.tile(ctx.randn(18, 2, 32, 64), "bfloat8_b")
    ttflashdecode.paged_update_cache_and_decode(
        ctx.tile(ctx.randn(1, 2, 8, 64)),
        k,
        v,
        ctx.tile(ctx.randn(1, 2, 2, 64)),
        ctx.tile(ctx.randn(1, 2, 2, 64)),
        ctx.int32(table),
        cur_pos_tensor=ctx.int32([31, 200]),
        program_config=H.decode_config(64, cores=4),
    )


# ---- meshes: heads over the chips, one MeshProgramDescriptor -------------------------------------------------


def _mesh_decode(ctx: Ctx) -> None:
    """Llama-3.1-8B's heads over the mesh's chips (q on dim 2, K/V on dim 1), bfloat8_b cache, device positions."""
    chips = ctx.device.get_num_devices()
    n_q, n_kv, d = 4 * chips, chips, 128
    q, k, v = ctx.randn(1, 2, n_q, d), ctx.randn(2, n_kv, 512, d), ctx.randn(2, n_kv, 512, d)
    ttflashdecode.scaled_dot_product_attention_decode(
        ctx.tile(q, mesh_dim=2),
        ctx.tile(k, "bfloat8_b", mesh_dim=1),
        ctx.tile(v, "bfloat8_b", mesh_dim=1),
        cur_pos_tensor=ctx.int32([300, 511]),
        program_config=ProgramConfig(compute_with_storage_grid_size=ctx.grid, k_chunk_size=128),
    )


def _mesh_paged_bf8_out(ctx: Ctx) -> None:
    """Paged, host positions, a bfloat8_b output (the decode program and the convert program, both over the mesh)."""
    chips = ctx.device.get_num_devices()
    n_q, n_kv, d, block = 8 * chips, chips, 64, 32
    table = torch.randperm(10, generator=ctx.gen)[:8].reshape(2, 4)  # 2 users x 4 blocks
    k, v = ctx.randn(10, n_kv, block, d), ctx.randn(10, n_kv, block, d)
    ttflashdecode.paged_scaled_dot_product_attention_decode(
        ctx.tile(ctx.randn(1, 2, n_q, d), mesh_dim=2),
        ctx.tile(k, mesh_dim=1),
        ctx.tile(v, mesh_dim=1),
        table,
        cur_pos=[100, 20],
        dtype=ttnn.bfloat8_b,
        program_config=ProgramConfig(compute_with_storage_grid_size=ctx.grid, k_chunk_size=32),
    )


# ---- the format probe: how tt-metal's JIT describes every CB format, tile shape and compute setting ------------

PROBE_KERNELS = Path(__file__).resolve().parent / "probe_kernels"
# ttnn DataType -> tt::DataFormat (the wheel's CBFormatDescriptor conversion; jit_env's values)
_FORMAT = {
    "float32": 0,
    "bfloat16": 5,
    "bfloat8_b": 6,
    "bfloat4_b": 7,
    "int32": 8,
    "uint16": 9,
    "int8": 14,
    "uint32": 24,
    "uint8": 30,
}


def _format_probe(cbs, *, fp32: bool = False, precise: bool = False) -> Callable[[Ctx], None]:
    """A program of two do-nothing kernels (compute and reader, probe_kernels/) on core (0, 0) over CBs of the given
    (dtype name, tile shape or None) at indices 0, 1, ...: the JIT's chlkc_descriptors.h for every format, tile shape
    and setting a program of ours could use, compared with the emulator's like any program's."""
    from ttemu import jit_env  # noqa: PLC0415

    def run(ctx: Ctx) -> None:
        core = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 0))])
        descs = []
        for index, (dtype, tile) in enumerate(cbs):
            geometry = jit_env.TileGeometry.of(*(tile or (32, 32)))
            page = geometry.tile_size(_FORMAT[dtype])
            fmt = ttnn.CBFormatDescriptor(
                buffer_index=index,
                data_format=getattr(ttnn, dtype),
                page_size=page,
                tile=None if tile is None else ttnn.TileDescriptor(*tile),
            )
            descs.append(ttnn.CBDescriptor(total_size=2 * page, core_ranges=core, format_descriptors=[fmt]))
        compute = ttnn.ComputeConfigDescriptor(
            math_fidelity=ttnn.MathFidelity.HiFi2,
            math_approx_mode=True,
            fp32_dest_acc_en=fp32,
            bfp8_pack_precise=precise,
        )
        kernels = [
            ttnn.KernelDescriptor(
                kernel_source=str(PROBE_KERNELS / "compute_format_probe.cpp"),
                core_ranges=core,
                compile_time_args=[],
                runtime_args=[(ttnn.CoreCoord(0, 0), [])],
                config=compute,
            ),
            ttnn.KernelDescriptor(
                kernel_source=str(PROBE_KERNELS / "reader_format_probe.cpp"),
                core_ranges=core,
                compile_time_args=[],
                runtime_args=[(ttnn.CoreCoord(0, 0), [])],
                config=ttnn.ReaderConfigDescriptor(),
            ),
        ]
        program = ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=descs)
        ttnn.generic_op([ctx.tile(torch.zeros(32, 32)), ctx.tile(torch.zeros(32, 32))], program)  # input, output

    return run


_ALL_FORMATS = [
    (d, None) for d in ("float32", "bfloat16", "bfloat8_b", "bfloat4_b", "int32", "uint32", "uint16", "uint8")
]
_TILES = [("bfloat16", t) for t in ((16, 32), (32, 16), (16, 16), (8, 32), (4, 32), (2, 32), (1, 32))]
PROBES = {
    "probe_each_format": _format_probe(_ALL_FORMATS[1:]),  # Float32 with others: see the fp32 probes
    "probe_each_format_fp32_dest": _format_probe(_ALL_FORMATS, fp32=True),
    "probe_float32_alone": _format_probe([("float32", None)]),
    "probe_float32_with_bfloat16": _format_probe([("float32", None), ("bfloat16", None)]),
    "probe_block_floats_precise": _format_probe(
        [("bfloat16", None), ("bfloat8_b", None), ("bfloat4_b", None)], precise=True
    ),
    "probe_block_floats_precise_fp32_dest": _format_probe(
        [("float32", None), ("bfloat8_b", None), ("bfloat4_b", None)], fp32=True, precise=True
    ),
    "probe_tile_shapes": _format_probe(_TILES + [("bfloat8_b", (16, 32)), ("float32", (32, 16))]),
}


SINGLE = {
    "decode": _with(),
    "decode_bfloat8_b_kv": _with(kv_dtype="bfloat8_b"),
    "decode_bfloat4_b_kv": _with(kv_dtype="bfloat4_b"),
    "decode_device_positions": _device_positions,
    "decode_mask_sinks_bfloat8_b_out": _mask_sinks_bf8_out,
    "decode_skipped_user": _with(cur_pos=(-1, 255)),
    "decode_paged": _with(block_size=64, kv_dtype="bfloat8_b"),
    "decode_paged_tt_transformers": _tt_transformers_paged,
    "decode_mla_paged": _mla,
    "decode_q_len_2": _with(q_len=2),
    "decode_mask_shared": _with(cur_pos=None, mask_heads=1),
    "decode_mask_per_head": _with(cur_pos=None, mask_heads=8),
    "decode_sinks": _with(attention_sink=True),
    "decode_sinks_upstream_form": _with(attention_sink=True, sink_upstream_form=True),
    "decode_window": _with(sliding_window_size=64),
    "decode_out_sharded": _with(out_sharded=True),
    "decode_l1_output_loop": _l1_output_loop,
    "decode_l1_line_witness": _l1_line_witness,
    "decode_out_bfloat8_b": _with(out_dtype="bfloat8_b"),
    "decode_fp32_dest_acc": _with(fp32_dest_acc_en=True, exp_approx_mode=False),
    "decode_share_cache": _with(share_cache=True),
    "decode_v_head_dim": _with(head_dim=96, v_head_dim=64, kv_len=128, cur_pos=(100, 127), k_chunk_size=32),
    "decode_groups_serial": _case(
        batch=16, n_q_heads=8, n_kv_heads=8, head_dim=64, kv_len=64, cur_pos=tuple(range(0, 64, 4)), k_chunk_size=32
    ),
    "update_cache": _update_cache_heads_major,
    "paged_update_cache": _paged_update_cache,
    "paged_update_cache_sharded_ring": _paged_update_cache_sharded_ring,
    "paged_fused_update_cache": _paged_fused_update_cache,
    "fill_cache": _fill_cache,
    "paged_fill_cache": _paged_fill_cache,
    "fused_update_decode": _fused_update_decode,
    "paged_fused_update_decode": _paged_fused_update_decode,
}
# The cache-update ops take one chip's tensors (they refuse a mesh tensor, naming it): no mesh update program.
MESH = {"mesh_decode": _mesh_decode, "mesh_paged_bfloat8_b_out": _mesh_paged_bf8_out}

# Programs whose function ends in a fast-path hit after a full-path call of the same arguments (_then_hit), with the
# generic_op launches one call makes: the hit's launches must equal the full path's (same io tensors, same launchable).
HIT_CHECKED = {
    "decode_device_positions": 1,
    "decode_mask_sinks_bfloat8_b_out": 2,
    "decode_paged_tt_transformers": 1,
    "decode_mla_paged": 1,
}

CATALOGUE: dict[str, tuple[str, Callable[[Ctx], None]]] = {
    **{name: ("n150", fn) for name, fn in SINGLE.items()},
    **{name: ("n150", fn) for name, fn in PROBES.items()},
    **{f"n300_{name}": ("n300", fn) for name, fn in MESH.items()},
    **{f"t3k_{name}": ("t3k", fn) for name, fn in MESH.items()},
}
