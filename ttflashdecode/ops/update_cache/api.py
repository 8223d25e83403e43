"""The cache update ops' public functions (upstream's names, arguments and tensor forms), and one call's run: check,
upload host values, build or look up the program, launch."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ttflashdecode.backend import Backend, import_ttnn
from ttflashdecode.checks import check_bool
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.update_cache import fast_path
from ttflashdecode.ops.update_cache.factory import build_update_program
from ttflashdecode.ops.update_cache.validate import UpdateCall, as_int, check_defaults, check_update, positions_argument


@dataclass
class CacheOpRun:
    """What a cache op (update or fill) launched (``return_stats=True``): its shapes and, on the emulator, the run's
    statistics."""

    shapes: object
    stats: object | None


def update_cache(cache, input, update_idx, *, batch_offset: int = 0, compute_kernel_config=None, return_stats=False):
    """``ttnn.update_cache``: ``input`` is upstream's heads-major ``[1, n_kv_heads, rows, head_dim]`` (bfloat16, TILE;
    rows = the users padded to 32; DRAM or L1 interleaved or L1 height-sharded) and every user u of ``cache``
    (``[b, n_kv_heads, S, head_dim]`` bfloat16 / bfloat8_b / bfloat4_b, TILE, DRAM) gets input row ``batch_offset +
    u`` of each head, in place, at position ``update_idx`` (an int, as upstream; a list of ints or an int32 ``[b]``
    tensor per user also works: a torch tensor is checked and uploaded, a device tensor is read by the kernels at run
    time). ``batch_offset + b`` must fit the input's padded rows. Returns ``cache`` (with ``return_stats=True``,
    ``(cache, CacheOpRun)``).

    Host positions must lie in ``[-1, S)`` (-1 skips the user); a device tensor's entries outside ``[0, S)`` write
    nothing for that user. Rows in ``[1, b, n_kv_heads, head_dim]`` (nlp_create_qkv_heads_decode's form) go through
    :func:`paged_update_cache` instead, with or without a page table."""
    return_stats = check_bool("return_stats", return_stats)
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
    return _returned(_run_update(call), return_stats)


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
    return_stats=False,
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
    tensors = (cache_tensor, input_tensor, update_idxs_tensor, page_table)
    signed = None
    if (
        type(return_stats) is bool
        and (cache_position_modulo is None or type(cache_position_modulo) is int)
        and fast_path.untouched(update_idxs, share_cache, batch_offset, mesh_coords, block_size, num_kv_heads)
    ):
        signed = fast_path.signature(
            "paged_update_cache", tensors, compute_kernel_config, cache_position_modulo, return_stats
        )
        hit = fast_path.launch_hit(signed, tensors)
        if hit is not None:
            return _returned(([cache_tensor], CacheOpRun(hit[1], hit[0])), return_stats)
    return_stats = check_bool("return_stats", return_stats)
    check_defaults(
        "paged_update_cache",
        share_cache=share_cache,
        mesh_coords=mesh_coords,
        block_size=block_size,
        num_kv_heads=num_kv_heads,
        batch_offset=batch_offset,
    )
    name, positions = positions_argument(update_idxs, update_idxs_tensor)
    call = check_update(
        [(cache_tensor, input_tensor)],
        positions,
        page_table,
        compute_kernel_config,
        index_name=name,
        cache_position_modulo=cache_position_modulo,
    )
    return _returned(_run_update(call, signed), return_stats)


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
    return_stats=False,
):
    """``ttnn.experimental.paged_fused_update_cache``: :func:`paged_update_cache` of two caches (K and V) with the
    same positions (and page table), in one launch. The second cache and input must match the first ones' shape, dtype
    and placement, but a height-sharded input's shards may lie on other cores (upstream's fused op requires K's and
    V's rows on cores of their own). Returns ``(cache_tensor1, cache_tensor2)`` (with
    ``return_stats=True``, ``((cache_tensor1, cache_tensor2), CacheOpRun)``)."""
    tensors = (cache_tensor1, input_tensor1, cache_tensor2, input_tensor2, update_idxs_tensor, page_table)
    signed = None
    if type(return_stats) is bool and fast_path.untouched(update_idxs, share_cache, batch_offset, mesh_coords):
        signed = fast_path.signature("paged_fused_update_cache", tensors, compute_kernel_config, return_stats)
        hit = fast_path.launch_hit(signed, tensors)
        if hit is not None:
            return _returned(([cache_tensor1, cache_tensor2], CacheOpRun(hit[1], hit[0])), return_stats)
    return_stats = check_bool("return_stats", return_stats)
    check_defaults(
        "paged_fused_update_cache", share_cache=share_cache, mesh_coords=mesh_coords, batch_offset=batch_offset
    )
    name, positions = positions_argument(update_idxs, update_idxs_tensor)
    pairs = [(cache_tensor1, input_tensor1), (cache_tensor2, input_tensor2)]
    call = check_update(pairs, positions, page_table, compute_kernel_config, index_name=name)
    return _returned(_run_update(call, signed), return_stats)


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


def _returned(run: tuple[list, CacheOpRun], return_stats: bool):
    """What a cache op returns from ``(caches, CacheOpRun)``: its one cache, or its pair of caches (K and V); with
    ``return_stats``, ``(that, CacheOpRun)``."""
    caches, result = run
    value = caches[0] if len(caches) == 1 else tuple(caches)
    return (value, result) if return_stats else value


def _run_update(call: UpdateCall, signed: tuple | None = None) -> tuple[list, CacheOpRun]:
    """Uploads what the call's host values need, then builds (or looks up) and launches the program: (the caches,
    what ran). ``signed``: the call's fast-path signature (None: not signed), under which its launch is kept."""
    pairs = call.pairs
    index, page_table = update_tensors(call)
    backend, shapes, compute = call.backend, call.shapes, call.compute
    io = [t for pair in pairs for t in pair] + [index] + ([page_table] if page_table is not None else [])
    key = ("update_cache", shapes, compute, tuple((t.buffer_address(), str(t.memory_config())) for t in io))
    launchable = device_cache(backend.device).lookup(
        "programs",
        key,
        lambda: backend.launchable([build_update_program(shapes, pairs, index, page_table, backend.grid(), compute)]),
    )
    stats = backend.run(io, launchable)
    run = backend.run if backend.is_emulator else backend.card_launcher()
    fast_path.remember(signed, backend.device, launchable, run, shapes)
    return [c for c, _ in pairs], CacheOpRun(shapes, stats)


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
