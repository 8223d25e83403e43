"""KV cache updates on the device: write each user's new K or V row into the cache at the user's position.

    ttflashdecode.paged_update_cache(k_cache, k_new, update_idxs_tensor=pos_dev,   # [blocks, n_kv, block, d] cache
                                     page_table=page_table)                      # (no page_table: [b, n_kv, S, d])
    ttflashdecode.paged_fused_update_cache(k_cache, k_new, v_cache, v_new,        # K and V in one launch
                                           update_idxs_tensor=pos_dev, page_table=page_table)
    ttflashdecode.update_cache(k_cache, k_new_heads_major, pos)                    # ttnn.update_cache's form

Each function is its upstream namesake, with its argument names and tensor forms (a drop-in, and what patch_ttnn()
routes ttnn's calls to). The paged ops' ``input`` (upstream's name; "new" in the docs) is ``[1, b, n_kv_heads,
head_dim]`` (nlp_create_qkv_heads_decode's output): row ``(u, h)`` goes to position ``update_idx[u]`` of head ``h``
of user ``u``'s cache (through ``page_table[u]`` for a paged cache). ``update_cache``'s ``input`` is upstream's
heads-major ``[1, n_kv_heads, b padded to 32, head_dim]``: user ``u``'s row of head ``h`` is ``input[0, h,
batch_offset + u]``. A model calls one of them once per layer per token before decode attention.

The program (``ops/update_cache/kernels/``) is its own: the work units are (cache, user, kv head) triples (one cache, or
K and V for the fused op) split over the grid; for each, the reader finds the tile row holding the position (positions
and page tables are device tensors it reads at run time, so one program serves every step), compute unpacks the tile row
to bfloat16 rows, the writer replaces the unit's row and compute packs the rows back into the cache's format, which the
writer writes over the tile row. That is upstream's untilize / replace / tilize, so a bfloat8_b or bfloat4_b tile is
re-packed exactly as upstream re-packs it: each 16-datum face row (one position, half a tile's columns) gets its shared
exponent from its own values, so the new row's exponents come from the new values and every other row keeps its values.

A position outside the cache at run time (negative, -1 among them, or at / past the cache's length; or, paged, a
page-table column past the table or a block past the cache) writes nothing for that user. Host positions and host
page tables are checked before anything runs. A paged ring cache (``cache_position_modulo = M``, upstream's for
sliding-window layers) is wrapped first: the reader writes a non-negative position p at ``p % M``, so positions grow
without bound.

This module is the one Python definition of the kernels' arguments (named compile-time args, TensorAccessorArgs
offsets, runtime args in wire order), as :mod:`ttflashdecode.kernel_args` is for the decode kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ttflashdecode.backend import Backend, backend_for
from ttflashdecode.device_cache import device_cache
from ttflashdecode.kernel_args import (
    PLACEMENTS,
    AccessorArgs,
    cb_descriptor,
    core_range_set,
    kernel_descriptor,
    select,
    tensor_placement,
    wire,
)
from ttflashdecode.kernel_sources import DECODE_KERNELS, UPDATE_CACHE_KERNELS
from ttflashdecode.program_factory import ComputeSettings
from ttflashdecode.ttnn_env import import_ttnn
from ttflashdecode.validate import (
    KV_DTYPES,
    _check_height_shards,
    as_int,
    check_device_tensor,
    check_page_table,
    check_ring,
    dtype_name,
    host_int_values,
    int_list,
    shape_of,
)
from ttflashdecode.work_split import split_units

KERNEL_DIR = UPDATE_CACHE_KERNELS  # on the include path with DECODE_KERNELS (update_cache_common.hpp, TensorPages)
READER = KERNEL_DIR / "dataflow" / "reader_update_cache.cpp"
COMPUTE = KERNEL_DIR / "compute" / "compute_update_cache.cpp"
WRITER = KERNEL_DIR / "dataflow" / "writer_update_cache.cpp"

TILE = 32
INPUT_DTYPES = ("bfloat16",)  # upstream: "Input tensors must be FLOAT32 or BFLOAT16"; bf16 is what models pass
# cb_rows and cb_patched are two indices over one buffer (compute_update_cache.cpp says why).
CB_INDEX = {"cache": 0, "new_row": 1, "index": 2, "page_table": 3, "target": 4, "out": 16, "rows": 24, "patched": 25}
TARGET_RECORD_BYTES = 16  # update_cache_common.hpp: RowTarget
L1_ALIGNMENT = 32

DOCS = {
    "Wt": "head_dim in tiles",
    "batch": "users of the input (a fused K/V update's units of the second cache start at batch * n_kv_heads)",
    "n_kv_heads": "kv heads of the cache",
    "input_row_tiles": "tile rows of one entry of the input's dim 1 (its dim 2 padded to 32, in tiles)",
    "input_heads_major": "0: input [1, b, n_kv_heads, d] (row (u, h) at [0, u, h]); 1: upstream update_cache's "
    "[1, n_kv_heads, b (padded), d] (row (u, h) at [0, h, input_row_offset + u])",
    "input_row_offset": "heads-major input: the first user's row in dim 2 (upstream's batch_offset)",
    "input_placement": "kernel_args.PLACEMENTS of the input (DRAM or L1 interleaved, or L1 height-sharded)",
    "input_shard_pages": "height-sharded input: pages per shard (0 otherwise)",
    "input_num_shards": "height-sharded input: shards of one input (a fused update's second input's follow them)",
    "input_page_bytes": "an input page (a bfloat16 tile)",
    "kv_len": "positions a user may write (unpaged: the cache's logical length; paged: max_blocks_per_user * "
    "block_size)",
    "cache_position_modulo": "paged ring cache: a read position p >= 0 is written at p % cache_position_modulo "
    "(upstream's, before the page-table lookup; 0: no ring)",
    "is_paged": "1: the position's block is found through the user's page-table row",
    "block_size": "paged: positions per block; unpaged: the cache's tile-padded positions per user",
    "max_blocks_per_user": "paged: page-table columns",
    "num_blocks": "paged: blocks in the cache (entries past it write nothing)",
    "index_page_bytes": "bytes of the index tensor's one page (b int32)",
    "page_table_page_bytes": "bytes of one page-table row",
    "untilize_block": "tiles per pack_untilize call (a divisor of Wt that fits DST)",
    "cache_cta_offset": "offset of the cache's TensorAccessorArgs in the positional compile-time args",
    "input_cta_offset": "... of the input's",
    "index_cta_offset": "... of the index tensor's",
    "page_table_cta_offset": "... of the page table's (the index tensor's when unpaged: never used)",
    "signal_cache_updated": "1: fused with attention: count the units on the attention cores' semaphore when done",
    "sem_cache_updated": "fused with attention: that semaphore's id (0 otherwise: never used)",
    **{f"cb_{name}": f"index of CB {name}" for name in CB_INDEX},
}
READER_ARGS = (
    "Wt",
    "batch",
    "n_kv_heads",
    "input_row_tiles",
    "input_heads_major",
    "input_row_offset",
    "input_placement",
    "input_shard_pages",
    "input_num_shards",
    "input_page_bytes",
    "kv_len",
    "cache_position_modulo",
    "is_paged",
    "block_size",
    "max_blocks_per_user",
    "num_blocks",
    "index_page_bytes",
    "page_table_page_bytes",
    "cache_cta_offset",
    "input_cta_offset",
    "index_cta_offset",
    "page_table_cta_offset",
    "cb_cache",
    "cb_new_row",
    "cb_index",
    "cb_page_table",
    "cb_target",
)
COMPUTE_ARGS = ("Wt", "untilize_block", "cb_cache", "cb_rows", "cb_patched", "cb_out")
WRITER_ARGS = (
    "Wt",
    "cache_cta_offset",
    "signal_cache_updated",
    "sem_cache_updated",
    "cb_new_row",
    "cb_target",
    "cb_rows",
    "cb_patched",
    "cb_out",
)


@dataclass(frozen=True)
class ReaderRuntimeArgs:
    cache_addr: int
    input_addr: int
    cache2_addr: int  # the second cache and input of a fused K/V update (0: one cache)
    input2_addr: int
    index_addr: int
    page_table_addr: int  # 0 unless paged
    first_unit: int  # units are (cache, user, kv head): unit = (which * batch + user) * n_kv_heads + head
    num_units: int


@dataclass(frozen=True)
class ComputeRuntimeArgs:
    num_units: int


@dataclass(frozen=True)
class WriterRuntimeArgs:
    cache_addr: int
    cache2_addr: int  # fused K/V update only
    num_units: int
    num_signals: int  # fused with attention: (noc_x, noc_y, count) triples follow (CacheUpdateSignal)


@dataclass(frozen=True)
class CacheUpdateSignal:
    """An update sharing a program with attention (:mod:`ttflashdecode.fused_update_decode`): when a core's units are
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


