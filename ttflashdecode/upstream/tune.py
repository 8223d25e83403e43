"""Upstream sdpa_decode tuned as hard as ours: a candidate search over upstream's own knobs through the timing model.

A comparison that tunes ours per shape and runs upstream at one fixed config measures the tuning, not the kernels.
:func:`search` gives upstream the same treatment ours' tuned configs get: candidate program configs, each run through
the real program (the wheel's kernels, :mod:`ttflashdecode.upstream`'s descriptor) on the emulator's timing model
(MODELLED durations), fastest wins. Upstream's knobs are those of ``ttnn.SDPAProgramConfig`` its factory reads:

* ``max_cores_per_head_batch`` N: cores per (batch, kv head) group (the factory caps the active cores at
  ``N * b * n_kv_heads`` and the grid);
* ``k_chunk_size``: 0 (paged causal only: the kernels size each user's chunk from cur_pos, as tt_transformers runs
  it) or a power of two from 32 to 512;
* the grid (``compute_with_storage_grid_size``): the whole grid, or the smallest full-width grid holding the
  ``groups x N`` working cores (the rest stay free for other work, and idle cores cost launch time in the model).

The search is coordinate descent, to keep a shape at about nine runs (a timing-only run of a 32K shape takes minutes on
a loaded machine): N over the three largest powers of two the grid allows (at the chunk size the call would use), then
every k_chunk_size at the best N, then the grid at the best (N, k_chunk_size). Smaller N were slower at every shape of
the tech report's 16-vs-64-cores study and of our own tuning, so the search does not spend runs there. A candidate the
factory or the emulator refuses (L1 overflow, a chunk longer than the cache) counts as not run. Within 0.5% the
candidate with fewer working cores, then the smaller grid, then the larger chunk wins (as ours' tuning breaks ties), so
a near-tie does not flip between runs of the same model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

K_CHUNK_SIZES = (32, 64, 128, 256, 512)
N_CHOICES = 3  # the largest powers of two the grid allows, at most this many
TIE = 0.005


@dataclass(frozen=True)
class Candidate:
    """One upstream program config: grid (x, y), k_chunk_size (0: dynamic), max_cores_per_head_batch."""

    grid: tuple[int, int]
    k_chunk_size: int
    max_cores_per_head: int

    def label(self) -> str:
        k = "dyn" if self.k_chunk_size == 0 else str(self.k_chunk_size)
        return f"k{k} N{self.max_cores_per_head} {self.grid[0]}x{self.grid[1]}"

    def to_ttnn(self, ttnn, exp_approx_mode: bool | None):
        return ttnn.SDPAProgramConfig(
            compute_with_storage_grid_size=ttnn.CoreCoord(*self.grid),
            q_chunk_size=0,
            k_chunk_size=self.k_chunk_size,
            exp_approx_mode=exp_approx_mode,
            max_cores_per_head_batch=self.max_cores_per_head,
        )


@dataclass
class SearchResult:
    """The runs the search made (candidate -> modelled ns, None when refused) and the winner."""

    best: Candidate | None
    runs: dict[Candidate, float | None] = field(default_factory=dict)

    def ranked(self) -> list[tuple[Candidate, float]]:
        return sorted(((c, ns) for c, ns in self.runs.items() if ns is not None), key=lambda t: t[1])


def _cores(c: Candidate, groups: int) -> int:
    return min(c.grid[0] * c.grid[1], c.max_cores_per_head * groups)


def _better(a: tuple[Candidate, float], b: tuple[Candidate, float] | None, groups: int) -> bool:
    """Whether ``a`` beats ``b``: faster by more than TIE, else within TIE with fewer cores, then a larger chunk."""
    if b is None:
        return True
    (ca, ta), (cb, tb) = a, b
    if ta < tb * (1 - TIE):
        return True
    if ta > tb * (1 + TIE):
        return False

    # Fewer working cores, then a smaller grid, then a larger chunk (dynamic chunks, k_chunk_size 0, rank smallest).
    def key(c: Candidate):
        return _cores(c, groups), c.grid[0] * c.grid[1], -c.k_chunk_size

    return key(ca) < key(cb)


def effective(c: Candidate, groups: int) -> Candidate:
    """The candidate with max_cores_per_head_batch as upstream's factory applies it: at most the grid's cores per
    group (``min(cores, N * groups) // groups``), so two configs that build the same program compare equal."""
    cores = c.grid[0] * c.grid[1]
    return Candidate(c.grid, c.k_chunk_size, max(1, min(cores, c.max_cores_per_head * groups) // groups))


def min_grid(grid: tuple[int, int], working_cores: int) -> tuple[int, int]:
    """The smallest full-width grid (``grid[0]`` wide) holding ``working_cores`` cores."""
    gx, gy = grid
    return gx, min(gy, max(1, -(-working_cores // gx)))


def search(
    run: Callable[[Candidate], float | None],
    *,
    grid: tuple[int, int],
    batch: int,
    n_kv_heads: int,
    kv_len: int,
    paged: bool,
    start_k_chunk_size: int,
) -> SearchResult:
    """Coordinate descent over upstream's knobs (module docstring). ``run(candidate)`` returns the modelled duration
    in ns or None (refused); ``start_k_chunk_size`` is the chunk size the call uses without a config (0 for paged
    causal decode)."""
    groups = batch * n_kv_heads
    cores = grid[0] * grid[1]
    result = SearchResult(None)

    def measure(c: Candidate) -> float | None:
        if c not in result.runs:
            result.runs[c] = run(c)
        return result.runs[c]

    def best_of(cands: list[Candidate]) -> tuple[Candidate, float] | None:
        best = None
        for c in cands:
            ns = measure(c)
            if ns is not None and _better((c, ns), best, groups):
                best = (c, ns)
        return best

    top = max(1, cores // groups)
    n_values = sorted({min(64, 1 << (top.bit_length() - 1)) >> i for i in range(N_CHOICES)} - {0}, reverse=True)
    k0 = start_k_chunk_size
    step1 = best_of([Candidate(grid, k0, n) for n in n_values])
    if step1 is None:  # the call's own chunk size never fits: try every chunk size at every N
        step1 = best_of([Candidate(grid, k, n) for n in n_values for k in K_CHUNK_SIZES if k <= kv_len])
        if step1 is None:
            return result
    n = step1[0].max_cores_per_head
    ks = ([0] if paged else []) + [k for k in K_CHUNK_SIZES if k <= kv_len]
    step2 = best_of([Candidate(grid, k, n) for k in ks])
    k = step2[0].k_chunk_size
    small = min_grid(grid, n * groups)
    best = best_of([Candidate(grid, k, n), Candidate(small, k, n)])
    # The winner over everything run (a later step never loses an earlier step's better candidate).
    overall = None
    for c, ns in result.ranked():
        if _better((c, ns), overall, groups):
            overall = (c, ns)
    result.best = (overall or best)[0]
    return result
