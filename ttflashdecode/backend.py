"""Where a program runs: a Tenstorrent device through ttnn, or the host emulator.

The op builds one ``ttnn.ProgramDescriptor`` whatever the backend; a backend only supplies what differs
between a card and the emulator: putting host tensors on the device, reading them back, allocating outputs, the
NOC coordinates of worker cores, and the launch itself (``ttnn.generic_op`` or the emulator's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ttflashdecode.ttnn_env import import_ttnn


@dataclass(frozen=True)
class Backend:
    device: Any
    is_emulator: bool

    def grid(self) -> tuple[int, int]:
        g = self.device.compute_with_storage_grid_size()
        return (g.x, g.y)

    def noc_coord(self, core: tuple[int, int]) -> tuple[int, int]:
        """NOC (virtual) coordinates of logical worker core ``core``, as kernels address it."""
        ttnn = import_ttnn()
        c = self.device.worker_core_from_logical_core(ttnn.CoreCoord(*core))
        return (c.x, c.y)

    def from_torch(self, tensor: torch.Tensor, dtype, layout):
        ttnn = import_ttnn()
        if self.is_emulator:
            return self.device.from_torch(tensor, dtype=dtype, layout=layout)
        return ttnn.from_torch(
            tensor, dtype=dtype, layout=layout, device=self.device, memory_config=ttnn.DRAM_MEMORY_CONFIG
        )

    def to_torch(self, tensor) -> torch.Tensor:
        """Reads a device tensor back to the host (``validate_device_tensors`` checks the values kernels will read)."""
        if self.is_emulator:
            return self.device.to_torch(tensor)
        return import_ttnn().to_torch(tensor)

    def allocate(self, shape, dtype, layout, memory_config=None):
        ttnn = import_ttnn()
        memory_config = ttnn.DRAM_MEMORY_CONFIG if memory_config is None else memory_config
        if self.is_emulator:
            if memory_config == ttnn.DRAM_MEMORY_CONFIG:
                return self.device.allocate(shape, dtype, layout)
            return self.device.allocate(shape, dtype, layout, memory_config=memory_config)
        return ttnn.allocate_tensor_on_device(ttnn.Shape(list(shape)), dtype, layout, self.device, memory_config)

    def lowest_l1_buffer_address(self) -> int | None:
        """Lowest address of a live L1 buffer on the device, None if there is none. A program's circular buffers
        must end below it (tt-metal refuses the launch otherwise)."""
        if self.is_emulator:
            return self.device.lowest_l1_buffer_address()
        ttnn = import_ttnn()
        addresses = [
            int(b.address) for b in ttnn._ttnn.reports.get_buffers(self.device) if b.buffer_type == ttnn.BufferType.L1
        ]
        return min(addresses) if addresses else None

    def launch(self, io_tensors: list, program) -> Any:
        """Runs ``program`` over ``io_tensors`` (outputs last). Returns the emulator's run statistics,
        or None on a device."""
        if self.is_emulator:
            return self.device.generic_op(io_tensors, program)
        import_ttnn().generic_op(io_tensors, program)
        return None


def backend_of(tensor) -> Backend:
    """The backend that owns ``tensor`` (which must live on a device or the emulator)."""
    device = tensor.device() if callable(getattr(tensor, "device", None)) else None
    if device is None:
        raise ValueError(
            f"q: expected a tensor on a device or on the emulator (ttnn.from_torch(..., device=...) or "
            f"emulator device .from_torch(...)), got a host tensor of type {type(tensor).__name__}"
        )
    return backend_for(device)


def backend_for(device) -> Backend:
    """The backend of ``device``: a ttnn device, or an emulator device."""
    from ttflashdecode import emulator  # deferred: the emulator is only needed when used

    return Backend(device=device, is_emulator=isinstance(device, emulator.EmuDevice))
