"""Data-format reconfiguration as silicon does it (emu/compute_reconfig.h, after the wheel's llk_unpack_common_api.h,
llk_math_common_api.h and llk_pack_common_api.h, Wormhole and Blackhole alike): the one-argument forms always
reprogram; the (old, new) forms, of the compute API and of the LLK API alike, reprogram only when the two operands'
descriptors differ, decided from the operands passed and not from what is programmed. The timing model charges
kReconfigCycles once per call on each lane (unpack, math, pack) that reprograms, nothing for a skipped one. Durations
here are MODELLED.

The kernel (kernels/reconfig/compute_copy_chain.cpp) copies a[i] -> mid -> out and b[i] -> out, switching SrcA and
the packer between the CBs with the reconfig form under test; its output is a[0], b[0], a[1], b[1], ..."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import ttemu
from ttemu import KernelFault, arch
from ttemu.tests.conformance.factories import ELTWISE_BINARY, ELTWISE_UNARY, compute_config
from ttemu.tests.conformance.factories import kernel as wheel_kernel
from ttemu.timing import constants
from ttemu.ttnn_env import import_ttnn

ttnn = import_ttnn()

CHAIN = Path(__file__).resolve().parent / "kernels" / "reconfig" / "compute_copy_chain.cpp"
ONE_ARG, OLD_NEW, WRONG_OLD, LLK_OLD_NEW = 0, 1, 2, 3
CB_A, CB_B, CB_MID, CB_STALE, CB_OUT = 0, 1, 2, 3, 16
NUM_TILES = 3
CORE = (0, 0)
# Per tile the chain makes three SrcA switches (a -> mid -> b -> a) and two packer switches (out -> mid -> out).
SRCA_SWITCHES, PACK_SWITCHES = 3, 2


PAGE_BYTES = {ttnn.bfloat16: 2048, ttnn.float32: 4096, ttnn.bfloat8_b: 1088}


@pytest.fixture(scope="module", params=["n150", "p150"])
def dev(request):
    d = ttemu.open_device(request.param)
    yield d
    d.close()


def model_constants(dev) -> dict[str, float]:
    """The timing model's constants for the device's chip: Wormhole's table, with Blackhole's own over it."""
    k = {c.name: c.value for c in constants()}
    if dev.spec is arch.BLACKHOLE:
        k.update({c.name: c.value for c in constants("blackhole")})
    return k


def _chain_program(a, b, out, form: int, mid_dtype, stale_dtype, mid_tile):
    cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(*CORE), ttnn.CoreCoord(*CORE))])

    def cb(index, dtype, pages, tile=None):
        assert tile is None or dtype == ttnn.bfloat16, "a bfloat16 CB only may take another tile shape here"
        page = PAGE_BYTES[dtype] if tile is None else 2 * tile[0] * tile[1]
        fmt = ttnn.CBFormatDescriptor(
            buffer_index=index,
            data_format=dtype,
            page_size=page,
            tile=None if tile is None else ttnn.TileDescriptor(*tile),
        )
        return ttnn.CBDescriptor(total_size=page * pages, core_ranges=cores, format_descriptors=[fmt])

    c = ttnn.CoreCoord(*CORE)
    kernels = [
        wheel_kernel(
            ttnn,
            f"{ELTWISE_BINARY}/dataflow/reader_binary_interleaved_start_id.cpp",
            cores,
            ttnn.ReaderConfigDescriptor(),
            ct=[0, *a.tensor_accessor_args(), *b.tensor_accessor_args()],
            rt=[(c, [a.buffer_address(), b.buffer_address(), NUM_TILES, 0, 0, 0, 0])],
        ),
        wheel_kernel(
            ttnn,
            f"{ELTWISE_UNARY}/dataflow/writer_unary_interleaved_start_id.cpp",
            cores,
            ttnn.WriterConfigDescriptor(),
            ct=[CB_OUT, *out.tensor_accessor_args()],
            rt=[(c, [out.buffer_address(), 2 * NUM_TILES, 0])],
        ),
        ttnn.KernelDescriptor(
            kernel_source=str(CHAIN),
            core_ranges=cores,
            compile_time_args=[form, NUM_TILES],
            runtime_args=[],
            common_runtime_args=[],
            config=compute_config(ttnn),
        ),
    ]
    cbs = [
        cb(CB_A, a.dtype, 2),
        cb(CB_B, b.dtype, 2),
        cb(CB_MID, mid_dtype, 1, mid_tile),
        cb(CB_STALE, stale_dtype, 1),
        cb(CB_OUT, out.dtype, 2),
    ]
    return ttnn.ProgramDescriptor(kernels=kernels, semaphores=[], cbs=cbs)


def run_chain(dev, form: int, a_dtype, b_dtype, mid_dtype, out_dtype=None, stale_dtype=None, mid_tile=None):
    """Run the chain (mid_tile: cb_mid's tile shape, default 32x32); returns (output, the compute core's lane busy
    times in cycles)."""
    out_dtype = out_dtype or ttnn.bfloat16
    g = torch.Generator().manual_seed(7)
    x = torch.randn(1, 1, 32, 32 * NUM_TILES, generator=g)
    y = torch.randn(1, 1, 32, 32 * NUM_TILES, generator=g)
    a = dev.from_torch(x, dtype=a_dtype, layout=ttnn.TILE_LAYOUT)
    b = dev.from_torch(y, dtype=b_dtype, layout=ttnn.TILE_LAYOUT)
    out = dev.allocate([1, 1, 32, 32 * 2 * NUM_TILES], out_dtype, ttnn.TILE_LAYOUT)
    try:
        pd = _chain_program(a, b, out, form, mid_dtype, stale_dtype or mid_dtype, mid_tile)
        stats = dev.generic_op([a, b, out], pd)
        assert stats.timing is not None and stats.timing.ok, stats.timing and stats.timing.error
        clock = model_constants(dev)["kClockGHz"]
        lanes = {k: v * clock for k, v in stats.timing.cores[f"{CORE[0]},{CORE[1]}"]["TRISC"].lanes.items()}
        return dev.to_torch(out), lanes
    finally:
        for t in (a, b, out):
            t.deallocate()


def reconfig_cycles(dev) -> float:
    return model_constants(dev)["kReconfigCycles"]


def test_old_new_with_matching_formats_skips_and_charges_nothing(dev):
    """Every CB bfloat16: the (old, new) forms reprogram nothing, so the chain is the one-argument run less every
    reconfig on every lane, with the same output bits."""
    bf16 = ttnn.bfloat16
    out_one, lanes_one = run_chain(dev, ONE_ARG, bf16, bf16, bf16)
    out_two, lanes_two = run_chain(dev, OLD_NEW, bf16, bf16, bf16)
    assert torch.equal(out_one, out_two)
    assert run_chain(dev, LLK_OLD_NEW, bf16, bf16, bf16)[1] == pytest.approx(lanes_two, abs=1e-3)
    r = reconfig_cycles(dev)
    assert lanes_one["unpack"] - lanes_two["unpack"] == pytest.approx(NUM_TILES * SRCA_SWITCHES * r, abs=1e-3)
    assert lanes_one["math"] - lanes_two["math"] == pytest.approx(NUM_TILES * SRCA_SWITCHES * r, abs=1e-3)
    assert lanes_one["pack"] - lanes_two["pack"] == pytest.approx(NUM_TILES * PACK_SWITCHES * r, abs=1e-3)


def test_old_new_with_differing_formats_reprograms(dev):
    """a bfloat16, b bfloat8_b, mid float32: every SrcA and packer switch changes the source format, so the unpack and
    pack lanes are charged as the one-argument run's. The math thread compares unpack destination formats only: a
    float32 CB unpacks to Float16_b without an fp32 DEST (jit_env._unpack_dst), so the a -> mid switch skips it."""
    bf16, bfp8, f32 = ttnn.bfloat16, ttnn.bfloat8_b, ttnn.float32
    out_one, lanes_one = run_chain(dev, ONE_ARG, bf16, bfp8, f32)
    out_two, lanes_two = run_chain(dev, OLD_NEW, bf16, bfp8, f32)
    out_llk, lanes_llk = run_chain(dev, LLK_OLD_NEW, bf16, bfp8, f32)
    assert torch.equal(out_one, out_two) and torch.equal(out_one, out_llk)
    assert lanes_llk == pytest.approx(lanes_two, abs=1e-3)
    r = reconfig_cycles(dev)
    assert lanes_two["unpack"] == pytest.approx(lanes_one["unpack"], abs=1e-3)
    assert lanes_two["pack"] == pytest.approx(lanes_one["pack"], abs=1e-3)
    assert lanes_one["math"] - lanes_two["math"] == pytest.approx(NUM_TILES * r, abs=1e-3)
    # The copies are exact: a's bfloat16 values through a float32 CB, b's bfloat8_b values through a bfloat16 one.
    got = out_two.reshape(32, 2 * NUM_TILES, 32)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(1, 1, 32, 32 * NUM_TILES, generator=g).reshape(32, NUM_TILES, 32)
    y = torch.randn(1, 1, 32, 32 * NUM_TILES, generator=g)
    y = ttnn.to_torch(ttnn.from_torch(y, dtype=bfp8, layout=ttnn.TILE_LAYOUT)).float().reshape(32, NUM_TILES, 32)
    assert torch.equal(got[:, 0::2], x.to(torch.bfloat16).float())
    assert torch.equal(got[:, 1::2], y)


def test_old_new_with_differing_face_geometry_reprograms_the_unpacker_only(dev):
    """Every CB bfloat16, mid holding 16x32 tiles (two 16-row faces): the unpacker compares face geometry too, so the
    a -> mid and mid -> b switches reprogram it and b -> a does not; the math thread compares formats only and the
    packer's (old, new) form its destination formats only, so neither reprograms."""
    bf16 = ttnn.bfloat16
    out_one, lanes_one = run_chain(dev, ONE_ARG, bf16, bf16, bf16, mid_tile=(16, 32))
    out_two, lanes_two = run_chain(dev, OLD_NEW, bf16, bf16, bf16, mid_tile=(16, 32))
    assert torch.equal(out_one, out_two)
    r = reconfig_cycles(dev)
    assert lanes_one["unpack"] - lanes_two["unpack"] == pytest.approx(NUM_TILES * r, abs=1e-3)
    assert lanes_one["math"] - lanes_two["math"] == pytest.approx(NUM_TILES * SRCA_SWITCHES * r, abs=1e-3)
    assert lanes_one["pack"] - lanes_two["pack"] == pytest.approx(NUM_TILES * PACK_SWITCHES * r, abs=1e-3)


