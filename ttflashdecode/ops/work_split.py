"""How the cache ops and the tile conversion spread their units of work (tile rows, tiles) over cores: contiguous,
balanced ranges, as upstream's ``split_work_to_cores`` (tt_metal/common/work_split.hpp) gives every core either
``base`` or ``base + 1`` units. One function for every op that splits a 1-D range of units."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnitSplit:
    """Units ``[first_unit, first_unit + num_units)`` for each core, in core order (row-major over the grid)."""

    cores: tuple[tuple[int, int], ...]
    first_unit: tuple[int, ...]
    num_units: tuple[int, ...]


def split_units(num_units: int, grid: tuple[int, int], cores: list[tuple[int, int]] | None = None) -> UnitSplit:
    """Contiguous, balanced unit ranges over the first cores of the grid (row-major), or of ``cores`` when given (the
    cores an attention plan leaves free, in a fused program); no core gets none."""
    if cores is None:
        cores = [(i % grid[0], i // grid[0]) for i in range(grid[0] * grid[1])]
    num_cores = max(1, min(num_units, len(cores)))
    base, extra = divmod(num_units, num_cores)
    counts = [base + (1 if i < extra else 0) for i in range(num_cores)]
    firsts = [sum(counts[:i]) for i in range(num_cores)]
    return UnitSplit(tuple(tuple(c) for c in cores[:num_cores]), tuple(firsts), tuple(counts))
