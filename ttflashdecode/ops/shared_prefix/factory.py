"""The merge's ``ttnn.ProgramDescriptor``: the two levels' partials combined row by row and normalised, the output's
tile rows split over the grid. (The levels' programs are decode's own:
:func:`ttflashdecode.ops.decode.factory.build_program` with ``emit_partial``.)"""

from __future__ import annotations

from ttflashdecode.backend import import_ttnn
from ttflashdecode.kernel_sources import DECODE_KERNELS, OPS
from ttflashdecode.ops.descriptors import ComputeSettings, cb_descriptor, core_range_set, kernel_descriptor
from ttflashdecode.ops.shared_prefix.args import MERGE_CB, merge_kernel_args
from ttflashdecode.ops.shared_prefix.plan import SharedPrefixPlan
from ttflashdecode.ops.work_split import split_units

MERGE_KERNELS = OPS / "shared_prefix" / "kernels"


def build_merge_program(prefix_partial, suffix_partial, out, p: SharedPrefixPlan, grid: tuple[int, int]):
    """The merge's ``ttnn.ProgramDescriptor``: tile rows of the two partials in, normalised output tile rows out,
    spread over the grid in contiguous ranges."""
    ttnn = import_ttnn()
    s = p.suffix.shapes
    vdht = s.vDHt
    split = split_units(p.merge_rows, grid)
    cores = core_range_set(split.cores)
    scale_in_exp = bool(p.suffix.config.exp_approx_mode)  # the levels' m is then in q.k units (no mask, no sinks)
    reader_args, compute_args, writer_args = merge_kernel_args(
        prefix_partial, suffix_partial, out, vdht, p.scale, scale_in_exp
    )

    def ranged(*addresses: int):
        """Per core: ``addresses``, then the core's first tile row and its number of tile rows."""
        return [
            (ttnn.CoreCoord(*c), [*addresses, first, count])
            for c, first, count in zip(split.cores, split.first_unit, split.num_units, strict=True)
        ]

    compute_rt = [(ttnn.CoreCoord(*c), [count]) for c, count in zip(split.cores, split.num_units, strict=True)]
    # The merge's (m, l, O) combine in float32 DST, whatever the call's compute settings (the partials are float32).
    compute_config = ComputeSettings(math_fidelity="HiFi4", fp32_dest_acc_en=True).descriptor()
    include = [MERGE_KERNELS, DECODE_KERNELS]
    kernels = [
        kernel_descriptor(
            MERGE_KERNELS / "dataflow" / "reader_merge_partials.cpp",
            cores,
            reader_args,
            ranged(prefix_partial.buffer_address(), suffix_partial.buffer_address()),
            ttnn.ReaderConfigDescriptor(),
            include,
        ),
        kernel_descriptor(
            MERGE_KERNELS / "compute" / "compute_merge_partials.cpp",
            cores,
            compute_args,
            compute_rt,
            compute_config,
            include,
        ),
        kernel_descriptor(
            MERGE_KERNELS / "dataflow" / "writer_merge_partials.cpp",
            cores,
            writer_args,
            ranged(out.buffer_address()),
            ttnn.WriterConfigDescriptor(),
            include,
        ),
    ]
    f32, bf16, out_dtype = ttnn.float32, ttnn.bfloat16, getattr(ttnn, p.out_dtype)
    tile = {"float32": 4096, "bfloat16": 2048}
    row = vdht + 2
    cbs = [
        cb_descriptor(cores, [MERGE_CB["a"]], f32, tile["float32"], 2 * row),  # double-buffered tile rows
        cb_descriptor(cores, [MERGE_CB["b"]], f32, tile["float32"], 2 * row),
        cb_descriptor(cores, [MERGE_CB["ones"]], bf16, tile["bfloat16"], 1),
        cb_descriptor(cores, [MERGE_CB["m"]], f32, tile["float32"], 1),
        cb_descriptor(cores, [MERGE_CB["f"]], f32, tile["float32"], 4),  # factors, then factors / l
        cb_descriptor(cores, [MERGE_CB["t"]], f32, tile["float32"], 2),
        cb_descriptor(cores, [MERGE_CB["l"]], f32, tile["float32"], 2),  # l, then 1 / rowsum(l)
        cb_descriptor(cores, [MERGE_CB["out"]], out_dtype, tile[p.out_dtype], 2),
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)
