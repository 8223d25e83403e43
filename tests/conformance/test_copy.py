"""Conformance: the wheel's interleaved copy kernels on the emulator, against torch.

Upstream's copy (ttnn/cpp/ttnn/operations/data_movement/copy/device/copy_default_tilized_program_factory.cpp in the
wheel) splits the pages over the grid with ``split_work_to_cores``, gives each core (row-wise order) a contiguous span
``{num_pages, start_id}`` and pairs eltwise unary's interleaved reader and writer around one double-buffered CB. The
wheel's factory binds the Metal 2.0 forks of those kernels through its ProgramSpec host API, which a
``ttnn.ProgramDescriptor`` cannot express; the descriptor below runs the legacy pair the forks were made from (same
loop, positional arguments: reader ``TensorAccessorArgs<0>`` + {src, num_pages, start_id}; writer {cb} +
``TensorAccessorArgs<1>`` + {dst, num_pages, start_id}), unmodified from the wheel. Both are Device 2.0 kernels (Noc,
DataflowBuffer, TensorAccessor endpoints, get_local_cb_interface).
"""

from __future__ import annotations

import pytest
import torch

from ttflashdecode.upstream import wheel

READER = "ttnn/operations/eltwise/unary/device/kernels/dataflow/reader_unary_interleaved_start_id.cpp"
WRITER = "ttnn/operations/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"
CB_IN = 0


def _cores(core_range_set) -> set[tuple[int, int]]:
    out = set()
    for r in core_range_set.ranges():
        for y in range(r.start.y, r.end.y + 1):
            for x in range(r.start.x, r.end.x + 1):
                out.add((x, y))
    return out


def copy_program(ttnn, src, dst, grid: tuple[int, int]):
    """The copy factory's program for interleaved ``src`` -> ``dst`` (same dtype and layout)."""
    num_pages = src.buffer_num_pages()
    num_cores, all_cores, group_1, group_2, per_core_1, per_core_2 = ttnn.split_work_to_cores(
        ttnn.CoreCoord(*grid), num_pages
    )
    second = _cores(group_2)
    reader_args, writer_args, start = [], [], 0
    for core in ttnn.corerange_to_cores(all_cores, num_cores, True):
        n = per_core_2 if (core.x, core.y) in second else per_core_1
        reader_args.append((core, [src.buffer_address(), n, start]))
        writer_args.append((core, [dst.buffer_address(), n, start]))
        start += n
    assert start == num_pages
    page = src.buffer_aligned_page_size()
    cb = ttnn.CBDescriptor(
        total_size=2 * page,
        core_ranges=all_cores,
        format_descriptors=[ttnn.CBFormatDescriptor(buffer_index=CB_IN, data_format=src.dtype, page_size=page)],
    )
    kernels = [
        ttnn.KernelDescriptor(
            kernel_source=str(wheel.kernel_source(READER)), core_ranges=all_cores,
            compile_time_args=src.tensor_accessor_args(), runtime_args=reader_args,
            config=ttnn.ReaderConfigDescriptor(),
        ),
        ttnn.KernelDescriptor(
            kernel_source=str(wheel.kernel_source(WRITER)), core_ranges=all_cores,
            compile_time_args=[CB_IN] + dst.tensor_accessor_args(), runtime_args=writer_args,
            config=ttnn.WriterConfigDescriptor(),
        ),
    ]  # fmt: skip
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=[cb])


CASES = [
    # (shape, dtype, layout): uneven splits over the 8x8 grid, a block-float page, row-major sticks
    ((1, 3, 96, 320), "bfloat16", "TILE"),
    ((2, 1, 64, 2080), "bfloat8_b", "TILE"),
    ((1, 1, 100, 48), "bfloat16", "ROW_MAJOR"),
    ((1, 1, 7, 3), "float32", "ROW_MAJOR"),
]


@pytest.mark.parametrize("shape,dtype,layout", CASES, ids=lambda v: str(v))
def test_interleaved_copy(emu_device, ttnn, shape, dtype, layout):
    seed = 1000 + sum(shape)
    torch.manual_seed(seed)
    x = torch.randn(shape) * 4
    tt_dtype, tt_layout = getattr(ttnn, dtype), getattr(ttnn, f"{layout}_LAYOUT")
    src = emu_device.from_torch(x, dtype=tt_dtype, layout=tt_layout)
    dst = emu_device.allocate(list(shape), tt_dtype, tt_layout, fill=0x7FC07FC0)  # NaN poison: every page must land
    program = copy_program(ttnn, src, dst, emu_device.grid)
    stats = emu_device.generic_op([src, dst], program)
    expected = emu_device.to_torch(src)  # the device format's rounding of x (bf16 / bfp8 / fp32)
    got = emu_device.to_torch(dst)
    assert not torch.isnan(got).any(), f"[seed {seed}] a page of the destination was never written"
    assert torch.equal(got, expected), f"[seed {seed}] copy differs from the source"
    # Each page read once and written once, over the NOC, as its aligned slot: the CB page is the aligned page size
    # (a 12-B row-major page moves as its 32-B DRAM slot, as on silicon).
    nbytes = src.buffer_num_pages() * src.buffer_aligned_page_size()
    assert stats.bytes_read_from(src) == nbytes and stats.bytes_written_to(dst) == nbytes
    if dtype in ("bfloat16", "float32"):
        torch.testing.assert_close(got.float(), x.to(getattr(torch, dtype)).float(), rtol=0, atol=0)
