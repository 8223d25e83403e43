"""Planner invariants: the chunk rule, group layout, reduction tree and L1 budget (DESIGN.md)."""

from dataclasses import replace

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ttflashdecode.config import ProgramConfig
from ttflashdecode.plan import (
    L1_BUDGET_BYTES,
    ROLES,
    DecodeShapes,
    L1OverflowError,
    active_cores,
    children_in_round,
    chunk_range,
    default_k_chunk_size,
    default_num_cores_per_head,
    expected_partials,
    is_dram_bound,
    partial_slots,
    plan,
    receive_rounds,
    rules,
    send_round,
    send_slot,
    tree_parent,
    tree_rounds,
    window_start,
)

SETTINGS = settings(max_examples=100, deadline=None)


def shapes(**kw):
    base = dict(batch=1, n_q_heads=8, n_kv_heads=1, head_dim=128, kv_len=1024)
    base.update(kw)
    return DecodeShapes(**base)


# ---- DecodeShapes ------------------------------------------------------------------------------


def test_shapes_derived_fields():
    s = shapes(n_q_heads=32, n_kv_heads=8, batch=4, q_len=1)
    assert s.v_head_dim == 128 and s.q_heads_per_kv == 4 and s.num_groups == 32
    assert (s.PNHt, s.DHt, s.vDHt) == (1, 4, 4)
    assert shapes(n_q_heads=64, n_kv_heads=1, q_len=2).PNHt == 4  # 128 query rows


@pytest.mark.parametrize(
    "kw, needles",
    [
        (dict(batch=0), ["batch=0", "positive"]),
        (dict(batch=True), ["batch=True"]),
        (dict(head_dim=100), ["head_dim=100", "multiple of 32"]),
        (dict(v_head_dim=48), ["v_head_dim=48", "multiple of 32"]),
        (dict(kv_len=1000), ["kv_len=1000", "multiple of 32"]),
        (dict(n_q_heads=6, n_kv_heads=4), ["n_q_heads=6", "n_kv_heads=4"]),
        (dict(k_dtype="int8"), ["k_dtype='int8'", "bfloat8_b"]),
        (dict(sliding_window_size=-1), ["sliding_window_size=-1"]),
        (dict(block_size=32), ["block_size=32", "max_blocks_per_user=None"]),
        (dict(block_size=48, max_blocks_per_user=2, kv_len=96), ["block_size=48"]),
        (dict(block_size=32, max_blocks_per_user=4, kv_len=256), ["kv_len=256", "max_blocks_per_user"]),
    ],
)
def test_shapes_reject_bad_inputs(kw, needles):
    with pytest.raises(ValueError) as e:
        shapes(**kw)
    for needle in needles:
        assert needle in str(e.value)


# ---- the chunk rule ----------------------------------------------------------------------------


def check_split(cur_pos, sk, n_cores, window):
    """Every chunk holding a valid position is read by exactly one core; active cores are a prefix."""
    ranges = [chunk_range(cur_pos, sk, i, n_cores, sliding_window_size=window) for i in range(n_cores)]
    active = active_cores(cur_pos, sk, n_cores, sliding_window_size=window)
    counts = [c for _, c in ranges]
    if cur_pos == -1:
        assert counts == [0] * n_cores and active == 0
        return
    assert active >= 1 and counts[0] > 0
    assert all(c > 0 for c in counts[:active]) and all(c == 0 for c in counts[active:])
    assert max(counts) - min(counts) <= 1  # balanced
    read = [c for start, count in ranges for c in range(start, start + count)]
    assert len(read) == len(set(read)) and read == sorted(read)  # each once, contiguous by core
    start = window_start(cur_pos, sliding_window_size=window)
    assert start == (max(0, cur_pos - window + 1) if window else 0)
    # Every chunk read holds a valid position, and the chunks of both ends are read: with
    # contiguity that is exactly the set of chunks holding [start, cur_pos].
    assert all(c * sk <= cur_pos and (c + 1) * sk > start for c in read)
    assert read[0] == start // sk and read[-1] == cur_pos // sk
    assert read == list(range(read[0], read[-1] + 1))


@SETTINGS
@given(
    kv_tiles=st.integers(1, 16),
    sk_tiles=st.integers(1, 16),
    n_cores=st.integers(1, 64),
    window=st.one_of(st.just(0), st.integers(1, 600)),
)
def test_chunk_split_covers_every_cur_pos(kv_tiles, sk_tiles, n_cores, window):
    for cur_pos in range(-1, kv_tiles * 32):
        check_split(cur_pos, sk_tiles * 32, n_cores, window)


@pytest.mark.parametrize("cur_pos, expected", [(0, [(0, 1), (1, 0)]), (95, [(0, 2), (2, 1)]), (-1, [(0, 0), (0, 0)])])
def test_chunk_range_examples(cur_pos, expected):
    assert [chunk_range(cur_pos, 32, i, 2) for i in range(2)] == expected


