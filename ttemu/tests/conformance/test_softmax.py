"""Conformance: upstream's attention softmax (reader_unary_interleaved_sm.cpp, softmax.cpp,
writer_unary_interleaved_start_id_blocked_sm.cpp) over [1, 1, H, W] on the emulator, against torch.softmax."""

from __future__ import annotations

import pytest
import torch

from .factories import softmax_program


def _run(emu_device, ttnn, x, **kw):
    src = emu_device.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = emu_device.allocate(list(x.shape), ttnn.bfloat16, ttnn.TILE_LAYOUT, fill=0x7FC07FC0)  # NaN poison
    emu_device.generic_op([src, out], softmax_program(ttnn, emu_device.grid, src, out, **kw))
    return emu_device.to_torch(src).double(), emu_device.to_torch(out).double()


@pytest.mark.parametrize(
    "H,W,numeric_stable,fp32_dest_acc_en",
    [
        (128, 256, True, False),  # Wt 8: one block of 8 per row
        (64, 160, True, True),  # Wt 5 with an fp32 DEST: blocks of 1, float32 intermediates
        (96, 192, False, False),  # Wt 6, no max subtraction (inputs kept small enough for exp)
    ],
)
def test_softmax(emu_device, ttnn, H, W, numeric_stable, fp32_dest_acc_en):
    seed = 300 + H + W + int(numeric_stable) * 2 + int(fp32_dest_acc_en)
    torch.manual_seed(seed)
    x = torch.randn(1, 1, H, W) * (4.0 if numeric_stable else 2.0) + (6.0 if numeric_stable else 0.0)
    src, got = _run(emu_device, ttnn, x, numeric_stable=numeric_stable, fp32_dest_acc_en=fp32_dest_acc_en)
    tag = f"[seed {seed}] softmax [1,1,{H},{W}] numeric_stable={numeric_stable} fp32_dest={fp32_dest_acc_en}"
    assert not torch.isnan(got).any(), f"{tag}: an output tile was never written"
    ref = torch.softmax(src, dim=-1)
    # bf16 exps, a bf16 (or fp32) row sum and its SFPU reciprocal, one bf16 multiply and the bf16 output: a few
    # percent of each value at most, relative to the row's largest probability.
    err = ((got - ref).abs() / ref.amax(-1, keepdim=True)).max().item()
    assert err < 0.03, f"{tag}: max error {err:.4g} of the row maximum"
    rows = got.sum(-1)
    assert (rows - 1).abs().max().item() < 0.02, f"{tag}: a row sums to {rows[(rows - 1).abs().argmax()]}"
    pcc = torch.corrcoef(torch.stack([got.flatten(), ref.flatten()]))[0, 1].item()
    assert pcc > 0.999, f"{tag}: pcc {pcc}"
