"""Bad calls of the op: each raises before anything runs, with an error that names the argument, the value it got
and what was expected, and nothing is uploaded to or allocated on the device for it. Also: numpy / torch scalars are
accepted where Python ones are, the per-device cache follows the device's lifetime, and validate_device_tensors=True
checks the values inside device cur_pos / page-table tensors."""

from __future__ import annotations

import gc
import re
import weakref

import numpy as np
import pytest
import torch

from ttemu.ttnn_env import import_ttnn
from ttflashdecode import checks
from ttflashdecode.config import ProgramConfig
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.decode import api as op_module
from ttflashdecode.plan import L1OverflowError

B, NQ, NKV, D, S = 2, 8, 2, 64, 256  # a valid call: 2 users, GQA 8/2, head_dim 64, 256 positions
NB, BS = 8, 64  # paged: 8 blocks of 64 positions, 4 blocks per user (kv_len 256)


@pytest.fixture(scope="module")
def tensors(emu_device, other_emu_device):
    """Every tensor the cases use, made once (before any case patches the device)."""
    ttnn = import_ttnn()
    dev, other = emu_device, other_emu_device

    def put(shape, dtype=None, layout=None, device=dev):
        return device.from_torch(torch.randn(*shape), dtype=dtype or ttnn.bfloat16, layout=layout or ttnn.TILE_LAYOUT)

    def ints(values, layout=None, device=dev, dtype=None):  # int32 (or dtype) values, ROW_MAJOR unless layout
        return device.from_torch(
            torch.tensor(values, dtype=torch.int32), dtype=dtype or ttnn.int32, layout=layout or ttnn.ROW_MAJOR_LAYOUT
        )

    def dead(tensor):
        tensor.deallocate()
        return tensor

    return {
        "q": put((1, B, NQ, D)),
        "k": put((B, NKV, S, D)),
        "v": put((B, NKV, S, D)),
        "q_rank3": put((B, NQ, D)),
        "q_bfp8": put((1, B, NQ, D), ttnn.bfloat8_b),
        "q_len9": put((9, B, NQ, D)),
        "q_len3": put((3, B, NQ, D)),
        "q_heads5": put((1, B, 5, D)),
        "k_row_major": put((B, NKV, S, D), layout=ttnn.ROW_MAJOR_LAYOUT),
        "k_d32": put((B, NKV, S, 32)),
        "v_short": put((B, NKV, 128, D)),
        "k_batch3": put((3, NKV, S, D)),
        "k_d256": put((B, NKV, 8192, 256)),
        "q_d256": put((1, B, NQ, 256)),
        "k_block48": put((4, NKV, 48, D)),
        "k_other": put((B, NKV, S, D), device=other),
        "mask": put((B, 1, 1, S)),
        "mask_short": put((B, 1, 1, 128)),
        "sink_bad": put((1, 4)),
        "pos_bf16": put((B,)),
        "out_bad": put((1, B, NQ, 32)),
        # device tensors on the other device, or deallocated
        "pos_other": ints([100, 200], device=other),
        "mask_other": put((B, 1, 1, S), device=other),
        "sink_other": put((1, NQ), device=other),
        "out_other": put((1, B, NQ, D), device=other),
        "table_other": ints([[0, 1, 2, 3], [4, 5, 6, 7]], device=other),
        "q_dead": dead(put((1, B, NQ, D))),
        "k_dead": dead(put((B, NKV, S, D))),
        "pos_dead": dead(ints([100, 200])),
        "mask_dead": dead(put((B, 1, 1, S))),
        "sink_dead": dead(put((1, NQ))),
        "out_dead": dead(put((1, B, NQ, D))),
        "table_dead": dead(ints([[0, 1, 2, 3], [4, 5, 6, 7]])),
        # cur_pos_tensor / page tables of the wrong layout, rank, shape or dtype
        "pos_tile": ints([100, 200], layout=ttnn.TILE_LAYOUT),
        "pos_rank2": ints([[100, 200]]),
        "pos_b3": ints([100, 200, 50]),
        "kp": put((NB, NKV, BS, D)),
        "table_1row": ints([[0, 1, 2, 3]]),
        "table_3rows": ints([[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3]]),
        "table_tile": ints([[0, 1, 2, 3], [4, 5, 6, 7]], layout=ttnn.TILE_LAYOUT),
        "table_f32": dev.from_torch(torch.zeros(B, 4), dtype=ttnn.float32, layout=ttnn.ROW_MAJOR_LAYOUT),
        # values only validate_device_tensors=True reads back
        "pos_256": ints([100, 256]),
        "pos_m2": ints([-2, 5]),
        "pos_1": ints([1, 200]),
        "table_bad_needed": ints([[0, 1, 9999, 9999], [2, 3, 99, 4]]),  # user 1 at 200 needs entry 2 (block 99)
        "table_bad_shared": ints([[0, 1, 2, -1], [9, 9, 9, 9]]),  # share_cache: row 0 entry 3 serves user 1 at 200
        # valid device positions: int32, and uint32 with 0xFFFFFFFF (-1: skip user 1)
        "pos_good": ints([100, 200]),
        "pos_u32_skip": ints([100, -1], dtype=ttnn.uint32),
    }


