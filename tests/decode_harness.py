"""Runs one FlashDecode case on a backend and checks it against the golden model.

Shared by the emulator tests and the device tests, so both check exactly the same things: fresh random inputs,
the golden evaluated on the values the device stores (bf16 Q, mask and sinks, quantised K/V), PCC and max-abs
thresholds, and every output element written (the output buffer is poisoned with NaN and passed in as
``output_tensor``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ttflashdecode import golden
from ttflashdecode import op as op_module
from ttflashdecode.config import ProgramConfig
from ttflashdecode.ttnn_env import import_ttnn

# Thresholds against the golden on the same quantised inputs. The kernels keep S, P, O, m and l in bfloat16
# (fp32 with fp32_dest_acc_en), so a correct kernel lands well inside them; a dropped chunk or a missing rescale
# moves PCC to ~0.9 and the max error to O(1) (test_flash_decode.py::test_thresholds_reject_wrong_kernels).
PCC_MIN = {"bfloat16": 0.999, "bfloat8_b": 0.999, "bfloat4_b": 0.995}
MAX_ABS_ERR = {"bfloat16": 0.08, "bfloat8_b": 0.08, "bfloat4_b": 0.15}


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
    seed: int | None = None  # None: fresh random inputs every run
    q_len: int = 1
    v_head_dim: int | None = None
    sliding_window_size: int | None = None
    attention_sink: bool = False
    block_size: int | None = None  # paged cache with this block size
    share_cache: bool = False
    mask_heads: int = 0  # non-causal with an attn_mask of this many heads (1 or n_q_heads); 0: no mask
    mask_dtype: str = "bfloat16"
    fp32_dest_acc_en: bool = False
    out_dtype: str = "bfloat16"
    out_sharded: bool = False  # output L1 height-sharded, one (token, user) tile row block per core
    extra: dict = field(default_factory=dict, compare=False)

    def program_config(self) -> ProgramConfig:
        return ProgramConfig(
            compute_with_storage_grid_size=self.grid,
            k_chunk_size=self.k_chunk_size,
            max_cores_per_head_batch=self.max_cores_per_head_batch,
        )

    def __str__(self) -> str:
        features = [
            f"q{self.q_len}" if self.q_len > 1 else "",
            f"vd{self.v_head_dim}" if self.v_head_dim else "",
            f"win{self.sliding_window_size}" if self.sliding_window_size else "",
            "sink" if self.attention_sink else "",
            f"paged{self.block_size}" if self.block_size else "",
            "shared" if self.share_cache else "",
            f"mask{self.mask_heads}{'' if self.mask_dtype == 'bfloat16' else '-' + self.mask_dtype}" if self.mask_heads else ("noncausal" if self.cur_pos is None else ""),
            "fp32acc" if self.fp32_dest_acc_en else "",
            f"out-{self.out_dtype}" if self.out_dtype != "bfloat16" else "",
            "out-l1-sharded" if self.out_sharded else "",
        ]
        return "-".join(
            [f"b{self.batch}", f"h{self.n_q_heads}/{self.n_kv_heads}", f"d{self.head_dim}", f"S{self.kv_len}",
             self.kv_dtype, f"sk{self.k_chunk_size}", f"c{self.max_cores_per_head_batch}",
             f"g{self.grid[0]}x{self.grid[1]}", *[f for f in features if f]]
        )  # fmt: skip


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


def inputs(case: DecodeCase, gen: torch.Generator):
    """Fresh random Q/K/V (and the optional mask, sinks and page table) for ``case``, as torch tensors."""
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
        t["attention_sink"] = torch.randn(1, case.n_q_heads, generator=gen) * 2
    return t


def height_sharded_output_config(case: DecodeCase):
    """L1 height-sharded output: each core of the case's grid (row-major) holds the tile rows of one (token, user)."""
    ttnn = import_ttnn()
    rows = -(-case.n_q_heads // 32) * 32
    width = -(-(case.v_head_dim or case.head_dim) // 32) * 32
    num_shards = case.q_len * case.batch
    gx = case.grid[0]
    cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(i % gx, i // gx), ttnn.CoreCoord(i % gx, i // gx))
                               for i in range(num_shards)])  # fmt: skip
    spec = ttnn.ShardSpec(cores, [rows, width], ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)


def run_case(device, case: DecodeCase, *, to_device, to_torch) -> DecodeOutcome:
    """``to_device(torch_tensor, dtype, **memory_config)`` (tile layout) and ``to_torch(tensor)`` adapt the backend."""
    ttnn = import_ttnn()
    gen = torch.Generator()
    if case.seed is None:
        gen.seed()
    else:
        gen.manual_seed(case.seed)
    t = inputs(case, gen)
    kv_dtype = getattr(ttnn, case.kv_dtype)
    bf16 = ttnn.bfloat16
    vd = case.v_head_dim or case.head_dim
    poison = torch.full((case.q_len, case.batch, case.n_q_heads, vd), float("nan"))
    out_kw = {"memory_config": height_sharded_output_config(case)} if case.out_sharded else {}
    kwargs = dict(
        program_config=case.program_config(),
        output_tensor=to_device(poison, getattr(ttnn, case.out_dtype), **out_kw),
        share_cache=case.share_cache,
        sliding_window_size=case.sliding_window_size,
    )
    if case.cur_pos is None:
        kwargs["is_causal"] = False
    else:
        kwargs["cur_pos"] = list(case.cur_pos)
    if case.mask_heads:
        kwargs["attn_mask"] = to_device(t["attn_mask"], getattr(ttnn, case.mask_dtype))
    if case.attention_sink:
        kwargs["attention_sink"] = to_device(t["attention_sink"], bf16)
    if case.fp32_dest_acc_en:
        kwargs["compute_kernel_config"] = ttnn.WormholeComputeKernelConfig(
            math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True, math_approx_mode=False
        )
    tt_q, tt_k, tt_v = to_device(t["q"], bf16), to_device(t["k"], kv_dtype), to_device(t["v"], kv_dtype)
    if case.block_size:
        tt_out = op_module.paged_scaled_dot_product_attention_decode(tt_q, tt_k, tt_v, t["page_table"], **kwargs)
    else:
        tt_out = op_module.scaled_dot_product_attention_decode(tt_q, tt_k, tt_v, **kwargs)
    out = to_torch(tt_out).float()
    run = op_module.last_run

    def stored(name, dtype="bfloat16"):
        return golden.quantize_like_device(t[name], dtype) if name in t else None

    expected = golden.sdpa_decode(
        stored("q"),
        stored("k", case.kv_dtype),
        stored("v", case.kv_dtype),
        is_causal=case.cur_pos is not None,
        cur_pos=None if case.cur_pos is None else list(case.cur_pos),
        attn_mask=stored("attn_mask", case.mask_dtype),
        sliding_window_size=case.sliding_window_size,
        attention_sink=stored("attention_sink"),
        page_table=t.get("page_table"),
        share_cache=case.share_cache,
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
        page_table=t.get("page_table"),
        out_tensor=tt_out,
    )


def max_abs_err_for(case: DecodeCase) -> float:
    """The max-abs threshold of a case. Past head_dim 1024 a bfloat16 DST rounds each score after every one of
    head_dim / 32 tile products it accumulates, a random walk that grows as the square root of that depth
    (measured at 2048: up to ~0.09), so the bound grows with it; fp32 DST accumulation keeps the plain bound."""
    depth = 1.0 if case.fp32_dest_acc_en else max(1.0, (case.head_dim / 1024) ** 0.5)
    return MAX_ABS_ERR[case.kv_dtype] * depth


def assert_matches_golden(outcome: DecodeOutcome, case: DecodeCase) -> None:
    out, expected = outcome.out, outcome.expected
    assert out.shape == expected.shape, f"{case}: output shape {tuple(out.shape)} != {tuple(expected.shape)}"
    unwritten = torch.isnan(out).sum().item()
    assert unwritten == 0, f"{case}: {unwritten} output elements still hold the NaN poison (never written)"
    assert outcome.pcc >= PCC_MIN[case.kv_dtype], f"{case}: PCC {outcome.pcc:.6f} < {PCC_MIN[case.kv_dtype]}"
    max_abs_err = max_abs_err_for(case)
    assert outcome.max_abs_err <= max_abs_err, f"{case}: max |error| {outcome.max_abs_err:.4f} > {max_abs_err:.4f}"
    for b, p in enumerate(case.cur_pos or ()):
        if p == -1:
            assert torch.count_nonzero(out[:, b]) == 0, f"{case}: skipped user {b} must get zero rows"
