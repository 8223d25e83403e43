"""The circular buffers of the FlashDecode kernels and the L1 budget they must fit in.

:func:`circular_buffers` is the one table of CB indices, sizes and formats: the program factory allocates from it
and the plan search (:mod:`ttflashdecode.plan.search`) shrinks chunks and head blocks until :func:`check_l1` passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ttflashdecode.config import TILE
from ttflashdecode.plan.rules import MERGE_SIDE_BY_SIDE_MAX_RADIX
from ttflashdecode.plan.shapes import TILE_BYTES

if TYPE_CHECKING:
    from ttflashdecode.plan.shapes import DecodeShapes

# ---- hardware figures (docs: /work/shared/WORMHOLE.md, ttnn 0.81.1 wormhole dev_mem_map.h) ------

# MEM_L1_SIZE = 1464 KiB per Tensix core on Wormhole.
L1_SIZE_BYTES = 1_499_136
# Not all of it is ours: the 35,168 B below MEM_MAP_END (the wheel's wormhole dev_mem_map.h) hold
# firmware, mailboxes and fabric tables, and the kernel-config ring buffer above it (69 KiB by
# default) holds the kernel binaries, runtime args, CB and semaphore descriptors of the running
# program. Circular buffers start after both, as in the emulator (ttemu/arch.py), so the planner
# refuses anything that would only fit by eating into them.
L1_RESERVED_BYTES = 35_168 + 69 * 1024
L1_BUDGET_BYTES = L1_SIZE_BYTES - L1_RESERVED_BYTES


class L1OverflowError(ValueError):
    """The circular buffers of a plan do not fit in a core's L1 budget."""

    def __init__(self, message: str, *, needed: int, budget: int, largest: tuple[CBPlan, ...]):
        super().__init__(message)
        self.needed = needed
        self.budget = budget
        self.over = needed - budget
        self.largest = largest


# CB index of every buffer the kernels name, allocated by a plan or not: the kernels take these as the named
# compile-time args "cb_<name>" (ttflashdecode/ops/decode/args.py), so no kernel declares a CB index of its own.
CB_INDEX = {
    "q": 0,
    "k": 1,
    "v": 2,
    "mask": 3,
    "scale": 4,
    "ones": 5,
    "cur_pos": 6,
    "merge_factors": 7,
    "partial_in": 8,
    "partial_out": 9,
    "writer_cur_pos": 10,
    "zeros": 11,
    "page_table": 12,
    "sink": 13,
    "m_next": 14,
    "mask_stage": 15,
    "out": 16,
    "merge_select": 17,
    "merge_rows": 18,
    "q_scaled": 24,
    "scores": 25,
    "probs": 26,
    "o": 27,
    "m": 28,
    "l": 29,
    "row_stat": 30,
    "alpha": 31,
}


@dataclass(frozen=True)
class CBPlan:
    """One circular buffer, identical (same index, size and L1 address) on every core."""

    index: int  # CB id: c_<index>
    name: str
    purpose: str
    page_size: int  # bytes: one tile of data_format
    num_pages: int
    data_format: str
    tile_rows: int = TILE  # 16: a 16 x 32 tile (shapes.q_tile_rows), else a 32 x 32 one

    @property
    def total_bytes(self) -> int:
        return self.page_size * self.num_pages