_PAGED_WITHOUT_TABLE = "paged op, page_table_tensor=None"


def _call(t, q="q", k="k", v="v", page_table=None, **kwargs):
    args = dict(cur_pos=[100, 200]) | kwargs
    # strings name tensors of the fixture; callables build what would raise at collection time (configs)
    args = {
        name: t.get(value, value) if isinstance(value, str) else value() if callable(value) else value
        for name, value in args.items()
    }
    q, k, v = (t[x] if isinstance(x, str) else x for x in (q, k, v))  # None stays None
    if page_table is not None:
        if isinstance(page_table, str):
            page_table = None if page_table == _PAGED_WITHOUT_TABLE else t[page_table]
        return op_module.paged_scaled_dot_product_attention_decode(q, k, v, page_table, **args)
    return op_module.scaled_dot_product_attention_decode(q, k, v, **args)


CASES = [
    # (call, exception, message pattern)
    (dict(q="q_rank3"), ValueError, r"q: expected a rank-4 tensor, got shape \[2, 8, 64\]"),
    (dict(q="q_bfp8"), TypeError, "q: dtype bfloat8_b not supported; expected one of bfloat16"),
    (dict(k="k_row_major"), ValueError, "k: expected .*TILE"),
    (dict(k="k_d32", v="k_d32"), ValueError, "k: head_dim 32 differs from q's head_dim 64"),
    (dict(v="v_short"), ValueError, r"v: shape \[2, 2, 128, 64\] must match k's first three dims \[2, 2, 256\]"),
    (dict(q="q_heads5"), ValueError, "q: n_q_heads=5 is not a multiple of k's n_kv_heads=2"),
    (dict(k="k_batch3", v="k_batch3"), ValueError, "k: batch 3 differs from q's batch 2"),
    (dict(q="q_len9"), ValueError, r"q: q_len \(dim 0\) = 9: expected 1..8"),
    (dict(q="q_len3", cur_pos=[1, 200]), ValueError, "cur_pos.0.=1: with q_len=3 the first query would sit at -1"),
    (dict(scale=-1.0), ValueError, r"scale=-1.0: expected a positive finite number"),
    (dict(sliding_window_size=0), ValueError, "sliding_window_size=0: expected a positive int or None"),
    (dict(cur_pos_tensor=torch.tensor([1, 2])), ValueError, "cur_pos, cur_pos_tensor: exactly one must be given"),
    (dict(cur_pos=None), ValueError, "cur_pos, cur_pos_tensor: exactly one must be given"),
    (dict(cur_pos=[100, 256]), ValueError, r"cur_pos\[1\]=256: expected an int in \[-1, 256\) \(kv_len=256"),
    (dict(cur_pos=[100, -2]), ValueError, r"cur_pos\[1\]=-2: expected an int in \[-1, 256\)"),
    (dict(cur_pos=[100]), ValueError, "cur_pos: expected 2 entries, got 1"),
    (
        dict(cur_pos=None, cur_pos_tensor="pos_bf16"),
        TypeError,
        "cur_pos_tensor: dtype bfloat16 not supported; expected one of int32, uint32",
    ),
    (dict(attn_mask="mask"), ValueError, "attn_mask: must be None when is_causal=True"),
    (dict(is_causal=False), ValueError, "cur_pos, cur_pos_tensor: must be None when is_causal=False"),
    (
        dict(is_causal=False, cur_pos=None, attn_mask="mask_short"),
        ValueError,
        r"attn_mask: expected shape \[2, 1 or 8, 1, 256\], got \[2, 1, 1, 128\]",
    ),
    (
        dict(is_causal=False, cur_pos=None, sliding_window_size=64),
        ValueError,
        "sliding_window_size: only supported with is_causal=True",
    ),
    (dict(attention_sink="sink_bad"), ValueError, r"attention_sink: expected shape \[1, 8\], got \[1, 4\]"),
    (dict(output_tensor="out_bad"), ValueError, r"output_tensor: expected shape \[1, 2, 8, 64\], got \[1, 2, 8, 32\]"),
    (dict(k="k_other", v="k_other"), ValueError, "k: lives on a different device than q"),
    (
        dict(program_config=lambda: ProgramConfig((8, 8), k_chunk_size=48)),
        ValueError,
        "k_chunk_size=48.*multiple of 32",
    ),
    (
        dict(program_config=lambda: ProgramConfig((8, 8), k_chunk_size=96)),
        ValueError,
        "k_chunk_size=96: expected a divisor of kv_len=256",
    ),
    (
        dict(program_config=lambda: ProgramConfig((9, 8))),
        ValueError,
        r"compute_with_storage_grid_size=\(9, 8\): larger than the device grid=\(8, 8\)",
    ),
    (
        dict(q="q_d256", k="k_d256", v="k_d256", program_config=lambda: ProgramConfig((8, 8), k_chunk_size=8192)),
        L1OverflowError,
        "circular buffers need .* B of L1 per core, .* over the budget",
    ),
    (
        dict(k="k_block48", v="k_block48", page_table=torch.tensor([[0, 1], [2, 3]], dtype=torch.int32)),
        ValueError,
        r"k: block_size \(dim 2\) = 48: expected a multiple of 32",
    ),
    # ---- every device tensor: on q's device, and allocated
    (dict(cur_pos=None, cur_pos_tensor="pos_other"), ValueError, "cur_pos_tensor: lives on a different device than q"),
    (
        dict(is_causal=False, cur_pos=None, attn_mask="mask_other"),
        ValueError,
        "attn_mask: lives on a different device than q",
    ),
    (dict(attention_sink="sink_other"), ValueError, "attention_sink: lives on a different device than q"),
    (dict(output_tensor="out_other"), ValueError, "output_tensor: lives on a different device than q"),
    (
        dict(k="kp", v="kp", page_table="table_other"),
        ValueError,
        "page_table_tensor: lives on a different device than q",
    ),
    (dict(q="q_dead"), ValueError, r"q: the tensor was deallocated \(is_allocated\(\) is False\)"),
    (dict(k="k_dead"), ValueError, "k: the tensor was deallocated"),
    (dict(cur_pos=None, cur_pos_tensor="pos_dead"), ValueError, "cur_pos_tensor: the tensor was deallocated"),
    (dict(is_causal=False, cur_pos=None, attn_mask="mask_dead"), ValueError, "attn_mask: the tensor was deallocated"),
    (dict(attention_sink="sink_dead"), ValueError, "attention_sink: the tensor was deallocated"),
    (dict(output_tensor="out_dead"), ValueError, "output_tensor: the tensor was deallocated"),
    (dict(k="kp", v="kp", page_table="table_dead"), ValueError, "page_table_tensor: the tensor was deallocated"),
    # ---- device cur_pos_tensor: ROW_MAJOR int32 / uint32 [b]; device page table: ROW_MAJOR int32 / uint32 [b or 1, n]
    (
        dict(cur_pos=None, cur_pos_tensor="pos_tile"),
        ValueError,
        "cur_pos_tensor: expected Layout.ROW_MAJOR, got Layout.TILE",
    ),
    (
        dict(cur_pos=None, cur_pos_tensor="pos_rank2"),
        ValueError,
        r"cur_pos_tensor: expected a rank-1 tensor, got shape \[1, 2\]",
    ),
    (
        dict(cur_pos=None, cur_pos_tensor="pos_b3"),
        ValueError,
        r"cur_pos_tensor: expected shape \[2\] \(one position per user\), got \[3\]",
    ),
    (
        dict(k="kp", v="kp", page_table="table_1row"),
        ValueError,
        r"page_table_tensor: expected 2 rows, one per user \(1 row only with share_cache=True\), got shape \[1, 4\]",
    ),
    (
        dict(k="kp", v="kp", page_table="table_3rows", share_cache=True),
        ValueError,
        r"page_table_tensor: expected 2 rows, or 1 \(share_cache=True: every user reads row 0\), got shape \[3, 4\]",
    ),
    (
        dict(k="kp", v="kp", page_table="table_tile"),
        ValueError,
        "page_table_tensor: expected Layout.ROW_MAJOR, got Layout.TILE",
    ),
    (
        dict(k="kp", v="kp", page_table="table_f32"),
        TypeError,
        "page_table_tensor: dtype float32 not supported; expected one of int32, uint32",
    ),
    (
        dict(k="kp", v="kp", page_table=torch.zeros(1, 4, dtype=torch.int32)),
        ValueError,
        r"page_table_tensor: expected shape \[2, max_blocks_per_user\] \(2 rows, one per user .*got \[1, 4\]",
    ),
    # ---- argument types
    (dict(is_causal=2), TypeError, r"is_causal=2 \(int\): expected True or False"),
    (dict(share_cache="yes"), TypeError, r"share_cache='yes' \(str\): expected True or False"),
    (dict(validate_device_tensors=1), TypeError, r"validate_device_tensors=1 \(int\): expected True or False"),
    (dict(scale=float("inf")), ValueError, "scale=inf: expected a positive finite number"),
    (dict(scale=float("nan")), ValueError, "scale=nan: expected a positive finite number"),
    (dict(scale=np.float32(-2)), ValueError, "scale=-2.0: expected a positive finite number"),
    (dict(scale="0.125"), TypeError, r"scale='0.125' \(str\): expected a positive finite number or None"),
    (dict(scale=True), TypeError, r"scale=True \(bool\): expected a positive finite number or None"),
    (dict(cur_pos=5), TypeError, r"cur_pos=5 \(int\): expected a list of 2 ints \(one position per user"),
    (dict(cur_pos="ab"), TypeError, r"cur_pos='ab' \(str\): expected a list of 2 ints"),
    (dict(cur_pos=np.array([1.5, 2.0])), TypeError, "cur_pos: expected integers .*got a float64 array"),
    (
        dict(cur_pos=torch.tensor([[100, 200]])),
        ValueError,
        r"cur_pos: expected a 1-D tensor of 2 ints .*got shape \[1, 2\]",
    ),
    (dict(cur_pos=[100, 2.0]), ValueError, r"cur_pos\[1\]=2.0: expected an int in \[-1, 256\)"),
    (dict(cur_pos=[100, True]), ValueError, r"cur_pos\[1\]=True: expected an int"),
    (dict(sliding_window_size=64.0), TypeError, r"sliding_window_size=64.0 \(float\): expected a positive int or None"),
    (dict(sliding_window_size=np.int64(0)), ValueError, "sliding_window_size=0: expected a positive int or None"),
    # ---- out-of-range numbers: each refused naming the argument and the range (issue 22)
    (dict(scale=1e-46), ValueError, r"scale=1e-46: expected a positive finite number in \[1e-27, 1e\+20\]"),  # fp32 0
    (dict(scale=1e-38), ValueError, r"scale=1e-38: expected .* in \[1e-27, 1e\+20\]"),  # an fp32 denormal
    (dict(scale=1e-30), ValueError, r"scale=1e-30: expected .* in \[1e-27"),  # the approximate exp's masks leak
    (dict(scale=9e35), ValueError, r"scale=9e\+35: expected .* in \[1e-27, 1e\+20\]"),  # the exp's multiplier
    (dict(scale=3.5e38), ValueError, r"scale=3.5e\+38: expected"),  # no fp32
    (dict(scale=10**400), ValueError, r"scale=inf: expected a positive finite number"),
    (dict(sliding_window_size=2**32), ValueError, r"sliding_window_size=4294967296: .*at most 2\*\*32 - 1"),
    (dict(sliding_window_size=2**32 + 5), ValueError, r"sliding_window_size=4294967301: expected a positive int"),
    (dict(q=None), TypeError, "q: expected a ttnn or emulator device tensor, got NoneType"),
    # (no host positions: the call is signed for the fast path first, which must leave q=None to validation)
    (dict(q=None, is_causal=False, cur_pos=None), TypeError, "q: expected a ttnn or emulator device tensor, got None"),
    (dict(v=None), TypeError, "v: expected a ttnn or emulator device tensor, got NoneType"),
    (
        dict(k="kp", v="kp", page_table=_PAGED_WITHOUT_TABLE),
        TypeError,
        "page_table_tensor=None: the paged op needs a page table",
    ),
    (dict(memory_config="DRAM"), TypeError, r"memory_config='DRAM' \(str\): expected a ttnn.MemoryConfig"),
    (dict(dtype="bfloat16"), TypeError, r"dtype='bfloat16' \(str\): expected a ttnn.DataType"),
    (
        dict(compute_kernel_config="HiFi4"),
        TypeError,
        "compute_kernel_config='HiFi4': expected ttnn.WormholeComputeKernelConfig",
    ),
    (dict(program_config=42), TypeError, r"program_config=42 \(int\): expected ProgramConfig"),
    # ---- validate_device_tensors=True: the values inside device tensors (read back, nothing uploaded or launched)
    (
        dict(cur_pos=None, cur_pos_tensor="pos_256", validate_device_tensors=True),
        ValueError,
        r"cur_pos_tensor\[1\]=256 \(read back from the device for user 1\): expected -1 \(skip the user\) "
        r"or a position in \[0, 256\)",
    ),
    (
        dict(cur_pos=None, cur_pos_tensor="pos_m2", validate_device_tensors=True),
        ValueError,
        r"cur_pos_tensor\[0\]=-2 .*user 0",
    ),
    (
        dict(q="q_len3", cur_pos=None, cur_pos_tensor="pos_1", validate_device_tensors=True),
        ValueError,
        r"cur_pos_tensor\[0\]=1 .*a position in \[2, 256\) \(q_len=3",
    ),
    (
        dict(k="kp", v="kp", page_table="table_bad_needed", validate_device_tensors=True),
        ValueError,
        r"page_table_tensor\[1, 2\]=99 \(read back from the device\): expected a block in \[0, 8\) "
        r".*user 1 reads entries 0..3 of row 1 for its positions \[0, 200\]",
    ),
    (
        dict(k="kp", v="kp", page_table="table_bad_shared", share_cache=True, validate_device_tensors=True),
        ValueError,
        r"page_table_tensor\[0, 3\]=-1 .*user 1 reads entries 0..3 of row 0",
    ),
]


