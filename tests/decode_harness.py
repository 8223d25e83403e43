"""Runs one FlashDecode case on a backend and checks it against the golden model.

Shared by the emulator tests and the device tests, so both check exactly the same things: fresh random inputs,
the golden evaluated on the values the device stores (bf16 Q, quantised K/V), PCC and max-abs thresholds, and
every output element written (the output buffer is poisoned with NaN and passed in as output_tensor).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ttflashdecode import golden
from ttflashdecode import op as op_module
from ttflashdecode.config import ProgramConfig
from ttflashdecode.op import scaled_dot_product_attention_decode
from ttflashdecode.ttnn_env import import_ttnn

# Thresholds against the golden on the same quantised K/V. The kernels keep S, P, O, m and l in bfloat16
# (fp32 with fp32_dest_acc_en), so a correct kernel lands well inside them; a dropped chunk or a missing
# rescale moves PCC to ~0.9 and the max error to O(1) (tests/test_flash_decode.py::test_thresholds_reject_*).
PCC_MIN = {"bfloat16": 0.999, "bfloat8_b": 0.999, "bfloat4_b": 0.995}
MAX_ABS_ERR = {"bfloat16": 0.08, "bfloat8_b": 0.08, "bfloat4_b": 0.15}


@dataclass(frozen=True)
class DecodeCase:
    batch: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    kv_len: int
    cur_pos: tuple[int, ...]
    kv_dtype: str = "bfloat16"
    k_chunk_size: int = 0
    max_cores_per_head_batch: int = 16
    grid: tuple[int, int] = (8, 8)
    seed: int = 0
    extra: dict = field(default_factory=dict, compare=False)

    def program_config(self) -> ProgramConfig:
        return ProgramConfig(
            compute_with_storage_grid_size=self.grid,
            k_chunk_size=self.k_chunk_size,
            max_cores_per_head_batch=self.max_cores_per_head_batch,
        )

    def __str__(self) -> str:
        return (
            f"b{self.batch}-h{self.n_q_heads}/{self.n_kv_heads}-d{self.head_dim}-S{self.kv_len}-{self.kv_dtype}"
            f"-sk{self.k_chunk_size}-c{self.max_cores_per_head_batch}-g{self.grid[0]}x{self.grid[1]}"
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


def inputs(case: DecodeCase):
    gen = torch.Generator().manual_seed(case.seed)
    q = torch.randn(1, case.batch, case.n_q_heads, case.head_dim, generator=gen)
    k = torch.randn(case.batch, case.n_kv_heads, case.kv_len, case.head_dim, generator=gen)
    v = torch.randn(case.batch, case.n_kv_heads, case.kv_len, case.head_dim, generator=gen)
    return q, k, v


def run_case(backend_device, case: DecodeCase, *, to_device, to_torch) -> DecodeOutcome:
    """``to_device(torch_tensor, dtype)`` and ``to_torch(tensor)`` adapt the backend."""
    ttnn = import_ttnn()
    q, k, v = inputs(case)
    kv_dtype = getattr(ttnn, case.kv_dtype)
    tt_q, tt_k, tt_v = to_device(q, ttnn.bfloat16), to_device(k, kv_dtype), to_device(v, kv_dtype)
    # Poison: every output element the op fails to write stays NaN.
    poison = torch.full((1, case.batch, case.n_q_heads, case.head_dim), float("nan"))
    tt_out = scaled_dot_product_attention_decode(
        tt_q,
        tt_k,
        tt_v,
        cur_pos=list(case.cur_pos),
        program_config=case.program_config(),
        output_tensor=to_device(poison, ttnn.bfloat16),
    )
    out = to_torch(tt_out).float()
    run = op_module.last_run

    expected = golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, case.kv_dtype),
        golden.quantize_like_device(v, case.kv_dtype),
        cur_pos=list(case.cur_pos),
    )
    return DecodeOutcome(
        out=out,
        expected=expected,
        pcc=golden.pcc(out, expected),
        max_abs_err=golden.max_abs_error(out, expected),
        stats=run.stats,
        plan=run.plan,
        k=tt_k,
        v=tt_v,
    )


def assert_matches_golden(outcome: DecodeOutcome, case: DecodeCase) -> None:
    out, expected = outcome.out, outcome.expected
    assert out.shape == expected.shape, f"{case}: output shape {tuple(out.shape)} != {tuple(expected.shape)}"
    unwritten = torch.isnan(out).sum().item()
    assert unwritten == 0, f"{case}: {unwritten} output elements still hold the NaN poison (never written)"
    assert outcome.pcc >= PCC_MIN[case.kv_dtype], f"{case}: PCC {outcome.pcc:.6f} < {PCC_MIN[case.kv_dtype]}"
    assert outcome.max_abs_err <= MAX_ABS_ERR[case.kv_dtype], (
        f"{case}: max |error| {outcome.max_abs_err:.4f} > {MAX_ABS_ERR[case.kv_dtype]}"
    )
    for b, p in enumerate(case.cur_pos):
        if p == -1:
            assert torch.count_nonzero(out[:, b]) == 0, f"{case}: skipped user {b} must get zero rows"
