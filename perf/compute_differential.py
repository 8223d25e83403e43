"""Differential check of the emulator's compute model between two source trees (issue 24: speed work on the compute
path must not move one output bit).

Runs the same cases through the fake single-threaded runtime (ttemu/tests/fake_runtime.cpp) of each tree -- the
element-wise binary kernel (add / sub / mul, with and without a broadcast, which packs too), the matmul kernel
(matmul_tiles with B transposed, and matmul_block, each accumulating over k in DST), the unary kernel's SFPU ops (exp,
approximate exp, recip, negative, max: the SFPU's loads and stores of DST), add / sub accumulating into DST and a
subtraction packed through each of the packer's ReLU modes -- at every math fidelity (LoFi, HiFi2-4), fp32 DST on and
off, float32 / bfloat16 / bfloat8_b / bfloat4_b inputs and outputs, on normal, wide-range, special (NaN payloads, Inf,
denormals, signed zeros), random-bit data, and operands with all-zero rows (with and without NaN / Inf in the other
operand). It compares the output CB's bytes in L1 as the packer left them (NaN payloads included), not decoded values.

    .venv/bin/python perf/compute_differential.py --base /work/main [--tree .] [--quick]

Each tree is imported in its own subprocess (PYTHONPATH=<tree>) and builds its kernels and compute model from its own
sources, the compute model with the runtime executable's flags (-O2; ttemu/tests/cxx.py caches the builds by
content). Exit status 1 if any case differs.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

FORMATS = ("float32", "bfloat16", "bfloat8_b", "bfloat4_b")
FIDELITIES = (0, 2, 3, 4)  # LoFi, HiFi2, HiFi3, HiFi4 (MathFidelity)
DATA = ("normal", "wide", "special", "randbits", "zerorows", "zerorows_special", "zerorows_mixed")
# (kernel, compile-time args, tiles of in0, tiles of in1, output tiles); a kernel is ttemu/tests/kernels/compute/<name>
# .cpp of each tree, or one of this script's (the same source for both trees)
MT, KT, NT = 1, 2, 2
OWN_BINARY = "diff_binary_pack"
OWN_KERNELS = {
    # out[i] = in0[i] op in1[i], or, accumulating into DST, out[i] = (in0[2i] op in1[2i]) + (in0[2i+1] op in1[2i+1])
    # (the second op's accumulate path adds DST), packed through the packer's ReLU. Compile-time args: 0 op (0 add, 1
    # sub), 1 accumulate, 2 ReLU mode (0 none, 1 zero, 2 min threshold, 3 max threshold; threshold 0.5), 3 n input
    # tiles. CBs: in0 = 0, in1 = 1, out = 16.
    OWN_BINARY: r"""
#include <cstdint>

#include "api/compute/compute_kernel_api.h"
#include "api/compute/eltwise_binary.h"
#include "api/compute/pack.h"

