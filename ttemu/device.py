"""An emulated Wormhole device: DRAM image, buffer allocator, tensor upload/download and ``generic_op``.

DRAM is one sparse memfd (6 channels x 2 GiB; untouched bytes cost nothing) that this process and every program's
child process map MAP_SHARED. An interleaved buffer of N pages takes ceil(N/12) aligned pages in each of the 12
banks at the same address in every bank; page i lives in bank i % 12 at address + (i // 12) * aligned_page_size,
the way tt-metal's allocator lays them out (see arch.py for the bank -> channel / NOC core table).

L1 HEIGHT_SHARDED tensors (TILE or ROW_MAJOR) live in a second memfd that holds every core's L1 image (core (x, y) at
(y * grid_w + x) * L1_SIZE): the part of it a live L1 buffer owns is the tensor's storage between programs. A
program's child copies those ranges into the cores' L1 before its kernels start and back after they finish, so
data persists across programs as it does on silicon. L1 buffers get one address on every core, handed out top-down
from the end of L1 like tt-metal's L1 allocator (whose free list is shared by all L1 banks).

L1-INTERLEAVED tensors (memory_config ttnn.L1_MEMORY_CONFIG) use the same L1 image and allocator: one L1 bank per
compute core, numbered as tt-metal's allocator numbers them (arch.l1_bank_cores); page i lives in bank i % num_banks
at address + (i // num_banks) * aligned_page_size (16-B L1 alignment), which is what InterleavedAddrGen<false>
computes on silicon.

Buffers are freed by ``deallocate()`` or when the tensor is garbage collected (as ttnn frees device buffers).
"""

from __future__ import annotations

import itertools
import json
import mmap
import os
import weakref

import numpy as np
import torch

from . import arch
from .errors import EmulatorError
from .program import build_plan
from .runtime import run_program
from .stats import EmulatorStats
from .tensor import (
    TILE,
    EmuTensor,
    L1InterleavedLayout,
    ShardLayout,
    default_dtype,
    default_layout,
    dtype_info,
    host_to_pages,
    padded_shape_of,
    page_geometry,
    pages_to_host,
)
from .ttnn_env import import_ttnn

ttnn = import_ttnn()

_BOARDS = {"n150": 1, "n300": 2, "galaxy": 32, "p150": 1, "p100": 1}


class _BankAllocator:
    """First-fit allocator over one bank's address range; the same address is used in all banks.

    DRAM allocates bottom-up; L1 top-down (tt-metal's default for L1 buffers, which keeps the low end of L1 free
    for the circular buffers programs place bottom-up)."""

    def __init__(
        self, lo: int, hi: int, *, alignment: int = arch.DRAM_ALIGNMENT, top_down: bool = False, what: str = "DRAM"
    ):
        self.free = [(lo, hi)]
        self.alignment = alignment
        self.top_down = top_down
        self.what = what

    def _aligned(self, size: int) -> int:
        return (size + self.alignment - 1) // self.alignment * self.alignment

    def alloc(self, size: int) -> int:
        size = self._aligned(size)
        order = range(len(self.free) - 1, -1, -1) if self.top_down else range(len(self.free))
        for i in order:
            a, b = self.free[i]
            addr = (b - size) // self.alignment * self.alignment if self.top_down else a
            if addr < a or addr + size > b:
                continue
            self.free[i : i + 1] = [r for r in ((a, addr), (addr + size, b)) if r[1] > r[0]]
            return addr
        free = sum(b - a for a, b in self.free)
        largest = max((b - a for a, b in self.free), default=0)
        raise EmulatorError(
            f"{self.what} out of memory: no free {size} B range per bank ({free} B free, largest "
            f"free block {largest} B)"
        )

    def release(self, addr: int, size: int) -> None:
        size = self._aligned(size)
        self.free.append((addr, addr + size))
        self.free.sort()
        merged = []
        for a, b in self.free:
            if merged and merged[-1][1] == a:
                merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        self.free = merged