def test_chunk_range_window_skips_old_chunks():
    # Window 64 at cur_pos 200: positions 137..200 live in chunks 4..6 of 32.
    assert chunk_range(200, 32, 0, 1, sliding_window_size=64) == (4, 3)


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(cur_pos=-2), "cur_pos=-2"),
        (dict(k_chunk_size=0), "k_chunk_size=0"),
        (dict(core_index=4), "core_index=4"),
        (dict(num_cores_per_head=0, core_index=0), "num_cores_per_head=0"),
    ],
)
def test_chunk_range_rejects_bad_args(kw, needle):
    args = dict(cur_pos=10, k_chunk_size=32, core_index=0, num_cores_per_head=4) | kw
    with pytest.raises(ValueError, match=needle):
        chunk_range(**args)


# ---- the reduction tree ------------------------------------------------------------------------


@pytest.mark.parametrize("radix", [2, 3, 4, 8, 64])
@pytest.mark.parametrize("n_cores", range(1, 65))
def test_tree_every_active_core_reaches_the_root(n_cores, radix):
    rounds = tree_rounds(n_cores, radix)
    assert radix**rounds >= n_cores and (rounds == 0 or radix ** (rounds - 1) < n_cores)
    if radix == 2:  # the default radix
        assert rounds == tree_rounds(n_cores)
    for active in range(1, n_cores + 1):
        received = {i: [] for i in range(active)}
        for i in range(1, active):
            r = send_round(i, radix)
            target = tree_parent(i, radix)
            assert 0 <= target < i and r < rounds  # same group, active, a valid round
            # A core sends only after everything it receives has arrived (earlier rounds).
            assert all(rr < r for rr in receive_rounds(i, active, radix))
            received[target].append((r, send_slot(i, radix)))
        assert send_round(0, radix) is None
        for i, got in received.items():
            rounds_in = sorted({r for r, _ in got})
            assert rounds_in == receive_rounds(i, active, radix) == list(range(len(rounds_in)))  # a prefix
            assert [sum(1 for r, _ in got if r == rr) for rr in rounds_in] == [
                children_in_round(i, rr, active, radix) for rr in rounds_in
            ]
            # the slots a core is sent fill 0, 1, ... in round order: the writer's pushes in order
            assert (
                sorted(slot for _, slot in got)
                == list(range(len(got)))
                == list(range(expected_partials(i, active, radix)))
            )
            assert [slot for _, slot in sorted(got)] == sorted(slot for _, slot in got)
        # Each sender sends once, so the root merges everything: active - 1 partials in total.
        assert sum(len(got) for got in received.values()) == active - 1
    assert partial_slots(n_cores, radix) == max(expected_partials(i, n_cores, radix) for i in range(n_cores))


def test_merge_finish_time_is_the_trees_critical_path():
    """merge_finish_ns: a receiver's round starts once its slowest child's partial has landed; its merge costs a fixed
    part and a part per child (rules' MERGE_* constants)."""
    send, fixed = rules.MERGE_SEND_NS, rules.MERGE_ROUND_NS
    child = rules.MERGE_PARTIAL_STATS_NS + rules.MERGE_PARTIAL_TILE_NS * 5  # O's 4 tiles a row and l
    assert rules.merge_finish_ns(1, 4) == 0
    assert rules.merge_finish_ns(4, 4) == send + fixed + 3 * child  # one gather of 3
    # binary tree of 4: core 2 merges core 3 while the root merges core 1, then the root merges core 2
    assert rules.merge_finish_ns(4, 2) == (send + fixed + child) * 2
    # a wider O makes each child dearer
    assert rules.merge_finish_ns(8, 8, o_cols=16) > rules.merge_finish_ns(8, 8, o_cols=4)