@dataclass
class CacheOpRun:
    """What a cache op (update or fill) last launched: its shapes and, on the emulator, the run's statistics."""

    shapes: object
    stats: object | None


last_run: CacheOpRun | None = None


# ---- the ops ----------------------------------------------------------------------------------------------------


def update_cache(cache, input, update_idx, *, batch_offset: int = 0, compute_kernel_config=None):
    """``ttnn.update_cache``: ``input`` is upstream's heads-major ``[1, n_kv_heads, rows, head_dim]`` (bfloat16, TILE;
    rows = the users padded to 32; DRAM or L1 interleaved or L1 height-sharded) and every user u of ``cache``
    (``[b, n_kv_heads, S, head_dim]`` bfloat16 / bfloat8_b / bfloat4_b, TILE, DRAM) gets input row ``batch_offset +
    u`` of each head, in place, at position ``update_idx`` (an int, as upstream; a list of ints or an int32 ``[b]``
    tensor per user also works: a torch tensor is checked and uploaded, a device tensor is read by the kernels at run
    time). ``batch_offset + b`` must fit the input's padded rows. Returns ``cache``.

    Host positions must lie in ``[-1, S)`` (-1 skips the user); a device tensor's entries outside ``[0, S)`` write
    nothing for that user. Rows in ``[1, b, n_kv_heads, head_dim]`` (nlp_create_qkv_heads_decode's form) go through
    :func:`paged_update_cache` instead, with or without a page table."""
    offset = as_int(batch_offset)
    if offset is None:
        raise TypeError(f"batch_offset={batch_offset!r} ({type(batch_offset).__name__}): expected an int")
    call = check_update(
        [(cache, input)],
        update_idx,
        None,
        compute_kernel_config,
        index_name="update_idx",
        heads_major=True,
        batch_offset=offset,
    )
    return _run_update(call)[0]