@pytest.mark.parametrize("kwargs, exc, match", CASES, ids=[c[2][:48] for c in CASES])
def test_bad_call_raises_before_anything_runs(emu_device, tensors, monkeypatch, kwargs, exc, match):
    touched = []
    for method in ("allocate", "from_torch", "generic_op"):
        monkeypatch.setattr(emu_device, method, lambda *a, _m=method, **kw: touched.append(_m))
    with pytest.raises(exc, match=match):
        _call(tensors, **kwargs)
    assert touched == [], f"a rejected call still used the device: {touched}"


def test_host_tensor_q_is_rejected_by_name(tensors):
    with pytest.raises(TypeError, match="q: expected a ttnn or emulator device tensor, got Tensor"):
        op_module.scaled_dot_product_attention_decode(
            torch.randn(1, B, NQ, D), tensors["k"], tensors["v"], cur_pos=[1, 2]
        )


# ---- numpy / torch scalars are accepted where Python ones are ------------------------------------------------


@pytest.fixture(scope="module")
def reference(emu_device, tensors):
    """The output of the plain call (Python ints, default scale 1/sqrt(64) = 0.125)."""
    return emu_device.to_torch(_call(tensors))


ACCEPTED = [
    dict(scale=np.float32(0.125)),
    dict(scale=torch.tensor(0.125)),
    dict(scale=0.125, is_causal=np.bool_(True), share_cache=np.bool_(False)),
    dict(cur_pos=np.array([100, 200])),
    dict(cur_pos=torch.tensor([100, 200], dtype=torch.int32)),
    dict(cur_pos=(np.int64(100), np.int32(200))),
    dict(cur_pos=None, cur_pos_tensor=np.array([100, 200], dtype=np.int64)),
    dict(cur_pos=None, cur_pos_tensor="pos_good", validate_device_tensors=True),
    dict(validate_device_tensors=np.bool_(True)),  # host positions: nothing to read back
    dict(sliding_window_size=2**32 - 1),  # the largest window (a uint32): the same as none
]


