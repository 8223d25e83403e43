"""FlashDecode on the host emulator against the golden model, over the shape matrix.

The full product of the matrix (batch x heads x head_dim x kv_len x cur_pos x chunk x cores x grid x dtype) is
far beyond the suite's time budget, so the cases below are chosen so that every value of every axis appears
at least once, and the interactions that matter (multi-core trees with idle cores, more groups than cores,
chunk edges, skipped users) each have a case of their own.
"""

from __future__ import annotations

import random

import pytest
import torch

from decode_harness import DecodeCase, assert_matches_golden, generator, run_case, seed_for, tag
from ttflashdecode import golden
from ttflashdecode.ops.decode.factory import noc1_reader_cores
from ttflashdecode.plan.rules import NOC1_READER_STRIDE

MATRIX = [
    # Llama-3.1-8B per chip on T3K (1 kv head): all cores of a group in one tree.
    DecodeCase(1, 8, 1, 128, 2048, (1500,), "bfloat16", k_chunk_size=128, max_cores_per_head_batch=16),
    # Llama-3.1-8B on N150: 8 kv heads x batch 4 = 32 groups, 2 cores each; mixed cur_pos with a skipped user.
    # Exact exp (exp_approx_mode=False) here and in two cases below: the exact path (Q scaled by the reader's scale
    # tile, accurate exp) keeps multi-core, many-groups-per-core and one-core cases at the same thresholds.
    DecodeCase(
        4,
        32,
        8,
        128,
        2048,
        (0, 2047, -1, 700),
        "bfloat8_b",
        k_chunk_size=256,
        max_cores_per_head_batch=4,
        exp_approx_mode=False,
    ),
    # batch 32: more groups (256) than cores (64): 4 groups per core, no reduction.
    DecodeCase(32, 8, 8, 64, 128, tuple(range(0, 128, 4)), "bfloat16", k_chunk_size=32, max_cores_per_head_batch=1),
    # G = 4, bfloat4_b cache on an 8x7 grid (N300 chip), chunk edges +-1.
    DecodeCase(
        4,
        16,
        4,
        64,
        2048,
        (255, 256, 257, 1023),
        "bfloat4_b",
        k_chunk_size=256,
        max_cores_per_head_batch=2,
        grid=(8, 7),
    ),
    # head_dim 256, long cache, 32 cores per head, last position.
    DecodeCase(1, 4, 1, 256, 8192, (8191,), "bfloat8_b", k_chunk_size=512, max_cores_per_head_batch=32),
    # G = 6 (12/2), 2x2 grid: 2 groups on 4 cores.
    DecodeCase(1, 12, 2, 128, 2048, (1234,), "bfloat16", k_chunk_size=0, max_cores_per_head_batch=16, grid=(2, 2)),
    # 40/8 heads (G = 5), b x n_kv = 32 groups on a 2x2 grid.
    DecodeCase(4, 40, 8, 128, 128, (5, 127, 64, 31), "bfloat16", k_chunk_size=32, grid=(2, 2), exp_approx_mode=False),
    # MHA, 1x1 grid: every group on one core.
    DecodeCase(2, 8, 8, 64, 1024, (0, 1023), "bfloat16", k_chunk_size=128, grid=(1, 1), exp_approx_mode=False),
    # The one long case: 32768 positions, 16 cores per head.
    DecodeCase(1, 8, 1, 64, 32768, (32767,), "bfloat8_b", k_chunk_size=512, max_cores_per_head_batch=16),
]


@pytest.mark.parametrize("case", MATRIX, ids=str)
def test_matrix(emu_device, case):
    outcome = run_case(emu_device, case, to_device=_to_device(emu_device), to_torch=emu_device.to_torch)
    assert_matches_golden(outcome, case)


