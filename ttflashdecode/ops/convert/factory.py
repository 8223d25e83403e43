"""Builds the tile format conversion ``ttnn.ProgramDescriptor`` (e.g. bfloat16 -> bfloat8_b output).

Why a second program: the FlashDecode writer writes each (batch, kv head) group's rows into output tiles that other
groups also write (32 q heads share one tile row). A block-float tile (bfloat8_b) shares one exponent per 16-value
face row across heads of different groups, so no group can write its rows alone. The decode therefore writes a
bfloat16 (or float32) staging tensor and this program packs whole tiles into the block-float output, spread over
the grid: a read and a write of the (small) output, never of the KV cache.

Kernels: ``ops/convert/kernels/`` (reader -> compute copy_tile/pack_tile -> writer); the packer converts. Their
compile-time args, in order (:data:`READER_ARGS`, :data:`COMPUTE_ARGS`, :data:`WRITER_ARGS`): ``cb_in`` / ``cb_out``
(this module's CB table) and ``src_cta_offset`` / ``dst_cta_offset`` (where the tensor's TensorAccessorArgs, which
follow, start); runtime args ``[address, first_tile, num_tiles]`` (reader and writer) and ``[num_tiles]`` (compute).
"""

from __future__ import annotations

import math

from ttflashdecode.backend import import_ttnn
from ttflashdecode.kernel_sources import CONVERT_KERNELS
from ttflashdecode.ops.descriptors import (
    AccessorArgs,
    ComputeSettings,
    cb_descriptor,
    core_range_set,
    kernel_descriptor,
    ordered,
)
from ttflashdecode.ops.work_split import split_units
from ttflashdecode.plan import TILE

CB_IN, CB_OUT = 0, 16
# Each kernel's compile-time args in order: arg i is name i (get_compile_time_arg_val(i)).
READER_ARGS = ("cb_in", "src_cta_offset")
COMPUTE_ARGS = ("cb_in", "cb_out")
WRITER_ARGS = ("cb_out", "dst_cta_offset")
PAGES_PER_CB = 2  # double-buffered: the reader fetches tile i+1 while compute packs tile i


def num_tiles_of(tensor) -> int:
    padded = [int(d) for d in tensor.padded_shape]
    return math.prod(padded[:-2]) * (padded[-2] // TILE) * (padded[-1] // TILE)


def build_convert_program(src, dst, grid: tuple[int, int]):
    """Program that converts DRAM-interleaved tile tensor ``src`` into ``dst`` (same shape, dst's dtype)."""
    ttnn = import_ttnn()
    if [int(d) for d in src.padded_shape] != [int(d) for d in dst.padded_shape]:
        raise ValueError(f"convert: src shape {list(src.padded_shape)} != dst shape {list(dst.padded_shape)}")
    split = split_units(num_tiles_of(dst), grid)
    cores = core_range_set(split.cores)

    compute_args = [(ttnn.CoreCoord(*core), [count]) for core, count in zip(split.cores, split.num_units)]
    # A float32 source keeps its precision through DST only with 32-bit DST registers. bfp8_pack_precise makes
    # the packer round once to the block's shared exponent (as ttnn.typecast does) instead of rounding to 7
    # bits first and again when aligning mantissas (tt-metal #14032, #52155).
    fp32_src = str(src.dtype).split(".")[-1].lower() == "float32"
    compute = ComputeSettings(math_fidelity="HiFi4", fp32_dest_acc_en=fp32_src)
    compute_config = compute.descriptor(bfp8_pack_precise=True)

    def tile_range_args(address: int):
        """Runtime args of the reader and the writer: the tensor's address, then the core's tile range."""
        return [
            (ttnn.CoreCoord(*core), [address, first, count])
            for core, first, count in zip(split.cores, split.first_unit, split.num_units)
        ]

    values = {"cb_in": CB_IN, "cb_out": CB_OUT}
    reader, writer = AccessorArgs(), AccessorArgs()
    reader.add("src", src)
    writer.add("dst", dst)
    kernels = [
        kernel_descriptor(
            CONVERT_KERNELS / "dataflow" / "reader_tiles.cpp",
            cores,
            ordered(values, READER_ARGS, reader),
            tile_range_args(src.buffer_address()),
            ttnn.ReaderConfigDescriptor(),
            [],
        ),
        kernel_descriptor(
            CONVERT_KERNELS / "compute" / "compute_copy.cpp",
            cores,
            ordered(values, COMPUTE_ARGS),
            compute_args,
            compute_config,
            [],
        ),
        kernel_descriptor(
            CONVERT_KERNELS / "dataflow" / "writer_tiles.cpp",
            cores,
            ordered(values, WRITER_ARGS, writer),
            tile_range_args(dst.buffer_address()),
            ttnn.WriterConfigDescriptor(),
            [],
        ),
    ]
    cbs = [
        cb_descriptor(cores, [CB_IN], src.dtype, src.buffer_page_size(), PAGES_PER_CB),
        cb_descriptor(cores, [CB_OUT], dst.dtype, dst.buffer_page_size(), PAGES_PER_CB),
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)
