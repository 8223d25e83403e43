"""Data-movement side of the host emulator, checked against torch on fresh random data with poisoned outputs."""

from __future__ import annotations

import pytest
import torch

import ttemu
from ttemu.ttnn_env import import_ttnn

from .emu_helpers import cb, crs, kernel, rect, sem

ttnn = import_ttnn()

FORMATS = [ttnn.bfloat16, ttnn.float32, ttnn.bfloat8_b, ttnn.bfloat4_b]
DF = {ttnn.bfloat16: 5, ttnn.float32: 0, ttnn.bfloat8_b: 6, ttnn.bfloat4_b: 7}


@pytest.fixture(scope="module")
def dev():
    d = ttemu.open_device("n150")
    yield d
    d.close()


def host_ref(x, dtype):
    """What the device holds for x in dtype (ttnn's own host round trip)."""
    return ttnn.to_torch(ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT))


def test_device_queries(dev):
    assert dev.arch() == ttnn.Arch.WORMHOLE_B0
    g = dev.compute_with_storage_grid_size()
    assert (g.x, g.y) == (8, 8)
    n300 = ttemu.open_device("n300")
    g = n300.compute_with_storage_grid_size()
    assert (g.x, g.y) == (8, 7)
    n300.close()
    w = dev.worker_core_from_logical_core(ttnn.CoreCoord(2, 5))
    assert (w.x, w.y) == (20, 23)


@pytest.mark.parametrize("dtype", FORMATS + [ttnn.uint32, ttnn.int32], ids=lambda d: str(d).split(".")[-1])
def test_host_round_trip_matches_ttnn(dev, dtype):
    torch.manual_seed(1)
    if dtype in (ttnn.uint32, ttnn.int32):
        x = torch.randint(-(2**31), 2**31 - 1, (3, 37, 45), dtype=torch.int64)
        x = x.to(torch.int32) if dtype == ttnn.int32 else (x & 0xFFFFFFFF).to(torch.uint32)
        for layout in (ttnn.TILE_LAYOUT, ttnn.ROW_MAJOR_LAYOUT):
            ref = ttnn.to_torch(ttnn.from_torch(x, dtype=dtype, layout=layout))
            t = dev.from_torch(x, dtype=dtype, layout=layout)
            assert torch.equal(dev.to_torch(t), ref)
        return
    x = torch.randn(3, 37, 45) * 4
    t = dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
    assert list(t.padded_shape) == [3, 64, 64]
    y = dev.to_torch(t)
    ref = host_ref(x, dtype)
    assert y.dtype == ref.dtype and y.shape == ref.shape
    assert torch.equal(y, ref)


def _copy_program(src, dst, dtype, use_accessor, cores):
    n = src.buffer_num_pages()
    per = -(-n // len(cores))
    rr, rw = {}, {}
    for i, c in enumerate(cores):
        s = min(i * per, n)
        cnt = max(0, min(per, n - s))
        rr[c] = [src.buffer_address(), s, cnt]
        rw[c] = [dst.buffer_address(), s, cnt]
    core_set = crs(*cores)
    tile = src.buffer_page_size()
    return ttnn.ProgramDescriptor(
        kernels=[
            kernel("copy_reader.cpp", core_set, [use_accessor, DF[dtype]] + src.tensor_accessor_args(), rr),
            kernel(
                "copy_writer.cpp",
                core_set,
                [use_accessor, DF[dtype]] + dst.tensor_accessor_args(),
                rw,
                config=ttnn.WriterConfigDescriptor(),
            ),
        ],
        semaphores=[],
        cbs=[cb(0, dtype, tile, 4, core_set)],
    )


@pytest.mark.parametrize("use_accessor", [0, 1], ids=["addrgen_fast", "tensor_accessor"])
@pytest.mark.parametrize("dtype", FORMATS, ids=lambda d: str(d).split(".")[-1])
def test_dram_l1_dram_copy(dev, dtype, use_accessor):
    torch.manual_seed(2 + use_accessor)
    x = torch.randn(2, 96, 200)  # 2 x 3 x 7 = 42 tiles, width padded 200 -> 224
    src = dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
    dst = dev.allocate(x.shape, dtype)  # poisoned with 0xDEADBEEF
    cores = [(0, 0), (3, 1), (7, 7)]
    stats = dev.generic_op([src, dst], _copy_program(src, dst, dtype, use_accessor, cores))
    assert torch.equal(dev.to_torch(dst), host_ref(x, dtype))
    n = src.buffer_num_pages()
    assert stats.pages_read(src) == {i: 1 for i in range(n)}
    assert stats.pages_written(dst) == {i: 1 for i in range(n)}
    assert stats.dram_read_bytes == n * src.buffer_page_size() == stats.dram_write_bytes
    for c in ("0,0", "3,1", "7,7"):
        assert 1 <= stats.cb_high_water[c][0] <= 4
    # where the child's wall time went, phase by phase, in the order they ran (perf/emulator_throughput.py)
    assert list(stats.host_phases_s) == ["load_program", "setup_memory", "load_kernels", "kernels", "replay"]
    assert all(s >= 0 for s in stats.host_phases_s.values())
    assert sum(stats.host_phases_s.values()) <= stats.wall_seconds
    src.deallocate()
    dst.deallocate()


def test_multicore_exchange(dev):
    torch.manual_seed(3)
    n_workers = 6
    x = torch.randn(32, 32 * n_workers)
    src = dev.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = dev.allocate(x.shape, ttnn.bfloat16)
    reducer = (4, 4)
    workers = [(0, 0), (1, 0), (2, 3), (5, 6), (7, 0), (6, 7)]
    rw = dev.worker_core_from_logical_core(ttnn.CoreCoord(*reducer))
    # worker i sends tile (n-1-i) into slot i, so the output is the tile order reversed
    rt = {w: [src.buffer_address(), n_workers - 1 - i, i, rw.x, rw.y] for i, w in enumerate(workers)}
    all_cores = crs(reducer, *workers)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kernel("exchange_worker.cpp", crs(*workers), [0] + src.tensor_accessor_args(), rt),
            kernel(
                "exchange_reducer.cpp",
                crs(reducer),
                [0] + out.tensor_accessor_args(),
                {reducer: [out.buffer_address(), n_workers]},
                config=ttnn.WriterConfigDescriptor(),
            ),
        ],
        semaphores=[sem(0, all_cores)],
        cbs=[cb(0, ttnn.bfloat16, 2048, 1, all_cores), cb(1, ttnn.bfloat16, 2048, n_workers, all_cores)],
    )
    stats = dev.generic_op([src, out], pd)
    y = dev.to_torch(out)
    xb = x.to(torch.bfloat16)
    for i in range(n_workers):
        assert torch.equal(y[:, 32 * i : 32 * i + 32], xb[:, 32 * (n_workers - 1 - i) : 32 * (n_workers - i)])
    for w in workers:
        assert stats.noc_bytes[(f"{w[0]},{w[1]}", "4,4")] == 2048 + 4  # tile + semaphore increment
    src.deallocate()
    out.deallocate()


