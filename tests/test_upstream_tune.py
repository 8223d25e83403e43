"""ttflashdecode.upstream.tune's search, on a stand-in cost function (no emulator): which candidates it runs, that it
keeps the fastest it saw, its tie rule and that refused candidates do not win. The sweep runs the same search through
the timing model (perf/sweep.py)."""

from __future__ import annotations

from ttflashdecode.upstream.tune import Candidate, min_grid, search


def fake_cost_model(best_n: int, best_k: int, refuse_k: tuple[int, ...] = ()):
    """A stand-in for the timing model (a test double): a bowl around (best_n, best_k); k in refuse_k is refused."""

    def run(c: Candidate):
        if c.k_chunk_size in refuse_k:
            return None
        k = c.k_chunk_size or 96  # dynamic chunks cost like a 96-position chunk here
        return (
            1000.0
            * (
                1
                + abs(c.max_cores_per_head.bit_length() - best_n.bit_length())
                + abs(k.bit_length() - best_k.bit_length())
            )
            + c.grid[1]
        )

    return run


def test_search_finds_the_bowls_bottom_in_about_ten_runs():
    res = search(
        fake_cost_model(16, 128), grid=(8, 8), batch=1, n_kv_heads=1, kv_len=32768, paged=True, start_k_chunk_size=0
    )
    assert res.best == Candidate((8, 2), 128, 16), res.best
    assert len(res.runs) <= 10
    assert {c.max_cores_per_head for c in res.runs} == {64, 32, 16}


def test_refused_candidates_never_win_and_only_chunks_up_to_kv_len_run():
    res = search(
        fake_cost_model(4, 512, refuse_k=(512,)),
        grid=(8, 8),
        batch=8,
        n_kv_heads=1,
        kv_len=256,
        paged=False,
        start_k_chunk_size=256,
    )
    assert res.best is not None and res.best.k_chunk_size == 256
    assert max(c.k_chunk_size for c in res.runs) <= 256
    assert {c.max_cores_per_head for c in res.runs} == {8, 4, 2}


def test_ties_go_to_fewer_cores():
    flat = lambda c: 1000.0  # noqa: E731  every candidate the same: the fewest cores, then the largest chunk
    res = search(flat, grid=(8, 8), batch=1, n_kv_heads=8, kv_len=4096, paged=True, start_k_chunk_size=0)
    assert res.best == Candidate((8, 2), 512, 2), res.best  # 8 groups x 2 cores: two full rows


def test_effective_caps_cores_per_head_as_the_factory_does():
    from ttflashdecode.upstream.tune import effective

    assert effective(Candidate((8, 8), 0, 16), groups=8) == Candidate((8, 8), 0, 8)
    assert effective(Candidate((8, 8), 0, 16), groups=1) == Candidate((8, 8), 0, 16)


def test_min_grid_is_full_width():
    assert min_grid((8, 8), 17) == (8, 3) and min_grid((8, 8), 200) == (8, 8) and min_grid((8, 8), 1) == (8, 1)