@pytest.mark.parametrize(
    "cur_pos, exp_approx_mode",
    [(p, None) for p in (0, 31, 32, 127, 128, 129, 511, 512, 1023)] + [(p, False) for p in (31, 129, 1023)],
)
def test_chunk_edges(emu_device, cur_pos, exp_approx_mode):
    """cur_pos at, before and after tile and chunk boundaries, on a 4-core group with 128-position chunks; with the
    default (approximate) exp, and with the exact one at three of them (its Q scaling and exp)."""
    case = DecodeCase(
        1,
        8,
        1,
        64,
        1024,
        (cur_pos,),
        "bfloat16",
        k_chunk_size=128,
        max_cores_per_head_batch=4,
        exp_approx_mode=exp_approx_mode,
    )
    assert_matches_golden(
        run_case(emu_device, case, to_device=_to_device(emu_device), to_torch=emu_device.to_torch), case
    )


def test_random_positions(emu_device):
    """Per-user random positions across a batch, with the planner's chunk size: drawn from the test's seed (set
    TTFD_SEED to draw others), which also seeds the tensors, so the message's seed replays a failure whole."""
    seed = seed_for("test_random_positions")
    rng = random.Random(seed)
    cur_pos = tuple(rng.randrange(-1, 1024) for _ in range(8))
    case = DecodeCase(8, 8, 2, 64, 1024, cur_pos, "bfloat8_b", seed=seed)
    assert_matches_golden(
        run_case(emu_device, case, to_device=_to_device(emu_device), to_torch=emu_device.to_torch), case
    )


@pytest.mark.parametrize("max_cores", [1, 2, 4, 16, 32])
def test_cores_per_head(emu_device, max_cores):
    case = DecodeCase(1, 8, 1, 64, 2048, (1999,), "bfloat16", k_chunk_size=64, max_cores_per_head_batch=max_cores)
    outcome = run_case(emu_device, case, to_device=_to_device(emu_device), to_torch=emu_device.to_torch)
    assert outcome.plan.num_cores_per_head == max_cores
    assert_matches_golden(outcome, case)


@pytest.mark.parametrize(
    "batch, cur_pos",
    [(1, (2047,)), (2, (2047, 700)), (8, (2047, 700, 0, 1500, 64, 1023, 1999, 300))],
    ids=["b1-8-groups", "b2-16-groups-uneven", "b8-64-groups-one-core-each"],
)
def test_noc1_readers(emu_device, batch, cur_pos):
    """Llama-3.1-8B's N150 call (32 q / 8 kv heads, d128, paged bfloat8_b, 8x8 grid, the planner's config): a
    DRAM-bound plan whose every eighth reading core reads over NoC 1 (its reader and writer kernels on swapped NoCs;
    never the root of a group of several, which multicasts Q) matches the golden. At batch 8 each group has a core of
    its own, and the NoC 1 kernels carry the work table of their 8 cores only (factory.build_program)."""
    case = DecodeCase(
        batch,
        32,
        8,
        128,
        2048,
        cur_pos,
        "bfloat8_b",
        block_size=64,
        max_cores_per_head_batch=16,
        exp_approx_mode=False,
    )
    outcome = run_case(emu_device, case, to_device=_to_device(emu_device), to_torch=emu_device.to_torch)
    swapped = noc1_reader_cores(outcome.plan, NOC1_READER_STRIDE["wormhole_b0"])
    reading = [c for c in outcome.plan.cores if c.role != "idle"]
    assert len(reading) == 64 and len(swapped) == 8
    assert all(c.index_in_group != 0 or c.num_cores_per_head == 1 for c in reading if c.core in swapped)
    assert_matches_golden(outcome, case)


