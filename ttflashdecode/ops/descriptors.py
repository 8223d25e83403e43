"""The pieces every op's factory builds its ``ttnn.ProgramDescriptor`` from, written once.

Decode, the cache update and fill, the tile conversion, shared-prefix decode's merge and the fused update + decode all
describe their kernels, circular buffers, core ranges and compute configuration through these functions, so a change to
how a descriptor is made (a field ttnn adds, the core-range layout the program cache prefers) is made here, for every
op:

- :func:`kernel_descriptor`, :func:`cb_descriptor`, :func:`core_range_set`: the descriptor parts;
- :class:`ComputeSettings`: the compute kernel configuration (``ttnn.WormholeComputeKernelConfig``'s fields);
- :class:`KernelArgs`, :class:`AccessorArgs`, :func:`ordered`: a kernel's compile-time args, positional: its own in
  its list's order, then the ``TensorAccessorArgs`` of the tensors it addresses;
- :func:`wire`, :func:`runtime_arg_names`: a runtime-args dataclass as the positional list a descriptor carries;
- :func:`work_table`: the per-core entries a kernel's cores find in its common runtime args;
- :func:`tensor_placement`: where a tensor's pages live, as the kernels' ``TensorPages`` (flash_decode_common.hpp) finds
  them (decode's Q and output, the cache update's input).

Each op's own arguments (which names its kernels take, their runtime-args dataclasses) stay in its ``args`` module.
"""

from __future__ import annotations

import math
import struct
from dataclasses import astuple, dataclass, fields

from ttflashdecode.backend import import_ttnn
from ttflashdecode.config import TILE

# ---- compute configuration -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComputeSettings:
    """The compute kernel configuration a program is built with (ttnn.WormholeComputeKernelConfig fields)."""

    math_fidelity: str = "HiFi4"
    math_approx_mode: bool = False
    fp32_dest_acc_en: bool = False

    @classmethod
    def coerce(cls, config) -> ComputeSettings:
        if config is None:
            return cls()
        if isinstance(config, ComputeSettings):
            return config
        fidelity = getattr(config, "math_fidelity", None)
        if fidelity is None:
            raise TypeError(
                f"compute_kernel_config={config!r}: expected ttnn.WormholeComputeKernelConfig, "
                "ttflashdecode.ops.descriptors.ComputeSettings or None"
            )
        name = str(fidelity).split(".")[-1]
        if name == "Invalid":  # ttnn's "not set": keep the op's default
            name = cls.math_fidelity
        return cls(name, bool(config.math_approx_mode), bool(config.fp32_dest_acc_en))

    def descriptor(self, *, bfp8_pack_precise: bool = False):
        """The ``ttnn.ComputeConfigDescriptor``. ``bfp8_pack_precise``: the packer rounds once to a block-float tile's
        shared exponent (the tile conversion's output)."""
        ttnn = import_ttnn()
        extra = {"bfp8_pack_precise": True} if bfp8_pack_precise else {}
        return ttnn.ComputeConfigDescriptor(
            math_fidelity=getattr(ttnn.MathFidelity, self.math_fidelity),
            math_approx_mode=self.math_approx_mode,
            fp32_dest_acc_en=self.fp32_dest_acc_en,
            **extra,
        )


# ---- compile-time args -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelArgs:
    """What a KernelDescriptor of one of our kernels takes at compile time: positional args, the kernel's own (arg i
    is ``names[i]``) then the TensorAccessorArgs of its tensors. None is named: on a card's program-cache hit
    ``ttnn.generic_op`` copies a named arg's name with its value on every launch (ops/decode/args.py)."""

    names: tuple[str, ...]  # what the leading positional args are, in order
    positional: tuple[int, ...]

    def value(self, name: str) -> int:
        """The value of the kernel's own arg ``name``."""
        return self.positional[self.names.index(name)]


