"""The Blackhole Vector Unit instructions the emulator models for Blackhole compute kernels
(include/emu/compute_sfpu_blackhole.h), each against its page in tt-isa-documentation BlackholeA0
(SFPARECIP, SFPGT, SFPLE, SFPMAD, SFPAND, SFPOR, SFPSTORE), and Blackhole's fast untilize
(api/compute/experimental/fast_untilize.h). The kernels (kernels/compute/sfpu_blackhole.cpp, untilize_fast.cpp) are
built as a Blackhole compute kernel is: ARCH_BLACKHOLE, the wheel's Blackhole LLK trees. Every datum of the tile is
checked."""

from __future__ import annotations

import math

import pytest
import torch

from ttemu.arch import BLACKHOLE

from .test_compute_fake import CB_IN0, CB_OUT, cb, kernel, push, read, run_ok

C = 0.5  # the constant the comparison and MAD sequences use


def run(op: int, x: torch.Tensor) -> torch.Tensor:
    lib = kernel("sfpu_blackhole", [op], fp32=True, spec=BLACKHOLE)
    cb(lib, CB_IN0, "float32", 1)
    cb(lib, CB_OUT, "float32", 1)
    push(lib, CB_IN0, x)
    run_ok(lib)
    return read(lib, CB_OUT, 1)


def tf32(x: torch.Tensor) -> torch.Tensor:  # what SrcA holds of a float32 tile with fp32 DST
    return (x.view(torch.int32) & ~((1 << 13) - 1)).view(torch.float32)


def bits(x: torch.Tensor) -> torch.Tensor:
    return x.view(torch.int32)


