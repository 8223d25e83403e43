"""The arguments of the FlashDecode kernels (``ops/decode/kernels/``): the one Python definition that produces them.

Compile-time arguments are positional, as upstream's kernels take theirs: ``READER_ARGS`` / ``COMPUTE_ARGS`` /
``WRITER_ARGS`` are each kernel's own args in order, and the kernel reads arg i into a constant named
``READER_ARGS[i]`` (``constexpr uint32_t Sk_t = get_compile_time_arg_val(15);``). ``tests/test_kernel_api.py`` checks
each kernel declares exactly its list, every name at its index; ``tests/test_descriptor_contents.py`` that the
descriptor passes the list's values and then the accessor args. :func:`decode_kernel_args` computes every name's value
once, so a name means the same value in every kernel that reads it. CB indices come from the planner's CB table
(:data:`ttflashdecode.plan.cbs.CB_INDEX`) as ``cb_<name>``; the tree's semaphore of round r is
``sem_partial_arrived + r`` (the planner's semaphore table).

Why positional: on a card's program-cache hit ``ttnn.generic_op`` copies the whole descriptor into the cached program,
and a named arg is a (string, value) pair. On tt_transformers' paged decode descriptor (203 named args over its five
kernels) the names were ~3.9 us of the 17 us generic_op's C++ op took a call on a mock N150 (docs/RUNTIME.md, "The
card path's host cost per decode call").

After a kernel's own args come the TensorAccessorArgs of the tensors it addresses through a ``TensorAccessor`` (the
wheel's ``TensorAccessorArgs<offset>`` reads them by position); their lengths vary with the tensor's layout, so they
come last and every own arg keeps its index. A tensor's own arg ``<tensor>_cta_offset`` is where its args start. An
absent optional tensor (no page table, mask or sinks; a height-sharded Q or output, which the kernels address per
shard core instead) gets K's offset: its accessor is declared over valid args and never used.

Runtime arguments are all common runtime args (``KernelDescriptor.common_runtime_args``, the same list on every core;
no per-core runtime args): on a card's program-cache hit ``ttnn.generic_op`` copies every per-core argument list of
the descriptor into the cached program, ~5 us per kernel on 64 cores on a mock N150, against one list per kernel for
common args (tests/runtime/host_cost.py, docs/RUNTIME.md). A kernel's common args are, in order:

1. the NOC coordinates (x, y) of the core of each shard of a height-sharded Q / output, shard by shard (reader /
   writer), or shared-prefix decode's slot map; their count is the kernel's arg ``work_args_at``;
2. the fields of :class:`ReaderCommonArgs` / :class:`ComputeCommonArgs` / :class:`WriterCommonArgs` (buffer
   addresses, then the run-time shape: :class:`RunShape`) in field order, which the kernels read in that order
   (checked by ``tests/test_kernel_api.py``);
3. the work table (:func:`core_work_table`): every core finds its own work in it by its logical coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass

from ttflashdecode.config import TILE
from ttflashdecode.ops.descriptors import (
    PLACEMENTS,
    AccessorArgs,
    KernelArgs,
    TensorPlacement,
    float_bits,
    ordered,
    runtime_arg_names,
    tensor_placement,
    work_table,
)
from ttflashdecode.plan.cbs import CB_INDEX, scale_in_exp
from ttflashdecode.plan.search import Q_ARRIVED

CB_ARGS = tuple(f"cb_{name}" for name in CB_INDEX)

# ---- compile-time args of each kernel, in order ---------------------------------------------------------------------
# What each name means (the values: decode_kernel_args).
DOCS = {
    "DHt": "K head dim in tiles",
    "vDHt": "V head dim in tiles",
    "Sk_t": "k_chunk_size in tiles",
    "PNHt": "Q row tiles of a group (q_len x heads per kv head, padded to whole tiles)",
    "q_tile_rows": "rows of the tiles holding a group's rows (Q, scores, statistics, O, output): 16 or 32",
    "q_len": "query tokens per user",
    "heads_per_group": "q heads per kv head",
    "NQt": "tile rows of a user's q heads in a TILE Q / output",
    "num_kv_heads": "kv heads",
    "n_q_heads": "q heads",
    "is_causal": "1: each query sees positions up to its own; 0: every position up to cur_pos",
    "scale_bits": "float32 bits of the softmax scale where compute fuses it into the approximate exp (exp_approx "
    "without a user mask or sinks: exp_tile_init's template argument); 0 elsewhere (the reader's scale tile has it)",
    "exp_approx": "1: the approximate exp as upstream's sdpa_decode runs it (scale fused, no clamp, packer ReLU)",
    "k_head_block": "head-dim tiles per K block",
    "v_head_block": "head-dim tiles per V column block",
    "is_paged": "1: K/V found through the page table",
    "tiles_per_block": "paged: position tiles per block",
    "share_cache": "1: every user reads user 0's K/V (and page-table row)",
    "users_per_page_row": "consecutive users sharing one page-table row, served as one group (spec_multi_pos_tiles; "
    "1: a row per user)",
    "use_attn_mask": "1: a user mask is streamed with every chunk",
    "mask_heads": "attn_mask dim 1: 1 or n_q_heads",
    "mask_is_bfp8": "1: attn_mask stored as bfloat8_b",
    "mask_rows_are_heads": "1: upstream's decode mask [b, 1, n_q_heads, kv_len] (rows are heads)",
    "use_sink": "1: attention sinks",
    "sink_rows_are_heads": "1: upstream's sink form [32k, 32] (head h at (h, 0), unscaled)",
    "v_from_k": "1: MLA, V is the first vDHt head-dim tiles of K's rows",
    "q_tiled": "1: Q in TILE layout, 0: ROW_MAJOR",
    "q_placement": "PLACEMENTS of Q",
    "q_shard_pages": "height-sharded Q: pages per shard",
    "q_page_bytes": "a Q page: a tile, or a row of head_dim",
    "q_whole_tiles": "1: the group's query rows are whole tile rows of Q (q_len 1, one kv head, TILE): read whole "
    "tiles",
    "out_tiled": "1: output in TILE layout, 0: ROW_MAJOR",
    "out_placement": "PLACEMENTS of the output",
    "out_shard_pages": "height-sharded output: pages per shard",
    "out_page_bytes": "an output page",
    "out_whole_tiles": "1: the group's rows are whole tile rows of the output (q_len 1, one kv head, TILE): write "
    "whole tiles",
    "sem_partial_arrived": "semaphore id of tree round 0 (round r: + r)",
    "merge_radix": "the reduction tree's radix F: a core merges up to F - 1 partials a round (plan.merge_radix)",
    "merge_select_tiles": "tiles of CB merge_select (plan.cbs.merge_select_tiles; 0: a merge takes one exp per "
    "partial)",
    "wait_for_cache_update": "fused update + attention: cache rows per group (K, V) written before the cur_pos chunk "
    "is read (0: no update in the program)",
    "sem_cache_updated": "fused update + attention: semaphore id the update's writers count written rows on",
    "q_multicast": "1: a group's root reads its Q and multicasts it to the group's cores in the rectangle from it "
    "over the group's whole rows or its cores in the root's row (factory.q_multicast_region; the far corner's NOC "
    "coordinates in the root's work entry, in its parent fields); those read no Q",
    "sem_q_arrived": "q_multicast: semaphore id the root sets on the group's other cores once their Q landed",
    "emit_partial": "1: the root writes its partial (O unnormalised, m, l) as rows of v_head_dim + 64 instead of the "
    "normalised output (shared-prefix decode's levels, merged later)",
    "slot_users": "1: a group's users are slots; slot s is user common runtime arg s (0xFFFFFFFF: a padding slot) for "
    "Q rows and output rows, and group of slots j reads page-table row common runtime arg batch + j (shared-prefix "
    "decode's prefix level)",
    "work_args_at": "common runtime args before the kernel's own (its shard table or slot map): where its "
    "ReaderCommonArgs / WriterCommonArgs start",
    "q_cta_offset": "index of the first of Q's TensorAccessorArgs among the kernel's compile-time args",
    "k_cta_offset": "... of K's",
    "v_cta_offset": "... of V's",
    "cur_pos_cta_offset": "... of cur_pos's",
    "page_table_cta_offset": "... of the page table's",
    "mask_cta_offset": "... of attn_mask's",
    "sink_cta_offset": "... of the attention sinks'",
    "out_cta_offset": "... of the output's",
    **{f"cb_{name}": f"index of CB {name} (plan/cbs.py)" for name in CB_INDEX},
}

# Arg i of a kernel is name i of its list: the kernel declares `constexpr ... <name> = get_compile_time_arg_val(i);`.
# A name added at the end is declared at the next index; one put between two others moves every later index.
READER_ARGS = (
    "cb_q",
    "cb_k",
    "cb_v",
    "cb_mask",
    "cb_scale",
    "cb_ones",
    "cb_merge_select",
    "merge_select_tiles",
    "cb_cur_pos",
    "cb_writer_cur_pos",
    "cb_page_table",
    "cb_sink",
    "cb_mask_stage",
    "DHt",
    "vDHt",
    "Sk_t",
    "PNHt",
    "q_tile_rows",
    "q_len",
    "heads_per_group",
    "NQt",
    "num_kv_heads",
    "n_q_heads",
    "is_causal",
    "k_head_block",
    "v_head_block",
    "is_paged",
    "tiles_per_block",
    "share_cache",
    "users_per_page_row",
    "use_attn_mask",
    "mask_heads",
    "mask_is_bfp8",
    "mask_rows_are_heads",
    "use_sink",
    "sink_rows_are_heads",
    "v_from_k",
    "wait_for_cache_update",
    "sem_cache_updated",
    "slot_users",
    "q_multicast",
    "sem_q_arrived",
    "work_args_at",
    "q_tiled",
    "q_placement",
    "q_shard_pages",
    "q_page_bytes",
    "q_whole_tiles",
    "q_cta_offset",
    "k_cta_offset",
    "v_cta_offset",
    "cur_pos_cta_offset",
    "page_table_cta_offset",
    "mask_cta_offset",
    "sink_cta_offset",
)
COMPUTE_ARGS = (
    "cb_q",
    "cb_k",
    "cb_v",
    "cb_mask",
    "cb_scale",
    "cb_ones",
    "cb_cur_pos",
    "cb_partial_in",
    "cb_partial_out",
    "cb_out",
    "cb_q_scaled",
    "cb_scores",
    "cb_probs",
    "cb_o",
    "cb_m",
    "cb_m_next",
    "cb_l",
    "cb_row_stat",
    "cb_alpha",
    "cb_merge_factors",
    "cb_sink",
    "DHt",
    "vDHt",
    "Sk_t",
    "PNHt",
    "q_tile_rows",
    "q_len",
    "num_kv_heads",
    "users_per_page_row",
    "exp_approx",
    "scale_bits",
    "use_attn_mask",
    "use_sink",
    "is_causal",
    "emit_partial",
    "merge_radix",
    "cb_merge_select",
    "cb_merge_rows",
    "merge_select_tiles",
    "k_head_block",
    "v_head_block",
)
WRITER_ARGS = (
    "cb_partial_in",
    "cb_partial_out",
    "cb_writer_cur_pos",
    "cb_zeros",
    "cb_out",
    "vDHt",
    "PNHt",
    "q_tile_rows",
    "Sk_t",
    "q_len",
    "heads_per_group",
    "NQt",
    "num_kv_heads",
    "n_q_heads",
    "users_per_page_row",
    "sem_partial_arrived",
    "merge_radix",
    "out_placement",
    "out_shard_pages",
    "out_tiled",
    "out_page_bytes",
    "out_cta_offset",
    "out_whole_tiles",
    "emit_partial",
    "slot_users",
    "work_args_at",
)


# ---- runtime args: common runtime args, positional, in field order ---------------------------------------------------
# Every kernel takes the work of its core from the work table: first_group, num_groups (the consecutive groups it
# serves, group id = batch * n_kv_heads + kv_head), core_index (its index among the cores of each group; 0 is the root
# reducer), num_cores_per_head (cores sharing each group; 1: no reduction) and the NOC coordinates of the core it sends
# its partial to (the writer's; 0, 0 for a root).


# The shape quantities that size no buffer and unroll no loop are common runtime args, not compile-time args: they
# follow the cache (its length, the paged block pool, the batch, the window, the scale), and as compile-time args
# every distinct value was another build of all three kernels (the emulator's host compile of the compute kernel
# alone is ~8 CPU s, docs/EMULATOR_SPEED.md). Compile-time stays what shapes code: tile counts of a chunk and of the
# head dims, q rows, CB indices and formats, placements, feature flags, and the scale where the approximate exp takes
# it as a template argument (compute's scale_bits).
@dataclass(frozen=True)
class RunShape:
    """The run-time shape, computed once (:func:`decode_kernel_args`); each kernel's common args take the fields
    they name (:func:`shape_fields`)."""

    batch: int  # users
    kv_len: int  # cur_pos must be below it: the logical cache positions per user (DecodeShapes.position_limit: any
    # int32 position on a ring cache with a sliding window, the ring's length on one without)
    St: int  # cache positions per user in tiles (tile-padded)
    sliding_window: int  # positions (0: none)
    scale_bits: int  # float32 bits of the softmax scale
    num_blocks: int  # paged: blocks of the K/V tensors (page-table entries past it skip the user); 0 unpaged
    ring_blocks: int  # paged ring cache (cache_position_modulo / block_size; 0: none): position tile t is found in
    # page-table slot (t / tiles_per_block) % ring_blocks


@dataclass(frozen=True)
class ReaderCommonArgs:
    """The reader's buffer addresses (interleaved: the address in every bank; a height-sharded Q: its L1 address on
    every shard core) and the run-time shape, after the shard table (``work_args_at`` args) and before the work
    table."""

    q_addr: int
    k_addr: int
    v_addr: int
    cur_pos_addr: int
    page_table_addr: int  # 0 unless paged
    mask_addr: int  # 0 without attn_mask
    sink_addr: int  # 0 without attention sinks
    batch: int
    kv_len: int
    St: int
    sliding_window: int
    scale_bits: int
    num_blocks: int
    ring_blocks: int


@dataclass(frozen=True)
class ComputeCommonArgs:
    """The compute kernel's run-time shape, before the work table."""

    sliding_window: int