def tensor_accessor_args(tensor) -> list[int]:
    """Compile-time args of a ``TensorAccessorArgs`` over ``tensor``: ttnn's host encoding on a device, the
    emulator tensor's own (the same encoding for the interleaved buffers it supports) on the emulator."""
    own = getattr(tensor, "tensor_accessor_args", None)
    if own is not None:
        return list(own())
    return [int(v) for v in import_ttnn().TensorAccessorArgs(tensor).get_compile_time_args()]


class AccessorArgs:
    """The TensorAccessorArgs of one kernel's tensors, one after another, and where each tensor's start."""

    def __init__(self) -> None:
        self.args: list[int] = []
        self.offsets: dict[str, int] = {}

    def add(self, name: str, tensor, *, absent_like: str | None = None) -> None:
        """Appends ``tensor``'s args, starting at ``<name>_cta_offset``; with ``tensor`` None, that offset is
        ``absent_like``'s."""
        if tensor is None:
            self.offsets[f"{name}_cta_offset"] = self.offsets[f"{absent_like}_cta_offset"]
            return
        self.offsets[f"{name}_cta_offset"] = len(self.args)
        self.args += tensor_accessor_args(tensor)


def ordered(values: dict[str, int], names: tuple[str, ...], accessors: AccessorArgs | None = None) -> KernelArgs:
    """Positional args: the values of ``names`` in that order (the kernel reads ``names[i]`` as
    ``get_compile_time_arg_val(i)``), then the accessors' TensorAccessorArgs, whose offsets (``<tensor>_cta_offset``,
    among ``names``) count from the first arg. The accessors come last because their lengths vary with the tensor's
    layout: every fixed arg keeps its index."""
    offsets = {n: len(names) + at for n, at in accessors.offsets.items()} if accessors is not None else {}
    table = {**values, **offsets}
    missing = [n for n in names if n not in table]
    if missing:
        raise AssertionError(f"kernel args without a value: {missing}")
    if len(set(names)) != len(names):
        raise AssertionError(f"a kernel arg listed twice: {sorted(n for n in set(names) if names.count(n) > 1)}")
    own = tuple(int(table[n]) for n in names)
    return KernelArgs(names, own + tuple(accessors.args if accessors else ()))


# A work table: a kernel takes no per-core runtime args, and each of its cores finds its own entry in the kernel's
# common runtime args by its logical coordinates (flash_decode_common.hpp: work_table_entry). The table: the bounding
# box of the cores (x0, y0, width), then the same number of words per core of the box, row by row; a core of the box
# without work (one running none of these kernels) has zeros.
WORK_TABLE_HEADER = 3


def work_table(entries: dict[tuple[int, int], tuple[int, ...]], words_per_core: int) -> list[int]:
    """The work table of the cores ``entries`` maps (logical (x, y) -> their ``words_per_core`` packed words)."""
    xs, ys = [c[0] for c in entries], [c[1] for c in entries]
    x0, y0 = min(xs), min(ys)
    width, height = max(xs) - x0 + 1, max(ys) - y0 + 1
    table = [x0, y0, width] + [0] * (words_per_core * width * height)
    for (x, y), words in entries.items():
        if len(words) != words_per_core:
            raise AssertionError(f"core ({x}, {y}): {len(words)} words in a table of {words_per_core} a core")
        at = WORK_TABLE_HEADER + words_per_core * ((y - y0) * width + (x - x0))
        table[at : at + words_per_core] = words
    return table


