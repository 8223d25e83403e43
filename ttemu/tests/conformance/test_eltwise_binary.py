"""Conformance: upstream eltwise binary (add / sub / mul, FPU) on the emulator, against torch and against the silicon
results tt-metal issues publish (ttemu/tests/test_fpu_rounding.py has the citations)."""

from __future__ import annotations

import pytest
import torch

from ttemu.tests.test_fpu_rounding import ADD_ONE_POINTS, MUL_POINTS

from .factories import eltwise_binary_program

SHAPE = (1, 2, 64, 160)  # 20 tiles over the 8x8 grid: an uneven split


def _run(emu_device, ttnn, x, y, op, fidelity):
    a = emu_device.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    b = emu_device.from_torch(y, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = emu_device.allocate(list(x.shape), ttnn.bfloat16, ttnn.TILE_LAYOUT, fill=0x7FC07FC0)  # NaN poison
    emu_device.generic_op([a, b, out], eltwise_binary_program(ttnn, emu_device.grid, a, b, out, op, fidelity))
    return emu_device.to_torch(out).float()


@pytest.mark.parametrize("fidelity", ["HiFi2", "HiFi4"])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_eltwise_binary(emu_device, ttnn, op, fidelity):
    seed = 7 + len(op) + len(fidelity)
    torch.manual_seed(seed)
    x = (torch.randn(SHAPE) * 3).to(torch.bfloat16).float()
    y = (torch.randn(SHAPE) * 3).to(torch.bfloat16).float()
    # Published silicon points in the first rows of the first tile.
    pts = ADD_ONE_POINTS if op in ("add", "sub") else [p for p in MUL_POINTS if f"HiFi{p[2]}" == fidelity]
    for i, p in enumerate(pts):
        if op == "mul":
            x[0, 0, i, 0], y[0, 0, i, 0] = p[0], p[1]
        else:
            x[0, 0, i, 0], y[0, 0, i, 0] = (p[0], 1.0) if op == "add" else (p[0], -1.0)
    got = _run(emu_device, ttnn, x, y, op, fidelity)
    ref = {"add": x + y, "sub": x - y, "mul": x * y}[op].to(torch.bfloat16).float()
    tag = f"[seed {seed}] {op} {fidelity}"
    assert not torch.isnan(got).any(), f"{tag}: an output tile was never written"
    # One bf16 ulp at most (silicon's rounding is not round-to-nearest-even); HiFi2 mul drops SrcB's last mantissa
    # bit (relative error up to 2^-7, two ulp) before rounding: three
    ulp = torch.ldexp(torch.ones_like(ref), torch.frexp(ref)[1] - 8).abs().clamp_min(2.0**-126)
    bound = 1.0 if (op != "mul" or fidelity == "HiFi4") else 3.0
    assert ((got - ref).abs() / ulp).max().item() <= bound, f"{tag}: more than {bound} ulp from torch"
    pcc = torch.corrcoef(torch.stack([got.flatten(), ref.flatten()]))[0, 1].item()
    assert pcc > 0.9999, f"{tag}: pcc {pcc}"
    for i, p in enumerate(pts):
        silicon = p[1] if op in ("add", "sub") else p[3]
        if op == "sub":  # x - (-1) == x + 1: silicon's result is the published add result
            silicon = p[1]
        assert got[0, 0, i, 0].item() == silicon, f"{tag}: published point {p}: got {got[0, 0, i, 0].item()}"
