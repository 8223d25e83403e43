"""Bad calls of the op: each raises before anything runs, with an error that names the argument, the value it got
and what was expected, and nothing is uploaded to or allocated on the device for it."""

from __future__ import annotations

import pytest
import torch

from ttflashdecode import op as op_module
from ttflashdecode.config import ProgramConfig
from ttflashdecode.plan import L1OverflowError
from ttflashdecode.ttnn_env import import_ttnn

B, NQ, NKV, D, S = 2, 8, 2, 64, 256  # a valid call: 2 users, GQA 8/2, head_dim 64, 256 positions


@pytest.fixture(scope="module")
def tensors(emu_device, other_emu_device):
    """Every tensor the cases use, made once (before any case patches the device)."""
    ttnn = import_ttnn()
    dev, other = emu_device, other_emu_device

    def put(shape, dtype=None, layout=None, device=dev):
        return device.from_torch(torch.randn(*shape), dtype=dtype or ttnn.bfloat16, layout=layout or ttnn.TILE_LAYOUT)

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
    }


def _call(t, q="q", k="k", v="v", page_table=None, **kwargs):
    args = dict(cur_pos=[100, 200]) | kwargs
    # strings name tensors of the fixture; callables build what would raise at collection time (configs)
    args = {name: t.get(value, value) if isinstance(value, str) else value() if callable(value) else value
            for name, value in args.items()}  # fmt: skip
    if page_table is not None:
        return op_module.paged_scaled_dot_product_attention_decode(t[q], t[k], t[v], page_table, **args)
    return op_module.scaled_dot_product_attention_decode(t[q], t[k], t[v], **args)


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
    (dict(scale=-1.0), ValueError, r"scale=-1.0: expected a positive number"),
    (dict(sliding_window_size=0), ValueError, "sliding_window_size=0: expected a positive int or None"),
    (dict(cur_pos_tensor=torch.tensor([1, 2])), ValueError, "cur_pos, cur_pos_tensor: exactly one must be given"),
    (dict(cur_pos=None), ValueError, "cur_pos, cur_pos_tensor: exactly one must be given"),
    (dict(cur_pos=[100, 256]), ValueError, r"cur_pos\[1\]=256: expected an int in \[-1, 256\) \(kv_len=256"),
    (dict(cur_pos=[100, -2]), ValueError, r"cur_pos\[1\]=-2: expected an int in \[-1, 256\)"),
    (dict(cur_pos=[100]), ValueError, "cur_pos: expected 2 entries, got 1"),
    (dict(cur_pos=None, cur_pos_tensor="pos_bf16"), ValueError, r"cur_pos_tensor: expected an int32 tensor of shape \[2\], got bfloat16"),
    (dict(attn_mask="mask"), ValueError, "attn_mask: must be None when is_causal=True"),
    (dict(is_causal=False), ValueError, "cur_pos, cur_pos_tensor: must be None when is_causal=False"),
    (dict(is_causal=False, cur_pos=None, attn_mask="mask_short"), ValueError, r"attn_mask: expected shape \[2, 1 or 8, 1, 256\], got \[2, 1, 1, 128\]"),
    (dict(is_causal=False, cur_pos=None, sliding_window_size=64), ValueError, "sliding_window_size: only supported with is_causal=True"),
    (dict(attention_sink="sink_bad"), ValueError, r"attention_sink: expected shape \[1, 8\], got \[1, 4\]"),
    (dict(output_tensor="out_bad"), ValueError, r"output_tensor: expected shape \[1, 2, 8, 64\], got \[1, 2, 8, 32\]"),
    (dict(k="k_other", v="k_other"), ValueError, "k: lives on a different device than q"),
    (dict(program_config=lambda: ProgramConfig((8, 8), k_chunk_size=48)), ValueError, "k_chunk_size=48.*multiple of 32"),
    (dict(program_config=lambda: ProgramConfig((8, 8), k_chunk_size=96)), ValueError, "k_chunk_size=96: expected a divisor of kv_len=256"),
    (dict(program_config=lambda: ProgramConfig((9, 8))), ValueError, r"compute_with_storage_grid_size=\(9, 8\): larger than the device grid=\(8, 8\)"),
    (dict(q="q_d256", k="k_d256", v="k_d256", program_config=lambda: ProgramConfig((8, 8), k_chunk_size=8192)), L1OverflowError,
     "circular buffers need .* B of L1 per core, .* over the budget"),
    (dict(k="k_block48", v="k_block48", page_table=torch.tensor([[0, 1], [2, 3]], dtype=torch.int32)), ValueError,
     r"k: block_size \(dim 2\) = 48: expected a multiple of 32"),
]  # fmt: skip


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
        op_module.scaled_dot_product_attention_decode(torch.randn(1, B, NQ, D), tensors["k"], tensors["v"], cur_pos=[1, 2])
