"""The cache update ``ttnn.ProgramDescriptor``: (cache, user, kv head) units split over the cores, three kernels,
their circular buffers."""

from __future__ import annotations

from ttflashdecode.backend import backend_for, import_ttnn
from ttflashdecode.kernel_sources import DECODE_KERNELS, UPDATE_CACHE_KERNELS
from ttflashdecode.ops.descriptors import (
    ComputeSettings,
    cb_descriptor,
    core_range_set,
    kernel_descriptor,
    tensor_placement,
    wire,
)
from ttflashdecode.ops.update_cache.args import (
    CB_INDEX,
    TARGET_RECORD_BYTES,
    TILE,
    CacheUpdateSignal,
    ComputeRuntimeArgs,
    ReaderRuntimeArgs,
    UpdateShapes,
    WriterRuntimeArgs,
    l1_aligned,
    update_kernel_args,
)
from ttflashdecode.ops.work_split import split_units

KERNEL_DIR = UPDATE_CACHE_KERNELS  # on the include path with DECODE_KERNELS (update_cache_common.hpp, TensorPages)
READER = KERNEL_DIR / "dataflow" / "reader_update_cache.cpp"
COMPUTE = KERNEL_DIR / "compute" / "compute_update_cache.cpp"
WRITER = KERNEL_DIR / "dataflow" / "writer_update_cache.cpp"


def build_update_program(
    shapes: UpdateShapes,
    pairs,
    index,
    page_table,
    grid,
    compute: ComputeSettings,
    *,
    cores: list[tuple[int, int]] | None = None,
    signal: CacheUpdateSignal | None = None,
):
    """The cache update ``ttnn.ProgramDescriptor`` over ``pairs`` ((cache, input), one or two) and the index tensor
    and page table (their addresses are runtime args). ``cores``: the logical cores to run on (default: the grid's
    first ones); ``signal``: the update shares a program with attention (:mod:`ttflashdecode.ops.fused`),
    whose semaphore table holds ``signal.sem_id``."""
    cache, new = pairs[0]
    cache2, new2 = pairs[1] if len(pairs) > 1 else (None, None)
    cache2_addr = cache2.buffer_address() if cache2 is not None else 0
    new2_addr = new2.buffer_address() if new2 is not None else 0
    ttnn = import_ttnn()
    split = split_units(shapes.num_units, grid, cores)
    cores = core_range_set(split.cores)
    reader_args, compute_args, writer_args = update_kernel_args(
        shapes, cache, new, index, page_table, compute.fp32_dest_acc_en, signal
    )
    table_addr = page_table.buffer_address() if page_table is not None else 0
    per_core = list(zip(split.cores, split.first_unit, split.num_units))
    reader_rt = [
        (
            ttnn.CoreCoord(*c),
            wire(
                ReaderRuntimeArgs(
                    cache.buffer_address(),
                    new.buffer_address(),
                    cache2_addr,
                    new2_addr,
                    index.buffer_address(),
                    table_addr,
                    first,
                    count,
                )
            ),
        )
        for c, first, count in per_core
    ]
    compute_rt = [(ttnn.CoreCoord(*c), wire(ComputeRuntimeArgs(count))) for c, _, count in per_core]
    writer_rt = []
    for c, first, count in per_core:
        targets = signal.targets(shapes, first, count) if signal is not None else []
        args = WriterRuntimeArgs(cache.buffer_address(), cache2_addr, count, len(targets) // 3)
        writer_rt.append((ttnn.CoreCoord(*c), wire(args) + targets))

    # A height-sharded input's shards: NOC coordinates of shard s's core at common args 2s, 2s + 1 (both inputs of a
    # fused update have the same placement; the reader offsets the second's cores by its shard count).
    input_cores = [core for _, n in pairs for core in tensor_placement(n).shard_cores]
    noc_coord = backend_for(cache.device()).noc_coord
    reader_common = [v for core in input_cores for v in noc_coord(core)]

    include = [KERNEL_DIR, DECODE_KERNELS]
    kernels = [
        kernel_descriptor(READER, cores, reader_args, reader_rt, ttnn.ReaderConfigDescriptor(), include, reader_common),
        kernel_descriptor(COMPUTE, cores, compute_args, compute_rt, compute.descriptor(), include),
        kernel_descriptor(WRITER, cores, writer_args, writer_rt, ttnn.WriterConfigDescriptor(), include),
    ]
    Wt = shapes.Wt
    cache_dtype = getattr(ttnn, shapes.cache_dtype)
    cache_tile = cache.buffer_page_size()
    rows_tile = 2 * TILE * TILE  # bfloat16 rows: Wt pages of a bfloat16 tile's bytes hold 32 rows of head_dim

    table_page = l1_aligned(page_table.buffer_page_size() if page_table is not None else 1)
    cbs = [
        cb_descriptor(cores, [CB_INDEX[name] for name in names], dtype, page_size, pages)
        for names, dtype, page_size, pages in (
            (["cache"], cache_dtype, cache_tile, Wt),
            (["new_row"], ttnn.bfloat16, shapes.head_dim * 2, 1),
            (["index"], ttnn.int32, l1_aligned(index.buffer_page_size()), 1),
            (["target"], ttnn.uint32, TARGET_RECORD_BYTES, 2),
            (["rows", "patched"], ttnn.bfloat16, rows_tile, Wt),
            (["out"], cache_dtype, cache_tile, Wt),
            # Unpaged, the reader still names the (unused) page-table scratch: one aligned page.
            (["page_table"], ttnn.int32, table_page, 1),
        )
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)
