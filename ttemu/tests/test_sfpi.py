"""The emulator's host SFPI library (include_llk/sfpi.h) on the Vector Unit model: predication, fused multiply-add,
conversions and field manipulation, against their documented semantics (tt-isa-documentation WormholeB0 SFPMAD,
SFPSTOCHRND, SFPSETEXP, SFPEXEXP; sfpi's v_if / v_elseif / v_else). Every datum of the tile is checked, so a wrong
lane or face mapping fails too."""

from __future__ import annotations

import torch

from .test_compute_fake import CB_IN0, CB_OUT, cb, kernel, push, read, run_ok


def run(op: int, x: torch.Tensor) -> torch.Tensor:
    lib = kernel("sfpi_ops", [op], fp32=True)
    cb(lib, CB_IN0, "float32", 1)
    cb(lib, CB_OUT, "float32", 1)
    push(lib, CB_IN0, x)
    run_ok(lib)
    return read(lib, CB_OUT, 1)


def tf32(x: torch.Tensor) -> torch.Tensor:  # what SrcA holds of a float32 tile with fp32 DST
    return (x.view(torch.int32) & ~((1 << 13) - 1)).view(torch.float32)


def test_predication_if_elseif_else():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1, 32, 32, generator=g) * 2
    src = tf32(x)
    ref = torch.where(src < 0, -2 * src, torch.where(src < 1, src + 10, torch.zeros_like(src)))
    assert torch.equal(run(0, x), ref), "seed 3"


def test_mul_add_is_one_fused_rounding():
    a = 1.000244140625  # 1 + 2^-12: a*a = 1 + 2^-11 + 2^-24 needs 24 significant bits
    got = run(1, torch.zeros(1, 32, 32))
    fused = torch.tensor(a * a - 1.0, dtype=torch.float64).float()  # 2^-11 + 2^-24, one rounding
    unfused = torch.tensor(a, dtype=torch.float32) * torch.tensor(a, dtype=torch.float32) - 1.0
    assert fused.item() != unfused.item()
    assert torch.all(got == fused)


def test_fp16b_conversion_rounds_ties_away():
    got = run(2, torch.zeros(1, 32, 32))
    assert torch.all(got == 1.0078125)  # 1 + 2^-8 is a tie; nearest-even would give 1.0


def test_setexp_exexp():
    g = torch.Generator().manual_seed(4)
    # x >= 1: exexp is non-negative (SFPCAST reads its input as sign-magnitude, so int32_to_float of a negative
    # two's complement exponent is not -e on silicon either)
    x = torch.rand(1, 32, 32, generator=g) * 1000 + 1.0
    src = tf32(x)
    m, e = torch.frexp(src)  # src = m * 2^e, m in [0.5, 1)
    ref = (2 * m) + (e - 1).float()  # mantissa with exponent 127 (in [1, 2)) + the unbiased exponent
    assert torch.equal(run(3, x), ref), "seed 4"