def float_bits(value: float) -> int:
    """The float32 bits of ``value``, as a kernel takes a float in a uint32 arg."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


# ---- runtime args ----------------------------------------------------------------------------------------------------


def runtime_arg_names(kind: type) -> tuple[str, ...]:
    """The wire order of a runtime-args (or common-args) dataclass."""
    return tuple(f.name for f in fields(kind))


def wire(args) -> list[int]:
    """A runtime-args dataclass as the positional list a KernelDescriptor carries."""
    return [int(v) for v in astuple(args)]


# ---- the descriptor parts --------------------------------------------------------------------------------------------


def kernel_descriptor(
    source, cores, kernel_args: KernelArgs, runtime_args, config, include_paths, common_runtime_args=()
):
    """The ``ttnn.KernelDescriptor`` of one of our kernels on ``cores``: every factory builds its kernels here."""
    ttnn = import_ttnn()
    return ttnn.KernelDescriptor(
        kernel_source=str(source),
        core_ranges=cores,
        compile_time_args=list(kernel_args.positional),
        runtime_args=runtime_args,
        common_runtime_args=list(common_runtime_args),
        config=config,
        compiler_include_paths=[str(path) for path in include_paths],
    )


def core_range_set(cores):
    """The ``ttnn.CoreRangeSet`` of logical cores ``cores`` ((x, y) pairs) as ttnn's merge lays them out: as few
    rectangles as it finds (64 cores of an 8 x 8 grid: one). On a card's program-cache hit ``ttnn.generic_op`` copies
    every core range set of the descriptor (kernels, CBs, semaphores): one range each instead of one per core saves
    ~3 us a call for a 64-core decode program on a mock N150 (tests/runtime/host_cost.py)."""
    ttnn = import_ttnn()
    singles = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(*c), ttnn.CoreCoord(*c)) for c in cores])
    return singles.merge(ttnn.CoreRangeSet([]))


def cb_descriptor(cores, buffer_indices, dtype, page_size: int, pages: int, tile=None):
    """The ``ttnn.CBDescriptor`` of ``pages`` pages of ``page_size`` bytes on ``cores``: one format descriptor per CB
    index of ``buffer_indices`` (several indices share one buffer), ``tile`` a ``ttnn.TileDescriptor`` for tiles other
    than 32 x 32. Every factory builds its CBs here."""
    ttnn = import_ttnn()
    return ttnn.CBDescriptor(
        total_size=page_size * pages,
        core_ranges=cores,
        format_descriptors=[
            ttnn.CBFormatDescriptor(buffer_index=index, data_format=dtype, page_size=page_size, tile=tile)
            for index in buffer_indices
        ],
    )


# ---- where a tensor's pages live -------------------------------------------------------------------------------------

# ops/decode/kernels/flash_decode_common.hpp, enum class Placement (the cache update's kernels include it too).
PLACEMENTS = {"DRAM": 0, "L1": 1, "L1_HEIGHT_SHARDED": 2}


@dataclass(frozen=True)
class TensorPlacement:
    """Where the pages of a tensor live, as the kernels' ``TensorPages`` finds them."""

    placement: str  # a key of PLACEMENTS
    tiled: bool  # TILE pages, else ROW_MAJOR rows
    page_bytes: int
    shard_pages: int = 0  # height-sharded: pages per shard
    shard_cores: tuple[tuple[int, int], ...] = ()  # height-sharded: logical core of shard s (ROW_MAJOR orientation)

    @property
    def sharded(self) -> bool:
        return self.placement == "L1_HEIGHT_SHARDED"


def tensor_placement(tensor) -> TensorPlacement:
    ttnn = import_ttnn()
    mc = tensor.memory_config()
    tiled = tensor.layout == ttnn.TILE_LAYOUT
    page_bytes = tensor.buffer_page_size()
    if not mc.is_sharded():
        placement = "DRAM" if mc.buffer_type == ttnn.BufferType.DRAM else "L1"
        return TensorPlacement(placement, tiled, page_bytes)
    spec = mc.shard_spec
    shard_h, shard_w = (int(d) for d in spec.shape)
    height = math.prod(int(d) for d in list(tensor.padded_shape)[:-1])
    shard_pages = (shard_h // TILE) * (shard_w // TILE) if tiled else shard_h
    cores = ttnn.corerange_to_cores(spec.grid, row_wise=True)[: -(-height // shard_h)]
    return TensorPlacement(
        "L1_HEIGHT_SHARDED", tiled, page_bytes, shard_pages, tuple((int(c.x), int(c.y)) for c in cores)
    )