def test_merge_finish_time_grows_with_query_row_tiles():
    """A group of several query-row tiles (PNHt) pays a child's part once a row tile, but only the row-tile parts of a
    send and a round (MERGE_*_ROW_NS): their fixed parts do not grow. So a one-tile group's model is unchanged, and
    the spec_multi_pos_tiles 4 row (8 cores, 4 row tiles) takes two rounds of up to 4 children (radix 5, its fastest
    modelled radix) where a one-tile group of 8 takes the gather."""
    send, fixed = rules.MERGE_SEND_NS, rules.MERGE_ROUND_NS
    child = rules.MERGE_PARTIAL_STATS_NS + rules.MERGE_PARTIAL_TILE_NS * 5
    assert rules.merge_finish_ns(4, 4, row_tiles=1) == rules.merge_finish_ns(4, 4)
    send4 = send + 3 * rules.MERGE_SEND_ROW_NS
    fixed4 = fixed + 3 * rules.MERGE_ROUND_ROW_NS
    assert rules.merge_finish_ns(4, 4, row_tiles=4) == send4 + fixed4 + 3 * 4 * child  # one gather of 3
    # the fixed parts stay fixed: four row tiles cost less than four one-tile trees
    assert rules.merge_finish_ns(8, 8, row_tiles=4) < 4 * rules.merge_finish_ns(8, 8)
    assert rules.default_merge_radix(8) == 8
    assert rules.default_merge_radix(8, row_tiles=4) == 5
    s4 = shapes(batch=32, n_q_heads=32, kv_len=4096, users_per_page_row=4)  # the sweep's spec4-b8-4k call
    assert s4.PNHt == 4
    assert plan(s4, ProgramConfig((8, 8), k_chunk_size=256, max_cores_per_head_batch=8)).merge_radix == 5
    with pytest.raises(ValueError, match="row_tiles=0"):
        rules.merge_finish_ns(8, 4, row_tiles=0)


@pytest.mark.parametrize("cores, radix", [(2, 2), (3, 3), (4, 4), (8, 8), (9, 9), (16, 4), (32, 6), (64, 8)])
def test_default_merge_radix_is_the_models_fastest(cores, radix):
    """The planner's radix: the fastest tree by merge_finish_ns (a gather up to 11 cores, two rounds at 16 to 64), the
    smallest on a tie and at most 16 (a merge's statistics side by side fill one face's columns); the plan carries it.
    With float32 intermediates (one exp a child) the choice is made with that dearer child."""
    assert rules.default_merge_radix(cores) == radix
    widest = min(cores, rules.MERGE_SIDE_BY_SIDE_MAX_RADIX)
    assert radix == min(range(2, widest + 1), key=lambda f: (rules.merge_finish_ns(cores, f), f))
    fp32 = rules.default_merge_radix(cores, fp32_dest_acc=True)
    assert fp32 == min(range(2, cores + 1), key=lambda f: (rules.merge_finish_ns(cores, f, side_by_side=False), f))
    s = shapes(kv_len=64 * 1024)
    p = plan(s, ProgramConfig((8, 8), k_chunk_size=256, max_cores_per_head_batch=cores))
    assert p.num_cores_per_head == cores and p.merge_radix == radix


def test_merge_radix_override():
    """rules.MERGE_RADIX, when set, is the radix the planner starts from (tests force trees through it)."""
    was = rules.MERGE_RADIX
    try:
        rules.MERGE_RADIX = 2
        assert rules.default_merge_radix(32) == 2
        assert (
            plan(shapes(kv_len=8192), ProgramConfig((8, 8), k_chunk_size=128, max_cores_per_head_batch=32)).rounds == 5
        )
    finally:
        rules.MERGE_RADIX = was


def test_plan_halves_the_radix_until_the_partial_slots_fit():
    """A gather over 64 cores of a 512-wide head needs 63 slots of [O, m, l]: more than L1, so the radix halves."""
    s = DecodeShapes(batch=1, n_q_heads=32, n_kv_heads=1, head_dim=512, kv_len=8192)
    p = plan(s, ProgramConfig((8, 8), k_chunk_size=0, max_cores_per_head_batch=64), merge_radix=64, max_cur_pos=8191)
    n = p.num_cores_per_head
    assert 2 <= p.merge_radix < min(64, n) and p.rounds == tree_rounds(n, p.merge_radix)
    assert p.cb("partial_in").num_pages == partial_slots(n, p.merge_radix) * (s.PNHt * s.vDHt + 2 * s.PNHt)
    assert p.l1_bytes <= p.l1_budget
    with pytest.raises(ValueError, match="merge_radix=1"):
        plan(s, ProgramConfig((8, 8)), merge_radix=1)


# ---- k_chunk_size ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kv_len, n_cores, window, max_cur_pos, expected",
    [
        (4096, 8, 0, None, 512),  # 512 per core
        (1024, 16, 0, None, 64),
        (131072, 16, 0, None, 512),  # capped
        (96, 1, 0, None, 32),  # 128 would not divide 96
        (1024, 1, 100, None, 128),  # window bounds the length
        (4096, 4, 0, 99, 32),  # short cur_pos: small chunks so all cores work
        (4096, 4, 0, -1, 32),
    ],
)
def test_default_k_chunk_size(kv_len, n_cores, window, max_cur_pos, expected):
    s = shapes(kv_len=kv_len, sliding_window_size=window)
    assert default_k_chunk_size(s, n_cores, max_cur_pos) == expected


