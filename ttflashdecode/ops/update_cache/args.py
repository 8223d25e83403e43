"""The update kernels' arguments, defined once: compile-time args in order (READER_ARGS / COMPUTE_ARGS /
WRITER_ARGS: arg i of a kernel is its list's name i, read as ``get_compile_time_arg_val(i)``; the TensorAccessorArgs
follow, at their ``*_cta_offset``), circular buffers, common runtime args in wire order and the work table (as
:mod:`ttflashdecode.ops.decode.args` is for the decode kernels), and the shapes an update call has as the program sees
it.

Runtime args are common runtime args (the same list on every core), as the decode kernels' are: on a card's
program-cache hit ``ttnn.generic_op`` copies every per-core argument list of the descriptor, ~5 us per kernel on 64
cores on a mock N150, against one list per kernel (tests/runtime/update_host_cost.py, docs/RUNTIME.md). A kernel's
common args are, in order:

1. the reader's: the NOC coordinates (x, y) of the core of each shard of a height-sharded input, both inputs' of a
   fused K/V update (their count is its compile-time arg ``work_args_at``; none otherwise);
2. the fields of :class:`ReaderCommonArgs` / :class:`WriterCommonArgs` (buffer addresses, then the reader's run-time
   shape) in field order, which the kernels read in that order (checked by ``tests/test_kernel_api.py``); compute has
   none;
3. the work table (:func:`unit_work_table`): every core finds its range of units in it by its logical coordinates.

The cache's size (users, positions, blocks: what differs between two models' or two runs' caches) is in the reader's
common args, not its compile-time args, so one build of the kernels serves every cache size. A writer fused with
attention (:class:`CacheUpdateSignal`) takes its signals as per-core runtime args: their number differs per core, and
over many cores they would not fit the 341 common args a kernel may have."""

from __future__ import annotations

from dataclasses import dataclass

from ttflashdecode.ops.descriptors import PLACEMENTS, AccessorArgs, ordered, tensor_placement, work_table
from ttflashdecode.ops.work_split import UnitSplit

TILE = 32
# cb_rows and cb_patched are two indices over one buffer (compute_update_cache.cpp says why).
CB_INDEX = {"cache": 0, "new_row": 1, "index": 2, "page_table": 3, "target": 4, "out": 16, "rows": 24, "patched": 25}
TARGET_RECORD_BYTES = 16  # update_cache_common.hpp: RowTarget
L1_ALIGNMENT = 32

DOCS = {
    "Wt": "head_dim in tiles",
    "n_kv_heads": "kv heads of the cache",
    "input_row_tiles": "tile rows of one entry of the input's dim 1 (its dim 2 padded to 32, in tiles)",
    "input_heads_major": "0: input [1, b, n_kv_heads, d] (row (u, h) at [0, u, h]); 1: upstream update_cache's "
    "[1, n_kv_heads, b (padded), d] (row (u, h) at [0, h, input_row_offset + u])",
    "input_row_offset": "heads-major input: the first user's row in dim 2 (upstream's batch_offset)",
    "input_placement": "ops.descriptors.PLACEMENTS of the input (DRAM or L1 interleaved, or L1 height-sharded)",
    "input_shard_pages": "height-sharded input: pages per shard (0 otherwise)",
    "input_num_shards": "height-sharded input: shards of one input (a fused update's second input's follow them)",
    "input_page_bytes": "an input page (a bfloat16 tile)",
    "cache_position_modulo": "paged ring cache: a read position p >= 0 is written at p % cache_position_modulo "
    "(upstream's, before the page-table lookup; 0: no ring)",
    "is_paged": "1: the position's block is found through the user's page-table row",
    "block_size": "paged: positions per block; unpaged: the cache's tile-padded positions per user",
    "untilize_block": "tiles per pack_untilize call (a divisor of Wt that fits DST)",
    "cache_cta_offset": "index of the first of the cache's TensorAccessorArgs among the kernel's compile-time args",
    "input_cta_offset": "... of the input's",
    "index_cta_offset": "... of the index tensor's",
    "page_table_cta_offset": "... of the page table's (the index tensor's when unpaged: never used)",
    "signal_cache_updated": "1: fused with attention: count the units on the attention cores' semaphore when done",
    "sem_cache_updated": "fused with attention: that semaphore's id (0 otherwise: never used)",
    "work_args_at": "common args before the reader's own (ReaderCommonArgs): two per shard of the input(s)",
    **{f"cb_{name}": f"index of CB {name}" for name in CB_INDEX},
}
READER_ARGS = (
    "cb_cache",
    "cb_new_row",
    "cb_index",
    "cb_page_table",
    "cb_target",
    "Wt",
    "n_kv_heads",
    "input_row_tiles",
    "input_heads_major",
    "input_row_offset",
    "input_placement",
    "input_shard_pages",
    "input_num_shards",
    "input_page_bytes",
    "cache_position_modulo",
    "is_paged",
    "block_size",
    "cache_cta_offset",
    "input_cta_offset",
    "index_cta_offset",
    "page_table_cta_offset",
    "work_args_at",
)
COMPUTE_ARGS = (
    "cb_cache",
    "cb_rows",
    "cb_patched",
    "cb_out",
    "Wt",
    "untilize_block",
)
WRITER_ARGS = (
    "cb_new_row",
    "cb_target",
    "cb_rows",
    "cb_patched",
    "cb_out",
    "Wt",
    "cache_cta_offset",
    "signal_cache_updated",
    "sem_cache_updated",
)


