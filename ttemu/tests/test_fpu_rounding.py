"""Silicon's rounding of bf16 element-wise add / sub on the FPU (Matrix Unit) with a BF16 DST, against the results
tt-metal issues publish (model and citations: ttemu/include/emu/compute_fpu.h fpu_add_into_dst).
Runs the emulator's compute API through the fake single-threaded runtime (test_compute_fake.py)."""

from __future__ import annotations

import torch

from .test_compute_fake import CB_IN0, CB_IN1, CB_OUT, bf16, cb, kernel, push, read, run_ok

# tt-metal#34664 (Wormhole, ttnn.add on bfloat16 TILE tensors): x + 1.0 as silicon returns it.
ADD_ONE_POINTS = [
    (0.00341796875, 1.0078125),
    (0.003448486328, 1.0078125),
    (0.00373840332, 1.0078125),
    (0.01129150391, 1.015625),
    (0.01953125, 1.0234375),
]


def run_binary(op: int, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    lib = kernel("binary", [op, 0, 1])
    for c in (CB_IN0, CB_IN1, CB_OUT):
        cb(lib, c, "bfloat16", 1)
    push(lib, CB_IN0, a)
    push(lib, CB_IN1, b)
    run_ok(lib)
    return read(lib, CB_OUT, 1)


def test_bf16_add_published_points():
    a = torch.ones(1, 32, 32)
    b = torch.ones(1, 32, 32)
    for i, (x, _) in enumerate(ADD_ONE_POINTS):
        a[0, i, :] = x
    got = run_binary(0, bf16(a), bf16(b))
    for i, (x, silicon) in enumerate(ADD_ONE_POINTS):
        assert got[0, i, 0].item() == silicon, (x, got[0, i, 0].item(), silicon)
    # round-to-nearest-even (torch's bf16 add) gives a different result at every one of the five points
    rne = bf16(bf16(a) + bf16(b))
    assert sum(rne[0, i, 0].item() != s for i, (_, s) in enumerate(ADD_ONE_POINTS)) == 5


def test_bf16_add_sub_at_most_one_ulp_from_rne():
    """tt-metal#50425: FPU bf16 add / sub is never more than 1 ULP from round-to-nearest-even (and is off by one for
    some pairs: 0.77% of all bf16 pairs, many more among operands of similar magnitude as here)."""
    g = torch.Generator().manual_seed(5)
    a = bf16(torch.randn(1, 32, 32, generator=g) * 4)
    b = bf16(torch.randn(1, 32, 32, generator=g) * torch.exp(torch.randn(1, 32, 32, generator=g) * 3))
    for op, ref in ((0, a.double() + b.double()), (1, a.double() - b.double())):
        got = run_binary(op, a, b)
        rne = ref.float().to(torch.bfloat16).float()
        ulp = torch.ldexp(torch.ones_like(rne), torch.frexp(rne)[1] - 8).abs()
        off = (got - rne).abs() / ulp
        nz = rne != 0
        assert off[nz].max().item() <= 1.0, "seed 5"
        frac = (off[nz] > 0).float().mean().item()
        assert frac > 0.0, (op, frac)


# Published silicon results of bf16 mul_tiles on the FPU (bf16 CBs, fp32_dest_acc_en off), (a, b, fidelity, result):
MUL_POINTS = [
    (508.0, 748.0, 4, 378880.0),  # tt-metal#35077 (the FPU result before that PR moved ttnn.multiply to the SFPU)
    (-3.640625, 0.298828125, 4, -1.09375),  # tt-metal#16448
    (-3.640625, 0.30078125, 4, -1.1015625),  # tt-metal#16448
    (1.3125, 7.96875, 2, 10.4375),  # tt-metal#12923 (HiFi2)
    (1.3125, 7.96875, 4, 10.5),  # tt-metal#12923 (HiFi4)
]


def test_bf16_mul_published_points():
    for fidelity in (2, 4):
        pts = [p for p in MUL_POINTS if p[2] == fidelity]
        lib = kernel("binary", [2, 0, 1], fidelity=fidelity)
        for c in (CB_IN0, CB_IN1, CB_OUT):
            cb(lib, c, "bfloat16", 1)
        a, b = torch.ones(1, 32, 32), torch.ones(1, 32, 32)
        for i, (x, y, _, _) in enumerate(pts):
            a[0, i, :], b[0, i, :] = x, y
        push(lib, CB_IN0, bf16(a))
        push(lib, CB_IN1, bf16(b))
        run_ok(lib)
        got = read(lib, CB_OUT, 1)
        for i, (x, y, _, silicon) in enumerate(pts):
            assert got[0, i, 0].item() == silicon, (x, y, fidelity, got[0, i, 0].item(), silicon)


def test_packer_bfp8_double_rounding_ties_up():
    """The packer rounds a block-float output twice (to bf16 precision in the gasket, then to the shared exponent)
    and rounds ties up, not to even (tt-metal#14822, #15889, #52155; model: emu/compute_pack.h)."""
    lib = kernel("unary", [5, 1], fp32=True)  # copy_tile: float32 CB -> fp32 DST -> packer -> bfloat8_b CB
    cb(lib, CB_IN0, "float32", 1)
    cb(lib, CB_OUT, "bfloat8_b", 1)
    x = torch.zeros(1, 32, 32)
    x[0, 0, 0] = 1.0  # sets the shared exponent of the face row: bfloat8_b steps of 1/64
    x[0, 0, 1] = 2.5 / 64  # a tie: ties up -> 3/64 (round-to-nearest-even would give 2/64)
    x[0, 0, 2] = 2.4999 / 64  # below the tie: rounds to bf16 first (2.5/64), then up again -> 3/64
    x[0, 0, 3] = 2.4 / 64  # no tie: 2/64 either way
    push(lib, CB_IN0, x)
    run_ok(lib)
    got = read(lib, CB_OUT, 1)[0, 0, :4].tolist()
    assert got == [1.0, 3 / 64, 3 / 64, 2 / 64], got
