"""Conformance: upstream's broadcast binary ops (the wheel's data_movement/bcast factories and kernels: bcast_h.cpp /
bcast_w.cpp through compute_kernel_lib's BinaryFpu, bcast_hw_metal2.cpp through *_tiles_bcast) on the emulator,
against torch and against the silicon FPU results tt-metal issues publish (ttemu/tests/test_fpu_rounding.py has
the citations). No issue publishes results of a broadcast op itself; the broadcast ops run the same FPU add / sub /
multiply, so the published eltwise points are placed where the broadcast operand meets them."""

from __future__ import annotations

import pytest
import torch

from ttemu.tests.test_fpu_rounding import ADD_ONE_POINTS, MUL_POINTS

from .factories import bcast_program

A_SHAPE = (1, 2, 64, 160)  # NC 2, Ht 2, Wt 5
B_SHAPE = {"H": (1, 2, 32, 160), "W": (1, 2, 64, 32), "HW": (1, 1, 32, 32)}


def _broadcast(b: torch.Tensor, dim: str) -> torch.Tensor:
    """The operand each broadcast reads: row 0 of b's tile for H, column 0 for W, b[0][0] for HW."""
    if dim == "H":
        return b[..., 0:1, :].expand(*A_SHAPE)
    if dim == "W":
        return b[..., :, 0:1].expand(*A_SHAPE)
    return b[..., 0:1, 0:1].expand(*A_SHAPE)


def _points(op: str, fidelity: str, dim: str):
    """(a value, b value, silicon result) triples placed at a[0, 0, k, k] with b's broadcast element for that datum."""
    if op == "mul":
        pts = [(p[0], p[1], p[3]) for p in MUL_POINTS if f"HiFi{p[2]}" == fidelity]
    else:  # x + 1 and x - (-1): silicon's published x + 1
        pts = [(x, 1.0 if op == "add" else -1.0, s) for x, s in ADD_ONE_POINTS]
    return pts[:1] if dim == "HW" else pts  # one scalar per tensor


@pytest.mark.parametrize("fidelity", ["HiFi2", "HiFi4"])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("dim", ["H", "W", "HW"])
def test_eltwise_bcast(emu_device, ttnn, dim, op, fidelity):
    seed = 41 + 7 * len(dim) + len(op) + len(fidelity)
    torch.manual_seed(seed)
    x = (torch.randn(A_SHAPE) * 3).to(torch.bfloat16).float()
    y = (torch.randn(B_SHAPE[dim]) * 3).to(torch.bfloat16).float()
    pts = _points(op, fidelity, dim)
    for k, (pa, pb, _) in enumerate(pts):
        x[0, 0, k, k] = pa
        if dim == "H":
            y[0, 0, 0, k] = pb
        elif dim == "W":
            y[0, 0, k, 0] = pb
        else:
            y[0, 0, 0, 0] = pb
    a = emu_device.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    b = emu_device.from_torch(y, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = emu_device.allocate(list(A_SHAPE), ttnn.bfloat16, ttnn.TILE_LAYOUT, fill=0x7FC07FC0)  # NaN poison
    emu_device.generic_op([a, b, out], bcast_program(ttnn, emu_device.grid, a, b, out, dim, op, fidelity))
    got = emu_device.to_torch(out).float()
    yb = _broadcast(y, dim)
    ref = {"add": x + yb, "sub": x - yb, "mul": x * yb}[op].to(torch.bfloat16).float()
    tag = f"[seed {seed}] bcast {dim} {op} {fidelity}"
    assert not torch.isnan(got).any(), f"{tag}: an output tile was never written"
    # as test_eltwise_binary: one bf16 ulp (silicon's adder / packer rounding), three for HiFi2 multiply
    ulp = torch.ldexp(torch.ones_like(ref), torch.frexp(ref)[1] - 8).abs().clamp_min(2.0**-126)
    bound = 1.0 if (op != "mul" or fidelity == "HiFi4") else 3.0
    worst = ((got - ref).abs() / ulp).max().item()
    assert worst <= bound, f"{tag}: {worst} ulp from torch (bound {bound})"
    pcc = torch.corrcoef(torch.stack([got.flatten(), ref.flatten()]))[0, 1].item()
    assert pcc > 0.9999, f"{tag}: pcc {pcc}"
    for k, (pa, pb, silicon) in enumerate(pts):
        assert got[0, 0, k, k].item() == silicon, f"{tag}: published point {pa} op {pb}: got {got[0, 0, k, k].item()}"
