"""Fuzz test of the op's robustness contract (issue 9, item 7): random bad calls and random garbage, bounded in time.

One test per class of the contract, each drawing seeded random cases until its time budget or its case cap:

A  ``test_garbage_never_poisons_visible_rows``: K/V positions a query cannot see (past cur_pos, inside the last
   live tile and chunk, before a sliding window, rows of paged blocks nobody's table reaches) hold NaN / +-Inf /
   huge values, and unused page-table slots hold garbage (-1, 10**6, random ints); the output must equal the golden
   computed on a clean copy (garbage replaced by zeros or randn, quantised like the device stores it).
B  ``test_masked_rows``: non-causal calls with an additive mask holding -inf (padding masks, whole k chunks
   hidden, rows hidden everywhere): rows that see something match the golden, rows that see nothing are exactly 0.
C  ``test_bad_device_cur_pos`` / ``test_bad_device_page_table``: a device cur_pos out of range (< -1, >= kv_len, or
   below q_len - 1) or a needed device page-table entry outside [0, num_blocks) zeroes exactly that user's rows;
   every other user still matches the golden.
D  ``test_bad_calls_raise_before_anything_runs``: one argument of a valid call mutated at random (out-of-range
   scales and windows, q / v / the page table / MLA's head_dim_v missing among them); the call raises
   TypeError or ValueError naming that argument, and never uploads, allocates or launches (the device's methods
   are patched, as in test_op_validation.py). Unmutated control calls must get through validation.
E  Everywhere: an ``EmulatorHang`` / ``KernelFault`` (or any other emulator error) is a failure of the case.
F  ``test_scale_range``: a scale at either end of ``[SCALE_MIN, SCALE_MAX]`` runs right with either exp (golden,
   random positions, a planted winner at SCALE_MAX); a positive finite one outside is refused naming scale by the op
   and by ``FlashDecodeWrapper.plan``, before anything runs.
G  ``test_plan_refuses_what_run_refuses``: plan() arguments, valid or with one made bad (q_len, head_dim, heads,
   window, scale, dtypes); plan() accepts exactly when the op's validation of the matching call does (then
   wrapper.run() reaches the launch too), and both errors name the argument.
H  ``test_garbage_behind_masks``: NaN / Inf / huge K or V at positions a user mask hides from every row of their
   (user, kv head) group; the output equals the golden on a clean copy, rows that see nothing are 0.

Knobs (environment): ``TTFD_FUZZ_SECONDS`` time budget per test (default 10 s; every shape's first case runs
whatever the clock says, since on a cold cache it compiles the kernels, and at least ``MIN_CASES`` run),
``TTFD_FUZZ_SEED`` the seed (default: a fresh one, printed), ``TTFD_FUZZ_CASE`` replay only that case number of
each test. Case ``i`` of test ``t`` is drawn from ``random.Random(f"{seed}/{t}/{i}")`` alone, so a failure message's
``TTFD_FUZZ_SEED=... TTFD_FUZZ_CASE=...`` replays it exactly. ``pytest -s`` shows each test's counts.

Shapes are a small fixed set (shared between the tests, so kernels compile once per shape); values, positions,
garbage and masks are random.
"""

from __future__ import annotations

import math
import os
import random
import re
import time
from collections import Counter
from dataclasses import dataclass

import pytest
import torch

from decode_harness import DecodeCase, DecodeOutcome, assert_matches_golden
from ttemu import EmulatorError
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.checks import SCALE_MAX, SCALE_MIN
from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.decode import api as op_module

_SEED_ENV = os.environ.get("TTFD_FUZZ_SEED")
SEED = int(_SEED_ENV) if _SEED_ENV else random.SystemRandom().randrange(1 << 32)
BUDGET_S = float(os.environ.get("TTFD_FUZZ_SECONDS", "10"))
REPLAY_CASE = int(os.environ["TTFD_FUZZ_CASE"]) if os.environ.get("TTFD_FUZZ_CASE") else None
MAX_FAILURES = 5  # stop a test after this many failing cases (each is reported)
DEVICE_DEADLINE_S = 30.0  # a program running longer than this is a hang (the emulator raises EmulatorHang)

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
NAN, INF = float("nan"), float("inf")


# ---- shapes ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    name: str
    batch: int
    n_q: int
    n_kv: int
    head_dim: int
    kv_len: int
    kv_dtype: str = "bfloat16"
    q_len: int = 1
    window: int | None = None
    block_size: int | None = None  # paged
    num_blocks: int = 0
    k_chunk_size: int = 128
    cores: int = 4
    mask_heads: int = 0  # non-causal with a mask of this many heads
    mask_dtype: str = "bfloat16"

    @property
    def causal(self) -> bool:
        return self.mask_heads == 0

    @property
    def max_blocks(self) -> int:
        return self.kv_len // self.block_size

    def program_config(self) -> ProgramConfig:
        return ProgramConfig((8, 8), k_chunk_size=self.k_chunk_size, max_cores_per_head_batch=self.cores)

    def harness_case(self, cur_pos) -> DecodeCase:
        """The decode_harness case with this shape (for its thresholds and its name)."""
        return DecodeCase(
            self.batch,
            self.n_q,
            self.n_kv,
            self.head_dim,
            self.kv_len,
            None if cur_pos is None else tuple(cur_pos),
            self.kv_dtype,
            k_chunk_size=self.k_chunk_size,
            max_cores_per_head_batch=self.cores,
            q_len=self.q_len,
            sliding_window_size=self.window,
            block_size=self.block_size,
            mask_heads=self.mask_heads,
            mask_dtype=self.mask_dtype,
        )


CONTIG = Shape("contig", 3, 8, 2, 64, 512)
CONTIG_Q3 = Shape("contig-bfp8-q3-win100", 3, 8, 2, 64, 512, "bfloat8_b", q_len=3, window=100)
PAGED = Shape("paged32-d32", 3, 8, 2, 32, 512, block_size=32, num_blocks=52, k_chunk_size=64)
PAGED_WIN = Shape(
    "paged64-bfp4-q2-win200", 3, 8, 1, 64, 512, "bfloat4_b", q_len=2, window=200, block_size=64, num_blocks=28
)
MASK1 = Shape("mask1", 2, 8, 2, 64, 256, k_chunk_size=64, mask_heads=1)
MASK8 = Shape(
    "mask8-bfp8-q2",
    2,
    8,
    2,
    64,
    256,
    "bfloat8_b",
    q_len=2,
    k_chunk_size=64,
    cores=2,
    mask_heads=8,
    mask_dtype="bfloat8_b",
)


# ---- the fuzz loop ---------------------------------------------------------------------------------------------


class FuzzTestBug(RuntimeError):
    """The test's own premise failed (not a contract violation of the op)."""


def _replay_hint(test: str, i: int) -> str:
    return f"replay: TTFD_FUZZ_SEED={SEED} TTFD_FUZZ_CASE={i} pytest tests/test_fuzz.py -k {test}"


def fuzz(test: str, shapes, run_one, *, min_cases: int, max_cases: int) -> None:
    """Runs ``run_one(shape, rng, counts, desc)`` over seeded random cases until the budget, ``max_cases`` or
    ``MAX_FAILURES``; prints the counts; fails listing every failing case (with its replay line).

    ``run_one`` raises AssertionError for a contract violation; it fills ``desc`` with the case it drew."""
    counts: Counter = Counter()
    failures: list[str] = []
    start = time.monotonic()
    indices = [REPLAY_CASE] if REPLAY_CASE is not None else range(max_cases)
    ran = 0
    for i in indices:
        warm_up = i < len(shapes)  # each shape's first case runs whatever the clock says (it may compile kernels)
        if REPLAY_CASE is None and not warm_up and ran >= min_cases and time.monotonic() - start >= BUDGET_S:
            break
        if len(failures) >= MAX_FAILURES:
            counts["stopped early after failures"] = 1
            break
        rng = random.Random(f"{SEED}/{test}/{i}")
        shape = shapes[i] if warm_up else rng.choice(shapes)
        desc: dict = {"shape": getattr(shape, "name", shape)}
        try:
            run_one(shape, rng, counts, desc)
        except AssertionError as e:
            counts["failed"] += 1
            failures.append(f"case {i} {_short(desc)}\n    {str(e).strip()[:1500]}\n    {_replay_hint(test, i)}")
        except Exception as e:  # the test itself broke: stop with the case, so it can be replayed
            where = f"{test} case {i} {_short(desc)}"
            raise FuzzTestBug(f"{where}: {type(e).__name__}: {e}\n{_replay_hint(test, i)}") from e
        ran += 1
        counts[f"shape {desc['shape']}"] += 1
    elapsed = time.monotonic() - start
    print(
        f"\n[fuzz {test}] seed={SEED} cases={ran} failed={len(failures)} time={elapsed:.1f}s "
        f"(budget {BUDGET_S:g}s, min {min_cases}, max {max_cases})"
    )
    for key in sorted(counts):
        print(f"    {key}: {counts[key]}")
    if failures:
        pytest.fail(
            f"{len(failures)} of {ran} fuzz cases broke the contract (seed {SEED}):\n" + "\n".join(failures),
            pytrace=False,
        )
    if REPLAY_CASE is None:
        assert ran >= min_cases, f"only {ran} fuzz cases ran (seed {SEED}); expected at least {min_cases}"


