"""Argument checks every op shares (decode, the cache ops, shared-prefix decode, the upstream program): device
tensors, scalars, host integer lists, height shards, page tables and ring caches. Each error names the argument, the
value it got and what was expected. An op's own checks live beside it (``ops/<op>/validate.py``).

Scalars are checked for their type too: numpy and 0-dim torch scalars are accepted where Python ints / floats / bools
are, a bool-like int or a string is not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from ttflashdecode.backend import import_ttnn

KV_DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b")
# The softmax scales the kernels compute right with both exps. Hidden positions carry the finite score MASKED_SCORE
# (-1e30, ops/decode/kernels/flash_decode_common.hpp). The approximate exp takes scores unscaled (q . k units) and fuses
# the scale into its multiplier, so a hidden position weighs exp(-1e30 * scale): exactly 0 only while that argument
# is below the exp's underflow (-88); from scale 8.8e-29 down it leaks (scale 1e-30: every output 10% off).
# 1e-27 keeps it at -1000. The exact exp scales the scores first, so a hidden position stays hidden only while
# |q . k| * scale is far below 1e30 (scale 1e30 with one visible position: PCC 0.87); 1e20 allows |q . k| up to 1e8
# with room. (Past about 9.2e35 the approximate exp's fp32 multiplier 369.3 * scale overflows and the kernel does not
# compile; below 1.2e-38 the scale is an fp32 denormal, which the SFPU reads as zero.)
SCALE_MIN, SCALE_MAX = 1e-27, 1e20
MAX_SLIDING_WINDOW = 2**32 - 1  # a uint32, as ttnn's sliding_window_size (std::optional<uint32_t>)


def dtype_name(tensor) -> str:
    return dtype_name_of(tensor.dtype)


def dtype_name_of(dtype) -> str:
    """'bfloat16' for ttnn.bfloat16 / ttnn.DataType.BFLOAT16."""
    return str(dtype).split(".")[-1].lower()


def shape_of(tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in tensor.shape)


def layout_name(tensor) -> str:
    return "TILE" if tensor.layout == import_ttnn().TILE_LAYOUT else "ROW_MAJOR"


def padded_rows(n: int) -> int:
    """``n`` rounded up to whole tiles (the rows a TILE tensor stores for ``n`` logical rows)."""
    return -(-n // 32) * 32


def same_device(a, b) -> bool:
    """Whether two tensors' ``device()`` are the same device: the same object (ttnn hands back one Python object per
    open device, the emulator is one object per device)."""
    return a is b


def check_device_tensor(
    name: str,
    tensor,
    rank: int,
    dtypes: tuple[str, ...],
    layout: str | None = "TILE",
    dram: bool = True,
    device=None,
    device_name: str = "q's",
) -> tuple[int, ...]:
    """Shape of ``tensor`` after checking that it is a live device tensor on ``device`` (``device_name``: whose it
    is, q's by default; None: not checked) of rank ``rank``, one of ``dtypes``, in ``layout`` (None: TILE or
    ROW_MAJOR) and (``dram``) DRAM interleaved."""
    ttnn = import_ttnn()
    if isinstance(tensor, torch.Tensor) or not hasattr(tensor, "layout"):
        raise TypeError(f"{name}: expected a ttnn or emulator device tensor, got {type(tensor).__name__}")
    # A deallocated tensor still reports its shape and an address that may now belong to another tensor.
    if not tensor.is_allocated():
        raise ValueError(f"{name}: the tensor was deallocated (is_allocated() is False); expected a live device tensor")
    if device is not None and not same_device(tensor.device(), device):
        owner = device_name.removesuffix("'s")
        raise ValueError(
            f"{name}: lives on a different device than {owner} (got a tensor on {tensor.device()!r}, expected "
            f"{device_name} {device!r})"
        )
    shape = shape_of(tensor)
    if len(shape) != rank:
        raise ValueError(f"{name}: expected a rank-{rank} tensor, got shape {list(shape)}")
    if dtype_name(tensor) not in dtypes:
        raise TypeError(f"{name}: dtype {dtype_name(tensor)} not supported; expected one of {', '.join(dtypes)}")
    if layout is not None and layout_name(tensor) != layout:
        want = ttnn.TILE_LAYOUT if layout == "TILE" else ttnn.ROW_MAJOR_LAYOUT
        raise ValueError(f"{name}: expected {want}, got {tensor.layout}")
    mem = tensor.memory_config()
    if dram and (mem.buffer_type != ttnn.BufferType.DRAM or mem.memory_layout != ttnn.TensorMemoryLayout.INTERLEAVED):
        raise ValueError(f"{name}: expected a DRAM interleaved tensor, got {mem}")
    return shape


def plain_scalar(value):
    """The Python number a numpy scalar, a 0-dim numpy array or a 0-dim torch tensor holds; anything else as it is."""
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        return value.item()
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        return value.item()
    return value


def as_int(value) -> int | None:
    """``value`` as a Python int when it is an integer (Python, numpy or 0-dim torch), else None (bools are not
    ints here: ``True`` as a position or a size is a bug in the caller)."""
    value = plain_scalar(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def check_bool(name: str, value) -> bool:
    """A flag as a Python bool. Only real bools (Python or numpy) pass: ``is_causal=2`` or ``share_cache="yes"`` is
    truthy, and silently reading it as True would hide the caller's bug."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name}={value!r} ({type(value).__name__}): expected True or False")