void kernel_main() {
    constexpr uint32_t op = get_compile_time_arg_val(0);
    constexpr bool acc = get_compile_time_arg_val(1);
    constexpr uint32_t mode = get_compile_time_arg_val(2);
    constexpr uint32_t n = get_compile_time_arg_val(3);
    constexpr uint32_t cb_in0 = 0, cb_in1 = 1, cb_out = 16;
    constexpr uint32_t half = 0x3f00;  // 0.5 in bf16
    compute_kernel_hw_startup(cb_in0, cb_in1, cb_out);
    if constexpr (op == 0) add_init(cb_in0, cb_in1, acc);
    else sub_init(cb_in0, cb_in1, acc);
    pack_relu_config(mode == 0   ? ReluConfig::none()
                     : mode == 1 ? ReluConfig::zero()
                     : mode == 2 ? ReluConfig::min_threshold(half)
                                 : ReluConfig::max_threshold(half));
    constexpr uint32_t passes = acc ? 2 : 1;
    for (uint32_t i = 0; i < n / passes; ++i) {
        tile_regs_acquire();
        for (uint32_t k = 0; k < passes; ++k) {
            cb_wait_front(cb_in0, 1);
            cb_wait_front(cb_in1, 1);
            if constexpr (op == 0) add_tiles(cb_in0, cb_in1, 0, 0, 0);
            else sub_tiles(cb_in0, cb_in1, 0, 0, 0);
            cb_pop_front(cb_in0, 1);
            cb_pop_front(cb_in1, 1);
        }
        tile_regs_commit();
        tile_regs_wait();
        cb_reserve_back(cb_out, 1);
        pack_tile(0, cb_out);
        cb_push_back(cb_out, 1);
        tile_regs_release();
    }
}
""",
}
KERNELS = (
    ("binary_add", "binary", [0, 0, 2], 2, 2, 2),
    ("binary_sub", "binary", [1, 0, 2], 2, 2, 2),
    ("binary_mul", "binary", [2, 0, 2], 2, 2, 2),
    ("binary_mul_bcast_cols", "binary", [2, 1, 2], 2, 2, 2),
    ("binary_sub_bcast_cols", "binary", [1, 1, 2], 2, 2, 2),
    ("binary_add_bcast_rows", "binary", [0, 2, 2], 2, 2, 2),
    ("binary_sub_bcast_scalar", "binary", [1, 3, 2], 2, 2, 2),
    ("matmul_tiles_transposed", "matmul", [MT, KT, NT, 1, 0], MT * KT, KT * NT, MT * NT),
    ("matmul_block", "matmul", [MT, KT, NT, 0, 1], MT * KT, KT * NT, MT * NT),
    # SFPU ops (SFPLOAD / SFPSTORE of every lane, the LLK's exp / recip / negative / max) after copy_tile
    ("sfpu_exp", "unary", [0, 2], 2, 2, 2),
    ("sfpu_exp_approx", "unary", [1, 2], 2, 2, 2),
    ("sfpu_recip", "unary", [2, 2], 2, 2, 2),
    ("sfpu_negative", "unary", [3, 2], 2, 2, 2),
    ("sfpu_max", "unary", [4, 2], 2, 2, 2),
    # add / sub accumulating into DST, and the packer's ReLU modes (zero, min / max threshold 0.5) on a subtraction
    ("add_acc", OWN_BINARY, [0, 1, 0, 4], 4, 4, 2),
    ("sub_acc", OWN_BINARY, [1, 1, 0, 4], 4, 4, 2),
    ("sub_relu_zero", OWN_BINARY, [1, 0, 1, 2], 2, 2, 2),
    ("sub_relu_min", OWN_BINARY, [1, 0, 2, 2], 2, 2, 2),
    ("sub_relu_max", OWN_BINARY, [1, 0, 3, 2], 2, 2, 2),
)
# Reads the output CB's bytes as the packer left them (the fake runtime's L1 accessors).
PEEK_SOURCE = r"""
#include <cstdint>
#include <cstring>
namespace emu {
uint8_t* l1(uint32_t addr, uint32_t n);
uint32_t cb_read_addr(uint32_t cb);
uint32_t cb_page_size(uint32_t cb);
}
extern "C" void diff_peek(uint32_t cb, uint8_t* out, uint32_t n) {
    uint32_t bytes = n * emu::cb_page_size(cb);
    std::memcpy(out, emu::l1(emu::cb_read_addr(cb), bytes), bytes);
}
extern "C" uint32_t diff_page_size(uint32_t cb) { return emu::cb_page_size(cb); }
"""


def operand(kind: str, n: int, rng: np.random.Generator, which: int) -> np.ndarray:
    """n 32x32 float32 tiles of one data kind (which: 0 for in0, 1 for in1)."""
    if kind == "zerorows_mixed":
        # Tile by tile: in0 special then mostly-zero rows (DST holds NaN, Inf, -0 when the zero rows accumulate onto
        # it), in1 special or normal (the zero-row shortcut on and off within one run).
        kinds = ["special", "zerorows"] if which == 0 else ["special", "normal"]
        picks = [kinds[t % 2] if which == 0 else kinds[int(rng.integers(0, 2))] for t in range(n)]
        return np.concatenate([operand(k, 1, rng, which) for k in picks])
    shape = (n, 32, 32)
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "wide":
        x *= np.exp2(rng.integers(-60, 60, shape)).astype(np.float32)
    elif kind == "special" or (kind == "zerorows_special" and which == 1):
        bits = x.view(np.uint32)
        pick = rng.random(shape)
        nan = (0x7F800000 | rng.integers(1, 1 << 23, shape) | (rng.integers(0, 2, shape) << 31)).astype(np.uint32)
        denorm = (rng.integers(1, 1 << 23, shape) | (rng.integers(0, 2, shape) << 31)).astype(np.uint32)
        inf = (0x7F800000 | (rng.integers(0, 2, shape) << 31)).astype(np.uint32)
        zero = (rng.integers(0, 2, shape) << 31).astype(np.uint32)
        bits = np.where(pick < 0.03, nan, bits)
        bits = np.where((pick >= 0.03) & (pick < 0.06), inf, bits)
        bits = np.where((pick >= 0.06) & (pick < 0.12), denorm, bits)
        bits = np.where((pick >= 0.12) & (pick < 0.16), zero, bits)
        x = bits.astype(np.uint32).view(np.float32)
    elif kind == "randbits":
        x = rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(np.uint32).view(np.float32)
    if kind.startswith("zerorows") and which == 0:
        # Most rows zero (either sign), as a decode's padded query rows; a few rows tiny (denormal) or one value.
        rows = rng.random((n, 32))
        sign = (rng.integers(0, 2, (n, 32, 32)) << 31).astype(np.uint32).view(np.float32)
        x = np.where((rows < 0.7)[..., None], sign, x)
        tiny = (rng.integers(1, 1 << 23, shape)).astype(np.uint32).view(np.float32)
        x = np.where(((rows >= 0.7) & (rows < 0.78))[..., None], tiny, x)
        one = np.zeros_like(x)
        one[:, :, 5] = 1.5
        x = np.where(((rows >= 0.78) & (rows < 0.84))[..., None], one, x)
    return np.ascontiguousarray(x, dtype=np.float32)


def cases(quick: bool):
    fids = (0, 4) if quick else FIDELITIES
    fmts = ("bfloat16", "bfloat8_b") if quick else FORMATS
    for (name, *_), fid, fp32, fin, fout, data in itertools.product(KERNELS, fids, (0, 1), fmts, fmts, DATA):
        if (name.startswith(("binary_add", "binary_sub", "sfpu_", "sub_relu", "add_acc", "sub_acc"))) and fid != 4:
            continue  # fidelity is a multiply's
        yield name, fid, fp32, fin, fout, data


def tree_compute_flags():
    """The tree's g++ flags for a compute kernel on the fake runtime, as ``f(ct_args, fp32, fidelity)``: its
    ttemu.tests.cxx.fake_compute_flags, or, in a tree from before that function, the flags its test_compute_fake.kernel
    hands to build_shared (caught there: nothing is built)."""
    from ttemu.tests import cxx, test_compute_fake

    if hasattr(cxx, "fake_compute_flags"):
        return cxx.fake_compute_flags

    class Caught(Exception):
        pass

    def caught_flags(ct_args, fp32, fidelity):
        def catch(name, sources, flags):
            raise Caught(flags)

        real, test_compute_fake.build_shared = test_compute_fake.build_shared, catch
        try:
            test_compute_fake.kernel("binary", ct_args, fp32=bool(fp32), fidelity=fidelity)
        except Caught as flags:
            return flags.args[0]
        finally:
            test_compute_fake.build_shared = real
        raise RuntimeError("test_compute_fake.kernel built nothing: no flags to catch")

    return caught_flags


def run_tree(out_path: str, quick: bool) -> None:
    """In the tree's own subprocess: every case through the tree's fake runtime; output bytes saved to out_path."""
    import ctypes

    from ttemu.build import INCLUDE, KERNEL_API_FLAGS, KERNEL_API_SOURCES
    from ttemu.tests import cxx
    from ttemu.tests.cxx import HERE, build_shared
    from ttemu.tests.test_compute_fake import FMT

    compute_flags = tree_compute_flags()

    # The compute model compiled as the runtime executable compiles it (ttemu/build.py: -O2), not as the unit tests'
    # objects (-O1): which NaN an operation on two NaNs returns can depend on the compiler's operand order.
    flags = ["-std=c++17", "-O2", "-g", "-pthread", f"-I{INCLUDE}", *KERNEL_API_FLAGS, "-fPIC", "-c"]
    objects = [
        cxx._compile(cxx.CACHE / f"{src.stem}-O2-{cxx._digest([src], flags)}.o", ["g++", *flags, str(src)])
        for src in KERNEL_API_SOURCES
    ]
    peek = Path(tempfile.gettempdir()) / "ttfd_compute_differential_peek.cpp"
    peek.write_text(PEEK_SOURCE)
    libs = {}

    def kernel(name, ct_args, fp32, fidelity):
        key = (name, tuple(ct_args), fp32, fidelity)
        if key not in libs:
            kflags = compute_flags(ct_args, fp32, fidelity)
            source = HERE / "kernels" / "compute" / f"{name}.cpp"
            if name in OWN_KERNELS:
                source = Path(tempfile.gettempdir()) / f"ttfd_compute_differential_{name}.cpp"
                source.write_text(OWN_KERNELS[name])
            sources = [source, HERE / "fake_runtime.cpp", peek]
            so = build_shared(f"kdiff_{name}", [*sources, *objects], kflags)
            lib = ctypes.CDLL(str(so))
            lib.fr_last_error.restype = ctypes.c_char_p
            lib.diff_page_size.restype = ctypes.c_uint32
            libs[key] = lib
        lib = libs[key]
        lib.fr_reset(fp32, fidelity, 0, 0)
        return lib

    spec = {k[0]: k[1:] for k in KERNELS}
    results = {}
    for i, (name, fid, fp32, fin, fout, data) in enumerate(cases(quick)):
        src, ct_args, n0, n1, nout = spec[name]
        lib = kernel(src, ct_args, fp32, fid)
        rng = np.random.default_rng(i)
        for cb_id, n, which in ((0, n0, 0), (1, n1, 1)):
            lib.fr_cb_config(cb_id, FMT[fin], n)
            x = operand(data, n, rng, which)
            lib.fr_cb_push_tiles(cb_id, x.ctypes.data_as(ctypes.c_void_p), n)
        lib.fr_cb_config(16, FMT[fout], nout)
        rc = lib.fr_run()
        key = f"{name}|fid{fid}|fp32{fp32}|{fin}->{fout}|{data}"
        if rc != 0:
            results[key] = np.frombuffer(b"fault:" + lib.fr_last_error(), np.uint8)
            continue
        buf = np.empty(nout * lib.diff_page_size(16), np.uint8)
        lib.diff_peek(16, buf.ctypes.data_as(ctypes.c_void_p), nout)
        results[key] = buf
    np.savez(out_path, **results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the reference tree (e.g. /work/main or a git archive export)")
    ap.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]), help="the tree under test")
    ap.add_argument("--quick", action="store_true", help="fidelities LoFi / HiFi4, bf16 / bfp8 only")
    ap.add_argument("--run-tree", help=argparse.SUPPRESS)  # internal: the per-tree subprocess
    args = ap.parse_args()
    if args.run_tree:
        run_tree(args.run_tree, args.quick)
        return
    with tempfile.TemporaryDirectory() as tmp:
        outs = []
        for tree in (args.base, args.tree):
            out = f"{tmp}/{len(outs)}.npz"
            env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
            cmd = [sys.executable, __file__, "--base", args.base, "--run-tree", out]
            subprocess.run(cmd + (["--quick"] if args.quick else []), env=env, check=True, cwd=tree)
            outs.append(np.load(out))
        base, new = outs
        differ = [k for k in base.files if k not in new.files or not np.array_equal(base[k], new[k])]
        faults = sum(bytes(base[k][:6]) == b"fault:" for k in base.files)
        print(f"{len(base.files)} cases ({faults} faulted alike in both trees): {len(differ)} differ")
        for k in differ[:20]:
            print("  differs:", k)
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