@dataclass(frozen=True)
class ReaderCommonArgs:
    """The reader's buffer addresses and the cache's run-time shape, after the shard table (``work_args_at`` args) and
    before the work table."""

    cache_addr: int
    input_addr: int
    cache2_addr: int  # the second cache and input of a fused K/V update (0: one cache)
    input2_addr: int
    index_addr: int
    page_table_addr: int  # 0 unless paged
    batch: int  # users of the input: unit (cache, user, kv head) = (which * batch + user) * n_kv_heads + head
    kv_len: int  # positions a user may write
    max_blocks_per_user: int  # paged: page-table columns
    num_blocks: int  # paged: blocks in the cache (entries past it write nothing)
    index_page_bytes: int  # the index tensor's one page (b int32)
    page_table_page_bytes: int  # one page-table row (0 unpaged)


@dataclass(frozen=True)
class WriterCommonArgs:
    """The writer's cache addresses, before the work table."""

    cache_addr: int
    cache2_addr: int  # fused K/V update only


def unit_work_table(split: UnitSplit) -> list[int]:
    """The work table (:func:`~ttflashdecode.ops.descriptors.work_table`) of ``split``'s cores: one word a core,
    ``first_unit | num_units << 16`` (update_cache_common.hpp's unit_range reads it so)."""
    entries = {}
    for (x, y), first, count in zip(split.cores, split.first_unit, split.num_units, strict=True):
        if not (0 <= first < 1 << 16 and 0 <= count < 1 << 16):
            raise AssertionError(f"core ({x}, {y}): units {first}, {count} do not fit the work table's 16-bit fields")
        entries[(x, y)] = (first | count << 16,)
    return work_table(entries, 1)


@dataclass(frozen=True)
class CacheUpdateSignal:
    """An update sharing a program with attention (:mod:`ttflashdecode.ops.fused`): when a core's units are
    written, its writer adds on semaphore ``sem_id`` of each attention core serving a unit's group (group = user *
    n_kv_heads + head) one count per such unit. ``group_cores[g]``: NOC coordinates of the cores serving group g."""

    sem_id: int
    group_cores: tuple[tuple[tuple[int, int], ...], ...]

    def targets(self, shapes: UpdateShapes, first_unit: int, num_units: int) -> list[int]:
        """The (noc_x, noc_y, count) triples of one update core, flattened as its writer reads them."""
        counts: dict[tuple[int, int], int] = {}
        for unit in range(first_unit, first_unit + num_units):
            for xy in self.group_cores[unit % (shapes.batch * shapes.n_kv_heads)]:
                counts[xy] = counts.get(xy, 0) + 1
        return [v for (x, y), n in counts.items() for v in (x, y, n)]


class HeadTiles:
    """``Wt``: a head's width in tiles (head_dim / 32), the tile rows the cache ops' kernels move."""

    @property
    def Wt(self) -> int:
        return self.head_dim // TILE


