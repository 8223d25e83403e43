"""What the op needs to know about a device's chip (Wormhole B0 or Blackhole), as plain values for the planner.

The planner (``ttflashdecode.plan``) is pure: it takes the grid, the L1 budget and the DRAM read alignment as
values. This module reads them off a device: an emulated one carries its ``spec`` (ttemu/arch.py); a ttnn device
or mesh answers ``arch()``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChipFacts:
    name: str
    l1_size: int  # MEM_L1_SIZE of the wheel's <arch>/dev_mem_map.h
    l1_reserved: int  # where circular buffers start: MEM_MAP_END + tt-metal's 69 KiB kernel-config buffer
    dram_alignment: int  # NOC_DRAM_READ_ALIGNMENT_BYTES of the wheel's <arch>/noc/noc_parameters.h

    @property
    def l1_budget(self) -> int:
        return self.l1_size - self.l1_reserved


WORMHOLE_B0 = ChipFacts("wormhole_b0", 1_499_136, 35_168 + 69 * 1024, 32)
BLACKHOLE = ChipFacts("blackhole", 1_572_864, 41_088 + 69 * 1024, 64)


def chip_facts(device) -> ChipFacts:
    """The chip facts of `device` (an emulated device or mesh, or a ttnn device / mesh device); Wormhole B0 when the
    device does not say."""
    spec = getattr(device, "spec", None)
    if spec is not None:
        return BLACKHOLE if spec.name == "blackhole" else WORMHOLE_B0
    arch = getattr(device, "arch", None)
    if callable(arch):
        try:
            return BLACKHOLE if "BLACKHOLE" in str(arch()).upper() else WORMHOLE_B0
        except Exception:  # a test double without a usable arch(): the default
            return WORMHOLE_B0
    return WORMHOLE_B0
