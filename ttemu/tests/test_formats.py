"""emu/formats.h against ttnn's host conversion: packed bytes and decoded values of every tile must match
ttnn.from_torch(..., layout=TILE_LAYOUT) exactly, for bfloat16, float32, bfloat8_b and bfloat4_b."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

from ttemu.ttnn_env import import_ttnn

from .cxx import HERE, kernel_api_objects, load

ttnn = import_ttnn()

# emu::DataFormat values
FORMATS = {"float32": (0, 4096), "bfloat16": (5, 2048), "bfloat8_b": (6, 1088), "bfloat4_b": (7, 576)}


@pytest.fixture(scope="module")
def lib():
    return load("formats", [HERE / "formats_shim.cpp", HERE / "fault_stub.cpp", *kernel_api_objects("formats.cpp")])


def ttnn_bytes(x: torch.Tensor, dtype) -> np.ndarray:
    t = ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)
    shard = t.host_buffer().get_shard(ttnn.MeshCoordinate(0, 0))
    return torch.from_dlpack(shard.__array__()).numpy().copy()


def tiles_of(x: torch.Tensor):
    for ti in range(x.shape[0] // 32):
        for tj in range(x.shape[1] // 32):
            yield np.ascontiguousarray(x[ti * 32 : (ti + 1) * 32, tj * 32 : (tj + 1) * 32].numpy(), dtype=np.float32)


def ours(lib, x: torch.Tensor, fmt: int, size: int):
    packed, decoded = [], []
    for t in tiles_of(x):
        buf = np.zeros(size, np.uint8)
        lib.shim_pack_tile(fmt, t.ctypes.data_as(ctypes.c_void_p), buf.ctypes.data_as(ctypes.c_void_p))
        out = np.empty((32, 32), np.float32)
        lib.shim_unpack_tile(fmt, buf.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
        packed.append(buf)
        decoded.append(out)
    return np.concatenate(packed), decoded


def nasty_tensor(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 96, generator=g)
    x[torch.rand(x.shape, generator=g) < 0.03] *= 1000.0  # outliers squash their row's small values
    x[torch.rand(x.shape, generator=g) < 0.05] *= 1e-6
    x[torch.rand(x.shape, generator=g) < 0.03] = 0.0
    x[0, :16] = torch.randn(16, generator=g) * 1e-30  # a whole face row of tiny values
    x[1, 3] = -0.0
    x[2, :16] = 1.9999  # rounds up past the top magnitude: saturates
    # exact ties for bfp8 (shared exp of 2.0 -> quantum 2^-5) and bfp4 (quantum 2^-1)
    x[3, :16] = torch.tensor([2.0, 1.015625, 1.046875, 1.25, 1.75, -1.015625, 0.5 + 2**-6, 3.0 + 2**-5] * 2)
    x[4, 16:32] = torch.tensor([2.0, 1.25, 1.75, 0.75, 0.25, -1.25, -0.75, 2.5] * 2)
    return x


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("seed", [0, 1])
def test_pack_matches_ttnn_bytes_and_values(lib, name, seed):
    fmt, size = FORMATS[name]
    assert lib.shim_tile_size_bytes(fmt) == size
    x = nasty_tensor(seed)
    dtype = getattr(ttnn, name)
    ref_bytes = ttnn_bytes(x, dtype)
    ref_vals = ttnn.to_torch(ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)).float()
    packed, decoded = ours(lib, x, fmt, size)
    assert packed.shape == ref_bytes.shape
    np.testing.assert_array_equal(packed, ref_bytes)
    for k, (ti, tj) in enumerate((i, j) for i in range(x.shape[0] // 32) for j in range(x.shape[1] // 32)):
        ref_tile = ref_vals[ti * 32 : (ti + 1) * 32, tj * 32 : (tj + 1) * 32].numpy()
        np.testing.assert_array_equal(decoded[k].view(np.uint32), ref_tile.view(np.uint32))


@pytest.mark.parametrize("name", ["bfloat8_b", "bfloat4_b"])
def test_unpack_of_ttnn_bytes(lib, name):
    """Decoding ttnn's own bytes gives ttnn's own values (the direction the emulator's unpacker uses)."""
    fmt, size = FORMATS[name]
    x = nasty_tensor(7)
    dtype = getattr(ttnn, name)
    raw = ttnn_bytes(x, dtype)
    ref_vals = ttnn.to_torch(ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT)).float()
    k = 0
    for ti in range(x.shape[0] // 32):
        for tj in range(x.shape[1] // 32):
            out = np.empty((32, 32), np.float32)
            chunk = np.ascontiguousarray(raw[k * size : (k + 1) * size])
            lib.shim_unpack_tile(fmt, chunk.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
            ref_tile = ref_vals[ti * 32 : (ti + 1) * 32, tj * 32 : (tj + 1) * 32].numpy()
            np.testing.assert_array_equal(out, ref_tile)
            k += 1