@pytest.mark.parametrize("kwargs", ACCEPTED, ids=[str(sorted(a)) + str(i) for i, a in enumerate(ACCEPTED)])
def test_numpy_and_torch_scalars_are_accepted(emu_device, tensors, reference, kwargs):
    """Same call, same program: the output equals the plain call's bit for bit."""
    assert torch.equal(emu_device.to_torch(_call(tensors, **kwargs)), reference)


def test_uint32_positions_skip_with_all_ones(emu_device, tensors, reference):
    """A uint32 cur_pos_tensor's 0xFFFFFFFF is -1 (skip the user) for validate_device_tensors as for the kernels."""
    out = emu_device.to_torch(_call(tensors, cur_pos=None, cur_pos_tensor="pos_u32_skip", validate_device_tensors=True))
    assert torch.equal(out[:, 0], reference[:, 0])
    assert torch.count_nonzero(out[:, 1]) == 0


# ---- the scale's range: both ends right with either exp, refused past them --------------------------------------


@pytest.mark.parametrize("exp_approx", [True, False], ids=["approximate-exp", "exact-exp"])
@pytest.mark.parametrize("scale", [checks.SCALE_MIN, checks.SCALE_MAX], ids=["SCALE_MIN", "SCALE_MAX"])
def test_scale_range_ends_match_the_golden(emu_device, scale, exp_approx):
    """At SCALE_MIN the softmax is uniform over the visible positions: the generated masks' hidden positions must
    still weigh 0 under the approximate exp, whose argument there is MASKED_SCORE * scale = -1000 (at scale 1e-30,
    -1, every output came out 10% low: max |error| 0.028, over this bound). At SCALE_MAX it is an argmax: user 0
    sees one position (its tile's 31 hidden ones must lose even where q . k < 0: at 1e30 the exact exp gave PCC
    0.87), user 1's position 137 of each kv head beats every other by a margin bfloat16 scores keep."""
    from decode_harness import check_close, exp_factor, pcc_floor
    from ttflashdecode import golden

    ttnn = import_ttnn()
    gen = torch.Generator().manual_seed(22)
    q = torch.randn(1, B, NQ, D, generator=gen)
    k, v = torch.randn(B, NKV, S, D, generator=gen), torch.randn(B, NKV, S, D, generator=gen)
    for h in range(NKV):  # the sum of the group's q heads: q_i . sum_j q_j ~ |q_i|^2 = 64, other scores ~N(0, 8)
        k[1, h, 137] = q[0, 1, h * (NQ // NKV) : (h + 1) * (NQ // NKV)].sum(0)
    stored = [golden.quantize_like_device(x, "bfloat16") for x in (q, k, v)]
    pos = [0, 200]
    expected = golden.sdpa_decode(*stored, cur_pos=pos, scale=scale)
    tq, tk, tv = (emu_device.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT) for x in (q, k, v))
    config = ProgramConfig((8, 8), k_chunk_size=64, exp_approx_mode=exp_approx)
    out = op_module.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=pos, scale=scale, program_config=config)
    got = emu_device.to_torch(out).float()
    what = f"scale={scale:g} exp_approx={exp_approx}"
    check_close(got, expected, "bfloat16", 22, what, exp_factor(exp_approx), pcc_floor("bfloat16", exp_approx))


