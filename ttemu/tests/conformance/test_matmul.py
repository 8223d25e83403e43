"""Conformance: upstream multi-core bmm (reader_bmm_8bank_output_tiles_partitioned.cpp + bmm.cpp) on the emulator,
against torch."""

from __future__ import annotations

import pytest
import torch

from .factories import bmm_program


@pytest.mark.parametrize("batch,M,K,N,bcast_b", [(2, 64, 96, 128, False), (3, 32, 160, 64, True)])
@pytest.mark.parametrize("fidelity", ["HiFi2", "HiFi4"])
def test_bmm(emu_device, ttnn, batch, M, K, N, bcast_b, fidelity):
    seed = batch * 100 + M + K + N + len(fidelity)
    torch.manual_seed(seed)
    a = torch.randn(1, batch, M, K)
    b = torch.randn(1, 1 if bcast_b else batch, K, N)
    ta = emu_device.from_torch(a, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    tb = emu_device.from_torch(b, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = emu_device.allocate([1, batch, M, N], ttnn.bfloat16, ttnn.TILE_LAYOUT, fill=0x7FC07FC0)
    program = bmm_program(ttnn, emu_device.grid, ta, tb, out, batch, M // 32, K // 32, N // 32, bcast_b, fidelity)
    emu_device.generic_op([ta, tb, out], program)
    got = emu_device.to_torch(out).double()
    ref = emu_device.to_torch(ta).double() @ emu_device.to_torch(tb).double()
    tag = f"[seed {seed}] bmm b{batch} {M}x{K}x{N} bcast_b={bcast_b} {fidelity}"
    assert not torch.isnan(got).any(), f"{tag}: an output tile was never written"
    pcc = torch.corrcoef(torch.stack([got.flatten(), ref.flatten()]))[0, 1].item()
    err = (got - ref).abs().max().item() / ref.abs().max().item()
    # bf16 DST accumulation over K (two rounded partial sums per 32-wide K tile) and a bf16 result
    assert pcc > 0.9999, f"{tag}: pcc {pcc}"
    assert err < 0.02, f"{tag}: max error {err:.3g} of max |ref|"
