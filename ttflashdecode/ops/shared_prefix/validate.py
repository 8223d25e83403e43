"""Shared-prefix decode's own host checks (the tensors' are :mod:`ttflashdecode.checks`'): the groups and prefix
lengths, the dtypes it takes, a page table's width."""

from __future__ import annotations

from ttflashdecode.checks import as_int, dtype_name_of
from ttflashdecode.ops.shared_prefix.plan import PrefixGroups

OUT_DTYPES = ("bfloat16", "float32")


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


def check_dtype(name: str, dtype, allowed: tuple[str, ...]) -> str:
    got = dtype_name_of(dtype)
    if got not in allowed:
        raise TypeError(f"{name}={dtype!r}: expected one of {', '.join('ttnn.' + a for a in allowed)}")
    return got


def table_width(name: str, table) -> int:
    shape = tuple(int(d) for d in table.shape) if hasattr(table, "shape") else None
    if shape is None or len(shape) != 2:
        raise ValueError(f"{name}: expected a rank-2 int32 page table, got {type(table).__name__} {shape}")
    return shape[1]
