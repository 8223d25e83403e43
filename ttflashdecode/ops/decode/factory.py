"""Builds the FlashDecode ``ttnn.ProgramDescriptor`` from a :class:`~ttflashdecode.plan.DecodePlan`.

The descriptor is the single description of the program: ``ttnn.generic_op`` runs it on a card and the host
emulator runs the very same object. Everything that depends on the call's positions (cur_pos) is read by the
kernels at run time from the cur_pos tensor, so one descriptor (and one compiled kernel set) serves every
decode step of a shape.

The kernels' arguments (compile-time args in order, TensorAccessorArgs, runtime args and their order) are defined
once, in :mod:`ttflashdecode.ops.decode.args`; this module only assembles the descriptor from them and the plan's CB and
semaphore tables, with the descriptor parts every op shares (:mod:`ttflashdecode.ops.descriptors`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ttflashdecode.backend import import_ttnn
from ttflashdecode.config import TILE
from ttflashdecode.kernel_sources import DECODE_KERNELS
from ttflashdecode.ops.decode.args import (
    ComputeCommonArgs,
    CoreWork,
    ReaderCommonArgs,
    WriterCommonArgs,
    core_work_table,
    decode_kernel_args,
    shape_fields,
)
from ttflashdecode.ops.descriptors import (
    ComputeSettings,
    KernelArgs,
    cb_descriptor,
    core_range_set,
    kernel_descriptor,
    wire,
)
from ttflashdecode.plan import CoreAssignment, DecodePlan
from ttflashdecode.plan.rules import is_dram_bound, reads_over_noc1

KERNEL_DIR = DECODE_KERNELS  # on the include path: the kernels share flash_decode_common.hpp
READER = KERNEL_DIR / "dataflow" / "reader_flash_decode.cpp"
COMPUTE = KERNEL_DIR / "compute" / "compute_flash_decode.cpp"
WRITER = KERNEL_DIR / "dataflow" / "writer_flash_decode.cpp"

DATUM_BYTES = {"bfloat16": 2, "float32": 4}
# tt-metal's limit on a kernel's runtime args: max_runtime_args = 341 = 4096 / (3 * 4), a dispatch packet shared by
# three kernels (tt_metal/api/tt-metalium/kernel_types.hpp; the emulator's arch.MAX_RUNTIME_ARGS). These kernels have
# no per-core runtime args, so their common args may take all of it.
MAX_COMMON_RUNTIME_ARGS = 341


@dataclass(frozen=True)
class DecodeBuffers:
    """Device tensors the program reads and writes (their DRAM addresses go into runtime args)."""

    q: object
    k: object
    v: object
    cur_pos: object  # int32 row-major [b]
    out: object
    page_table: object | None = None  # int32 row-major [b, max_blocks_per_user] (paged cache)
    attn_mask: object | None = None  # bfloat16 tile [b, 1 or n_q_heads, q_len, kv_len] (non-causal)
    attention_sink: object | None = None  # bfloat16 tile [1, n_q_heads]

    def io_tensors(self) -> list:
        """Inputs then the output, as generic_op takes them."""
        optional = [t for t in (self.page_table, self.attn_mask, self.attention_sink) if t is not None]
        return [self.q, self.k, self.v, self.cur_pos, *optional, self.out]


def _group_span(plan: DecodePlan, core: CoreAssignment) -> tuple[int, int]:
    """(first group id, number of groups) of a core; group id = batch * n_kv_heads + kv_head."""
    n_kv = plan.shapes.n_kv_heads
    ids = [b * n_kv + h for b, h in core.groups]
    first = ids[0]
    if ids != list(range(first, first + len(ids))):
        raise AssertionError(f"planner gave core {core.core} non-consecutive groups {core.groups}")
    return first, len(ids)


def q_multicast_region(root_box_index: int, num_cores: int, box_width: int) -> tuple[int, int]:
    """(cores, rows) of the rectangle a group's root multicasts Q to, the root at its lowest corner: the group's cores
    are consecutive row by row in the work table's box, so whole rows when the group starts a row and fills whole
    rows, else the group's cores in the root's row. reader_flash_decode.cpp computes the same."""
    root_x = root_box_index % box_width
    if root_x == 0 and num_cores % box_width == 0:
        return num_cores, num_cores // box_width
    return min(box_width - root_x, num_cores), 1


def q_multicast_corners(plan: DecodePlan, noc_coord) -> dict[tuple[int, int], tuple[int, int]]:
    """Each group root's far corner (NOC coordinates of the last core of the rectangle it multicasts its group's Q to:
    :func:`q_multicast_region`), for the roots whose rectangle holds other cores; empty when no group has more than one
    core, or when a group's cores are not consecutive row by row in the work table's box or a rectangle's NOC corners
    do not ascend (NOC 0 multicasts from the lowest corner): then every core reads its own Q."""
    if plan.num_cores_per_head <= 1:
        return {}
    busy = [c for c in plan.cores if c.role != "idle"]
    x0, y0 = min(c.core[0] for c in busy), min(c.core[1] for c in busy)
    width = max(c.core[0] for c in busy) - x0 + 1
    groups: dict[int, list[CoreAssignment]] = {}
    for core in busy:
        groups.setdefault(_group_span(plan, core)[0], []).append(core)
    corners = {}
    for members in groups.values():
        members = sorted(members, key=lambda c: c.index_in_group)
        root_index = (members[0].core[1] - y0) * width + members[0].core[0] - x0
        at = [(x0 + (root_index + i) % width, y0 + (root_index + i) // width) for i in range(len(members))]
        if [c.core for c in members] != at:
            return {}
        cores, rows = q_multicast_region(root_index, len(members), width)
        if cores < 2:
            continue
        last = at[cores - 1]
        (nx0, ny0), (nx1, ny1) = noc_coord(members[0].core), noc_coord(last)
        if nx1 < nx0 or ny1 < ny0:
            return {}
        corners[members[0].core] = (nx1, ny1)
    return corners


def noc1_reader_cores(plan: DecodePlan, stride: int) -> set[tuple[int, int]]:
    """Cores whose reader runs on NoC 1 (and writer on NoC 0) in a DRAM-bound plan
    (:func:`~ttflashdecode.plan.rules.is_dram_bound`): every ``stride``-th reading core
    (:func:`~ttflashdecode.plan.rules.reads_over_noc1`), in core order, but never the root of a group of several cores,
    which multicasts its group's Q over a NoC 0 rectangle; none otherwise."""
    busy = [c for c in plan.cores if c.role != "idle"]
    if not is_dram_bound(plan.shapes, plan.num_cores_per_head, len(busy)):
        return set()
    return {
        c.core
        for n, c in enumerate(busy)
        if reads_over_noc1(n, stride) and (c.index_in_group != 0 or c.num_cores_per_head == 1)
    }


