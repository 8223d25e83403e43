"""The merge kernels' arguments (``ops/shared_prefix/kernels/``), defined once: their CB table, the compile-time args
each kernel takes, in order (arg i is its list's name i, read as ``get_compile_time_arg_val(i)``; the
TensorAccessorArgs follow, at their ``*_cta_offset``), and their values (:func:`merge_kernel_args`)."""

from __future__ import annotations

from ttflashdecode.ops.descriptors import AccessorArgs, float_bits, ordered

# The merge program's CBs (its own table: index, pages).
MERGE_CB = {"a": 0, "b": 1, "ones": 2, "m": 3, "f": 4, "t": 5, "l": 6, "out": 16}
MERGE_READER_ARGS = ("cb_a", "cb_b", "cb_ones", "vDHt", "a_cta_offset", "b_cta_offset")
MERGE_COMPUTE_ARGS = (
    "cb_a",
    "cb_b",
    "cb_ones",
    "cb_m",
    "cb_f",
    "cb_t",
    "cb_l",
    "cb_out",
    "vDHt",
    "scale_in_exp",
    "factor_scale_bf16",
)
MERGE_WRITER_ARGS = ("cb_out", "vDHt", "out_cta_offset")


def merge_kernel_args(prefix_partial, suffix_partial, out, v_head_tiles: int, scale: float, scale_in_exp: bool):
    """(reader, compute, writer) :class:`KernelArgs` of the merge over the two partials into ``out``: every value
    computed once, here. ``scale_in_exp``: the levels' m is in q.k units (the approximate exp took the scale), so the
    merge scales its factors."""
    values = {f"cb_{n}": i for n, i in MERGE_CB.items()}
    values.update(vDHt=v_head_tiles, scale_in_exp=int(scale_in_exp), factor_scale_bf16=float_bits(scale) >> 16)
    reader, writer = AccessorArgs(), AccessorArgs()
    reader.add("a", prefix_partial)
    reader.add("b", suffix_partial)
    writer.add("out", out)
    return (
        ordered(values, MERGE_READER_ARGS, reader),
        ordered(values, MERGE_COMPUTE_ARGS),
        ordered(values, MERGE_WRITER_ARGS, writer),
    )
