"""One decode output against the golden model, for the tests that build their own inputs (the position contract,
the drop-in forms, the model call sequences): every element written (no NaN: outputs start poisoned or garbage is
planted), users that must be zero exactly zero, and the rest held to decode_harness's one rule (PCC floor and a
max-abs bound relative to the output's magnitude, so a long context whose outputs are all small is still held to its
scale)."""

from __future__ import annotations

import torch

from decode_harness import check_close, tag


def check_output(
    out: torch.Tensor,
    expected: torch.Tensor,
    seed: int,
    what: str,
    kv_dtype: str = "bfloat16",
    zero_users=(),
    factor: float = 1.0,
) -> None:
    t = f"{tag(seed)} {what}"
    assert tuple(out.shape) == tuple(expected.shape), f"{t}: shape {tuple(out.shape)} != {tuple(expected.shape)}"
    assert not torch.isnan(out).any(), f"{t}: NaN in the output (garbage leaked, or an element was never written)"
    for u in zero_users:
        assert torch.count_nonzero(out[:, u]) == 0, f"{t}: user {u} sees no position: its rows must be exactly 0"
    live = [u for u in range(out.shape[1]) if u not in zero_users]
    check_close(out[:, live], expected[:, live], kv_dtype, seed, what, factor)