def build_program(
    plan: DecodePlan,
    buffers: DecodeBuffers,
    noc_coord,
    compute: ComputeSettings,
    scale: float | None = None,
    *,
    wait_for_cache_update: int = 0,
    sem_cache_updated: int = 0,
    emit_partial: bool = False,
    slot_users: tuple[int, ...] | None = None,
    slot_page_rows: tuple[int, ...] = (),
    noc1_stride: int = 0,
):
    """The FlashDecode ProgramDescriptor for ``plan`` over ``buffers``.

    ``noc_coord(logical_core) -> (x, y)`` gives the NOC coordinates a kernel uses to address another core;
    ``scale`` is the softmax scale (default ``1/sqrt(head_dim)``). ``wait_for_cache_update`` / ``sem_cache_updated``:
    the reader waits for a cache update sharing the program (:mod:`ttflashdecode.ops.fused`, which adds
    that semaphore and the update's kernels); 0 without one. ``emit_partial``: the output is the groups' partials,
    rows of ``v_head_dim + 64`` (O unnormalised, m's tile, l's tile); ``slot_users``: the user of each slot
    (``plan.shapes.batch`` of them; -1 a padding slot) and ``slot_page_rows`` the page-table row of each group of
    ``users_per_page_row`` slots, handed to the reader (map and rows) and writer (map) as common runtime args
    (shared-prefix decode's levels, :mod:`ttflashdecode.ops.shared_prefix`). ``noc1_stride``: the chip's
    :data:`~ttflashdecode.plan.rules.NOC1_READER_STRIDE` (``Backend.noc1_reader_stride``; 0: every reader
    on NoC 0), every this-many-th reading core of a DRAM-bound plan reads over NoC 1 (:func:`noc1_reader_cores`).
    """
    ttnn = import_ttnn()
    s = plan.shapes
    busy = [c for c in plan.cores if c.role != "idle"]
    every = [c.core for c in busy]
    cores = core_range_set(every)
    scale = s.head_dim**-0.5 if scale is None else scale
    if s.out_dtype not in DATUM_BYTES:
        raise ValueError(f"out dtype={s.out_dtype!r}: expected bfloat16 or float32 (rows are written per face row)")
    # The softmax's exp: the config's exp_approx_mode, which is already resolved (unset -> the approximate exp, as
    # upstream's factory reads it; config.ProgramConfig). No default is taken here.
    corners = q_multicast_corners(plan, noc_coord)
    args = decode_kernel_args(
        plan,
        buffers,
        exp_approx=plan.config.exp_approx_mode,
        scale=scale,
        wait_for_cache_update=wait_for_cache_update,
        sem_cache_updated=sem_cache_updated,
        emit_partial=emit_partial,
        slot_users=slot_users is not None,
        q_multicast=bool(corners),
    )
    # Where each shard of a height-sharded Q / output lives (the same table on every core).
    reader_common = [xy for core in args.q_at.shard_cores for xy in noc_coord(core)]
    writer_common = [xy for core in args.out_at.shard_cores for xy in noc_coord(core)]
    if slot_users is not None:  # the kernels refuse a sharded Q / output with a map: the common args are the map's
        rows = s.batch // s.users_per_page_row
        if len(slot_users) != s.batch or len(slot_page_rows) != rows or reader_common or writer_common:
            raise AssertionError(
                f"slot_users: {len(slot_users)} slots for batch {s.batch}, {len(slot_page_rows)} page "
                f"rows for {rows} groups of slots, interleaved Q and output"
            )
        writer_common = [u & 0xFFFFFFFF for u in slot_users]
        reader_common = writer_common + list(slot_page_rows)

    for kernel_args, common in ((args.reader, reader_common), (args.writer, writer_common)):
        if kernel_args.value("work_args_at") != len(common):
            raise AssertionError(f"work_args_at {kernel_args.value('work_args_at')} != {len(common)} common args")

    # No per-core runtime args (kernel_args' module docstring): each core's work is an entry of the work table.
    work = {}
    for core in busy:
        first_group, num_groups = _group_span(plan, core)
        # A root's parent fields: its group's far corner when it multicasts Q (CoreWork)
        parent_x, parent_y = noc_coord(core.send.to_core) if core.send is not None else corners.get(core.core, (0, 0))
        work[core.core] = CoreWork(
            first_group=first_group,
            num_groups=num_groups,
            core_index=core.index_in_group,
            num_cores_per_head=core.num_cores_per_head,
            parent_noc_x=parent_x,
            parent_noc_y=parent_y,
        )
    reader_common += wire(
        ReaderCommonArgs(
            q_addr=buffers.q.buffer_address(),
            k_addr=buffers.k.buffer_address(),
            v_addr=buffers.v.buffer_address(),
            cur_pos_addr=buffers.cur_pos.buffer_address(),
            page_table_addr=_address(buffers.page_table),
            mask_addr=_address(buffers.attn_mask),
            sink_addr=_address(buffers.attention_sink),
            **shape_fields(args.shape, ReaderCommonArgs),
        )
    )
    writer_common += wire(
        WriterCommonArgs(out_addr=buffers.out.buffer_address(), **shape_fields(args.shape, WriterCommonArgs))
    )
    compute_common = wire(ComputeCommonArgs(**shape_fields(args.shape, ComputeCommonArgs)))

    def kernel(source: Path, kernel_args: KernelArgs, config, own_args, on: list[tuple[int, int]]):
        """A kernel on the cores ``on``: its common args are its own, then the work table of those cores (generic_op
        copies every kernel's common args on each launch, so a kernel on a few cores carries a table of a few), except
        the reader's when a group's root multicasts Q: its cores find their root by their index in the box of every
        busy core (q_multicast_region)."""
        table = core_work_table({core: work[core] for core in (work if source == READER and corners else on)})
        common = own_args + table
        if len(common) > MAX_COMMON_RUNTIME_ARGS:
            raise ValueError(
                f"the {source.stem}'s common runtime args: {len(common)} (its shard table or slot map, addresses, "
                f"shape and a work table of {len(table)} words for {len(on)} cores) exceed tt-metal's "
                f"{MAX_COMMON_RUNTIME_ARGS}"
            )
        return kernel_descriptor(source, core_range_set(on), kernel_args, [], config, [KERNEL_DIR], common)

    # The cores of noc1_reader_cores run the same reader and writer as second kernels on swapped NoCs.
    swapped = noc1_reader_cores(plan, noc1_stride)
    on_noc0 = [core for core in every if core not in swapped]
    on_noc1 = sorted(swapped)
    dm, risc, noc = ttnn.DataMovementConfigDescriptor, ttnn.DataMovementProcessor, ttnn.NOC
    reader_on_noc1 = dm(processor=risc.RISCV_1, noc=noc.NOC_1)
    writer_on_noc0 = dm(processor=risc.RISCV_0, noc=noc.NOC_0)
    kernels = [
        kernel(READER, args.reader, ttnn.ReaderConfigDescriptor(), reader_common, on_noc0),
        *([kernel(READER, args.reader, reader_on_noc1, reader_common, on_noc1)] if on_noc1 else []),
        kernel(COMPUTE, args.compute, compute.descriptor(), compute_common, every),
        kernel(WRITER, args.writer, ttnn.WriterConfigDescriptor(), writer_common, on_noc0),
        *([kernel(WRITER, args.writer, writer_on_noc0, writer_common, on_noc1)] if on_noc1 else []),
    ]

    cbs = [
        cb_descriptor(
            cores,
            [cb.index],
            _ttnn_dtype(cb.data_format),
            cb.page_size,
            cb.num_pages,
            # 16 x 32 tiles for a group's rows when it has at most 16 (plan/shapes.py: q_tile_rows)
            tile=None if cb.tile_rows == TILE else ttnn.TileDescriptor(ttnn.Tile((cb.tile_rows, TILE))),
        )
        for cb in plan.cbs
    ]
    semaphores = [
        ttnn.SemaphoreDescriptor(
            id=sem.id, core_type=ttnn.CoreType.WORKER, core_ranges=cores, initial_value=sem.initial_value
        )
        for sem in plan.semaphores
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=semaphores, cbs=cbs)


def _address(tensor) -> int:
    return 0 if tensor is None else tensor.buffer_address()


def _ttnn_dtype(name: str):
    ttnn = import_ttnn()
    return getattr(ttnn, name)