def sample(seed: int, scale: float = 4.0) -> torch.Tensor:
    """TF32 values of both signs over many binades, with the comparisons' edge values (c, -c, +-0) in it."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 32, 32, generator=g) * scale * torch.exp2(torch.randint(-8, 9, (1, 32, 32), generator=g))
    x.view(-1)[:6] = torch.tensor([C, -C, 0.0, -0.0, 1.0, -1.0])
    return tf32(x)


def test_sfparecip_recip_accuracy_and_exceptional_inputs():
    x = sample(11)
    specials = [1.0, -1.0, 1.9921875, 0.0, -0.0, 2.0**126, -(2.0**127), math.inf, 2.0**-126]
    x.view(-1)[-len(specials) :] = torch.tensor(specials)
    y = run(0, x)
    ordinary = (x.abs() >= 2.0**-126) & (x.abs() < 2.0**126)
    # SFPARECIP.md: 0.9944 / x < ApproxRecip(x) < 1.0054 / x, the sign joined back on, 7 mantissa bits
    ratio = y[ordinary].double() * x[ordinary].double()
    assert bool(((ratio > 0.9944) & (ratio < 1.0054)).all()), ratio.min().item()
    assert torch.equal(torch.signbit(y), torch.signbit(x))
    assert bool(((bits(y) & 0xFFFF) == 0).all())
    got = y.view(-1)[-len(specials) :].tolist()
    assert got[0] == 0.99609375 and got[1] == -0.99609375  # "The ApproxRecip of 1.0 is 0.99609375"
    assert got[2] == 0.5  # the table's last entry (mantissa 0) one binade down
    assert got[3] == math.inf and got[4] == -math.inf  # below 2^-126: infinity, with the sign
    assert got[5:8] == [0.0, -0.0, 0.0]  # 2^126 and above (and infinity): zero
    assert got[8] == 2.0**125 * (1 + 127 / 128)
    # within a binade the table is non-increasing: a larger |x| never gets a larger |1/x|
    m = torch.linspace(1, 2, 513)[:-1]
    r = run(0, tf32(m.repeat(2)[:1024].reshape(1, 32, 32))).view(-1)[:512]
    assert bool((r[1:] <= r[:-1]).all())


def test_sfparecip_exp_accuracy_and_sign():
    g = torch.Generator().manual_seed(12)
    x = tf32(torch.rand(1, 32, 32, generator=g) * 2)  # [0, 2): the documented range
    x.view(-1)[:3] = torch.tensor([1.0, 0.0, 0.0078125])
    y = run(1, x)
    ratio = y.double() / torch.exp(x.double())
    assert bool(((ratio > 0.9922) & (ratio < 1.016)).all()), (ratio.min().item(), ratio.max().item())
    assert y.view(-1)[0].item() == 2.703125  # "The ApproxExp of 1.0 is 2.703125"
    assert y.view(-1)[1].item() == 1.0
    # below 0.015625: 1 + 2^-7 with the input's low 16 bits
    assert bits(y).view(-1)[2].item() == 0x3F810000 | (bits(x).view(-1)[2].item() & 0xFFFF)
    # the sign is removed before the table and joined back on: ApproxExp(-x) = -ApproxExp(x)
    assert torch.equal(run(1, -x), -y)


def test_sfparecip_cond_recip_replaces_negative_lanes_only():
    x = sample(13)
    recip = run(0, x)
    y = run(2, x)
    # COND_RECIP: where LReg[VB] (here x) is negative, VD = ApproxRecip(|x|) without the sign; elsewhere VD is kept
    assert torch.equal(y, torch.where(torch.signbit(x), recip.abs(), x))


def test_sfpgt_sfple_set_vd_in_the_total_order():
    x = sample(14)
    # the all-ones / zero mask and-ed with 1.0 (SFPGT) or 2.0 (SFPLE) by SFPAND USE_VB into a third register
    assert torch.equal(run(3, x), (x > C).float())
    assert torch.equal(run(4, x), (x <= C).float() * 2)
    # sign-magnitude order: -0 < +0, so -0 <= c and +0 <= c alike; the edge value c itself is not > c
    flat = run(3, x).view(-1)
    assert flat[0].item() == 0.0 and flat[2].item() == 0.0 and flat[3].item() == 0.0


def test_sfpgt_sfple_set_lane_flags():
    x = sample(15)
    assert torch.equal(run(6, x), torch.where(x > C, torch.full_like(x, 7.0), x))
    assert torch.equal(run(11, x), torch.where(x <= C, torch.full_like(x, 7.0), x))


def test_sfpgt_or_into_the_flag_stack_top():
    x = sample(16)
    # flags x < 0 (SFPSETCC LT0: the sign bit, so -0 too) pushed; SFPGT MUTATE_STACK | MUTATE_OR or-s x > c into
    # the top; the pop makes it the lane flags
    flagged = torch.signbit(x) | (x > C)
    assert torch.equal(run(7, x), torch.where(flagged, torch.full_like(x, 7.0), x))


def test_sfpor_use_vb_reads_vb_not_vd():
    x = sample(17)
    got = run(5, x)
    assert torch.equal(bits(got), bits(x) | torch.tensor(-(2**31), dtype=torch.int32))


def test_sfpmad_negate_and_indirect_vd():
    x = sample(18)
    assert torch.equal(run(8, x), (-x) * C + (-2.0))  # NEGATE_VA | NEGATE_VC; x * c is exact, one rounding
    assert torch.equal(run(9, x), x * C - 5.0)  # INDIRECT_VD: the product went to LReg[2], LReg[3] kept 5.0


def test_sfpaddi_sfpmuli_negate_and_indirect_vd():
    x = sample(23)
    # SFPADDI NEGATE_VC | INDIRECT_VD: 1.0 - x into LReg[2], then + LReg[0] (x, unchanged): (1 - x) + x
    assert torch.equal(run(16, x), (1.0 - x) + x)
    assert torch.equal(run(17, x), 0.5 * -x)


def test_sfpmad_denormal_result_keeps_its_sign():
    g = torch.Generator().manual_seed(19)
    x = tf32(torch.rand(1, 32, 32, generator=g) * 8 - 4)
    y = run(10, x)
    tiny = x.double() * 2.0**-126
    want = torch.where(x.abs() < 1, torch.copysign(torch.zeros_like(x), x), tiny.float())
    # Blackhole flushes a denormal result to zero of its sign (Wormhole: +0); SFPSTORE to an FP32 Dst keeps it
    assert torch.equal(bits(y), bits(want))
    assert bool(torch.signbit(y[(x < 0) & (x > -1)]).all())


def test_sfpshft_imm_use_vc_and_arithmetic():
    x = sample(21)
    xb = bits(x)
    logical = (xb >> 16) & 0xFFFF  # x's bits shifted right 16, zero-filled
    assert torch.equal(bits(run(12, x)), logical | 0x3F800000)  # the value was LReg[VC], not VD's 3.0
    assert torch.equal(bits(run(13, x)), xb >> 1)  # arithmetic: the sign bit is copied in


def test_sfpcast_int32_abs_and_sign_magnitude():
    x = sample(22)
    xb = bits(x)
    assert torch.equal(bits(run(14, x)), torch.where(xb < 0, -xb, xb))  # two's complement |x|
    # two's complement <-> sign-magnitude: a negative value becomes sign | -value
    sign = torch.tensor(-(2**31), dtype=torch.int32)
    assert torch.equal(bits(run(15, x)), torch.where(xb < 0, sign | -xb, xb))


@pytest.mark.parametrize("n,first", [(3, 0), (3, 3), (2, 2)])
def test_fast_untilize_block(n, first):
    lib = kernel("untilize_fast", [n, first], fp32=True, spec=BLACKHOLE)
    cb(lib, CB_IN0, "float32", 2 * n)
    cb(lib, CB_OUT, "float32", n)
    g = torch.Generator().manual_seed(20 + n + first)
    tiles = torch.randn(2 * n, 32, 32, generator=g).to(torch.bfloat16).float()
    push(lib, CB_IN0, tiles)
    run_ok(lib)
    pages = read(lib, CB_OUT, n)  # each page decoded as a tile: undo the tile's face order to get its raw datums
    raw = pages.reshape(n, 2, 16, 2, 16).permute(0, 1, 3, 2, 4).reshape(-1)
    row_major = raw.reshape(32, n * 32)
    want = torch.cat(list(tiles[first : first + n]), dim=1)  # the row's tiles side by side
    assert torch.equal(row_major, want)