def test_kv_read_exactly_once_and_nothing_past_cur_pos(emu_device):
    """The counters: every live K/V tile is read once per run, tiles past cur_pos's tile never."""
    cur_pos = (700, 1500, -1, 31)
    case = DecodeCase(4, 8, 2, 64, 2048, cur_pos, "bfloat8_b", k_chunk_size=128, max_cores_per_head_batch=4)
    outcome = run_case(emu_device, case, to_device=_to_device(emu_device), to_torch=emu_device.to_torch)
    assert_matches_golden(outcome, case)
    dht = case.head_dim // 32
    st = case.kv_len // 32
    for tensor in (outcome.k, outcome.v):
        reads = outcome.stats.pages_read(tensor)
        expected = {}
        for b, p in enumerate(cur_pos):
            for h in range(case.n_kv_heads):
                if p < 0:
                    continue
                for s in range(p // 32 + 1):
                    for d in range(dht):
                        expected[((b * case.n_kv_heads + h) * st + s) * dht + d] = 1
        assert dict(reads) == expected, f"{tag(outcome.seed)} pages read of {'K' if tensor is outcome.k else 'V'}"


def _perturbed_golden(q, k, v, cur_pos, how):
    """A deliberately wrong attention, to prove the thresholds catch kernel bugs."""
    if how == "dropped_chunk":
        k = k.clone()
        k[:, :, 128:256] = -1e4  # chunk 1 contributes nothing
        return golden.sdpa_decode(q, k, v, cur_pos=cur_pos)
    if how == "no_rescale":
        # Flash attention that forgets exp(m_old - m_new): each chunk's probabilities use its own max.
        chunks = []
        scale = q.shape[-1] ** -0.5
        g = q.shape[2] // k.shape[1]
        kk = k.repeat_interleave(g, dim=1)
        vv = v.repeat_interleave(g, dim=1)
        s = torch.einsum("qbhd,bhsd->bhqs", q, kk) * scale
        o = torch.zeros(q.shape[1], q.shape[2], 1, v.shape[-1])
        l = torch.zeros(q.shape[1], q.shape[2], 1, 1)
        for c in range(0, cur_pos[0] + 1, 128):
            sc = s[..., c : min(c + 128, cur_pos[0] + 1)]
            p = torch.exp(sc - sc.amax(-1, keepdim=True))
            o = o + p @ vv[:, :, c : c + p.shape[-1]]
            l = l + p.sum(-1, keepdim=True)
            chunks.append(c)
        return (o / l).permute(2, 0, 1, 3)
    if how == "sink_dropped":
        # A sink logit near the row's softmax mass (decode_harness.sink_logits), read but never merged.
        return golden.sdpa_decode(q, k, v, cur_pos=cur_pos)
    if how == "uniform_scale":
        # A wrong normaliser by a constant factor: PCC cannot see it at all, only the relative max-abs bound can.
        return golden.sdpa_decode(q, k, v, cur_pos=cur_pos) * 0.8
    raise ValueError(how)


@pytest.mark.parametrize("exp_approx_mode", [False, None], ids=["exact-exp", "default-exp"])
@pytest.mark.parametrize("how", ["dropped_chunk", "no_rescale", "sink_dropped", "uniform_scale"])
def test_thresholds_reject_wrong_kernels(how, exp_approx_mode):
    """The thresholds (decode_harness.check_close, at their loosest: bfloat4_b) reject known-wrong attentions, with
    the exact exp's thresholds and with the default (approximate) exp's looser PCC floor and max-abs factor."""
    from decode_harness import check_close, exp_factor, pcc_floor, sink_logits

    seed = seed_for(f"test_thresholds_reject_wrong_kernels {how}")
    gen = generator(seed)
    q = torch.randn(1, 1, 8, 64, generator=gen)
    k = torch.randn(1, 1, 1024, 64, generator=gen) * 2
    v = torch.randn(1, 1, 1024, 64, generator=gen)
    cur_pos = [1000]
    sink = sink_logits(DecodeCase(1, 8, 1, 64, 1024, tuple(cur_pos), attention_sink=True), gen)
    right = golden.sdpa_decode(q, k, v, cur_pos=cur_pos, attention_sink=sink if how == "sink_dropped" else None)
    wrong = _perturbed_golden(q, k, v, cur_pos, how)
    factor, pcc_min = exp_factor(exp_approx_mode), pcc_floor("bfloat4_b", exp_approx_mode)
    with pytest.raises(AssertionError):
        check_close(wrong, right, "bfloat4_b", seed, how, factor, pcc_min)


def _to_device(device):
    from ttemu.ttnn_env import import_ttnn

    ttnn = import_ttnn()
    return lambda x, dtype: device.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
