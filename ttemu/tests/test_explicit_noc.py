"""Data-movement calls that name their NoC (tt-metal's ``noc`` argument, ``noc_index`` by default): the transfer issues
on that NoC's NIU, in the emulator's functional model and its timing model alike.

- a kernel whose default is NoC 1 moves a DRAM page over NoC 0 by naming it (the output is the input, bit for bit);
- a barrier waits for its own NoC's transactions only: a read issued on NoC 0 is still in flight after
  ``noc_async_read_barrier(1)`` (the emulator reports it where the page is pushed), and in the timing model a barrier on
  the other NoC does not wait for it;
- on Wormhole a DRAM address is a NoC's own (``dram_bank_to_noc_xy[noc]``: NoC 1's raw coordinates are NoC 0's
  mirrored): one built for NoC 1 but issued on NoC 0 is a fault naming both NoCs;
- the timing model routes a transfer on the NoC it was issued on: its links are that NoC's, along that NoC's route
  (NoC 0 +x then +y, NoC 1 -y then -x).
Durations are MODELLED, not measured on silicon.
"""

from __future__ import annotations

import pytest
import torch

from ttemu import KernelFault
from ttemu.timing import Barrier, Noc, Proc, TimingModel, dram

from .emu_helpers import cb, crs, kernel

CORE = (0, 0)
PAGE_BYTES = 2048  # one bf16 tile


def _noc1_default(ttnn):
    """A data-movement kernel whose default NoC (noc_index) is NoC 1."""
    return ttnn.DataMovementConfigDescriptor(processor=ttnn.DataMovementProcessor.RISCV_0, noc=ttnn.NOC.NOC_1)


def _run(dev, ttnn, src, dst, *, count=1, read_noc, addr_noc=None, barrier_noc=None, write_noc=None):
    addr_noc = read_noc if addr_noc is None else addr_noc
    barrier_noc = read_noc if barrier_noc is None else barrier_noc
    write_noc = read_noc if write_noc is None else write_noc
    rt = [src.buffer_address(), dst.buffer_address(), PAGE_BYTES, count, read_noc, addr_noc, barrier_noc, write_noc]
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("noc_explicit.cpp", crs(CORE), rt={CORE: rt}, config=_noc1_default(ttnn))],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, PAGE_BYTES, 1, crs(CORE))],
    )
    return dev.generic_op([src, dst], pd)


@pytest.fixture
def tensors(emu_device, ttnn):
    # Page 0 of each lives in DRAM bank 0, the bank the kernel reads and writes.
    x = torch.randn(32, 32 * 12)
    src = emu_device.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    poison = torch.full((32, 32 * 12), float("nan"))
    dst = emu_device.from_torch(poison, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    yield x, src, dst
    src.deallocate()
    dst.deallocate()


@pytest.mark.parametrize("read_noc", [0, 1], ids=["noc0_explicit", "noc1_default"])
def test_a_page_moves_over_the_noc_named(emu_device, ttnn, tensors, read_noc):
    x, src, dst = tensors
    stats = _run(emu_device, ttnn, src, dst, read_noc=read_noc)
    y = emu_device.to_torch(dst)
    ref = x.to(torch.bfloat16)
    assert torch.equal(y[:, :32], ref[:, :32])
    assert torch.isnan(y[:, 32:].float()).all()  # only page 0 was written
    assert stats.pages_read(src) == {0: 1} and stats.pages_written(dst) == {0: 1}


def test_a_barrier_on_the_other_noc_leaves_the_read_in_flight(emu_device, ttnn, tensors):
    _, src, dst = tensors
    # read on NoC 0, barrier on NoC 1 (the kernel's default): the page is pushed before its read completed
    with pytest.raises(KernelFault) as ei:
        _run(emu_device, ttnn, src, dst, read_noc=0, barrier_noc=1)
    msg = str(ei.value)
    assert "cb_push_back" in msg and "issued on NoC 0 has not completed" in msg, msg


def test_an_address_built_for_the_other_noc_faults(emu_device, ttnn, tensors):
    _, src, dst = tensors
    # dram_bank_to_noc_xy[1] (mirrored raw coordinates on Wormhole) issued on NoC 0: on silicon the mirrored node is a
    # Tensix core by its raw coordinates; the emulator faults and names both NoCs.
    with pytest.raises(KernelFault) as ei:
        _run(emu_device, ttnn, src, dst, read_noc=0, addr_noc=1)
    msg = str(ei.value)
    assert "issued on NoC 0" in msg and "an address built for NoC 1 but issued on NoC 0" in msg, msg


def test_the_timing_model_routes_each_read_on_its_noc(emu_device, ttnn, tensors):
    _, src, dst = tensors
    links = {}
    for noc in (0, 1):
        stats = _run(emu_device, ttnn, src, dst, count=64, read_noc=noc)
        assert stats.timing is not None and stats.timing.ok, stats.timing and stats.timing.error
        links[noc] = stats.timing.busiest_links
    # every link the transfers used is on the NoC the kernel named, whatever its default
    assert links[0] and all(lk.noc == Noc.NOC0 for lk in links[0]), links[0]
    assert links[1] and all(lk.noc == Noc.NOC1 for lk in links[1]), links[1]
    # and the routes differ: NoC 0 leaves core (0,0) at (1,1) along +x then +y, NoC 1 along -y then -x. (A read's
    # request and response on one NoC go round both rings, so its latency alone does not tell the NoCs apart.)
    hops = {noc: {(lk.origin, lk.axis) for lk in links[noc]} for noc in (0, 1)}
    assert hops[0] != hops[1], hops


def test_a_barrier_waits_for_its_own_nocs_transfers_only():
    # The timing model on its own: 32 reads of 8 KB from DRAM bank 0 on NoC 0, then a read barrier on NoC 1 (nothing
    # in flight there: no wait) or on NoC 0 (waits for all 32).
    waits = {}
    for barrier_noc in (Noc.NOC0, Noc.NOC1):
        m = TimingModel()
        r = m.add_risc(0, Proc.NCRISC)
        for _ in range(32):
            m.read(r, dram(0), 8192, Noc.NOC0)
        m.barrier(r, Barrier.READ, noc=barrier_noc)
        m.run()
        waits[barrier_noc] = m.risc_result(r).wait
    assert waits[Noc.NOC1] == 0, waits
    assert waits[Noc.NOC0] > 32 * 8192 / 64, waits  # at least the bytes at twice a link's rate


def test_transaction_ids_are_per_noc():
    # The same transaction id on both NoCs (each NIU counts its own): 32 reads of 8 KB tagged 3 on NoC 0 from bank 1,
    # one of 32 B tagged 3 on NoC 1 from bank 0; the trid barrier on NoC 1 waits for the short read only.
    waits = {}
    for barrier_noc in (Noc.NOC0, Noc.NOC1):
        m = TimingModel()
        r = m.add_risc(0, Proc.NCRISC)
        for _ in range(32):
            m.read(r, dram(1), 8192, Noc.NOC0, trid=3)
        m.read(r, dram(0), 32, Noc.NOC1, trid=3)
        m.barrier(r, Barrier.READ, trid=3, noc=barrier_noc)
        m.run()
        waits[barrier_noc] = m.risc_result(r).wait
    assert waits[Noc.NOC1] < 0.1 * waits[Noc.NOC0], waits
