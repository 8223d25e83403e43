"""The fused ``ttnn.ProgramDescriptor``: the attention's and the cache update's descriptors, each built by its own
factory, joined, plus the semaphore the update counts its rows on."""

from __future__ import annotations

from ttflashdecode.backend import import_ttnn
from ttflashdecode.ops.decode.factory import DecodeBuffers, build_program
from ttflashdecode.ops.descriptors import ComputeSettings, core_range_set
from ttflashdecode.ops.fused.plan import FusedPlan
from ttflashdecode.ops.update_cache.args import CacheUpdateSignal, UpdateShapes
from ttflashdecode.ops.update_cache.factory import build_update_program

ROWS_PER_GROUP = 2  # the update writes a K row and a V row of every (user, kv head) group


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
        noc1_stride=backend.noc1_reader_stride(),
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
