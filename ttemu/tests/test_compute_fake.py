"""Fast unit tests of the compute API headers (include/api/compute, include/emu/compute_*.h) through a fake
single-threaded runtime (fake_runtime.cpp): each kernel in kernels/compute/ is compiled with g++ against the
headers and run on host-packed input tiles; results are compared with torch."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

from .cxx import HERE, build_shared, fake_compute_flags, kernel_api_objects

FMT = {"float32": 0, "bfloat16": 5, "bfloat8_b": 6, "bfloat4_b": 7}
CB_IN0, CB_IN1, CB_SCALER, CB_OUT, CB_OUT2 = 0, 1, 2, 16, 17
_libs: dict = {}


def kernel(name: str, ct_args: list[int], fp32=False, fidelity=4, approx=False, full_sync=False, spec=None):
    # spec: the chip (a ttemu.arch.ArchSpec; None: Wormhole B0); the flags are ttemu.compiler's compute build
    # environment (cxx.fake_compute_flags)
    flags = fake_compute_flags(ct_args, fp32, fidelity, approx, full_sync, spec)
    sources = [HERE / "kernels" / "compute" / f"{name}.cpp", HERE / "fake_runtime.cpp", *kernel_api_objects()]
    so = build_shared(f"k_{name}" if spec is None else f"k_{name}_{spec.name}", sources, flags)
    if so not in _libs:
        lib = ctypes.CDLL(str(so))
        lib.fr_last_error.restype = ctypes.c_char_p
        lib.fr_counter.restype = ctypes.c_uint64
        _libs[so] = lib
    lib = _libs[so]
    lib.fr_reset(int(fp32), fidelity, int(approx), int(full_sync))
    return lib


def cb(lib, idx, fmt, pages):
    lib.fr_cb_config(idx, FMT[fmt], pages)


def push(lib, idx, tiles: torch.Tensor):
    t = np.ascontiguousarray(tiles.reshape(-1, 32, 32).numpy(), dtype=np.float32)
    lib.fr_cb_push_tiles(idx, t.ctypes.data_as(ctypes.c_void_p), t.shape[0])


def read(lib, idx, n) -> torch.Tensor:
    out = np.empty((n, 32, 32), np.float32)
    lib.fr_cb_read_tiles(idx, out.ctypes.data_as(ctypes.c_void_p), n)
    return torch.from_numpy(out)


def run_ok(lib):
    rc = lib.fr_run()
    assert rc == 0, lib.fr_last_error().decode()


def q(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """Host quantisation of inputs to a CB format (bf16 via torch; bfp via ttnn-verified formats.h round trip)."""
    if fmt == "bfloat16":
        return x.to(torch.bfloat16).float()
    return x.float()


def bf16(x):
    return x.to(torch.bfloat16).float()


def fpu_bf16_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The emulator's model of silicon's FPU add into a BF16 DST (emu/compute_fpu.h fpu_add_into_dst, fitted to
    tt-metal#34664 / #50425): the smaller operand aligned to 10 fraction bits of the larger one's exponent (nearest
    even), exact add, then bf16 with ties away from zero."""
    a, b = a.double(), b.double()
    big = torch.where(a.abs() >= b.abs(), a, b)
    small = torch.where(a.abs() >= b.abs(), b, a)
    e = torch.frexp(big)[1]
    grid = torch.ldexp(torch.ones_like(big), e - 11)
    s = torch.where(big == 0, a + b, big + torch.round(small / grid) * grid)
    m, e2 = torch.frexp(s)
    r = torch.sign(m) * torch.floor(m.abs() * 256 + 0.5)
    return torch.ldexp(r / 256, e2).float()


def tiles(n, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 32, 32, generator=g) * scale