def _short(desc: dict) -> str:
    text = ", ".join(f"{k}={v}" for k, v in desc.items())
    return text if len(text) < 900 else text[:900] + "..."


class _OpRaised(AssertionError):
    pass


def _call_op(fn, *args, **kwargs):
    """The op call of a case that must run: anything it raises (a rejected valid call, EmulatorHang, KernelFault,
    a compile error of the kernels) is a failure of the case."""
    try:
        return fn(*args, **kwargs)
    except EmulatorError as e:
        raise _OpRaised(f"the op raised {type(e).__name__} (hang / crash / emulator error): {e}") from e
    except Exception as e:
        raise _OpRaised(f"the op raised {type(e).__name__} on a call the contract says must run: {e}") from e


@pytest.fixture
def device(emu_device, monkeypatch):
    monkeypatch.setattr(emu_device, "default_deadline_s", DEVICE_DEADLINE_S)
    return emu_device


# ---- inputs: positions, garbage, paged tables ------------------------------------------------------------------


def _ttnn():
    return import_ttnn()


def _put(dev, x, dtype="bfloat16", layout=None):
    ttnn = _ttnn()
    dtype = getattr(ttnn, dtype) if isinstance(dtype, str) else dtype
    return dev.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT if layout is None else layout)


def _put_int32(dev, values):
    ttnn = _ttnn()
    return dev.from_torch(torch.as_tensor(values, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


def _poisoned_output(dev, shape: Shape):
    return _put(dev, torch.full((shape.q_len, shape.batch, shape.n_q, shape.head_dim), NAN))


def _free(*tensors):
    for t in tensors:
        if t is not None and not isinstance(t, torch.Tensor):
            t.deallocate()


def _draw_position(rng: random.Random, shape: Shape, skip_p: float = 0.1) -> int:
    """A valid cur_pos: -1 sometimes, often on a tile / chunk / window edge, otherwise uniform."""
    low, S, ck = shape.q_len - 1, shape.kv_len, shape.k_chunk_size
    r = rng.random()
    if r < skip_p:
        return -1
    if r < 0.45:
        edges = {low, 31, 32, 33, ck - 1, ck, ck + 1, 2 * ck - 1, 2 * ck, S - ck - 1, S - ck, S - 33, S - 32, S - 1}
        if shape.window:
            edges |= {shape.window - 1, shape.window, shape.window + shape.q_len, shape.window + 31}
        return rng.choice(sorted(e for e in edges if low <= e < S))
    return rng.randrange(low, S)


def _visible(shape: Shape, p: int) -> torch.Tensor:
    """[kv_len] bool: positions some query row of a user at cur_pos ``p`` sees ([window_start, p]; none for -1)."""
    vis = torch.zeros(shape.kv_len, dtype=torch.bool)
    if p < 0 or p >= shape.kv_len:
        return vis
    vis[_window_start(shape, p) : p + 1] = True
    return vis


def _window_start(shape: Shape, p: int) -> int:
    if not shape.window:
        return 0
    return max(0, p - shape.q_len + 1 - shape.window + 1)


GARBAGE_MODES = ("tail-tile", "tail-chunk", "before-window", "all-hidden", "random-hidden", "single-row")
GARBAGE_VALUES = ("nan", "+inf", "-inf", "huge", "mixed")


def _garbage_rows(rng: random.Random, shape: Shape, p: int, mode: str) -> torch.Tensor:
    """[kv_len] bool: the hidden positions of a user at ``p`` that ``mode`` fills with garbage."""
    S, hidden = shape.kv_len, ~_visible(shape, p)
    rows = torch.zeros(S, dtype=torch.bool)
    if mode == "none":
        return rows
    if p < 0 or p >= S:  # nothing visible: the whole cache is fair game
        mode = mode if mode in ("random-hidden", "single-row") else "all-hidden"
    if mode == "tail-tile":
        rows[p + 1 : (p // 32 + 1) * 32] = True
    elif mode == "tail-chunk":
        rows[p + 1 : (p // shape.k_chunk_size + 1) * shape.k_chunk_size] = True
    elif mode == "before-window":
        rows[: _window_start(shape, p)] = True
    elif mode == "all-hidden":
        rows[:] = True
    elif mode == "random-hidden":
        rows = torch.tensor([rng.random() < 0.3 for _ in range(S)])
    elif mode == "single-row":
        near = [x for x in (p + 1, _window_start(shape, p) - 1) if 0 <= x < S and p >= 0]
        candidates = near if near and rng.random() < 0.6 else [x for x in range(S) if hidden[x]]
        if candidates:
            rows[rng.choice(candidates)] = True
    return rows & hidden


def _garbage_values(shape_, kind: str, g: torch.Generator) -> torch.Tensor:
    if kind == "nan":
        return torch.full(shape_, NAN)
    if kind == "+inf":
        return torch.full(shape_, INF)
    if kind == "-inf":
        return torch.full(shape_, -INF)
    if kind == "huge":
        sign = torch.where(torch.rand(shape_, generator=g) < 0.5, -1.0, 1.0)
        return sign * torch.where(torch.rand(shape_, generator=g) < 0.5, 1e38, 3e38)
    choices = torch.tensor([NAN, INF, -INF, 1e38, -1e38, 3e38, 65504.0 * 1000])
    return choices[torch.randint(len(choices), shape_, generator=g)]


SLOT_GARBAGE = ("-1", "1e6", "num_blocks", "num_blocks+7", "int32_min", "int32_max", "random-int", "valid-other")


def _slot_garbage(rng: random.Random, kind: str, num_blocks: int) -> int:
    return {
        "-1": -1,
        "-5": -5,
        "1e6": 10**6,
        "num_blocks": num_blocks,
        "num_blocks+7": num_blocks + 7,
        "int32_min": INT32_MIN,
        "int32_max": INT32_MAX,
        "random-int": rng.randrange(INT32_MIN, INT32_MAX + 1),
        "valid-other": rng.randrange(num_blocks),
    }[kind]


@dataclass
class CausalInputs:
    q: torch.Tensor
    k_clean: torch.Tensor  # what the golden sees (before quantisation)
    v_clean: torch.Tensor
    k_dirty: torch.Tensor  # what the device gets
    v_dirty: torch.Tensor
    k_garbage: torch.Tensor  # bool, k's shape: where k_dirty differs from k_clean
    v_garbage: torch.Tensor
    table: torch.Tensor | None  # the true page table (every entry valid)
    table_dirty: torch.Tensor | None  # what the device gets (unused slots may hold garbage)


def _causal_inputs(shape: Shape, rng, g, counts, desc, visibility_pos, *, garbage: bool) -> CausalInputs:
    """Q/K/V (and a page table) for a causal case. With ``garbage``, rows no query can see under
    ``visibility_pos`` (and, paged, unused table slots) get garbage; the clean copy has zeros or randn there."""
    b, S, ql = shape.batch, shape.kv_len, shape.q_len
    q = torch.randn(ql, b, shape.n_q, shape.head_dim, generator=g)
    modes = [rng.choice(("none",) + GARBAGE_MODES) if garbage else "none" for _ in range(b)]
    if garbage and all(m == "none" for m in modes):
        modes[rng.randrange(b)] = rng.choice(GARBAGE_MODES)
    logical = torch.stack([_garbage_rows(rng, shape, p, m) for p, m in zip(visibility_pos, modes)])  # [b, S]
    desc["garbage_modes"] = modes
    for m in modes:
        counts[f"garbage mode {m}"] += 1
    table = table_dirty = None
    if shape.block_size:
        bs, nb, mb = shape.block_size, shape.num_blocks, shape.max_blocks
        table = torch.randperm(nb, generator=g)[: b * mb].reshape(b, mb).to(torch.int32)
        if b > 1 and rng.random() < 0.3:  # two users share a block (a common prompt prefix)
            table[1, 0] = table[0, 0]
            counts["paged: shared block"] += 1
        kv_shape = (nb, shape.n_kv, bs, shape.head_dim)
        visible_rows = torch.zeros(nb, bs, dtype=torch.bool)
        garbage_rows = torch.zeros(nb, bs, dtype=torch.bool)
        needed_blocks = set()
        for u, p in enumerate(visibility_pos):
            vis = _visible(shape, p)
            for pos in range(S):
                block, row = int(table[u, pos // bs]), pos % bs
                if vis[pos]:
                    visible_rows[block, row] = True
                    needed_blocks.add(block)
                if logical[u, pos]:
                    garbage_rows[block, row] = True
        if garbage and rng.random() < 0.5:  # blocks no user's table reaches are garbage through and through
            for block in set(range(nb)) - needed_blocks:
                garbage_rows[block] = True
            counts["paged: unreached blocks garbage"] += 1
        garbage_rows &= ~visible_rows
        row_mask = garbage_rows[:, None, :, None]
        table_dirty = table.clone()
        slot_p = rng.choice((0.0, 0.5, 1.0)) if garbage else 0.0
        for u, p in enumerate(visibility_pos):
            vis = _visible(shape, p)
            for j in range(mb):
                if not vis[j * bs : (j + 1) * bs].any() and rng.random() < slot_p:
                    kind = rng.choice(SLOT_GARBAGE)
                    table_dirty[u, j] = _slot_garbage(rng, kind, nb)
                    counts[f"page-table garbage slot {kind}"] += 1
        desc["table_dirty"] = table_dirty.tolist() if not torch.equal(table, table_dirty) else "clean"
    else:
        kv_shape = (b, shape.n_kv, S, shape.head_dim)
        row_mask = logical[:, None, :, None]
    k_clean = torch.randn(kv_shape, generator=g)
    v_clean = torch.randn(kv_shape, generator=g)
    row_mask = row_mask.expand(kv_shape)
    if rng.random() < 0.5:  # the clean copy holds zeros at the garbage rows (else the randn the device never sees)
        k_clean, v_clean = k_clean.masked_fill(row_mask, 0.0), v_clean.masked_fill(row_mask, 0.0)
        counts["clean copy zeros"] += 1
    target = rng.choice(("K", "V", "KV"))
    kind = rng.choice(GARBAGE_VALUES)
    k_garbage = row_mask & ("K" in target)
    v_garbage = row_mask & ("V" in target)
    k_dirty = torch.where(k_garbage, _garbage_values(kv_shape, kind, g), k_clean)
    v_dirty = torch.where(v_garbage, _garbage_values(kv_shape, kind, g), v_clean)
    n_rows = int(row_mask[..., 0].sum()) // shape.n_kv
    if n_rows:
        desc["garbage"] = f"{kind} in {target}, {n_rows} rows"
        counts[f"garbage value {kind}"] += 1
        counts[f"garbage target {target}"] += 1
        counts["garbage rows"] += n_rows
    else:
        counts["cases without garbage (control)"] += 1
    return CausalInputs(q, k_clean, v_clean, k_dirty, v_dirty, k_garbage, v_garbage, table, table_dirty)


def _check_stored(dev, tensor, clean_stored: torch.Tensor, garbage: torch.Tensor, name: str, counts) -> None:
    """Test premises: outside the garbage rows the device stores exactly the quantised clean copy (block-float
    exponents are shared along the head dim only, so garbage rows do not disturb their neighbours), and the garbage
    did reach the device (non-finite or huge values in its garbage rows)."""
    stored = dev.to_torch(tensor).float()
    if not torch.equal(stored.masked_fill(garbage, 0.0), clean_stored.masked_fill(garbage, 0.0)):
        raise FuzzTestBug(f"{name}: the device stores other values than the quantised clean copy outside garbage rows")
    if garbage.any():
        wild = int((garbage & (~torch.isfinite(stored) | (stored.abs() > 1e30))).sum())
        if wild == 0:
            raise FuzzTestBug(f"{name}: no NaN / Inf / huge value of the garbage rows reached the device")
        counts["garbage elements on the device (NaN/Inf/huge)"] += wild


# ---- output checks ---------------------------------------------------------------------------------------------


def _check_output(
    out: torch.Tensor,
    expected: torch.Tensor,
    shape: Shape,
    cur_pos,
    *,
    zero_users=(),
    zero_rows: torch.Tensor | None = None,
) -> None:
    """Every output element finite (the buffer was NaN-poisoned), users / rows that must be zero exactly zero, the
    rest against the golden with decode_harness's thresholds."""
    assert out.shape == expected.shape, f"output shape {tuple(out.shape)} != {tuple(expected.shape)}"
    for u in range(shape.batch):
        bad = int((~torch.isfinite(out[:, u])).sum())
        assert bad == 0, (
            f"user {u}: {bad} NaN/Inf output elements (garbage leaked into its rows, or rows never "
            "written over the NaN poison)"
        )
    for u in zero_users:
        nonzero = int(torch.count_nonzero(out[:, u]))
        assert nonzero == 0, (
            f"user {u} must get exactly zero rows; {nonzero} elements are not (max |out| {out[:, u].abs().max():.4g})"
        )
    if zero_rows is not None and zero_rows.any():
        got = out[zero_rows]
        nonzero = int(torch.count_nonzero(got))
        assert nonzero == 0, (
            f"{int(zero_rows.sum())} fully masked (token, user, head) rows must be exactly zero; "
            f"{int((got != 0).any(-1).sum())} are not (max |out| {got.abs().max().item():.4g})"
        )
    case = shape.harness_case(cur_pos)
    outcome = DecodeOutcome(
        out=out,
        expected=expected,
        pcc=golden.pcc(out, expected),
        max_abs_err=golden.max_abs_error(out, expected),
        stats=None,
        plan=None,
        k=None,
        v=None,
        page_table=None,
    )
    assert_matches_golden(outcome, case)


def _run_causal(dev, shape: Shape, rng, counts, desc, inputs: CausalInputs, device_pos, golden_pos) -> None:
    """Uploads ``inputs`` (dirty K/V and table), runs the op with ``device_pos`` and checks it against the golden
    on the clean copy at ``golden_pos`` (users whose rows must be zero at -1)."""
    qdt = shape.kv_dtype
    stored = {
        name: golden.quantize_like_device(x, dt)
        for name, x, dt in (("q", inputs.q, "bfloat16"), ("k", inputs.k_clean, qdt), ("v", inputs.v_clean, qdt))
    }
    expected = golden.sdpa_decode(
        stored["q"],
        stored["k"],
        stored["v"],
        cur_pos=list(golden_pos),
        sliding_window_size=shape.window,
        page_table=inputs.table,
    )
    tt_q, tt_k, tt_v = _put(dev, inputs.q), _put(dev, inputs.k_dirty, qdt), _put(dev, inputs.v_dirty, qdt)
    out = _poisoned_output(dev, shape)
    owned = [tt_q, tt_k, tt_v, out]
    try:
        _check_stored(dev, tt_k, stored["k"], inputs.k_garbage, "k", counts)
        _check_stored(dev, tt_v, stored["v"], inputs.v_garbage, "v", counts)
        kwargs = dict(sliding_window_size=shape.window, program_config=shape.program_config(), output_tensor=out)
        in_range = all(-1 <= p < shape.kv_len and (p == -1 or p >= shape.q_len - 1) for p in device_pos)
        if in_range and rng.random() < 0.4:
            kwargs["cur_pos"] = list(device_pos)
            counts["cur_pos as a host list"] += 1
        else:
            kwargs["cur_pos_tensor"] = _put_int32(dev, list(device_pos))
            owned.append(kwargs["cur_pos_tensor"])
            counts["cur_pos as a device tensor"] += 1
        if shape.block_size:
            if torch.equal(inputs.table, inputs.table_dirty) and rng.random() < 0.4:
                table = inputs.table  # a host table (checked, then uploaded)
                counts["page table on the host"] += 1
            else:
                table = _put_int32(dev, inputs.table_dirty)
                owned.append(table)
                counts["page table on the device"] += 1
            _call_op(op_module.paged_scaled_dot_product_attention_decode, tt_q, tt_k, tt_v, table, **kwargs)
        else:
            _call_op(op_module.scaled_dot_product_attention_decode, tt_q, tt_k, tt_v, **kwargs)
        got = dev.to_torch(out).float()
    finally:
        _free(*owned)
    zero_users = [u for u, p in enumerate(golden_pos) if p == -1]
    _check_output(got, expected, shape, golden_pos, zero_users=zero_users)


def _generator(rng: random.Random) -> torch.Generator:
    return torch.Generator().manual_seed(rng.randrange(1 << 62))


# ---- A: garbage never poisons visible rows ---------------------------------------------------------------------


def test_garbage_never_poisons_visible_rows(device):
    def one(shape, rng, counts, desc):
        g = _generator(rng)
        pos = [_draw_position(rng, shape) for _ in range(shape.batch)]
        desc["cur_pos"] = pos
        inputs = _causal_inputs(shape, rng, g, counts, desc, pos, garbage=rng.random() > 0.08)
        _run_causal(device, shape, rng, counts, desc, inputs, pos, pos)

    fuzz(
        "test_garbage_never_poisons_visible_rows",
        [CONTIG, CONTIG_Q3, PAGED, PAGED_WIN],
        one,
        min_cases=8,
        max_cases=300,
    )


# ---- B: masks with -inf (non-causal) ---------------------------------------------------------------------------

MASK_PATTERNS = (
    "finite",
    "random-30%",
    "chunk-holes",
    "all-inf",
    "one-visible",
    "left-pad",
    "right-pad",
    "only-first-chunk",
    "only-last-chunk",
    "one-visible-chunk",
)


def _mask_row(pattern: str, rng: random.Random, g: torch.Generator, S: int, ck: int) -> torch.Tensor:
    row = torch.randn(S, generator=g)
    hidden = torch.zeros(S, dtype=torch.bool)
    chunks = S // ck
    if pattern == "random-30%":
        hidden = torch.rand(S, generator=g) < 0.3
    elif pattern == "chunk-holes":
        for c in rng.sample(range(chunks), rng.randrange(1, chunks)):
            hidden[c * ck : (c + 1) * ck] = True
    elif pattern == "all-inf":
        hidden[:] = True
    elif pattern == "one-visible":
        hidden[:] = True
        keep = rng.choice([0, ck - 1, ck, S - 1, rng.randrange(S)])
        hidden[keep] = False
    elif pattern == "left-pad":
        hidden[: rng.randrange(1, S)] = True
    elif pattern == "right-pad":
        hidden[rng.randrange(1, S) :] = True
    elif pattern in ("only-first-chunk", "only-last-chunk", "one-visible-chunk"):
        c = {"only-first-chunk": 0, "only-last-chunk": chunks - 1}.get(pattern, rng.randrange(chunks))
        hidden[:] = True
        hidden[c * ck : (c + 1) * ck] = False
    return row.masked_fill(hidden, -INF)


def test_masked_rows(device):
    def one(shape, rng, counts, desc):
        g = _generator(rng)
        b, S, ql, mh = shape.batch, shape.kv_len, shape.q_len, shape.mask_heads
        q = torch.randn(ql, b, shape.n_q, shape.head_dim, generator=g)
        k = torch.randn(b, shape.n_kv, S, shape.head_dim, generator=g)
        v = torch.randn(b, shape.n_kv, S, shape.head_dim, generator=g)
        mask = torch.empty(b, mh, ql, S)
        patterns = []
        for bi in range(b):
            for h in range(mh):
                for t in range(ql):
                    pattern = rng.choice(MASK_PATTERNS)
                    patterns.append(pattern)
                    counts[f"mask row {pattern}"] += 1
                    mask[bi, h, t] = _mask_row(pattern, rng, g, S, shape.k_chunk_size)
        desc["mask_rows"] = patterns
        stored_mask = golden.quantize_like_device(mask, shape.mask_dtype)
        stored = [
            golden.quantize_like_device(x, dt) for x, dt in ((q, "bfloat16"), (k, shape.kv_dtype), (v, shape.kv_dtype))
        ]
        expected = golden.sdpa_decode(*stored, is_causal=False, attn_mask=stored_mask)
        dead = (stored_mask == -INF).all(-1)  # [b, mh, q_len]: rows that see nothing
        zero_rows = dead.permute(2, 0, 1).expand(ql, b, shape.n_q)  # [q_len, b, n_q]
        expected[zero_rows] = 0.0
        counts["fully masked output rows"] += int(zero_rows.sum())
        tt = [
            _put(device, q),
            _put(device, k, shape.kv_dtype),
            _put(device, v, shape.kv_dtype),
            _put(device, mask, shape.mask_dtype),
            _poisoned_output(device, shape),
        ]
        try:
            if not torch.equal(device.to_torch(tt[3]).float(), stored_mask):
                raise FuzzTestBug("attn_mask: the device stores other values than golden.quantize_like_device")
            _call_op(
                op_module.scaled_dot_product_attention_decode,
                tt[0],
                tt[1],
                tt[2],
                is_causal=False,
                attn_mask=tt[3],
                program_config=shape.program_config(),
                output_tensor=tt[4],
            )
            got = device.to_torch(tt[4]).float()
        finally:
            _free(*tt)
        _check_output(got, expected, shape, None, zero_rows=zero_rows)

    fuzz("test_masked_rows", [MASK1, MASK8], one, min_cases=6, max_cases=300)


# ---- C: bad device cur_pos / page-table values zero exactly that user ------------------------------------------


def _bad_position(rng: random.Random, shape: Shape) -> tuple[str, int]:
    S, ql = shape.kv_len, shape.q_len
    kinds = ["below -1", "kv_len or more"] + (["below q_len-1"] if ql > 1 else [])
    kind = rng.choice(kinds)
    if kind == "below -1":
        return kind, rng.choice([-2, -3, -S, -1000, INT32_MIN, rng.randrange(INT32_MIN, -1)])
    if kind == "kv_len or more":
        return kind, rng.choice([S, S + 1, S + 31, S + 32, 2 * S, 10**6, INT32_MAX, rng.randrange(S, INT32_MAX)])
    return kind, rng.randrange(0, ql - 1)


def test_bad_device_cur_pos(device):
    def one(shape, rng, counts, desc):
        g = _generator(rng)
        b = shape.batch
        pos = [_draw_position(rng, shape) for _ in range(b)]
        bad_users = [u for u in range(b) if rng.random() < 0.4] or [rng.randrange(b)]
        for u in bad_users:
            kind, pos[u] = _bad_position(rng, shape)
            counts[f"bad cur_pos {kind}"] += 1
        golden_pos = [-1 if u in bad_users else p for u, p in enumerate(pos)]
        desc["device_cur_pos"], desc["bad_users"] = pos, bad_users
        counts["users with a bad cur_pos"] += len(bad_users)
        counts["users with a good cur_pos"] += b - len(bad_users)
        # Garbage (sometimes) where nobody looks: past positions, and anywhere in the bad users' caches.
        inputs = _causal_inputs(shape, rng, g, counts, desc, golden_pos, garbage=rng.random() < 0.5)
        _run_causal(device, shape, rng, counts, desc, inputs, pos, golden_pos)

    fuzz("test_bad_device_cur_pos", [CONTIG, CONTIG_Q3, PAGED], one, min_cases=6, max_cases=300)


BAD_ENTRIES = ("-5", "-1", "num_blocks", "num_blocks+7", "1e6", "int32_min", "int32_max", "random-out-of-range")


def _bad_entry(rng: random.Random, kind: str, num_blocks: int) -> int:
    if kind == "random-out-of-range":
        return rng.choice([rng.randrange(INT32_MIN, 0), rng.randrange(num_blocks, INT32_MAX)])
    return _slot_garbage(rng, kind, num_blocks)


def test_bad_device_page_table(device):
    def one(shape, rng, counts, desc):
        g = _generator(rng)
        b, bs = shape.batch, shape.block_size
        pos = [_draw_position(rng, shape) for _ in range(b)]
        live = [u for u, p in enumerate(pos) if p >= 0]
        if not live:
            pos[0] = rng.randrange(shape.q_len - 1, shape.kv_len)
            live = [0]
        bad_users = [u for u in live if rng.random() < 0.4] or [rng.choice(live)]
        inputs = _causal_inputs(shape, rng, g, counts, desc, pos, garbage=rng.random() < 0.5)
        for u in bad_users:
            first, last = _window_start(shape, pos[u]) // bs, pos[u] // bs
            slots = {rng.choice([first, last, rng.randint(first, last)]) for _ in range(rng.randint(1, 2))}
            for j in slots:
                kind = rng.choice(BAD_ENTRIES)
                inputs.table_dirty[u, j] = _bad_entry(rng, kind, shape.num_blocks)
                counts[f"bad needed entry {kind}"] += 1
                counts[
                    "bad needed entry at "
                    + ("first" if j == first else "last" if j == last else "middle")
                    + " needed slot"
                ] += 1
        golden_pos = [-1 if u in bad_users else p for u, p in enumerate(pos)]
        desc["cur_pos"], desc["bad_users"], desc["table_dirty"] = pos, bad_users, inputs.table_dirty.tolist()
        counts["users with a bad needed entry"] += len(bad_users)
        _run_causal(device, shape, rng, counts, desc, inputs, pos, golden_pos)

    fuzz("test_bad_device_page_table", [PAGED, PAGED_WIN], one, min_cases=6, max_cases=300)


# ---- D: bad calls raise before anything runs -------------------------------------------------------------------

DB, DNQ, DNKV, DD, DS, DBS, DNB = 2, 8, 2, 64, 256, 32, 20  # a valid call: 2 users, GQA 8/2, 256 positions
# Positive finite scales outside [SCALE_MIN, SCALE_MAX]: fp32 denormals and zeros, the approximate exp's leaking
# masks, the exact exp's losing ones, its multiplier's fp32 overflow, no fp32 at all, a Python int past float.
OUT_OF_RANGE_SCALES = (
    SCALE_MIN * 0.999,
    1e-30,
    1e-38,
    1e-40,
    1e-46,
    5e-324,
    SCALE_MAX * 1.001,
    1e28,
    9e35,
    3.4e38,
    3.5e38,
    1.7e308,
    10**400,
)
D_CONFIG = ProgramConfig((8, 8), k_chunk_size=64, max_cores_per_head_batch=2)


class _Reached(Exception):
    """Raised by the patched device methods: the call got past validation."""


class _BadCallCase:
    """One call of the op: a valid base call drawn at random, which one mutation may then break."""

    def __init__(self, dev, other, rng: random.Random):
        self.dev, self.other, self.rng = dev, other, rng
        self.tensors = []
        self.kind = rng.choice(
            (
                "causal-list",
                "causal-device-pos",
                "causal-host-pos-tensor",
                "noncausal",
                "paged-host-table",
                "paged-device-table",
            )
        )
        self.q_len = rng.choice((1, 1, 2))
        self.paged = self.kind.startswith("paged")
        self.causal = self.kind != "noncausal"
        self.q = self.put((self.q_len, DB, DNQ, DD))
        kv_shape = (DNB, DNKV, DBS, DD) if self.paged else (DB, DNKV, DS, DD)
        kv_dtype = rng.choice(("bfloat16", "bfloat8_b"))
        self.k, self.v = self.put(kv_shape, kv_dtype), self.put(kv_shape, kv_dtype)
        self.kwargs: dict = {}
        self.page_table = None
        self.positions = [rng.randrange(self.q_len - 1, DS) if rng.random() > 0.1 else -1 for _ in range(DB)]
        if self.causal:
            if self.kind == "causal-device-pos" or (self.paged and rng.random() < 0.5):
                self.kwargs["cur_pos_tensor"] = self.put_int(self.positions)
            elif self.kind == "causal-host-pos-tensor":
                self.kwargs["cur_pos_tensor"] = torch.tensor(self.positions, dtype=torch.int32)
            else:
                self.kwargs["cur_pos"] = list(self.positions)
            if rng.random() < 0.3:
                self.kwargs["sliding_window_size"] = rng.choice((32, 100))
        else:
            self.kwargs["is_causal"] = False
            if rng.random() < 0.7:
                self.kwargs["attn_mask"] = self.put((DB, rng.choice((1, DNQ)), self.q_len, DS))
        if self.paged:
            self.table = torch.randperm(DNB)[: DB * (DS // DBS)].reshape(DB, DS // DBS).to(torch.int32)
            if self.kind == "paged-device-table":
                dirty = self.table.clone()
                for u, p in enumerate(self.positions):  # garbage in slots nobody needs is fine
                    for j in range(DS // DBS):
                        if (p < 0 or j > p // DBS) and rng.random() < 0.5:
                            dirty[u, j] = rng.choice((-1, 10**6, DNB + 7, INT32_MIN))
                self.page_table = self.put_int(dirty)
            else:
                self.page_table = self.table
        if rng.random() < 0.3:
            self.kwargs["attention_sink"] = self.put((1, DNQ))
        if rng.random() < 0.3:
            self.kwargs["scale"] = rng.choice((0.05, 0.125, 1.0))
        if rng.random() < 0.4:
            self.kwargs["output_tensor"] = self.put((self.q_len, DB, DNQ, DD))
        if rng.random() < 0.5:
            self.kwargs["program_config"] = D_CONFIG
        if rng.random() < 0.2:
            self.kwargs["share_cache"] = False

    # tensors of the case (made before the device is patched, freed after the call)
    def put(self, shape, dtype="bfloat16", layout=None, device=None):
        t = _put(device or self.dev, torch.randn(*shape), dtype, layout)
        self.tensors.append(t)
        return t

    def put_int(self, values, device=None, dtype=None, layout=None):
        ttnn = _ttnn()
        t = (device or self.dev).from_torch(
            torch.as_tensor(values, dtype=torch.int32),
            dtype=dtype or ttnn.int32,
            layout=layout or ttnn.ROW_MAJOR_LAYOUT,
        )
        self.tensors.append(t)
        return t

    def put_float(self, values, dtype):
        t = _put(self.dev, torch.as_tensor(values, dtype=torch.float32), dtype, _ttnn().ROW_MAJOR_LAYOUT)
        self.tensors.append(t)
        return t

    def dead(self, shape, dtype="bfloat16", layout=None):
        t = self.put(shape, dtype, layout)
        t.deallocate()
        return t

    def kv_len(self) -> int:
        return DS

    def needed_slot(self) -> tuple[int, int]:
        """A (user, slot) of the page table that a live user needs (user 0 is made live if nobody is)."""
        live = [u for u, p in enumerate(self.positions) if p >= 0]
        if not live:
            self.positions[0] = DS - 1
            if "cur_pos" in self.kwargs:
                self.kwargs["cur_pos"] = list(self.positions)
            else:
                self.kwargs["cur_pos_tensor"] = self.put_int(self.positions)
            live = [0]
        u = self.rng.choice(live)
        p, w = self.positions[u], self.kwargs.get("sliding_window_size")
        first = max(0, p - self.q_len + 1 - w + 1) // DBS if w else 0  # the window's first block
        return u, self.rng.randint(first, p // DBS)

    mla_head_dim_v = "no MLA"  # a mutation may call the MLA op instead, with this head_dim_v

    def call(self):
        if self.mla_head_dim_v != "no MLA":
            mla = (
                (op_module.paged_flash_multi_latent_attention_decode, self.page_table)
                if self.paged
                else (op_module.flash_multi_latent_attention_decode,)
            )
            return mla[0](self.q, self.k, *mla[1:], head_dim_v=self.mla_head_dim_v, **self.kwargs)
        if self.paged:
            return op_module.paged_scaled_dot_product_attention_decode(
                self.q, self.k, self.v, self.page_table, **self.kwargs
            )
        return op_module.scaled_dot_product_attention_decode(self.q, self.k, self.v, **self.kwargs)

    def free(self):
        _free(*self.tensors)


def _mutations(c: _BadCallCase):
    """(label, names the error may name, apply) for every mutation that applies to ``c``'s base call."""
    ttnn = _ttnn()
    ql, rm = c.q_len, ttnn.ROW_MAJOR_LAYOUT
    kv_shape = tuple(c.k.shape)
    m = []

    def arg(name, value):
        return lambda: c.kwargs.__setitem__(name, value)

    def argf(name, make):
        return lambda: c.kwargs.__setitem__(name, make())

    def pos_arg(value):
        def apply():
            c.kwargs.pop("cur_pos", None)
            c.kwargs.pop("cur_pos_tensor", None)
            c.kwargs.update(value())

        return apply

    def setattr_(name, value):
        return lambda: setattr(c, name, value())

    # q / k / v
    for label, make in (
        ("rank 3", lambda: c.put((DB, DNQ, DD))),
        ("rank 5", lambda: c.put((1, ql, DB, DNQ, DD))),
        ("dtype bfloat8_b", lambda: c.put((ql, DB, DNQ, DD), "bfloat8_b")),
        ("dtype float32", lambda: c.put((ql, DB, DNQ, DD), "float32")),
        ("other device", lambda: c.put((ql, DB, DNQ, DD), device=c.other)),
        ("deallocated", lambda: c.dead((ql, DB, DNQ, DD))),
        ("torch tensor", lambda: torch.randn(ql, DB, DNQ, DD)),
    ):
        m.append((f"q {label}", {"q", "k"} if label == "other device" else {"q"}, setattr_("q", make)))
    m.append(("q q_len 9", {"q"}, setattr_("q", lambda: c.put((9, DB, DNQ, DD)))))
    m.append(("q 5 heads", {"q", "k"}, setattr_("q", lambda: c.put((ql, DB, 5, DD)))))
    m.append(("q head_dim 32", {"q", "k"}, setattr_("q", lambda: c.put((ql, DB, DNQ, 32)))))
    for name in ("k", "v"):
        for label, make in (
            ("rank 3", lambda: c.put(kv_shape[1:])),
            ("dtype float32", lambda: c.put(kv_shape, "float32")),
            ("ROW_MAJOR layout", lambda: c.put(kv_shape, layout=rm)),
            ("other device", lambda: c.put(kv_shape, device=c.other)),
            ("deallocated", lambda: c.dead(kv_shape)),
            ("torch tensor", lambda: torch.randn(*kv_shape)),
        ):
            m.append((f"{name} {label}", {name}, setattr_(name, make)))
    m.append(("k head_dim 32", {"k", "q"}, setattr_("k", lambda: c.put(kv_shape[:3] + (32,)))))
    m.append(("v length halved", {"v", "k"}, setattr_("v", lambda: c.put(kv_shape[:2] + (kv_shape[2] // 2, DD)))))
    # flags and numbers
    for value in (2, "yes", "True", 1.5, [True]):
        m.append((f"is_causal={value!r}", {"is_causal"}, arg("is_causal", value)))
        m.append((f"share_cache={value!r}", {"share_cache"}, arg("share_cache", value)))
    for value in (0, 0.0, -1, -0.5, INF, -INF, NAN, "x", "0.1", [0.1]):
        m.append((f"scale={value!r}", {"scale"}, arg("scale", value)))
    for value in OUT_OF_RANGE_SCALES:  # positive and finite, outside [SCALE_MIN, SCALE_MAX]
        m.append((f"scale={value!r} (out of range)", {"scale"}, arg("scale", value)))
    for value in (2**32, 2**32 + 5, 2**40):
        if c.causal:
            m.append((f"sliding_window_size={value!r}", {"sliding_window_size"}, arg("sliding_window_size", value)))
    m.append(("q None", {"q"}, setattr_("q", lambda: None)))
    m.append(("v None", {"v", "head_dim_v"}, setattr_("v", lambda: None)))
    if c.paged:
        m.append(("page_table_tensor None", {"page_table_tensor"}, setattr_("page_table", lambda: None)))
    for value in (None, "512", 32.0):
        m.append((f"MLA head_dim_v={value!r}", {"head_dim_v"}, setattr_("mla_head_dim_v", lambda value=value: value)))
    for value in (0, -3, "x", 2.5, "64"):
        if c.causal:
            m.append((f"sliding_window_size={value!r}", {"sliding_window_size"}, arg("sliding_window_size", value)))
    if not c.causal:
        m.append(("sliding_window_size with is_causal=False", {"sliding_window_size"}, arg("sliding_window_size", 64)))
    # positions
    if c.causal:
        lists = [
            ("cur_pos too short", [5]),
            ("cur_pos too long", [5] * (DB + 1)),
            ("cur_pos bare int", 5),
            ("cur_pos = kv_len", [5, c.kv_len()]),
            ("cur_pos 10**6", [10**6, 5]),
            ("cur_pos -2", [5, -2]),
            ("cur_pos int32_min", [INT32_MIN, 5]),
            ("cur_pos floats", [5.0, 6.0]),
            ("cur_pos string", "12"),
            ("cur_pos bools", [True, 5]),
            ("cur_pos None", None),
        ]
        if ql > 1:
            lists.append(("cur_pos below q_len-1", [0, 5]))
        for label, value in lists:
            m.append((label, {"cur_pos", "cur_pos_tensor"}, pos_arg(lambda value=value: {"cur_pos": value})))
        m.append(
            (
                "cur_pos and cur_pos_tensor",
                {"cur_pos", "cur_pos_tensor"},
                pos_arg(lambda: {"cur_pos": [5, 6], "cur_pos_tensor": c.put_int([5, 6])}),
            )
        )
        for label, make in (
            ("bfloat16", lambda: c.put_float([5.0, 6.0], "bfloat16")),
            ("float32", lambda: c.put_float([5.0, 6.0], "float32")),
            ("3 entries", lambda: c.put_int([5, 6, 7])),
            ("shape [1, 2]", lambda: c.put_int([[5, 6]])),
            ("other device", lambda: c.put_int([5, 6], device=c.other)),
            ("deallocated", lambda: _dealloc(c.put_int([5, 6]))),
            ("host out of range", lambda: torch.tensor([5, c.kv_len()], dtype=torch.int32)),
            ("host -2", lambda: torch.tensor([-2, 5], dtype=torch.int32)),
            ("host float", lambda: torch.tensor([5.0, 6.0])),
        ):
            m.append(
                (f"cur_pos_tensor {label}", {"cur_pos_tensor"}, pos_arg(lambda make=make: {"cur_pos_tensor": make()}))
            )

        def bad_device_pos():
            c.kwargs.pop("cur_pos", None)
            bad = c.rng.choice([c.kv_len(), 10**6, -2, INT32_MIN] + ([0] if ql > 1 else []))
            c.kwargs["cur_pos_tensor"] = c.put_int([5 + ql, bad] if c.rng.random() < 0.5 else [bad, 5 + ql])
            c.kwargs["validate_device_tensors"] = True

        m.append(("validate_device_tensors + bad device cur_pos", {"cur_pos_tensor"}, bad_device_pos))
    else:
        m.append(("cur_pos with is_causal=False", {"cur_pos", "is_causal"}, arg("cur_pos", [5, 6])))
    # page table
    if c.paged:
        rows, cols = DB, DS // DBS
        for label, make in (
            ("host 3 rows", lambda: torch.zeros(rows + 1, cols, dtype=torch.int32)),
            ("host 4 rows", lambda: torch.zeros(rows + 2, cols, dtype=torch.int32)),
            ("host rank 1", lambda: c.table.flatten()),
            ("host float", lambda: c.table.float()),
            ("host needed entry -5", lambda: _with_entry(c.table, c.needed_slot(), -5)),
            ("host needed entry num_blocks+7", lambda: _with_entry(c.table, c.needed_slot(), DNB + 7)),
            ("device 3 rows", lambda: c.put_int(torch.zeros(rows + 1, cols))),
            ("device bfloat16", lambda: c.put_float(c.table.float(), "bfloat16")),
            ("device TILE layout", lambda: c.put_int(c.table, layout=ttnn.TILE_LAYOUT)),
            ("device other device", lambda: c.put_int(c.table, device=c.other)),
            ("device deallocated", lambda: _dealloc(c.put_int(c.table))),
        ):
            m.append((f"page_table_tensor {label}", {"page_table_tensor"}, setattr_("page_table", make)))

        def bad_needed_entry():
            c.page_table = c.put_int(_with_entry(c.table, c.needed_slot(), c.rng.choice((-5, -1, DNB, DNB + 7, 10**6))))
            c.kwargs["validate_device_tensors"] = True

        m.append(("validate_device_tensors + bad needed device page entry", {"page_table_tensor"}, bad_needed_entry))
    # mask, sink, output
    mask_shape = (DB, 1, ql, c.kv_len())
    if c.causal:
        m.append(("attn_mask with is_causal=True", {"attn_mask"}, argf("attn_mask", lambda: c.put(mask_shape))))
    else:
        for label, make in (
            ("short", lambda: c.put((DB, 1, ql, c.kv_len() // 2))),
            ("3 heads", lambda: c.put((DB, 3, ql, c.kv_len()))),
            ("float32", lambda: c.put(mask_shape, "float32")),
            ("ROW_MAJOR", lambda: c.put(mask_shape, layout=rm)),
            ("other device", lambda: c.put(mask_shape, device=c.other)),
            ("deallocated", lambda: c.dead(mask_shape)),
            ("torch tensor", lambda: torch.zeros(mask_shape)),
        ):
            m.append((f"attn_mask {label}", {"attn_mask"}, argf("attn_mask", make)))
    for label, make in (
        ("[1, 4]", lambda: c.put((1, 4))),
        ("float32", lambda: c.put((1, DNQ), "float32")),
        ("other device", lambda: c.put((1, DNQ), device=c.other)),
        ("deallocated", lambda: c.dead((1, DNQ))),
        ("torch tensor", lambda: torch.zeros(1, DNQ)),
    ):
        m.append((f"attention_sink {label}", {"attention_sink"}, argf("attention_sink", make)))
    out_shape = (ql, DB, DNQ, DD)
    for label, make in (
        ("head_dim 32", lambda: c.put(out_shape[:3] + (32,))),
        ("bfloat4_b", lambda: c.put(out_shape, "bfloat4_b")),
        ("other device", lambda: c.put(out_shape, device=c.other)),
        ("deallocated", lambda: c.dead(out_shape)),
        ("torch tensor", lambda: torch.zeros(out_shape)),
    ):
        m.append((f"output_tensor {label}", {"output_tensor"}, argf("output_tensor", make)))
    if "output_tensor" not in c.kwargs:
        width_sharded = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1)
        for value in ("DRAM", 42, width_sharded):
            m.append((f"memory_config={value!r}"[:40], {"memory_config"}, arg("memory_config", value)))
        for value in (ttnn.int32, 42, "float16"):
            m.append((f"dtype={value!r}", {"dtype"}, arg("dtype", value)))
    sdpa = ttnn.SDPAProgramConfig  # its constructor checks nothing, so the op's coercion must
    for label, make in (
        (
            "ttnn k_chunk_size 48",
            lambda: sdpa(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), q_chunk_size=32, k_chunk_size=48),
        ),
        (
            "ttnn grid 9x8",
            lambda: sdpa(compute_with_storage_grid_size=ttnn.CoreCoord(9, 8), q_chunk_size=32, k_chunk_size=64),
        ),
        ("grid 9x8", lambda: ProgramConfig((9, 8))),
        ("42", lambda: 42),
    ):
        m.append(
            (
                f"program_config {label}",
                {"program_config", "k_chunk_size", "compute_with_storage_grid_size"},
                argf("program_config", make),
            )
        )
    for value in (42, "HiFi4"):
        m.append((f"compute_kernel_config={value!r}", {"compute_kernel_config"}, arg("compute_kernel_config", value)))
    return m


def _dealloc(t):
    t.deallocate()
    return t


def _with_entry(table: torch.Tensor, slot: tuple[int, int], value: int) -> torch.Tensor:
    t = table.clone()
    t[slot] = value
    return t


def _names(message: str, names) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", message) for n in names)


def test_bad_calls_raise_before_anything_runs(device, other_emu_device, monkeypatch):
    def one(_shape, rng, counts, desc):
        c = _BadCallCase(device, other_emu_device, rng)
        desc["base"] = f"{c.kind} q_len={c.q_len} kwargs={sorted(c.kwargs)}"
        try:
            control = rng.random() < 0.1
            if control:
                label, names = "control (valid call)", set()
                if rng.random() < 0.5 and (c.kind == "paged-device-table" or "cur_pos_tensor" in c.kwargs):
                    c.kwargs["validate_device_tensors"] = True  # valid device tensors (and garbage in unused slots)
                    label = "control (valid call, validate_device_tensors=True)"
            else:
                label, names, apply = rng.choice(_mutations(c))
                apply()
            desc["mutation"] = label
            counts[f"mutation {label.split('=')[0].split(' ')[0]}"] += 1
            touched = []

            def reach(method):
                def f(*a, **kw):
                    touched.append(method)
                    raise _Reached(method)

                return f

            with monkeypatch.context() as mp:
                for dev in (device, other_emu_device):
                    for method in ("allocate", "from_torch", "generic_op"):
                        mp.setattr(dev, method, reach(method))
                try:
                    c.call()
                    raised = None
                except Exception as e:  # noqa: BLE001 - classified below
                    raised = e
        finally:
            c.free()
        if control:
            counts["controls"] += 1
            assert isinstance(raised, _Reached), (
                f"a valid call ({label}) did not get through validation: "
                f"{type(raised).__name__ if raised else 'no device work'}: {raised}"
            )
            return
        counts["bad calls"] += 1
        assert not isinstance(raised, _Reached), f"{label}: not rejected; the call went on to {touched[0]} the device"
        assert raised is not None, f"{label}: returned without raising"
        assert isinstance(raised, (TypeError, ValueError)), (
            f"{label}: raised {type(raised).__name__} (expected TypeError or ValueError naming "
            f"{' or '.join(sorted(names))}): {raised}"
        )
        assert not touched, f"{label}: raised, but only after {touched} on the device"
        assert _names(str(raised), names), (
            f"{label}: the {type(raised).__name__} does not name {' or '.join(sorted(names))}: {raised}"
        )
        counts["bad calls rejected correctly"] += 1

    fuzz("test_bad_calls_raise_before_anything_runs", ["mutated call"], one, min_cases=60, max_cases=2000)


# ---- F: the scale's range: right at both ends with either exp, refused past them ------------------------------

SCALE_SHAPE = Shape("scale-ends", 2, 8, 2, 64, 256, k_chunk_size=64, cores=16)  # test_op_validation's scale shape


def _raise_reached(method: str):
    def reached(*args, **kwargs):
        raise _Reached(method)

    return reached


def _out_of_range_scale(rng: random.Random):
    kind = rng.choice(("listed", "below", "above"))
    if kind == "listed":
        return rng.choice(OUT_OF_RANGE_SCALES)
    if kind == "below":
        return 10 ** rng.uniform(-60, math.log10(SCALE_MIN) - 1e-6)
    return 10 ** rng.uniform(math.log10(SCALE_MAX) + 1e-6, 300)


def test_scale_range(device, monkeypatch):
    """An in-range scale at either end (or the default) runs right with either exp against the golden: at SCALE_MIN
    every visible position weighs the same and hidden ones nothing; at SCALE_MAX the winner takes all (each live user
    gets a planted winner per kv head, so bfloat16 scores cannot swap it), including a user that sees one position
    (kernels per (scale, exp): 4 variants, the ones test_op_validation's scale test builds).
    An out-of-range one is refused naming scale by the op and by FlashDecodeWrapper.plan, before anything runs."""
    from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper

    shape = SCALE_SHAPE

    def one(kind, rng, counts, desc):
        if kind == "out of range":
            scale = _out_of_range_scale(rng)
            desc["scale"] = scale
            counts["out-of-range scales"] += 1
            q, k = _put(device, torch.randn(1, 2, 8, 64)), _put(device, torch.randn(2, 2, 256, 64))
            try:
                with monkeypatch.context() as mp:
                    for method in ("allocate", "from_torch", "generic_op"):
                        mp.setattr(device, method, _raise_reached(method))
                    for what, call in (
                        (
                            "op",
                            lambda: op_module.scaled_dot_product_attention_decode(q, k, k, cur_pos=[5, 6], scale=scale),
                        ),
                        (
                            "plan",
                            lambda: FlashDecodeWrapper(device).plan(
                                batch=2, n_q_heads=8, n_kv_heads=2, head_dim=64, kv_len=256, scale=scale
                            ),
                        ),
                    ):
                        try:
                            call()
                            raised = None
                        except (_Reached, ValueError) as e:
                            raised = e
                        assert isinstance(raised, ValueError), f"{what}: scale={scale!r} not refused: {raised!r}"
                        assert re.match(r"scale=\S+: expected a positive finite number in", str(raised)), (
                            f"{what}: scale={scale!r} refused without naming scale and its range: {raised}"
                        )
                        counts[f"refused by {what}"] += 1
            finally:
                _free(q, k)
            return
        g = _generator(rng)
        scale = rng.choice((SCALE_MIN, SCALE_MAX))  # (mid-range scales: every other test)
        approx = rng.random() < 0.5
        pos = [rng.choice((-1, 0, 0, 31, 32, 63, 64, 137, 255, rng.randrange(256))) for _ in range(shape.batch)]
        desc.update(scale=scale, exp_approx=approx, cur_pos=pos)
        counts[f"scale {scale!r} exp_approx={approx}"] += 1
        q = torch.randn(1, shape.batch, shape.n_q, shape.head_dim, generator=g)
        k = torch.randn(shape.batch, shape.n_kv, shape.kv_len, shape.head_dim, generator=g)
        v = torch.randn(shape.batch, shape.n_kv, shape.kv_len, shape.head_dim, generator=g)
        group = shape.n_q // shape.n_kv
        for u, p in enumerate(pos):
            if p >= 0 and scale == SCALE_MAX:
                w = rng.randint(0, p)
                for h in range(shape.n_kv):  # q_i . 3 sum_j q_j ~ 3 |q_i|^2 = 192, every other score ~N(0, 8)
                    k[u, h, w] = 3 * q[0, u, h * group : (h + 1) * group].sum(0)
        stored = [golden.quantize_like_device(x, "bfloat16") for x in (q, k, v)]
        expected = golden.sdpa_decode(*stored, cur_pos=pos, scale=scale)
        tensors = [_put(device, x) for x in (q, k, v)] + [_poisoned_output(device, shape)]
        try:
            config = ProgramConfig((8, 8), k_chunk_size=shape.k_chunk_size, exp_approx_mode=approx)
            _call_op(
                op_module.scaled_dot_product_attention_decode,
                *tensors[:3],
                cur_pos=pos,
                scale=scale,
                program_config=config,
                output_tensor=tensors[3],
            )
            got = device.to_torch(tensors[3]).float()
        finally:
            _free(*tensors)
        _check_output(got, expected, shape, pos, zero_users=[u for u, p in enumerate(pos) if p == -1])

    fuzz("test_scale_range", ["in range", "out of range"], one, min_cases=6, max_cases=300)


# ---- G: plan() refuses what run() refuses, and runs what it plans --------------------------------------------

# plan()'s argument -> the op arguments (tensors) that carry it
_PLAN_TO_RUN = {
    "q_len": {"q"},
    "head_dim": {"q", "k"},
    "n_q_heads": {"q", "n_q_heads"},
    "kv_dtype": {"k"},
    "v_dtype": {"v"},
    "dtype": {"dtype"},
    "attn_mask_dtype": {"attn_mask"},
    "scale": {"scale"},
    "sliding_window_size": {"sliding_window_size"},
    "attention_sink": {"attention_sink"},
}
_PLAN_MUTATIONS = {
    "q_len": (0, 9, 10, 100),
    "head_dim": (48, 100),
    "n_q_heads": (5, 7),  # not a multiple of n_kv_heads
    "sliding_window_size": (0, -1, 2**32, 2**32 + 5),
    "scale": (0.0, -1.0, INF, NAN) + OUT_OF_RANGE_SCALES,
    "kv_dtype": ("float32",),
    "v_dtype": ("float32",),
    "dtype": ("bfloat4_b", "int32"),
    "attn_mask_dtype": ("float32",),
}
PV_CONFIG = ProgramConfig((8, 8), k_chunk_size=64, max_cores_per_head_batch=2)


def _plan_spec(rng: random.Random) -> dict:
    """A valid plan's arguments (the shape of test D's calls), as ttnn dtype names."""
    spec = dict(
        batch=DB,
        n_q_heads=DNQ,
        n_kv_heads=DNKV,
        head_dim=DD,
        kv_len=DS,
        q_len=rng.choice((1, 1, 2)),
        kv_dtype=rng.choice(("bfloat16", "bfloat8_b")),
        is_causal=rng.random() < 0.75,
    )
    spec["v_dtype"] = spec["kv_dtype"] if rng.random() < 0.7 else rng.choice(("bfloat16", "bfloat8_b"))
    if spec["is_causal"]:
        if rng.random() < 0.3:
            spec["sliding_window_size"] = rng.choice((32, 100, 2**32 - 1))
    elif rng.random() < 0.7:
        spec["attn_mask_heads"] = rng.choice((1, DNQ))
        spec["attn_mask_dtype"] = rng.choice(("bfloat16", "bfloat8_b"))
    if rng.random() < 0.3:
        spec["scale"] = rng.choice((SCALE_MIN, 0.125, SCALE_MAX))
    if rng.random() < 0.3:
        spec["attention_sink"] = True
    if rng.random() < 0.3:
        spec["dtype"] = rng.choice(("bfloat16", "float32", "bfloat8_b"))
    return spec


def test_plan_refuses_what_run_refuses(device, monkeypatch):
    """A plan's arguments, valid or with one made bad; the matching call of the op is checked as run() checks it.
    plan() accepts exactly when the op's validation does (it then reaches the launch, and so does wrapper.run() with
    the same tensors); when both refuse, each error names the argument (plan's name, or the tensor carrying it)."""
    from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper

    ttnn = _ttnn()

    def one(_kind, rng, counts, desc):
        spec = _plan_spec(rng)
        bad = None
        if rng.random() < 0.8:
            bad = rng.choice(sorted(k for k in _PLAN_MUTATIONS if k != "attn_mask_dtype" or "attn_mask_heads" in spec))
            spec[bad] = rng.choice(_PLAN_MUTATIONS[bad])
            if bad == "n_q_heads" and spec.get("attn_mask_heads") == DNQ:
                spec["attn_mask_heads"] = 1  # a per-head mask would be the first error of both
        desc["spec"] = dict(spec)
        counts[f"bad {bad}" if bad else "valid plan"] += 1
        dtypes = {k: getattr(ttnn, spec[k]) for k in ("kv_dtype", "v_dtype", "dtype", "attn_mask_dtype") if k in spec}
        wrapper = FlashDecodeWrapper(device, program_config=PV_CONFIG)
        try:
            wrapper.plan(**(spec | dtypes))
            plan_error = None
        except (TypeError, ValueError) as e:
            plan_error = e
        if plan_error is not None:
            assert bad is not None, f"plan() refused a valid plan: {plan_error}"
            assert _names(str(plan_error), {bad}), f"plan() refused bad {bad} without naming it: {plan_error}"
        ql, nq, d = spec["q_len"], spec["n_q_heads"], spec["head_dim"]
        if ql < 1:
            counts["plan only (no tensors of that shape)"] += 1
            assert plan_error is not None, f"plan() accepted {bad}={spec[bad]!r}"
            return
        pos = [rng.randrange(ql - 1, DS) for _ in range(DB)]
        tensors = [
            _put(device, torch.randn(ql, DB, nq, d)),
            _put(device, torch.randn(DB, DNKV, DS, d), spec["kv_dtype"]),
            _put(device, torch.randn(DB, DNKV, DS, d), spec["v_dtype"]),
        ]
        kwargs = dict(
            is_causal=spec["is_causal"],
            scale=spec.get("scale"),
            program_config=PV_CONFIG,
            sliding_window_size=spec.get("sliding_window_size"),
            dtype=dtypes.get("dtype"),
        )
        if spec["is_causal"]:
            kwargs["cur_pos"] = pos
        if spec.get("attn_mask_heads"):
            kwargs["attn_mask"] = _put(
                device, torch.zeros(DB, spec["attn_mask_heads"], ql, DS), spec["attn_mask_dtype"]
            )
            tensors.append(kwargs["attn_mask"])
        if spec.get("attention_sink"):
            kwargs["attention_sink"] = _put(device, torch.zeros(1, nq))
            tensors.append(kwargs["attention_sink"])
        try:
            with monkeypatch.context() as mp:
                mp.setattr(device, "generic_op", _raise_reached("generic_op"))
                try:
                    op_module.scaled_dot_product_attention_decode(*tensors[:3], **kwargs)
                    run_error = AssertionError("the op returned without launching")
                except (_Reached, TypeError, ValueError, AssertionError) as e:
                    run_error = None if isinstance(e, _Reached) else e
                if plan_error is None and run_error is None:
                    run_kwargs = {k: kwargs[k] for k in ("cur_pos", "attn_mask", "attention_sink") if k in kwargs}
                    with pytest.raises(_Reached):
                        wrapper.run(*tensors[:3], **run_kwargs)
                    counts["planned and run (reached the launch)"] += 1
        finally:
            _free(*tensors)
        assert (plan_error is None) == (run_error is None), (
            f"plan() {'accepted' if plan_error is None else 'refused'} but the op's validation "
            f"{'accepted' if run_error is None else 'refused'} (bad {bad}): plan: {plan_error}; run: {run_error}"
        )
        if run_error is not None:
            names = _PLAN_TO_RUN[bad]
            assert _names(str(run_error), names), f"the op refused bad {bad} without naming {names}: {run_error}"
            counts["both refused, naming the argument"] += 1

    fuzz("test_plan_refuses_what_run_refuses", ["plan"], one, min_cases=40, max_cases=2000)


# ---- H: NaN / Inf in K and V behind -inf masks -----------------------------------------------------------------


def test_garbage_behind_masks(device):
    """Positions a user mask hides from every query row of a (user, kv head) group (-inf for each of its heads and
    tokens) hold NaN / Inf / huge K or V; the output equals the golden on a clean copy, rows that see nothing are
    exactly 0 (the reader zeroes those K/V rows: DESIGN's position contract; a position only some rows of a group see
    must hold finite values, so none is dirtied here)."""

    def one(shape, rng, counts, desc):
        g = _generator(rng)
        b, S, ql, mh, group = shape.batch, shape.kv_len, shape.q_len, shape.mask_heads, shape.n_q // shape.n_kv
        q = torch.randn(ql, b, shape.n_q, shape.head_dim, generator=g)
        k_clean = torch.randn(b, shape.n_kv, S, shape.head_dim, generator=g)
        v_clean = torch.randn(b, shape.n_kv, S, shape.head_dim, generator=g)
        mask = torch.empty(b, mh, ql, S)
        patterns = []
        for bi in range(b):
            for h in range(mh):
                shared = h % group and rng.random() < 0.6  # a head repeats its group's first row: hidden for all
                for t in range(ql):
                    if shared:
                        mask[bi, h, t] = mask[bi, h - h % group, t]
                        continue
                    pattern = rng.choice(MASK_PATTERNS[1:])  # every pattern but "finite" hides something
                    patterns.append(pattern)
                    counts[f"mask row {pattern}"] += 1
                    mask[bi, h, t] = _mask_row(pattern, rng, g, S, shape.k_chunk_size)
        desc["mask_rows"] = patterns
        stored_mask = golden.quantize_like_device(mask, shape.mask_dtype)
        hidden = stored_mask == -INF  # [b, mh, ql, S]
        if mh == 1:
            group_hidden = hidden.all(2).expand(b, shape.n_kv, S)
        else:
            group_hidden = hidden.reshape(b, shape.n_kv, group, ql, S).all(3).all(2)  # [b, n_kv, S]
        density = rng.choice((0.3, 1.0))  # of the hidden positions, those that get garbage
        rows = group_hidden & (torch.rand(b, shape.n_kv, S, generator=g) < density)
        row_mask = rows[..., None].expand_as(k_clean)
        if rng.random() < 0.5:
            k_clean, v_clean = k_clean.masked_fill(row_mask, 0.0), v_clean.masked_fill(row_mask, 0.0)
        target, kind = rng.choice(("K", "V", "KV")), rng.choice(GARBAGE_VALUES)
        k_garbage, v_garbage = row_mask & ("K" in target), row_mask & ("V" in target)
        k_dirty = torch.where(k_garbage, _garbage_values(k_clean.shape, kind, g), k_clean)
        v_dirty = torch.where(v_garbage, _garbage_values(v_clean.shape, kind, g), v_clean)
        n_rows = int(rows.sum())
        desc["garbage"] = f"{kind} in {target}, {n_rows} (user, kv head, position) rows"
        counts["garbage rows behind masks"] += n_rows
        counts[f"garbage value {kind} in {target}"] += 1
        stored = [
            golden.quantize_like_device(x, dt)
            for x, dt in ((q, "bfloat16"), (k_clean, shape.kv_dtype), (v_clean, shape.kv_dtype))
        ]
        expected = golden.sdpa_decode(*stored, is_causal=False, attn_mask=stored_mask)
        zero_rows = hidden.all(-1).permute(2, 0, 1).expand(ql, b, shape.n_q)  # [q_len, b, n_q]
        expected[zero_rows] = 0.0
        tt = [
            _put(device, q),
            _put(device, k_dirty, shape.kv_dtype),
            _put(device, v_dirty, shape.kv_dtype),
            _put(device, mask, shape.mask_dtype),
            _poisoned_output(device, shape),
        ]
        try:
            _check_stored(device, tt[1], stored[1], k_garbage, "k", counts)
            _check_stored(device, tt[2], stored[2], v_garbage, "v", counts)
            _call_op(
                op_module.scaled_dot_product_attention_decode,
                tt[0],
                tt[1],
                tt[2],
                is_causal=False,
                attn_mask=tt[3],
                program_config=shape.program_config(),
                output_tensor=tt[4],
            )
            got = device.to_torch(tt[4]).float()
        finally:
            _free(*tt)
        _check_output(got, expected, shape, None, zero_rows=zero_rows)

    fuzz("test_garbage_behind_masks", [MASK1, MASK8], one, min_cases=6, max_cases=300)
