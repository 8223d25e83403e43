"""Device tensors of the emulator (``EmuTensor``) and their host <-> DRAM-page conversion.

Layouts follow ttnn: TILE tensors are padded with zeros to multiples of 32 in the last two dims (``padded_shape``)
and stored as 32x32 tiles, page = one tile, tiles ordered row-major over (leading dims, tile rows, tile cols);
ROW_MAJOR tensors have page = one row of the last dim. Pages of a DRAM-interleaved buffer go round-robin over the
12 banks (see device.py). An L1 HEIGHT_SHARDED tensor (TILE or ROW_MAJOR) keeps the same page order but splits it
into consecutive shards of ``shard_h`` rows (TILE: shard_h / 32 tile rows; ROW_MAJOR: shard_h pages), shard k in the
L1 of the k-th core of its shard grid (``ShardLayout``). An L1-INTERLEAVED
tensor deals its pages round-robin over the L1 banks, one per compute core (``L1InterleavedLayout``). Tile bytes come
from ``include/emu/formats.h`` (the project's one implementation of each format) through the runtime's host library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .build import host_lib
from .errors import EmulatorError
from .ttnn_env import import_ttnn

ttnn = import_ttnn()

TILE = 32


@dataclass(frozen=True)
class DtypeInfo:
    name: str
    data_format: int  # tt::DataFormat value
    elem_bytes: int  # row-major element size (0: tile-only format)
    torch_out: torch.dtype  # dtype ttnn.to_torch returns


DTYPES = {
    ttnn.bfloat16: DtypeInfo("bfloat16", 5, 2, torch.bfloat16),
    ttnn.float32: DtypeInfo("float32", 0, 4, torch.float32),
    ttnn.bfloat8_b: DtypeInfo("bfloat8_b", 6, 0, torch.float32),
    ttnn.bfloat4_b: DtypeInfo("bfloat4_b", 7, 0, torch.float32),
    ttnn.uint32: DtypeInfo("uint32", 24, 4, torch.uint32),
    ttnn.int32: DtypeInfo("int32", 8, 4, torch.int32),
}


def dtype_info(dtype) -> DtypeInfo:
    try:
        return DTYPES[dtype]
    except (KeyError, TypeError):
        raise EmulatorError(
            f"dtype {dtype} is not supported by the emulator (supported: {', '.join(d.name for d in DTYPES.values())})"
        ) from None


# ttnn.from_torch's dtype for a torch tensor given without one (ttnn 0.81.1, measured on its host tensors):
# float16 becomes bfloat16, int64 uint32, int16 uint16, bool uint8. float64 has none (ttnn aborts the process).
TORCH_DEFAULT_DTYPES = {
    torch.float32: ttnn.float32,
    torch.bfloat16: ttnn.bfloat16,
    torch.float16: ttnn.bfloat16,
    torch.int32: ttnn.int32,
    torch.int64: ttnn.uint32,
    torch.uint32: ttnn.uint32,
    torch.int16: ttnn.uint16,
    torch.uint8: ttnn.uint8,
    torch.bool: ttnn.uint8,
    torch.int8: ttnn.int8,
}


def default_dtype(x: torch.Tensor):
    """The ttnn dtype ``ttnn.from_torch(x)`` gives a tensor passed without ``dtype=``."""
    try:
        return TORCH_DEFAULT_DTYPES[x.dtype]
    except KeyError:
        raise EmulatorError(
            f"from_torch: a {x.dtype} tensor has no ttnn dtype of its own; pass dtype= (e.g. "
            "ttnn.bfloat16 or ttnn.float32)"
        ) from None


def default_layout(dtype):
    """``ttnn.from_torch``'s layout when none is given: ROW_MAJOR, except for the block floats, which only exist as
    tiles (``ttnn.from_torch(x, dtype=ttnn.bfloat8_b)`` is a TILE tensor)."""
    return ttnn.TILE_LAYOUT if dtype_info(dtype).elem_bytes == 0 else ttnn.ROW_MAJOR_LAYOUT


def tile_size_bytes(dtype) -> int:
    return int(host_lib().ttfd_tile_size_bytes(dtype_info(dtype).data_format))


def padded_shape_of(shape: tuple[int, ...], layout) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if layout != ttnn.TILE_LAYOUT:
        return shape
    if len(shape) == 0:
        shape = (1, 1)
    if len(shape) == 1:
        shape = (1,) + shape
    up = lambda v: max(TILE, math.ceil(v / TILE) * TILE)  # noqa: E731
    return shape[:-2] + (up(shape[-2]), up(shape[-1]))


def page_geometry(shape, dtype, layout) -> tuple[int, int]:
    """(page size in bytes, number of pages) of a tensor, as ttnn's buffer_page_size / buffer_num_pages."""
    info = dtype_info(dtype)
    padded = padded_shape_of(shape, layout)
    if layout == ttnn.TILE_LAYOUT:
        n = math.prod(padded[:-2]) * (padded[-2] // TILE) * (padded[-1] // TILE)
        return tile_size_bytes(dtype), int(n)
    if info.elem_bytes == 0:
        raise EmulatorError(f"{info.name} needs TILE_LAYOUT")
    width = padded[-1] if padded else 1
    rows = math.prod(padded[:-1]) if len(padded) > 1 else 1
    return int(width * info.elem_bytes), int(rows)


def _as_float_bits(x: torch.Tensor, info: DtypeInfo) -> np.ndarray:
    """Values as float32 slots for formats.h: floats by value, 32-bit integers by bit pattern."""
    if info.data_format in (24, 8):
        xi = x.contiguous().view(torch.int32) if x.dtype == torch.uint32 else x.to(torch.int64).to(torch.int32)
        return xi.contiguous().numpy().view(np.float32)
    return x.to(torch.float32).contiguous().numpy()


def host_to_pages(x: torch.Tensor, dtype, layout) -> tuple[bytes, tuple[int, ...]]:
    """Convert a torch tensor to the bytes of its pages (page 0 first) and return (bytes, padded_shape)."""
    info = dtype_info(dtype)
    shape = tuple(x.shape)
    padded = padded_shape_of(shape, layout)
    if layout == ttnn.TILE_LAYOUT:
        x2 = x.reshape((1, 1) if x.dim() == 0 else (1,) + shape if x.dim() == 1 else shape)
        pad = [0, padded[-1] - x2.shape[-1], 0, padded[-2] - x2.shape[-2]]
        vals = _as_float_bits(x2.contiguous(), info)
        vals = np.pad(vals.reshape((-1,) + vals.shape[-2:]), [(0, 0), (0, pad[3]), (0, pad[1])])
        b, h, w = vals.shape
        tiles = vals.reshape(b, h // TILE, TILE, w // TILE, TILE).transpose(0, 1, 3, 2, 4)
        tiles = np.ascontiguousarray(tiles, dtype=np.float32)
        ntiles = b * (h // TILE) * (w // TILE)
        out = np.empty(ntiles * tile_size_bytes(dtype), dtype=np.uint8)
        host_lib().ttfd_pack_tiles(info.data_format, tiles.ctypes.data, ntiles, out.ctypes.data)
        return out.tobytes(), padded
    if info.elem_bytes == 0:
        raise EmulatorError(f"{info.name} needs TILE_LAYOUT")
    if info.data_format == 5:
        raw = x.to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()
    elif info.data_format == 0:
        raw = x.to(torch.float32).contiguous().numpy().tobytes()
    elif info.data_format == 24:
        raw = (
            (x.contiguous().view(torch.int32) if x.dtype == torch.uint32 else x.to(torch.int64).to(torch.int32))
            .contiguous()
            .numpy()
            .tobytes()
        )
    else:
        raw = x.to(torch.int32).contiguous().numpy().tobytes()
    return raw, padded


def pages_to_host(raw: bytes, shape: tuple[int, ...], dtype, layout) -> torch.Tensor:
    """Inverse of host_to_pages: page bytes -> torch tensor of the logical shape (dtype as ttnn.to_torch)."""
    info = dtype_info(dtype)
    padded = padded_shape_of(shape, layout)
    if layout == ttnn.TILE_LAYOUT:
        lead = padded[:-2]
        b = math.prod(lead) if lead else 1
        h, w = padded[-2], padded[-1]
        ntiles = b * (h // TILE) * (w // TILE)
        vals = np.empty(ntiles * TILE * TILE, dtype=np.float32)
        src = np.frombuffer(raw, dtype=np.uint8)
        host_lib().ttfd_unpack_tiles(info.data_format, src.ctypes.data, ntiles, vals.ctypes.data)
        vals = vals.reshape(b, h // TILE, w // TILE, TILE, TILE).transpose(0, 1, 3, 2, 4).reshape(b, h, w)
        if len(shape) >= 2:
            vals = vals[:, : shape[-2], : shape[-1]].reshape(shape)
        else:
            vals = vals[0, 0, : (shape[0] if shape else 1)].reshape(shape)
        vals = np.ascontiguousarray(vals)
        if info.data_format == 24:
            return torch.from_numpy(vals.view(np.int32).copy()).view(torch.uint32)
        if info.data_format == 8:
            return torch.from_numpy(vals.view(np.int32).copy())
        return torch.from_numpy(vals.copy()).to(info.torch_out)
    if info.data_format == 5:
        return torch.from_numpy(np.frombuffer(raw, dtype=np.int16).copy()).view(torch.bfloat16).reshape(shape)
    if info.data_format == 0:
        return torch.from_numpy(np.frombuffer(raw, dtype=np.float32).copy()).reshape(shape)
    t = torch.from_numpy(np.frombuffer(raw, dtype=np.int32).copy()).reshape(shape)
    return t.view(torch.uint32) if info.data_format == 24 else t


@dataclass(frozen=True)
class ShardLayout:
    """Where the pages of an L1 HEIGHT_SHARDED tensor live.

    Page i (one tile, or for ROW_MAJOR one row of the last dim) is in shard i // pages_per_shard, which sits on
    ``cores[i // pages_per_shard]`` at ``address + (i % pages_per_shard) * aligned_page_size`` (the page size rounded
    up to the 16-B L1 alignment: a ROW_MAJOR row of 8 B takes 16 B). A TILE shard [shard_h, w] holds
    (shard_h / 32) * (w / 32) pages, a ROW_MAJOR one shard_h pages; the last shard may hold fewer. ``cores`` is
    the shard grid in shard order (every core of the grid: the buffer owns ``region_bytes`` at its address on each of
    them, as tt-metal's allocator reserves it, even when fewer shards than cores carry pages).
    """

    memory_config: object  # the ttnn.MemoryConfig the tensor was created with
    cores: tuple[tuple[int, int], ...]  # logical (x, y), shard order
    shard_shape: tuple[int, int]
    pages_per_shard: int
    num_shards: int
    region_bytes: int  # bytes the buffer occupies on each core (pages_per_shard * aligned page size)

    def shard_pages(self, k: int, num_pages: int) -> range:
        return range(k * self.pages_per_shard, min((k + 1) * self.pages_per_shard, num_pages))


@dataclass(frozen=True)
class L1InterleavedLayout:
    """Where the pages of an L1-INTERLEAVED tensor live (tt-metal's InterleavedAddrGen<false> mapping).

    Page i is in L1 bank i % num_banks, on core ``cores[i % num_banks]``, at ``address + (i // num_banks) *
    aligned_page_size`` (the same address in every bank; bank_to_l1_offset is 0). ``cores`` is the device's bank ->
    logical core table (arch.l1_bank_cores). The buffer owns ``region_bytes`` = ceil(pages / banks) aligned pages at
    its address in every bank, as tt-metal's allocator reserves it, even in banks that hold fewer pages.
    """

    memory_config: object  # the ttnn.MemoryConfig the tensor was created with (L1, INTERLEAVED)
    cores: tuple[tuple[int, int], ...]  # logical (x, y) of L1 bank b at element b
    pages_per_bank: int  # rows: ceil(num_pages / num_banks)
    region_bytes: int  # bytes the buffer occupies in each bank (pages_per_bank * aligned page size)

    @property
    def num_banks(self) -> int:
        return len(self.cores)

    def bank_pages(self, bank: int, num_pages: int) -> range:
        """Indices of the pages in `bank`, in address order."""
        return range(bank, num_pages, self.num_banks)


@dataclass(eq=False)
class EmuTensor:
    """A tensor on an emulated device: DRAM interleaved when ``_shard`` is None, else in L1 placed by ``_shard``: a
    ShardLayout (HEIGHT_SHARDED) or an L1InterleavedLayout (INTERLEAVED) (mirrors the ttnn.Tensor accessors kernels'
    factories use)."""

    _device: object
    _shape: tuple[int, ...]
    _dtype: object
    _layout: object
    _address: int
    _page_size: int
    _num_pages: int
    buffer_id: int
    _shard: ShardLayout | L1InterleavedLayout | None = field(default=None)  # L1 placement; None: DRAM interleaved
    _deallocated: bool = field(default=False)
    # Contents never written (EmuDevice.empty): timing-only programs move no bytes in or out of it (docs/TIMING.md).
    _undefined_contents: bool = field(default=False)
    _finalizer: object = field(default=None, repr=False)  # weakref.finalize releasing the buffer (set by allocate)

    @property
    def shape(self):
        # Made once: the shape never changes and ttnn.Shape is immutable (the op's fast path reads it every call).
        shape = self.__dict__.get("_ttnn_shape")
        if shape is None:
            shape = self.__dict__["_ttnn_shape"] = ttnn.Shape(list(self._shape))
        return shape

    @property
    def padded_shape(self):
        return ttnn.Shape(list(padded_shape_of(self._shape, self._layout)))

    @property
    def dtype(self):
        return self._dtype

    @property
    def layout(self):
        return self._layout

    def get_dtype(self):
        return self._dtype

    def get_layout(self):
        return self._layout

    def memory_config(self):
        return ttnn.DRAM_MEMORY_CONFIG if self._shard is None else self._shard.memory_config

    def is_sharded(self) -> bool:
        return isinstance(self._shard, ShardLayout)

    def is_l1_interleaved(self) -> bool:
        return isinstance(self._shard, L1InterleavedLayout)

    def buffer_type(self):
        return ttnn.BufferType.DRAM if self._shard is None else ttnn.BufferType.L1

    def device(self):
        return self._device

    def buffer_address(self) -> int:
        """DRAM: the address of the buffer in every bank. L1 sharded: the plain L1 offset of the buffer, the same on
        every shard core (kernels pass it to get_noc_addr(noc_x, noc_y, addr)). L1 interleaved: the address in every
        L1 bank (kernels pass it as bank_base_address of InterleavedAddrGen(Fast)<false> or a TensorAccessor)."""
        self._check_live()
        return self._address

    def buffer_page_size(self) -> int:
        return self._page_size

    def buffer_aligned_page_size(self) -> int:
        # tt-metal aligns pages to the allocator alignment of the buffer's memory (DRAM 32 B, L1 16 B on Wormhole;
        # DRAM 64 B on Blackhole): the device's arch.ArchSpec.
        from .arch import WORMHOLE_B0

        spec = getattr(self._device, "spec", WORMHOLE_B0)
        align = spec.dram_alignment if self._shard is None else spec.l1_alignment
        return (self._page_size + align - 1) // align * align

    def element_size(self) -> int:
        """Bytes of one element, as ttnn's Tensor.element_size(): the datum size of row-major formats; for block
        floats ttnn reports the bytes per datum of their mantissa storage (bfloat8_b 1, bfloat4_b 1)."""
        info = dtype_info(self._dtype)
        return info.elem_bytes if info.elem_bytes else 1

    def buffer_num_pages(self) -> int:
        return self._num_pages

    def is_allocated(self) -> bool:
        return not self._deallocated

    def tensor_accessor_args(self) -> list[int]:
        """Compile-time args of a TensorAccessorArgs for this tensor, encoded as ttnn's host TensorAccessorArgs does
        for an interleaved buffer: [ArgsConfig (IsDram = 2 for DRAM, 0 for L1), aligned page size]."""
        if self.is_l1_interleaved():
            return [0, self.buffer_aligned_page_size()]
        if self._shard is not None:
            # ttnn would encode rank, bank coordinates and shapes here; the emulator's TensorAccessor has no sharded
            # implementation, so refuse rather than hand out args that address the wrong memory.
            raise EmulatorError(
                "tensor_accessor_args: the emulator's TensorAccessor supports DRAM-interleaved tensors only; address a "
                "height-sharded L1 tensor with get_noc_addr(noc_x, noc_y, buffer_address() + offset) per shard core"
            )
        return [2, self.buffer_aligned_page_size()]

    def shard_cores(self) -> list[tuple[int, int]]:
        """Logical cores of the shard grid in shard order (shard k on element k); [] for an interleaved tensor."""
        return list(self._shard.cores) if self.is_sharded() else []

    def l1_bank_cores(self) -> list[tuple[int, int]]:
        """L1-interleaved tensor: logical core of L1 bank b at element b (page i is in bank i % len); else []."""
        return list(self._shard.cores) if self.is_l1_interleaved() else []

    def deallocate(self, force: bool = False) -> None:
        """Free the tensor's buffer, as ``ttnn.Tensor.deallocate(force=False)``. ``force`` (ttnn: free even when
        other tensors share the buffer) changes nothing here: an emulator tensor is its buffer's only owner."""
        if not self._deallocated:
            self._device._free(self)
            self._deallocated = True

    def _check_live(self):
        if self._deallocated:
            raise EmulatorError("tensor was deallocated")

    def __repr__(self) -> str:
        where = (
            ""
            if self._shard is None
            else (
                f"L1 interleaved over {self._shard.num_banks} banks, "
                if self.is_l1_interleaved()
                else f"L1 height-sharded {list(self._shard.shard_shape)} on {self._shard.num_shards} of "
                f"{len(self._shard.cores)} cores, "
            )
        )
        return (
            f"EmuTensor(shape={list(self._shape)}, dtype={dtype_info(self._dtype).name}, layout={self._layout}, "
            f"{where}address=0x{self._address:x}, pages={self._num_pages}x{self._page_size}B)"
        )
