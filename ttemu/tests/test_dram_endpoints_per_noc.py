"""A DRAM bank is reached through its NoC's own tile: a soc descriptor's dram_view names a worker endpoint per NoC
(``worker_endpoint: [NoC 0's, NoC 1's]``, subchannels of the view's channel), and tt-metal fills
``dram_bank_to_noc_xy[noc][bank]`` with ``get_preferred_worker_core_for_dram_view(channel, noc)``.

- Wormhole's views name one tile for both NoCs (NoC 1's table holds its raw coordinates mirrored, test_explicit_noc.py);
- Blackhole's name two tiles of the channel (channel 0: 0-11 for NoC 0, 0-1 for NoC 1): a P150 core reading bank 0 over
  NoC 1 gets bank 0's data, and in the timing model the response leaves the NoC 1 tile, not NoC 0's.
Durations are MODELLED, not measured on silicon.
"""

from __future__ import annotations

import pytest
import torch

import ttemu
from ttemu import arch
from ttemu.timing import Noc

from .emu_helpers import cb, crs, kernel

PAGE_BYTES = 2048  # one bf16 tile
# The P150 core at the grid's far corner, translated (13, 11): two NoC 1 hops in y and four in x from bank 0's NoC 1
# tile (0, 1) (NoC 1 goes -y then -x, wrapping), so the response's whole route is among the busiest links.
CORE = (10, 9)


@pytest.fixture(scope="module")
def p150():
    device = ttemu.open_device(board="p150")
    yield device
    device.close()


def test_the_bank_tables_name_each_nocs_endpoint():
    _, wh = arch.dram_layout_for(arch.WORMHOLE_B0)
    assert all(b.xy(1) == b.xy(0) for b in wh)  # every Wormhole view: worker_endpoint [e, e]
    _, bh = arch.dram_layout_for(arch.BLACKHOLE)
    # blackhole_140_arch.yaml: dram [[0-0, 0-1, 0-11], [0-2, 0-10, 0-3], ...], views' worker_endpoint [2, 1] / [0, 1]
    assert [b.xy(0) for b in bh] == [(0, 11), (0, 2), (0, 9), (0, 5), (9, 11), (9, 3), (9, 8), (9, 6)]
    assert [b.xy(1) for b in bh] == [(0, 1), (0, 10), (0, 4), (0, 7), (9, 1), (9, 10), (9, 4), (9, 7)]


def _run_noc1(dev, ttnn, src, dst, count):
    # noc_explicit.cpp: `count` reads of bank 0's page 0 and one write to dst's, every call on NoC 1 with addresses
    # from dram_bank_to_noc_xy[1].
    rt = [src.buffer_address(), dst.buffer_address(), PAGE_BYTES, count, 1, 1, 1, 1]
    config = ttnn.DataMovementConfigDescriptor(processor=ttnn.DataMovementProcessor.RISCV_0, noc=ttnn.NOC.NOC_1)
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("noc_explicit.cpp", crs(CORE), rt={CORE: rt}, config=config)],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, PAGE_BYTES, 1, crs(CORE))],
    )
    return dev.generic_op([src, dst], pd)


@pytest.fixture
def tensors(p150, ttnn):
    x = torch.randn(32, 32 * 8)  # one page per bank: page 0 in bank 0
    src = p150.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    dst = p150.from_torch(torch.full_like(x, float("nan")), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    yield x, src, dst
    src.deallocate()
    dst.deallocate()


def test_a_noc1_read_on_blackhole_reaches_its_bank(p150, ttnn, tensors):
    x, src, dst = tensors
    stats = _run_noc1(p150, ttnn, src, dst, count=1)
    y = p150.to_torch(dst)
    assert torch.equal(y[:, :32], x.to(torch.bfloat16)[:, :32])
    assert torch.isnan(y[:, 32:].float()).all()  # only page 0 was written
    assert stats.pages_read(src) == {0: 1} and stats.pages_written(dst) == {0: 1}


def test_a_noc1_read_on_blackhole_starts_its_response_at_the_noc1_tile(p150, ttnn, tensors):
    _, src, dst = tensors
    stats = _run_noc1(p150, ttnn, src, dst, count=64)
    assert stats.timing is not None and stats.timing.ok, stats.timing and stats.timing.error
    links = stats.timing.busiest_links
    assert links and all(lk.noc == Noc.NOC1 for lk in links), links
    # 64 responses of 2 KB outweigh the one-flit requests and the one write: the six busiest links are the response's
    # route from bank 0's NoC 1 tile (0, 1) to the core (13, 11): -y (0, 1) -> (0, 0) -> (0, 11), then -x -> (16, 11)
    # -> ... -> (13, 11). From NoC 0's tile (0, 11) the route would be the four x links only.
    route = {((0, 1), 1), ((0, 0), 1), ((0, 11), 0), ((16, 11), 0), ((15, 11), 0), ((14, 11), 0)}
    assert {(lk.origin, lk.axis) for lk in links[:6]} == route, links[:8]
    assert links[6].busy < links[5].busy / 8, links[:8]
