"""The fill ``ttnn.ProgramDescriptor``: the input's tile rows split over the cores; a reader that finds each one's
place in the cache, the tile conversion's compute kernel, a writer."""

from __future__ import annotations

from ttflashdecode.backend import import_ttnn
from ttflashdecode.kernel_sources import CONVERT_KERNELS, DECODE_KERNELS, FILL_CACHE_KERNELS, UPDATE_CACHE_KERNELS
from ttflashdecode.ops.descriptors import ComputeSettings, cb_descriptor, core_range_set, kernel_descriptor, wire
from ttflashdecode.ops.fill_cache.args import (
    CB_INDEX,
    PAGES_PER_CB,
    TARGET_RECORD_BYTES,
    FillShapes,
    ReaderRuntimeArgs,
    WriterRuntimeArgs,
    fill_kernel_args,
)
from ttflashdecode.ops.update_cache.args import l1_aligned
from ttflashdecode.ops.work_split import split_units

READER = FILL_CACHE_KERNELS / "dataflow" / "reader_fill_cache.cpp"
COMPUTE = CONVERT_KERNELS / "compute" / "compute_copy.cpp"
WRITER = FILL_CACHE_KERNELS / "dataflow" / "writer_fill_cache.cpp"
# update_cache_common.hpp: locate_fill_row (and the flash_decode_common.hpp it includes: the work table's lookup)
INCLUDE = [FILL_CACHE_KERNELS, UPDATE_CACHE_KERNELS, DECODE_KERNELS]


def build_fill_program(
    shapes: FillShapes, cache, new, batch: int, index, page_table, grid, compute: ComputeSettings, valid_len=None
):
    """The fill ``ttnn.ProgramDescriptor``: the input's tile rows split over the grid's first cores (``valid_len``:
    a ring fill's valid_seq_len tensor)."""
    ttnn = import_ttnn()
    split = split_units(shapes.num_units, grid)
    cores = core_range_set(split.cores)
    reader_args, compute_args, writer_args = fill_kernel_args(shapes, cache, new, index, page_table, valid_len)
    per_core = list(zip(split.cores, split.first_unit, split.num_units))
    address = {
        name: t.buffer_address() if t is not None else 0
        for name, t in (("index", index), ("page_table", page_table), ("valid", valid_len))
    }
    reader_rt = [
        (
            ttnn.CoreCoord(*c),
            wire(
                ReaderRuntimeArgs(
                    new.buffer_address(), address["index"], address["page_table"], address["valid"], batch, first, count
                )
            ),
        )
        for c, first, count in per_core
    ]
    compute_rt = [(ttnn.CoreCoord(*c), [count * shapes.Wt]) for c, _, count in per_core]  # tiles, as compute_copy takes
    writer_rt = [
        (ttnn.CoreCoord(*c), wire(WriterRuntimeArgs(cache.buffer_address(), count))) for c, _, count in per_core
    ]

    kernels = [
        kernel_descriptor(READER, cores, reader_args, reader_rt, ttnn.ReaderConfigDescriptor(), INCLUDE),
        kernel_descriptor(COMPUTE, cores, compute_args, compute_rt, compute.descriptor(), INCLUDE),
        kernel_descriptor(WRITER, cores, writer_args, writer_rt, ttnn.WriterConfigDescriptor(), INCLUDE),
    ]

    def scratch_page(tensor) -> int:
        # A page the reader always names: the tensor's page, aligned, or one aligned page when there is no tensor.
        return l1_aligned(tensor.buffer_page_size() if tensor is not None else 1)

    cbs = [
        cb_descriptor(cores, [CB_INDEX[name]], dtype, page_size, pages)
        for name, dtype, page_size, pages in (
            ("in", new.dtype, new.buffer_page_size(), PAGES_PER_CB),
            ("out", cache.dtype, cache.buffer_page_size(), PAGES_PER_CB),
            ("target", ttnn.uint32, TARGET_RECORD_BYTES, 2),
            ("index", ttnn.int32, scratch_page(index), 1),
            ("page_table", ttnn.int32, scratch_page(page_table), 1),
            ("valid_len", ttnn.int32, scratch_page(valid_len), 1),
        )
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)
