"""Conformance: upstream eltwise unary SFPU (eltwise_sfpu.cpp with SFPU_OP_CHAIN_0) on the emulator: exp (exact and
approximate) and recip, running the wheel's ckernel_sfpu_exp.h / ckernel_sfpu_recip.h on the host SFPI, against
torch."""

from __future__ import annotations

import pytest
import torch

from .factories import eltwise_unary_program

SHAPE = (1, 1, 96, 128)  # 12 tiles


def _run(emu_device, ttnn, x, op, dtype):
    tt_dtype = getattr(ttnn, dtype)
    src = emu_device.from_torch(x, dtype=tt_dtype, layout=ttnn.TILE_LAYOUT)
    out = emu_device.allocate(list(x.shape), tt_dtype, ttnn.TILE_LAYOUT, fill=0x7FC07FC0)
    program = eltwise_unary_program(ttnn, emu_device.grid, src, out, op, fp32_dest_acc_en=dtype == "float32")
    emu_device.generic_op([src, out], program)
    return emu_device.to_torch(src).double(), emu_device.to_torch(out).double()


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("op", ["exp", "exp_approx", "recip"])
def test_eltwise_unary(emu_device, ttnn, op, dtype):
    seed = 31 + len(op) + len(dtype)
    torch.manual_seed(seed)
    if op == "recip":
        x = torch.randn(SHAPE) * 4
        x = torch.where(x.abs() < 0.05, torch.full_like(x, 0.5), x)
    else:
        x = torch.rand(SHAPE) * 20 - 12  # [-12, 8]
    inp, got = _run(emu_device, ttnn, x, op, dtype)
    tag = f"[seed {seed}] {op} {dtype}"
    assert not torch.isnan(got).any(), f"{tag}: an output tile was never written"
    if dtype == "float32":  # SrcA holds TF32 (10 mantissa bits) when the copy goes through the unpacker
        inp = (inp.float().view(torch.int32) & ~((1 << 13) - 1)).view(torch.float32).double()
    ref = torch.exp(inp) if op.startswith("exp") else 1.0 / inp
    rel = ((got - ref) / ref.abs()).abs()
    # exact exp / recip: one bf16 ulp (bf16 DST) or a few fp32 ulp (fp32 DST); approximate exp (Schraudolph): a few %
    bound = (
        {"exp": 2**-7, "recip": 2**-8, "exp_approx": 0.05}[op]
        if dtype == "bfloat16"
        else {"exp": 1e-6, "recip": 1e-6, "exp_approx": 0.05}[op]
    )
    assert rel.max().item() <= bound, f"{tag}: max relative error {rel.max().item():.3g} > {bound}"
    if op != "exp_approx":
        pcc = torch.corrcoef(torch.stack([got.flatten(), ref.flatten()]))[0, 1].item()
        assert pcc > 0.99999, f"{tag}: pcc {pcc}"