def check_scale(scale) -> float | None:
    """The softmax scale as a Python float: a number in ``[SCALE_MIN, SCALE_MAX]`` (Python, numpy or 0-dim torch),
    or None."""
    if scale is None:
        return None
    value = plain_scalar(scale)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"scale={scale!r} ({type(scale).__name__}): expected a positive finite number or None")
    try:
        value = float(value)
    except OverflowError:  # an int too large for a float
        value = math.inf
    if not (math.isfinite(value) and SCALE_MIN <= value <= SCALE_MAX):
        raise ValueError(
            f"scale={value!r}: expected a positive finite number in [{SCALE_MIN:g}, {SCALE_MAX:g}] (the range where "
            "the kernels keep hidden positions hidden with either exp; see ttflashdecode.checks.SCALE_MIN)"
        )
    return value


def check_sliding_window(sliding_window_size, is_causal: bool) -> int:
    """The window as a Python int, 0 for None (no window)."""
    if sliding_window_size is None:
        return 0
    window = as_int(sliding_window_size)
    if window is None:
        raise TypeError(
            f"sliding_window_size={sliding_window_size!r} ({type(sliding_window_size).__name__}): expected a positive "
            "int or None"
        )
    if not 0 < window <= MAX_SLIDING_WINDOW:
        raise ValueError(
            f"sliding_window_size={window!r}: expected a positive int or None (at most 2**32 - 1: a uint32, as ttnn's)"
        )
    if not is_causal:
        raise ValueError("sliding_window_size: only supported with is_causal=True")
    return window


def host_int_values(name: str, values, length: int, what: str) -> list:
    """Entries of a host sequence of ints (list / tuple, 1-D numpy array, 1-D torch tensor) as a list, checked for
    its length; ``what`` says what the entries are, for the error of a bare number."""
    if isinstance(values, (torch.Tensor, np.ndarray)):
        kind = "tensor" if isinstance(values, torch.Tensor) else "array"
        if values.ndim != 1:
            raise ValueError(f"{name}: expected a 1-D {kind} of {length} ints ({what}), got shape {list(values.shape)}")
        if not _holds_integers(values):
            raise TypeError(f"{name}: expected integers ({what}), got a {values.dtype} {kind}")
        values = values.tolist()
    elif isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name}={values!r} ({type(values).__name__}): expected a list of {length} ints ({what})")
    values = list(values)
    if len(values) != length:
        raise ValueError(f"{name}: expected {length} entries, got {len(values)}")
    return values


def _holds_integers(array) -> bool:
    """Whether a torch tensor or numpy array has an integer dtype (not float, complex or bool)."""
    if isinstance(array, torch.Tensor):
        return not (array.is_floating_point() or array.is_complex() or array.dtype == torch.bool)
    return array.dtype.kind in "iu"


def int_list(name: str, values, length: int, low: int, high: int, what: str) -> list[int]:
    """``values`` (a sequence, numpy array or torch tensor, flattened) as Python ints, each in ``[low, high)``."""
    if isinstance(values, (torch.Tensor, np.ndarray)):
        values = values.flatten()
    values = host_int_values(name, values, length, what)
    checked = []
    for i, p in enumerate(values):
        value = as_int(p)
        if value is None or not low <= value < high:
            raise ValueError(f"{name}[{i}]={p!r}: expected an int in [{low}, {high}) ({what})")
        checked.append(value)
    return checked


