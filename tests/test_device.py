"""The same FlashDecode checks on a Wormhole card (N150 / N300 / T3K chip 0), plus card-vs-emulator agreement.

Every test here is marked ``device`` and skipped without /dev/tenstorrent; they run unchanged on a card.
"""

from __future__ import annotations

import random

import pytest
import torch

from decode_harness import DecodeCase, assert_matches_golden, run_case
from test_flash_decode import MATRIX

pytestmark = pytest.mark.device


def _adapters(ttnn, device):
    def to_device(x, dtype, memory_config=None):
        return ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, device=device,
                               memory_config=memory_config or ttnn.DRAM_MEMORY_CONFIG)

    return to_device, ttnn.to_torch


@pytest.mark.parametrize("case", MATRIX, ids=str)
def test_matrix_on_card(ttnn, tt_device, case):
    grid = tt_device.compute_with_storage_grid_size()
    if case.grid[0] > grid.x or case.grid[1] > grid.y:
        pytest.skip(f"case grid {case.grid} exceeds this card's {grid.x}x{grid.y}")
    to_device, to_torch = _adapters(ttnn, tt_device)
    assert_matches_golden(run_case(tt_device, case, to_device=to_device, to_torch=to_torch), case)


# The decode features of test_features.py, one representative case each, on a card.
FEATURES = [
    DecodeCase(2, 8, 2, 64, 1024, (1000, 333), "bfloat8_b", k_chunk_size=64, max_cores_per_head_batch=4,
               block_size=64, sliding_window_size=200, attention_sink=True),
    DecodeCase(3, 16, 4, 128, 1024, (1023, 300, 2), "bfloat8_b", k_chunk_size=128, q_len=3),
    DecodeCase(2, 8, 2, 64, 512, None, "bfloat8_b", k_chunk_size=64, mask_heads=8, mask_dtype="bfloat8_b"),
    DecodeCase(4, 8, 1, 64, 1024, (900, 10, 512, 1023), "bfloat8_b", k_chunk_size=128, share_cache=True),
    DecodeCase(2, 16, 1, 2048, 256, (250, 77), "bfloat8_b", k_chunk_size=64, max_cores_per_head_batch=2, q_len=4),
    DecodeCase(1, 8, 1, 576, 256, (255,), "bfloat8_b", k_chunk_size=32, v_head_dim=512),
    DecodeCase(4, 8, 2, 64, 512, (511, 100, -1, 300), "bfloat8_b", k_chunk_size=64, out_dtype="bfloat8_b"),
    DecodeCase(2, 8, 2, 64, 512, (511, 100), "bfloat16", k_chunk_size=64, fp32_dest_acc_en=True, out_dtype="float32"),
    DecodeCase(4, 8, 2, 64, 512, (511, 100, -1, 300), "bfloat8_b", k_chunk_size=64, q_len=2, out_sharded=True),
]  # fmt: skip


@pytest.mark.parametrize("case", FEATURES, ids=str)
def test_features_on_card(ttnn, tt_device, case):
    to_device, to_torch = _adapters(ttnn, tt_device)
    assert_matches_golden(run_case(tt_device, case, to_device=to_device, to_torch=to_torch), case)


def test_card_and_emulator_agree(ttnn, tt_device, emu_device):
    """Same inputs, same descriptor: the card's and the emulator's outputs are close (not bit-equal: the
    emulator models SFPU exp/recip to within their documented accuracy, not bit for bit)."""
    # One fresh seed for both runs, so both backends see the same inputs.
    case = DecodeCase(4, 32, 8, 128, 2048, (0, 2047, 1000, 64), "bfloat8_b", k_chunk_size=256,
                      max_cores_per_head_batch=2, seed=random.randrange(1 << 30))  # fmt: skip
    to_device, to_torch = _adapters(ttnn, tt_device)
    on_card = run_case(tt_device, case, to_device=to_device, to_torch=to_torch).out
    on_emu = run_case(
        emu_device, case,
        to_device=lambda x, dtype: emu_device.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT),
        to_torch=emu_device.to_torch,
    ).out
    assert torch.corrcoef(torch.stack([on_card.flatten(), on_emu.flatten()]))[0, 1] > 0.9995
    assert (on_card - on_emu).abs().max() < 0.05
