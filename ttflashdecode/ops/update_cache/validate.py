"""Host checks of an update call: every argument checked, naming it, before anything is uploaded or runs."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ttflashdecode.backend import Backend, backend_for, import_ttnn
from ttflashdecode.checks import (
    KV_DTYPES,
    as_int,
    check_device_tensor,
    check_height_shards,
    check_page_table,
    check_ring,
    dtype_name,
    host_int_values,
    int_list,
    shape_of,
)
from ttflashdecode.ops.descriptors import ComputeSettings
from ttflashdecode.ops.update_cache.args import TILE, UpdateShapes

INPUT_DTYPES = ("bfloat16",)  # upstream: "Input tensors must be FLOAT32 or BFLOAT16"; bf16 is what models pass

_DEFAULTS = {
    "share_cache": (None, False),
    "mesh_coords": (None,),
    "block_size": (None,),
    "num_kv_heads": (None,),
    "batch_offset": (0,),
}


def check_defaults(op: str, **arguments) -> None:
    """Upstream arguments this package does not implement must keep upstream's default."""
    for name, value in arguments.items():
        # None and False by identity (0 == False), numbers as ints
        if not any(value is d if d is None or isinstance(d, bool) else as_int(value) == d for d in _DEFAULTS[name]):
            raise ValueError(f"{name}={value!r}: not supported by ttflashdecode.{op} (leave it at its default)")


# The device-tensor argument that replaces each host-positions argument (for a call inside a trace capture).
DEVICE_POSITIONS = {
    "update_idxs": "update_idxs_tensor",
    "update_idx": "paged_update_cache's update_idxs_tensor",
    "cur_pos": "cur_pos_tensor",
}


def positions_argument(update_idxs, update_idxs_tensor):
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
            got = (shape_of(tensor), dtype_name(tensor), _placement(tensor, tensor is other_new))
            want = (shape_of(first), dtype_name(first), _placement(first, tensor is other_new))
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
    if host_positions is not None:
        backend.refuse_upload_in_capture(index_name, DEVICE_POSITIONS.get(index_name, index_name))
    if table_rows is not None:
        backend.refuse_upload_in_capture("page_table", "page_table")
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


def _placement(tensor, input_: bool) -> str:
    """A tensor's memory config as the second pair of a fused update must repeat it: all of it, but a height-sharded
    input's shard grid (each input's shard cores are the reader's common args; upstream's fused op wants K's and V's
    rows on cores of their own, its "must not overlap")."""
    mem = tensor.memory_config()
    if not (input_ and mem.is_sharded()):
        return str(mem)
    spec = mem.shard_spec
    shard = [int(d) for d in spec.shape]
    return f"{mem.memory_layout} in {mem.buffer_type}, shards of {shard}, {spec.orientation} (on any cores)"


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
        check_height_shards(input_name, mem.shard_spec, new_shape, True, backend_for(cache.device()).grid())
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
