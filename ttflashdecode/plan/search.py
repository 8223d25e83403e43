"""Core assignment and the plan search: which core serves which (batch, kv head) group, its place in the
reduction tree, and the k_chunk_size / head blocks / group size that fit L1.

It implements docs/DESIGN.md exactly:

* A group is one (batch b, kv head h), numbered ``g = b * n_kv_heads + h``. Cores of the program grid are numbered
  row-major (x fastest). ``num_cores_per_head = min(max_cores_per_head_batch, num_cores // num_groups)`` and group g
  takes the contiguous cores ``[g*N, (g+1)*N)``; leftover cores are idle. With a derived k_chunk_size (config 0) that N
  is a maximum: the planner halves it while each core would read fewer than ``MIN_POSITIONS_PER_CORE`` positions
  (``rules.default_num_cores_per_head``). When there are more groups than cores, every core serves
  ``ceil(num_groups / num_cores)`` consecutive groups alone (no reduction); the plan then records
  ``num_cores_per_head = 1`` (DESIGN.md's formula gives 0 there, meaning "no split").
* The chunk rule and the reduction tree are :mod:`ttflashdecode.plan.rules`; the circular buffers and the L1
  budget are :mod:`ttflashdecode.plan.cbs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ttflashdecode.config import DEFAULT_GRID, ProgramConfig, is_chosen
from ttflashdecode.plan.cbs import L1_BUDGET_BYTES, CBPlan, check_l1, circular_buffers, l1_bytes
from ttflashdecode.plan.rules import (
    MIN_K_CHUNK_SIZE,
    active_cores,
    children_in_round,
    chunk_range,
    default_k_chunk_size,
    default_merge_radix,
    default_num_cores_per_head,
    expected_partials,
    partial_slots,
    send_round,
    send_slot,
    tree_parent,
    tree_rounds,
)
from ttflashdecode.plan.shapes import DecodeShapes, is_int

ROLES = ("reducer", "worker", "idle")

# DST tiles one tile_regs_acquire section holds (tt-metal dest_helpers.hpp, half-sync): 8, or 4 with fp32 DST.
# Streaming K in head-dim blocks keeps the PNHt score tiles of one position tile in DST across blocks.
DST_TILES = {False: 8, True: 4}


def _check_grid(name: str, grid) -> tuple[int, int]:
    if not isinstance(grid, (tuple, list)) or len(grid) != 2 or not all(is_int(v) and v > 0 for v in grid):
        raise ValueError(f"{name}={grid!r}: expected (x, y), two positive integers")
    return (grid[0], grid[1])


# ---- semaphores --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SemaphorePlan:
    id: int
    name: str
    initial_value: int
    purpose: str


def tree_semaphores(rounds: int) -> tuple[SemaphorePlan, ...]:
    """One semaphore per reduction round on every core: a sender increments its parent's semaphore of
    the round after its partial has landed in its slot, and the parent waits for it to count the round's
    active children. Per-round semaphores (not one counter) keep an early arrival of a later round from
    being taken for an earlier one."""
    return tuple(
        SemaphorePlan(
            id=r,
            name=f"partial_arrived_round_{r}",
            initial_value=0,
            purpose=f"counts the round-{r} children whose partials are in their slots of partial_in",
        )
        for r in range(rounds)
    )


# The semaphore a group's root sets on the group's other cores once the Q rows it multicast landed there (the decode
# factory multicasts Q when every group of more than one core is a rectangle of cores).
Q_ARRIVED = "q_arrived"


def q_semaphore(id: int) -> SemaphorePlan:
    return SemaphorePlan(
        id=id, name=Q_ARRIVED, initial_value=0, purpose="set by the group's root once its Q multicast landed here"
    )


# ---- per-core assignment -----------------------------------------------------------------------


@dataclass(frozen=True)
class TreeReceive:
    """In ``round`` this core may merge the partial of group core ``from_index`` (in slot ``slot``).

    Taken at run time only if ``from_index < active_cores(cur_pos, ...)``.
    """

    round: int
    from_index: int
    from_core: tuple[int, int]
    slot: int = 0


@dataclass(frozen=True)
class TreeSend:
    """In ``round`` this core writes its partial into slot ``slot`` of ``to_core``'s partial_in."""

    round: int
    to_index: int
    to_core: tuple[int, int]
    slot: int