def test_scale_range_is_refused_past_both_ends(tensors):
    """Just past either end (and the values users hit: an fp32 denormal, a number fp32 rounds to 0, past the
    approximate exp's fp32 multiplier) is refused naming scale and the range; the wrapper's plan() refuses alike."""
    from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper

    for scale in (checks.SCALE_MIN * 0.99, checks.SCALE_MAX * 1.01, 1e-38, 1e-46, 9e35, 3.4e38):
        in_range = r"expected a positive finite number in \[1e-27, 1e\+20\]"
        with pytest.raises(ValueError, match=rf"scale={re.escape(repr(scale))}: {in_range}"):
            _call(tensors, scale=scale)
        with pytest.raises(ValueError, match=rf"scale={re.escape(repr(scale))}: expected"):
            FlashDecodeWrapper(tensors["q"].device()).plan(
                batch=B, n_q_heads=NQ, n_kv_heads=NKV, head_dim=D, kv_len=S, scale=scale
            )
    assert checks.check_scale(checks.SCALE_MIN) == checks.SCALE_MIN
    assert checks.check_scale(np.float64(checks.SCALE_MAX)) == checks.SCALE_MAX


# ---- arguments of the MLA and paged entry points; the L1 overflow's advice ------------------------------------


def test_mla_and_paged_entry_points_need_their_arguments(emu_device, tensors, monkeypatch):
    touched = []
    for method in ("allocate", "from_torch", "generic_op"):
        monkeypatch.setattr(emu_device, method, lambda *a, _m=method, **kw: touched.append(_m))
    q, k, kp = tensors["q"], tensors["k"], tensors["kp"]
    with pytest.raises(TypeError, match=r"head_dim_v=None \(NoneType\): expected an int"):
        op_module.flash_multi_latent_attention_decode(q, k, head_dim_v=None, cur_pos=[100, 200])
    with pytest.raises(TypeError, match=r"head_dim_v='512' \(str\): expected an int"):
        op_module.flash_multi_latent_attention_decode(q, k, head_dim_v="512", cur_pos=[100, 200])
    with pytest.raises(TypeError, match="page_table_tensor=None: the paged op needs a page table"):
        op_module.paged_flash_multi_latent_attention_decode(q, kp, None, head_dim_v=32, cur_pos=[100, 200])
    assert touched == []


