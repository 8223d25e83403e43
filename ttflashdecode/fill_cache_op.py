"""KV cache fills on the device: write a prefill's K or V into users' caches from position 0 (the prefill half of
the cache ops; :mod:`ttflashdecode.update_cache_op` is the decode half).

    ttflashdecode.fill_cache(k_cache, k_prefill, batch_idx)                          # [b, n_kv, S, d] cache
    ttflashdecode.paged_fill_cache(k_cache, k_prefill, page_table, batch_idx=user)   # [blocks, n_kv, block, d]
    ttflashdecode.paged_fill_cache(k_cache, k_prefill, page_table, batch_idx_tensor=users_dev)
    ttflashdecode.paged_fill_cache(k_ring, k_prefill, page_table, batch_idx=user,    # a sliding-window layer's ring
                                   cache_position_modulo=ring, valid_seq_len_tensor=valid_len_dev)

``input_tensor`` is ``[input_batch, n_kv_heads, seq_len, head_dim]`` (TILE, DRAM or L1 interleaved; bfloat16,
float32, bfloat8_b or bfloat4_b): positions ``0 .. seq_len - 1`` (tile-padded) of head ``h`` of user ``batch_idx``
(``fill_cache``: from position ``update_idx``, a multiple of 32) or, paged, of user ``batch_idx_tensor[i]`` for input
row i (``batch_idx`` when there is no tensor; then input_batch is 1), through that user's page-table row. The names and
defaults are upstream's (``ttnn.fill_cache``, ``ttnn.experimental.paged_fill_cache``). Unlike upstream, which copies
tiles raw and so requires the cache's dtype, the input may be in any of those formats: each tile is unpacked and
packed again in the cache's format by the packer (a bfloat8_b cache gets shared exponents per 16-datum face row, as
any op producing bfloat8_b), so a model can pass its bfloat16 prefill K/V as they are.

The program (``ops/update_cache/kernels/dataflow/reader_fill_cache.cpp``,
``ops/convert/kernels/compute/compute_copy.cpp``, ``ops/update_cache/kernels/dataflow/writer_fill_cache.cpp``) splits
the input's tile rows (user, head, 32 positions) over the grid; the reader finds each one's place in the cache (through
the page table, and the batch index tensor, both read at run time: ``update_cache_common.hpp: locate_fill_row``),
compute converts the tiles and the writer writes them. At run time a batch index past the page table's rows, or a
page-table entry past the cache's blocks, writes nothing for those tiles; host values (``batch_idx``, a torch page table
or batch index tensor) are checked before anything runs.

A ring cache (upstream's ``cache_position_modulo = M``, M / 32 = ``ring_tiles``): only the prefill's last M positions
survive, so the reader keeps the tile rows ``[end - ring_tiles, end)`` and writes tile row t at ring tile row ``t %
ring_tiles`` (before the page-table lookup, as upstream's writer); ``end`` is the input's tile rows or, with
upstream's ``valid_seq_len_tensor`` (one int read at run time: the real prompt length), that length in tiles rounded
up to whole blocks when shorter, so the padding tail never wraps over the real recent positions.

This module is the one Python definition of the fill kernels' arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ttflashdecode.backend import backend_for
from ttflashdecode.convert_factory import CONVERT_DIR
from ttflashdecode.device_cache import device_cache
from ttflashdecode.kernel_args import AccessorArgs, cb_descriptor, core_range_set, kernel_descriptor, select, wire
from ttflashdecode.program_factory import ComputeSettings
from ttflashdecode.ttnn_env import import_ttnn
from ttflashdecode.update_cache_op import KERNEL_DIR, L1_ALIGNMENT, TILE, CacheOpRun, HeadTiles
from ttflashdecode.validate import KV_DTYPES, as_int, check_device_tensor, check_ring, dtype_name, int_list
from ttflashdecode.work_split import split_units

READER = KERNEL_DIR / "dataflow" / "reader_fill_cache.cpp"
COMPUTE = CONVERT_DIR / "compute" / "compute_copy.cpp"
WRITER = KERNEL_DIR / "dataflow" / "writer_fill_cache.cpp"

INPUT_DTYPES = ("bfloat16", "float32", "bfloat8_b", "bfloat4_b")
CB_INDEX = {"in": 0, "index": 2, "page_table": 3, "target": 4, "valid_len": 5, "out": 16}
TARGET_RECORD_BYTES = 16  # write flag, first tile (two words padded to the L1 alignment of a record)
PAGES_PER_CB = 2  # double-buffered tiles: the reader fetches tile i+1 while compute packs tile i

READER_ARGS = (
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
    "input_cta_offset",
    "index_cta_offset",
    "page_table_cta_offset",
    "valid_cta_offset",
    "cb_in",
    "cb_index",
    "cb_page_table",
    "cb_valid_len",
    "cb_target",
)
COMPUTE_ARGS = ("cb_in", "cb_out")
WRITER_ARGS = ("Wt", "cache_cta_offset", "cb_out", "cb_target")


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


last_run: CacheOpRun | None = None


# ---- the ops ----------------------------------------------------------------------------------------------------


def fill_cache(cache_tensor, input_tensor, batch_idx, *, update_idx=0):
    """``ttnn.fill_cache``: writes ``input_tensor`` (``[1, n_kv_heads, seq_len, head_dim]``) into user ``batch_idx``
    of ``cache_tensor`` (``[b, n_kv_heads, S, head_dim]`` bfloat16 / bfloat8_b / bfloat4_b, TILE, DRAM interleaved) at
    positions ``update_idx .. update_idx + seq_len - 1`` (``update_idx`` a multiple of 32; seq_len tile-padded), in
    place, converting to the cache's dtype. Returns ``cache_tensor``."""
    cache_shape, input_shape = _check_tensors(cache_tensor, input_tensor)
    if input_shape[0] != 1:
        raise ValueError(f"input_tensor: expected shape [1, n_kv_heads, seq_len, head_dim], got {list(input_shape)}")
    users, S = cache_shape[0], cache_shape[2]
    batch = _host_int("batch_idx", batch_idx)
    if not 0 <= batch < users:
        raise ValueError(f"batch_idx={batch_idx!r}: expected a user of cache_tensor's {users}, in [0, {users})")
    start = _host_int("update_idx", update_idx)
    seq_tiles = -(-input_shape[2] // TILE)
    padded_S = -(-S // TILE) * TILE
    if start < 0 or start % TILE or start + seq_tiles * TILE > padded_S:
        raise ValueError(
            f"update_idx={update_idx!r}: expected a multiple of {TILE} >= 0 with update_idx + seq_len "
            f"(tile-padded: {seq_tiles * TILE}) <= cache_tensor's {padded_S} positions"
        )
    shapes = FillShapes(
        1,
        cache_shape[1],
        cache_shape[3],
        seq_tiles,
        dtype_name(cache_tensor),
        dtype_name(input_tensor),
        users,
        padded_S,
        False,
        first_seq_tile=start // TILE,
    )
    _fill(cache_tensor, input_tensor, shapes, batch, None, None)
    return cache_tensor


def paged_fill_cache(
    cache_tensor,
    input_tensor,
    page_table,
    *,
    batch_idx_tensor=None,
    batch_idx=0,
    compute_kernel_config=None,
    mesh_coords=None,
    block_size=None,
    cache_position_modulo=None,
    valid_seq_len_tensor=None,
):
    """``ttnn.experimental.paged_fill_cache``: writes ``input_tensor`` (``[input_batch, n_kv_heads, seq_len,
    head_dim]``) into the paged ``cache_tensor`` (``[num_blocks, n_kv_heads, block_size, head_dim]``) from position 0
    of user ``batch_idx_tensor[i]`` for input row i (an int32 ``[input_batch]`` device tensor read at run time, or a
    torch tensor checked and uploaded) or, without it, of user ``batch_idx`` (then input_batch must be 1), through
    ``page_table`` (int32 ``[users, max_blocks_per_user]``, ROW_MAJOR; device or torch), converting to the cache's
    dtype.

    ``cache_position_modulo`` (upstream's; None: off): the cache is a ring of that many positions (a multiple of the
    block size, at most ``max_blocks_per_user * block_size``); only the prefill's last ring positions are written,
    position p at ``p % cache_position_modulo`` (the input may be longer than the page table reaches).
    ``valid_seq_len_tensor`` (ring only): a one-entry int32 DRAM device tensor, read at run time, holding the prompt's
    real length; the ring then keeps the positions before it (that length rounded up to whole blocks) instead of the
    padded input's end. Not supported (ValueError naming the argument unless left at upstream's default):
    ``mesh_coords``, ``block_size``. Returns ``cache_tensor``."""
    for name, value in (("mesh_coords", mesh_coords), ("block_size", block_size)):
        if value is not None:
            raise ValueError(f"{name}={value!r}: not supported by ttflashdecode.paged_fill_cache (leave it at None)")
    cache_shape, input_shape = _check_tensors(cache_tensor, input_tensor)
    num_blocks, block = cache_shape[0], cache_shape[2]
    if block % TILE:
        raise ValueError(f"cache_tensor: block_size={block} (dim 2 of a paged cache) must be a multiple of {TILE}")
    device = cache_tensor.device()
    table_rows, users, max_blocks = _page_table(page_table, num_blocks, device)
    input_batch, seq_tiles = input_shape[0], -(-input_shape[2] // TILE)
    ring = check_ring(cache_position_modulo, block, max_blocks)
    _check_valid_seq_len(valid_seq_len_tensor, ring, device)
    if not ring and seq_tiles * TILE > max_blocks * block:
        raise ValueError(
            f"input_tensor: seq_len={input_shape[2]} (tile-padded {seq_tiles * TILE}) does not fit a "
            f"user's {max_blocks} blocks of {block} positions (page_table columns x block_size)"
        )
    index_values = None
    if batch_idx_tensor is not None:
        if isinstance(batch_idx_tensor, torch.Tensor):
            index_values = int_list(
                "batch_idx_tensor", batch_idx_tensor.flatten(), input_batch, 0, users, f"a row of page_table's {users}"
            )
        else:
            shape = check_device_tensor(
                "batch_idx_tensor", batch_idx_tensor, 1, ("int32", "uint32"), layout="ROW_MAJOR", device=device
            )
            if shape[0] != input_batch:
                raise ValueError(
                    f"batch_idx_tensor: expected {input_batch} entries (one per input_tensor row), got "
                    f"shape {list(shape)}"
                )
        batch = 0
    else:
        if input_batch != 1:
            raise ValueError(
                f"input_tensor: input_batch={input_batch} needs batch_idx_tensor (one user per row); "
                "with batch_idx the input must have input_batch 1"
            )
        batch = _host_int("batch_idx", batch_idx)
        if not 0 <= batch < users:
            raise ValueError(f"batch_idx={batch_idx!r}: expected a row of page_table's {users}, in [0, {users})")
        index_values = None
    if table_rows is not None:  # a host table: every block the fill reaches must be in the cache
        needed = -(-min(seq_tiles * TILE, ring or seq_tiles * TILE) // block)
        for user in sorted(set(index_values if index_values is not None else [batch])):
            int_list(
                f"page_table[{user}]",
                table_rows[user][:needed],
                needed,
                0,
                num_blocks,
                f"a block of cache_tensor's {num_blocks}",
            )
    shapes = FillShapes(
        input_batch,
        cache_shape[1],
        cache_shape[3],
        seq_tiles,
        dtype_name(cache_tensor),
        dtype_name(input_tensor),
        users,
        block,
        True,
        max_blocks_per_user=max_blocks,
        num_blocks=num_blocks,
        batch_from_tensor=batch_idx_tensor is not None,
        ring_tiles=ring // TILE,
        valid_from_tensor=valid_seq_len_tensor is not None,
    )
    backend = backend_for(device)
    ttnn = import_ttnn()
    if table_rows is not None:
        page_table = backend.from_torch(torch.tensor(table_rows, dtype=torch.int32), ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
    index = batch_idx_tensor
    if index_values is not None:
        index = backend.from_torch(torch.tensor(index_values, dtype=torch.int32), ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
    _fill(cache_tensor, input_tensor, shapes, batch, page_table, index, compute_kernel_config, valid_seq_len_tensor)
    return cache_tensor


# ---- checks -----------------------------------------------------------------------------------------------------


def _host_int(name: str, value) -> int:
    number = as_int(value)
    if number is None:
        raise TypeError(f"{name}={value!r} ({type(value).__name__}): expected an int")
    return number


def _check_tensors(cache, new):
    cache_shape = check_device_tensor("cache_tensor", cache, 4, KV_DTYPES)
    new_shape = check_device_tensor("input_tensor", new, 4, INPUT_DTYPES, dram=False, device=cache.device())
    if new.memory_config().is_sharded():
        raise ValueError(
            f"input_tensor: expected a DRAM or L1 interleaved tensor, got {new.memory_config()} "
            "(ttnn.to_memory_config(input_tensor, ttnn.DRAM_MEMORY_CONFIG) first)"
        )
    if new_shape[1] != cache_shape[1] or new_shape[3] != cache_shape[3]:
        raise ValueError(
            f"input_tensor: shape {list(new_shape)} does not match cache_tensor {list(cache_shape)}: "
            f"expected n_kv_heads={cache_shape[1]} (dim 1) and head_dim={cache_shape[3]} (dim 3)"
        )
    if new_shape[3] % TILE:
        raise ValueError(f"input_tensor: head_dim={new_shape[3]} must be a multiple of {TILE}")
    backend = backend_for(cache.device())
    if backend.num_chips > 1:
        raise ValueError(
            f"cache_tensor: lives on a mesh of {backend.num_chips} chips; the fill ops take one chip's tensors"
        )
    return cache_shape, new_shape


def _check_valid_seq_len(valid, ring: int, device) -> None:
    """upstream's rules for ``valid_seq_len_tensor``: a bounded (ring) fill only; one int entry, in DRAM."""
    if valid is None:
        return
    if not ring:
        raise ValueError(
            "valid_seq_len_tensor: only supported when cache_position_modulo is set (a bounded fill), "
            "got cache_position_modulo=None"
        )
    shape = check_device_tensor(
        "valid_seq_len_tensor", valid, 1, ("int32", "uint32"), layout="ROW_MAJOR", device=device
    )
    if shape[0] != 1:
        raise ValueError(
            f"valid_seq_len_tensor: expected exactly 1 entry (the prompt's real length), got shape {list(shape)}"
        )


def _page_table(page_table, num_blocks: int, device):
    """(host rows or None, rows, columns). A torch table's entries are checked where a fill reads them."""
    if isinstance(page_table, torch.Tensor):
        if page_table.dim() != 2:
            raise ValueError(f"page_table: expected shape [users, max_blocks_per_user], got {list(page_table.shape)}")
        return page_table.tolist(), int(page_table.shape[0]), int(page_table.shape[1])
    if page_table is None:
        raise TypeError("page_table: expected an int32 [users, max_blocks_per_user] tensor, got None")
    shape = check_device_tensor("page_table", page_table, 2, ("int32", "uint32"), layout="ROW_MAJOR", device=device)
    return None, shape[0], shape[1]


# ---- the program ------------------------------------------------------------------------------------------------


def _fill(
    cache, new, shapes: FillShapes, batch: int, page_table, index, compute_kernel_config=None, valid_len=None
) -> None:
    global last_run
    backend = backend_for(cache.device())
    compute = ComputeSettings.coerce(compute_kernel_config)
    if shapes.input_dtype == "float32" and not compute.fp32_dest_acc_en:
        # float32 input keeps its bits through DST only with 32-bit DST registers
        compute = ComputeSettings(compute.math_fidelity, compute.math_approx_mode, True)
    io = [cache, new] + [t for t in (index, page_table, valid_len) if t is not None]
    key = ("fill_cache", shapes, compute, batch, tuple((t.buffer_address(), str(t.memory_config())) for t in io))
    program = device_cache(backend.device).lookup(
        "programs",
        key,
        lambda: build_fill_program(shapes, cache, new, batch, index, page_table, backend.grid(), compute, valid_len),
    )
    last_run = CacheOpRun(shapes, backend.launch(io, program))


def _aligned(n: int) -> int:
    return -(-n // L1_ALIGNMENT) * L1_ALIGNMENT


def build_fill_program(
    shapes: FillShapes, cache, new, batch: int, index, page_table, grid, compute: ComputeSettings, valid_len=None
):
    """The fill ``ttnn.ProgramDescriptor``: the input's tile rows split over the grid's first cores (``valid_len``:
    a ring fill's valid_seq_len tensor)."""
    ttnn = import_ttnn()
    split = split_units(shapes.num_units, grid)
    cores = core_range_set(split.cores)
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
    reader_args, compute_args, writer_args = (
        select(values, READER_ARGS, reader),
        select(values, COMPUTE_ARGS),
        select(values, WRITER_ARGS, writer),
    )
    per_core = list(zip(split.cores, split.first_unit, split.num_units))
    address = {
        name: t.buffer_address() if t is not None else 0
        for name, t in (("index", index), ("page_table", page_table), ("valid", valid_len))
    }
    reader_rt = [
        (
            ttnn.CoreCoord(*c),
            wire(
                ReaderRuntimeArgs(
                    new.buffer_address(), address["index"], address["page_table"], address["valid"], batch, first, count
                )
            ),
        )
        for c, first, count in per_core
    ]
    compute_rt = [(ttnn.CoreCoord(*c), [count * shapes.Wt]) for c, _, count in per_core]  # tiles, as compute_copy takes
    writer_rt = [
        (ttnn.CoreCoord(*c), wire(WriterRuntimeArgs(cache.buffer_address(), count))) for c, _, count in per_core
    ]

    kernels = [
        kernel_descriptor(READER, cores, reader_args, reader_rt, ttnn.ReaderConfigDescriptor(), [KERNEL_DIR]),
        kernel_descriptor(COMPUTE, cores, compute_args, compute_rt, compute.descriptor(), [KERNEL_DIR]),
        kernel_descriptor(WRITER, cores, writer_args, writer_rt, ttnn.WriterConfigDescriptor(), [KERNEL_DIR]),
    ]

    def scratch_page(tensor) -> int:
        # A page the reader always names: the tensor's page, aligned, or one aligned page when there is no tensor.
        return _aligned(tensor.buffer_page_size() if tensor is not None else 1)

    cbs = [
        cb_descriptor(cores, [CB_INDEX[name]], dtype, page_size, pages)
        for name, dtype, page_size, pages in (
            ("in", new.dtype, new.buffer_page_size(), PAGES_PER_CB),
            ("out", cache.dtype, cache.buffer_page_size(), PAGES_PER_CB),
            ("target", ttnn.uint32, TARGET_RECORD_BYTES, 2),
            ("index", ttnn.int32, scratch_page(index), 1),
            ("page_table", ttnn.int32, scratch_page(page_table), 1),
            ("valid_len", ttnn.int32, scratch_page(valid_len), 1),
        )
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)


__all__ = ["fill_cache", "paged_fill_cache", "FillShapes", "build_fill_program"]
