"""The cache update and decode attention of one layer's step as ONE program (one ``generic_op`` launch).

    out = ttflashdecode.update_cache_and_decode(q, k, v, k_new, v_new, cur_pos_tensor=pos)
    out = ttflashdecode.paged_update_cache_and_decode(q, k, v, k_new, v_new, page_table, cur_pos_tensor=pos)

replace the two launches a model makes per layer and token::

    ttflashdecode.paged_fused_update_cache(k, k_new, v, v_new, update_idxs_tensor=pos, page_table=page_table)
    out = ttflashdecode.paged_scaled_dot_product_attention_decode(q, k, v, page_table, cur_pos_tensor=pos)

with the same arguments: the new K/V rows (``[1, b, n_kv_heads, head_dim]`` bfloat16) are written at each user's
``cur_pos``, the position the attention's query (q_len 1) sits at, and the attention reads them.

The program is the two programs' descriptors side by side, each built by its own factory (nothing is described
twice): the attention's kernels on the cores of its plan, the cache update's kernels
(``ops/update_cache/kernels/``) on cores that plan leaves free, or, when it leaves too few, on the grid's last
row, which the attention is then planned without. Ordering is one semaphore (``sem_cache_updated``, the program's
semaphore table, on every core of both): when an update core has written its rows (write barrier), its writer adds
one count per row on every attention core serving that row's (user, kv head) group; an attention reader waits for
all its groups' counts only before it reads the chunk holding ``cur_pos``, the one chunk the update touches. Every
other chunk streams at once, so the update overlaps the attention instead of preceding it.

Whether that is worth it: ``perf/fused_update_attention.py`` (modelled) and README "Decode in model code".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ttemu.ttnn_env import import_ttnn
from ttflashdecode.backend import backend_of
from ttflashdecode.checks import check_bool, check_device_tensor
from ttflashdecode.config import ProgramConfig
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.decode.factory import DecodeBuffers, build_program
from ttflashdecode.ops.decode.pipeline import check_cbs_end_below, for_device, positions_bound, tensor_key
from ttflashdecode.ops.decode.validate import BLOCK_FLOAT_OUT_DTYPES, check_call
from ttflashdecode.ops.descriptors import ComputeSettings, core_range_set
from ttflashdecode.ops.update_cache.args import CacheUpdateSignal, UpdateShapes
from ttflashdecode.ops.update_cache.factory import build_update_program
from ttflashdecode.ops.update_cache.validate import check_update
from ttflashdecode.ops.work_split import split_units
from ttflashdecode.plan import DecodePlan

ROWS_PER_GROUP = 2  # the update writes a K row and a V row of every (user, kv head) group


@dataclass(frozen=True)
class FusedPlan:
    """Where each part of a fused program runs."""

    decode: DecodePlan  # the attention's plan (on the config's grid, or that grid without its last row)
    update_cores: tuple[tuple[int, int], ...]  # logical cores of the cache update's kernels
    reserved_row: bool  # True: the attention was planned without the grid's last row, which runs the update
    sem_cache_updated: int  # the semaphore id the update counts its rows on

    @property
    def attention_cores(self) -> tuple[tuple[int, int], ...]:
        return tuple(c.core for c in self.decode.cores if c.role != "idle")


@dataclass
class FusedResult:
    """What a fused call launched (``return_stats=True``): its plan and, on the emulator, the run's statistics."""

    plan: FusedPlan
    update_shapes: UpdateShapes
    stats: object | None


# ---- the ops ----------------------------------------------------------------------------------------------------


def update_cache_and_decode(
    q,
    k,
    v,
    k_new,
    v_new,
    *,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink=None,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
    dtype=None,
    return_stats: bool = False,
):
    """Writes ``k_new`` / ``v_new`` (``[1, b, n_kv_heads, head_dim]`` bfloat16, DRAM or L1 interleaved) into the caches
    ``k`` / ``v`` (``[b, n_kv_heads, kv_len, head_dim]``) at each user's position, then attends with ``q``
    (``[1, b, n_q_heads, head_dim]``) over positions up to it, in one program. Positions: exactly one of ``cur_pos``
    (ints) or ``cur_pos_tensor`` (int32 ``[b]``; a device tensor is read by the kernels at run time); -1 skips a user
    (nothing written, output rows zero). The other arguments are
    :func:`ttflashdecode.scaled_dot_product_attention_decode`'s (causal, one query token per user; no mask, shared cache
    or block-float output), except that ``program_config=None`` is the planner's fixed rule on the device grid (the op's
    default is the tuned table, else that rule). Returns the output; the caches are updated in place, exactly as
    :func:`ttflashdecode.paged_fused_update_cache` updates them. ``return_stats=True`` returns ``(output,
    FusedResult)``."""
    return _fused(
        q,
        k,
        v,
        k_new,
        v_new,
        None,
        cur_pos=cur_pos,
        cur_pos_tensor=cur_pos_tensor,
        scale=scale,
        sliding_window_size=sliding_window_size,
        attention_sink=attention_sink,
        program_config=program_config,
        compute_kernel_config=compute_kernel_config,
        memory_config=memory_config,
        output_tensor=output_tensor,
        dtype=dtype,
        return_stats=return_stats,
    )