# ---------------------------------------------------------------- eltwise and broadcast
@pytest.mark.parametrize("op", [0, 1, 2])
@pytest.mark.parametrize("bc", [0, 1, 2, 3])
def test_binary_and_broadcasts(op, bc):
    n = 2
    lib = kernel("binary", [op, bc, n])
    cb(lib, CB_IN0, "bfloat16", n)
    cb(lib, CB_IN1, "bfloat16", n)
    cb(lib, CB_OUT, "bfloat16", n)
    a, b = bf16(tiles(n, 1)), bf16(tiles(n, 2))
    push(lib, CB_IN0, a)
    push(lib, CB_IN1, b)
    run_ok(lib)
    bb = {
        0: b,
        1: b[:, :, :1].expand(-1, 32, 32),
        2: b[:, :1, :].expand(-1, 32, 32),
        3: b[:, :1, :1].expand(-1, 32, 32),
    }[bc]
    ref = {0: a + bb, 1: a - bb, 2: a * bb}[op]
    got = read(lib, CB_OUT, n)
    # bf16 inputs, HiFi4: mul rounds per fidelity phase (<= 1 ulp); add / sub round as silicon's FPU (fpu_bf16_add)
    torch.testing.assert_close(got, bf16(ref), rtol=2**-7, atol=1e-6)
    if op != 2:
        assert torch.equal(got, fpu_bf16_add(a, bb if op == 0 else -bb))
    assert lib.fr_counter(3) == n  # FpuTiles


def test_mul_fidelity_lofi_truncates_srca():
    lib = kernel("binary", [2, 0, 1], fidelity=0)
    for c in (CB_IN0, CB_IN1, CB_OUT):
        cb(lib, c, "float32", 1)
    a, b = tiles(1, 3), tiles(1, 4)
    push(lib, CB_IN0, a)
    push(lib, CB_IN1, b)
    run_ok(lib)
    got = read(lib, CB_OUT, 1)

    # LoFi: SrcA keeps implicit one + 4 mantissa bits, SrcB implicit one + 6 (after truncation to bf16 in SrcA/B)
    def keep(x, bits):
        u = x.view(torch.int32)
        return (u & ~((1 << (23 - bits)) - 1)).view(torch.float32)

    ref = bf16(keep(keep(a, 7), 4) * keep(keep(b, 7), 6))
    assert torch.equal(got, ref)
    assert not torch.equal(got, bf16(bf16(a) * bf16(b)))


@pytest.mark.parametrize("fp32", [False, True])
def test_fp32_dest_acc_precision(fp32):
    lib = kernel("binary", [0, 0, 1], fp32=fp32)
    for c in (CB_IN0, CB_IN1, CB_OUT):
        cb(lib, c, "float32", 1)
    a, b = tiles(1, 5), tiles(1, 6) * 1e-3
    push(lib, CB_IN0, a)
    push(lib, CB_IN1, b)
    run_ok(lib)
    got = read(lib, CB_OUT, 1)

    def trunc(x, bits):
        return (x.view(torch.int32) & ~((1 << (23 - bits)) - 1)).view(torch.float32)

    if fp32:  # TF32 sources, fp32 DST
        assert torch.equal(got, trunc(a, 10) + trunc(b, 10))
    else:  # bf16 sources, bf16 DST: silicon's FPU add rounding
        assert torch.equal(got, fpu_bf16_add(trunc(a, 7), trunc(b, 7)))


