"""L1-INTERLEAVED tensors in the host emulator: the bank table against tt-metal's allocator, host round trips, page
placement in the L1 banks, kernels moving pages with InterleavedAddrGen(Fast)<false> / InterleavedPow2AddrGen<false> /
TensorAccessor, per-page statistics, out-of-bounds faults, the CB clash check and freeing."""

from __future__ import annotations

import ctypes
import gc
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

import ttemu
from ttemu import EmulatorError, KernelFault, arch
from ttemu.tensor import host_to_pages
from ttemu.ttnn_env import import_ttnn

from .emu_helpers import cb, crs, kernel

ttnn = import_ttnn()

L1 = ttnn.L1_MEMORY_CONFIG
DF = {ttnn.bfloat16: 5, ttnn.float32: 0, ttnn.bfloat8_b: 6, ttnn.int32: 8, ttnn.uint32: 24}
NAME = lambda d: str(d).split(".")[-1]  # noqa: E731

# std::shuffle(0..63, std::default_random_engine(0)) as computed by the std::shuffle instantiation that the ttnn 0.81.1
# wheel's libtt_metal.so exports (and calls from AllocatorImpl::init_compute_and_storage_l1_bank_manager): the k-th
# compute core in row-major order gets L1 bank id N150_SHUFFLED[k].
N150_SHUFFLED = [
    34,
    63,
    38,
    6,
    52,
    33,
    4,
    37,
    20,
    35,
    14,
    22,
    2,
    31,
    36,
    19,
    30,
    40,
    3,
    10,
    25,
    7,
    59,
    56,
    39,
    24,
    50,
    12,
    21,
    42,
    29,
    5,
    61,
    0,
    26,
    54,
    1,
    9,
    15,
    13,
    18,
    58,
    8,
    46,
    27,
    51,
    16,
    53,
    62,
    45,
    44,
    43,
    41,
    17,
    55,
    60,
    49,
    48,
    57,
    32,
    47,
    23,
    11,
    28,
]

_SHUFFLE_SYMBOL = (
    "_ZSt7shuffleIN9__gnu_cxx17__normal_iteratorIPjSt6vectorIjSaIjEEEERSt26linear_congruential_engine"
    "ImLm16807ELm0ELm2147483647EEEvT_SA_OT0_"
)


@pytest.fixture
def dev():
    # A fresh device per test: L1 placement and the CB clash check depend on which L1 buffers are live.
    d = ttemu.open_device("n150")
    yield d
    d.close()


def align(v, a):
    return (v + a - 1) // a * a


def host_ref(x, dtype, layout):
    return ttnn.to_torch(ttnn.from_torch(x, dtype=dtype, layout=layout))


def noc_xy(dev, c):
    w = dev.worker_core_from_logical_core(ttnn.CoreCoord(*c))
    return (w.x, w.y)


def random_input(shape, dtype):
    if dtype in (ttnn.int32, ttnn.uint32):
        x = torch.randint(-(2**31), 2**31 - 1, shape, dtype=torch.int64)
        return x.to(torch.int32) if dtype == ttnn.int32 else (x & 0xFFFFFFFF).to(torch.uint32)
    return torch.randn(shape) * 3


def wheel_shuffle(n):
    """The wheel's own std::shuffle(0..n-1, minstd_rand0 seeded 0), called through ctypes; None if unavailable."""
    import ttnn as ttnn_pkg

    path = Path(ttnn_pkg.__file__).resolve().parent / "build" / "lib" / "libtt_metal.so"
    try:
        lib = ctypes.CDLL(str(path), mode=os.RTLD_NOLOAD)  # already loaded by `import ttnn`
        fn = getattr(lib, _SHUFFLE_SYMBOL)
    except (OSError, AttributeError):
        return None
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    ids = (ctypes.c_uint32 * n)(*range(n))
    engine = ctypes.c_uint64(1)  # minstd_rand0(0): a zero seed sets the state to 1 (as the wheel's code does)
    fn(ctypes.addressof(ids), ctypes.addressof(ids) + 4 * n, ctypes.addressof(engine))
    return list(ids)