def paged_update_cache_and_decode(
    q,
    k,
    v,
    k_new,
    v_new,
    page_table_tensor,
    *,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink=None,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
    dtype=None,
    return_stats: bool = False,
):
    """:func:`update_cache_and_decode` over a paged cache ``[num_blocks, n_kv_heads, block_size, head_dim]`` and
    ``page_table_tensor`` (int32 ``[b, max_blocks_per_user]``), as in
    :func:`ttflashdecode.paged_scaled_dot_product_attention_decode` and :func:`ttflashdecode.paged_update_cache`."""
    return _fused(
        q,
        k,
        v,
        k_new,
        v_new,
        page_table_tensor,
        cur_pos=cur_pos,
        cur_pos_tensor=cur_pos_tensor,
        scale=scale,
        sliding_window_size=sliding_window_size,
        attention_sink=attention_sink,
        program_config=program_config,
        compute_kernel_config=compute_kernel_config,
        memory_config=memory_config,
        output_tensor=output_tensor,
        dtype=dtype,
        return_stats=return_stats,
    )


# ---- one call ---------------------------------------------------------------------------------------------------


def _fused(
    q,
    k,
    v,
    k_new,
    v_new,
    page_table,
    *,
    cur_pos,
    cur_pos_tensor,
    scale,
    sliding_window_size,
    attention_sink,
    program_config,
    compute_kernel_config,
    memory_config,
    output_tensor,
    dtype,
    return_stats,
):
    return_stats = check_bool("return_stats", return_stats)
    # ---- check both halves on the host before any device work
    check_device_tensor("q", q, 4, ("bfloat16",), layout=None, dram=False)
    backend = backend_of(q)
    if backend.num_chips > 1:
        raise ValueError(
            f"q: lives on a mesh of {backend.num_chips} chips; the fused update + attention takes one chip's tensors"
        )
    compute = ComputeSettings.coerce(compute_kernel_config)
    call = check_call(
        q,
        k,
        v,
        page_table,
        is_causal=True,
        attn_mask=None,
        cur_pos=cur_pos,
        cur_pos_tensor=cur_pos_tensor,
        scale=scale,
        sliding_window_size=sliding_window_size,
        attention_sink=attention_sink,
        share_cache=False,
        memory_config=memory_config,
        output_tensor=output_tensor,
        dtype=dtype,
        fp32_dest_acc_en=compute.fp32_dest_acc_en,
        device=backend.device,
        grid=backend.grid(),
    )
    if call.shapes.q_len != 1:
        raise ValueError(
            f"q: q_len={call.shapes.q_len}; the fused call writes one new row per user, so q_len must be "
            "1 (several tokens: paged_fused_update_cache per token, then the decode op)"
        )
    if call.out_dtype in BLOCK_FLOAT_OUT_DTYPES:
        raise ValueError(
            f"dtype={call.out_dtype}: the fused call writes bfloat16 or float32 (a block-float output "
            "needs a second program: use the separate calls)"
        )
    positions_name = "cur_pos" if call.positions is not None else "cur_pos_tensor"
    positions = call.positions if call.positions is not None else cur_pos_tensor
    update = check_update(
        [(k, k_new), (v, v_new)],
        positions,
        page_table,
        compute,
        index_name=positions_name,
        names=[("k", "k_new"), ("v", "v_new")],
    )
    if (update.shapes.batch, update.shapes.n_kv_heads) != (call.shapes.batch, call.shapes.n_kv_heads):
        raise ValueError(
            f"k_new: {update.shapes.batch} users x {update.shapes.n_kv_heads} kv heads; expected q's "
            f"{call.shapes.batch} users and the cache's {call.shapes.n_kv_heads} kv heads"
        )

    # ---- plan, then the tensors the kernels read (both halves read the same positions and page table)
    config = ProgramConfig.coerce(program_config, default_grid=backend.grid())
    pipeline, fused_plan = plan_fused(
        backend, call, config, compute, update.shapes.num_units, new_output=output_tensor is None
    )
    cur_pos_dev = pipeline.positions(call, cur_pos_tensor)
    table_dev = pipeline.page_table(call, page_table)
    out = pipeline.output(call, output_tensor, q)
    check_cbs_end_below(out, fused_plan.decode)
    buffers = DecodeBuffers(
        q=q, k=k, v=v, cur_pos=cur_pos_dev, out=out, page_table=table_dev, attention_sink=attention_sink
    )
    io = [
        q,
        k,
        v,
        k_new,
        v_new,
        cur_pos_dev,
        *([table_dev] if table_dev is not None else []),
        *([attention_sink] if attention_sink is not None else []),
        out,
    ]
    key = (
        "fused_update_decode",
        device_cache(backend.device).plan_id(fused_plan.decode),
        fused_plan.update_cores,
        compute,
        call.scale,
        tensor_key(io),
    )
    program = device_cache(backend.device).lookup(
        "programs",
        key,
        lambda: build_fused_program(
            fused_plan, buffers, [(k, k_new), (v, v_new)], update.shapes, backend, compute, call.scale
        ),
    )
    stats = backend.launch(io, program)
    return (out, FusedResult(fused_plan, update.shapes, stats)) if return_stats else out


