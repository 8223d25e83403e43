"""Host checks of a fill call's tensors and arguments, naming the argument, before anything is uploaded or runs."""

from __future__ import annotations

import torch

from ttflashdecode.backend import backend_for
from ttflashdecode.checks import KV_DTYPES, as_int, check_device_tensor
from ttflashdecode.ops.update_cache.args import TILE

INPUT_DTYPES = ("bfloat16", "float32", "bfloat8_b", "bfloat4_b")


def host_int(name: str, value) -> int:
    number = as_int(value)
    if number is None:
        raise TypeError(f"{name}={value!r} ({type(value).__name__}): expected an int")
    return number


def check_tensors(cache, new):
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


def check_valid_seq_len(valid, ring: int, device) -> None:
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


def page_table_rows(page_table, num_blocks: int, device):
    """(host rows or None, rows, columns). A torch table's entries are checked where a fill reads them."""
    if isinstance(page_table, torch.Tensor):
        if page_table.dim() != 2:
            raise ValueError(f"page_table: expected shape [users, max_blocks_per_user], got {list(page_table.shape)}")
        return page_table.tolist(), int(page_table.shape[0]), int(page_table.shape[1])
    if page_table is None:
        raise TypeError("page_table: expected an int32 [users, max_blocks_per_user] tensor, got None")
    shape = check_device_tensor("page_table", page_table, 2, ("int32", "uint32"), layout="ROW_MAJOR", device=device)
    return None, shape[0], shape[1]
