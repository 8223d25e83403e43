"""The fill kernels' arguments, defined once (compile-time args in order: arg i of a kernel is its list's name i, then
the TensorAccessorArgs at their ``*_cta_offset``; circular buffers, runtime args in wire order), and a fill call's
shapes as the program sees it. The compute kernel is the tile conversion's copy (ops/convert)."""

from __future__ import annotations

from dataclasses import dataclass

from ttflashdecode.ops.descriptors import AccessorArgs, ordered
from ttflashdecode.ops.update_cache.args import HeadTiles

CB_INDEX = {"in": 0, "index": 2, "page_table": 3, "target": 4, "valid_len": 5, "out": 16}
TARGET_RECORD_BYTES = 16  # write flag, first tile (two words padded to the L1 alignment of a record)
PAGES_PER_CB = 2  # double-buffered tiles: the reader fetches tile i+1 while compute packs tile i

READER_ARGS = (
    "cb_in",
    "cb_index",
    "cb_page_table",
    "cb_target",
    "Wt",
    "n_kv_heads",
    "seq_tiles",
    "cache_users",
    "first_seq_tile",
    "is_paged",
    "block_size",
    "max_blocks_per_user",
    "num_blocks",
    "batch_from_tensor",
    "ring_tiles",
    "valid_from_tensor",
    "index_page_bytes",
    "page_table_page_bytes",
    "valid_page_bytes",
    "cb_valid_len",
    "input_cta_offset",
    "index_cta_offset",
    "page_table_cta_offset",
    "valid_cta_offset",
)
COMPUTE_ARGS = ("cb_in", "cb_out")
WRITER_ARGS = ("cb_out", "cb_target", "Wt", "cache_cta_offset")


@dataclass(frozen=True)
class ReaderRuntimeArgs:
    input_addr: int
    index_addr: int  # the batch index tensor (0 without one)
    page_table_addr: int  # 0 unless paged
    valid_len_addr: int  # the valid_seq_len tensor (0 without one)
    batch_idx: int  # the user, without a batch index tensor
    first_unit: int  # units are the input's tile rows: unit = (b * n_kv_heads + h) * seq_tiles + t
    num_units: int


@dataclass(frozen=True)
class WriterRuntimeArgs:
    cache_addr: int
    num_units: int


@dataclass(frozen=True)
class FillShapes(HeadTiles):
    """A fill call as the program sees it."""

    input_batch: int
    n_kv_heads: int
    head_dim: int
    seq_tiles: int  # the input's tile rows per head
    cache_dtype: str
    input_dtype: str
    cache_users: int  # unpaged: the cache's users; paged: the page table's rows
    block_size: int  # paged: positions per block; unpaged: the cache's tile-padded positions per user
    is_paged: bool
    first_seq_tile: int = 0  # unpaged: update_idx / 32
    max_blocks_per_user: int = 0
    num_blocks: int = 0
    batch_from_tensor: bool = False
    ring_tiles: int = 0  # paged ring cache: cache_position_modulo / 32 (0: none)
    valid_from_tensor: bool = False  # a ring's end read from valid_seq_len_tensor at run time

    @property
    def num_units(self) -> int:
        return self.input_batch * self.n_kv_heads * self.seq_tiles


def fill_kernel_args(shapes: FillShapes, cache, new, index, page_table, valid_len):
    """(reader, compute, writer) :class:`KernelArgs`: every value computed once, here."""
    values = {
        "Wt": shapes.Wt,
        "n_kv_heads": shapes.n_kv_heads,
        "seq_tiles": shapes.seq_tiles,
        "cache_users": shapes.cache_users,
        "first_seq_tile": shapes.first_seq_tile,
        "is_paged": int(shapes.is_paged),
        "block_size": shapes.block_size,
        "max_blocks_per_user": shapes.max_blocks_per_user,
        "num_blocks": shapes.num_blocks,
        "batch_from_tensor": int(shapes.batch_from_tensor),
        "ring_tiles": shapes.ring_tiles,
        "valid_from_tensor": int(shapes.valid_from_tensor),
        "index_page_bytes": index.buffer_page_size() if index is not None else 0,
        "page_table_page_bytes": page_table.buffer_page_size() if page_table is not None else 0,
        "valid_page_bytes": valid_len.buffer_page_size() if valid_len is not None else 0,
        **{f"cb_{name}": i for name, i in CB_INDEX.items()},
    }
    reader = AccessorArgs()
    reader.add("input", new)
    reader.add("index", index, absent_like="input")
    reader.add("page_table", page_table, absent_like="input")
    reader.add("valid", valid_len, absent_like="input")
    writer = AccessorArgs()
    writer.add("cache", cache)
    return ordered(values, READER_ARGS, reader), ordered(values, COMPUTE_ARGS), ordered(values, WRITER_ARGS, writer)
