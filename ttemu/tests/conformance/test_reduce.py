"""Conformance: upstream's row reduction (reduce.cpp through compute_kernel_lib::reduce, the reader that fills the
scaler tile with prepare_reduce_scaler, the Metal 2.0 interleaved writer) on the emulator, against torch."""

from __future__ import annotations

import pytest
import torch

from .factories import reduce_w_program

SHAPE = (1, 3, 64, 160)  # 6 tile rows of 5 tiles over the 8x8 grid


def _run(emu_device, ttnn, x, op, scaler, dtype, post_mul=1.0, fidelity="HiFi4", fp32_dest_acc_en=False):
    src = emu_device.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
    out = emu_device.allocate([*x.shape[:-1], 32], dtype, ttnn.TILE_LAYOUT, fill=0x7FC07FC0)  # NaN poison
    emu_device.generic_op(
        [src, out], reduce_w_program(ttnn, emu_device.grid, src, out, op, scaler, post_mul, fidelity, fp32_dest_acc_en)
    )
    return emu_device.to_torch(src).double(), emu_device.to_torch(out).double()


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float32"])
@pytest.mark.parametrize(
    "op,scaler,post_mul", [("sum", 1.0, 1.0), ("sum", 1 / 160, 1.0), ("max", 1.0, 1.0), ("max", 1.0, 0.75)]
)
def test_reduce_row(emu_device, ttnn, op, scaler, post_mul, dtype_name):
    seed = 11 + len(op) + int(scaler * 1000) + int(post_mul * 100) + len(dtype_name)
    torch.manual_seed(seed)
    dtype = getattr(ttnn, dtype_name)
    x = torch.randn(SHAPE) * 4
    fp32 = dtype_name == "float32"  # a float32 reduction runs with a 32-bit DEST, as ttnn configures it
    src, got = _run(emu_device, ttnn, x, op, scaler, dtype, post_mul, fp32_dest_acc_en=fp32)
    tag = f"[seed {seed}] reduce {op} scaler={scaler} post_mul={post_mul} {dtype_name}"
    # The result is column 0 of each output tile; silicon's packer writes whatever DEST holds in the other columns
    # (zeros after the reduction), which the op's output never exposes.
    col = got[..., 0]
    assert not torch.isnan(col).any(), f"{tag}: an output tile was never written"
    ref = (src.sum(-1) * scaler) if op == "sum" else (src.amax(-1) * scaler * post_mul)
    err = (col - ref).abs().max().item()
    # The FPU reads float32 operands as tf32 (10 explicit mantissa bits, truncated) and the scaler tile holds a bf16
    # (float32 for a float32 input) scaler.
    rel = 2.0**-10 if fp32 else 0.0
    if op == "max":
        # MAX moves a value without arithmetic: exact in bf16, a tf32 truncation in float32 (plus, with a
        # post-multiply, the SFPU product stored back into a bf16 DEST: one bf16 ulp).
        bound = ref.abs().max().item() * (rel + (0.0 if post_mul == 1.0 or fp32 else 2.0**-7))
    else:
        # A 160-wide sum accumulated in DEST: a few ulp of the sum's magnitude (bf16 DEST / output, or tf32 inputs)
        bound = (src.abs().sum(-1) * scaler).max().item() * (2.0**-9 if fp32 else 2.0**-7)
    assert err <= bound, f"{tag}: max error {err:.4g} > {bound:.4g}"
    pcc = torch.corrcoef(torch.stack([col.flatten(), ref.flatten()]))[0, 1].item()
    assert pcc > 0.9999, f"{tag}: pcc {pcc}"