def test_l1_overflow_advice_names_what_would_fit():
    """DeepSeek's MLA (576 / 512) with 128 q heads and q_len 3 overflows even at k_chunk_size 32 with the head dims
    tiled and one core per group: the advice names the query rows (q_len 2 or 64 heads per call fit), not the chunk."""
    from ttflashdecode.plan import DecodeShapes, plan

    def mla(q_len, heads):
        return DecodeShapes(
            batch=1,
            n_q_heads=heads,
            n_kv_heads=1,
            head_dim=576,
            v_head_dim=512,
            kv_len=1024,
            q_len=q_len,
            v_from_k=True,
        )

    with pytest.raises(L1OverflowError) as raised:
        plan(mla(3, 128), None)
    message = str(raised.value)
    assert "k_chunk_size" not in message, message
    assert "fewer query rows per kv head (q_len x n_q_heads / n_kv_heads = 384 rows" in message, message
    assert "decode fewer tokens per call (q_len)" in message, message
    plan(mla(2, 128), None)  # what the advice says fits
    plan(mla(3, 64), None)
    with pytest.raises(L1OverflowError, match=r"try a smaller k_chunk_size \(now 1024\); or fewer query rows"):
        plan(mla(2, 128), ProgramConfig((8, 8), k_chunk_size=1024))