@dataclass(frozen=True)
class WriterCommonArgs:
    """The writer's output address and run-time shape, after the shard table (``work_args_at`` args) and before the
    work table."""

    out_addr: int
    batch: int
    sliding_window: int


def shape_fields(shape: RunShape, kind: type) -> dict[str, int]:
    """The fields of ``shape`` that the common-args dataclass ``kind`` takes, by name."""
    return {name: getattr(shape, name) for name in runtime_arg_names(kind) if hasattr(shape, name)}


@dataclass(frozen=True)
class CoreWork:
    """One core's entry of the work table."""

    first_group: int
    num_groups: int
    core_index: int
    num_cores_per_head: int
    # NOC coordinates of the core this one sends its partial to. A root sends none: with q_multicast its fields hold
    # the far corner of the rectangle it multicasts Q to (factory.q_multicast_region), else 0, 0.
    parent_noc_x: int = 0
    parent_noc_y: int = 0


# Words per core of the work table; flash_decode_common.hpp's core_work reads them so.
WORK_ENTRY_WORDS = 2


def core_work_table(work: dict[tuple[int, int], CoreWork]) -> list[int]:
    """The work table (:func:`~ttflashdecode.ops.descriptors.work_table`) of the cores ``work`` maps (logical (x, y)
    -> their work): two words a core, ``first_group | num_groups << 16`` and
    ``core_index | num_cores_per_head << 8 | parent_noc_x << 16 | parent_noc_y << 24``."""
    entries = {}
    for (x, y), w in work.items():
        fields16 = (w.first_group, w.num_groups)
        fields8 = (w.core_index, w.num_cores_per_head, w.parent_noc_x, w.parent_noc_y)
        if any(not 0 <= v < 1 << 16 for v in fields16) or any(not 0 <= v < 1 << 8 for v in fields8):
            raise AssertionError(f"core ({x}, {y}): work {w} does not fit the work table's fields (16, 16, 8 x 4 bits)")
        entries[(x, y)] = (
            w.first_group | w.num_groups << 16,
            w.core_index | w.num_cores_per_head << 8 | w.parent_noc_x << 16 | w.parent_noc_y << 24,
        )
    return work_table(entries, WORK_ENTRY_WORDS)


