"""Device 2.0 data-movement API of the emulator (issue 11): Noc, CircularBuffer, DataflowBuffer, CoreLocalMem,
Semaphore, endpoints and TensorAccessor endpoints, with the build environment of tt-metal's JIT build (per-RISC
defines, named compile-time args, per-CB format and tile tables, half and tiny tiles).

Each program's kernels (ttemu/tests/kernels/device2/) are written in Device 2.0 style; each test checks the data,
the traffic statistics, and, for the semaphore flows, that a semaphore that is never raised is reported as a hang
naming the waiting core instead of hanging the test. Expected tile sizes come from the wheel's own ttnn.Tile.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

import ttemu
from ttemu import EmulatorHang, jit_env
from ttemu.ttnn_env import import_ttnn

from .emu_helpers import crs, rect

ttnn = import_ttnn()

KERNELS = Path(__file__).resolve().parent / "kernels" / "device2"
DF = {ttnn.bfloat16: 5, ttnn.float32: 0, ttnn.bfloat8_b: 6, ttnn.bfloat4_b: 7, ttnn.uint32: 24}


@pytest.fixture(scope="module")
def dev():
    ttemu.build.runtime_dir()
    d = ttemu.open_device("n150")
    yield d
    d.close()


def kd(name, cores, ct=(), rt=None, config=None, named=()):
    return ttnn.KernelDescriptor(
        kernel_source=str(KERNELS / name),
        core_ranges=cores,
        compile_time_args=[int(v) for v in ct],
        named_compile_time_args=list(named),
        runtime_args=[(ttnn.CoreCoord(x, y), [int(v) for v in a]) for (x, y), a in (rt or {}).items()],
        config=config if config is not None else ttnn.ReaderConfigDescriptor(),
    )


def cbd(index, dtype, page, n, cores, tile=None):
    return ttnn.CBDescriptor(
        total_size=page * n,
        core_ranges=cores,
        format_descriptors=[ttnn.CBFormatDescriptor(buffer_index=index, data_format=dtype, page_size=page, tile=tile)],
    )


def sems(cores, *ids):
    return [ttnn.SemaphoreDescriptor(id=i, core_ranges=cores, initial_value=0) for i in ids]


def noc_xy(dev, core):
    w = dev.worker_core_from_logical_core(ttnn.CoreCoord(*core))
    return w.x, w.y


def host_ref(x, dtype):
    return ttnn.to_torch(ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT))


def dram_to(stats, core):
    return sum(n for (a, b), n in stats.noc_bytes.items() if a.startswith("dram") and b == core)


def to_dram(stats, core):
    return sum(n for (a, b), n in stats.noc_bytes.items() if a == core and b.startswith("dram"))


# ------------------------------------------------------------------------------------------------ DRAM -> CB -> DRAM
@pytest.mark.parametrize("use_trid", [0, 1], ids=["plain", "txn_id"])
@pytest.mark.parametrize("dtype", [ttnn.bfloat16, ttnn.bfloat8_b], ids=["bf16", "bfp8"])
def test_copy_through_circular_buffer(dev, dtype, use_trid):
    torch.manual_seed(11 + use_trid)
    x = torch.randn(1, 64, 224)  # 2 x 7 = 14 tiles
    src = dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
    dst = dev.allocate(x.shape, dtype)
    n, page = src.buffer_num_pages(), src.buffer_page_size()
    cores = [(0, 0), (6, 5)]
    split = {cores[0]: (0, 9), cores[1]: (9, n - 9)}
    core_set = crs(*cores)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kd(
                "d2_reader.cpp",
                core_set,
                [0, use_trid, 0, 0] + src.tensor_accessor_args(),
                {c: [src.buffer_address(), f, k] for c, (f, k) in split.items()},
            ),
            kd(
                "d2_writer.cpp",
                core_set,
                [0] + dst.tensor_accessor_args(),
                {c: [dst.buffer_address(), f, k] for c, (f, k) in split.items()},
                config=ttnn.WriterConfigDescriptor(),
            ),
        ],
        semaphores=[],
        cbs=[cbd(0, dtype, page, 2, core_set)],
    )
    stats = dev.generic_op([src, dst], pd)
    assert torch.equal(dev.to_torch(dst), host_ref(x, dtype))
    assert stats.pages_read(src) == {i: 1 for i in range(n)}
    assert stats.pages_written(dst) == {i: 1 for i in range(n)}
    assert stats.dram_read_bytes == stats.dram_write_bytes == n * page
    assert dram_to(stats, "0,0") == to_dram(stats, "0,0") == 9 * page
    assert dram_to(stats, "6,5") == to_dram(stats, "6,5") == (n - 9) * page
    assert stats.cb_high_water["0,0"][0] in (1, 2)


# ------------------------------------------------------------------------------------------------ semaphore handshake
def _handshake(dev, x, signal):
    src = dev.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    dst = dev.allocate(x.shape, ttnn.bfloat16)
    n, page = src.buffer_num_pages(), src.buffer_page_size()
    snd, rcv = (1, 1), (5, 3)
    both = crs(snd, rcv)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kd(
                "d2_sem_sender.cpp",
                crs(snd),
                [0, 0, 1, signal] + src.tensor_accessor_args(),
                {snd: [src.buffer_address(), n, *noc_xy(dev, rcv)]},
            ),
            kd(
                "d2_sem_receiver.cpp",
                crs(rcv),
                [0, 0, 1] + dst.tensor_accessor_args(),
                {rcv: [dst.buffer_address(), n, *noc_xy(dev, snd)]},
                config=ttnn.WriterConfigDescriptor(),
            ),
        ],
        semaphores=sems(both, 0, 1),
        cbs=[cbd(0, ttnn.bfloat16, page, n, both)],
    )
    return src, dst, pd


def test_semaphore_handshake_between_two_cores(dev):
    torch.manual_seed(12)
    x = torch.randn(96, 32)  # 3 tiles
    src, dst, pd = _handshake(dev, x, signal=1)
    n, page = src.buffer_num_pages(), src.buffer_page_size()
    stats = dev.generic_op([src, dst], pd)
    assert torch.equal(dev.to_torch(dst), host_ref(x, ttnn.bfloat16))
    assert stats.pages_read(src) == {i: 1 for i in range(n)} and stats.pages_written(dst) == {i: 1 for i in range(n)}
    assert dram_to(stats, "1,1") == n * page and to_dram(stats, "5,3") == n * page
    # the pages plus the data-semaphore increment one way, the ready-semaphore increment the other
    assert stats.noc_bytes[("1,1", "5,3")] == n * page + 4
    assert stats.noc_bytes[("5,3", "1,1")] == 4


def test_semaphore_never_raised_is_reported_as_a_hang(dev):
    x = torch.randn(96, 32)
    src, dst, pd = _handshake(dev, x, signal=0)
    t0 = time.monotonic()
    with pytest.raises(EmulatorHang) as ei:
        dev.generic_op([src, dst], pd)
    assert time.monotonic() - t0 < 10
    e = ei.value
    assert e.core == "5,3" and "d2_sem_receiver" in e.kernel and "BRISC" in e.kernel
    assert "noc_semaphore_wait_min" in str(e) and "semaphore 1" in str(e) and "waiting for >= 1" in str(e)


# ------------------------------------------------------------------------------------------------ multicast
def _mcast(dev, x, signal):
    src = dev.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    n, page = src.buffer_num_pages(), src.buffer_page_size()
    receivers = [(cx, cy) for cy in (1, 2) for cx in (2, 3, 4)]
    out = dev.allocate((len(receivers) * x.shape[0], x.shape[1]), ttnn.bfloat16)
    snd = (0, 0)
    (x0, y0), (x1, y1) = noc_xy(dev, (2, 1)), noc_xy(dev, (4, 2))
    everyone = ttnn.CoreRangeSet(
        [
            ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 0)),
            ttnn.CoreRange(ttnn.CoreCoord(2, 1), ttnn.CoreCoord(4, 2)),
        ]
    )
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kd(
                "d2_mcast_sender.cpp",
                crs(snd),
                [0, 0, 1, signal] + src.tensor_accessor_args(),
                {snd: [src.buffer_address(), n, x0, y0, x1, y1, len(receivers)]},
                config=ttnn.WriterConfigDescriptor(),
            ),
            kd(
                "d2_mcast_receiver.cpp",
                rect(2, 1, 4, 2),
                [0, 0, 1] + out.tensor_accessor_args(),
                {r: [out.buffer_address(), n, i * n, *noc_xy(dev, snd)] for i, r in enumerate(receivers)},
            ),
        ],
        semaphores=sems(everyone, 0, 1),
        cbs=[cbd(0, ttnn.bfloat16, page, n, everyone)],
    )
    return src, out, receivers, pd


def test_multicast_to_a_core_rectangle(dev):
    torch.manual_seed(13)
    x = torch.randn(64, 64)  # 4 tiles
    src, out, receivers, pd = _mcast(dev, x, signal=1)
    n, page = src.buffer_num_pages(), src.buffer_page_size()
    stats = dev.generic_op([src, out], pd)
    ref = host_ref(x, ttnn.bfloat16)
    got = dev.to_torch(out)
    for i in range(len(receivers)):
        assert torch.equal(got[i * 64 : (i + 1) * 64], ref), f"receiver {receivers[i]}"
    assert stats.pages_read(src) == {i: 1 for i in range(n)}  # read once, multicast over the NOC
    assert stats.pages_written(out) == {i: 1 for i in range(len(receivers) * n)}
    for r in receivers:
        name = f"{r[0]},{r[1]}"
        assert stats.noc_bytes[("0,0", name)] == n * page + 4  # pages + the data semaphore's set_multicast
        assert stats.noc_bytes[(name, "0,0")] == 4  # the ready-semaphore increment
        assert to_dram(stats, name) == n * page


def test_multicast_without_the_flag_is_reported_as_a_hang(dev):
    x = torch.randn(64, 64)
    src, out, receivers, pd = _mcast(dev, x, signal=0)
    with pytest.raises(EmulatorHang) as ei:
        dev.generic_op([src, out], pd)
    text = str(ei.value)
    for r in receivers:
        assert f"core ({r[0]},{r[1]}) d2_mcast_receiver" in text
    assert "noc_semaphore_wait(" in text and "semaphore 1" in text and "waiting for == 1" in text


# ------------------------------------------------------------------------------------------------ build environment
CONFIGS = {
    "reader": (ttnn.ReaderConfigDescriptor(), dict(brisc=0, ncrisc=1, proc=1, noc=0)),
    "writer": (ttnn.WriterConfigDescriptor(), dict(brisc=1, ncrisc=0, proc=0, noc=1)),
    "riscv0_noc0": (
        ttnn.DataMovementConfigDescriptor(processor=ttnn.DataMovementProcessor.RISCV_0, noc=ttnn.NOC.NOC_0),
        dict(brisc=1, ncrisc=0, proc=0, noc=0),
    ),
}
TILED_CBS = [  # (CB index, dtype, tile (h, w) or None = default 32x32)
    (0, ttnn.uint32, None),
    (1, ttnn.bfloat16, (16, 32)),
    (2, ttnn.bfloat8_b, (16, 32)),
    (3, ttnn.bfloat8_b, None),
    (4, ttnn.bfloat16, (1, 32)),
    (5, ttnn.bfloat4_b, (8, 32)),
]


@pytest.mark.parametrize("cfg", list(CONFIGS), ids=list(CONFIGS))
def test_build_environment_named_args_and_tile_tables(dev, cfg):
    config, want = CONFIGS[cfg]
    core = (3, 4)
    out = dev.allocate((1, 1024), ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT)  # one 4 KiB page, raw words
    assert out.buffer_page_size() == 4096
    cbs = []
    for idx, dtype, tile in TILED_CBS:
        size = ttnn.Tile(list(tile or (32, 32))).get_tile_size(dtype)
        cbs.append(cbd(idx, dtype, size, 1, crs(core), None if tile is None else ttnn.TileDescriptor(*tile)))
    named = [("beta.gamma", 0xDEADBEEF), ("alpha", 7)]
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kd(
                "d2_build_env.cpp",
                crs(core),
                [41, len(TILED_CBS)] + [c[0] for c in TILED_CBS] + out.tensor_accessor_args(),
                {core: [out.buffer_address()]},
                config=config,
                named=named,
            )
        ],
        semaphores=[],
        cbs=cbs,
    )
    stats = dev.generic_op([out], pd)
    w = [int(v) & 0xFFFFFFFF for v in dev.to_torch(out).flatten().tolist()]
    assert w[:8] == [7, 0xDEADBEEF, 41, want["brisc"], want["ncrisc"], want["proc"], want["noc"], want["noc"]]
    k = 8
    for idx, dtype, tile in TILED_CBS:
        h, wd = tile or (32, 32)
        t = ttnn.Tile([h, wd])
        size = t.get_tile_size(dtype)
        face_r = t.face_shape[0]
        assert w[k : k + 10] == [
            size,
            h * wd,
            t.num_faces,
            DF[dtype],
            face_r,
            int(h < 32),
            int(wd < 32),
            h,
            wd,
            size,
        ], f"CB {idx} ({dtype}, tile {tile})"
        k += 10
    assert w[k : k + 4] == [
        3 * 1024,
        3 * ttnn.Tile([16, 32]).get_tile_size(ttnn.bfloat8_b),
        5 * ttnn.Tile([8, 32]).get_tile_size(ttnn.bfloat4_b),
        2 * 1024,
    ]
    assert stats.bytes_written_to(out) == 4 * (k + 4)


def test_unknown_named_arg_is_a_compile_error(dev):
    core = (0, 0)
    out = dev.allocate((1, 1024), ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kd(
                "d2_build_env.cpp",
                crs(core),
                [0, 1, 0] + out.tensor_accessor_args(),
                {core: [out.buffer_address()]},
                named=[("alpha", 1)],
            )
        ],
        semaphores=[],
        cbs=[cbd(0, ttnn.uint32, 4096, 1, crs(core))],
    )
    with pytest.raises(ttemu.KernelCompileError, match="get_named_compile_time_arg_val"):
        dev.generic_op([out], pd)


# ------------------------------------------------------------------------------------------------ write zeros
def test_write_zeros_l1_and_dram(dev):
    core = (2, 6)
    out = dev.allocate((2, 1024), ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT)  # 2 pages of 4 KiB, poisoned
    zero_bytes = 3 * 512 + 48  # three whole MEM_ZEROS chunks and a remainder
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kd("d2_zeros.cpp", crs(core), [0] + out.tensor_accessor_args(), {core: [out.buffer_address(), zero_bytes]})
        ],
        semaphores=[],
        cbs=[cbd(0, ttnn.uint32, 4096, 1, crs(core))],
    )
    stats = dev.generic_op([out], pd)
    w = (dev.to_torch(out).to(torch.int64) & 0xFFFFFFFF).tolist()
    assert w[0][: zero_bytes // 4] == [0] * (zero_bytes // 4)
    assert w[0][zero_bytes // 4 :] == [0xA5A5A5A5] * (1024 - zero_bytes // 4)
    assert w[1] == [0] * 1024
    assert stats.pages_written(out) == {0: 1, 1: 1}
    # the L1 zeros are loopback NOC reads from the core's MEM_ZEROS block
    assert stats.noc_bytes[("2,6", "2,6")] == zero_bytes + 4096
    assert to_dram(stats, "2,6") == 2 * 4096


# ------------------------------------------------------------------------------------------------ generated headers
@pytest.mark.parametrize("shape", sorted(jit_env.TILE_FACE_SHAPES), ids=lambda s: f"{s[0]}x{s[1]}")
def test_tile_sizes_match_ttnn_tile(shape):
    for dtype in (
        ttnn.bfloat16,
        ttnn.float32,
        ttnn.uint32,
        ttnn.int32,
        ttnn.uint16,
        ttnn.uint8,
        ttnn.int8,
        ttnn.bfloat8_b,
        ttnn.bfloat4_b,
    ):
        fmt = ttnn.CBFormatDescriptor(0, dtype, 64).data_format_as_uint8
        assert jit_env.TileGeometry.of(*shape).tile_size(fmt) == ttnn.Tile(list(shape)).get_tile_size(dtype)
    t, g = ttnn.Tile(list(shape)), jit_env.TileGeometry.of(*shape)
    assert (g.num_faces, g.face_r, g.partial_face, g.narrow_tile) == (
        t.num_faces,
        t.face_shape[0],
        t.partial_face,
        t.narrow_tile,
    )


def test_generated_headers():
    text = jit_env.named_ct_arg_map_header([("zeta", 1), ('a"b', 2), ("alpha", 3)])
    assert text.splitlines()[-1] == '#define KERNEL_COMPILE_TIME_ARG_MAP {"a\\"b",2},{"alpha",3},{"zeta",1}'
    h = jit_env.chlkc_descriptors([jit_env.cb_entry(3, DF[ttnn.bfloat16], (16, 32))], compute=False)
    assert "#if !defined(UCK_CHLKC_PACK)" in h and "#if !defined(UCK_CHLKC_MATH) && !defined(UCK_CHLKC_UNPACK)" in h
    sizes = h.split("unpack_tile_size[32] = {\n    ")[1].split("\n")[0].split(",")
    assert sizes[3] == "1024" and sizes[0] == "1088"  # the half tile; an unconfigured CB keeps the bfp8 default
    assert "DST_ACCUM_MODE" not in h  # data movement gets no compute scalars


# ------------------------------------------------------------------------------------------------ tuples, endpoints
def test_accessor_tuples_endpoints_and_cb_interface(dev):
    torch.manual_seed(14)
    a, b = torch.randn(32, 96), torch.randn(32, 96)  # 3 tiles each
    ta, tb = (dev.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT) for x in (a, b))
    out = dev.allocate((32, 192), ttnn.bfloat16)
    info = dev.allocate((1, 1024), ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT)
    core = (4, 0)
    page = ta.buffer_page_size()
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kd(
                "d2_tuple_copy.cpp",
                crs(core),
                [0] + ta.tensor_accessor_args() + tb.tensor_accessor_args() + out.tensor_accessor_args(),
                {core: [ta.buffer_address(), tb.buffer_address(), out.buffer_address(), 3, info.buffer_address()]},
            )
        ],
        semaphores=[],
        cbs=[cbd(0, ttnn.bfloat16, page, 2, crs(core))],
    )
    stats = dev.generic_op([ta, tb, out, info], pd)
    assert torch.equal(dev.to_torch(out), torch.cat([host_ref(a, ttnn.bfloat16), host_ref(b, ttnn.bfloat16)], 1))
    assert stats.pages_read(ta) == stats.pages_read(tb) == {0: 1, 1: 1, 2: 1}
    assert stats.pages_written(out) == {i: 1 for i in range(6)}
    w = (dev.to_torch(info).to(torch.int64) & 0xFFFFFFFF).flatten().tolist()
    # 6 pages went through the 2-page ring, so the write pointer is back at its start
    assert w[:5] == [2 * page, page, 2, 0, page]
    assert stats.bytes_written_to(info) == 20


def test_compute_build_environment(tmp_path):
    """A compute kernel is built with the fused-TRISC defines, the JIT's DST_SYNC_MODE macro (ttnn's kernel_lib tests
    `#if defined(DST_SYNC_MODE)`), DST_ACCUM_MODE and the per-CB tables, all visible before the kernel's includes."""
    import subprocess

    from ttemu import compiler

    src = tmp_path / "env_compute.cpp"
    src.write_text(
        "#if !defined(DST_SYNC_MODE) || !defined(UCK_CHLKC_MATH) || !defined(UCK_CHLKC_PACK) || "
        "!defined(UCK_CHLKC_UNPACK) || !defined(COMPILE_FOR_TRISC) || defined(COMPILE_FOR_NCRISC)\n"
        "#error build environment\n#endif\n"
        "static_assert(DST_SYNC_MODE == DstSync::SyncFull && DST_ACCUM_MODE);\n"
        "static_assert(unpack_tile_size[1] == 1024 && pack_tile_r_dim[1] == 16 && unpack_src_format[1] == 5);\n"
        'static_assert(get_compile_time_arg_val(0) == 9 && get_named_compile_time_arg_val("n") == 4);\n'
        '#include "api/compute/compute_kernel_api.h"\nvoid kernel_main() {}\n'
    )
    flags = compiler.kernel_flags(
        src,
        processor="compute",
        compile_time_args=[9],
        named_compile_time_args=[("n", 4)],
        defines=[],
        include_paths=[],
        compute_config={"fp32_dest_acc_en": True, "dst_full_sync_en": True},
        cbs=[jit_env.cb_entry(1, DF[ttnn.bfloat16], (16, 32))],
    )
    res = subprocess.run(
        [compiler.CXX, *[f for f in flags if f != "-shared"], "-fsyntax-only", str(src)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