def as_int32(value: int) -> int:
    """A value read back from an int32 or uint32 device tensor as the signed int32 the kernels compare (-1 and
    0xFFFFFFFF are both "skip this user")."""
    value = int(value) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def check_height_shards(name: str, spec, shape: tuple[int, ...], tiled: bool, grid) -> None:
    """Height shards the kernels can address: full width, whole tiles (TILE) or whole rows (ROW_MAJOR), ROW_MAJOR
    orientation, enough cores, all on the device's grid."""
    ttnn = import_ttnn()
    if spec is None:
        raise ValueError(f"{name}: a height-sharded tensor needs a shard_spec")
    shard_h, shard_w = (int(d) for d in spec.shape)
    width = padded_rows(shape[-1]) if tiled else shape[-1]
    height = shape[0] * shape[1] * (padded_rows(shape[2]) if tiled else shape[2])
    if shard_w != width or shard_h <= 0 or (tiled and shard_h % 32):
        unit = "a multiple of 32" if tiled else "a positive number of rows"
        raise ValueError(
            f"{name}: shard shape {[shard_h, shard_w]}: expected [{unit}, {width}] (height sharding of "
            f"[{', '.join(map(str, shape))}], {height} x {width} {'padded ' if tiled else ''}rows)"
        )
    if spec.orientation != ttnn.ShardOrientation.ROW_MAJOR:
        raise ValueError(f"{name}: shard orientation {spec.orientation}: expected ROW_MAJOR")
    cores = ttnn.corerange_to_cores(spec.grid, row_wise=True)
    num_shards = -(-height // shard_h)
    if num_shards > len(cores):
        raise ValueError(
            f"{name}: {num_shards} shards of {shard_h} rows for {height} rows, but the shard grid has "
            f"{len(cores)} cores"
        )
    outside = [(c.x, c.y) for c in cores if not (c.x < grid[0] and c.y < grid[1])]
    if outside:
        raise ValueError(f"{name}: shard cores {outside} lie outside the device's {grid[0]}x{grid[1]} grid")
    if 2 * num_shards > 256:
        raise ValueError(f"{name}: {num_shards} shards; the kernels take at most 128 (use taller shards)")


def _page_table_rows_expected(batch: int, share_cache: bool | None) -> str:
    # The reader reads row b for user b, or row 0 for every user with share_cache (None: the op has no share_cache).
    if share_cache is None:
        return f"{batch} rows, one per user"
    if share_cache:
        return f"{batch} rows, or 1 (share_cache=True: every user reads row 0)"
    return f"{batch} rows, one per user (1 row only with share_cache=True)"


def check_page_table(
    name: str,
    page_table,
    batch: int,
    num_blocks: int,
    device,
    share_cache: bool | None = None,
    dtypes: tuple[str, ...] = ("int32", "uint32"),
):
    """(max_blocks_per_user, host rows to upload or None) of the page table passed as argument ``name`` (decode,
    cache update, the upstream baseline). A torch table is checked entry by entry; a device table's entries are the
    kernels' to read (see :func:`check_device_page_table`). ``share_cache``: the decode's flag (row 0 may serve every
    user); None for an op without it. ``dtypes``: a device table's (upstream's decode takes int32 only)."""
    rows_ok = (batch, 1) if share_cache else (batch,)
    if isinstance(page_table, torch.Tensor):
        if page_table.dim() != 2 or page_table.shape[0] not in rows_ok:
            raise ValueError(
                f"{name}: expected shape [{batch}, max_blocks_per_user] "
                f"({_page_table_rows_expected(batch, share_cache)}), got {list(page_table.shape)}"
            )
        int_list(name, page_table, page_table.numel(), 0, num_blocks, f"num_blocks={num_blocks}")
        return int(page_table.shape[1]), page_table.tolist()
    pt_shape = check_device_tensor(name, page_table, 2, dtypes, layout="ROW_MAJOR", device=device)
    if pt_shape[0] not in rows_ok:
        raise ValueError(
            f"{name}: expected {_page_table_rows_expected(batch, share_cache)}, got shape {list(pt_shape)}"
        )
    return pt_shape[1], None


def check_ring(modulo, block_size, max_blocks, paged: bool = True, is_causal: bool = True) -> int:
    """``cache_position_modulo`` as an int (None: 0, no ring) with upstream's rules, shared by the decode op and the
    cache ops: paged only, a positive multiple of the block size (a wrapped position then keeps its place in its
    block) and at most the page table's reach ``max_blocks_per_user * block_size``. Causal only for the decode op: a
    non-causal call attends the whole cache, which a ring does not hold in logical order."""
    if modulo is None:
        return 0
    name = "cache_position_modulo"
    value = as_int(modulo)
    if value is None:
        raise TypeError(f"{name}={modulo!r} ({type(modulo).__name__}): expected a positive int or None")
    if not paged:
        raise ValueError(f"{name}={value}: only supported by the paged op (with a page_table_tensor)")
    if not is_causal:
        raise ValueError(f"{name}={value}: only supported with is_causal=True (positions index the ring)")
    if value <= 0 or value % block_size:
        raise ValueError(
            f"{name}={value}: expected a positive multiple of block_size={block_size} (dim 2 of the paged cache)"
        )
    if value > max_blocks * block_size:
        raise ValueError(
            f"{name}={value}: expected at most max_blocks_per_user * block_size = {max_blocks} * "
            f"{block_size} = {max_blocks * block_size} (the page table's reach)"
        )
    return value
