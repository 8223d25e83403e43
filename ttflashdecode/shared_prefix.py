"""Shared-prefix decode (cascade attention): a prefix many users share is read once per (prefix group, kv head), or
once per sub-group of at most ``max_group_rows`` query rows when a group is larger (:class:`PrefixGroups`).

In serving, many decode users share a long prefix (n samples of one prompt, beam search, a common system prompt).
With a paged cache their page tables point at the same prefix blocks, yet a plain paged decode reads those blocks
once per user. Here the cache has two levels, as FlashInfer's cascade attention has:

- the **prefix level**: one page table row per prefix group, ``prefix_lens[g]`` positions. For one group and one kv
  head, the query rows of all the group's users (users x q heads per kv head) are the rows of one group of the decode
  kernels (several row tiles when there are more than 32), so each prefix K/V tile is read from DRAM once and
  multiplied against every user's query. The users of a group are a list (any users of the batch, any number): the
  reader gathers their Q rows from the standard ``q [1, b, n_q_heads, d]`` through a slot-to-user map (no reshuffle
  on the host), and the writer scatters the rows back the same way.
- the **suffix level**: each user's own blocks (``suffix_page_table``, positions ``0 .. suffix_cur_pos[u]`` counted
  from the end of its prefix), exactly the plain paged decode.

Both levels run the decode kernels with ``emit_partial``: the root of each (group, kv head) writes its partial state
(O unnormalised, running max m, running sum l: the state the split-KV tree merges) instead of the normalised output.
A third, small device program merges the two partials per query row with the same (m, l, O) combine and normalises
(``ops/shared_prefix/kernels``). Everything runs on the device (or the emulator); the host only plans, builds
descriptors and uploads the groups' constant positions once per plan.

Supported: paged K/V (bfloat16 / bfloat8_b / bfloat4_b), GQA / MQA / MHA, one query token per user (``q_len`` 1),
causal decode (every user sees its whole prefix and its suffix up to its position), any scale, program configs and
compute kernel configs as the decode op takes them, bfloat16 or float32 output. Refused with an error naming the
argument: ``q_len > 1``, masks, attention sinks, sliding windows, ring caches, MLA, sharded Q / output, meshes.
Users with no suffix this step (``suffix_cur_pos`` -1) attend to their prefix alone. Design, measurements and an
example: docs/SHARED_PREFIX.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from ttemu.ttnn_env import import_ttnn
from ttflashdecode.backend import backend_for, backend_of
from ttflashdecode.checks import KV_DTYPES, as_int, check_bool, check_device_tensor, check_scale, dtype_name
from ttflashdecode.config import AUTO, TILE, ProgramConfig
from ttflashdecode.device_arch import chip_facts
from ttflashdecode.device_cache import device_cache
from ttflashdecode.kernel_sources import DECODE_KERNELS, OPS
from ttflashdecode.ops.decode.factory import DecodeBuffers, build_program
from ttflashdecode.ops.descriptors import (
    AccessorArgs,
    ComputeSettings,
    cb_descriptor,
    core_range_set,
    float_bits,
    kernel_descriptor,
    select,
)
from ttflashdecode.ops.work_split import split_units
from ttflashdecode.plan import DecodePlan, DecodeShapes, check_l1
from ttflashdecode.plan.auto import plan_for
from ttflashdecode.plan.shapes import TILE_BYTES

MERGE_KERNELS = OPS / "shared_prefix" / "kernels"
PARTIAL_EXTRA_COLS = 2 * TILE  # a partial row: O's v_head_dim columns, then m's tile, then l's tile
NO_USER = -1  # a padding slot of the prefix level's slot-to-user map
OUT_DTYPES = ("bfloat16", "float32")
# Program sets a wrapper keeps, one per set of tensor addresses (oldest dropped first).
MAX_PROGRAM_SETS = 16
# Query rows of one prefix sub-group by default (PrefixGroups): see docs/SHARED_PREFIX.md for the measurement.
MAX_GROUP_ROWS = 128

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


# ---- the groups ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrefixGroups:
    """The prefix groups of a call: ``users[g]`` share prefix ``g`` of ``prefix_lens[g]`` positions.

    The prefix level serves a group in sub-groups of at most ``users_per_subgroup`` users (a sub-group's query rows,
    users x q heads per kv head, are the rows of one decode group: more rows mean more compute per K/V tile read and
    larger buffers, fewer mean more reads of the prefix), as equal in size as the count allows; each sub-group reads
    the prefix once per kv head. The level runs ``len(subgroups) * slots`` slots, ``slots`` (the largest sub-group)
    each; a smaller sub-group's last slots are padding."""

    users: tuple[tuple[int, ...], ...]
    prefix_lens: tuple[int, ...]
    users_per_subgroup: int

    @property
    def subgroups(self) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """(group, its users in this sub-group) for every sub-group, group by group."""
        out = []
        for g, users in enumerate(self.users):
            parts = -(-len(users) // self.users_per_subgroup)
            size = -(-len(users) // parts)
            out += [(g, users[i : i + size]) for i in range(0, len(users), size)]
        return tuple(out)

    @property
    def slots(self) -> int:
        return max(len(u) for _, u in self.subgroups)

    def slot_users(self) -> tuple[int, ...]:
        """The user of every slot, sub-group by sub-group (NO_USER: padding)."""
        return tuple(u for _, users in self.subgroups for u in (*users, *[NO_USER] * (self.slots - len(users))))

    def slot_positions(self) -> list[int]:
        """The prefix level's cur_pos of every slot: its prefix's last position for a user, -1 (skip) for padding."""
        return [
            self.prefix_lens[g] - 1 if i < len(users) else -1 for g, users in self.subgroups for i in range(self.slots)
        ]

    def page_rows(self) -> tuple[int, ...]:
        """The prefix page table's row each sub-group reads: its group's."""
        return tuple(g for g, _ in self.subgroups)


def check_groups(groups, prefix_lens, batch: int, max_prefix_len: int, users_per_subgroup: int) -> PrefixGroups:
    """``groups`` (a list of lists of user indices) and ``prefix_lens`` (one int a group) checked: every user of the
    batch in exactly one group, every prefix length in ``[1, max_prefix_len]`` (the prefix page table's reach)."""
    if not isinstance(groups, (list, tuple)) or not groups:
        raise TypeError(f"groups={groups!r}: expected a non-empty list of lists of user indices")
    users: list[tuple[int, ...]] = []
    seen: dict[int, int] = {}
    for g, group in enumerate(groups):
        if not isinstance(group, (list, tuple)) or not group:
            raise TypeError(f"groups[{g}]={group!r}: expected a non-empty list of user indices")
        members = []
        for u in group:
            user = as_int(u)
            if user is None or not 0 <= user < batch:
                raise ValueError(f"groups[{g}]: user {u!r} is not a user index in [0, {batch}) (q's batch)")
            if user in seen:
                raise ValueError(f"groups[{g}]: user {user} is already in groups[{seen[user]}]; a user has one prefix")
            seen[user] = g
            members.append(user)
        users.append(tuple(members))
    missing = sorted(set(range(batch)) - set(seen))
    if missing:
        raise ValueError(
            f"groups: users {missing} are in no group; every user of q's batch needs one (a user with nothing shared "
            "is a group of its own)"
        )
    if not isinstance(prefix_lens, (list, tuple)) or len(prefix_lens) != len(users):
        raise ValueError(f"prefix_lens={prefix_lens!r}: expected a list of {len(users)} ints (one a group)")
    lens = []
    for g, p in enumerate(prefix_lens):
        n = as_int(p)
        if n is None or not 1 <= n <= max_prefix_len:
            raise ValueError(
                f"prefix_lens[{g}]={p!r}: expected an int in [1, {max_prefix_len}] (the prefix page table's "
                "max_blocks x block_size)"
            )
        lens.append(n)
    return PrefixGroups(tuple(users), tuple(lens), users_per_subgroup)


# ---- plan ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SharedPrefixPlan:
    """The two levels' decode plans and the merge's split of the output's tile rows."""

    groups: PrefixGroups
    prefix: DecodePlan  # batch = groups x slots, a page-table row a group
    suffix: DecodePlan  # batch = users, a page-table row a user
    scale: float
    out_dtype: str
    merge_rows: int  # tile rows of the output: users x q-head tiles

    def describe(self) -> str:
        return (
            f"prefix level: {len(self.groups.users)} groups in {len(self.groups.subgroups)} sub-groups of "
            f"{self.groups.slots} slots, "
            f"{self.prefix.describe()}; suffix level: {self.suffix.describe()}; merge: {self.merge_rows} tile rows"
        )


@dataclass
class SharedPrefixResult:
    """A run's plan and its three programs' emulator statistics (None on a card)."""

    plan: SharedPrefixPlan
    prefix_stats: object
    suffix_stats: object
    merge_stats: object

    @property
    def duration_ns(self) -> float | None:
        """Modelled device time of the three programs one after another (None if any has none)."""
        parts = [
            s.duration_ns if s is not None else None for s in (self.prefix_stats, self.suffix_stats, self.merge_stats)
        ]
        return None if any(p is None for p in parts) else float(sum(parts))


class SharedPrefixDecodeWrapper:
    """Shared-prefix decode as a plan / run object (FlashInfer's manner).

    ``plan(...)`` once per set of groups and shapes (it uploads the prefix level's constant positions and allocates
    the two partial tensors), ``run(q, k, v, ...)`` per layer and step. ``program_config`` and
    ``compute_kernel_config`` are as :class:`~ttflashdecode.FlashDecodeWrapper`'s; both levels use them, unless
    ``prefix_program_config`` gives the prefix level its own.
    """

    def __init__(self, device, program_config=None, compute_kernel_config=None, prefix_program_config=None):
        if not callable(getattr(device, "compute_with_storage_grid_size", None)):
            raise TypeError(f"device={device!r}: expected a ttnn device or an emulator device")
        self._backend = backend_for(device)
        if self._backend.num_chips > 1:
            raise ValueError("device: shared-prefix decode runs on one chip (meshes are not supported)")
        self._grid = self._backend.grid()
        self._compute = ComputeSettings.coerce(compute_kernel_config)
        self._config = ProgramConfig.coerce(AUTO if program_config is None else program_config, default_grid=self._grid)
        self._prefix_config = (
            self._config
            if prefix_program_config is None
            else ProgramConfig.coerce(prefix_program_config, default_grid=self._grid)
        )
        self._plan: SharedPrefixPlan | None = None
        self._prefix_positions = None
        self._partials = None
        self._programs: dict = {}
        self.last_run: SharedPrefixResult | None = None

    @property
    def shared_prefix_plan(self) -> SharedPrefixPlan | None:
        return self._plan

    def plan(
        self,
        *,
        groups,
        prefix_lens,
        batch: int,
        n_q_heads: int,
        n_kv_heads: int,
        head_dim: int,
        block_size: int,
        max_prefix_blocks: int,
        max_suffix_blocks: int,
        kv_dtype=None,
        v_dtype=None,
        v_head_dim: int | None = None,
        scale: float | None = None,
        dtype=None,
        max_suffix_pos: int | None = None,
        max_group_rows: int = MAX_GROUP_ROWS,
    ) -> SharedPrefixPlan:
        """Plan runs of one shape and one set of groups (``groups[g]``: the users sharing prefix g of
        ``prefix_lens[g]`` positions). Shapes: q ``[1, batch, n_q_heads, head_dim]``, paged K/V ``[num_blocks,
        n_kv_heads, block_size, head_dim]`` of ``kv_dtype`` (V: ``v_dtype``, ``v_head_dim``), a prefix page table of
        ``max_prefix_blocks`` entries a group and a suffix page table of ``max_suffix_blocks`` a user. ``dtype``: the
        output's (bfloat16 default, or float32). ``max_suffix_pos``: the largest suffix position runs will use, if
        known (it lets the planner pick a smaller k_chunk_size for the suffix level). ``max_group_rows``: query rows
        (users x q heads per kv head) of one prefix sub-group; a larger group is served in sub-groups, each reading
        the prefix once (:class:`PrefixGroups`)."""
        ttnn = import_ttnn()
        sizes = {
            "batch": batch,
            "n_q_heads": n_q_heads,
            "n_kv_heads": n_kv_heads,
            "head_dim": head_dim,
            "block_size": block_size,
            "max_prefix_blocks": max_prefix_blocks,
            "max_suffix_blocks": max_suffix_blocks,
        }
        for name, value in sizes.items():
            if as_int(value) is None or value <= 0:
                raise ValueError(f"{name}={value!r}: expected a positive int")
        scale = check_scale(scale)
        k_name = _dtype_name("kv_dtype", kv_dtype or ttnn.bfloat16, KV_DTYPES)
        v_name = k_name if v_dtype is None else _dtype_name("v_dtype", v_dtype, KV_DTYPES)
        out_dtype = _dtype_name("dtype", dtype or ttnn.bfloat16, OUT_DTYPES)
        prefix_len = block_size * max_prefix_blocks
        if as_int(max_group_rows) is None or max_group_rows < 1:
            raise ValueError(f"max_group_rows={max_group_rows!r}: expected a positive int (query rows a sub-group)")
        if n_q_heads % n_kv_heads:
            raise ValueError(f"n_q_heads={n_q_heads}: expected a multiple of n_kv_heads={n_kv_heads}")
        per_subgroup = max(1, max_group_rows // (n_q_heads // n_kv_heads))
        found = check_groups(groups, prefix_lens, batch, prefix_len, per_subgroup)
        chip = chip_facts(self._backend.device)  # Wormhole's or Blackhole's L1 and DRAM alignment
        common = dict(
            n_q_heads=n_q_heads,
            n_kv_heads=n_kv_heads,
            head_dim=head_dim,
            v_head_dim=v_head_dim,
            k_dtype=k_name,
            v_dtype=v_name,
            out_dtype="float32",
            block_size=block_size,
            # The readers fetch the cur_pos and page-table pages in whole DRAM-aligned units (64 B on Blackhole):
            # their CBs are padded to the chip's alignment, not Wormhole's 32 B.
            dram_alignment=chip.dram_alignment,
        )
        prefix_shapes = DecodeShapes(
            batch=len(found.subgroups) * found.slots,
            kv_len=prefix_len,
            max_blocks_per_user=max_prefix_blocks,
            users_per_page_row=found.slots,
            **common,
        )
        suffix_shapes = DecodeShapes(
            batch=batch, kv_len=block_size * max_suffix_blocks, max_blocks_per_user=max_suffix_blocks, **common
        )
        fp32 = self._compute.fp32_dest_acc_en
        budget = chip.l1_budget
        prefix_plan = _partial_plan(
            prefix_shapes, self._prefix_config, self._grid, max(found.prefix_lens) - 1, fp32, budget
        )
        if max_suffix_pos is not None:
            max_suffix_pos = min(suffix_shapes.kv_len, 1 << max(int(max_suffix_pos), 0).bit_length()) - 1
        suffix_plan = _partial_plan(suffix_shapes, self._config, self._grid, max_suffix_pos, fp32, budget)
        scale = head_dim**-0.5 if scale is None else scale
        rows = batch * -(-n_q_heads // TILE)
        self._plan = SharedPrefixPlan(found, prefix_plan, suffix_plan, scale, out_dtype, rows)
        # What every run reuses: the prefix level's positions (constant for the plan) and the two partial tensors.
        self._prefix_positions = self._backend.int32_tensor(found.slot_positions(), [prefix_shapes.batch])
        partial_shape = [1, batch, n_q_heads, suffix_shapes.v_head_dim + PARTIAL_EXTRA_COLS]
        self._partials = tuple(
            self._backend.allocate(partial_shape, ttnn.float32, ttnn.TILE_LAYOUT) for _ in ("prefix", "suffix")
        )
        self._programs = {}
        return self._plan

    def run(
        self,
        q,
        k,
        v,
        *,
        prefix_page_table,
        suffix_page_table,
        suffix_cur_pos=None,
        suffix_cur_pos_tensor=None,
        output_tensor=None,
    ):
        """One decode step: q ``[1, b, n_q_heads, head_dim]`` bfloat16 (DRAM interleaved), paged K/V, the prefix page
        table (int32 ``[groups, max_prefix_blocks]``: row g holds prefix g's blocks), the suffix page table (int32
        ``[b, max_suffix_blocks]``: user u's own blocks, its suffix position p in block ``row[p // block_size]``) and
        each user's last suffix position, counted from the end of its prefix (``suffix_cur_pos`` ints, or an int32
        ``[b]`` device ``suffix_cur_pos_tensor`` read by the kernels at run time; -1: no suffix, the user attends to
        its prefix alone). Page tables may be torch tensors (uploaded) or device int32 row-major tensors.
        Returns the output ``[1, b, n_q_heads, v_head_dim]``."""
        p = self._plan
        if p is None:
            raise RuntimeError("SharedPrefixDecodeWrapper.run: call plan(...) first")
        ttnn = import_ttnn()
        s = p.suffix.shapes
        device = self._backend.device
        shape = check_device_tensor("q", q, 4, ("bfloat16",), layout="TILE", dram=False, device=device)
        if shape != (1, s.batch, s.n_q_heads, s.head_dim):
            raise ValueError(
                f"q: shape {list(shape)} does not match the plan's [1, {s.batch}, {s.n_q_heads}, "
                f"{s.head_dim}] (q_len 1 only)"
            )
        if q.memory_config().is_sharded():
            raise ValueError(f"q: expected an interleaved tensor (DRAM or L1), got {q.memory_config()}")
        for name, t, d, want in (("k", k, s.head_dim, s.k_dtype), ("v", v, s.v_head_dim, s.v_dtype)):
            kshape = check_device_tensor(name, t, 4, (want,), device=device)
            if kshape[1:] != (s.n_kv_heads, s.block_size, d):
                raise ValueError(
                    f"{name}: shape {list(kshape)} does not match the plan's [num_blocks, {s.n_kv_heads}, "
                    f"{s.block_size}, {d}]"
                )
        num_blocks = int(k.shape[0])
        if int(v.shape[0]) != num_blocks:
            raise ValueError(f"v: {int(v.shape[0])} blocks, k has {num_blocks}")
        groups = len(p.groups.users)
        prefix_table = self._table(
            "prefix_page_table",
            prefix_page_table,
            groups,
            p.prefix.shapes.max_blocks_per_user,
            num_blocks,
            [math.ceil(n / s.block_size) for n in p.groups.prefix_lens],
        )
        positions = self._suffix_positions(suffix_cur_pos, suffix_cur_pos_tensor)
        needed = None
        if suffix_cur_pos is not None:
            needed = [(c + 1 + s.block_size - 1) // s.block_size for c in suffix_cur_pos]
        suffix_table = self._table(
            "suffix_page_table", suffix_page_table, s.batch, s.max_blocks_per_user, num_blocks, needed
        )
        out_shape = [1, s.batch, s.n_q_heads, s.v_head_dim]
        if output_tensor is None:
            out = self._backend.allocate(out_shape, getattr(ttnn, p.out_dtype), ttnn.TILE_LAYOUT)
        else:
            got = check_device_tensor("output_tensor", output_tensor, 4, (p.out_dtype,), device=device)
            if list(got) != out_shape:
                raise ValueError(f"output_tensor: shape {list(got)}, expected {out_shape}")
            out = output_tensor

        prefix_out, suffix_out = self._partials
        prefix_buffers = DecodeBuffers(q, k, v, self._prefix_positions, prefix_out, page_table=prefix_table)
        suffix_buffers = DecodeBuffers(q, k, v, positions, suffix_out, page_table=suffix_table)
        key = tuple(self._backend.address_key(t) for t in (q, k, v, prefix_table, suffix_table, positions, out))
        launch = self._programs.get(key)
        if launch is None:
            noc = self._backend.noc_coord
            prefix_program = build_program(
                p.prefix,
                prefix_buffers,
                noc,
                self._compute,
                scale=p.scale,
                emit_partial=True,
                slot_users=p.groups.slot_users(),
                slot_page_rows=p.groups.page_rows(),
            )
            suffix_program = build_program(
                p.suffix, suffix_buffers, noc, self._compute, scale=p.scale, emit_partial=True
            )
            merge_program = build_merge_program(prefix_out, suffix_out, out, p, self._grid)
            launch = tuple(self._backend.launchable([prog]) for prog in (prefix_program, suffix_program, merge_program))
            if len(self._programs) >= MAX_PROGRAM_SETS:  # host page tables upload anew each run: keep the newest
                self._programs.pop(next(iter(self._programs)))
            self._programs[key] = launch
        prefix_stats = self._backend.run(prefix_buffers.io_tensors(), launch[0])
        suffix_stats = self._backend.run(suffix_buffers.io_tensors(), launch[1])
        merge_stats = self._backend.run([prefix_out, suffix_out, out], launch[2])
        self.last_run = SharedPrefixResult(p, prefix_stats, suffix_stats, merge_stats)
        return out

    # ---- steps ---------------------------------------------------------------------------------------------------

    def _suffix_positions(self, suffix_cur_pos, suffix_cur_pos_tensor):
        s = self._plan.suffix.shapes
        if (suffix_cur_pos is None) == (suffix_cur_pos_tensor is None):
            raise ValueError("suffix_cur_pos / suffix_cur_pos_tensor: expected exactly one of them")
        if suffix_cur_pos_tensor is not None:
            shape = check_device_tensor(
                "suffix_cur_pos_tensor",
                suffix_cur_pos_tensor,
                1,
                ("int32", "uint32"),
                layout="ROW_MAJOR",
                device=self._backend.device,
            )
            if shape != (s.batch,):
                raise ValueError(f"suffix_cur_pos_tensor: shape {list(shape)}, expected [{s.batch}]")
            return suffix_cur_pos_tensor
        if not isinstance(suffix_cur_pos, (list, tuple)) or len(suffix_cur_pos) != s.batch:
            raise ValueError(f"suffix_cur_pos={suffix_cur_pos!r}: expected a list of {s.batch} ints (one a user)")
        for u, c in enumerate(suffix_cur_pos):
            n = as_int(c)
            if n is None or not -1 <= n < s.kv_len:
                raise ValueError(
                    f"suffix_cur_pos[{u}]={c!r}: expected -1 (no suffix) or a position in [0, {s.kv_len}) (the suffix "
                    "page table's max_blocks x block_size)"
                )
        return self._backend.int32_tensor(list(suffix_cur_pos), [s.batch])

    def _table(self, name: str, table, rows: int, width: int, num_blocks: int, needed: list[int] | None):
        """A page table as the kernels read it: a device int32 ``[rows, width]`` tensor (entries trusted: a needed one
        outside ``[0, num_blocks)`` makes that level skip the user), or a torch tensor checked and uploaded."""
        if isinstance(table, torch.Tensor):
            if table.dim() != 2 or tuple(table.shape) != (rows, width):
                raise ValueError(f"{name}: shape {list(table.shape)}, expected [{rows}, {width}]")
            for r in range(rows):
                for i in range(needed[r] if needed is not None else 0):
                    entry = int(table[r, i])
                    if not 0 <= entry < num_blocks:
                        raise ValueError(
                            f"{name}[{r}, {i}]={entry}: expected a block in [0, {num_blocks}) (k's blocks)"
                        )
            return self._backend.int32_tensor(table.to(torch.int32).tolist(), [rows, width])
        shape = check_device_tensor(
            name, table, 2, ("int32", "uint32"), layout="ROW_MAJOR", device=self._backend.device
        )
        if shape != (rows, width):
            raise ValueError(f"{name}: shape {list(shape)}, expected [{rows}, {width}]")
        return table


def _partial_plan(
    shapes: DecodeShapes, config, grid, max_cur_pos: int | None, fp32: bool, l1_budget: int
) -> DecodePlan:
    """A level's decode plan with room for its partial: with emit_partial compute pushes O, then m, then l to cb_out
    (one block each), and a CB's pushes must tile its pages (the unpacker does not wrap), so cb_out holds the whole
    partial, 2 * PNHt pages more than the output block the planner sizes it for. The planner is given a budget that
    much smaller, so the plan it makes still fits; the enlarged CBs are checked against the chip's ``l1_budget``."""
    extra = 2 * shapes.PNHt * TILE_BYTES["float32"] * shapes.q_tile_rows // TILE
    p = plan_for(shapes, config, grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32, l1_budget=l1_budget - extra)
    pages = shapes.PNHt * (shapes.vDHt + 2)
    cbs = tuple(replace(cb, num_pages=pages) if cb.name == "out" else cb for cb in p.cbs)
    return replace(p, cbs=cbs, l1_bytes=check_l1(cbs, p.k_chunk_size, l1_budget))


def _dtype_name(name: str, dtype, allowed: tuple[str, ...]) -> str:
    got = str(dtype).split(".")[-1].lower()
    if got not in allowed:
        raise TypeError(f"{name}={dtype!r}: expected one of {', '.join('ttnn.' + a for a in allowed)}")
    return got


# ---- the merge program -----------------------------------------------------------------------------------------------


def build_merge_program(prefix_partial, suffix_partial, out, p: SharedPrefixPlan, grid: tuple[int, int]):
    """The merge's ``ttnn.ProgramDescriptor``: tile rows of the two partials in, normalised output tile rows out,
    spread over the grid in contiguous ranges."""
    ttnn = import_ttnn()
    s = p.suffix.shapes
    vdht = s.vDHt
    split = split_units(p.merge_rows, grid)
    cores = core_range_set(split.cores)
    scale_in_exp = bool(p.suffix.config.exp_approx_mode)  # the levels' m is then in q.k units (no mask, no sinks)
    values = {f"cb_{n}": i for n, i in MERGE_CB.items()}
    values.update(vDHt=vdht, scale_in_exp=int(scale_in_exp), factor_scale_bf16=float_bits(p.scale) >> 16)
    reader, writer = AccessorArgs(), AccessorArgs()
    reader.add("a", prefix_partial)
    reader.add("b", suffix_partial)
    writer.add("out", out)

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
            select(values, MERGE_READER_ARGS, reader),
            ranged(prefix_partial.buffer_address(), suffix_partial.buffer_address()),
            ttnn.ReaderConfigDescriptor(),
            include,
        ),
        kernel_descriptor(
            MERGE_KERNELS / "compute" / "compute_merge_partials.cpp",
            cores,
            select(values, MERGE_COMPUTE_ARGS),
            compute_rt,
            compute_config,
            include,
        ),
        kernel_descriptor(
            MERGE_KERNELS / "dataflow" / "writer_merge_partials.cpp",
            cores,
            select(values, MERGE_WRITER_ARGS, writer),
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


# ---- the module-level op ---------------------------------------------------------------------------------------------


def shared_prefix_decode(
    q,
    k,
    v,
    *,
    groups,
    prefix_lens,
    prefix_page_table,
    suffix_page_table,
    suffix_cur_pos=None,
    suffix_cur_pos_tensor=None,
    scale: float | None = None,
    program_config=None,
    compute_kernel_config=None,
    dtype=None,
    output_tensor=None,
    max_group_rows: int = MAX_GROUP_ROWS,
    prefix_program_config=None,
    return_stats: bool = False,
):
    """Decode attention over a two-level paged cache: a prefix shared by each group of users, then each user's own
    suffix (cascade attention, :mod:`ttflashdecode.shared_prefix`). Every prefix K/V tile is read from DRAM once per
    (group, kv head), whatever the group's size.

    q: ``[1, b, n_q_heads, head_dim]`` bfloat16, TILE, interleaved. k, v: paged ``[num_blocks, n_kv_heads,
    block_size, head_dim]`` (bfloat16 / bfloat8_b / bfloat4_b); both levels' blocks live in them.
    groups: ``groups[g]`` lists the users sharing prefix g (every user in exactly one group; any sizes).
    prefix_lens: ``prefix_lens[g]`` positions of prefix g (>= 1), at positions ``0 .. prefix_lens[g] - 1`` of row g
        of ``prefix_page_table`` (int32 ``[len(groups), max_prefix_blocks]``).
    suffix_page_table: int32 ``[b, max_suffix_blocks]``: user u's suffix position p (0 = the first token after its
        prefix) is in block ``suffix_page_table[u, p // block_size]``.
    suffix_cur_pos / suffix_cur_pos_tensor: each user's last suffix position (-1: none; the user sees its prefix
        alone): ints, or an int32 ``[b]`` device tensor the kernels read at run time.
    scale, program_config, compute_kernel_config: as the decode op's. dtype: output dtype (bfloat16, float32).
    prefix_program_config: the prefix level's own program config (default: program_config). The default rule sizes
        a group's cores for one row tile of queries; a prefix sub-group has up to max_group_rows / 32 and few groups,
        so a long prefix can run faster on more cores with an explicit k_chunk_size (docs/SHARED_PREFIX.md).
    max_group_rows: query rows of one prefix sub-group (:class:`PrefixGroups`).
    Page tables may be torch tensors (checked and uploaded) or int32 row-major device tensors.

    The output equals the decode over each user's concatenated cache (prefix, then suffix) with cur_pos =
    ``prefix_lens[g] + suffix_cur_pos[u]``. Returns ``[1, b, n_q_heads, v_head_dim]`` (and the
    :class:`SharedPrefixResult` with ``return_stats=True``).
    """
    return_stats = check_bool("return_stats", return_stats)
    check_device_tensor("q", q, 4, ("bfloat16",), layout="TILE", dram=False)
    backend = backend_of(q)
    kshape = check_device_tensor("k", k, 4, KV_DTYPES, device=backend.device)
    vshape = check_device_tensor("v", v, 4, KV_DTYPES, device=backend.device)
    _, batch, n_q_heads, head_dim = (int(d) for d in q.shape)
    if int(q.shape[0]) != 1:
        raise ValueError(f"q: q_len={int(q.shape[0])}; shared-prefix decode takes one query token per user (q_len 1)")
    prefix_width = _table_width("prefix_page_table", prefix_page_table)
    suffix_width = _table_width("suffix_page_table", suffix_page_table)
    max_suffix = None
    if isinstance(suffix_cur_pos, (list, tuple)) and any(as_int(c) is not None for c in suffix_cur_pos):
        # rounded up to a power of two, as the decode op does, so a growing decode loop meets a handful of plans
        max_suffix = 1 << max(max(as_int(c) for c in suffix_cur_pos if as_int(c) is not None), 0).bit_length()
    ttnn = import_ttnn()
    plan_args = dict(
        groups=groups,
        prefix_lens=prefix_lens,
        batch=batch,
        n_q_heads=n_q_heads,
        n_kv_heads=kshape[1],
        head_dim=head_dim,
        block_size=kshape[2],
        max_prefix_blocks=prefix_width,
        max_suffix_blocks=suffix_width,
        kv_dtype=getattr(ttnn, dtype_name(k)),
        v_dtype=getattr(ttnn, dtype_name(v)),
        v_head_dim=vshape[3],
        scale=scale,
        dtype=dtype,
        max_suffix_pos=max_suffix,
        max_group_rows=max_group_rows,
    )
    # One planned wrapper per (config, compute settings, groups, shapes) on the device: a decode loop calling the op
    # plans, uploads the prefix positions, allocates the partials and builds its programs once. Arguments that cannot
    # key a cache (unhashable ones) are planned afresh; plan() names what is wrong with them.
    wrapper = None
    try:
        key = (
            "shared_prefix",
            _config_key(program_config),
            _config_key(prefix_program_config),
            ComputeSettings.coerce(compute_kernel_config),
            *((n, _frozen(val)) for n, val in sorted(plan_args.items())),
        )
        hash(key)
    except TypeError:
        key = None
    if key is not None:
        wrapper = device_cache(backend.device).lookup(
            "decoders",
            key,
            lambda: _planned_wrapper(
                backend.device, program_config, compute_kernel_config, prefix_program_config, plan_args
            ),
        )
    else:
        wrapper = _planned_wrapper(
            backend.device, program_config, compute_kernel_config, prefix_program_config, plan_args
        )
    out = wrapper.run(
        q,
        k,
        v,
        prefix_page_table=prefix_page_table,
        suffix_page_table=suffix_page_table,
        suffix_cur_pos=suffix_cur_pos,
        suffix_cur_pos_tensor=suffix_cur_pos_tensor,
        output_tensor=output_tensor,
    )
    return (out, wrapper.last_run) if return_stats else out


def _planned_wrapper(
    device, program_config, compute_kernel_config, prefix_program_config, plan_args
) -> SharedPrefixDecodeWrapper:
    wrapper = SharedPrefixDecodeWrapper(device, program_config, compute_kernel_config, prefix_program_config)
    wrapper.plan(**plan_args)
    return wrapper


def _config_key(program_config):
    if program_config is None or isinstance(program_config, (str, ProgramConfig)):
        return program_config
    return ProgramConfig.coerce(program_config)  # ttnn.SDPAProgramConfig: by value


def _frozen(value):
    """Lists (groups, prefix lengths) as tuples, so a call's plan arguments can key the device cache."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _table_width(name: str, table) -> int:
    shape = tuple(int(d) for d in table.shape) if hasattr(table, "shape") else None
    if shape is None or len(shape) != 2:
        raise ValueError(f"{name}: expected a rank-2 int32 page table, got {type(table).__name__} {shape}")
    return shape[1]


__all__ = ["shared_prefix_decode", "SharedPrefixDecodeWrapper", "SharedPrefixPlan", "SharedPrefixResult"]
