"""The fill ops' public functions (upstream's names and arguments) and one call's run."""

from __future__ import annotations

import torch

from ttflashdecode.backend import backend_for
from ttflashdecode.checks import check_bool, check_device_tensor, check_ring, dtype_name, int_list
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.descriptors import ComputeSettings
from ttflashdecode.ops.fill_cache.args import FillShapes
from ttflashdecode.ops.fill_cache.factory import build_fill_program
from ttflashdecode.ops.fill_cache.validate import check_tensors, check_valid_seq_len, host_int, page_table_rows
from ttflashdecode.ops.update_cache.api import CacheOpRun
from ttflashdecode.ops.update_cache.args import TILE


def fill_cache(cache_tensor, input_tensor, batch_idx, *, update_idx=0, return_stats=False):
    """``ttnn.fill_cache``: writes ``input_tensor`` (``[1, n_kv_heads, seq_len, head_dim]``) into user ``batch_idx``
    of ``cache_tensor`` (``[b, n_kv_heads, S, head_dim]`` bfloat16 / bfloat8_b / bfloat4_b, TILE, DRAM interleaved) at
    positions ``update_idx .. update_idx + seq_len - 1`` (``update_idx`` a multiple of 32; seq_len tile-padded), in
    place, converting to the cache's dtype. Returns ``cache_tensor`` (with ``return_stats=True``,
    ``(cache_tensor, CacheOpRun)``)."""
    return_stats = check_bool("return_stats", return_stats)
    cache_shape, input_shape = check_tensors(cache_tensor, input_tensor)
    if input_shape[0] != 1:
        raise ValueError(f"input_tensor: expected shape [1, n_kv_heads, seq_len, head_dim], got {list(input_shape)}")
    users, S = cache_shape[0], cache_shape[2]
    batch = host_int("batch_idx", batch_idx)
    if not 0 <= batch < users:
        raise ValueError(f"batch_idx={batch_idx!r}: expected a user of cache_tensor's {users}, in [0, {users})")
    start = host_int("update_idx", update_idx)
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
    run = _fill(cache_tensor, input_tensor, shapes, batch, None, None)
    return (cache_tensor, run) if return_stats else cache_tensor


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
    return_stats=False,
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
    ``mesh_coords``, ``block_size``. Returns ``cache_tensor`` (with ``return_stats=True``,
    ``(cache_tensor, CacheOpRun)``)."""
    return_stats = check_bool("return_stats", return_stats)
    for name, value in (("mesh_coords", mesh_coords), ("block_size", block_size)):
        if value is not None:
            raise ValueError(f"{name}={value!r}: not supported by ttflashdecode.paged_fill_cache (leave it at None)")
    cache_shape, input_shape = check_tensors(cache_tensor, input_tensor)
    num_blocks, block = cache_shape[0], cache_shape[2]
    if block % TILE:
        raise ValueError(f"cache_tensor: block_size={block} (dim 2 of a paged cache) must be a multiple of {TILE}")
    device = cache_tensor.device()
    table_rows, users, max_blocks = page_table_rows(page_table, num_blocks, device)
    input_batch, seq_tiles = input_shape[0], -(-input_shape[2] // TILE)
    ring = check_ring(cache_position_modulo, block, max_blocks)
    check_valid_seq_len(valid_seq_len_tensor, ring, device)
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
        batch = host_int("batch_idx", batch_idx)
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
    if table_rows is not None:
        page_table = backend.int32_tensor(table_rows, [users, max_blocks])
    index = batch_idx_tensor
    if index_values is not None:
        index = backend.int32_tensor(index_values, [input_batch])
    run = _fill(
        cache_tensor, input_tensor, shapes, batch, page_table, index, compute_kernel_config, valid_seq_len_tensor
    )
    return (cache_tensor, run) if return_stats else cache_tensor


def _fill(
    cache, new, shapes: FillShapes, batch: int, page_table, index, compute_kernel_config=None, valid_len=None
) -> CacheOpRun:
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
    return CacheOpRun(shapes, backend.launch(io, program))