@dataclass(frozen=True)
class CoreAssignment:
    core: tuple[int, int]  # logical (x, y)
    core_id: int  # row-major number, x fastest
    role: str  # "reducer" | "worker" | "idle"
    groups: tuple[tuple[int, int], ...]  # (batch, kv_head) served, one after another
    index_in_group: int | None  # None when idle
    num_cores_per_head: int
    root: tuple[int, int] | None  # core of index 0 in this core's group; None when idle
    receives: tuple[TreeReceive, ...] = ()
    send: TreeSend | None = None
    merge_radix: int = 2  # the group's reduction tree's radix F

    def expected_partials(self, num_active: int) -> int:
        if self.index_in_group is None:
            return 0
        return expected_partials(self.index_in_group, num_active, self.merge_radix)


@dataclass(frozen=True)
class DecodePlan:
    shapes: DecodeShapes
    config: ProgramConfig  # k_chunk_size resolved (never 0)
    grid: tuple[int, int]  # device grid
    num_groups: int
    num_cores_per_head: int
    groups_per_core: int
    rounds: int
    cores: tuple[CoreAssignment, ...]  # every core of the program grid, by core_id
    cbs: tuple[CBPlan, ...]
    l1_bytes: int
    semaphores: tuple[SemaphorePlan, ...]
    k_chunk_size_derived: bool  # True when the planner chose k_chunk_size
    k_head_block: int  # head-dim tiles per K block (divides DHt; DHt unless L1 needed smaller)
    v_head_block: int  # head-dim tiles per V column block (divides vDHt)
    l1_budget: int = L1_BUDGET_BYTES  # CB bytes per core the plan had to fit in
    merge_radix: int = 2  # the reduction tree's radix F: a core merges up to F - 1 partials a round

    @property
    def k_chunk_size(self) -> int:
        return self.config.k_chunk_size

    def core_at(self, x: int, y: int) -> CoreAssignment:
        gx, _ = self.config.compute_with_storage_grid_size
        return self.cores[y * gx + x]

    def group_cores(self, batch: int, kv_head: int) -> tuple[CoreAssignment, ...]:
        """The cores serving (batch, kv_head), ordered by index in the group."""
        members = [c for c in self.cores if (batch, kv_head) in c.groups]
        return tuple(sorted(members, key=lambda c: c.index_in_group))

    def cb(self, name: str) -> CBPlan:
        for cb in self.cbs:
            if cb.name == name:
                return cb
        raise KeyError(f"no circular buffer named {name!r}; have {', '.join(c.name for c in self.cbs)}")

    def chunk_range(self, cur_pos: int, core_index: int) -> tuple[int, int]:
        s = self.shapes
        return chunk_range(
            cur_pos, self.k_chunk_size, core_index, self.num_cores_per_head, s.q_len, s.sliding_window_size
        )

    def active_cores(self, cur_pos: int) -> int:
        s = self.shapes
        return active_cores(cur_pos, self.k_chunk_size, self.num_cores_per_head, s.q_len, s.sliding_window_size)

    def describe(self) -> str:
        s = self.shapes
        gx, gy = self.config.compute_with_storage_grid_size
        used = sum(c.role != "idle" for c in self.cores)
        kv = f"K {s.k_dtype}, V {s.v_dtype}"
        if s.is_paged:
            kv += f", paged {s.block_size}-position blocks"
        window = f", sliding window {s.sliding_window_size}" if s.sliding_window_size else ""
        if self.groups_per_core > 1:
            split = f"{self.groups_per_core} groups per core, no reduction"
        else:
            cores, rounds = _count(self.num_cores_per_head, "core"), _count(self.rounds, "reduction round")
            split = f"{cores} per group, {rounds}"
            if self.rounds:
                split += f" (radix {self.merge_radix})"
        sk_how = "derived" if self.k_chunk_size_derived else "from config"
        largest = max(self.cbs, key=lambda cb: cb.total_bytes)
        return "\n".join(
            [
                f"shapes: batch {s.batch} x {s.n_kv_heads} kv heads "
                f"({s.n_q_heads} q heads, G={s.q_heads_per_kv}), "
                f"head_dim {s.head_dim}, kv_len {s.kv_len}, {kv}{window}",
                f"grid: {gx}x{gy} of device {self.grid[0]}x{self.grid[1]}, {used} cores busy, "
                f"{len(self.cores) - used} idle",
                f"work: {_count(self.num_groups, '(batch, kv head) group')}, {split}",
                f"k_chunk_size: {self.k_chunk_size} ({sk_how}), {s.kv_len // self.k_chunk_size} chunks in the cache",
                f"head-dim blocks: K {self.k_head_block} of {s.DHt} tiles, V {self.v_head_block} of {s.vDHt} tiles"
                + (" (whole heads)" if (self.k_head_block, self.v_head_block) == (s.DHt, s.vDHt) else " (split-D)"),
                f"L1: {self.l1_bytes:,} of {self.l1_budget:,} B per core in {len(self.cbs)} CBs "
                f"(largest c_{largest.index} {largest.name} {largest.total_bytes:,} B)",
            ]
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _assign_cores(
    config: ProgramConfig, shapes: DecodeShapes, num_cores_per_head: int, groups_per_core: int, radix: int
) -> tuple[CoreAssignment, ...]:
    gx, _ = config.compute_with_storage_grid_size
    n_kv = shapes.n_kv_heads
    N = num_cores_per_head

    def coords(core_id: int) -> tuple[int, int]:
        return (core_id % gx, core_id // gx)

    def group_key(g: int) -> tuple[int, int]:
        # (batch, kv_head): groups are batch-major (batch: the page-table row when users share one)
        return divmod(g, n_kv)

    cores = []
    for core_id in range(config.num_cores):
        here = coords(core_id)
        if groups_per_core > 1:
            # More groups than cores: consecutive groups per core, each core its own root.
            gs = range(core_id * groups_per_core, min((core_id + 1) * groups_per_core, shapes.num_groups))
            if len(gs) == 0:
                cores.append(CoreAssignment(here, core_id, "idle", (), None, N, None))
            else:
                groups = tuple(group_key(g) for g in gs)
                cores.append(CoreAssignment(here, core_id, "reducer", groups, 0, N, here))
            continue
        g, i = divmod(core_id, N)
        if g >= shapes.num_groups:
            cores.append(CoreAssignment(here, core_id, "idle", (), None, N, None))
            continue
        base = g * N
        # Possible receives with the whole group active; at run time only those from active cores.
        receives = tuple(
            TreeReceive(r, j, coords(base + j), send_slot(j, radix))
            for r in range(tree_rounds(N, radix))
            for j in (i + d * radix**r for d in range(1, children_in_round(i, r, N, radix) + 1))
        )
        r = send_round(i, radix)
        to = None if r is None else tree_parent(i, radix)
        send = None if r is None else TreeSend(r, to, coords(base + to), slot=send_slot(i, radix))
        cores.append(
            CoreAssignment(
                here,
                core_id,
                "reducer" if i == 0 else "worker",
                (group_key(g),),
                i,
                N,
                coords(base),
                receives,
                send,
                radix,
            )
        )
    return tuple(cores)


def _l1_advice(shapes: DecodeShapes, k_chunk_size: int, fp32_dest_acc: bool) -> str:
    """What would make a plan fit once the planner has run out of ways: its head dims are tiled and its group is one
    core, so what is left grows with the group's query rows (q, q_scaled, o, out, scores: PNHt tiles each) and, for
    an explicit k_chunk_size above the minimum, with the chunk."""
    rows = shapes.group_rows
    fewer_tokens = ", or decode fewer tokens per call (q_len)" if shapes.q_len > 1 else ""
    hints = [
        f"fewer query rows per kv head (q_len x n_q_heads / n_kv_heads = {rows} rows, {shapes.PNHt} tiles, size the "
        f"q, q_scaled, o and out buffers): split the q heads over several calls or a mesh's chips{fewer_tokens}"
    ]
    if k_chunk_size > MIN_K_CHUNK_SIZE:
        hints.insert(0, f"a smaller k_chunk_size (now {k_chunk_size})")
    if fp32_dest_acc:
        hints.append("fp32_dest_acc_en=False (halves the intermediate buffers)")
    return "try " + "; or ".join(hints)


def plan(
    shapes: DecodeShapes,
    program_config=None,
    grid: tuple[int, int] | None = None,
    *,
    max_cur_pos: int | None = None,
    fp32_dest_acc: bool = False,
    masked: bool = True,
    l1_budget: int = L1_BUDGET_BYTES,
    merge_radix: int | None = None,
) -> DecodePlan:
    """Plan a decode call.

    shapes: the call's :class:`DecodeShapes`.
    program_config: ProgramConfig, ttnn.SDPAProgramConfig, a config name, or None (whole device
        grid, planner-chosen k_chunk_size).
    grid: the device's compute grid (x, y); default Wormhole N150's 8x8. The config's grid must fit.
    max_cur_pos: largest cur_pos of the batch if known; only refines a derived k_chunk_size.
    fp32_dest_acc: compute accumulates in fp32 (intermediate CBs become float32).
    masked: see :func:`circular_buffers`.
    l1_budget: CB bytes per core that may be used; less than the default when L1 buffers (an L1-sharded
        output) sit at the top of L1, since circular buffers must end below the lowest of them.
    merge_radix: the reduction tree's radix F (>= 2; a core merges up to F - 1 partials a round, so a group of N
        cores takes ceil(log_F N) rounds); None: :func:`rules.default_merge_radix`. It is a maximum: the plan halves it
        while the partial slots do not fit L1.

    Raises ValueError (naming the argument) for inconsistent inputs and L1OverflowError when the
    circular buffers cannot fit even after halving the tree's radix down to 2, a derived k_chunk_size down to 32 and
    then the group size (fewer reduction rounds, so fewer partial slots) down to one core.
    """
    if not isinstance(shapes, DecodeShapes):
        raise TypeError(f"shapes={shapes!r}: expected DecodeShapes")
    device_grid = _check_grid("grid", DEFAULT_GRID if grid is None else grid)
    config = ProgramConfig.coerce(program_config, default_grid=device_grid)
    if is_chosen(config):  # a chooser's config is only a request: planning it as the rule would hide that
        raise TypeError(
            f"program_config={program_config!r}: 'tune' and functions are resolved at the op's first call "
            "(ttflashdecode.tuning.plan_for), not by plan()"
        )
    gx, gy = config.compute_with_storage_grid_size
    if gx > device_grid[0] or gy > device_grid[1]:
        raise ValueError(f"compute_with_storage_grid_size={(gx, gy)}: larger than the device grid={device_grid}")
    if max_cur_pos is not None and (not is_int(max_cur_pos) or not -1 <= max_cur_pos < shapes.kv_len):
        raise ValueError(f"max_cur_pos={max_cur_pos!r}: expected -1..{shapes.kv_len - 1} (kv_len={shapes.kv_len})")
    if merge_radix is not None and (not is_int(merge_radix) or merge_radix < 2):
        raise ValueError(f"merge_radix={merge_radix!r}: expected an integer >= 2 (or None: the planner's choice)")

    num_cores, num_groups = config.num_cores, shapes.num_groups
    split = min(config.max_cores_per_head_batch, num_cores // num_groups)
    if split >= 1:
        num_cores_per_head, groups_per_core = split, 1
    else:
        num_cores_per_head, groups_per_core = 1, math.ceil(num_groups / num_cores)

    derived = config.k_chunk_size == 0
    if derived:
        # The planner chooses the chunking, so also how many of the allowed cores split a group (fewer when the
        # reads are too short for another tree round to pay; an explicit k_chunk_size keeps the config's split).
        if groups_per_core == 1:
            num_cores_per_head = default_num_cores_per_head(shapes, num_cores_per_head, max_cur_pos)
        k_chunk_size = default_k_chunk_size(shapes, num_cores_per_head, max_cur_pos, num_cores)
    else:
        k_chunk_size = config.k_chunk_size
        # Chunks must lie inside the cache: the kernels read whole chunks and only mask them.
        if shapes.kv_len % k_chunk_size:
            raise ValueError(f"k_chunk_size={k_chunk_size}: expected a divisor of kv_len={shapes.kv_len}")
    radix = (
        default_merge_radix(num_cores_per_head, shapes.vDHt, fp32_dest_acc, shapes.PNHt)
        if merge_radix is None
        else merge_radix
    )
    radix = max(2, min(radix, num_cores_per_head))  # a radix above N is N's one-round gather

    def cbs_for(k_head_block: int, v_head_block: int) -> tuple[CBPlan, ...]:
        return circular_buffers(
            shapes,
            k_chunk_size,
            tree_rounds(num_cores_per_head, radix),
            fp32_dest_acc=fp32_dest_acc,
            masked=masked,
            k_head_block=k_head_block,
            v_head_block=v_head_block,
            merge_radix=radix,
            partial_slots=partial_slots(num_cores_per_head, radix),
            exp_approx=config.exp_approx_mode,
        )

    # K blocks narrower than the head keep the scores of all PNHt row blocks in DST while they arrive. MLA copies V
    # out of whole K rows, so its K is never split.
    k_tileable = shapes.PNHt <= DST_TILES[fp32_dest_acc] and not shapes.v_from_k
    whole_heads = (shapes.DHt, shapes.vDHt)
    narrowest = (1 if k_tileable else shapes.DHt, 1)
    # What gives way when the buffers overflow L1, in order. First the tree's radix: its partial slots
    # (rules.partial_slots x [O, m, l]) grow with it, and a smaller one costs a round or two of the merge, where a
    # smaller chunk costs every read. A chosen chunk size is only a preference (an explicit one is the user's to
    # change). Then the head dimension is tiled (FFPA's split-D: the K and V buffers stop growing with head_dim), as
    # wide as still fits. max_cores_per_head_batch is a ceiling: with large head dims the partial slots dominate L1,
    # so a smaller group comes last.
    while True:
        if l1_bytes(cbs_for(*whole_heads)) <= l1_budget:
            head_blocks = whole_heads
            break
        if radix > 2:  # fewer partial slots for another round or two of the tree (3 // 2 would be a radix of 1)
            radix = max(2, radix // 2)
            continue
        if derived and k_chunk_size > MIN_K_CHUNK_SIZE:
            k_chunk_size //= 2
            continue
        if l1_bytes(cbs_for(*narrowest)) <= l1_budget:
            head_blocks = _widest_head_blocks(narrowest, whole_heads, k_tileable, cbs_for, l1_budget)
            break
        if num_cores_per_head > 1:
            num_cores_per_head //= 2
            radix = max(2, min(radix, num_cores_per_head))
            continue
        # raises, naming the largest buffers and what would shrink them
        check_l1(cbs_for(*narrowest), k_chunk_size, l1_budget, _l1_advice(shapes, k_chunk_size, fp32_dest_acc))
    cbs = cbs_for(*head_blocks)
    total = check_l1(cbs, k_chunk_size, l1_budget)
    k_head_block, v_head_block = head_blocks
    rounds = tree_rounds(num_cores_per_head, radix)

    return DecodePlan(
        shapes=shapes,
        config=replace(config, k_chunk_size=k_chunk_size),
        grid=device_grid,
        num_groups=num_groups,
        num_cores_per_head=num_cores_per_head,
        groups_per_core=groups_per_core,
        rounds=rounds,
        cores=_assign_cores(config, shapes, num_cores_per_head, groups_per_core, radix),
        cbs=cbs,
        l1_bytes=total,
        semaphores=tree_semaphores(rounds) + ((q_semaphore(rounds),) if num_cores_per_head > 1 else ()),
        k_chunk_size_derived=derived,
        k_head_block=k_head_block,
        v_head_block=v_head_block,
        l1_budget=l1_budget,
        merge_radix=radix,
    )


def _widest_head_blocks(narrow, whole, k_tileable: bool, cbs_for, budget: int) -> tuple[int, int]:
    """Starting from head blocks ``narrow`` that fit, grow the K and V blocks (the narrower first, each to the next
    divisor of its head's tiles, up to ``whole``) while ``cbs_for(k_block, v_block)`` fits ``budget``."""

    def wider(block: int, full: int) -> int | None:
        return next((d for d in range(block + 1, full + 1) if full % d == 0), None)

    (k_block, v_block), (DHt, vDHt) = narrow, whole
    while True:
        k_wider, v_wider = wider(k_block, DHt) if k_tileable else None, wider(v_block, vDHt)
        candidates = []
        if k_wider:
            candidates.append((k_block, (k_wider, v_block)))
        if v_wider:
            candidates.append((v_block, (k_block, v_wider)))
        fitting = [blocks for _, blocks in sorted(candidates) if l1_bytes(cbs_for(*blocks)) <= budget]
        if not fitting:
            return k_block, v_block
        k_block, v_block = fitting[0]