# ---------------------------------------------------------------- matmul
@pytest.mark.parametrize("transpose,use_block", [(0, 0), (1, 0), (0, 1)])
@pytest.mark.parametrize("fp32", [False, True])
def test_matmul(transpose, use_block, fp32):
    Mt, Kt, Nt = 2, 3, 2
    lib = kernel("matmul", [Mt, Kt, Nt, transpose, use_block], fp32=fp32)
    cb(lib, CB_IN0, "bfloat16", Mt * Kt)
    cb(lib, CB_IN1, "bfloat16", Kt * Nt)
    cb(lib, CB_OUT, "float32", Mt * Nt)
    A = bf16(torch.randn(Mt * 32, Kt * 32, generator=torch.Generator().manual_seed(7)))
    B = bf16(torch.randn(Kt * 32, Nt * 32, generator=torch.Generator().manual_seed(8)))
    Bin = B.T.contiguous() if transpose else B

    def to_tiles(X):
        return X.reshape(X.shape[0] // 32, 32, X.shape[1] // 32, 32).permute(0, 2, 1, 3).reshape(-1, 32, 32)

    push(lib, CB_IN0, to_tiles(A))
    push(lib, CB_IN1, to_tiles(Bin))
    run_ok(lib)
    got = read(lib, CB_OUT, Mt * Nt).reshape(Mt, Nt, 32, 32).permute(0, 2, 1, 3).reshape(Mt * 32, Nt * 32)
    ref = A.double() @ B.double()
    err = (got.double() - ref).abs().max().item()
    # bf16 DST rounds every 16-wide partial sum of every fidelity phase: a few bf16 ulps of the result size
    tol = 1e-4 if fp32 else 4 * 2**-8 * ref.abs().max().item()
    assert err < tol, err
    assert lib.fr_counter(2) == Mt * Nt * Kt  # MatmulTiles


# ---------------------------------------------------------------- reduce
@pytest.mark.parametrize("pool", [0, 2])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_reduce(pool, dim):
    Ht, Wt = 2, 3
    lib = kernel("reduce", [pool, dim, Ht, Wt], fp32=True)
    cb(lib, CB_IN0, "bfloat16", Ht * Wt)
    cb(lib, CB_SCALER, "bfloat16", 1)
    cb(lib, CB_OUT, "float32", Ht)
    x = bf16(tiles(Ht * Wt, 9) - 3.0)  # all-negative-ish rows: max must not see DST's zero
    s = 0.5 if pool == 0 else 1.0
    scaler = torch.zeros(1, 32, 32)
    scaler[0, 0, :] = s
    scaler[0, 16, :] = s
    push(lib, CB_IN0, x)
    push(lib, CB_SCALER, scaler)
    run_ok(lib)
    got = read(lib, CB_OUT, Ht)
    xs = x.reshape(Ht, Wt, 32, 32).double()
    ref = torch.zeros(Ht, 32, 32, dtype=torch.float64)
    if dim == 0:
        ref[:, :, 0] = xs.sum(dim=(1, 3)) * s if pool == 0 else xs.amax(dim=(1, 3))
    elif dim == 1:
        ref[:, 0, :] = xs.sum(dim=(1, 2)) * s if pool == 0 else xs.amax(dim=(1, 2))
    else:
        ref[:, 0, 0] = xs.sum(dim=(1, 2, 3)) * s * s if pool == 0 else xs.amax(dim=(1, 2, 3))
    # REDUCE_SCALAR moves the column sums back through a 19-bit source register (TF32) for the second stage
    rtol = 2e-3 if dim == 2 else 1e-5
    torch.testing.assert_close(got.double(), ref, rtol=rtol, atol=1e-4)


# ---------------------------------------------------------------- SFPU
@pytest.mark.parametrize("fp32", [False, True])
def test_exp_exact_and_approx(fp32):
    x = tiles(1, 11) * 3.0
    x[0, 0, :4] = torch.tensor([-100.0, -88.0, 0.0, 10.0])
    res = {}
    for op in (0, 1):
        lib = kernel("unary", [op, 1], fp32=fp32)
        cb(lib, CB_IN0, "float32", 1)
        cb(lib, CB_OUT, "float32", 1)
        push(lib, CB_IN0, x)
        run_ok(lib)
        res[op] = read(lib, CB_OUT, 1)
    # SrcA truncation: TF32 (fp32 DST) or bf16
    bits = 10 if fp32 else 7
    src = (x.view(torch.int32) & ~((1 << (23 - bits)) - 1)).view(torch.float32)
    exact = torch.exp(src.double())
    # exp_tile runs the wheel's ckernel_sfpu_exp.h on the host SFPI: fp32 DST _sfpu_exp_fp32_accurate_ (a few fp32
    # ulp), bf16 DST the exp_21f TTI kernel (within one bf16 ulp, explicitly rounded before the truncating store)
    if fp32:
        torch.testing.assert_close(res[0].double(), exact, rtol=2e-7, atol=1e-37)
    else:
        torch.testing.assert_close(res[0].double(), exact, rtol=2**-7, atol=1e-37)
    rel = ((res[1].double() - exact) / exact.clamp_min(1e-30)).abs()
    ok = exact > 1e-30
    assert rel[ok].max().item() < 0.05  # the approximate (Schraudolph) kernel: a few percent
    # clamped far-negative input: -88.5, just below where the approximation's exponent field reaches 0, so the
    # result is a denormal (the LLK's FP32_TO_UINT16 takes |t|), not a meaningful value but never above 1e-37
    assert abs(res[1][0, 0, 0].item()) < 1e-37


def test_recip_negative_max_transpose_copy():
    a = tiles(1, 12) + 0.1
    b = tiles(1, 13)
    ref = {2: 1.0 / bf16(a), 3: -bf16(a), 4: torch.maximum(bf16(a), bf16(b)), 5: bf16(a), 6: bf16(a).transpose(1, 2)}
    for op, r in ref.items():
        lib = kernel("unary", [op, 1])
        for c in (CB_IN0, CB_IN1, CB_OUT):
            cb(lib, c, "bfloat16", 1)
        push(lib, CB_IN0, bf16(a))
        push(lib, CB_IN1, bf16(b))
        run_ok(lib)
        assert torch.equal(read(lib, CB_OUT, 1), bf16(r)), op


@pytest.mark.parametrize("fmt", ["bfloat8_b", "bfloat4_b"])
def test_copy_through_block_float(fmt):
    lib = kernel("unary", [5, 1])
    cb(lib, CB_IN0, fmt, 1)
    cb(lib, CB_OUT, fmt, 1)
    a = tiles(1, 14)
    push(lib, CB_IN0, a)
    run_ok(lib)
    # unpack is exact, DST bf16 holds bfp values exactly, pack re-quantises to the same values
    out = np.empty((1, 32, 32), np.float32)
    lib.fr_cb_read_tiles(CB_IN0, out.ctypes.data_as(ctypes.c_void_p), 1)
    assert torch.equal(read(lib, CB_OUT, 1), torch.from_numpy(out))


# ---------------------------------------------------------------- misuse
@pytest.mark.parametrize(
    "mode,fp32,needle",
    [
        (0, False, "before tile_regs_commit + tile_regs_wait"),
        (1, False, "before tile_regs_acquire"),
        (2, False, "out of range"),
        (2, True, "out of range"),
        (3, False, "already acquired"),
        (4, False, "missing reconfig_data_format_srca"),
        (5, False, "missing pack_reconfig_data_format"),
        (6, False, "after tile_regs_commit"),
    ],
)
def test_dst_misuse_faults(mode, fp32, needle):
    lib = kernel("misuse", [mode], fp32=fp32)
    cb(lib, CB_IN0, "bfloat16", 1)
    cb(lib, CB_IN1, "bfloat8_b", 1)
    cb(lib, CB_OUT, "bfloat16", 1)
    cb(lib, CB_OUT2, "float32", 1)
    push(lib, CB_IN0, tiles(1, 1))
    push(lib, CB_IN1, tiles(1, 2))
    assert lib.fr_run() == 1
    assert needle in lib.fr_last_error().decode()


def test_misuse_kernel_is_clean_without_misuse():
    lib = kernel("misuse", [99])
    cb(lib, CB_IN0, "bfloat16", 1)
    cb(lib, CB_IN1, "bfloat8_b", 1)
    cb(lib, CB_OUT, "bfloat16", 1)
    cb(lib, CB_OUT2, "float32", 1)
    push(lib, CB_IN0, tiles(1, 1))
    push(lib, CB_IN1, tiles(1, 2))
    run_ok(lib)


def test_compile_time_config_mismatch_faults():
    lib = kernel("unary", [5, 1])
    lib.fr_reset(1, 4, 0, 0)  # runtime says fp32 DST, kernel compiled without
    cb(lib, CB_IN0, "bfloat16", 1)
    cb(lib, CB_OUT, "bfloat16", 1)
    push(lib, CB_IN0, tiles(1, 1))
    assert lib.fr_run() == 1
    assert "DST_ACCUM_MODE" in lib.fr_last_error().decode()