def is_upstream_mask(mask, shapes) -> bool:
    """Upstream's decode mask ``[1, b, n_q_heads, kv_len]`` or ``[b, 1, n_q_heads, kv_len]`` (q_len 1; its rows are
    the heads, the same tiles either way), not ours ``[b, 1 or n_q_heads, q_len, kv_len]``. With one q head the forms
    are the same."""
    dims = tuple(int(d) for d in mask.shape)
    return (
        shapes.q_len == 1 and shapes.n_q_heads > 1 and dims[2] == shapes.n_q_heads and dims[0] * dims[1] == shapes.batch
    )


# ---- the FlashDecode kernels' compile-time args ----------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeKernelArgs:
    reader: KernelArgs
    compute: KernelArgs
    writer: KernelArgs
    q_at: TensorPlacement
    out_at: TensorPlacement
    shape: RunShape  # the common runtime args' shape fields


def decode_kernel_args(
    plan,
    buffers,
    *,
    exp_approx: bool,
    scale: float,
    wait_for_cache_update: int = 0,
    sem_cache_updated: int = 0,
    emit_partial: bool = False,
    slot_users: bool = False,
    q_multicast: bool = False,
) -> DecodeKernelArgs:
    """The compile-time args of the reader, compute and writer for ``plan`` over ``buffers``
    (:class:`ttflashdecode.ops.decode.factory.DecodeBuffers`): every value computed once, here.
    ``wait_for_cache_update`` and ``sem_cache_updated``: a fused cache update's rows per group and its semaphore
    (:mod:`ttflashdecode.ops.fused`); 0 without one. ``emit_partial`` / ``slot_users``: shared-prefix decode's levels
    (:mod:`ttflashdecode.ops.shared_prefix`): the root writes its partial instead of the output; a group's users are
    slots mapped to users by the reader's and writer's common runtime args. ``q_multicast``: each group's root
    multicasts the group's Q to its other cores (the factory checks the groups are rectangles)."""
    s = plan.shapes
    q_at, out_at = tensor_placement(buffers.q), tensor_placement(buffers.out)
    sem_q_arrived = next((sem.id for sem in plan.semaphores if sem.name == Q_ARRIVED), 0)
    if q_multicast and not any(sem.name == Q_ARRIVED for sem in plan.semaphores):
        raise AssertionError("q_multicast needs the plan's q_arrived semaphore (groups of more than one core)")
    # one per tree round; the writer takes round r's as first + r
    sem_ids = [sem.id for sem in plan.semaphores if sem.name != Q_ARRIVED]
    first_sem = sem_ids[0] if sem_ids else 0
    if sem_ids != list(range(first_sem, first_sem + len(sem_ids))):
        raise AssertionError(f"the tree's semaphores must have consecutive ids (round r = first + r), got {sem_ids}")
    # One group a user (q_len 1, one kv head): the group owns whole tile rows of a TILE Q and output, padding included.
    # Users sharing a page-table row (one group) own whole tiles only when their heads fill them (no padding between).
    one_group_a_user = s.q_len == 1 and s.n_kv_heads == 1 and (s.users_per_page_row == 1 or s.n_q_heads % TILE == 0)
    # A partial's rows are wider than compute's O block, and mapped slots are gathered row by row.
    whole_q_tiles = one_group_a_user and not slot_users
    whole_out_tiles = one_group_a_user and not (slot_users or emit_partial)
    values = {
        "DHt": s.DHt,
        "vDHt": s.vDHt,
        "Sk_t": plan.k_chunk_size // TILE,
        "PNHt": s.PNHt,
        "q_tile_rows": s.q_tile_rows,
        "q_len": s.q_len,
        "heads_per_group": s.q_heads_per_kv,
        "NQt": -(-s.n_q_heads // TILE),
        "num_kv_heads": s.n_kv_heads,
        "n_q_heads": s.n_q_heads,
        "is_causal": int(s.is_causal),
        "scale_bits": float_bits(scale) if scale_in_exp(s, exp_approx) else 0,
        "exp_approx": int(exp_approx),
        "k_head_block": plan.k_head_block,
        "v_head_block": plan.v_head_block,
        "is_paged": int(s.is_paged),
        "tiles_per_block": (s.block_size or TILE) // TILE,
        "share_cache": int(s.share_cache),
        "users_per_page_row": s.users_per_page_row,
        "use_attn_mask": int(s.attn_mask_heads > 0),
        "mask_heads": max(s.attn_mask_heads, 1),
        "mask_is_bfp8": int(s.attn_mask_dtype == "bfloat8_b"),
        "mask_rows_are_heads": int(buffers.attn_mask is not None and is_upstream_mask(buffers.attn_mask, s)),
        "use_sink": int(s.has_attention_sink),
        "sink_rows_are_heads": int(buffers.attention_sink is not None and int(buffers.attention_sink.shape[0]) != 1),
        "v_from_k": int(s.v_from_k),
        "q_tiled": int(q_at.tiled),
        "q_placement": PLACEMENTS[q_at.placement],
        "q_shard_pages": q_at.shard_pages,
        "q_page_bytes": q_at.page_bytes,
        "q_whole_tiles": int(whole_q_tiles and q_at.tiled),
        "out_tiled": int(out_at.tiled),
        "out_placement": PLACEMENTS[out_at.placement],
        "out_shard_pages": out_at.shard_pages,
        "out_page_bytes": out_at.page_bytes,
        "out_whole_tiles": int(whole_out_tiles and out_at.tiled),
        "sem_partial_arrived": first_sem,
        "merge_radix": plan.merge_radix,
        "merge_select_tiles": next((cb.num_pages for cb in plan.cbs if cb.name == "merge_select"), 0),
        "wait_for_cache_update": wait_for_cache_update,
        "sem_cache_updated": sem_cache_updated,
        "q_multicast": int(q_multicast),
        "sem_q_arrived": sem_q_arrived,
        "emit_partial": int(emit_partial),
        "slot_users": int(slot_users),
        **{f"cb_{name}": index for name, index in CB_INDEX.items()},
    }
    # The common args before each kernel's own (program_factory.build_program lays them out and checks these counts):
    # shared-prefix decode's slot map (the writer: a user per slot; the reader: those, then a page-table row per group
    # of slots), else the NOC coordinates (x, y) of each shard of a height-sharded Q / output.
    reader_values, writer_values = dict(values), dict(values)
    if slot_users:
        reader_values["work_args_at"] = s.batch + s.batch // s.users_per_page_row
        writer_values["work_args_at"] = s.batch
    else:
        reader_values["work_args_at"] = 2 * len(q_at.shard_cores)
        writer_values["work_args_at"] = 2 * len(out_at.shard_cores)

    reader_accessors = AccessorArgs()
    reader_accessors.add("k", buffers.k)
    reader_accessors.add("v", buffers.v)
    reader_accessors.add("q", None if q_at.sharded else buffers.q, absent_like="k")
    reader_accessors.add("cur_pos", buffers.cur_pos)
    reader_accessors.add("page_table", buffers.page_table, absent_like="k")
    reader_accessors.add("mask", buffers.attn_mask, absent_like="k")
    reader_accessors.add("sink", buffers.attention_sink, absent_like="k")
    writer_accessors = AccessorArgs()
    if out_at.sharded:  # no accessor of its own: declared over K's args, never used
        writer_accessors.add("out", buffers.k)
    else:
        writer_accessors.add("out", buffers.out)
    return DecodeKernelArgs(
        reader=ordered(reader_values, READER_ARGS, reader_accessors),
        compute=ordered(values, COMPUTE_ARGS),
        writer=ordered(writer_values, WRITER_ARGS, writer_accessors),
        q_at=q_at,
        out_at=out_at,
        shape=RunShape(
            batch=s.batch,
            kv_len=s.position_limit,
            St=s.kv_len // TILE,
            sliding_window=s.sliding_window_size,
            scale_bits=float_bits(scale),
            num_blocks=int(buffers.k.shape[0]) if s.is_paged else 0,
            ring_blocks=s.ring_len // s.block_size if s.ring_len else 0,
        ),
    )