def bucket_k_chunk_size(length: int, n_cores: int, kv_len: int, dram_bound: bool = False) -> int:
    """The docstring's step function: 32 for L <= 32 N, 64 for L <= 64 N, ... 512 beyond 256 N; then at most
    kv_len's largest power-of-two divisor. DRAM-bound (d128: 8 K and V tiles a position tile): at most half a core's
    positions, at most 256 (64 tiles) up to 512 positions a core and 512 (128 tiles) past it, at least 32."""
    sk = next(sk for sk in (32, 64, 128, 256, 512) if length <= sk * n_cores or sk == 512)
    if dram_bound:
        per_core = -(-length // n_cores)
        half = next((c for c in (32, 64, 128, 256, 512) if 2 * c >= per_core), 512)
        sk = max(32, min(sk, half, 256 if per_core <= 512 else 512))
    while kv_len % sk:
        sk //= 2
    return sk


def check_decode_loop_k_chunk_sizes(kv_len, n_cores, window):
    """A decode loop's positions grow one by one: the derived chunk is the bucket formula at every step, constant
    inside a bucket of L = min(max_cur_pos + 1, W), in [32, 512], a divisor of kv_len, at most 5 values, and the kv_len
    rule's value once L reaches kv_len. It never decreases as positions grow (a DRAM-bound plan, one group of d128
    here: n_cores >= 32, included)."""
    s = shapes(kv_len=kv_len, sliding_window_size=window)
    dram_bound = n_cores >= 32
    assert is_dram_bound(s, n_cores) == dram_bound
    seen = []
    for max_cur_pos in range(-1, kv_len):
        sk = default_k_chunk_size(s, n_cores, max_cur_pos)
        length = max_cur_pos + 1 if not window else min(max_cur_pos + 1, window)
        assert sk == bucket_k_chunk_size(length, n_cores, kv_len, dram_bound), (kv_len, n_cores, window, max_cur_pos)
        assert 32 <= sk <= 512 and kv_len % sk == 0 and sk & (sk - 1) == 0
        assert not seen or sk >= seen[-1][1], (seen, max_cur_pos, sk)
        if not seen or sk != seen[-1][1]:
            seen.append((max_cur_pos, sk))
    assert len(seen) <= 5
    # Each change happens right after L crosses a threshold 32 N * 2^j (the buckets are (32 N 2^(j-1), 32 N 2^j]);
    # DRAM-bound, two chunks a core: 64 N * 2^j.
    thresholds = (64, 128, 256, 512) if dram_bound else (32, 64, 128, 256)
    for max_cur_pos, _ in seen[1:]:
        length = max_cur_pos + 1 if not window else min(max_cur_pos + 1, window)
        assert (length - 1) % n_cores == 0 and ((length - 1) // n_cores) in thresholds, seen
    assert seen[-1][1] == default_k_chunk_size(s, n_cores, None)


@pytest.mark.parametrize(
    "kv_len, n_cores, window",
    [(8192, 16, 0), (32768, 8, 0), (8192, 1, 0), (4096, 64, 0), (8192, 12, 0), (6144, 16, 0), (8192, 16, 1000)],
)
def test_default_k_chunk_size_is_bucketed_over_a_decode_loop(kv_len, n_cores, window):
    check_decode_loop_k_chunk_sizes(kv_len, n_cores, window)


@SETTINGS
@given(kv_tiles=st.integers(1, 160), n_cores=st.integers(1, 64), window=st.one_of(st.just(0), st.integers(1, 6000)))
def test_default_k_chunk_size_bucket_property(kv_tiles, n_cores, window):
    check_decode_loop_k_chunk_sizes(kv_tiles * 32, n_cores, window)


def test_default_k_chunk_size_thresholds_llama_8b_t3k_chip():
    """8 q / 1 kv head, 16 cores per group: the decode loop sees 5 chunk sizes, switching at these positions."""
    s = shapes(kv_len=32768, n_q_heads=8, n_kv_heads=1)
    changes = {}
    for p in range(-1, 32768):
        sk = default_k_chunk_size(s, 16, p)
        if sk not in changes.values():
            changes[p] = sk
    assert changes == {-1: 32, 512: 64, 1024: 128, 2048: 256, 4096: 512}
    assert default_k_chunk_size(s, 16, None) == 512  # a device cur_pos tensor: kv_len rule


def test_plan_with_max_cur_pos_uses_the_bucketed_chunk():
    """plan(..., max_cur_pos) derives the group size and the chunk from the live length; without it (device
    positions) from kv_len: (num_cores_per_head, k_chunk_size) = (default_num_cores_per_head, default_k_chunk_size of
    that group size)."""
    s = shapes(kv_len=8192, n_q_heads=8, n_kv_heads=1, k_dtype="bfloat8_b", v_dtype="bfloat8_b")
    config = ProgramConfig((8, 8), k_chunk_size=0, max_cores_per_head_batch=16)
    assert (plan(s, config).num_cores_per_head, plan(s, config).k_chunk_size) == (16, 512)
    got = {}
    for p in (100, 511, 512, 1000, 2047, 4000, 4095, 4096, 8191):
        decode_plan = plan(s, config, max_cur_pos=p)
        n = default_num_cores_per_head(s, 16, p)
        assert (decode_plan.num_cores_per_head, decode_plan.k_chunk_size) == (n, default_k_chunk_size(s, n, p))
        got[p] = (n, decode_plan.k_chunk_size)
    assert got == {
        100: (1, 128),
        511: (2, 256),
        512: (2, 512),
        1000: (2, 512),
        2047: (8, 256),
        4000: (8, 512),
        4095: (16, 256),
        4096: (16, 512),
        8191: (16, 512),
    }
    # An explicit k_chunk_size is the user's: max_cur_pos does not touch it.
    assert plan(s, replace(config, k_chunk_size=128), max_cur_pos=100).k_chunk_size == 128


@pytest.mark.parametrize(
    "kv_len, max_cores, expected",
    [(4096, 64, 16), (8192, 64, 32), (32768, 64, 32), (131072, 64, 32), (1024, 16, 4), (8192, 16, 16), (256, 8, 1)],
)
def test_derived_group_size_is_a_maximum(kv_len, max_cores, expected):
    """With k_chunk_size 0 the planner picks the group size (at least 256 positions a core; past 32 cores only when
    32 would read more than 4096 positions each: rules.py's constants, measured in perf/group_size_table.py), never
    more than the config allows; an explicit k_chunk_size keeps the config's group size."""
    s = shapes(kv_len=kv_len, n_q_heads=4, n_kv_heads=1, k_dtype="bfloat8_b", v_dtype="bfloat8_b")
    derived = plan(s, ProgramConfig((8, 8), k_chunk_size=0, max_cores_per_head_batch=max_cores))
    assert derived.num_cores_per_head == default_num_cores_per_head(s, max_cores) == expected
    assert derived.rounds == tree_rounds(expected, derived.merge_radix)
    # one semaphore per tree round, then the Q multicast's (groups of more than one core)
    assert len(derived.semaphores) == derived.rounds + (expected > 1)
    assert sum(c.role != "idle" for c in derived.cores) == expected
    explicit = plan(s, ProgramConfig((8, 8), k_chunk_size=32, max_cores_per_head_batch=max_cores))
    assert explicit.num_cores_per_head == max_cores
    # Host positions: the group grows with the live length, one halving step at a time, never past the maximum.
    sizes = [default_num_cores_per_head(s, max_cores, p) for p in range(-1, kv_len, 97)]
    assert sizes == sorted(sizes) and set(sizes) <= {max(1, max_cores >> j) for j in range(7)}


# ---- whole plans -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head_dim, dtype, k_chunk_size",
    [(576, "bfloat16", 256), (576, "bfloat16", 0), (256, "float32", 512), (256, "bfloat16", 1024)],
)
def test_three_core_group_that_overflows_l1_halves_its_radix_to_two(head_dim, dtype, k_chunk_size):
    """A group of 3 cores starts from radix 3 (the model's choice, a gather); when its partial slots overflow L1
    the planner halves the radix, and 3 // 2 would be a radix of 1, a tree that never reaches a second core (the
    planner looped for ever in tree_rounds: test_plan_invariants drew such a case and hung the suite)."""
    s = shapes(n_q_heads=16, head_dim=head_dim, kv_len=4096, k_dtype=dtype, v_dtype=dtype)
    p = plan(s, ProgramConfig((8, 8), k_chunk_size=k_chunk_size, max_cores_per_head_batch=3), fp32_dest_acc=True)
    assert p.merge_radix == 2 and p.rounds == tree_rounds(p.num_cores_per_head, 2)
    assert p.l1_bytes <= L1_BUDGET_BYTES


@pytest.mark.parametrize("radix", [0, 1])
def test_tree_rounds_rejects_a_radix_below_two(radix):
    with pytest.raises(ValueError, match=f"radix={radix}"):
        tree_rounds(4, radix)


@SETTINGS
@given(
    # Mostly few groups (a split with a reduction tree), sometimes more groups than cores.
    batch=st.one_of(st.integers(1, 4), st.integers(1, 40)),
    n_kv=st.integers(1, 8),
    g=st.sampled_from([1, 2, 4, 8, 16, 48]),
    head_dim=st.sampled_from([64, 128, 256, 576]),
    kv_tiles=st.integers(1, 512),
    gx=st.integers(1, 8),
    gy=st.integers(1, 8),
    max_cores=st.integers(1, 64),
    sk=st.sampled_from([0, 0, 32, 64, 128, 256, 512, 1024, 2048]),
    kv_dtype=st.sampled_from(["bfloat16", "bfloat8_b", "bfloat4_b", "float32"]),
    fp32_dest_acc=st.booleans(),
    align_kv_len=st.integers(0, 9),
)
def test_plan_invariants(
    batch, n_kv, g, head_dim, kv_tiles, gx, gy, max_cores, sk, kv_dtype, fp32_dest_acc, align_kv_len
):
    kv_len = kv_tiles * 32
    if sk and align_kv_len:  # usually make an explicit k_chunk_size divide kv_len
        kv_len = -(-kv_len // sk) * sk
    s = DecodeShapes(
        batch=batch,
        n_q_heads=n_kv * g,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        kv_len=kv_len,
        k_dtype=kv_dtype,
        v_dtype=kv_dtype,
    )
    cfg = ProgramConfig((gx, gy), k_chunk_size=sk, max_cores_per_head_batch=max_cores)
    if sk and s.kv_len % sk:
        event("k_chunk_size does not divide kv_len")
        with pytest.raises(ValueError, match=f"k_chunk_size={sk}"):
            plan(s, cfg, fp32_dest_acc=fp32_dest_acc)
        return
    try:
        p = plan(s, cfg, fp32_dest_acc=fp32_dest_acc)
    except L1OverflowError as e:
        event("L1 overflow")
        assert sk and e.over > 0 and f"{e.over:,} B over" in str(e)
        assert f"c_{e.largest[0].index} {e.largest[0].name}" in str(e)
        return
    event(f"planned, {'split' if p.groups_per_core == 1 else 'several groups per core'}")

    assert p.l1_bytes == sum(cb.total_bytes for cb in p.cbs) <= L1_BUDGET_BYTES
    assert p.k_chunk_size > 0 and p.k_chunk_size % 32 == 0 and s.kv_len % p.k_chunk_size == 0
    assert p.k_chunk_size_derived == (sk == 0) and (sk == 0 or p.k_chunk_size == sk)
    assert len(p.cores) == gx * gy and all(c.role in ROLES for c in p.cores)
    assert [c.core for c in p.cores] == [(i % gx, i // gx) for i in range(gx * gy)]
    assert p.num_cores_per_head <= max_cores and p.rounds == tree_rounds(p.num_cores_per_head, p.merge_radix)

    for b in range(batch):
        for h in range(n_kv):
            members = p.group_cores(b, h)
            roots = [c for c in members if c.index_in_group == 0]
            assert len(roots) == 1 and roots[0].role == "reducer"
            assert len(members) == (p.num_cores_per_head if p.groups_per_core == 1 else 1)
            assert [c.index_in_group for c in members] == list(range(len(members)))
            ids = [c.core_id for c in members]
            assert ids == list(range(ids[0], ids[0] + len(ids)))  # contiguous, row-major
            for c in members:
                assert c.root == roots[0].core and c.num_cores_per_head == p.num_cores_per_head
                assert c.role == ("reducer" if c.index_in_group == 0 else "worker")
                if c.send is not None:
                    to = p.core_at(*c.send.to_core)
                    assert to.groups == c.groups and to.index_in_group == c.send.to_index
                    assert c.send.slot == send_slot(c.index_in_group, p.merge_radix) and c.send.round < p.rounds
                    assert any(r.from_core == c.core and r.round == c.send.round for r in to.receives)
                for r in c.receives:
                    sender = p.core_at(*r.from_core)
                    assert sender.send.to_core == c.core and sender.index_in_group == r.from_index

    busy = [c for c in p.cores if c.role != "idle"]
    served = [grp for c in busy for grp in c.groups]
    assert set(served) == {(b, h) for b in range(batch) for h in range(n_kv)}
    assert len(served) == p.num_groups * (p.num_cores_per_head if p.groups_per_core == 1 else 1)
    assert all(not c.groups and c.index_in_group is None for c in p.cores if c.role == "idle")
    assert all(len(c.groups) <= p.groups_per_core for c in busy)
    # one per tree round, then the one a group's root sets once its Q multicast landed (groups of several cores)
    assert [sem.name for sem in p.semaphores] == [f"partial_arrived_round_{r}" for r in range(p.rounds)] + (
        ["q_arrived"] if p.num_cores_per_head > 1 else []
    )
    assert [sem.id for sem in p.semaphores] == list(range(len(p.semaphores)))
    has_partials = {cb.name for cb in p.cbs} >= {"partial_in", "partial_out"}
    assert has_partials == (p.rounds > 0)
    if p.rounds:
        slots = partial_slots(p.num_cores_per_head, p.merge_radix)
        assert p.cb("partial_in").num_pages == slots * (s.PNHt * s.vDHt + 2 * s.PNHt)


def test_plan_llama_8b_n150():
    s = DecodeShapes(
        batch=1, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=4096, k_dtype="bfloat8_b", v_dtype="bfloat8_b"
    )
    p = plan(s, "llama-3.1-8b/n150", merge_radix=2)
    # 64 cores read 512 positions each: DRAM-bound, two chunks a core (plan.rules.DRAM_BOUND_CHUNK_TILES)
    assert (p.num_groups, p.num_cores_per_head, p.rounds, p.k_chunk_size) == (8, 8, 3, 256)
    assert p.k_chunk_size_derived and p.config.k_chunk_size == 256
    root = p.core_at(0, 1)
    assert root.groups == ((0, 1),) and [r.from_index for r in root.receives] == [1, 2, 4]
    assert p.core_at(6, 1).send.to_core == (4, 1) and p.core_at(6, 1).send.slot == 1
    text = p.describe()
    assert "k_chunk_size: 256 (derived)" in text and "8 cores per group, 3 reduction rounds" in text


def test_plan_more_groups_than_cores():
    p = plan(shapes(batch=32, n_q_heads=32, n_kv_heads=8), ProgramConfig((8, 8)))
    assert (p.groups_per_core, p.num_cores_per_head, p.rounds) == (4, 1, 0)
    assert all(c.role == "reducer" and len(c.groups) == 4 and c.send is None for c in p.cores)
    assert p.cores[1].groups == ((0, 4), (0, 5), (0, 6), (0, 7))
    assert "4 groups per core" in p.describe()


def test_plan_uneven_groups_leave_idle_cores():
    # 65 groups on 64 cores: 2 per core, the last 31 cores idle.
    p = plan(shapes(batch=65), ProgramConfig((8, 8)))
    assert p.groups_per_core == 2 and sum(c.role == "idle" for c in p.cores) == 31


def test_plan_sliding_window_and_paged():
    s = shapes(kv_len=4096, block_size=64, max_blocks_per_user=64, sliding_window_size=256)
    derived = plan(s, ProgramConfig((8, 8), max_cores_per_head_batch=8))
    # A 256-position window is one core's work (MIN_POSITIONS_PER_CORE): one 256-position chunk.
    assert (derived.num_cores_per_head, derived.k_chunk_size) == (1, 256)
    p = plan(s, ProgramConfig((8, 8), k_chunk_size=32, max_cores_per_head_batch=8))
    # cur_pos 4000: positions 3745..4000 are chunks 117..125, 9 chunks over 8 cores.
    assert p.active_cores(4000) == 8 and p.chunk_range(4000, 0) == (117, 2) and p.chunk_range(4000, 1) == (119, 1)


def test_l1_overflow_names_buffers_and_bytes_over():
    s = shapes(head_dim=256, kv_len=8192)
    with pytest.raises(L1OverflowError) as e:
        plan(s, ProgramConfig((8, 8), k_chunk_size=4096))
    msg = str(e.value)
    assert "c_1 k" in msg and "c_2 v" in msg and f"{e.value.over:,} B over" in msg
    assert "k_chunk_size (now 4096)" in msg and isinstance(e.value, ValueError)


def test_derived_k_chunk_size_shrinks_to_fit_l1():
    p = plan(shapes(head_dim=1024, kv_len=8192), ProgramConfig((1, 1)))
    assert p.k_chunk_size < 512 and p.l1_bytes <= L1_BUDGET_BYTES


@pytest.mark.parametrize(
    "call, exc, needles",
    [
        (
            lambda: plan(shapes(), ProgramConfig((8, 8)), grid=(8, 7)),
            ValueError,
            ["compute_with_storage_grid_size=(8, 8)", "grid=(8, 7)"],
        ),
        (lambda: plan(shapes(), ProgramConfig((8, 8)), grid=(8, 0)), ValueError, ["grid=(8, 0)"]),
        (
            lambda: plan(shapes(), ProgramConfig((8, 8), k_chunk_size=48)),
            ValueError,
            ["k_chunk_size=48", "multiple of 32"],
        ),
        (
            lambda: plan(shapes(kv_len=96), ProgramConfig((8, 8), k_chunk_size=64)),
            ValueError,
            ["k_chunk_size=64", "kv_len=96"],
        ),
        (lambda: plan(shapes(), max_cur_pos=1024), ValueError, ["max_cur_pos=1024"]),
        (lambda: plan(shapes(), program_config=42), TypeError, ["program_config=42"]),
        (
            lambda: plan(shapes(), ProgramConfig((8, 8), max_cores_per_head_batch=65)),
            ValueError,
            ["max_cores_per_head_batch=65"],
        ),
    ],
)
def test_plan_rejects_bad_inputs(call, exc, needles):
    with pytest.raises(exc) as e:
        call()
    for needle in needles:
        assert needle in str(e.value)


def test_plan_accepts_smaller_device_grid():
    p = plan(shapes(), ProgramConfig((8, 7)), grid=(8, 7))
    assert len(p.cores) == 56 and p.grid == (8, 7)
    # None: the whole device grid.
    assert plan(shapes(), None, grid=(8, 7)).config.compute_with_storage_grid_size == (8, 7)


def test_head_dim_tiling_keeps_k_and_v_buffers_flat():
    """FFPA's split-D: once whole-head K/V blocks stop fitting, K and V stream in head-dim blocks, so their buffers
    no longer grow with head_dim and head dims up to 4096 plan on one core; the blocks tile the head dims."""
    kv_bytes = {}
    for head_dim in (1024, 2048, 4096):
        s = DecodeShapes(batch=1, n_q_heads=8, n_kv_heads=1, head_dim=head_dim, kv_len=8192)
        p = plan(s, ProgramConfig((8, 8), max_cores_per_head_batch=1))
        assert s.DHt % p.k_head_block == 0 and s.vDHt % p.v_head_block == 0
        assert p.l1_bytes <= L1_BUDGET_BYTES
        kv_bytes[head_dim] = p.cb("k").total_bytes + p.cb("v").total_bytes
    assert kv_bytes[4096] <= kv_bytes[2048] <= kv_bytes[1024], kv_bytes


def test_head_blocks_stay_whole_when_they_fit():
    p = plan(DecodeShapes(batch=8, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=4096), ProgramConfig((8, 8)))
    assert (p.k_head_block, p.v_head_block) == (4, 4)


def test_large_head_dim_gives_up_cores_before_failing():
    """head_dim 1536 with fp32 accumulation: 16 cores' tree slots overflow L1, so the plan uses a smaller group
    (max_cores_per_head_batch is a ceiling) and fits; a head dim that cannot fit even on one core still raises.
    32 q heads: full 32-row tiles (8 would take 16-row tiles, whose smaller slots fit more cores). Since the merge
    stages only two statistics tiles (merge_factors), head_dim 1024 fits all 16 cores."""
    fits = DecodeShapes(batch=1, n_q_heads=32, n_kv_heads=1, head_dim=1536, kv_len=8192)
    p = plan(
        fits,
        ProgramConfig(compute_with_storage_grid_size=(8, 8), max_cores_per_head_batch=16),
        (8, 8),
        fp32_dest_acc=True,
    )
    assert 1 <= p.num_cores_per_head < 16
    assert p.l1_bytes <= L1_BUDGET_BYTES
    too_big = DecodeShapes(batch=1, n_q_heads=32, n_kv_heads=1, head_dim=4096, kv_len=8192)
    with pytest.raises(L1OverflowError, match="over the budget"):
        plan(too_big, ProgramConfig(compute_with_storage_grid_size=(8, 8)), (8, 8), fp32_dest_acc=True)


# ---- the planner is pure -----------------------------------------------------------------------------------------

# What the planner must never load: ttnn and its devices, the emulator, the program factory and everything that
# launches, and the tuner (the layer above the factory that runs candidates).
FORBIDDEN = (
    "ttnn",
    "torch",
    "ttemu",
    "ttflashdecode.ops.decode.factory",
    "ttflashdecode.tuning",
    "ttflashdecode.ops.decode.wrapper",
    "ttflashdecode.ops.decode.api",
    "ttflashdecode.backend",
    "ttemu.ttnn_env",
    "ttflashdecode.ops.decode.args",
    "ttflashdecode.ops.descriptors",
    "ttflashdecode.upstream",
)

PURE_PLANNER_SCRIPT = """
import importlib.util, json, sys, types
# The package's own __init__ imports the op; the planner is loaded on its own, as a package's subpackage.
spec = importlib.util.find_spec("ttflashdecode")
package = types.ModuleType("ttflashdecode")
package.__path__ = list(spec.submodule_search_locations)
sys.modules["ttflashdecode"] = package
from ttflashdecode.config import AutoProgramConfig
from ttflashdecode.plan import DecodeShapes, plan
from ttflashdecode.plan import auto
# Every path of the default: a table hit, a miss (the rule), a position-refined rule, and the candidates.
hit = auto.load_table()["entries"][0]
s, grid = DecodeShapes(**hit["shapes"]), tuple(hit["grid"])
auto.plan_for(s, AutoProgramConfig(grid), grid)
miss = DecodeShapes(batch=3, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=8192 + 96)
auto.plan_for(miss, AutoProgramConfig((8, 8)), (8, 8), max_cur_pos=100)
auto.candidates(miss, (8, 8))
plan(miss, None, (8, 7))
print(json.dumps(sorted(sys.modules)))
"""


def test_the_planner_imports_no_device_emulator_factory_or_tuner():
    """ttflashdecode.plan (and the default's table-or-rule choice in plan.auto) runs with none of FORBIDDEN loaded."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", PURE_PLANNER_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert not bad, f"the planner loaded {bad}"
    assert "ttflashdecode.plan.auto" in loaded