# ---- ttnn's from_torch defaults and Tensor.deallocate(force) on the emulator -----------------------------------


def test_from_torch_defaults_are_ttnn_s(emu_device):
    """The emulator device's from_torch defaults as ttnn.from_torch does (compared with ttnn's own host tensors):
    the dtype from the torch tensor's, ROW_MAJOR (TILE for block floats), DRAM interleaved."""
    from ttemu import EmulatorError

    ttnn = import_ttnn()
    for torch_dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.uint32):
        x = torch.arange(6).reshape(2, 3).to(torch_dtype)
        want = ttnn.from_torch(x)
        got = emu_device.from_torch(x)
        assert (got.dtype, got.layout) == (want.dtype, want.layout), torch_dtype
        assert got.memory_config() == ttnn.DRAM_MEMORY_CONFIG
        assert torch.equal(emu_device.to_torch(got).to(torch.int64), x.to(torch.int64))
    for block_float in (ttnn.bfloat8_b, ttnn.bfloat4_b):
        want = ttnn.from_torch(torch.zeros(2, 3), dtype=block_float)
        assert emu_device.from_torch(torch.zeros(2, 3), dtype=block_float).layout == want.layout == ttnn.TILE_LAYOUT
    with pytest.raises(EmulatorError, match="torch.float64 tensor has no ttnn dtype of its own; pass dtype="):
        emu_device.from_torch(torch.zeros(2, dtype=torch.float64))
    with pytest.raises(EmulatorError, match="dtype DataType.UINT16 is not supported by the emulator"):
        emu_device.from_torch(torch.zeros(2, dtype=torch.int16))  # ttnn's uint16: a dtype the emulator lacks


def test_translated_positions_and_deallocate_force(emu_device, tensors, reference):
    """``from_torch(torch.tensor(pos), dtype=ttnn.int32)`` as a model writes it for ttnn (ROW_MAJOR by default) is a
    valid cur_pos_tensor; ``t.deallocate(True)`` (gpt-oss) frees an emulator tensor as ttnn's does."""
    ttnn = import_ttnn()
    for pos in (
        emu_device.from_torch(torch.tensor([100, 200]), dtype=ttnn.int32),
        emu_device.from_torch(torch.tensor([100, 200], dtype=torch.int32)),
    ):
        assert torch.equal(emu_device.to_torch(_call(tensors, cur_pos=None, cur_pos_tensor=pos)), reference)
        pos.deallocate(True)
        assert not pos.is_allocated()
    spare = emu_device.from_torch(torch.zeros(4), dtype=ttnn.bfloat16)
    spare.deallocate(force=False)
    assert not spare.is_allocated()


def test_scalar_helpers():
    assert checks.check_scale(np.int64(2)) == 2.0 and type(checks.check_scale(np.int64(2))) is float
    assert checks.check_scale(torch.tensor(0.5, dtype=torch.bfloat16)) == 0.5
    assert checks.check_sliding_window(np.int32(64), True) == 64
    assert checks.check_sliding_window(torch.tensor(64), True) == 64
    assert checks.check_bool("share_cache", np.bool_(True)) is True
    assert checks.as_int32(0xFFFFFFFF) == -1 and checks.as_int32(7) == 7


# ---- validate_device_tensors: garbage where no user reads is fine; nothing is read back by default -----------