def paged_update_cache(
    cache_tensor,
    input_tensor,
    *,
    update_idxs=(),
    update_idxs_tensor=None,
    share_cache=None,
    page_table=None,
    batch_offset: int = 0,
    compute_kernel_config=None,
    mesh_coords=None,
    block_size=None,
    num_kv_heads=None,
    cache_position_modulo=None,
):
    """``ttnn.experimental.paged_update_cache``: writes ``input_tensor`` (``[1, b, n_kv_heads, head_dim]``) into
    ``cache_tensor`` in place at each user's position, given as ``update_idxs`` (b host ints) or
    ``update_idxs_tensor`` (int32 ``[b]``, read at run time). With ``page_table`` (int32 ``[b, max_blocks_per_user]``,
    ROW_MAJOR; a device tensor read at run time, or a torch tensor checked and uploaded) the cache is paged,
    ``[num_blocks, n_kv_heads, block_size, head_dim]``, and position p of user u lives in block
    ``page_table[u, p // block_size]``; without it the cache is ``[b_cache >= b, n_kv_heads, S, head_dim]``.

    ``cache_position_modulo`` (upstream's; paged only, None: off): the cache is a ring of that many positions (a
    sliding-window layer's cache, smaller than the sequence): position p is written where position
    ``p % cache_position_modulo`` lives, the kernels wrapping each position they read (so a device tensor's positions
    may grow without bound). A positive multiple of the cache's block_size, at most ``max_blocks_per_user *
    block_size``; host positions then lie in ``[-1, 2**31)``.

    At run time a position outside the user's cache (after the wrap), or a page-table entry outside ``[0,
    num_blocks)``, writes nothing for that user. Not supported (ValueError naming the argument unless left at
    upstream's default): ``share_cache``, ``batch_offset``, ``mesh_coords``, ``block_size``, ``num_kv_heads``. Returns
    ``cache_tensor``."""
    _check_defaults(
        "paged_update_cache",
        share_cache=share_cache,
        mesh_coords=mesh_coords,
        block_size=block_size,
        num_kv_heads=num_kv_heads,
        batch_offset=batch_offset,
    )
    name, positions = _positions_argument(update_idxs, update_idxs_tensor)
    call = check_update(
        [(cache_tensor, input_tensor)],
        positions,
        page_table,
        compute_kernel_config,
        index_name=name,
        cache_position_modulo=cache_position_modulo,
    )
    return _run_update(call)[0]