class EmuDevice:
    """A Wormhole B0 or Blackhole chip on the host (``spec``: the arch.ArchSpec it models). Use :func:`open_device`."""

    # The trace being captured (trace.py): launches are recorded instead of run, host transfers are refused.
    trace_capture = None

    def __init__(self, board: str = "n150", *, timing_only: bool | None = None, dispatch_core_axis: str | None = None):
        board = board.lower()
        if board not in arch.GRIDS:
            raise EmulatorError(f"board {board!r}: expected one of {', '.join(arch.GRIDS)}")
        self.spec = arch.board_spec(board)
        if dispatch_core_axis is None:
            dispatch_core_axis = self.spec.default_dispatch_axis
        if board in arch.DEFAULT_AXIS_ONLY:
            if dispatch_core_axis != self.spec.default_dispatch_axis:
                raise EmulatorError(
                    f"dispatch_core_axis={dispatch_core_axis!r}: expected "
                    f"{self.spec.default_dispatch_axis!r} (ttnn's default on {self.spec.name}; the emulated {board} "
                    "models that one only)"
                )
        elif dispatch_core_axis not in ("row", "col") or (
            dispatch_core_axis == "col" and board not in arch.COL_DISPATCH_GRIDS
        ):
            raise EmulatorError(
                f"dispatch_core_axis={dispatch_core_axis!r}: expected 'row' (ttnn's default on Wormhole)"
                + (
                    " or 'col'"
                    if board in arch.COL_DISPATCH_GRIDS
                    else f"; the emulated {board} has dispatch on a row only"
                )
            )
        self.board = board
        # Timing-only (docs/TIMING.md, section 6): programs skip compute arithmetic and the bytes of tensors made by
        # empty(); durations are the full run's. Outputs are then NOT computed. Default: TTFD_EMU_TIMING_ONLY=1.
        self.timing_only = (
            os.environ.get("TTFD_EMU_TIMING_ONLY", "0") == "1" if timing_only is None else bool(timing_only)
        )
        spec = self.spec
        self.grid = (
            arch.COL_DISPATCH_GRIDS[board]
            if dispatch_core_axis == "col" and board in arch.COL_DISPATCH_GRIDS
            else arch.GRIDS[board]
        )
        self.num_chips = _BOARDS[board]
        self.channels, self.banks = arch.dram_layout_for(spec, arch.BOARD_DRAM_CHANNELS.get(board))
        size = len(self.channels) * spec.dram_channel_bytes
        self._fd = os.memfd_create(f"ttfd-dram-{board}", 0)
        os.ftruncate(self._fd, size)
        self._mm = mmap.mmap(self._fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._dram = np.frombuffer(self._mm, dtype=np.uint8)
        self._alloc = _BankAllocator(arch.DRAM_UNRESERVED_BASE, spec.dram_bank_bytes, alignment=spec.dram_alignment)
        ncores = self.grid[0] * self.grid[1]
        self._l1_fd = os.memfd_create(f"ttfd-l1-{board}", 0)
        os.ftruncate(self._l1_fd, ncores * spec.l1_size)
        self._l1_mm = mmap.mmap(self._l1_fd, ncores * spec.l1_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._l1 = np.frombuffer(self._l1_mm, dtype=np.uint8)
        # L1 buffers may go anywhere CBs may (tt-metal's L1 bank starts at the unreserved base).
        self._l1_alloc = _BankAllocator(
            spec.l1_unreserved_base, spec.l1_size, alignment=spec.l1_alignment, top_down=True, what="L1"
        )
        # Weak: a tensor nobody references is freed by its finalizer, like a ttnn device tensor.
        self._live: weakref.WeakValueDictionary[int, EmuTensor] = weakref.WeakValueDictionary()
        self._ids = itertools.count(1)
        self.default_deadline_s = 120.0
        self.default_hang_ms = 200
        self._closed = False
        self._close_callbacks: list = []  # see on_close
        # ttnn's program cache key (custom_program_hash) -> the structure of the descriptor first launched with it
        # (see _check_program_hash)
        self._program_keys: dict[int, int] = {}

    # ---- ttnn.MeshDevice-like queries
    def arch(self):
        return ttnn.Arch.BLACKHOLE if self.spec is arch.BLACKHOLE else ttnn.Arch.WORMHOLE_B0

    def compute_with_storage_grid_size(self):
        return ttnn.CoreCoord(*self.grid)

    def worker_core_from_logical_core(self, core):
        x, y = int(core.x), int(core.y)
        if not (0 <= x < self.grid[0] and 0 <= y < self.grid[1]):
            raise EmulatorError(f"logical core ({x},{y}) is outside the {self.grid[0]}x{self.grid[1]} grid")
        return ttnn.CoreCoord(*self.spec.translated(x, y))

    def dram_bank_noc_coords(self) -> list[tuple[int, int]]:
        return [(b.noc_x, b.noc_y) for b in self.banks]

    def l1_size_per_core(self) -> int:
        return self.spec.l1_size

    # ---- memory
    def _bank_base(self, bank: int) -> int:
        b = self.banks[bank]
        return b.channel * self.spec.dram_channel_bytes + b.offset

    def allocate(self, shape, dtype, layout=None, fill: int | None = 0xDEADBEEF, memory_config=None) -> EmuTensor:
        """Allocate a tensor, DRAM interleaved (memory_config None / ttnn.DRAM_MEMORY_CONFIG), L1 interleaved
        (ttnn.L1_MEMORY_CONFIG) or L1 height-sharded (a ttnn.MemoryConfig, see _shard_layout); its pages are filled
        with the 32-bit pattern `fill` (None: leave). A ttnn.MemoryConfig as 4th positional argument is taken as
        `memory_config` (``allocate(shape, dtype, layout, ttnn.L1_MEMORY_CONFIG)``, the order ttnn uses)."""
        self._check_open()
        if isinstance(fill, ttnn.MemoryConfig):
            if memory_config is not None:
                raise EmulatorError("allocate: memory_config given twice (positionally and by keyword)")
            fill, memory_config = 0xDEADBEEF, fill
        layout = ttnn.TILE_LAYOUT if layout is None else layout
        dtype_info(dtype)
        shape = tuple(int(s) for s in shape)
        page, npages = page_geometry(shape, dtype, layout)
        shard = self._shard_layout(memory_config, shape, dtype, layout, npages)
        if shard is None:
            al = self.spec.dram_alignment
            aligned = (page + al - 1) // al * al
            rows = (npages + len(self.banks) - 1) // len(self.banks)
            size = max(rows, 1) * aligned
            addr = self._alloc.alloc(size)
        else:
            size = shard.region_bytes
            addr = self._l1_alloc.alloc(size)
        t = EmuTensor(self, shape, dtype, layout, addr, page, npages, next(self._ids), shard)
        self._live[t.buffer_id] = t
        # The finalizer must not hold `t` (it would never be collected); it holds what the release needs. It holds the
        # device weakly: finalizers are reachable from a global registry, so a strong reference would keep the device
        # alive as long as any of its tensors is, even when they only reference each other (a cache on the device
        # holding its tensors).
        t._finalizer = weakref.finalize(t, _release_buffer, weakref.ref(self), shard is not None, addr, size)
        t._finalizer.atexit = False
        if fill is not None:
            pattern = np.frombuffer(int(fill & 0xFFFFFFFF).to_bytes(4, "little"), dtype=np.uint8)
            raw = np.resize(pattern, page * npages)
            self._write_pages(t, raw)
        return t

    def empty(self, shape, dtype, layout=None) -> EmuTensor:
        """A DRAM-interleaved tensor whose contents are undefined: nothing is written, so a 128K-token KV cache costs
        no host time and no memory until something writes it. In a timing-only device's programs NoC transfers
        from or to it are checked, counted and timed but move no bytes; use it only for data that cannot steer a
        kernel (K/V caches, never positions, page tables or indices). ``write`` makes its contents defined."""
        t = self.allocate(shape, dtype, layout, fill=None)
        t._undefined_contents = True
        return t

    def _release(self, l1: bool, addr: int, size: int) -> None:
        if not self._closed:
            (self._l1_alloc if l1 else self._alloc).release(addr, size)

    def _free(self, t: EmuTensor) -> None:
        self._live.pop(t.buffer_id, None)
        t._finalizer()  # releases the range once, whether called here or at garbage collection

    def _shard_layout(self, memory_config, shape, dtype, layout, npages) -> ShardLayout | L1InterleavedLayout | None:
        """Validate `memory_config` for a tensor of `shape`; None for DRAM interleaved, else where its L1 pages go.

        Supported: DRAM INTERLEAVED, L1 INTERLEAVED (any layout: pages round-robin over the L1 banks, see
        L1InterleavedLayout), and L1 HEIGHT_SHARDED full-width shards [shard_h, width], shard k on the k-th core of
        the shard grid in ttnn's order (row by row for ROW_MAJOR orientation, column by column for COL_MAJOR):

        - TILE: shard_h a multiple of 32, width the padded width; the padded height (all dims but the last, the
          second-to-last padded to 32) splits into consecutive shards of shard_h rows = shard_h / 32 tile rows.
        - ROW_MAJOR: any shard_h >= 1, width the logical width; a page is one row ("stick") of the
          [prod(shape[:-1]), width] view (tt-metal's RowMajorPageConfig: page shape [1, width] for HEIGHT_SHARDED,
          width not padded), so shard k holds rows [k * shard_h, (k + 1) * shard_h) as shard_h consecutive pages
          of the L1-aligned page size (align(width * datum bytes, 16), as tt-metal's Buffer::aligned_page_size
          with Wormhole's L1_ALIGNMENT); the last shard may be partial."""
        if memory_config is None:
            return None
        if not isinstance(memory_config, ttnn.MemoryConfig):
            raise EmulatorError(f"memory_config={memory_config!r}: expected a ttnn.MemoryConfig")
        ml, bt = memory_config.memory_layout, memory_config.buffer_type
        if ml == ttnn.TensorMemoryLayout.INTERLEAVED:
            if bt == ttnn.BufferType.DRAM:
                return None
            if bt == ttnn.BufferType.L1:
                return self._l1_interleaved_layout(memory_config, shape, dtype, layout, npages)
            raise EmulatorError(
                f"memory_config: buffer_type={bt} with INTERLEAVED layout is not supported by the "
                "emulator (DRAM or L1 interleaved, or L1 HEIGHT_SHARDED only)"
            )
        if ml != ttnn.TensorMemoryLayout.HEIGHT_SHARDED:
            raise EmulatorError(
                f"memory_config: memory_layout={ml} is not supported by the emulator (DRAM or L1 "
                "interleaved, or L1 HEIGHT_SHARDED only)"
            )
        if bt != ttnn.BufferType.L1:
            raise EmulatorError(
                f"memory_config: HEIGHT_SHARDED with buffer_type={bt} is not supported by the emulator "
                "(sharded tensors must be in L1)"
            )
        spec = memory_config.shard_spec
        if spec is None:
            raise EmulatorError(
                f"memory_config={memory_config}: HEIGHT_SHARDED needs a shard_spec (nd_shard_spec "
                "alone is not supported by the emulator)"
            )
        if json.loads(memory_config.to_json()).get("per_core_allocation"):
            raise EmulatorError(
                "memory_config: per_core_allocation=True (a different address per core) is not "
                "supported by the emulator"
            )
        tile = layout == ttnn.TILE_LAYOUT
        if not tile and layout != ttnn.ROW_MAJOR_LAYOUT:
            raise EmulatorError(f"layout={layout}: a HEIGHT_SHARDED tensor must be in TILE_LAYOUT or ROW_MAJOR_LAYOUT")
        shard_h, shard_w = (int(v) for v in spec.shape)
        padded = padded_shape_of(shape, layout)  # ROW_MAJOR: the logical shape
        height = int(np.prod(padded[:-1])) if len(padded) > 1 else 1
        width = padded[-1] if padded else 1
        if shard_w != width:
            raise EmulatorError(
                f"memory_config: shard_spec.shape={[shard_h, shard_w]}: for HEIGHT_SHARDED the shard "
                f"width must equal the {'padded ' if tile else ''}width {width} of shape "
                f"{list(shape)} (the emulator supports full-width shards only)"
            )
        if tile and (shard_h <= 0 or shard_h % TILE):
            raise EmulatorError(
                f"memory_config: shard_spec.shape={[shard_h, shard_w]}: shard height must be a "
                f"positive multiple of {TILE} for TILE_LAYOUT"
            )
        if not tile and shard_h <= 0:
            raise EmulatorError(f"memory_config: shard_spec.shape={[shard_h, shard_w]}: shard height must be positive")
        if not tile and (npages == 0 or width == 0):
            raise EmulatorError(f"shape {list(shape)}: an empty tensor cannot be HEIGHT_SHARDED in the emulator")
        if spec.orientation == ttnn.ShardOrientation.ROW_MAJOR:
            row_wise = True
        elif spec.orientation == ttnn.ShardOrientation.COL_MAJOR:
            row_wise = False
        else:
            raise EmulatorError(f"memory_config: shard_spec.orientation={spec.orientation} is not supported")
        # tt-metal orders shard cores with corerange_to_cores(grid, row_wise=orientation == ROW_MAJOR).
        cores = tuple((int(c.x), int(c.y)) for c in ttnn.corerange_to_cores(spec.grid, row_wise=row_wise))
        outside = [c for c in cores if not (0 <= c[0] < self.grid[0] and 0 <= c[1] < self.grid[1])]
        if outside:
            raise EmulatorError(
                f"memory_config: shard_spec.grid={spec.grid} has core(s) {outside} outside the "
                f"{self.grid[0]}x{self.grid[1]} compute grid"
            )
        if len(set(cores)) != len(cores):
            raise EmulatorError(f"memory_config: shard_spec.grid={spec.grid} lists a core twice")
        num_shards = -(-height // shard_h)
        if num_shards > len(cores):
            raise EmulatorError(
                f"memory_config: shard_spec.shape={[shard_h, shard_w]} splits the "
                f"{'padded ' if tile else ''}height {height} of shape {list(shape)} into {num_shards} "
                f"shards, but shard_spec.grid has only {len(cores)} cores"
            )
        # TILE: shard_h / 32 tile rows of width / 32 tiles; ROW_MAJOR: one page per row.
        pages_per_shard = (shard_h // TILE) * (width // TILE) if tile else shard_h
        page = page_geometry(shape, dtype, layout)[0]
        aligned = (page + self.spec.l1_alignment - 1) // self.spec.l1_alignment * self.spec.l1_alignment
        assert -(-npages // pages_per_shard) == num_shards
        return ShardLayout(
            memory_config, cores, (shard_h, shard_w), pages_per_shard, num_shards, pages_per_shard * aligned
        )

    def _l1_interleaved_layout(self, memory_config, shape, dtype, layout, npages) -> L1InterleavedLayout:
        """L1 INTERLEAVED: ceil(npages / banks) pages of 16-B-aligned size at one address in every L1 bank."""
        if memory_config.shard_spec is not None or memory_config.nd_shard_spec is not None:
            raise EmulatorError(f"memory_config={memory_config}: an INTERLEAVED memory config takes no shard spec")
        cores = arch.l1_bank_cores(self.grid)
        page = page_geometry(shape, dtype, layout)[0]
        aligned = (page + self.spec.l1_alignment - 1) // self.spec.l1_alignment * self.spec.l1_alignment
        rows = max(-(-npages // len(cores)), 1)
        return L1InterleavedLayout(ttnn.L1_MEMORY_CONFIG, cores, rows, rows * aligned)

    def _l1_bank_views(self, t: EmuTensor):
        """(bank, view of the bank's pages of L1-interleaved `t` in the L1 image of the bank's core) per bank with
        pages; the view's row r is page bank + r * num_banks."""
        lay = t._shard
        aligned = t.buffer_aligned_page_size()
        for b, (x, y) in enumerate(lay.cores):
            n = len(lay.bank_pages(b, t._num_pages))
            if n == 0:
                continue
            start = (y * self.grid[0] + x) * self.spec.l1_size + t._address
            yield b, self._l1[start : start + n * aligned].reshape(n, aligned)[:, : t._page_size]

    def _bank_views(self, t: EmuTensor):
        aligned = t.buffer_aligned_page_size()
        nb = len(self.banks)
        for b in range(nb):
            n = len(range(b, t._num_pages, nb))
            if n == 0:
                continue
            start = self._bank_base(b) + t._address
            yield b, self._dram[start : start + n * aligned].reshape(n, aligned)[:, : t._page_size]

    def _shard_views(self, t: EmuTensor):
        """(page range, view of those pages' bytes in the L1 image of the shard's core) per shard holding pages."""
        sh = t._shard
        aligned = t.buffer_aligned_page_size()
        for k in range(sh.num_shards):
            pages = sh.shard_pages(k, t._num_pages)
            x, y = sh.cores[k]
            start = (y * self.grid[0] + x) * self.spec.l1_size + t._address
            yield pages, self._l1[start : start + len(pages) * aligned].reshape(len(pages), aligned)[:, : t._page_size]

    def _write_pages(self, t: EmuTensor, raw) -> None:
        pages = np.frombuffer(raw, dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw
        pages = pages.reshape(t._num_pages, t._page_size)
        if t.is_l1_interleaved():
            nb = t._shard.num_banks
            for b, view in self._l1_bank_views(t):
                view[:] = pages[b::nb]
            return
        if t._shard is not None:
            for r, view in self._shard_views(t):
                view[:] = pages[r.start : r.stop]
            return
        for b, view in self._bank_views(t):
            view[:] = pages[b :: len(self.banks)]

    def _read_pages(self, t: EmuTensor) -> bytes:
        out = np.empty((t._num_pages, t._page_size), dtype=np.uint8)
        if t.is_l1_interleaved():
            nb = t._shard.num_banks
            for b, view in self._l1_bank_views(t):
                out[b::nb] = view
            return out.tobytes()
        if t._shard is not None:
            for r, view in self._shard_views(t):
                out[r.start : r.stop] = view
            return out.tobytes()
        for b, view in self._bank_views(t):
            out[b :: len(self.banks)] = view
        return out.tobytes()

    def from_torch(self, x: torch.Tensor, dtype=None, layout=None, memory_config=None) -> EmuTensor:
        """Upload a torch tensor (DRAM interleaved, or L1 interleaved / height-sharded per `memory_config`; TILE
        layout padded to tiles like ttnn). Defaults as ``ttnn.from_torch``'s: the dtype follows the torch tensor's
        (:func:`default_dtype`), the layout is ROW_MAJOR (TILE for the block floats, which exist only as tiles),
        the memory config DRAM interleaved."""
        self._check_open()
        if self.trace_capture is not None:
            self.trace_capture.refuse("from_torch")
        if dtype is None:
            dtype = default_dtype(x)
        layout = default_layout(dtype) if layout is None else layout
        raw, _ = host_to_pages(x.detach().cpu(), dtype, layout)
        t = self.allocate(tuple(x.shape), dtype, layout, fill=None, memory_config=memory_config)
        self._write_pages(t, raw)
        return t

    def write(self, t: EmuTensor, x: torch.Tensor) -> None:
        """Overwrite device tensor `t` in place with host data `x` (same shape), keeping its address, like
        ``ttnn.copy_host_to_device_tensor``: a model's decode loop updates cur_pos / page tables this way."""
        self._check_open()
        if self.trace_capture is not None:
            self.trace_capture.refuse("write")
        t._check_live()
        if tuple(x.shape) != t._shape:
            raise EmulatorError(f"write: x has shape {tuple(x.shape)}, expected the tensor's shape {t._shape}")
        raw, _ = host_to_pages(x.detach().cpu(), t._dtype, t._layout)
        self._write_pages(t, raw)
        t._undefined_contents = False

    def to_torch(self, t: EmuTensor) -> torch.Tensor:
        self._check_open()
        if self.trace_capture is not None:
            self.trace_capture.refuse("to_torch")
        t._check_live()
        return pages_to_host(self._read_pages(t), t._shape, t._dtype, t._layout)

    # ---- programs
    def lowest_l1_buffer_address(self) -> int | None:
        """Lowest address of a live L1 buffer (where a program's circular buffers must end), None if there is none:
        what tt-metal's allocator reports as the lowest occupied compute L1 address."""
        # Read off the L1 allocator (O(1), called on every op call): the start of the lowest allocated range is the
        # end of the first free range when that starts at the base, else the base itself.
        free = self._l1_alloc.free
        base = self.spec.l1_unreserved_base
        if not free:
            return base
        lo, hi = free[0]
        if lo > base:
            return base
        return None if hi >= self.spec.l1_size else hi

    def generic_op(
        self,
        io_tensors,
        program_descriptor,
        *,
        deadline_s: float | None = None,
        hang_ms: int | None = None,
        dprint: bool | None = None,
    ) -> EmulatorStats:
        """Run `program_descriptor` (a real ttnn.ProgramDescriptor) like ttnn.generic_op; return the run's stats.

        `io_tensors` are the program's tensors (kept alive; kernels get their addresses through runtime args).
        Raises KernelCompileError / KernelFault / EmulatorHang / EmulatorError.
        """
        self._check_open()
        for t in io_tensors:
            if not isinstance(t, EmuTensor) or t._device is not self:
                raise EmulatorError(f"generic_op: {t!r} is not a tensor of this emulated device")
            t._check_live()
        self._check_program_hash(program_descriptor)
        plan = build_plan(program_descriptor, self.grid, self.spec, len(self.banks))
        live = list(self._live.values())
        l1_live = [t for t in live if t._shard is not None]
        self._check_cb_clash(plan, l1_live)
        if self.trace_capture is not None:  # recorded, not run: trace.execute_trace runs it
            return self.trace_capture.record(
                io_tensors, program_descriptor, dict(deadline_s=deadline_s, hang_ms=hang_ms, dprint=dprint)
            )
        buffers = [
            (t.buffer_id, t._address, t.buffer_aligned_page_size(), t._num_pages) for t in live if t._shard is None
        ]
        gw = self.grid[0]
        l1_buffers = [
            (
                t.buffer_id,
                t._address,
                t.buffer_aligned_page_size(),
                t._num_pages,
                t._shard.pages_per_shard,
                t._shard.region_bytes,
                [y * gw + x for x, y in t._shard.cores],
            )
            for t in l1_live
            if t.is_sharded()
        ]
        l1i_buffers = [
            (t.buffer_id, t._address, t.buffer_aligned_page_size(), t._num_pages)
            for t in l1_live
            if t.is_l1_interleaved()
        ]
        page_sizes = {t.buffer_id: t._page_size for t in live}
        nodata = [t.buffer_id for t in live if t._shard is None and t._undefined_contents]
        if dprint is None:
            dprint = os.environ.get("TTFD_EMU_DPRINT", "1") != "0"
        return run_program(
            plan,
            grid=self.grid,
            spec=self.spec,
            dram=(self.channels, self.banks),
            dram_fd=self._fd,
            buffers=buffers,
            page_sizes=page_sizes,
            l1_fd=self._l1_fd,
            l1_buffers=l1_buffers,
            l1i_buffers=l1i_buffers,
            deadline_s=self.default_deadline_s if deadline_s is None else deadline_s,
            hang_ms=self.default_hang_ms if hang_ms is None else hang_ms,
            dprint=dprint,
            timing_only=self.timing_only,
            nodata_buffers=nodata,
        )

    def _check_program_hash(self, pd) -> None:
        """Refuse a descriptor whose ``custom_program_hash`` ttnn would answer with a program built from another one.

        ``ttnn.generic_op`` keys its program cache by ``compute_program_descriptor_hash``, which returns a descriptor's
        ``custom_program_hash`` when set; on a hit it builds nothing and copies only the new descriptor's runtime-arg
        values and buffer addresses into the program cached under that key (tt-metal: generic_op_device_operation.cpp,
        ``apply_descriptor_runtime_args`` in program_descriptors.hpp). A custom hash shared by two descriptors that
        differ in what ttnn's own hash covers (kernel sources, core ranges, compile-time args, defines, configs,
        runtime-arg counts, CBs, semaphores) therefore runs the first one's kernels and CBs on silicon, silently. The
        emulator builds every launch from its own descriptor, so it keeps, per device as ttnn's cache is, the
        structural hash of the descriptor each custom hash was first seen with, and raises where ttnn would run the
        stale program."""
        key = pd.custom_program_hash
        if key is None:
            return
        pd.custom_program_hash = None  # ttnn's structural hash of this descriptor (the function returns a set one)
        try:
            structure = ttnn.compute_program_descriptor_hash(pd)
        finally:
            pd.custom_program_hash = key
        first = self._program_keys.setdefault(key, structure)
        if first != structure:
            raise EmulatorError(
                f"custom_program_hash {key:#x}: this device already ran a program under that key built from a "
                f"descriptor of another structure (ttnn's compute_program_descriptor_hash {first:#x}, this one's "
                f"{structure:#x}); ttnn.generic_op would run the cached program (its kernels, compile-time args, CBs) "
                f"with this descriptor's runtime args. A custom hash must change whenever anything but runtime-arg "
                f"values and buffer addresses changes"
            )

    @staticmethod
    def _check_cb_clash(plan, l1_live: list[EmuTensor]) -> None:
        """Refuse a program whose circular buffers reach into live L1 buffers, as tt-metal does at launch
        ("Statically allocated circular buffers ... clash with L1 buffers"). tt-metal compares every CB region's
        end with the lowest occupied L1 buffer address of the device, because its allocator reserves an L1
        buffer's range on every core; the emulator applies the same rule and names the CB, the core and the buffer
        (preferring one whose shard sits on that core)."""
        if not l1_live:
            return
        lowest = min(t._address for t in l1_live)
        for x, y, idx, addr, size, _page, _fmt in plan.cbs:
            end = addr + size
            if end <= lowest:
                continue
            hits = [t for t in l1_live if addr < t._address + t._shard.region_bytes and end > t._address]
            here = [t for t in hits if (x, y) in t._shard.cores]
            t = (here or hits or [min(l1_live, key=lambda b: b._address)])[0]
            where = (
                "an L1 bank of that interleaved buffer is on this core"
                if here and t.is_l1_interleaved()
                else "a shard of that buffer lives on this core"
                if here
                else "tt-metal reserves an L1 buffer's address range on every core, so this clashes even though the "
                "buffer has no shard on this core"
            )
            raise EmulatorError(
                f"circular buffer {idx} on core ({x},{y}) occupies L1 [0x{addr:x}, 0x{end:x}) and clashes with the L1 "
                f"buffer {t.buffer_id} {t!r} at [0x{t._address:x}, 0x{t._address + t._shard.region_bytes:x}) "
                f"({where}); tt-metal refuses this launch: statically allocated circular buffers clash with L1 "
                f"buffers (lowest L1 buffer address 0x{lowest:x}, CB region ends at 0x{end:x}). Free the L1 tensor "
                f"or shrink the program's CBs"
            )

    # ---- lifetime
    def _check_open(self):
        if self._closed:
            raise EmulatorError("device is closed")

    def on_close(self, callback) -> None:
        """Run ``callback(device)`` once when this device closes (before its memory goes). Caches that hold things
        per device (the op's programs and staging tensors) drop them then, so a closed device's entries can neither
        be hit through a later device nor keep this one alive."""
        self._check_open()
        self._close_callbacks.append(callback)

    def close(self) -> None:
        if self._closed:
            return
        callbacks, self._close_callbacks = self._close_callbacks, []
        try:
            for callback in callbacks:  # while the device is still open: they may free its tensors
                callback(self)
        finally:
            self._closed = True
            self._live.clear()
            self._dram = None
            self._l1 = None
            for mm in (self._mm, self._l1_mm):
                try:
                    mm.close()
                except BufferError:
                    pass  # a numpy view still exists; the mapping goes with the process
            os.close(self._fd)
            os.close(self._l1_fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _release_buffer(device_ref, l1: bool, addr: int, size: int) -> None:
    """Finalizer of a tensor's buffer: return its range to the device's allocator, if the device still exists."""
    device = device_ref()
    if device is not None:
        device._release(l1, addr, size)


def open_device(
    board: str = "n150", *, timing_only: bool | None = None, dispatch_core_axis: str | None = None
) -> EmuDevice:
    """Open an emulated board: Wormhole "n150" (1 chip, 8x8 grid), "n300" (chip 0 of 2, 8x7 grid) or "galaxy" (one
    of a Galaxy's 32 unharvested chips: 8x9 grid, or 7x10 with ``dispatch_core_axis="col"``; a whole Galaxy is
    :func:`open_mesh_device` ``(board="galaxy")``); Blackhole "p150" (11x10 grid, 8 DRAM banks) or "p100" (11x10,
    7 DRAM banks), as shipped since firmware v19.5.0 (ttemu/arch.py). dispatch_core_axis None: ttnn's default
    (a row on Wormhole, a column on Blackhole).

    timing_only=True: programs report the same modelled durations (stats.duration_ns) as a full run but compute no
    values (no FPU / SFPU arithmetic, no pack conversions, no bytes moved for tensors made by ``empty()``); for
    performance sweeps only, outputs are undefined. None: TTFD_EMU_TIMING_ONLY=1 in the environment turns it on."""
    return EmuDevice(board, timing_only=timing_only, dispatch_core_axis=dispatch_core_axis)
