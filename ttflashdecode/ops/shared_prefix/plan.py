"""The shared-prefix plan: the prefix groups (:class:`PrefixGroups`, served in sub-groups) and each level's decode
plan, sized with room for the partial it writes (:func:`partial_plan`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ttflashdecode.config import TILE
from ttflashdecode.plan import DecodePlan, DecodeShapes, check_l1
from ttflashdecode.plan.auto import plan_for
from ttflashdecode.plan.shapes import TILE_BYTES

PARTIAL_EXTRA_COLS = 2 * TILE  # a partial row: O's v_head_dim columns, then m's tile, then l's tile
NO_USER = -1  # a padding slot of the prefix level's slot-to-user map
# Query rows of one prefix sub-group by default (PrefixGroups): see docs/SHARED_PREFIX.md for the measurement.
MAX_GROUP_ROWS = 128


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


def partial_plan(shapes: DecodeShapes, config, grid, max_cur_pos: int | None, fp32: bool, l1_budget: int) -> DecodePlan:
    """A level's decode plan with room for its partial: with emit_partial compute pushes O, then m, then l to cb_out
    (one block each), and a CB's pushes must tile its pages (the unpacker does not wrap), so cb_out holds the whole
    partial, 2 * PNHt pages more than the output block the planner sizes it for. The planner is given a budget that
    much smaller, so the plan it makes still fits; the enlarged CBs are checked against the chip's ``l1_budget``."""
    extra = 2 * shapes.PNHt * TILE_BYTES["float32"] * shapes.q_tile_rows // TILE
    p = plan_for(shapes, config, grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32, l1_budget=l1_budget - extra)
    pages = shapes.PNHt * (shapes.vDHt + 2)
    cbs = tuple(replace(cb, num_pages=pages) if cb.name == "out" else cb for cb in p.cbs)
    return replace(p, cbs=cbs, l1_bytes=check_l1(cbs, p.k_chunk_size, l1_budget))