def paged_fused_update_cache(
    cache_tensor1,
    input_tensor1,
    cache_tensor2,
    input_tensor2,
    *,
    update_idxs=(),
    update_idxs_tensor=None,
    share_cache=None,
    page_table=None,
    batch_offset: int = 0,
    compute_kernel_config=None,
    mesh_coords=None,
):
    """``ttnn.experimental.paged_fused_update_cache``: :func:`paged_update_cache` of two caches (K and V) with the
    same positions (and page table), in one launch. The second cache and input must match the first ones' shape, dtype
    and placement. Returns ``(cache_tensor1, cache_tensor2)``."""
    _check_defaults(
        "paged_fused_update_cache", share_cache=share_cache, mesh_coords=mesh_coords, batch_offset=batch_offset
    )
    name, positions = _positions_argument(update_idxs, update_idxs_tensor)
    pairs = [(cache_tensor1, input_tensor1), (cache_tensor2, input_tensor2)]
    return tuple(_update(pairs, positions, page_table, compute_kernel_config, index_name=name))


_DEFAULTS = {
    "share_cache": (None, False),
    "mesh_coords": (None,),
    "block_size": (None,),
    "num_kv_heads": (None,),
    "batch_offset": (0,),
}


def _check_defaults(op: str, **arguments) -> None:
    """Upstream arguments this package does not implement must keep upstream's default."""
    for name, value in arguments.items():
        # None and False by identity (0 == False), numbers as ints
        if not any(value is d if d is None or isinstance(d, bool) else as_int(value) == d for d in _DEFAULTS[name]):
            raise ValueError(f"{name}={value!r}: not supported by ttflashdecode.{op} (leave it at its default)")


def _positions_argument(update_idxs, update_idxs_tensor):
    given = [n for n, v in (("update_idxs", update_idxs), ("update_idxs_tensor", update_idxs_tensor)) if _given(v)]
    if len(given) != 1:
        raise ValueError(f"update_idxs / update_idxs_tensor: expected exactly one of them, got {given or 'neither'}")
    return given[0], update_idxs_tensor if given[0] == "update_idxs_tensor" else update_idxs


def _given(value) -> bool:
    if value is None:
        return False
    if isinstance(value, (list, tuple)):
        return len(value) > 0
    return True


# ---- one call ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UpdateCall:
    """An update call checked on the host: what its program needs, before anything is uploaded."""

    shapes: UpdateShapes
    pairs: tuple  # ((cache, input),) or K's and V's
    positions: object  # the caller's device index tensor (None: host_positions)
    host_positions: tuple[int, ...] | None
    page_table: object  # the caller's device page table (None: unpaged, or table_rows)
    table_rows: tuple | None  # a torch page table's rows, checked
    compute: ComputeSettings
    backend: Backend


