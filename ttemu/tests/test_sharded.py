"""L1 HEIGHT_SHARDED tensors in the host emulator, TILE and ROW_MAJOR: placement, host round trips, NOC traffic into
and out of shards on other cores, persistence across programs, per-page statistics, the CB / L1-buffer clash check and
faults. ROW_MAJOR pages are rows of the last dim, each padded in L1 to the 16-B L1 alignment."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

import ttemu
from ttemu import EmulatorError, KernelFault, arch
from ttemu.ttnn_env import import_ttnn

from .emu_helpers import cb, crs, kernel, rect

ttnn = import_ttnn()


@pytest.fixture
def dev():
    # A fresh device per test: L1 placement and the CB clash check depend on which L1 buffers are live.
    d = ttemu.open_device("n150")
    yield d
    d.close()


def height_sharded(cores, shard_h, shard_w, orientation=ttnn.ShardOrientation.ROW_MAJOR):
    return ttnn.MemoryConfig(
        ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
        ttnn.BufferType.L1,
        ttnn.ShardSpec(cores, [shard_h, shard_w], orientation),
    )


def host_ref(x, dtype):
    return ttnn.to_torch(ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT))


def noc_xy(dev, c):
    w = dev.worker_core_from_logical_core(ttnn.CoreCoord(*c))
    return [w.x, w.y]


@pytest.mark.parametrize("dtype", [ttnn.bfloat16, ttnn.float32, ttnn.bfloat8_b], ids=lambda d: str(d).split(".")[-1])
def test_round_trip_matches_dram(dev, dtype):
    torch.manual_seed(11)
    x = torch.randn(2, 3, 40, 96) * 3  # padded height 2*3*64 = 384 rows; 96 rows per shard -> 4 shards
    mc = height_sharded(rect(0, 0, 2, 1), 96, 96)
    t = dev.from_torch(x, dtype=dtype, memory_config=mc, layout=ttnn.TILE_LAYOUT)
    assert t.is_sharded() and t.memory_config() == mc
    assert t.memory_config().shard_spec.shape == [96, 96]
    assert t.shard_cores() == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]
    tile = t.buffer_page_size()
    assert t.buffer_num_pages() == 2 * 3 * 2 * 3 and t.buffer_aligned_page_size() == tile
    assert t.buffer_address() == (arch.L1_SIZE - 9 * tile) // 32 * 32  # top-down from the end of L1
    d = dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
    y = dev.to_torch(t)
    assert torch.equal(y, dev.to_torch(d))
    assert torch.equal(y, host_ref(x, dtype))
    assert not d.is_sharded() and d.memory_config() == ttnn.DRAM_MEMORY_CONFIG
    # in-place host write keeps the address
    x2 = torch.randn_like(x)
    addr = t.buffer_address()
    dev.write(t, x2)
    assert t.buffer_address() == addr and torch.equal(dev.to_torch(t), host_ref(x2, dtype))


def test_host_constructors_and_col_major(dev):
    torch.manual_seed(12)
    x = torch.randn(1, 1, 256, 64)
    mc = ttnn.create_sharded_memory_config(
        (64, 64),
        core_grid=rect(3, 4, 4, 5),
        strategy=ttnn.ShardStrategy.HEIGHT,
        orientation=ttnn.ShardOrientation.COL_MAJOR,
        use_height_and_width_as_shard_shape=True,
    )
    t = dev.from_torch(x, dtype=ttnn.float32, memory_config=mc, layout=ttnn.TILE_LAYOUT)
    # COL_MAJOR takes the grid column by column, as ttnn.corerange_to_cores(row_wise=False)
    assert t.shard_cores() == [(3, 4), (3, 5), (4, 4), (4, 5)]
    assert torch.equal(dev.to_torch(t), x)
    mc2 = ttnn.create_sharded_memory_config(
        [1, 1, 256, 64], core_grid=ttnn.CoreGrid(y=2, x=4), strategy=ttnn.ShardStrategy.HEIGHT
    )
    t2 = dev.allocate((1, 1, 256, 64), ttnn.bfloat16, memory_config=mc2)
    assert t2.memory_config().shard_spec.shape == [32, 64] and len(t2.shard_cores()) == 8
    assert t2.buffer_address() < t.buffer_address()


def test_allocation_free_and_garbage_collection(dev):
    mc = height_sharded(rect(0, 0, 3, 0), 64, 128)
    shape = (1, 1, 256, 128)
    a = dev.allocate(shape, ttnn.bfloat16, memory_config=mc)
    region = 2 * 4 * 2048
    assert a.buffer_address() == arch.L1_SIZE - region
    b = dev.allocate(shape, ttnn.bfloat16, memory_config=mc)
    assert b.buffer_address() == a.buffer_address() - region
    a.deallocate()
    c = dev.allocate(shape, ttnn.bfloat16, memory_config=mc)
    assert c.buffer_address() == arch.L1_SIZE - region  # the freed top range is reused
    del c
    gc.collect()
    d = dev.allocate(shape, ttnn.bfloat16, memory_config=mc)
    assert d.buffer_address() == arch.L1_SIZE - region  # garbage collection freed it too
    with pytest.raises(EmulatorError, match="L1 out of memory"):
        dev.allocate((1, 1, 32 * 700, 32), ttnn.float32, memory_config=height_sharded(crs((0, 0)), 32 * 700, 32))
    with pytest.raises(EmulatorError, match="tensor_accessor_args"):
        d.tensor_accessor_args()


@pytest.mark.parametrize(
    "mc,layout,match",
    [
        (
            lambda: ttnn.MemoryConfig(
                ttnn.TensorMemoryLayout.WIDTH_SHARDED,
                ttnn.BufferType.L1,
                ttnn.ShardSpec(rect(0, 0, 1, 0), [64, 64], ttnn.ShardOrientation.ROW_MAJOR),
            ),
            None,
            "memory_layout=TensorMemoryLayout.WIDTH_SHARDED",
        ),
        (
            lambda: ttnn.MemoryConfig(
                ttnn.TensorMemoryLayout.BLOCK_SHARDED,
                ttnn.BufferType.L1,
                ttnn.ShardSpec(rect(0, 0, 1, 0), [64, 64], ttnn.ShardOrientation.ROW_MAJOR),
            ),
            None,
            "memory_layout=TensorMemoryLayout.BLOCK_SHARDED",
        ),
        (
            lambda: ttnn.MemoryConfig(
                ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
                ttnn.BufferType.DRAM,
                ttnn.ShardSpec(rect(0, 0, 1, 0), [32, 128], ttnn.ShardOrientation.ROW_MAJOR),
            ),
            None,
            "buffer_type=BufferType.DRAM",
        ),
        (
            lambda: ttnn.MemoryConfig(ttnn.TensorMemoryLayout.INTERLEAVED, ttnn.BufferType.L1_SMALL),
            None,
            "buffer_type=BufferType.L1_SMALL with INTERLEAVED",
        ),  # L1 INTERLEAVED itself: test_l1_interleaved.py
        (
            lambda: ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1),
            None,
            "needs a shard_spec",
        ),
        (lambda: height_sharded(rect(0, 0, 1, 0), 32, 64), None, r"shard width must equal the padded width 128"),
        (lambda: height_sharded(rect(0, 0, 1, 0), 48, 128), None, "multiple of 32"),
        (lambda: height_sharded(rect(0, 0, 1, 0), 32, 128), None, "into 2 shards|into 4 shards"),
        (lambda: height_sharded(rect(7, 7, 8, 7), 32, 128), None, r"outside the 8x8"),
        (
            lambda: height_sharded(rect(0, 0, 1, 0), 128, 64),
            ttnn.ROW_MAJOR_LAYOUT,
            r"shard width must equal the width 128 .*full-width shards only",
        ),
        (lambda: height_sharded(rect(0, 0, 1, 0), 16, 128), ttnn.ROW_MAJOR_LAYOUT, "height 128 .* into 8 shards"),
        (lambda: "L1", None, "expected a ttnn.MemoryConfig"),
    ],
    ids=[
        "width",
        "block",
        "dram_sharded",
        "l1_small_interleaved",
        "no_spec",
        "shard_w",
        "shard_h",
        "too_many_shards",
        "outside_grid",
        "rm_shard_w",
        "rm_too_many_shards",
        "not_a_config",
    ],
)
def test_rejected_memory_configs(dev, mc, layout, match):
    with pytest.raises(EmulatorError, match=match):
        dev.allocate((1, 1, 128, 128), ttnn.bfloat16, layout=layout, memory_config=mc())
    with pytest.raises(EmulatorError, match=match):
        dev.from_torch(
            torch.zeros(1, 1, 128, 128), dtype=ttnn.bfloat16, layout=layout or ttnn.TILE_LAYOUT, memory_config=mc()
        )


def _copy_pd(dev, dram, shard, direction, writers, *, n=None, per=None, stride=None):
    """Program: each writer core moves its slice of pages between `dram` and the shards of `shard` (CB 0 staging).

    Page i is addressed as get_noc_addr(shard core i // per, shard address + (i % per) * stride); by default n, per
    and stride are the tensor's page count, pages per shard and aligned page size (tests override them to misuse it).
    """
    n = shard.buffer_num_pages() if n is None else n
    per = shard._shard.pages_per_shard if per is None else per
    stride = shard.buffer_aligned_page_size() if stride is None else stride
    shard_xy = [v for c in shard.shard_cores()[: -(-n // per)] for v in noc_xy(dev, c)]
    step = -(-n // len(writers))
    rt = {}
    for i, w in enumerate(writers):
        s = min(i * step, n)
        rt[w] = [
            dram.buffer_address(),
            shard.buffer_address(),
            per,
            s,
            max(0, min(step, n - s)),
            shard.buffer_page_size(),
            stride,
        ] + shard_xy
    cores = crs(*writers)
    return ttnn.ProgramDescriptor(
        kernels=[kernel("shard_copy.cpp", cores, [direction] + dram.tensor_accessor_args(), rt)],
        semaphores=[],
        cbs=[cb(0, shard.dtype, shard.buffer_aligned_page_size(), 1, cores)],
    )


@pytest.mark.parametrize("dtype", [ttnn.bfloat16, ttnn.float32], ids=lambda d: str(d).split(".")[-1])
def test_noc_writes_into_shards_on_other_cores(dev, dtype):
    torch.manual_seed(13)
    x = torch.randn(1, 4, 64, 64)  # 16 pages; shards of 96 rows = 6 pages -> shards 0..2, shard 2 partial
    src = dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
    shard_grid = crs((1, 1), (4, 2), (6, 6), (0, 7))  # one core more than shards: (0,7) holds no pages
    out = dev.allocate(x.shape, dtype, memory_config=height_sharded(shard_grid, 96, 64))  # poisoned 0xDEADBEEF
    assert out._shard.num_shards == 3 and out.shard_cores() == [(1, 1), (4, 2), (6, 6), (0, 7)]
    # writers: (4,2) writes pages of shards 0 and 1 (its own shard and one on (1,1)); (2,5) holds no shard at all
    writers = [(4, 2), (2, 5)]
    stats = dev.generic_op([src, out], _copy_pd(dev, src, out, 0, writers))
    assert torch.equal(dev.to_torch(out), host_ref(x, dtype))
    n = out.buffer_num_pages()
    assert stats.pages_written(out) == {i: 1 for i in range(n)}
    assert stats.pages_read(src) == {i: 1 for i in range(n)}
    assert stats.bytes_written_to(out) == n * out.buffer_page_size()
    assert stats.noc_bytes[("4,2", "1,1")] == 6 * out.buffer_page_size()
    # the shards persist into the next program, which moves them back out to DRAM from other cores
    back = dev.allocate(x.shape, dtype)
    stats2 = dev.generic_op([out, back], _copy_pd(dev, back, out, 1, [(7, 0), (1, 1), (3, 3)]))
    assert torch.equal(dev.to_torch(back), host_ref(x, dtype))
    assert stats2.pages_read(out) == {i: 1 for i in range(n)} and not stats2.pages_written(out)


def test_local_plain_offset_transfers_and_poison_outside_pages(dev):
    torch.manual_seed(14)
    x = torch.randn(3, 64, 32)  # padded height 192, shards of 64 rows = 2 pages each on 3 cores
    dtype = ttnn.bfloat16
    src = dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
    out = dev.allocate(x.shape, dtype, memory_config=height_sharded(crs((5, 0), (5, 1), (2, 2)), 64, 32))
    shard_cores = out.shard_cores()
    assert shard_cores == [(5, 0), (5, 1), (2, 2)]
    page = out.buffer_page_size()

    def pd(direction, dram):
        rt = {c: [dram.buffer_address(), out.buffer_address(), 2 * k, 2, page] for k, c in enumerate(shard_cores)}
        return ttnn.ProgramDescriptor(
            kernels=[kernel("shard_local.cpp", crs(*shard_cores), [direction] + dram.tensor_accessor_args(), rt)],
            semaphores=[],
            cbs=[],
        )

    stats = dev.generic_op([src, out], pd(0, src))
    assert torch.equal(dev.to_torch(out), host_ref(x, dtype))
    assert stats.pages_written(out) == {i: 1 for i in range(6)}
    back = dev.allocate(x.shape, dtype)
    dev.generic_op([out, back], pd(1, back))
    assert torch.equal(dev.to_torch(back), host_ref(x, dtype))


def test_cb_clash_with_l1_buffer(dev):
    out = dev.allocate((1, 1, 64, 64), ttnn.bfloat16, memory_config=height_sharded(crs((2, 2), (3, 2)), 32, 64))
    free = out.buffer_address() - arch.L1_UNRESERVED_BASE
    fits = free // 2048 * 2048
    ok = ttnn.ProgramDescriptor(
        kernels=[kernel("shard_oob.cpp", crs((2, 2)), [0], {(2, 2): [0, 0, 0, 0]})],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 2048, fits // 2048, crs((2, 2)))],
    )
    dev.generic_op([out], ok)  # a CB ending just below the buffer is fine (the kernel writes 0 bytes)
    for core, where in (((3, 2), "a shard of that buffer lives on this core"), ((6, 6), "reserves an L1 buffer")):
        bad = ttnn.ProgramDescriptor(
            kernels=[], semaphores=[], cbs=[cb(7, ttnn.bfloat16, 2048, fits // 2048 + 1, crs(core))]
        )
        with pytest.raises(EmulatorError) as ei:
            dev.generic_op([out], bad)
        msg = str(ei.value)
        assert f"circular buffer 7 on core ({core[0]},{core[1]})" in msg and "clash" in msg
        assert f"L1 buffer {out.buffer_id}" in msg and f"0x{out.buffer_address():x}" in msg and where in msg
    out.deallocate()
    dev.generic_op(
        [],
        ttnn.ProgramDescriptor(
            kernels=[], semaphores=[], cbs=[cb(7, ttnn.bfloat16, 2048, fits // 2048 + 1, crs((3, 2)))]
        ),
    )


def test_writes_past_the_shard_fault(dev):
    top = dev.allocate((32, 64), ttnn.bfloat16, memory_config=height_sharded(crs((0, 0)), 32, 64))
    low = dev.allocate((32, 64), ttnn.bfloat16, memory_config=height_sharded(crs((1, 0)), 32, 64))
    region = 2 * 2048
    assert low.buffer_address() + region == top.buffer_address() == arch.L1_SIZE - region
    sender = (4, 4)

    def run(target, addr, nbytes=2048, mode=0):
        x, y = noc_xy(dev, target)
        pd = ttnn.ProgramDescriptor(
            kernels=[kernel("shard_oob.cpp", crs(sender), [mode], {sender: [x, y, addr, nbytes]})],
            semaphores=[],
            cbs=[cb(0, ttnn.bfloat16, 2048, 1, crs(sender))],
        )
        return dev.generic_op([top, low], pd)

    run((1, 0), low.buffer_address() + 2048)  # the last page of the shard: legal
    # one page past the lower buffer's shard: `top` owns that range but has no shard on (1,0)
    with pytest.raises(KernelFault) as ei:
        run((1, 0), low.buffer_address() + region)
    assert ei.value.core == "4,4" and "outside allocated L1" in str(ei.value) and "unallocated L1" in str(ei.value)
    # straddling the end of the shard
    with pytest.raises(KernelFault, match="outside allocated L1"):
        run((1, 0), low.buffer_address() + 2048 + 1024)
    # past the top buffer's shard = past the end of L1
    with pytest.raises(KernelFault, match="runs past the end of L1"):
        run((0, 0), top.buffer_address() + region)
    # a shard core that is not in the grid of `low`
    with pytest.raises(KernelFault, match="unallocated L1"):
        run((2, 0), low.buffer_address())
    # the legal write replaced page 1 with CB 0's (zero) bytes; page 0 keeps allocate()'s poison
    words = np.frombuffer(dev._read_pages(low), dtype=np.uint32)
    assert (words[:512] == 0xDEADBEEF).all() and (words[512:] == 0).all()


def test_plain_offset_dereference_is_reported(dev):
    t = dev.allocate((32, 32), ttnn.bfloat16, memory_config=height_sharded(crs((0, 0)), 32, 32))
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("shard_oob.cpp", crs((0, 0)), [1], {(0, 0): [0, 0, t.buffer_address(), 4]})],
        semaphores=[],
        cbs=[],
    )
    with pytest.raises(KernelFault, match="plain L1 offset used as a pointer"):
        dev.generic_op([t], pd)


# ---- ROW_MAJOR height-sharded tensors: a page is one row ("stick") of the last dim, padded in L1 to the 16-B
# L1 alignment (tt-metal's Buffer::aligned_page_size; Wormhole L1_ALIGNMENT, the wheel's noc_parameters.h); shard k
# holds rows [k * shard_h, (k + 1) * shard_h) of the [prod(shape[:-1]), width] view as consecutive aligned pages.

RM = ttnn.ROW_MAJOR_LAYOUT


def _rm_values(shape, dtype, seed):
    """Host data of `shape` exactly representable in `dtype`, as the torch dtype ttnn.to_torch returns."""
    g = torch.Generator().manual_seed(seed)
    if dtype == ttnn.bfloat16:
        return (torch.randn(shape, generator=g) * 3).to(torch.bfloat16)
    if dtype == ttnn.float32:
        return torch.randn(shape, generator=g) * 3
    ints = torch.randint(-(2**31), 2**31, shape, generator=g, dtype=torch.int64).to(torch.int32)
    return ints.view(torch.uint32) if dtype == ttnn.uint32 else ints


def _row_bytes(x):
    """Bytes of each row of the [prod(shape[:-1]), width] view of host tensor `x`."""
    width = x.shape[-1] if x.dim() else 1
    return x.contiguous().reshape(-1).view(torch.uint8).numpy().reshape(-1, width * x.element_size())


def _l1_bytes(dev, core, addr, n):
    x, y = core
    start = (y * dev.grid[0] + x) * arch.L1_SIZE + addr
    return dev._l1[start : start + n]


# (shape, dtype, shard_h, shard grid, expected page bytes, expected aligned page bytes)
RM_CASES = {
    "q_bf16_user_per_core": ((1, 4, 8, 128), ttnn.bfloat16, 8, rect(0, 0, 3, 0), 256, 256),
    "bf16_w8_partial": ((3, 20, 8), ttnn.bfloat16, 16, rect(0, 0, 1, 1), 16, 16),
    "bf16_w4_padded_partial": ((50, 4), ttnn.bfloat16, 7, rect(2, 3, 5, 4), 8, 16),
    "f32_w3_padded_partial": ((2, 5, 3), ttnn.float32, 4, crs((5, 0), (1, 2), (6, 6)), 12, 16),
    "i32_w5_padded_partial": ((3, 1, 7, 5), ttnn.int32, 6, rect(0, 0, 3, 0), 20, 32),
    "u32_w12_spare_core": ((9, 12), ttnn.uint32, 4, rect(4, 4, 7, 4), 48, 48),
    "i32_1d": ((10,), ttnn.int32, 1, crs((3, 3)), 40, 48),
}


@pytest.mark.parametrize("case", list(RM_CASES), ids=list(RM_CASES))
def test_row_major_round_trip_and_placement(dev, case):
    shape, dtype, shard_h, grid, page, aligned = RM_CASES[case]
    width = shape[-1]
    height = int(np.prod(shape[:-1]))
    mc = height_sharded(grid, shard_h, width)
    x = _rm_values(shape, dtype, seed=len(case))
    t = dev.from_torch(x, dtype=dtype, layout=RM, memory_config=mc)
    assert t.is_sharded() and not t.is_l1_interleaved() and t.memory_config() == mc and t.layout == RM
    assert t.buffer_type() == ttnn.BufferType.L1
    assert (t.buffer_page_size(), t.buffer_aligned_page_size(), t.buffer_num_pages()) == (page, aligned, height)
    num_shards = -(-height // shard_h)
    cores = t.shard_cores()
    assert cores == [(int(c.x), int(c.y)) for c in ttnn.corerange_to_cores(grid, row_wise=True)]
    sh = t._shard
    assert (sh.pages_per_shard, sh.num_shards, sh.region_bytes) == (shard_h, num_shards, shard_h * aligned)
    # top-down from the end of L1 in the allocator's 16-B granule
    assert t.buffer_address() == (arch.L1_SIZE - shard_h * aligned) // 16 * 16 == dev.lowest_l1_buffer_address()

    y = dev.to_torch(t)
    assert y.dtype == x.dtype and tuple(y.shape) == shape and torch.equal(y, x)
    assert torch.equal(y, ttnn.to_torch(ttnn.from_torch(x, dtype=dtype, layout=RM)))
    assert torch.equal(y, dev.to_torch(dev.from_torch(x, dtype=dtype, layout=RM)))  # DRAM interleaved

    # The L1 images themselves: row r on cores[r // shard_h] at address + (r % shard_h) * aligned; the padding after
    # each row, the unused rows of a partial last shard and spare cores of the grid are untouched (zero).
    rows = _row_bytes(x)
    for k, core in enumerate(cores):
        region = _l1_bytes(dev, core, t.buffer_address(), shard_h * aligned).reshape(shard_h, aligned)
        held = rows[k * shard_h : (k + 1) * shard_h]
        assert (region[: len(held), :page] == held).all(), f"shard {k} on {core}"
        assert not region[: len(held), page:].any() and not region[len(held) :].any()
    if "partial" in case:
        assert 0 < height - (num_shards - 1) * shard_h < shard_h

    # in-place host write keeps the address
    x2 = _rm_values(shape, dtype, seed=99)
    addr = t.buffer_address()
    dev.write(t, x2)
    assert t.buffer_address() == addr and torch.equal(dev.to_torch(t), x2)


def test_row_major_allocate_poison_free_reuse_and_col_major(dev):
    shape = (1, 1, 20, 4)  # 20 rows of 8 B, 16 B apart in L1: shards of 5 rows take 80 B on each of 4 cores
    mc = height_sharded(rect(0, 0, 3, 0), 5, 4)
    a = dev.allocate(shape, ttnn.bfloat16, RM, mc)  # memory_config as 4th positional argument, ttnn's order
    # the 16-B granule: an 80-B region puts the buffer at an address that is 16 mod 32, as on silicon
    assert a.buffer_address() == arch.L1_SIZE - 80 and a._shard.region_bytes == 80 and a.buffer_address() % 32 == 16
    poison = dev.to_torch(a).view(torch.int16).numpy().view(np.uint32)
    assert poison.size == 40 and (poison == 0xDEADBEEF).all()
    b = dev.allocate((20, 3), ttnn.int32, layout=RM, fill=7, memory_config=height_sharded(rect(0, 0, 3, 0), 5, 3))
    assert b.buffer_address() == a.buffer_address() - 80
    assert torch.equal(dev.to_torch(b), torch.full((20, 3), 7, dtype=torch.int32))
    with pytest.raises(EmulatorError, match="tensor_accessor_args"):
        b.tensor_accessor_args()
    a.deallocate()
    assert not a.is_allocated() and dev.lowest_l1_buffer_address() == b.buffer_address()
    with pytest.raises(EmulatorError, match="deallocated"):
        dev.to_torch(a)
    c = dev.allocate(shape, ttnn.bfloat16, layout=RM, memory_config=mc)
    assert c.buffer_address() == arch.L1_SIZE - 80  # the freed top range is reused
    del c
    gc.collect()
    x = _rm_values((1, 1, 20, 4), ttnn.bfloat16, seed=5)
    # COL_MAJOR orientation takes the grid column by column, as for TILE tensors
    mc_col = height_sharded(rect(3, 4, 4, 5), 5, 4, ttnn.ShardOrientation.COL_MAJOR)
    d = dev.from_torch(x, dtype=ttnn.bfloat16, layout=RM, memory_config=mc_col)
    assert d.buffer_address() == arch.L1_SIZE - 80  # garbage collection freed c's range too
    assert d.shard_cores() == [(3, 4), (3, 5), (4, 4), (4, 5)] and torch.equal(dev.to_torch(d), x)
    assert (_l1_bytes(dev, (3, 5), d.buffer_address(), 16)[:8] == _row_bytes(x)[5]).all()


@pytest.mark.parametrize(
    "shape,dtype,layout,shard,match",
    [
        ((1, 1, 128, 128), ttnn.bfloat8_b, RM, [64, 128], "bfloat8_b needs TILE_LAYOUT"),
        ((1, 1, 128, 128), ttnn.bfloat4_b, RM, [64, 128], "bfloat4_b needs TILE_LAYOUT"),
        ((1, 1, 128, 48), ttnn.bfloat16, RM, [64, 32], r"shard width must equal the width 48 .*full-width shards only"),
        ((1, 1, 128, 48), ttnn.bfloat16, ttnn.TILE_LAYOUT, [64, 48], "shard width must equal the padded width 64"),
        ((1, 1, 128, 64), ttnn.bfloat16, ttnn.TILE_LAYOUT, [48, 64], "multiple of 32 for TILE_LAYOUT"),
        ((0, 4), ttnn.bfloat16, RM, [1, 4], "empty tensor"),
    ],
    ids=["rm_bfp8", "rm_bfp4", "rm_partial_width", "tile_partial_width", "tile_shard_h_48", "rm_empty"],
)
def test_row_major_rejected(dev, shape, dtype, layout, shard, match):
    mc = height_sharded(rect(0, 0, 1, 0), *shard)
    with pytest.raises(EmulatorError, match=match):
        dev.allocate(shape, dtype, layout=layout, memory_config=mc)
    if 0 not in shape:
        with pytest.raises(EmulatorError, match=match):
            dev.from_torch(torch.zeros(shape), dtype=dtype, layout=layout, memory_config=mc)
    # a ROW_MAJOR shard height need not be a multiple of 32 (it is a row count)
    dev.allocate((1, 1, 96, 64), ttnn.bfloat16, layout=RM, memory_config=height_sharded(rect(0, 0, 1, 0), 48, 64))


@pytest.mark.parametrize("case", ["q_bf16_user_per_core", "bf16_w4_padded_partial", "i32_w5_padded_partial"])
def test_row_major_noc_reads_and_writes_every_page(dev, case):
    shape, dtype, shard_h, grid, page, aligned = RM_CASES[case]
    x = _rm_values(shape, dtype, seed=21)
    sharded = dev.from_torch(x, dtype=dtype, layout=RM, memory_config=height_sharded(grid, shard_h, shape[-1]))
    n = sharded.buffer_num_pages()
    cores = sharded.shard_cores()
    # shards -> DRAM: every page read with get_noc_addr(x, y, addr + (i % shard_h) * aligned) by a shard core and
    # by a core holding no shard
    reader = cores[0]
    dram = dev.allocate(shape, dtype, layout=RM)
    stats = dev.generic_op([sharded, dram], _copy_pd(dev, dram, sharded, 1, [reader, (7, 7)]))
    assert torch.equal(dev.to_torch(dram), x)
    assert stats.pages_read(sharded) == {i: 1 for i in range(n)} and not stats.pages_written(sharded)
    assert stats.bytes_read_from(sharded) == n * page
    assert stats.pages_written(dram) == {i: 1 for i in range(n)}
    step = -(-n // 2)  # the reader's pages: [0, step); shard 1's pages: [shard_h, 2 * shard_h)
    from_shard_1 = len(range(shard_h, min(2 * shard_h, step, n)))
    assert stats.noc_bytes[(f"{cores[1][0]},{cores[1][1]}", f"{reader[0]},{reader[1]}")] == from_shard_1 * page

    # DRAM -> a new (poisoned) sharded tensor, written by NOC; the shards persist into the next program, which moves
    # them back out to another DRAM tensor
    out = dev.allocate(shape, dtype, layout=RM, memory_config=height_sharded(grid, shard_h, shape[-1]))
    stats = dev.generic_op([dram, out], _copy_pd(dev, dram, out, 0, [(6, 1), cores[-1]]))
    assert torch.equal(dev.to_torch(out), x)
    assert stats.pages_written(out) == {i: 1 for i in range(n)} and stats.bytes_written_to(out) == n * page
    back = dev.allocate(shape, dtype, layout=RM)
    stats = dev.generic_op([out, back], _copy_pd(dev, back, out, 1, [(2, 6)]))
    assert torch.equal(dev.to_torch(back), x) and stats.pages_read(out) == {i: 1 for i in range(n)}


def test_row_major_unpadded_stride_is_misaligned(dev):
    """Stepping through a shard by the unpadded page size (8 B for 4 bfloat16s) instead of the aligned 16 B breaks
    the NOC's 16-B L1 alignment at page 1: a KernelFault (silicon would move the wrong bytes)."""
    x = _rm_values((2, 8, 4), ttnn.bfloat16, seed=3)
    sharded = dev.from_torch(x, dtype=ttnn.bfloat16, layout=RM, memory_config=height_sharded(rect(0, 0, 1, 0), 8, 4))
    dram = dev.allocate(x.shape, ttnn.bfloat16, layout=RM)
    with pytest.raises(KernelFault, match="misaligned NOC transfer"):
        dev.generic_op([sharded, dram], _copy_pd(dev, dram, sharded, 1, [(0, 0)], stride=8))


def test_row_major_access_past_the_shard_faults(dev):
    mc = lambda core: height_sharded(crs(core), 5, 4)  # noqa: E731  5 rows of 8 B, 16 B apart: 80 B per core
    top = dev.allocate((5, 4), ttnn.bfloat16, layout=RM, memory_config=mc((0, 0)))
    low = dev.allocate((5, 4), ttnn.bfloat16, layout=RM, memory_config=mc((1, 0)))
    region = 5 * 16
    assert low.buffer_address() + region == top.buffer_address() == arch.L1_SIZE - region
    sender = (4, 4)

    def write(target, addr, nbytes=8):
        x, y = noc_xy(dev, target)
        pd = ttnn.ProgramDescriptor(
            kernels=[kernel("shard_oob.cpp", crs(sender), [0], {sender: [x, y, addr, nbytes]})],
            semaphores=[],
            cbs=[cb(0, ttnn.bfloat16, 32, 1, crs(sender))],
        )
        return dev.generic_op([top, low], pd)

    stats = write((1, 0), low.buffer_address() + 4 * 16)  # the last row of the shard: legal
    assert stats.pages_written(low) == {4: 1}
    # one page past the shard: `top` owns that range but has no shard on (1,0)
    with pytest.raises(KernelFault) as ei:
        write((1, 0), low.buffer_address() + region)
    assert ei.value.core == "4,4" and "outside allocated L1" in str(ei.value) and "unallocated L1" in str(ei.value)
    with pytest.raises(KernelFault, match="outside allocated L1"):  # straddling the end of the shard
        write((1, 0), low.buffer_address() + 4 * 16, 32)
    with pytest.raises(KernelFault, match="runs past the end of L1"):  # past the top buffer's shard
        write((0, 0), top.buffer_address() + region)
    with pytest.raises(KernelFault, match="unallocated L1"):  # a core outside the shard grid of `low`
        write((2, 0), low.buffer_address())
    # reading a sixth row that the shard does not have (the kernel assumes 6 rows per shard)
    dram = dev.allocate((6, 4), ttnn.bfloat16, layout=RM)
    with pytest.raises(KernelFault, match="unallocated L1"):
        dev.generic_op([low, dram], _copy_pd(dev, dram, low, 1, [(3, 3)], n=6, per=6))
    # the legal write replaced row 4 with CB 0's (zero) bytes; rows 0..3 keep allocate()'s poison
    words = np.frombuffer(dev._read_pages(low), dtype=np.uint32)
    assert (words[:8] == 0xDEADBEEF).all() and (words[8:] == 0).all()
