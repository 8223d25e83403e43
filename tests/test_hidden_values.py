"""Hidden positions contribute exactly nothing, whatever K and V hold there (docs/DESIGN.md, the position contract).

A cache holds garbage wherever nothing was written, and a padding mask hides it with -inf: NaN or Inf in V behind
the mask would otherwise meet P = 0 in P . V (0 * NaN = NaN in IEEE arithmetic), and a row the mask hides entirely
would sum its hidden V rows. The caches here are quantised as the device stores them (the emulator's host tensor
path), then the bytes of every hidden row are overwritten with non-finite bit patterns: bfloat16 NaN/Inf/max datums,
or a block-float exponent of 0xFF/0xFE with random datums. Outputs start poisoned (NaN) and are compared with the
golden model on the clean caches, which sees the visible positions only; rows that see nothing must be exactly zero.
"""

from __future__ import annotations

import pytest
import torch

from output_checks import check_output
from ttemu.tensor import TILE, host_to_pages, tile_size_bytes
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden
from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.decode import api as op_module

KV_DTYPES = ["bfloat16", "bfloat8_b", "bfloat4_b"]
# bfloat16 garbage datums: quiet NaN, +Inf, -Inf, the largest finite value, a negative NaN with a payload.
BF16_GARBAGE = torch.tensor([0x7FC0, 0x7F80, 0xFF80, 0x7F7F, 0xFFC1], dtype=torch.int32)
FACE = 16


def _config():
    return ProgramConfig(compute_with_storage_grid_size=(8, 8), k_chunk_size=64, max_cores_per_head_batch=4)


def _tile(device, x, dtype="bfloat16"):
    ttnn = import_ttnn()
    return device.from_torch(x, dtype=getattr(ttnn, dtype), layout=ttnn.TILE_LAYOUT)


