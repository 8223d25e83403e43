"""Conformance: the wheel's interleaved copy kernels on the emulator, against the source tensor.

``copy_program`` is upstream's ``CopyDeviceOperation::SameMemoryConfig::create_descriptor`` (the wheel ships it:
ttnn/cpp/ttnn/operations/data_movement/copy/device/copy_same_memory_config_program_factory.cpp) for interleaved tensors
of one dtype: ``split_work_to_cores`` over the grid, cores in column-major order
(``grid_to_cores(..., row_wise=false)``), the first ``core_group_1`` cores taking one unit more, contiguous spans
counted up (or down with ``backwards``); one double-buffered CB of the aligned unit size. Tiles go through
data_movement/copy's ``reader_unary_start_id.cpp`` / ``writer_unary_start_id.cpp``, row-major sticks through
ttnn/kernel/dataflow's ``{reader,writer}_unary_stick_layout_interleaved_start_id.cpp``.

``eltwise_copy_program`` runs eltwise unary's interleaved reader/writer pair (the kernels whose Metal 2.0 forks the
wheel's DefaultTilized copy binds through its ProgramSpec API, which a ProgramDescriptor cannot express) with the same
positional interface. All are Device 2.0 kernels (Noc, CircularBuffer / DataflowBuffer, TensorAccessor endpoints),
unmodified from the wheel.
"""

from __future__ import annotations

import pytest
import torch

from ttemu.jit_env import kernel_source

COPY_KERNELS = "ttnn/operations/data_movement/copy/device/kernels"
TILE_READER, TILE_WRITER = f"{COPY_KERNELS}/reader_unary_start_id.cpp", f"{COPY_KERNELS}/writer_unary_start_id.cpp"
STICK_READER = "ttnn/kernel/dataflow/reader_unary_stick_layout_interleaved_start_id.cpp"
STICK_WRITER = "ttnn/kernel/dataflow/writer_unary_stick_layout_interleaved_start_id.cpp"
ELTWISE = "ttnn/operations/eltwise/unary/device/kernels/dataflow"
ELTWISE_READER = f"{ELTWISE}/reader_unary_interleaved_start_id.cpp"
ELTWISE_WRITER = f"{ELTWISE}/writer_unary_interleaved_start_id.cpp"
CB_IN = 0
DRAM_ALIGNMENT = 32  # Buffer::alignment() of a Wormhole DRAM buffer


