"""The cache update ``ttnn.ProgramDescriptor``: (cache, user, kv head) units split over the cores, three kernels,
their circular buffers."""

from __future__ import annotations

from ttflashdecode.backend import backend_for, import_ttnn
from ttflashdecode.kernel_sources import DECODE_KERNELS, UPDATE_CACHE_KERNELS
from ttflashdecode.ops.decode.factory import MAX_COMMON_RUNTIME_ARGS
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
    UpdateShapes,
    WriterCommonArgs,
    l1_aligned,
    reader_common_args,
    unit_work_table,
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
    cache2 = pairs[1][0] if len(pairs) > 1 else None
    ttnn = import_ttnn()
    split = split_units(shapes.num_units, grid, cores)
    cores = core_range_set(split.cores)
    # A height-sharded input's shards: NOC coordinates of shard s's core at the reader's common args 2s, 2s + 1 (a
    # fused update's second input's shards follow the first one's).
    input_cores = [core for _, n in pairs for core in tensor_placement(n).shard_cores]
    noc_coord = backend_for(cache.device()).noc_coord
    shard_table = [v for core in input_cores for v in noc_coord(core)]
    reader_args, compute_args, writer_args = update_kernel_args(
        shapes, cache, new, index, page_table, compute.fp32_dest_acc_en, len(input_cores), signal
    )
    work = unit_work_table(split)
    reader_common = shard_table + wire(reader_common_args(shapes, pairs, index, page_table)) + work
    if len(reader_common) > MAX_COMMON_RUNTIME_ARGS:
        raise ValueError(
            f"the update reader's common runtime args: {len(reader_common)} (the NOC coordinates of "
            f"{len(input_cores)} input shard cores, addresses, shape and a work table of {len(work)} words for "
            f"{len(split.cores)} cores) exceed tt-metal's {MAX_COMMON_RUNTIME_ARGS}: shard the input over fewer cores"
        )
    writer_common = wire(WriterCommonArgs(cache.buffer_address(), cache2.buffer_address() if cache2 else 0)) + work
    # Fused with attention: each core's signal targets, (noc_x, noc_y, count) triples after their number.
    writer_rt = []
    if signal is not None:
        for c, first, count in zip(split.cores, split.first_unit, split.num_units, strict=True):
            targets = signal.targets(shapes, first, count)
            writer_rt.append((ttnn.CoreCoord(*c), [len(targets) // 3, *targets]))

    include = [KERNEL_DIR, DECODE_KERNELS]
    kernels = [
        kernel_descriptor(READER, cores, reader_args, [], ttnn.ReaderConfigDescriptor(), include, reader_common),
        kernel_descriptor(COMPUTE, cores, compute_args, [], compute.descriptor(), include, work),
        kernel_descriptor(WRITER, cores, writer_args, writer_rt, ttnn.WriterConfigDescriptor(), include, writer_common),
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