def plan_fused(backend, call, config: ProgramConfig, compute: ComputeSettings, num_units: int, new_output: bool = True):
    """(the attention's :class:`~ttflashdecode.ops.decode.pipeline.DecodePipeline`, :class:`FusedPlan`). The
    attention is planned on the config's grid; if that leaves fewer free cores of the device grid than
    ``min(num_units, grid width)``, it is planned again without the config grid's last row, and the update runs there
    (and on any other free core)."""
    gx, gy = config.compute_with_storage_grid_size
    want = min(num_units, gx)
    pipeline, decode = _plan_attention(backend, call, config, compute, new_output)
    free = _free_cores(backend.grid(), decode)
    reserved = False
    if len(free) < want and gy > 1:
        pipeline, decode = _plan_attention(
            backend, call, replace(config, compute_with_storage_grid_size=(gx, gy - 1)), compute, new_output
        )
        free, reserved = _free_cores(backend.grid(), decode), True
    if not free:
        raise ValueError(
            f"program_config: compute_with_storage_grid_size={(gx, gy)} leaves no core for the cache update"
        )
    sem_ids = [s.id for s in decode.semaphores]
    sem = max(sem_ids) + 1 if sem_ids else 0
    used = split_units(num_units, backend.grid(), free).cores  # the cores the update's kernels take
    return pipeline, FusedPlan(decode, used, reserved, sem)


def _plan_attention(backend, call, config: ProgramConfig, compute: ComputeSettings, new_output: bool):
    pipeline = for_device(backend.device, config, compute)
    decode = pipeline.plan_call(call, new_output=new_output, max_cur_pos=positions_bound(call, config))
    return pipeline, decode


def _free_cores(grid: tuple[int, int], decode: DecodePlan) -> list[tuple[int, int]]:
    """Cores of the device grid the attention does not use, row-major (the last rows first are not preferred: the
    update's split takes them in this order)."""
    busy = {c.core for c in decode.cores if c.role != "idle"}
    return [(x, y) for y in range(grid[1]) for x in range(grid[0]) if (x, y) not in busy]


def build_fused_program(
    fused: FusedPlan,
    buffers: DecodeBuffers,
    pairs,
    update_shapes: UpdateShapes,
    backend,
    compute: ComputeSettings,
    scale: float | None,
):
    """One ``ttnn.ProgramDescriptor``: the attention's (built by :func:`ttflashdecode.ops.decode.factory.build_program`
    with its reader waiting for the update) and the cache update's (built by
    :func:`ttflashdecode.ops.update_cache.factory.build_update_program` on ``fused.update_cores``, its writer
    counting rows on the attention cores), joined, plus the semaphore between them."""
    ttnn = import_ttnn()
    decode = fused.decode
    attention = build_program(
        decode,
        buffers,
        backend.noc_coord,
        compute,
        scale=scale,
        wait_for_cache_update=ROWS_PER_GROUP,
        sem_cache_updated=fused.sem_cache_updated,
    )
    n_kv = decode.shapes.n_kv_heads
    group_cores: list[list[tuple[int, int]]] = [[] for _ in range(decode.shapes.batch * n_kv)]
    for core in decode.cores:
        for b, h in core.groups if core.role != "idle" else ():
            group_cores[b * n_kv + h].append(backend.noc_coord(core.core))
    signal = CacheUpdateSignal(fused.sem_cache_updated, tuple(tuple(c) for c in group_cores))
    update = build_update_program(
        update_shapes,
        pairs,
        buffers.cur_pos,
        buffers.page_table,
        backend.grid(),
        compute,
        cores=list(fused.update_cores),
        signal=signal,
    )
    every_core = core_range_set((*fused.attention_cores, *fused.update_cores))
    cache_updated = ttnn.SemaphoreDescriptor(
        id=fused.sem_cache_updated, core_type=ttnn.CoreType.WORKER, core_ranges=every_core, initial_value=0
    )
    return ttnn.ProgramDescriptor(
        kernels=[*attention.kernels, *update.kernels],
        semaphores=[*attention.semaphores, cache_updated],
        cbs=[*attention.cbs, *update.cbs],
    )


__all__ = ["update_cache_and_decode", "paged_update_cache_and_decode", "FusedPlan", "plan_fused", "build_fused_program"]