def check_update(
    pairs,
    positions,
    page_table,
    compute_kernel_config,
    *,
    index_name: str,
    names=None,
    heads_major: bool = False,
    batch_offset: int = 0,
    cache_position_modulo=None,
) -> UpdateCall:
    """Checks an update of each (cache, input) of ``pairs`` (one, or K and V) on the host; nothing runs or is
    uploaded. Errors name the argument (``names``: the caller's (cache, input) names of each pair). ``heads_major``:
    the input is upstream update_cache's ``[1, n_kv_heads, >= batch_offset + b, head_dim]`` and every user of the
    (unpaged) cache is updated from rows ``batch_offset ..``; else it is ``[1, b, n_kv_heads, head_dim]``.
    ``cache_position_modulo``: a paged ring cache (:func:`check_ring`)."""
    # ---- check everything before any device work
    if names is None:
        names = (
            [("cache", "input")]
            if len(pairs) == 1
            else [("cache_tensor1", "input_tensor1"), ("cache_tensor2", "input_tensor2")]
        )
    cache, new = pairs[0]
    cache_shape, new_shape = _check_pair(cache, new, *names[0], heads_major)
    for (other_cache, other_new), (cache_name, input_name) in zip(pairs[1:], names[1:]):
        _check_pair(other_cache, other_new, cache_name, input_name, heads_major)
        for name, tensor, first in ((cache_name, other_cache, cache), (input_name, other_new, new)):
            got = (shape_of(tensor), dtype_name(tensor), str(tensor.memory_config()))
            want = (shape_of(first), dtype_name(first), str(first.memory_config()))
            if got != want or tensor.device() is not cache.device():
                raise ValueError(
                    f"{name}: shape, dtype and placement {got} must be the first one's {want}, on its device"
                )
    device = cache.device()
    _, batch, n_kv, head_dim = new_shape
    form = dict(input_row_tiles=-(-new_shape[2] // TILE))
    if heads_major:
        batch, n_kv = cache_shape[0], new_shape[1]
        if batch_offset < 0 or batch_offset + batch > form["input_row_tiles"] * TILE:
            raise ValueError(
                f"batch_offset={batch_offset}: the {batch} users of {names[0][0]} take input rows "
                f"batch_offset .. batch_offset + {batch - 1}, past {names[0][1]}'s "
                f"{form['input_row_tiles'] * TILE} (padded) rows of dim 2"
            )
        form.update(input_heads_major=True, input_row_offset=batch_offset)
    compute = ComputeSettings.coerce(compute_kernel_config)
    backend = backend_for(device)
    if backend.num_chips > 1:
        raise ValueError(
            f"{names[0][0]}: lives on a mesh of {backend.num_chips} chips; the update ops take one chip's tensors"
        )
    if page_table is None:
        if cache_shape[0] < batch:
            raise ValueError(
                f"{names[0][0]}: has {cache_shape[0]} users but input has b={batch}; expected at least {batch}"
            )
        kv_len = cache_shape[2]
        shapes = UpdateShapes(
            batch,
            n_kv,
            head_dim,
            dtype_name(cache),
            kv_len,
            -(-kv_len // TILE) * TILE,
            False,
            num_caches=len(pairs),
            **form,
        )
        table_rows = None
    else:
        block = cache_shape[2]
        if block % TILE:
            raise ValueError(f"{names[0][0]}: block_size={block} (dim 2 of a paged cache) must be a multiple of {TILE}")
        max_blocks, table_rows = check_page_table("page_table", page_table, batch, cache_shape[0], device)
        ring = check_ring(cache_position_modulo, block, max_blocks)
        shapes = UpdateShapes(
            batch,
            n_kv,
            head_dim,
            dtype_name(cache),
            max_blocks * block,
            block,
            True,
            max_blocks,
            cache_shape[0],
            num_caches=len(pairs),
            cache_position_modulo=ring,
            **form,
        )
    if page_table is None and cache_position_modulo is not None:
        raise ValueError(
            f"cache_position_modulo={cache_position_modulo!r}: only supported in paged mode (when "
            "page_table is provided)"
        )
    # A ring takes any int32 position (wrapped by the kernels); else a position must lie in the cache.
    position_end = RING_POSITION_END if shapes.cache_position_modulo else shapes.kv_len
    host_positions = _check_positions(index_name, positions, batch, position_end, device)
    return UpdateCall(
        shapes,
        tuple(pairs),
        positions if host_positions is None else None,
        None if host_positions is None else tuple(host_positions),
        page_table if table_rows is None else None,
        None if table_rows is None else tuple(tuple(r) for r in table_rows),
        compute,
        backend,
    )


def update_tensors(call: UpdateCall):
    """(index tensor, page table or None) the kernels read: the caller's device tensors, or host values uploaded."""
    if call.host_positions is None:
        index = call.positions
    else:
        index = _index_tensor(call.backend, "update_idx", list(call.host_positions), [call.shapes.batch])
    page_table = call.page_table
    if call.table_rows is not None:
        rows = call.table_rows
        page_table = call.backend.int32_tensor(rows, [len(rows), len(rows[0])])
    return index, page_table


def _update(pairs, positions, page_table, compute_kernel_config, *, index_name: str) -> list:
    """Updates each (cache, input) of ``pairs`` (one, or K and V) with one launch; returns the caches."""
    return _run_update(check_update(pairs, positions, page_table, compute_kernel_config, index_name=index_name))


def _run_update(call: UpdateCall) -> list:
    """Uploads what the call's host values need, then builds (or looks up) and launches the program."""
    global last_run
    pairs = call.pairs
    index, page_table = update_tensors(call)
    backend, shapes, compute = call.backend, call.shapes, call.compute
    io = [t for pair in pairs for t in pair] + [index] + ([page_table] if page_table is not None else [])
    key = ("update_cache", shapes, compute, tuple((t.buffer_address(), str(t.memory_config())) for t in io))
    program = device_cache(backend.device).lookup(
        "programs", key, lambda: build_update_program(shapes, pairs, index, page_table, backend.grid(), compute)
    )
    stats = backend.launch(io, program)
    last_run = CacheOpRun(shapes, stats)
    return [c for c, _ in pairs]


INPUT_FORMS = "DRAM or L1 interleaved, or L1 height-sharded (full-width shards of whole tiles, ROW_MAJOR orientation)"


def _check_pair(cache, new, cache_name: str, input_name: str, heads_major: bool = False):
    """(cache shape, input shape) of one cache and its new rows, checked."""
    ttnn = import_ttnn()
    cache_shape = check_device_tensor(cache_name, cache, 4, KV_DTYPES)
    new_shape = check_device_tensor(input_name, new, 4, INPUT_DTYPES, dram=False, device=cache.device())
    mem = new.memory_config()
    if mem.is_sharded():
        # nlp_create_qkv_heads_decode's form (tt_transformers, DeepSeek MLA): one user's padded head rows per core
        if mem.memory_layout != ttnn.TensorMemoryLayout.HEIGHT_SHARDED or mem.buffer_type != ttnn.BufferType.L1:
            raise ValueError(f"{input_name}: memory config {mem}: expected {INPUT_FORMS}")
        _check_height_shards(input_name, mem.shard_spec, new_shape, True, backend_for(cache.device()).grid())
    elif mem.memory_layout != ttnn.TensorMemoryLayout.INTERLEAVED:
        raise ValueError(f"{input_name}: memory config {mem}: expected {INPUT_FORMS}")
    form = "[1, n_kv_heads, b, head_dim]" if heads_major else "[1, b, n_kv_heads, head_dim]"
    if new_shape[0] != 1:
        raise ValueError(f"{input_name}: expected shape {form}, got {list(new_shape)}")
    if new_shape[3] % TILE:
        raise ValueError(f"{input_name}: head_dim={new_shape[3]} must be a multiple of {TILE}")
    heads = new_shape[1] if heads_major else new_shape[2]
    if cache_shape[1] != heads or cache_shape[3] != new_shape[3]:
        raise ValueError(
            f"{input_name}: shape {list(new_shape)} does not match {cache_name} {list(cache_shape)}: expected "
            f"n_kv_heads={cache_shape[1]} and head_dim={cache_shape[3]} (input form {form})"
        )
    return cache_shape, new_shape


RING_POSITION_END = 2**31  # a ring's positions: int32 (the index tensor's type), -1 skipping the user


def _check_positions(name: str, positions, batch: int, kv_len: int, device) -> list[int] | None:
    """Host positions as a list (each in [-1, kv_len); a ring's kv_len is RING_POSITION_END), or None for a device
    tensor (checked for its form only)."""
    if isinstance(positions, torch.Tensor) or isinstance(positions, (list, tuple)) or as_int(positions) is not None:
        if as_int(positions) is not None:
            positions = [as_int(positions)] * batch
        if isinstance(positions, torch.Tensor):
            positions = positions.flatten()
        ring = kv_len == RING_POSITION_END
        what = "a ring position, or -1 to skip" if ring else f"a position of the cache's {kv_len}, or -1 to skip"
        return int_list(name, positions, batch, -1, kv_len, what)
    if not hasattr(positions, "layout"):
        host_int_values(name, positions, batch, "positions")  # raises the TypeError naming the argument
    shape = check_device_tensor(name, positions, 1, ("int32", "uint32"), layout="ROW_MAJOR", device=device)
    if shape[0] != batch:
        raise ValueError(f"{name}: expected {batch} entries (one position per user), got shape {list(shape)}")
    return None


def _index_tensor(backend: Backend, name: str, values: list[int], shape: list[int]):
    """A device int32 tensor holding host ``values``: one per device and shape, rewritten in place every call, so the
    program (keyed by the tensor's address) is built once."""
    tensor = device_cache(backend.device).lookup(
        "staging", ("update_cache", name, tuple(shape)), lambda: backend.int32_tensor(values, shape)
    )
    write_host(backend, tensor, torch.tensor(values, dtype=torch.int32).reshape(shape))
    return tensor


def write_host(backend: Backend, tensor, host: torch.Tensor) -> None:
    """Overwrites device tensor ``tensor`` with ``host`` (same shape and dtype), keeping its address."""
    if backend.is_emulator:
        backend.device.write(tensor, host)
        return
    ttnn = import_ttnn()
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(host, dtype=tensor.dtype, layout=tensor.layout), tensor)


def read_host(backend: Backend, tensor) -> torch.Tensor:
    """A (one-chip) device tensor read back to the host."""
    return backend.to_torch_per_chip(tensor)[0]


# ---- the program ------------------------------------------------------------------------------------------------


def untilize_block_tiles(Wt: int, fp32_dest_acc_en: bool) -> int:
    """The largest divisor of Wt that fits DST (8 bfloat16 tiles, 4 float32 tiles: half-sync DST)."""
    capacity = 4 if fp32_dest_acc_en else 8
    return max(d for d in range(1, min(Wt, capacity) + 1) if Wt % d == 0)


def _aligned(n: int) -> int:
    return -(-n // L1_ALIGNMENT) * L1_ALIGNMENT


def update_kernel_args(
    shapes: UpdateShapes, cache, new, index, page_table, fp32_dest_acc_en: bool, signal: CacheUpdateSignal | None = None
):
    """(reader, compute, writer) :class:`KernelArgs`: every value computed once, here."""
    input_at = tensor_placement(new)
    values = {
        "Wt": shapes.Wt,
        "batch": shapes.batch,
        "n_kv_heads": shapes.n_kv_heads,
        "input_row_tiles": shapes.input_row_tiles,
        "input_heads_major": int(shapes.input_heads_major),
        "input_row_offset": shapes.input_row_offset,
        "input_placement": PLACEMENTS[input_at.placement],
        "input_shard_pages": input_at.shard_pages,
        "input_num_shards": len(input_at.shard_cores),
        "input_page_bytes": input_at.page_bytes,
        "kv_len": shapes.kv_len,
        "cache_position_modulo": shapes.cache_position_modulo,
        "is_paged": int(shapes.is_paged),
        "block_size": shapes.block_size,
        "max_blocks_per_user": shapes.max_blocks_per_user,
        "num_blocks": shapes.num_blocks,
        "index_page_bytes": index.buffer_page_size(),
        "page_table_page_bytes": page_table.buffer_page_size() if page_table is not None else 0,
        "untilize_block": untilize_block_tiles(shapes.Wt, fp32_dest_acc_en),
        "signal_cache_updated": int(signal is not None),
        "sem_cache_updated": signal.sem_id if signal is not None else 0,
        **{f"cb_{name}": i for name, i in CB_INDEX.items()},
    }
    reader = AccessorArgs()
    reader.add("cache", cache)
    reader.add("input", None if input_at.sharded else new, absent_like="cache")  # sharded: addressed per shard core
    reader.add("index", index)
    reader.add("page_table", page_table, absent_like="index")
    writer = AccessorArgs()
    writer.add("cache", cache)
    return select(values, READER_ARGS, reader), select(values, COMPUTE_ARGS), select(values, WRITER_ARGS, writer)


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
    first ones); ``signal``: the update shares a program with attention (:mod:`ttflashdecode.fused_update_decode`),
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

    table_page = _aligned(page_table.buffer_page_size() if page_table is not None else 1)
    cbs = [
        cb_descriptor(cores, [CB_INDEX[name] for name in names], dtype, page_size, pages)
        for names, dtype, page_size, pages in (
            (["cache"], cache_dtype, cache_tile, Wt),
            (["new_row"], ttnn.bfloat16, shapes.head_dim * 2, 1),
            (["index"], ttnn.int32, _aligned(index.buffer_page_size()), 1),
            (["target"], ttnn.uint32, TARGET_RECORD_BYTES, 2),
            (["rows", "patched"], ttnn.bfloat16, rows_tile, Wt),
            (["out"], cache_dtype, cache_tile, Wt),
            # Unpaged, the reader still names the (unused) page-table scratch: one aligned page.
            (["page_table"], ttnn.int32, table_page, 1),
        )
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)


__all__ = [
    "update_cache",
    "paged_update_cache",
    "paged_fused_update_cache",
    "UpdateShapes",
    "build_update_program",
    "check_update",
    "update_tensors",
    "CacheUpdateSignal",
]