def test_multicast_and_semaphore_multicast(dev):
    torch.manual_seed(4)
    x = torch.randn(32, 32)
    src = dev.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT)
    receivers = [(x_, y_) for y_ in range(2, 4) for x_ in range(1, 4)]  # 3 x 2 rectangle
    out = dev.allocate((32, 32 * len(receivers)), ttnn.float32)
    sender = (0, 2)
    a = dev.worker_core_from_logical_core(ttnn.CoreCoord(1, 2))
    b = dev.worker_core_from_logical_core(ttnn.CoreCoord(3, 3))
    everyone = crs(sender, *receivers)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kernel(
                "mcast_sender.cpp",
                crs(sender),
                [0] + src.tensor_accessor_args(),
                {sender: [src.buffer_address(), a.x, a.y, b.x, b.y, len(receivers)]},
            ),
            kernel(
                "mcast_receiver.cpp",
                rect(1, 2, 3, 3),
                [0] + out.tensor_accessor_args(),
                {r: [out.buffer_address(), i] for i, r in enumerate(receivers)},
            ),
        ],
        semaphores=[sem(0, everyone)],
        cbs=[cb(0, ttnn.float32, 4096, 1, everyone)],
    )
    stats = dev.generic_op([src, out], pd)
    y = dev.to_torch(out)
    for i in range(len(receivers)):
        assert torch.equal(y[:, 32 * i : 32 * i + 32], x)
    assert stats.pages_written(out) == {i: 1 for i in range(len(receivers))}
    assert stats.pages_read(src) == {0: 1}


def test_counters_read_twice(dev):
    torch.manual_seed(5)
    x = torch.randn(64, 64 * 3)
    src = dev.from_torch(x, dtype=ttnn.bfloat8_b)
    n = src.buffer_num_pages()
    runs = {}
    for repeat in (1, 2):
        pd = ttnn.ProgramDescriptor(
            kernels=[
                kernel(
                    "read_twice.cpp",
                    crs((2, 2)),
                    [repeat] + src.tensor_accessor_args(),
                    {(2, 2): [src.buffer_address(), n]},
                )
            ],
            semaphores=[],
            cbs=[cb(0, ttnn.bfloat8_b, 1088, 2, crs((2, 2)))],
        )
        runs[repeat] = dev.generic_op([src], pd)
    assert runs[1].bytes_read_from(src) == n * 1088
    assert runs[2].bytes_read_from(src) == 2 * runs[1].bytes_read_from(src)
    assert runs[2].pages_read(src) == {i: 2 for i in range(n)}
    assert sum(runs[2].dram_bank_read_bytes) == 2 * sum(runs[1].dram_bank_read_bytes)
    assert runs[2].noc_bytes[next(k for k in runs[2].noc_bytes)] > 0


def test_compile_cache_hits(dev):
    torch.manual_seed(6)
    x = torch.randn(32, 64)
    src = dev.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    dst = dev.allocate(x.shape, ttnn.bfloat16)
    pd = _copy_program(src, dst, ttnn.bfloat16, 1, [(0, 0)])
    dev.generic_op([src, dst], pd)
    before = ttemu.compile_cache_stats()
    dev.generic_op([src, dst], _copy_program(src, dst, ttnn.bfloat16, 1, [(0, 0)]))
    after = ttemu.compile_cache_stats()
    assert after["misses"] == before["misses"] and after["hits"] == before["hits"] + 2