def _row_spans(row: int, dtype: str) -> list[tuple[int, int]]:
    """(offset, length) in one tile's bytes of every byte of tile row `row`: its two face rows' datums and, for a
    block-float tile, their two shared exponents (64 exponent bytes, one per face row, then face-ordered datums)."""
    spans = []
    for half in range(2):
        face_row = ((row // FACE) * 2 + half) * FACE + row % FACE
        if dtype == "bfloat16":
            spans.append((face_row * FACE * 2, FACE * 2))
        else:
            row_bytes = FACE if dtype == "bfloat8_b" else FACE // 2
            spans.append((face_row, 1))
            spans.append((64 + face_row * row_bytes, row_bytes))
    return spans


def _cache_with_garbage(device, x: torch.Tensor, hidden: torch.Tensor, dtype: str, gen: torch.Generator):
    """Device tensor of cache `x` [b, kv_heads, S, d] stored as `dtype`, with every position `hidden` [b, kv_heads, S]
    selects overwritten, byte by byte, by non-finite garbage after the visible part was quantised."""
    ttnn = import_ttnn()
    b, h, s, d = x.shape
    raw, _ = host_to_pages(x, getattr(ttnn, dtype), ttnn.TILE_LAYOUT)
    pages = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    tile_bytes = tile_size_bytes(getattr(ttnn, dtype))
    for u, head, pos in hidden.nonzero().tolist():
        for dt in range(d // TILE):
            tile = ((u * h + head) * (s // TILE) + pos // TILE) * (d // TILE) + dt
            for offset, length in _row_spans(pos % TILE, dtype):
                at = tile * tile_bytes + offset
                if dtype == "bfloat16":
                    datums = BF16_GARBAGE[torch.randint(len(BF16_GARBAGE), (length // 2,), generator=gen)]
                    pages[at : at + length] = torch.stack([datums & 0xFF, datums >> 8], dim=1).flatten().to(torch.uint8)
                elif length == 1:  # a shared exponent: Inf/NaN (0xFF) or the largest finite one (0xFE)
                    pages[at] = [0xFF, 0xFE][int(torch.randint(2, (1,), generator=gen))]
                else:
                    pages[at : at + length] = torch.randint(1, 256, (length,), generator=gen, dtype=torch.uint8)
    t = device.allocate((b, h, s, d), getattr(ttnn, dtype), ttnn.TILE_LAYOUT, fill=None)
    device._write_pages(t, pages.numpy())  # the emulator's host upload path, bytes as given
    stored = device.to_torch(t).float()
    assert not torch.isfinite(stored[hidden]).all(), "the planted garbage must hold non-finite values"
    assert torch.equal(stored[~hidden], golden.quantize_like_device(x, dtype)[~hidden].float()), "visible part"
    return t


def _poisoned_output(device, shape):
    return _tile(device, torch.full(shape, float("nan")))


def _decode(device, q, k, v, kv_dtype, gen, hidden, **kwargs):
    q_len, b, nq, d = q.shape
    return device.to_torch(
        op_module.scaled_dot_product_attention_decode(
            _tile(device, q),
            _cache_with_garbage(device, k, hidden, kv_dtype, gen),
            _cache_with_garbage(device, v, hidden, kv_dtype, gen),
            program_config=_config(),
            output_tensor=_poisoned_output(device, (q_len, b, nq, d)),
            **kwargs,
        )
    ).float()


def _expected(q, k, v, kv_dtype, **kwargs):
    return golden.sdpa_decode(
        golden.quantize_like_device(q, "bfloat16"),
        golden.quantize_like_device(k, kv_dtype),
        golden.quantize_like_device(v, kv_dtype),
        **kwargs,
    )


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_garbage_behind_minus_inf_masks_contributes_nothing(emu_device, kv_dtype):
    """Per-head masks [b, n_q_heads, 1, S], non-causal: a position every head of a group hides holds garbage in K and
    V of that group. User 0 hides positions 128.. (the padding mask of a shorter prompt); user 1 hides scattered
    positions, inside tiles too, and kv head 1 also 0..40, while head 0 hides positions the other heads of kv head 0
    see (clean there); user 2 hides everything (zeros); user 3 hides everything from kv head 0's heads (zero rows)
    and garbage fills kv head 0's whole cache."""
    seed = 500 + KV_DTYPES.index(kv_dtype)
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, S = 4, 8, 2, 64, 256
    g = nq // nkv
    q = torch.randn(1, b, nq, d, generator=gen)
    k, v = torch.randn(b, nkv, S, d, generator=gen), torch.randn(b, nkv, S, d, generator=gen)
    mask = torch.randn(b, nq, 1, S, generator=gen)
    mask[0, :, :, 128:] = float("-inf")
    mask[1, :, :, torch.rand(S, generator=gen) < 0.3] = float("-inf")
    mask[1, g:, :, :41] = float("-inf")
    mask[1, 0, :, torch.rand(S, generator=gen) < 0.3] = float("-inf")  # hidden from head 0 only: V stays clean there
    mask[2] = float("-inf")
    mask[3, :g] = float("-inf")
    hidden = torch.isneginf(mask[:, :, 0, :]).reshape(b, nkv, g, S).all(dim=2)

    out = _decode(emu_device, q, k, v, kv_dtype, gen, hidden, is_causal=False, attn_mask=_tile(emu_device, mask))
    expected = _expected(q, k, v, kv_dtype, is_causal=False, attn_mask=golden.quantize_like_device(mask, "bfloat16"))
    assert torch.count_nonzero(out[:, 3, :g]) == 0, f"[seed {seed}] user 3's heads 0..{g - 1} see nothing: zero rows"
    check_output(out[:, :3], expected[:, :3], seed, f"{kv_dtype} -inf masks", kv_dtype, zero_users=(2,))
    check_output(out[:, 3:, g:], expected[:, 3:, g:], seed, f"{kv_dtype} user 3, kv head 1", kv_dtype)


def test_garbage_behind_a_shared_mask_with_two_query_tokens(emu_device):
    """A mask [b, 1, q_len, S] shared by every head (the usual padding mask), q_len 2: a position both tokens hide
    holds garbage (bfloat8_b), whether the mask says -inf or bfloat16's lowest finite value; one that only token 0
    hides stays clean and is seen by token 1."""
    seed = 520
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, S, q_len = 2, 8, 2, 64, 256, 2
    q = torch.randn(q_len, b, nq, d, generator=gen)
    k, v = torch.randn(b, nkv, S, d, generator=gen), torch.randn(b, nkv, S, d, generator=gen)
    mask = torch.zeros(b, 1, q_len, S)
    mask[0, :, :, 100:] = float("-inf")
    mask[0, :, 0, 90:100] = float("-inf")  # token 0 only
    mask[1, :, :, torch.rand(S, generator=gen) < 0.5] = float("-inf")
    mask[1, :, :, 200:220] = torch.finfo(torch.bfloat16).min  # a model's finite "minus infinity" hides as well
    mask[1, :, :, 220:224] = -1.0e29  # finite, above MASKED_SCORE: weighs 0 but is no hidden position (V clean)
    hidden = (mask[:, 0] <= -1.0e30).all(dim=1)[:, None, :].expand(b, nkv, S)

    out = _decode(emu_device, q, k, v, "bfloat8_b", gen, hidden, is_causal=False, attn_mask=_tile(emu_device, mask))
    expected = _expected(q, k, v, "bfloat8_b", is_causal=False, attn_mask=golden.quantize_like_device(mask, "bfloat16"))
    check_output(out, expected, seed, "shared mask, q_len 2", "bfloat8_b")


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_garbage_outside_window_and_past_cur_pos_contributes_nothing(emu_device, kv_dtype):
    """Causal, sliding window 40, q_len 2: garbage bytes before each user's window (inside its first live tile) and
    past its cur_pos (inside its last live tile and chunk) are zeroed in L1 before compute sees them."""
    seed = 540 + KV_DTYPES.index(kv_dtype)
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, S, q_len, window = 3, 8, 2, 64, 256, 2, 40
    cur_pos = [100, 37, 255]
    q = torch.randn(q_len, b, nq, d, generator=gen)
    k, v = torch.randn(b, nkv, S, d, generator=gen), torch.randn(b, nkv, S, d, generator=gen)
    pos, last = torch.arange(S)[None, :], torch.tensor(cur_pos)[:, None]
    hidden = ((pos > last) | (pos < last - q_len + 1 - window + 1))[:, None, :].expand(b, nkv, S)

    out = _decode(emu_device, q, k, v, kv_dtype, gen, hidden, cur_pos=cur_pos, sliding_window_size=window)
    expected = _expected(q, k, v, kv_dtype, cur_pos=cur_pos, sliding_window_size=window)
    check_output(out, expected, seed, f"{kv_dtype} window={window}", kv_dtype)


def test_non_finite_value_some_rows_of_a_group_see_stays_in_that_group(emu_device):
    """The contract's limit: a position one head of a group sees and another hides is genuinely used, so its V must
    be finite. When it is not, the heads that see it get a non-finite row (as torch does), the group's other rows
    are not guaranteed (P . V is one matmul over the group's rows: IEEE 0 * NaN on the emulator), and every other
    group and user is exact."""
    seed = 560
    gen = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, S = 2, 8, 2, 64, 256
    q = torch.randn(1, b, nq, d, generator=gen)
    k, v = torch.randn(b, nkv, S, d, generator=gen), torch.randn(b, nkv, S, d, generator=gen)
    mask = torch.randn(b, nq, 1, S, generator=gen)
    mask[0, 0, :, 77] = float("-inf")  # head 0 hides position 77, heads 1..3 (same kv head) see it
    hidden = torch.zeros(b, nkv, S, dtype=torch.bool)
    hidden[0, 0, 77] = True

    out = _decode(emu_device, q, k, v, "bfloat16", gen, hidden, is_causal=False, attn_mask=_tile(emu_device, mask))
    expected = _expected(q, k, v, "bfloat16", is_causal=False, attn_mask=golden.quantize_like_device(mask, "bfloat16"))
    assert not torch.isfinite(out[0, 0, 1:4]).all(dim=-1).any(), f"[seed {seed}] heads seeing garbage V stay finite"
    check_output(out[:, :1, 4:], expected[:, :1, 4:], seed, "user 0, kv head 1")
    check_output(out[:, 1:], expected[:, 1:], seed, "user 1")