def test_garbage_in_unneeded_page_table_entries_passes(emu_device, tensors):
    """User 0 at 200 with a 64-position window reads positions [137, 200] (blocks 2..3 of its row); user 1 at 100
    reads [37, 100] (blocks 0..1). Every other entry holds garbage, which validate_device_tensors=True accepts
    because the reader never reads it; the output matches the same call with those entries made valid."""
    ttnn = import_ttnn()
    garbage = torch.tensor([[-5, 1234, 0, 1], [2, 3, 77777, -1]], dtype=torch.int32)
    clean = torch.tensor([[6, 7, 0, 1], [2, 3, 4, 5]], dtype=torch.int32)
    table = emu_device.from_torch(garbage, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    kwargs = dict(k="kp", v="kp", cur_pos=[200, 100], sliding_window_size=np.int64(64))
    out = _call(tensors, page_table=table, validate_device_tensors=True, **kwargs)
    assert torch.equal(emu_device.to_torch(out), emu_device.to_torch(_call(tensors, page_table=clean, **kwargs)))


def test_device_tensors_are_read_back_only_when_asked(emu_device, tensors, monkeypatch):
    reads = []
    to_torch = emu_device.to_torch
    monkeypatch.setattr(emu_device, "to_torch", lambda t: reads.append(t) or to_torch(t))
    ttnn = import_ttnn()
    table = emu_device.from_torch(
        torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]], dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT
    )
    kwargs = dict(k="kp", v="kp", page_table=table, cur_pos=None, cur_pos_tensor="pos_good", sliding_window_size=64)
    _call(tensors, **kwargs)
    assert reads == [], "a decode step without validate_device_tensors read device tensors back"
    _call(tensors, validate_device_tensors=True, **kwargs)
    assert reads == [tensors["pos_good"], table]


# ---- the per-device cache lives and dies with its device -------------------------------------------------------


def _decode_on_fresh_device():
    """Open a device, run one bfloat8_b call (a decode program, a staging tensor and a convert program), return the
    device with nothing else of the call left referencing it."""
    import ttemu

    ttnn = import_ttnn()
    dev = ttemu.open_device(board="n150")
    q, k = (
        dev.from_torch(torch.ones(*shape), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
        for shape in ((1, B, NQ, D), (B, NKV, S, D))
    )
    op_module.scaled_dot_product_attention_decode(q, k, k, cur_pos=[100, 200], dtype=ttnn.bfloat8_b)
    return dev


def test_device_cache_follows_the_device_lifetime():
    op_module.clear_program_cache()
    dev = _decode_on_fresh_device()
    assert op_module.program_cache_stats() == {"hits": 0, "misses": 2, "entries": 2}
    dev.close()
    assert op_module.program_cache_stats()["entries"] == 0, "close() must drop the device's programs"
    closed = weakref.ref(dev)
    del dev
    gc.collect()
    assert closed() is None, "the op's caches keep a closed device alive"
    # The next device likely reuses the closed one's id() and addresses: nothing of the old one may be hit (its
    # staging tensor would belong to a closed device).
    dev = _decode_on_fresh_device()
    assert op_module.program_cache_stats() == {"hits": 0, "misses": 4, "entries": 2}
    dev.close()


def test_device_state_is_dropped_with_an_unclosed_device():
    """A device dropped without close() is collected too, with its state."""
    op_module.clear_program_cache()
    dev = _decode_on_fresh_device()
    state = weakref.ref(device_cache(dev))
    dropped = weakref.ref(dev)
    del dev
    gc.collect()
    assert dropped() is None and state() is None
    assert op_module.program_cache_stats()["entries"] == 0


def test_return_stats_must_be_a_bool(tensors, no_launch):
    """``return_stats`` decides the return's shape: a truthy non-bool (``"yes"``, 1) is refused by name before anything
    runs, on the decode ops, the cache ops and the upstream baseline alike."""
    import ttflashdecode
    from ttflashdecode import upstream

    t = tensors
    calls = {
        "decode": lambda flag: op_module.scaled_dot_product_attention_decode(
            t["q"], t["k"], t["v"], cur_pos=[100, 200], return_stats=flag
        ),
        "update_cache": lambda flag: ttflashdecode.paged_update_cache(
            t["k"], t["q"], update_idxs=[100, 200], return_stats=flag
        ),
        "fill_cache": lambda flag: ttflashdecode.fill_cache(t["k"], t["k_batch3"], 0, return_stats=flag),
        "upstream": lambda flag: upstream.scaled_dot_product_attention_decode(
            t["q"], t["k"], t["v"], cur_pos=[100, 200], return_stats=flag
        ),
    }
    for name, call in calls.items():
        for flag in ("yes", 1):
            with pytest.raises(TypeError, match=re.escape(f"return_stats={flag!r}")):
                call(flag)
                pytest.fail(f"{name}: return_stats={flag!r} was accepted")