@dataclass(frozen=True)
class UpdateShapes(HeadTiles):
    """An update call as the program sees it."""

    batch: int
    n_kv_heads: int
    head_dim: int
    cache_dtype: str
    kv_len: int  # positions a user may write
    block_size: int  # paged: positions per block; unpaged: the cache's tile-padded length
    is_paged: bool
    max_blocks_per_user: int = 0
    num_blocks: int = 0
    num_caches: int = 1  # 2: a fused K/V update (two caches, two inputs, one launch)
    input_row_tiles: int = 1  # tile rows of one entry of the input's dim 1
    input_heads_major: bool = False  # upstream update_cache's input [1, n_kv_heads, b (padded), d]
    input_row_offset: int = 0  # heads-major: the first user's row (batch_offset)
    cache_position_modulo: int = 0  # paged ring cache of this many positions (0: none)

    @property
    def num_units(self) -> int:
        return self.num_caches * self.batch * self.n_kv_heads


def untilize_block_tiles(Wt: int, fp32_dest_acc_en: bool) -> int:
    """The largest divisor of Wt that fits DST (8 bfloat16 tiles, 4 float32 tiles: half-sync DST)."""
    capacity = 4 if fp32_dest_acc_en else 8
    return max(d for d in range(1, min(Wt, capacity) + 1) if Wt % d == 0)


def l1_aligned(n: int) -> int:
    """`n` bytes rounded up to the L1 alignment of a circular buffer page."""
    return -(-n // L1_ALIGNMENT) * L1_ALIGNMENT


def update_kernel_args(
    shapes: UpdateShapes,
    cache,
    new,
    index,
    page_table,
    fp32_dest_acc_en: bool,
    num_input_shards: int,
    signal: CacheUpdateSignal | None = None,
):
    """(reader, compute, writer) :class:`KernelArgs`: every value computed once, here. ``num_input_shards``: shards
    of the input(s) whose cores the reader's common args list (0 unless height-sharded)."""
    input_at = tensor_placement(new)
    values = {
        "Wt": shapes.Wt,
        "n_kv_heads": shapes.n_kv_heads,
        "input_row_tiles": shapes.input_row_tiles,
        "input_heads_major": int(shapes.input_heads_major),
        "input_row_offset": shapes.input_row_offset,
        "input_placement": PLACEMENTS[input_at.placement],
        "input_shard_pages": input_at.shard_pages,
        "input_num_shards": len(input_at.shard_cores),
        "input_page_bytes": input_at.page_bytes,
        "cache_position_modulo": shapes.cache_position_modulo,
        "is_paged": int(shapes.is_paged),
        "block_size": shapes.block_size,
        "untilize_block": untilize_block_tiles(shapes.Wt, fp32_dest_acc_en),
        "signal_cache_updated": int(signal is not None),
        "sem_cache_updated": signal.sem_id if signal is not None else 0,
        "work_args_at": 2 * num_input_shards,
        **{f"cb_{name}": i for name, i in CB_INDEX.items()},
    }
    reader = AccessorArgs()
    reader.add("cache", cache)
    reader.add("input", None if input_at.sharded else new, absent_like="cache")  # sharded: addressed per shard core
    reader.add("index", index)
    reader.add("page_table", page_table, absent_like="index")
    writer = AccessorArgs()
    writer.add("cache", cache)
    return ordered(values, READER_ARGS, reader), ordered(values, COMPUTE_ARGS), ordered(values, WRITER_ARGS, writer)


def reader_common_args(shapes: UpdateShapes, pairs, index, page_table) -> ReaderCommonArgs:
    """The reader's own common args of an update of ``pairs`` ((cache, input), one or two)."""
    (cache, new), second = pairs[0], pairs[1] if len(pairs) > 1 else (None, None)
    return ReaderCommonArgs(
        cache.buffer_address(),
        new.buffer_address(),
        *(t.buffer_address() if t is not None else 0 for t in second),
        index.buffer_address(),
        page_table.buffer_address() if page_table is not None else 0,
        shapes.batch,
        shapes.kv_len,
        shapes.max_blocks_per_user,
        shapes.num_blocks,
        index.buffer_page_size(),
        page_table.buffer_page_size() if page_table is not None else 0,
    )