# ---------------------------------------------------------------------------------------------------- bank table
@pytest.mark.parametrize("grid", [(8, 8), (8, 7)], ids=["n150", "n300"])
def test_bank_table_is_tt_metal_allocators(grid):
    w, h = grid
    table = arch.l1_bank_cores(grid)
    assert sorted(table) == [(x, y) for x in range(w) for y in range(h)]  # one bank per compute core
    shuffled = wheel_shuffle(w * h)
    if grid == (8, 8):
        if shuffled is not None:
            assert shuffled == N150_SHUFFLED
        shuffled = N150_SHUFFLED
    elif shuffled is None:
        pytest.skip("the ttnn wheel's std::shuffle instantiation is not reachable through ctypes")
    for k, bank in enumerate(shuffled):  # k-th compute core, row by row, gets bank shuffled[k]
        assert table[bank] == (k % w, k // w)
    if grid == (8, 8):
        assert table[0] == (1, 4) and table[34] == (0, 0) and table[63] == (1, 0)


# ---------------------------------------------------------------------------------------------------- host side
ROUND_TRIP = [
    (ttnn.bfloat16, ttnn.TILE_LAYOUT, (2, 3, 40, 96)),
    (ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT, (3, 50, 24)),  # 48 B pages
    (ttnn.float32, ttnn.TILE_LAYOUT, (5, 33, 70)),
    (ttnn.float32, ttnn.ROW_MAJOR_LAYOUT, (70, 2)),  # 8 B pages: 16 B apart in a bank
    (ttnn.int32, ttnn.TILE_LAYOUT, (3, 37, 45)),
    (ttnn.int32, ttnn.ROW_MAJOR_LAYOUT, (129, 5)),
    (ttnn.uint32, ttnn.TILE_LAYOUT, (64, 64)),
    (ttnn.uint32, ttnn.ROW_MAJOR_LAYOUT, (2, 66, 7)),
    (ttnn.bfloat8_b, ttnn.TILE_LAYOUT, (1, 1, 96, 700)),
]


@pytest.mark.parametrize(
    "dtype,layout,shape",
    ROUND_TRIP,
    ids=[f"{NAME(d)}-{'tile' if lay == ttnn.TILE_LAYOUT else 'rm'}" for d, lay, _ in ROUND_TRIP],
)
def test_host_round_trip(dev, dtype, layout, shape):
    torch.manual_seed(21)
    x = random_input(shape, dtype)
    t = dev.from_torch(x, dtype=dtype, layout=layout, memory_config=L1)
    d = dev.from_torch(x, dtype=dtype, layout=layout)
    assert t.memory_config() == L1 and t.memory_config().buffer_type == ttnn.BufferType.L1
    assert t.memory_config().memory_layout == ttnn.TensorMemoryLayout.INTERLEAVED
    assert t.buffer_type() == ttnn.BufferType.L1 and not t.is_sharded() and t.is_l1_interleaved()
    assert t.shard_cores() == [] and t.l1_bank_cores() == list(arch.l1_bank_cores((8, 8)))
    assert (t.buffer_page_size(), t.buffer_num_pages()) == (d.buffer_page_size(), d.buffer_num_pages())
    page, n = t.buffer_page_size(), t.buffer_num_pages()
    assert t.buffer_aligned_page_size() == align(page, 16) and d.buffer_aligned_page_size() == align(page, 32)
    assert t.tensor_accessor_args() == [0, align(page, 16)]  # ArgsConfig without IsDram: L1 interleaved
    assert t.buffer_address() == arch.L1_SIZE - -(-n // 64) * align(page, 16)  # first L1 buffer: top of the banks
    assert dev.lowest_l1_buffer_address() == t.buffer_address()
    y = dev.to_torch(t)
    assert y.dtype == dev.to_torch(d).dtype and torch.equal(y, dev.to_torch(d))
    assert torch.equal(y, host_ref(x, dtype, layout))
    # in-place host write keeps the address
    x2 = random_input(shape, dtype)
    addr = t.buffer_address()
    dev.write(t, x2)
    assert t.buffer_address() == addr and torch.equal(dev.to_torch(t), host_ref(x2, dtype, layout))


def test_allocate_forms_and_poison(dev):
    a = dev.allocate((1, 1, 64, 96), ttnn.bfloat16, ttnn.TILE_LAYOUT, ttnn.L1_MEMORY_CONFIG)  # ttnn's argument order
    b = dev.allocate(
        (1, 1, 64, 96),
        ttnn.bfloat16,
        memory_config=ttnn.MemoryConfig(ttnn.TensorMemoryLayout.INTERLEAVED, ttnn.BufferType.L1),
    )
    for t in (a, b):
        assert t.is_l1_interleaved() and t.memory_config() == L1
        assert (np.frombuffer(dev._read_pages(t), dtype=np.uint32) == 0xDEADBEEF).all()
    assert b.buffer_address() == a.buffer_address() - 2048  # 6 pages over 64 banks: one 2 KiB row per bank
    with pytest.raises(EmulatorError, match="memory_config given twice"):
        dev.allocate((32, 32), ttnn.bfloat16, ttnn.TILE_LAYOUT, L1, memory_config=L1)
    with pytest.raises(EmulatorError, match="buffer_type=BufferType.L1_SMALL with INTERLEAVED"):
        dev.allocate(
            (32, 32),
            ttnn.bfloat16,
            memory_config=ttnn.MemoryConfig(ttnn.TensorMemoryLayout.INTERLEAVED, ttnn.BufferType.L1_SMALL),
        )


@pytest.mark.parametrize(
    "board,layout",
    [("n150", ttnn.TILE_LAYOUT), ("n150", ttnn.ROW_MAJOR_LAYOUT), ("n300", ttnn.TILE_LAYOUT)],
    ids=["n150-tile", "n150-rm", "n300-tile"],
)
def test_bank_placement(board, layout):
    """Page i sits in bank i % banks, on the core tt-metal's table names, at the buffer address + row * aligned page
    size, the same address in every bank; kernels' address generators agree with the host."""
    torch.manual_seed(22)
    d = ttemu.open_device(board)
    try:
        nb = d.grid[0] * d.grid[1]
        dtype = ttnn.bfloat16
        # 2 * banks + 7 pages: tiles, or rows of 80 B
        shape = (1, 1, 32, 32 * (2 * nb + 7)) if layout == ttnn.TILE_LAYOUT else (2 * nb + 7, 40)
        x = random_input(shape, dtype)
        # one 2 KiB row per bank
        above = d.from_torch(torch.zeros(4, 32, 32), dtype=dtype, memory_config=L1, layout=ttnn.TILE_LAYOUT)
        t = d.from_torch(x, dtype=dtype, layout=layout, memory_config=L1)
        n, page, aligned = t.buffer_num_pages(), t.buffer_page_size(), t.buffer_aligned_page_size()
        assert n == 2 * nb + 7 and aligned == align(page, 16)
        rows = -(-n // nb)
        assert above.buffer_address() == arch.L1_SIZE - 2048
        assert t.buffer_address() == above.buffer_address() - rows * aligned
        raw, _ = host_to_pages(x, dtype, layout)
        pages = np.frombuffer(raw, dtype=np.uint8).reshape(n, page)
        table = arch.l1_bank_cores(d.grid)
        image = d._l1  # every core's L1, core (x, y) at (y * grid_w + x) * L1_SIZE
        for i in range(n):
            cx, cy = table[i % nb]
            at = (cy * d.grid[0] + cx) * arch.L1_SIZE + t.buffer_address() + (i // nb) * aligned
            assert (image[at : at + page] == pages[i]).all(), f"page {i}"
        # the device side: every address generator maps page i to the same bank core and address
        out = d.allocate((1, 10 * n), ttnn.uint32, ttnn.ROW_MAJOR_LAYOUT)
        core = (d.grid[0] - 1, d.grid[1] - 1)
        log2 = page.bit_length() - 1 if page & (page - 1) == 0 else 0
        pd = ttnn.ProgramDescriptor(
            kernels=[
                kernel(
                    "l1i_addrs.cpp",
                    crs(core),
                    [DF[dtype], log2],
                    {core: [t.buffer_address(), n, page, out.buffer_address()]},
                )
            ],
            semaphores=[],
            cbs=[cb(0, ttnn.uint32, align(40 * n, 32), 1, crs(core))],
        )
        d.generic_op([t, out], pd)
        got = d.to_torch(out).view(torch.int32).numpy().astype(np.int64).reshape(n, 10) & 0xFFFFFFFF
        for i in range(n):
            nx, ny = noc_xy(d, table[i % nb])
            addr = t.buffer_address() + (i // nb) * aligned
            fast = addr if layout == ttnn.TILE_LAYOUT else got[i, 3]  # Fast<false> multiplies rows by the tile size
            pow2 = addr if log2 else got[i, 4]
            assert list(got[i]) == [nx, ny, addr, fast, pow2, nx, ny, t.buffer_address(), (ny << 10) | (nx << 4), nb]
    finally:
        d.close()


# ---------------------------------------------------------------------------------------------------- kernels
def _copy_pd(src, dst, mode, cores, *, log2=0, ranges=None):
    """Program: `cores` split the pages of `src` and copy each to the same page of `dst` (l1i_copy.cpp); `ranges`
    (core -> (first page, count)) overrides the split."""
    n, page = src.buffer_num_pages(), src.buffer_page_size()
    step = -(-n // len(cores))
    rt = {}
    for i, c in enumerate(cores):
        s = min(i * step, n)
        first, count = (ranges or {}).get(c, (s, max(0, min(step, n - s))))
        rt[c] = [src.buffer_address(), dst.buffer_address(), first, count, page]
    ct = (
        [
            int(src.buffer_type() == ttnn.BufferType.DRAM),
            int(dst.buffer_type() == ttnn.BufferType.DRAM),
            mode,
            DF[src.dtype],
            log2,
        ]
        + src.tensor_accessor_args()
        + dst.tensor_accessor_args()
    )
    core_set = crs(*cores)
    return ttnn.ProgramDescriptor(
        kernels=[kernel("l1i_copy.cpp", core_set, ct, rt)],
        semaphores=[],
        cbs=[cb(0, src.dtype, align(page, 32), 1, core_set)],
    )


def _xy(core) -> str:
    """A core as the emulator's NoC statistics name it: "x,y"."""
    return f"{core[0]},{core[1]}"


def _core_traffic(stats):
    return {k: v for k, v in stats.noc_bytes.items() if not (k[0].startswith("dram") or k[1].startswith("dram"))}


COPIES = [
    (0, ttnn.bfloat16, ttnn.TILE_LAYOUT, (2, 96, 160)),
    (0, ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT, (2, 90, 40)),  # 80 B pages: 80 B apart in a bank (DRAM: 96 B)
    (1, ttnn.bfloat16, ttnn.TILE_LAYOUT, (1, 1, 288, 256)),
    (1, ttnn.bfloat8_b, ttnn.TILE_LAYOUT, (3, 64, 96)),
    (1, ttnn.float32, ttnn.TILE_LAYOUT, (70, 40)),
    (2, ttnn.float32, ttnn.ROW_MAJOR_LAYOUT, (150, 2)),  # 8 B pages: L1 rows 16 B apart, DRAM rows 32 B
    (2, ttnn.bfloat16, ttnn.TILE_LAYOUT, (96, 96)),
    (3, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT, (3, 47, 12)),  # 48 B pages (DRAM: 64 B apart)
    (3, ttnn.bfloat16, ttnn.TILE_LAYOUT, (1, 1, 64, 2048)),
    (4, ttnn.uint32, ttnn.TILE_LAYOUT, (33, 200)),
    (4, ttnn.float32, ttnn.ROW_MAJOR_LAYOUT, (130, 12)),  # 48 B pages moved in 24 B halves
]


COPY_MODES = ["addrgen", "fast", "pow2", "accessor", "offset"]


@pytest.mark.parametrize(
    "mode,dtype,layout,shape",
    COPIES,
    ids=[f"{COPY_MODES[m]}-{NAME(d)}-{'tile' if lay == ttnn.TILE_LAYOUT else 'rm'}" for m, d, lay, _ in COPIES],
)
def test_copy_dram_l1_dram(dev, mode, dtype, layout, shape):
    """DRAM -> L1 interleaved in one program, L1 interleaved -> DRAM from other cores in the next: every page arrives,
    the L1 data persists between programs, and the statistics count each L1 page once per direction."""
    torch.manual_seed(23 + mode)
    x = random_input(shape, dtype)
    src = dev.from_torch(x, dtype=dtype, layout=layout)
    mid = dev.allocate(shape, dtype, layout, L1)  # poisoned with 0xDEADBEEF
    page = src.buffer_page_size()
    log2 = page.bit_length() - 1 if mode == 2 else 0
    assert mode != 2 or page == 1 << log2
    n = mid.buffer_num_pages()
    writers = [(0, 0), (3, 5), (7, 7)]
    s1 = dev.generic_op([src, mid], _copy_pd(src, mid, mode, writers, log2=log2))
    ref = host_ref(x, dtype, layout)
    assert torch.equal(dev.to_torch(mid), ref)
    assert s1.pages_written(mid) == {i: 1 for i in range(n)} and not s1.pages_read(mid)
    assert s1.pages_read(src) == {i: 1 for i in range(n)}
    assert s1.bytes_written_to(mid) == n * page
    table = arch.l1_bank_cores(dev.grid)
    step = -(-n // len(writers))
    want = Counter()
    for i in range(n):
        want[(_xy(writers[i // step]), _xy(table[i % 64]))] += page
    assert _core_traffic(s1) == dict(want)

    back = dev.allocate(shape, dtype, layout)
    readers = [(2, 1), (6, 3)]
    s2 = dev.generic_op([mid, back], _copy_pd(mid, back, mode, readers, log2=log2))
    assert torch.equal(dev.to_torch(back), ref)
    assert s2.pages_read(mid) == {i: 1 for i in range(n)} and not s2.pages_written(mid)
    assert s2.pages_written(back) == {i: 1 for i in range(n)}
    step = -(-n // len(readers))
    want = Counter()
    for i in range(n):
        want[(_xy(table[i % 64]), _xy(readers[i // step]))] += page
    assert _core_traffic(s2) == dict(want)


def test_l1_to_l1_copy(dev):
    torch.manual_seed(24)
    x = torch.randn(4, 70, 64)
    a = dev.from_torch(x, dtype=ttnn.bfloat16, memory_config=L1, layout=ttnn.TILE_LAYOUT)
    b = dev.allocate(x.shape, ttnn.bfloat16, memory_config=L1)
    stats = dev.generic_op([a, b], _copy_pd(a, b, 0, [(4, 4)]))
    assert torch.equal(dev.to_torch(b), host_ref(x, ttnn.bfloat16, ttnn.TILE_LAYOUT))
    n = a.buffer_num_pages()
    assert stats.pages_read(a) == {i: 1 for i in range(n)} and stats.pages_written(b) == {i: 1 for i in range(n)}


# ---------------------------------------------------------------------------------------------------- faults
def test_out_of_bounds_pages_fault(dev):
    x = torch.randn(1, 1, 32 * 7, 320)  # 70 tiles: banks 0..5 hold two pages, banks 6..63 one
    t = dev.from_torch(x, dtype=ttnn.bfloat16, memory_config=L1, layout=ttnn.TILE_LAYOUT)
    big = dev.allocate((1, 1, 32 * 8, 32 * 64), ttnn.bfloat16)  # DRAM, 512 pages
    assert t.buffer_num_pages() == 70
    core = (5, 2)
    table = arch.l1_bank_cores(dev.grid)

    def run(src, dst, first, count=1):
        return dev.generic_op([t, big], _copy_pd(src, dst, 0, [core], ranges={core: (first, count)}))

    run(t, big, 69)  # the last page: legal
    # page 70 would be row 1 of bank 6, which holds only row 0
    with pytest.raises(KernelFault) as ei:
        run(t, big, 70)
    e, msg = ei.value, str(ei.value)
    bx, by = table[6]
    assert e.core == "5,2" and "l1i_copy" in e.kernel and "NCRISC" in e.kernel  # reader config: RISCV_1
    assert "noc_async_read" in msg and f"core ({bx},{by})" in msg and "outside allocated L1" in msg
    assert f"L1 offset 0x{t.buffer_address() + 2048:x}" in msg
    # writing past the end (the DRAM source has pages there) faults the same way
    with pytest.raises(KernelFault, match=r"noc_async_write: .* outside allocated L1") as ei:
        run(big, t, 70)
    assert ei.value.core == "5,2"
    # far past the buffer: past the end of L1
    with pytest.raises(KernelFault, match="runs past the end of L1|outside allocated L1"):
        run(t, big, 70 + 64 * 800)
    # nothing was written by the faulting programs
    assert torch.equal(dev.to_torch(t), host_ref(x, ttnn.bfloat16, ttnn.TILE_LAYOUT))


def test_cb_clash_with_l1_interleaved_buffer(dev):
    t = dev.allocate((1, 1, 64, 64), ttnn.bfloat16, memory_config=L1)  # 4 pages in banks 0..3, reserved in all 64
    assert t.buffer_address() == arch.L1_SIZE - 2048 == dev.lowest_l1_buffer_address()
    free = t.buffer_address() - arch.L1_UNRESERVED_BASE
    fits = free // 2048
    table = arch.l1_bank_cores(dev.grid)
    ok = ttnn.ProgramDescriptor(kernels=[], semaphores=[], cbs=[cb(0, ttnn.bfloat16, 2048, fits, crs(table[0]))])
    dev.generic_op([t], ok)  # a CB ending just below the buffer is fine
    for core in (table[0], table[40]):  # a bank holding a page, and one holding none (its range is still reserved)
        bad = ttnn.ProgramDescriptor(kernels=[], semaphores=[], cbs=[cb(7, ttnn.bfloat16, 2048, fits + 1, crs(core))])
        with pytest.raises(EmulatorError) as ei:
            dev.generic_op([t], bad)
        msg = str(ei.value)
        assert f"circular buffer 7 on core ({core[0]},{core[1]})" in msg and "clash" in msg
        assert f"L1 buffer {t.buffer_id}" in msg and f"0x{t.buffer_address():x}" in msg
        assert "an L1 bank of that interleaved buffer is on this core" in msg
    t.deallocate()
    assert dev.lowest_l1_buffer_address() is None
    dev.generic_op(
        [],
        ttnn.ProgramDescriptor(kernels=[], semaphores=[], cbs=[cb(7, ttnn.bfloat16, 2048, fits + 1, crs(table[40]))]),
    )


def test_deallocate_frees_the_range(dev):
    shape = (1, 1, 32 * 16, 32 * 16)  # 256 tiles = 4 rows per bank
    region = 4 * 2048
    a = dev.allocate(shape, ttnn.bfloat16, memory_config=L1)
    assert a.buffer_address() == arch.L1_SIZE - region
    b = dev.allocate(shape, ttnn.bfloat16, memory_config=L1)
    assert b.buffer_address() == a.buffer_address() - region
    old = a.buffer_address()
    a.deallocate()
    assert not a.is_allocated()
    with pytest.raises(EmulatorError, match="deallocated"):
        dev.to_torch(a)
    # a program reaching into the freed range faults: no live buffer owns it any more
    out = dev.allocate((32, 32), ttnn.bfloat16)
    core = (1, 1)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kernel(
                "l1i_copy.cpp",
                crs(core),
                [0, 1, 0, 5, 0, 0, 2048, 2, 2048],
                {core: [old, out.buffer_address(), 0, 1, 2048]},
            )
        ],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 2048, 1, crs(core))],
    )
    with pytest.raises(KernelFault, match="outside allocated L1"):
        dev.generic_op([b, out], pd)
    c = dev.allocate(shape, ttnn.bfloat16, memory_config=L1)
    assert c.buffer_address() == old  # the freed top range is reused
    del c
    gc.collect()
    d = dev.allocate(shape, ttnn.bfloat16, memory_config=L1)
    assert d.buffer_address() == old  # garbage collection freed it too
    # L1-interleaved and sharded buffers share one top-down allocator with a 16-B granule: 64 pages of 16 B take one
    # 16-B row per bank, so the next buffer starts 16 B lower
    small = dev.allocate((64, 4), ttnn.float32, ttnn.ROW_MAJOR_LAYOUT, L1)
    assert small.buffer_address() == b.buffer_address() - 16
    sh = dev.allocate(
        (32, 64),
        ttnn.bfloat16,
        memory_config=ttnn.MemoryConfig(
            ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
            ttnn.BufferType.L1,
            ttnn.ShardSpec(crs((0, 0)), [32, 64], ttnn.ShardOrientation.ROW_MAJOR),
        ),
    )
    assert sh.buffer_address() == small.buffer_address() - 2 * 2048
    with pytest.raises(EmulatorError, match="L1 out of memory"):
        dev.allocate((1, 1, 32 * 64, 32 * 700), ttnn.float32, memory_config=L1)  # 700 tiles of 4 KiB per bank
