"""Runs one FlashDecode case on a backend and checks it against the golden model.

Shared by the emulator tests and the device tests, so both check exactly the same things: seeded random inputs,
the golden evaluated on the values the device stores (bf16 Q, mask and sinks, quantised K/V), PCC and max-abs
thresholds, and every output element written (the output buffer is poisoned with NaN and passed in as
``output_tensor``).

Seeds. Every random input comes from a seeded ``torch.Generator``. A case's seed is ``case.seed`` when the test sets
one, else derived from the case itself (``crc32(str(case))``), so every run of a test sees the same inputs. The
environment variable ``TTFD_SEED`` overrides every seed: ``TTFD_SEED=123 pytest ...`` tries other inputs, or
replays a failure. Every assertion message starts with ``[seed N; replay: TTFD_SEED=N pytest '<test id>']``
(:func:`tag`); tests that draw their own inputs take their seed from :func:`seed_for`.

Error bounds (:func:`error_bound`). The max-abs bound is relative to the output's magnitude:
``max(MAX_ABS_REL[kv_dtype] * max|expected|, MAX_ABS_FLOOR[kv_dtype])``, times :func:`dst_factor` (0.4 with an fp32
DST; with a bfloat16 DST 1, growing as sqrt(head_dim / 1024) past head_dim 1024). An absolute bound would exceed the
whole output on long contexts (max |out| ~ 0.03 at 32K positions), leaving those cases to PCC alone, and PCC ignores
a uniform scale (a dropped sink, a wrong normaliser). The floor only matters for outputs near zero.

Sinks (:func:`sink_logits`) are drawn around the log of the softmax mass of the scores they compete with, so they
take a large share of each row's denominator; :func:`assert_matches_golden` also checks that the sinks moved the
output by more than twice the error bound (so a kernel that reads the sinks but never merges them cannot pass).
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from ttemu.tests.fixtures import SEED_ENV, seed_for
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.decode import api as op_module

# Thresholds against the golden on the same quantised inputs. The kernels keep S, P, O, m and l in bfloat16
# (fp32 with fp32_dest_acc_en), so a correct kernel lands well inside them; a dropped chunk or a missing rescale
# moves PCC to ~0.9 and the max error to a large fraction of the output (test_flash_decode.py::
# test_thresholds_reject_wrong_kernels, and perf/mutation_check.py for the kernels themselves).
PCC_MIN = {"bfloat16": 0.999, "bfloat8_b": 0.999, "bfloat4_b": 0.995}
# max |error| <= max(MAX_ABS_REL * max |expected|, MAX_ABS_FLOOR) (x dst_factor): see error_bound.
# Measured over the emulator tests (test_features, test_flash_decode, test_readme, test_fuzz), the worst
# max |error| / max |expected| of a correct kernel is 0.031 (bfloat16), 0.035 (bfloat8_b) and 0.021 (bfloat4_b) with a
# bfloat16 DST up to head_dim 1024, 0.043 at head_dim 2048 once divided by dst_factor, and 0.0065 with an fp32 DST.
MAX_ABS_REL = {"bfloat16": 0.06, "bfloat8_b": 0.06, "bfloat4_b": 0.08}
MAX_ABS_FLOOR = {"bfloat16": 0.001, "bfloat8_b": 0.001, "bfloat4_b": 0.002}


def case_seed(case: DecodeCase) -> int:
    """``TTFD_SEED`` when set, else ``case.seed`` when the test set one, else derived from the case."""
    if os.environ.get(SEED_ENV, "").strip() or case.seed is None:
        return seed_for(str(case))
    return case.seed


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def tag(seed: int | None) -> str:
    """The prefix of every assertion message: the seed, and the command that replays the failing test with it."""
    if seed is None:
        return "[inputs drawn by the caller]"
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    return f"[seed {seed}; replay: {SEED_ENV}={seed} pytest '{test}']" if test else f"[seed {seed}; {SEED_ENV}={seed}]"


def dst_factor(head_dim: int, fp32_dest_acc_en: bool) -> float:
    """The bound's factor for the DST's precision. An fp32 DST keeps scores, P and O to fp32 (errors ~5x smaller: the
    bound tightens to 0.4). A bfloat16 DST rounds each score after every one of head_dim / 32 tile products it
    accumulates, a random walk that grows as the square root of that depth: past head_dim 1024 the bound grows
    with it (measured at 2048)."""
    return 0.4 if fp32_dest_acc_en else max(1.0, (head_dim / 1024) ** 0.5)


def error_bound(expected: torch.Tensor, kv_dtype: str, factor: float = 1.0) -> float:
    """THE max-abs rule: relative to the largest |expected|, with a small absolute floor for near-zero outputs."""
    peak = float(expected.abs().max()) if expected.numel() else 0.0
    return factor * max(MAX_ABS_REL[kv_dtype] * peak, MAX_ABS_FLOOR[kv_dtype])


def check_close(
    out: torch.Tensor,
    expected: torch.Tensor,
    kv_dtype: str,
    seed: int | None,
    what: str,
    factor: float = 1.0,
    pcc_min: float | None = None,
) -> None:
    """Shape, every element written (no NaN), PCC and the relative max-abs bound, with the seed in every message.
    ``pcc_min``: the PCC floor (default PCC_MIN[kv_dtype]; :func:`pcc_floor` gives the approximate exp's)."""
    t = f"{tag(seed)} {what}"
    assert out.shape == expected.shape, f"{t}: output shape {tuple(out.shape)} != {tuple(expected.shape)}"
    unwritten = torch.isnan(out).sum().item()
    assert unwritten == 0, f"{t}: {unwritten} output elements are NaN (never written over the poison, or garbage)"
    pcc, floor = golden.pcc(out, expected), PCC_MIN[kv_dtype] if pcc_min is None else pcc_min
    assert pcc >= floor, f"{t}: PCC {pcc:.6f} < {floor}"
    err, bound = golden.max_abs_error(out, expected), error_bound(expected, kv_dtype, factor)
    peak = float(expected.abs().max())
    assert err <= bound, f"{t}: max |error| {err:.5f} > bound {bound:.5f} (max |expected| {peak:.5f})"


@dataclass(frozen=True)
class DecodeCase:
    batch: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    kv_len: int
    cur_pos: tuple[int, ...] | None  # None: non-causal
    kv_dtype: str = "bfloat16"
    k_chunk_size: int = 0
    max_cores_per_head_batch: int = 16
    grid: tuple[int, int] = (8, 8)
    seed: int | None = None  # None: derived from the case (see case_seed); TTFD_SEED overrides either
    q_len: int = 1
    v_head_dim: int | None = None
    sliding_window_size: int | None = None
    attention_sink: bool = False
    sink_upstream_form: bool = False  # upstream's [32k, 32] sinks, head h's unscaled value at (h, 0)
    scale: float | None = None  # the call's softmax scale; None: the op's default 1 / sqrt(head_dim)
    block_size: int | None = None  # paged cache with this block size
    share_cache: bool = False
    mask_heads: int = 0  # non-causal with an attn_mask of this many heads (1 or n_q_heads); 0: no mask
    mask_dtype: str = "bfloat16"
    fp32_dest_acc_en: bool = False
    out_dtype: str = "bfloat16"
    out_sharded: bool = False  # output L1 height-sharded, one (token, user) tile row block per core
    # None: the op's default (the approximate exp, as upstream's); False pins the exact exp (cases about the kernel's
    # arithmetic in the exact path: its Q scaling and accurate exp must stay covered at the same thresholds).
    exp_approx_mode: bool | None = None
    extra: dict = field(default_factory=dict, compare=False)

    def program_config(self) -> ProgramConfig:
        return ProgramConfig(
            compute_with_storage_grid_size=self.grid,
            k_chunk_size=self.k_chunk_size,
            exp_approx_mode=self.exp_approx_mode,
            max_cores_per_head_batch=self.max_cores_per_head_batch,
        )

    def __str__(self) -> str:
        features = [
            f"q{self.q_len}" if self.q_len > 1 else "",
            f"vd{self.v_head_dim}" if self.v_head_dim else "",
            f"win{self.sliding_window_size}" if self.sliding_window_size else "",
            ("sink32" if self.sink_upstream_form else "sink") if self.attention_sink else "",
            f"paged{self.block_size}" if self.block_size else "",
            "shared" if self.share_cache else "",
            f"scale{self.scale}" if self.scale is not None else "",
            f"mask{self.mask_heads}{'' if self.mask_dtype == 'bfloat16' else '-' + self.mask_dtype}"
            if self.mask_heads
            else ("noncausal" if self.cur_pos is None else ""),
            "fp32acc" if self.fp32_dest_acc_en else "",
            f"out-{self.out_dtype}" if self.out_dtype != "bfloat16" else "",
            "out-l1-sharded" if self.out_sharded else "",
            "" if self.exp_approx_mode is None else ("exp-approx" if self.exp_approx_mode else "exp-exact"),
        ]
        return "-".join(
            [
                f"b{self.batch}",
                f"h{self.n_q_heads}/{self.n_kv_heads}",
                f"d{self.head_dim}",
                f"S{self.kv_len}",
                self.kv_dtype,
                f"sk{self.k_chunk_size}",
                f"c{self.max_cores_per_head_batch}",
                f"g{self.grid[0]}x{self.grid[1]}",
                *[f for f in features if f],
            ]
        )


@dataclass
class DecodeOutcome:
    out: torch.Tensor
    expected: torch.Tensor
    pcc: float
    max_abs_err: float
    stats: object
    plan: object
    k: object
    v: object
    page_table: torch.Tensor | None
    out_tensor: object = None  # the device output tensor
    seed: int | None = None  # the seed of the inputs (None: drawn by the caller)
    expected_without_sink: torch.Tensor | None = None  # the golden of the same call without its sinks
    result: object = None  # the call's DecodeResult (return_stats=True): plan, stats, staging, convert_stats


class Draw(Protocol):
    """Where a random case's choices come from: hypothesis's ``st.data()`` in the tests, a ``random.Random`` in perf
    scripts (:class:`RandomDraw`)."""

    def sampled_from(self, options: Sequence): ...
    def integers(self, low: int, high: int) -> int: ...
    def booleans(self) -> bool: ...


class RandomDraw:
    """:class:`Draw` from a seeded ``random.Random``."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def sampled_from(self, options: Sequence):
        return self.rng.choice(list(options))

    def integers(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def booleans(self) -> bool:
        return self.rng.random() < 0.5


def feature_mix_case(draw: Draw) -> DecodeCase:
    """The case of tests/test_features.py::test_random_feature_mix: shapes, positions, features and the tensors' seed
    drawn together (the order of the draws is what a hypothesis failure blob replays: keep it). perf/
    precision_sweep.py --exp-features draws the same distribution."""
    n_kv = draw.sampled_from([1, 2])
    g = draw.sampled_from([1, 4, 8])
    q_len = draw.integers(1, 3)
    kv_len = draw.sampled_from([128, 256, 512])
    batch = draw.integers(1, 3)
    causal = draw.booleans()
    cur_pos = tuple(draw.integers(q_len - 1, kv_len - 1) for _ in range(batch)) if causal else None
    return DecodeCase(
        batch,
        n_kv * g,
        n_kv,
        draw.sampled_from([32, 64, 128]),
        kv_len,
        cur_pos,
        draw.sampled_from(["bfloat16", "bfloat8_b"]),
        k_chunk_size=draw.sampled_from([32, 64, 128]),
        max_cores_per_head_batch=draw.sampled_from([1, 2, 4, 8]),
        grid=draw.sampled_from([(8, 8), (4, 2), (1, 1)]),
        q_len=q_len,
        sliding_window_size=draw.sampled_from([None, 64, 200]) if causal else None,
        attention_sink=draw.booleans(),
        sink_upstream_form=draw.booleans(),
        block_size=draw.sampled_from([None, 32, 64]) if causal else None,
        mask_heads=0 if causal else draw.sampled_from([0, 1]),
        out_dtype=draw.sampled_from(["bfloat16", "bfloat8_b"]),
        seed=draw.integers(0, 2**31 - 1),
    )


def sink_logits(case: DecodeCase, gen: torch.Generator) -> torch.Tensor:
    """[1, n_q_heads] sink logits that take a visible share of every row's softmax denominator.

    Scores are scale * q . k with unit-variance q and k, so they are ~N(0, 1) (a random mask adds another N(0, 1)),
    and the softmax mass of n visible positions is sum exp(s) ~ n * e^(var / 2). Sinks are drawn uniformly within
    +-1 of the log of that mass (averaged over the users), so each head's sink takes roughly 25% to 75% of the
    denominator: it moves the output by a large fraction of its magnitude. (randn * 2 against hundreds of
    positions takes well under 1%, below every threshold: a kernel that dropped the sinks passed.)"""
    if case.cur_pos is None:
        visible = [case.kv_len * (0.7 if case.mask_heads else 1.0)] * case.batch  # 30% of a random mask is -inf
    else:
        visible = [min(p + 1, case.sliding_window_size or p + 1) for p in case.cur_pos if p >= 0] or [1]
    variance = 2.0 if case.mask_heads else 1.0
    centre = sum(math.log(n) for n in visible) / len(visible) + variance / 2
    return centre + 2 * torch.rand(1, case.n_q_heads, generator=gen) - 1


def softmax_scale(case: DecodeCase) -> float:
    """The scale the call runs with: the case's, else the op's default 1 / sqrt(head_dim)."""
    return case.head_dim**-0.5 if case.scale is None else case.scale


def upstream_sink_tensor(logits: torch.Tensor, scale: float, gen: torch.Generator) -> torch.Tensor:
    """Upstream's sink form for ``logits`` [1, n_q_heads]: [n_q_heads padded to 32, 32], head h's value logits[h] /
    scale at (h, 0) (the kernels multiply it by the scale), random junk everywhere else (never to be read)."""
    n_q = logits.shape[-1]
    t = torch.randn(-(-n_q // 32) * 32, 32, generator=gen) * 50
    t[:n_q, 0] = logits.reshape(-1) / scale
    return t


def inputs(case: DecodeCase, gen: torch.Generator):
    """Seeded random Q/K/V (and the optional mask, sinks and page table) for ``case``, as torch tensors; K and V are
    always distinct tensors (V passed as K would hide a K/V swap)."""
    vd = case.v_head_dim or case.head_dim
    kv_users = 1 if case.share_cache else case.batch
    q = torch.randn(case.q_len, case.batch, case.n_q_heads, case.head_dim, generator=gen)
    t = {"q": q}
    if case.block_size:
        per_user = case.kv_len // case.block_size
        num_blocks = kv_users * per_user + 3  # a few spare blocks nobody uses
        perm = torch.randperm(num_blocks, generator=gen)[: kv_users * per_user].reshape(kv_users, per_user)
        if kv_users > 1 and per_user > 1:
            perm[1, 0] = perm[0, 0]  # two users share a block (e.g. a common prompt prefix)
        t["page_table"] = perm.to(torch.int32)
        t["k"] = torch.randn(num_blocks, case.n_kv_heads, case.block_size, case.head_dim, generator=gen)
        t["v"] = torch.randn(num_blocks, case.n_kv_heads, case.block_size, vd, generator=gen)
    else:
        t["k"] = torch.randn(kv_users, case.n_kv_heads, case.kv_len, case.head_dim, generator=gen)
        t["v"] = torch.randn(kv_users, case.n_kv_heads, case.kv_len, vd, generator=gen)
    if case.mask_heads:
        mask = torch.randn(case.batch, case.mask_heads, case.q_len, case.kv_len, generator=gen)
        hidden = torch.rand(mask.shape, generator=gen) < 0.3
        hidden[..., 0] = False  # every row keeps at least one visible position
        t["attn_mask"] = mask.masked_fill(hidden, float("-inf"))
    if case.attention_sink:
        t["attention_sink"] = sink_logits(case, gen)
        if case.sink_upstream_form:
            t["attention_sink_upstream"] = upstream_sink_tensor(t["attention_sink"], softmax_scale(case), gen)
    return t


def height_sharded_output_config(case: DecodeCase):
    """L1 height-sharded output: each core of the case's grid (row-major) holds the tile rows of one (token, user)."""
    ttnn = import_ttnn()
    rows = -(-case.n_q_heads // 32) * 32
    width = -(-(case.v_head_dim or case.head_dim) // 32) * 32
    num_shards = case.q_len * case.batch
    gx = case.grid[0]
    cores = ttnn.CoreRangeSet(
        [ttnn.CoreRange(ttnn.CoreCoord(i % gx, i // gx), ttnn.CoreCoord(i % gx, i // gx)) for i in range(num_shards)]
    )
    spec = ttnn.ShardSpec(cores, [rows, width], ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)


def run_case(device, case: DecodeCase, *, to_device, to_torch, compute_kernel_config=None) -> DecodeOutcome:
    """``to_device(torch_tensor, dtype, **memory_config)`` (tile layout) and ``to_torch(tensor)`` adapt the backend;
    ``compute_kernel_config``, when given, is the call's (else the case's fp32_dest_acc_en decides)."""
    ttnn = import_ttnn()
    seed = case_seed(case)
    t = inputs(case, generator(seed))
    kv_dtype = getattr(ttnn, case.kv_dtype)
    bf16 = ttnn.bfloat16
    vd = case.v_head_dim or case.head_dim
    poison = torch.full((case.q_len, case.batch, case.n_q_heads, vd), float("nan"))
    out_kw = {"memory_config": height_sharded_output_config(case)} if case.out_sharded else {}
    kwargs = dict(
        program_config=case.program_config(),
        output_tensor=to_device(poison, getattr(ttnn, case.out_dtype), **out_kw),
        return_stats=True,
        share_cache=case.share_cache,
        sliding_window_size=case.sliding_window_size,
    )
    if case.scale is not None:
        kwargs["scale"] = case.scale
    if case.cur_pos is None:
        kwargs["is_causal"] = False
    else:
        kwargs["cur_pos"] = list(case.cur_pos)
    if case.mask_heads:
        kwargs["attn_mask"] = to_device(t["attn_mask"], getattr(ttnn, case.mask_dtype))
    if case.attention_sink:
        sink = t["attention_sink_upstream"] if case.sink_upstream_form else t["attention_sink"]
        kwargs["attention_sink"] = to_device(sink, bf16)
    if case.fp32_dest_acc_en:
        kwargs["compute_kernel_config"] = ttnn.WormholeComputeKernelConfig(
            math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True, math_approx_mode=False
        )
    if compute_kernel_config is not None:
        kwargs["compute_kernel_config"] = compute_kernel_config
    tt_q, tt_k, tt_v = to_device(t["q"], bf16), to_device(t["k"], kv_dtype), to_device(t["v"], kv_dtype)
    if case.block_size:
        tt_out, run = op_module.paged_scaled_dot_product_attention_decode(tt_q, tt_k, tt_v, t["page_table"], **kwargs)
    else:
        tt_out, run = op_module.scaled_dot_product_attention_decode(tt_q, tt_k, tt_v, **kwargs)
    out = to_torch(tt_out).float()

    def stored(name, dtype="bfloat16"):
        return golden.quantize_like_device(t[name], dtype) if name in t else None

    sink = stored("attention_sink")
    if case.attention_sink and case.sink_upstream_form:
        # the device holds value / scale in bfloat16; the kernels' logit is scale * that value
        sink = softmax_scale(case) * stored("attention_sink_upstream")[: case.n_q_heads, 0].reshape(1, case.n_q_heads)

    def expect(attention_sink):
        return golden.sdpa_decode(
            stored("q"),
            stored("k", case.kv_dtype),
            stored("v", case.kv_dtype),
            is_causal=case.cur_pos is not None,
            cur_pos=None if case.cur_pos is None else list(case.cur_pos),
            attn_mask=stored("attn_mask", case.mask_dtype),
            sliding_window_size=case.sliding_window_size,
            attention_sink=attention_sink,
            scale=case.scale,
            page_table=t.get("page_table"),
            share_cache=case.share_cache,
        )

    expected = expect(sink)
    return DecodeOutcome(
        out=out,
        expected=expected,
        pcc=golden.pcc(out, expected),
        max_abs_err=golden.max_abs_error(out, expected),
        stats=run.stats,
        plan=run.plan,
        k=tt_k,
        v=tt_v,
        page_table=t.get("page_table"),
        out_tensor=tt_out,
        seed=seed,
        expected_without_sink=expect(None) if case.attention_sink else None,
        result=run,
    )


# The default exp is upstream's approximate one (exp_approx_mode unset or True): each softmax weight carries a few
# per cent of relative error (the LLK's Schraudolph-style exp, docs/TIMING.md), against ~0.4% for the exact exp. Cases
# that run it get their own PCC floor and a factor on the max-abs bound; kernel-arithmetic tests pin
# exp_approx_mode=False and keep the exact exp's thresholds (PCC_MIN, MAX_ABS_REL). Set from
# `perf/precision_sweep.py --exp-features` (test_random_feature_mix's draws, each run with both exps on the same
# inputs; docs/PRECISION.md "Test thresholds under the approximate exp"): over 707 draws of the mix (--seed 1 --cases
# 300; --seed 2 --only sink+mask,mask, 40; --seed 3 --only sink+mask, 367) and 72 draws with a random mask after the
# kernel began adding a user mask after the matmul (--seed 4 --only sink+mask,mask), the approximate exp's worst PCC is
# 0.99946 (1 - PCC 5.4e-4, a draw without sinks or a mask; the mask classes' worst 0.99958, 0.99899 before that fix)
# and its worst max |error| 1.35x the exact exp's bound (0.081 x max |expected|, a bfloat8_b output; the exact exp's
# worst 0.97x). Thresholds: 1 - PCC at most twice that worst, the bound 1.6x (1.19x over that worst). bfloat4_b (not
# in the mix) keeps its floor. Wrong kernels still fail them: a dropped chunk or a missing rescale (PCC 0.88 / 0.78),
# sinks read but not merged (PCC 0.9944, 1.97x the bfloat4_b bound) and a 0.8x normaliser (2.5x)
# (test_flash_decode.py::test_thresholds_reject_wrong_kernels, both exps), and so do all 33 kernel mutations of
# perf/mutation_check.py at the 0.998 floor these replace (the weakest: PCC 0.9975, max |error| 2.0x the bound).
PCC_MIN_APPROX_EXP = {"bfloat16": 0.9989, "bfloat8_b": 0.9989, "bfloat4_b": PCC_MIN["bfloat4_b"]}
APPROX_EXP_FACTOR = 1.6


def exp_factor(exp_approx_mode: bool | None) -> float:
    """The bound's factor for the softmax's exp: APPROX_EXP_FACTOR unless the exact exp is asked for."""
    return 1.0 if exp_approx_mode is False else APPROX_EXP_FACTOR


def pcc_floor(kv_dtype: str, exp_approx_mode: bool | None) -> float:
    """The PCC floor for the softmax's exp: PCC_MIN_APPROX_EXP unless the exact exp is asked for."""
    return PCC_MIN[kv_dtype] if exp_approx_mode is False else PCC_MIN_APPROX_EXP[kv_dtype]


def max_abs_err_for(case: DecodeCase, expected: torch.Tensor) -> float:
    """The max-abs threshold of a case against ``expected`` (see error_bound)."""
    factor = dst_factor(case.head_dim, case.fp32_dest_acc_en) * exp_factor(case.exp_approx_mode)
    return error_bound(expected, case.kv_dtype, factor)


def assert_matches_golden(outcome: DecodeOutcome, case: DecodeCase) -> None:
    out, expected = outcome.out, outcome.expected
    factor = dst_factor(case.head_dim, case.fp32_dest_acc_en) * exp_factor(case.exp_approx_mode)
    pcc_min = pcc_floor(case.kv_dtype, case.exp_approx_mode)
    check_close(out, expected, case.kv_dtype, outcome.seed, str(case), factor, pcc_min)
    t = f"{tag(outcome.seed)} {case}"
    for b, p in enumerate(case.cur_pos or ()):
        if p == -1:
            assert torch.count_nonzero(out[:, b]) == 0, f"{t}: skipped user {b} must get zero rows"
    if outcome.expected_without_sink is not None:
        # The sinks must have moved the output: by more than twice the bound, a kernel that read the sinks but never
        # merged them would miss the golden by more than the bound.
        bound = max_abs_err_for(case, expected)
        moved = golden.max_abs_error(out, outcome.expected_without_sink)
        assert moved > 2 * bound, (
            f"{t}: the sinks moved the output by only {moved:.5f} (<= 2 x bound {bound:.5f}): "
            "the test cannot tell merged sinks from ignored ones"
        )


# ---- ttnn arguments as model code builds them (shared by the tests that replay model and upstream calls) -----------


def run_on_emulator(device, case: DecodeCase) -> DecodeOutcome:
    """Runs ``case`` on an emulated ``device`` (its tensors made by the device's own from_torch) and checks it
    against the golden model."""
    ttnn = import_ttnn()
    outcome = run_case(
        device,
        case,
        to_device=lambda x, dtype, **kw: device.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, **kw),
        to_torch=device.to_torch,
    )
    assert_matches_golden(outcome, case)
    return outcome


def tile(device, x: torch.Tensor, dtype="bfloat16", memory_config=None):
    """``x`` as a TILE-layout device tensor of ``dtype`` (a name such as "bfloat8_b", or a ttnn dtype)."""
    ttnn = import_ttnn()
    dtype = getattr(ttnn, dtype) if isinstance(dtype, str) else dtype
    return device.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, memory_config=memory_config)


def int32(device, values):
    """``values`` (a list or a tensor) as a row-major int32 device tensor: positions, page tables, indices."""
    ttnn = import_ttnn()
    return device.from_torch(torch.as_tensor(values).to(torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


def spec_paged_inputs(gen: torch.Generator, cur_pos: list[int], tg: int, head_dim: int, per_user: int, block: int):
    """A ``spec_multi_pos_tiles=tg`` paged case: q ``[1, rows, tg * 32, head_dim]`` (rows = len(cur_pos) / tg), a
    random page table of ``per_user`` blocks a row over two spare blocks, K and V ``[blocks, 1, block, head_dim]``,
    and ``hidden``: True where no candidate of the row that owns the block can see the position (past the row's last
    bound, or a block no row owns), for the caller to fill with garbage."""
    rows = len(cur_pos) // tg
    num_blocks = rows * per_user + 2
    table = torch.randperm(num_blocks, generator=gen)[: rows * per_user].reshape(rows, per_user).to(torch.int32)
    q = torch.randn(1, rows, tg * 32, head_dim, generator=gen)
    k = torch.randn(num_blocks, 1, block, head_dim, generator=gen)
    v = torch.randn(num_blocks, 1, block, head_dim, generator=gen)
    live = torch.zeros(num_blocks, block, dtype=torch.bool)
    for r in range(rows):
        for pos in range(max(cur_pos[r * tg : (r + 1) * tg]) + 1):
            live[table[r, pos // block], pos % block] = True
    return table, q, k, v, ~live[:, None, :, None].expand_as(k)


def height_sharded(num_shards: int, shard_shape, grid_x: int = 8):
    """What nlp_create_qkv_heads_decode / create_sharded_memory_config give: L1 height-sharded, shard i on logical
    core (i % grid_x, i // grid_x), ROW_MAJOR orientation."""
    ttnn = import_ttnn()
    cores = ttnn.CoreRangeSet(
        [
            ttnn.CoreRange(ttnn.CoreCoord(i % grid_x, i // grid_x), ttnn.CoreCoord(i % grid_x, i // grid_x))
            for i in range(num_shards)
        ]
    )
    spec = ttnn.ShardSpec(cores, list(shard_shape), ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)


def hifi4():
    """tt_transformers' sdpa_decode_compute_kernel_cfg (and the other models' decode configs)."""
    ttnn = import_ttnn()
    return ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=False, fp32_dest_acc_en=False, packer_l1_acc=False
    )


def sdpa_config(k_chunk_size: int, q_chunk_size: int = 0):
    """upstream's SDPAProgramConfig on the 8x8 grid with the exact exp."""
    ttnn = import_ttnn()
    return ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=(8, 8),
        q_chunk_size=q_chunk_size,
        k_chunk_size=k_chunk_size,
        exp_approx_mode=False,
    )


def decode_config(k_chunk_size: int = 64, cores: int = 4) -> ProgramConfig:
    """The package's ProgramConfig on the 8x8 grid with ``cores`` cores per (head, batch)."""
    return ProgramConfig(
        compute_with_storage_grid_size=(8, 8), k_chunk_size=k_chunk_size, max_cores_per_head_batch=cores
    )


def emulated_n150(*, min_hang_ms: int = 0):
    """Fixture body: an emulated N150, closed afterwards. ``min_hang_ms``: a decode step launches several programs of
    many threads, and on a loaded machine a runnable thread can wait longer than the emulator's 200 ms no-progress
    window for a CPU, which it would report as a hang."""
    import ttemu  # noqa: PLC0415

    device = ttemu.open_device("n150")
    device.default_hang_ms = max(device.default_hang_ms, min_hang_ms)
    yield device
    device.close()