def circular_buffers(
    shapes: DecodeShapes,
    k_chunk_size: int,
    rounds: int,
    *,
    fp32_dest_acc: bool = False,
    masked: bool = True,
    k_head_block: int | None = None,
    v_head_block: int | None = None,
    merge_radix: int = 2,
    partial_slots: int | None = None,
    exp_approx: bool = False,
) -> tuple[CBPlan, ...]:
    """The CBs of the FlashDecode kernels (``ops/decode/kernels/``), one entry per CB index they use.

    ``k_head_block`` / ``v_head_block`` (head-dim tiles, default the whole head): the reader streams K one
    position tile at a time in blocks of ``k_head_block`` head-dim tiles, and V one column block of
    ``v_head_block`` tiles of the whole chunk at a time, so the K and V buffers, the largest of the program,
    shrink with the blocks rather than grow with head_dim.

    ``masked``: the kernels mask the last chunk past cur_pos (cur_pos is rarely chunk-aligned) and
    the first chunk before a window's start, so a mask CB is needed unless every chunk is full.
    Intermediates (scores, accumulators, statistics, partials) are float32 when the compute kernel
    accumulates in fp32, else bfloat16. Running O and l keep the old block at the front and the new
    one behind it while it is updated, so those CBs hold two blocks; compute only ever reads the
    front block of them. The running max is read old and new at once (alpha = exp(m_old - m_new)),
    so it ping-pongs between two one-block CBs (m, m_next) instead: compute unpacks a tile at
    read pointer + index with no wrap-around, so a CB read at an index past its front block must
    always be pushed and popped in blocks that tile its capacity. Zero-page buffers
    (the partials when rounds == 0) are left out rather than allocated empty.

    ``merge_radix`` (F) and ``partial_slots``: the reduction tree's radix and the partials a core of it receives at
    most (``rules.partial_slots``; default ``rounds``, the binary tree's root). A core merges a round's up to F - 1
    partials in one pass, so it keeps F row factors per query-row tile. With 16-bit intermediates it takes a merge's
    row statistics for all of them at once (``merge_select_tiles``: the constant tiles that place each partial's max
    in a column of one tile and take each factor back out).

    ``exp_approx``: the softmax's approximate exp (the config's resolved ``exp_approx_mode``); where it takes the
    scale itself (:func:`scale_in_exp`) compute multiplies Q by nothing and q_scaled is left out.

    Only the CBs the kernels touch for this configuration are returned: ``ttnn.generic_op`` copies every CB of the
    descriptor on each launch, a program-cache hit too (~0.1 us each on a mock N150, tests/runtime/host_cost.py),
    and a kernel touching a CB the program does not create faults in the emulator (tests/test_descriptor_contents.py).
    """
    Sk_t = k_chunk_size // TILE
    PNHt, DHt, vDHt = shapes.PNHt, shapes.DHt, shapes.vDHt
    k_block = DHt if k_head_block is None else k_head_block
    v_block = vDHt if v_head_block is None else v_head_block
    im = "float32" if fp32_dest_acc else "bfloat16"
    o_tiles = PNHt * vDHt
    # A partial is the unnormalised O, the running max m and the running sum l of one core.
    partial_tiles = o_tiles + 2 * PNHt
    # cur_pos of every user: one row-major int32 page, padded to the device's DRAM read alignment (the reader
    # fetches the aligned page: 32 B on Wormhole, 64 B on Blackhole).
    al = shapes.dram_alignment
    cur_pos_page = -(-shapes.batch * 4 // al) * al
    page_table_page = -(-(shapes.max_blocks_per_user or 0) * 4 // al) * al
    masked = masked or shapes.attn_mask_heads > 0
    slots = rounds if partial_slots is None else partial_slots
    # The root merges one (m, l) partial after the tree: the attention sinks, or with a user mask the score floor
    # (flash_decode_common.hpp: SCORE_FLOOR) that turns a row the mask hides entirely into zeros.
    sink_partial = shapes.has_attention_sink or shapes.attn_mask_heads > 0
    # Row-shaped tiles (Q, scores, statistics, O, partials, output) have q_tile_rows rows; K and V full tiles.
    rows = shapes.q_tile_rows

    def row_tile(fmt: str) -> int:
        return TILE_BYTES[fmt] * rows // TILE

    # K and V hold exactly two of the reader's fetches each: it opens the next fetch in the half the current one does
    # not use (reader_flash_decode.cpp, open_fetch).
    specs = [
        ("q", "query rows of the group", row_tile(shapes.q_dtype), PNHt * DHt, shapes.q_dtype),
        (
            "k",
            "K blocks (position tile x k_head_block), two chunks deep",
            TILE_BYTES[shapes.k_dtype],
            2 * Sk_t * k_block,
            shapes.k_dtype,
        ),
        (
            "v",
            "V blocks (chunk x v_head_block), double-buffered",
            TILE_BYTES[shapes.v_dtype],
            2 * Sk_t * v_block,
            shapes.v_dtype,
        ),
        (
            "mask",
            "causal/window edge mask of one chunk",
            row_tile("bfloat16"),
            PNHt * Sk_t if masked else 0,
            "bfloat16",
        ),
        ("scale", "softmax scale, broadcast as a scalar", row_tile("bfloat16"), 1, "bfloat16"),
        ("ones", "reduce scaler (all ones)", row_tile("bfloat16"), 1, "bfloat16"),
        ("cur_pos", "cur_pos of every user, for compute", cur_pos_page, 1, "uint32"),
        (
            "merge_factors",
            "a merge's row factors exp(m - m_new), exp(m_i - m_new) for each partial i of the round",
            row_tile(im),
            max(merge_radix if rounds else 0, 2 if sink_partial else 0) * PNHt,
            im,
        ),
        ("partial_in", "one slot [O, m, l] per partial received", row_tile(im), slots * partial_tiles, im),
        ("partial_out", "this core's [O, m, l] to send", row_tile(im), partial_tiles if rounds else 0, im),
        ("writer_cur_pos", "the reader's checked cur_pos of every user, for the writer", cur_pos_page, 1, "uint32"),
        ("zeros", "zero rows written for a skipped user", TILE_BYTES[shapes.out_dtype], 1, shapes.out_dtype),
        (
            "page_table",
            "the user's page-table row (paged cache)",
            page_table_page,
            1 if shapes.is_paged else 0,
            "uint32",
        ),
        (
            "sink",
            "attention sinks (or the score floor) as a partial: m tiles, then l tiles",
            row_tile("bfloat16"),
            2 * PNHt if sink_partial else 0,
            "bfloat16",
        ),
        ("m_next", "new running max, ping-pongs with m", row_tile(im), PNHt, im),
        (
            "mask_stage",
            "one bfloat8_b attn_mask tile, unpacked row by row into mask",
            TILE_BYTES["bfloat8_b"],
            1 if shapes.attn_mask_heads and shapes.attn_mask_dtype == "bfloat8_b" else 0,
            "bfloat8_b",
        ),
        ("out", "normalised output rows", row_tile(shapes.out_dtype), o_tiles, shapes.out_dtype),
        ("q_scaled", "scale * Q", row_tile(im), 0 if scale_in_exp(shapes, exp_approx) else PNHt * DHt, im),
        ("scores", "scores S of one chunk", row_tile(im), PNHt * Sk_t, im),
        ("probs", "exp(S - m) of one chunk", row_tile(im), PNHt * Sk_t, im),
        ("o", "output accumulator, old and new block", row_tile(im), 2 * o_tiles, im),
        ("m", "running row max, ping-pongs with m_next", row_tile(im), PNHt, im),
        ("l", "running row sum, old and new block", row_tile(im), 2 * PNHt, im),
        ("row_stat", "row max / row sum of one chunk, 1/l", row_tile(im), PNHt, im),
        ("alpha", "rescale factors exp(m_old - m_new)", row_tile(im), 2 * PNHt, im),
    ]
    merging = rounds > 0 or sink_partial
    select = merge_select_tiles(max(merge_radix if rounds else 0, 2 if sink_partial else 0), fp32_dest_acc)
    specs[CB_INDEX["out"] + 1 : CB_INDEX["out"] + 1] = [
        (
            "merge_select",
            "one-hot bfloat16 tiles placing each partial's max in a column of one tile, and its tails",
            TILE_BYTES["bfloat16"],
            select if merging else 0,
            "bfloat16",
        ),
        (
            "merge_rows",
            "a merge's maxima side by side, then their factors exp(m_i - m_new) side by side",
            row_tile(im),
            2 * PNHt if merging and select else 0,
            im,
        ),
    ]
    assert [name for name, *_ in specs] == list(CB_INDEX), "one spec per CB_INDEX entry, in index order"
    full_tiles = {"k", "v", "cur_pos", "writer_cur_pos", "zeros", "page_table", "mask_stage", "merge_select"}
    return tuple(
        CBPlan(CB_INDEX[name], name, purpose, page_size, pages, fmt, TILE if name in full_tiles else rows)
        for name, purpose, page_size, pages, fmt in specs
        if pages > 0
    )


def scale_in_exp(shapes: DecodeShapes, exp_approx: bool) -> bool:
    """Whether the approximate exp takes the softmax scale as its multiplier (compute_flash_decode.cpp:
    scale_in_exp), so Q is not scaled first: not with a user mask or attention sinks, whose values are in softmax
    units."""
    return exp_approx and shapes.attn_mask_heads == 0 and not shapes.has_attention_sink


def merge_select_tiles(merge_radix: int, fp32_dest_acc: bool = False) -> int:
    """Constant tiles of a merge that takes its row statistics side by side (compute_flash_decode.cpp,
    merge_row_factors): P_k, one-hot at (0, k) for k < F, then T_c for c = 1..F-1, ones at (0, 0) and (0, c+1..31);
    2F - 1 in all. 0 with float32 intermediates (they keep one exp per partial: the placing matmul would round a
    float32 max to the FPU's operand width), or when a merge has more than 16 partials with its own (its factors must
    fit one face's 16 columns)."""
    if fp32_dest_acc or merge_radix < 2 or merge_radix > MERGE_SIDE_BY_SIDE_MAX_RADIX:
        return 0
    return 2 * merge_radix - 1


def l1_bytes(cbs: tuple[CBPlan, ...]) -> int:
    return sum(cb.total_bytes for cb in cbs)


def check_l1(
    cbs: tuple[CBPlan, ...], k_chunk_size: int, budget: int = L1_BUDGET_BYTES, advice: str | None = None
) -> int:
    """Total CB bytes per core; L1OverflowError naming the largest buffers if over ``budget`` and ``advice`` (what
    would make them fit; default: a smaller k_chunk_size)."""
    needed = l1_bytes(cbs)
    if needed <= budget:
        return needed
    largest = tuple(sorted(cbs, key=lambda cb: cb.total_bytes, reverse=True)[:3])
    names = ", ".join(
        f"c_{cb.index} {cb.name} ({cb.num_pages} x {cb.page_size} B {cb.data_format} = {cb.total_bytes:,} B)"
        for cb in largest
    )
    raise L1OverflowError(
        f"circular buffers need {needed:,} B of L1 per core, {needed - budget:,} B over the budget of "
        f"{budget:,} B; largest: {names}; {advice or f'try a smaller k_chunk_size (now {k_chunk_size})'}",
        needed=needed,
        budget=budget,
        largest=largest,
    )