def test_wrong_old_operand_keeps_the_programmed_srca_format(dev):
    """SrcA holds mid's bfloat16 when the kernel switches to b (bfloat8_b) naming cb_stale (bfloat8_b) as the old
    operand: old and new agree, so nothing is reprogrammed and SrcA keeps mid's format, as on silicon; the emulator
    reports the mismatch at the unpack instead of converting b's bytes as bfloat16."""
    bf16, bfp8 = ttnn.bfloat16, ttnn.bfloat8_b
    with pytest.raises(KernelFault, match=r"SrcA unpacker is configured for Float16_b \(cb 2\) but cb 1 holds Bfp8_b"):
        run_chain(dev, WRONG_OLD, bf16, bfp8, bf16, stale_dtype=bfp8)


def test_wrong_old_operand_keeps_the_programmed_pack_format(dev):
    """The packer holds out's bfloat16 when the kernel switches it to mid (float32) naming cb_stale (float32): no
    reprogramming, the packer keeps out's format."""
    bf16, f32 = ttnn.bfloat16, ttnn.float32
    with pytest.raises(KernelFault, match=r"packer is configured for Float16_b \(cb 16\) but cb 2 holds Float32"):
        run_chain(dev, WRONG_OLD, bf16, bf16, f32, stale_dtype=f32)