def _split(ttnn, grid: tuple[int, int], units: int):
    """split_work_to_cores, with the cores listed column-major (grid_to_cores(n, gx, gy, row_wise=false)) and each
    core's unit count."""
    num_cores, all_cores, group_1, _, per_1, per_2 = ttnn.split_work_to_cores(ttnn.CoreCoord(*grid), units)
    g1 = sum((r.end.x - r.start.x + 1) * (r.end.y - r.start.y + 1) for r in group_1.ranges())
    cores = [ttnn.CoreCoord(i // grid[1], i % grid[1]) for i in range(num_cores)]
    return all_cores, [(core, per_1 if i < g1 else per_2) for i, core in enumerate(cores)]


def copy_program(ttnn, src, dst, grid: tuple[int, int], backwards: bool = False):
    """SameMemoryConfig's descriptor for interleaved ``src`` -> ``dst`` of one dtype and layout."""
    tilized = src.layout == ttnn.TILE_LAYOUT
    unit = src.buffer_page_size() if tilized else int(src.padded_shape[-1]) * src.element_size()
    aligned_unit = -(-unit // DRAM_ALIGNMENT) * DRAM_ALIGNMENT
    num_units = src.buffer_num_pages()
    all_cores, spans = _split(ttnn, grid, num_units)
    if tilized:
        reader_ct, writer_ct = list(src.tensor_accessor_args()), [CB_IN] + list(dst.tensor_accessor_args())
        reader_src, writer_src = TILE_READER, TILE_WRITER
    else:
        reader_ct = [CB_IN, unit] + list(src.tensor_accessor_args())
        writer_ct = [CB_IN, unit] + list(dst.tensor_accessor_args())
        reader_src, writer_src = STICK_READER, STICK_WRITER
    reader_args, writer_args = [], []
    start = num_units - 1 if backwards else 0
    for core, n in spans:
        extra = [] if tilized else [unit]  # the stick kernels take the stick size first (then a count of 1 per row)
        reader_args.append((core, [src.buffer_address(), *extra, n, start] + ([] if tilized else [1])))
        writer_args.append((core, [dst.buffer_address(), *extra, n, start] + ([] if tilized else [1])))
        start = start - n if backwards else start + n
    defines = [("BACKWARDS", "1")] if backwards else []
    cb = ttnn.CBDescriptor(
        total_size=2 * aligned_unit,
        core_ranges=all_cores,
        format_descriptors=[ttnn.CBFormatDescriptor(buffer_index=CB_IN, data_format=src.dtype, page_size=aligned_unit)],
    )
    kernels = [
        ttnn.KernelDescriptor(
            kernel_source=str(kernel_source(reader_src)),
            core_ranges=all_cores,
            compile_time_args=reader_ct,
            defines=defines,
            runtime_args=reader_args,
            config=ttnn.ReaderConfigDescriptor(),
        ),
        ttnn.KernelDescriptor(
            kernel_source=str(kernel_source(writer_src)),
            core_ranges=all_cores,
            compile_time_args=writer_ct,
            defines=defines,
            runtime_args=writer_args,
            config=ttnn.WriterConfigDescriptor(),
        ),
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=[cb])


def eltwise_copy_program(ttnn, src, dst, grid: tuple[int, int]):
    """Eltwise unary's interleaved reader/writer around one CB of the aligned page size, spans as in copy_program."""
    all_cores, spans = _split(ttnn, grid, src.buffer_num_pages())
    reader_args, writer_args, start = [], [], 0
    for core, n in spans:
        reader_args.append((core, [src.buffer_address(), n, start]))
        writer_args.append((core, [dst.buffer_address(), n, start]))
        start += n
    page = src.buffer_aligned_page_size()
    cb = ttnn.CBDescriptor(
        total_size=2 * page,
        core_ranges=all_cores,
        format_descriptors=[ttnn.CBFormatDescriptor(buffer_index=CB_IN, data_format=src.dtype, page_size=page)],
    )
    kernels = [
        ttnn.KernelDescriptor(
            kernel_source=str(kernel_source(ELTWISE_READER)),
            core_ranges=all_cores,
            compile_time_args=src.tensor_accessor_args(),
            runtime_args=reader_args,
            config=ttnn.ReaderConfigDescriptor(),
        ),
        ttnn.KernelDescriptor(
            kernel_source=str(kernel_source(ELTWISE_WRITER)),
            core_ranges=all_cores,
            compile_time_args=[CB_IN] + dst.tensor_accessor_args(),
            runtime_args=writer_args,
            config=ttnn.WriterConfigDescriptor(),
        ),
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=[cb])


CASES = [
    # (factory, shape, dtype, layout, backwards): uneven splits over the 8x8 grid (core_group_2 non-empty), a
    # block-float tile, sticks whose size is not a multiple of the DRAM alignment, the BACKWARDS define.
    ("copy", (1, 3, 96, 320), "bfloat16", "TILE", False),
    ("copy", (2, 1, 64, 2080), "bfloat8_b", "TILE", True),
    ("copy", (1, 1, 100, 48), "bfloat16", "ROW_MAJOR", False),
    ("copy", (1, 2, 37, 3), "float32", "ROW_MAJOR", True),
    ("eltwise", (1, 3, 96, 320), "bfloat16", "TILE", False),
    ("eltwise", (2, 1, 64, 2080), "bfloat4_b", "TILE", False),
]


@pytest.mark.parametrize("factory,shape,dtype,layout,backwards", CASES, ids=lambda v: str(v))
def test_interleaved_copy(emu_device, ttnn, factory, shape, dtype, layout, backwards):
    seed = 1000 + sum(shape) + len(factory)
    torch.manual_seed(seed)
    x = torch.randn(shape) * 4
    tt_dtype, tt_layout = getattr(ttnn, dtype), getattr(ttnn, f"{layout}_LAYOUT")
    src = emu_device.from_torch(x, dtype=tt_dtype, layout=tt_layout)
    dst = emu_device.allocate(list(shape), tt_dtype, tt_layout, fill=0x7FC07FC0)  # NaN poison: every page must land
    if factory == "copy":
        program = copy_program(ttnn, src, dst, emu_device.grid, backwards=backwards)
    else:
        program = eltwise_copy_program(ttnn, src, dst, emu_device.grid)
    stats = emu_device.generic_op([src, dst], program)
    expected = emu_device.to_torch(src)  # the device format's rounding of x (bf16 / bfp8 / bfp4 / fp32)
    got = emu_device.to_torch(dst)
    tag = f"[seed {seed}] {factory} {shape} {dtype} {layout}{' backwards' if backwards else ''}"
    assert not torch.isnan(got).any(), f"{tag}: a page of the destination was never written"
    assert torch.equal(got, expected), f"{tag}: the copy differs from the source"
    if dtype in ("bfloat16", "float32"):
        assert torch.equal(got.float(), x.to(getattr(torch, dtype)).float()), f"{tag}: not the host values"
    # Each page moves once over the NOC: the copy factory moves the unit (a tile, or the stick's bytes); eltwise
    # unary's pair moves the CB page, the page's aligned DRAM slot.
    unit = src.buffer_page_size() if factory == "copy" else src.buffer_aligned_page_size()
    nbytes = src.buffer_num_pages() * unit
    assert stats.bytes_read_from(src) == nbytes, f"{tag}: bytes read {stats.bytes_read_from(src)} != {nbytes}"
    assert stats.bytes_written_to(dst) == nbytes, f"{tag}: bytes written {stats.bytes_written_to(dst)} != {nbytes}"
