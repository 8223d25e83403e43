"""An emulated Wormhole device: DRAM image, buffer allocator, tensor upload/download and ``generic_op``.

DRAM is one sparse memfd (6 channels x 2 GiB; untouched bytes cost nothing) that this process and every program's
child process map MAP_SHARED. An interleaved buffer of N pages takes ceil(N/12) aligned pages in each of the 12
banks at the same address in every bank; page i lives in bank i % 12 at address + (i // 12) * aligned_page_size,
the way tt-metal's allocator lays them out (see arch.py for the bank -> channel / NOC core table).
"""

from __future__ import annotations

import itertools
import mmap
import os

import numpy as np
import torch

from ..ttnn_env import import_ttnn
from . import arch
from .errors import EmulatorError
from .program import build_plan
from .runtime import run_program
from .stats import EmulatorStats
from .tensor import EmuTensor, dtype_info, host_to_pages, padded_shape_of, page_geometry, pages_to_host

ttnn = import_ttnn()

_BOARDS = {"n150": 1, "n300": 2}


class _BankAllocator:
    """First-fit allocator over one bank's address range; the same address is used in all banks."""

    def __init__(self, lo: int, hi: int):
        self.free = [(lo, hi)]

    def alloc(self, size: int) -> int:
        size = (size + arch.DRAM_ALIGNMENT - 1) // arch.DRAM_ALIGNMENT * arch.DRAM_ALIGNMENT
        for i, (a, b) in enumerate(self.free):
            if b - a >= size:
                self.free[i] = (a + size, b)
                if a + size == b:
                    del self.free[i]
                return a
        raise EmulatorError(f"DRAM out of memory: no free {size} B range per bank")

    def release(self, addr: int, size: int) -> None:
        size = (size + arch.DRAM_ALIGNMENT - 1) // arch.DRAM_ALIGNMENT * arch.DRAM_ALIGNMENT
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
    """A Wormhole B0 chip on the host. Use :func:`open_device`."""

    def __init__(self, board: str = "n150"):
        board = board.lower()
        if board not in arch.GRIDS:
            raise EmulatorError(f"board {board!r}: expected one of {', '.join(arch.GRIDS)}")
        self.board = board
        self.grid = arch.GRIDS[board]
        self.num_chips = _BOARDS[board]
        self.channels, self.banks = arch.dram_layout()
        size = len(self.channels) * arch.DRAM_CHANNEL_BYTES
        self._fd = os.memfd_create(f"ttfd-dram-{board}", 0)
        os.ftruncate(self._fd, size)
        self._mm = mmap.mmap(self._fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._dram = np.frombuffer(self._mm, dtype=np.uint8)
        self._alloc = _BankAllocator(arch.DRAM_UNRESERVED_BASE, arch.DRAM_BANK_BYTES)
        self._live: dict[int, EmuTensor] = {}
        self._ids = itertools.count(1)
        self.default_deadline_s = 120.0
        self.default_hang_ms = 200
        self._closed = False

    # ---- ttnn.MeshDevice-like queries
    def arch(self):
        return ttnn.Arch.WORMHOLE_B0

    def compute_with_storage_grid_size(self):
        return ttnn.CoreCoord(*self.grid)

    def worker_core_from_logical_core(self, core):
        x, y = int(core.x), int(core.y)
        if not (0 <= x < self.grid[0] and 0 <= y < self.grid[1]):
            raise EmulatorError(f"logical core ({x},{y}) is outside the {self.grid[0]}x{self.grid[1]} grid")
        return ttnn.CoreCoord(x + arch.TRANSLATED_X0, y + arch.TRANSLATED_Y0)

    def dram_bank_noc_coords(self) -> list[tuple[int, int]]:
        return [(b.noc_x, b.noc_y) for b in self.banks]

    def l1_size_per_core(self) -> int:
        return arch.L1_SIZE

    # ---- memory
    def _bank_base(self, bank: int) -> int:
        b = self.banks[bank]
        return b.channel * arch.DRAM_CHANNEL_BYTES + b.offset

    def allocate(self, shape, dtype, layout=None, fill: int | None = 0xDEADBEEF) -> EmuTensor:
        """Allocate a DRAM-interleaved tensor; its pages are filled with the 32-bit pattern `fill` (None: leave)."""
        self._check_open()
        layout = ttnn.TILE_LAYOUT if layout is None else layout
        dtype_info(dtype)
        shape = tuple(int(s) for s in shape)
        page, npages = page_geometry(shape, dtype, layout)
        aligned = (page + arch.DRAM_ALIGNMENT - 1) // arch.DRAM_ALIGNMENT * arch.DRAM_ALIGNMENT
        rows = (npages + arch.NUM_DRAM_BANKS - 1) // arch.NUM_DRAM_BANKS
        addr = self._alloc.alloc(max(rows, 1) * aligned)
        t = EmuTensor(self, shape, dtype, layout, addr, page, npages, next(self._ids))
        self._live[t.buffer_id] = t
        if fill is not None:
            pattern = np.frombuffer(int(fill & 0xFFFFFFFF).to_bytes(4, "little"), dtype=np.uint8)
            raw = np.resize(pattern, page * npages)
            self._write_pages(t, raw)
        return t

    def _free(self, t: EmuTensor) -> None:
        if t.buffer_id in self._live:
            del self._live[t.buffer_id]
            rows = (t._num_pages + arch.NUM_DRAM_BANKS - 1) // arch.NUM_DRAM_BANKS
            aligned = t.buffer_aligned_page_size()
            self._alloc.release(t._address, max(rows, 1) * aligned)

    def _bank_views(self, t: EmuTensor):
        aligned = t.buffer_aligned_page_size()
        for b in range(arch.NUM_DRAM_BANKS):
            n = len(range(b, t._num_pages, arch.NUM_DRAM_BANKS))
            if n == 0:
                continue
            start = self._bank_base(b) + t._address
            yield b, self._dram[start : start + n * aligned].reshape(n, aligned)[:, : t._page_size]

    def _write_pages(self, t: EmuTensor, raw) -> None:
        pages = np.frombuffer(raw, dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw
        pages = pages.reshape(t._num_pages, t._page_size)
        for b, view in self._bank_views(t):
            view[:] = pages[b :: arch.NUM_DRAM_BANKS]

    def _read_pages(self, t: EmuTensor) -> bytes:
        out = np.empty((t._num_pages, t._page_size), dtype=np.uint8)
        for b, view in self._bank_views(t):
            out[b :: arch.NUM_DRAM_BANKS] = view
        return out.tobytes()

    def from_torch(self, x: torch.Tensor, dtype=None, layout=None, memory_config=None) -> EmuTensor:
        """Upload a torch tensor (DRAM interleaved; TILE layout padded to tiles like ttnn)."""
        self._check_open()
        layout = ttnn.TILE_LAYOUT if layout is None else layout
        if dtype is None:
            dtype = {torch.float32: ttnn.float32, torch.bfloat16: ttnn.bfloat16, torch.int32: ttnn.int32,
                     torch.uint32: ttnn.uint32}.get(x.dtype, ttnn.bfloat16)
        if memory_config is not None and memory_config != ttnn.DRAM_MEMORY_CONFIG:
            raise EmulatorError("the emulator supports DRAM-interleaved tensors only (ttnn.DRAM_MEMORY_CONFIG)")
        raw, _ = host_to_pages(x.detach().cpu(), dtype, layout)
        t = self.allocate(tuple(x.shape), dtype, layout, fill=None)
        self._write_pages(t, raw)
        return t

    def write(self, t: EmuTensor, x: torch.Tensor) -> None:
        """Overwrite device tensor `t` in place with host data `x` (same shape), keeping its address, like
        ``ttnn.copy_host_to_device_tensor``: a model's decode loop updates cur_pos / page tables this way."""
        self._check_open()
        t._check_live()
        if tuple(x.shape) != t._shape:
            raise EmulatorError(f"write: x has shape {tuple(x.shape)}, expected the tensor's shape {t._shape}")
        raw, _ = host_to_pages(x.detach().cpu(), t._dtype, t._layout)
        self._write_pages(t, raw)

    def to_torch(self, t: EmuTensor) -> torch.Tensor:
        self._check_open()
        t._check_live()
        return pages_to_host(self._read_pages(t), t._shape, t._dtype, t._layout)

    # ---- programs
    def generic_op(self, io_tensors, program_descriptor, *, deadline_s: float | None = None,
                   hang_ms: int | None = None, dprint: bool | None = None) -> EmulatorStats:
        """Run `program_descriptor` (a real ttnn.ProgramDescriptor) like ttnn.generic_op; return the run's stats.

        `io_tensors` are the program's tensors (kept alive; kernels get their addresses through runtime args).
        Raises KernelCompileError / KernelFault / EmulatorHang / EmulatorError.
        """
        self._check_open()
        for t in io_tensors:
            if not isinstance(t, EmuTensor) or t._device is not self:
                raise EmulatorError(f"generic_op: {t!r} is not a tensor of this emulated device")
            t._check_live()
        plan = build_plan(program_descriptor, self.grid)
        buffers = [(t.buffer_id, t._address, t.buffer_aligned_page_size(), t._num_pages) for t in self._live.values()]
        page_sizes = {t.buffer_id: t._page_size for t in self._live.values()}
        if dprint is None:
            dprint = os.environ.get("TTFD_EMU_DPRINT", "1") != "0"
        return run_program(
            plan, grid=self.grid, dram_fd=self._fd, buffers=buffers, page_sizes=page_sizes,
            deadline_s=self.default_deadline_s if deadline_s is None else deadline_s,
            hang_ms=self.default_hang_ms if hang_ms is None else hang_ms, dprint=dprint)

    # ---- lifetime
    def _check_open(self):
        if self._closed:
            raise EmulatorError("device is closed")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._live.clear()
            self._dram = None
            try:
                self._mm.close()
            except BufferError:
                pass  # a numpy view still exists; the mapping goes with the process
            os.close(self._fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def open_device(board: str = "n150") -> EmuDevice:
    """Open an emulated Wormhole board: "n150" (1 chip, 8x8 grid) or "n300" (chip 0 of 2, 8x7 grid)."""
    return EmuDevice(board)
