"""The program-cache key our descriptors carry (``custom_program_hash``, set by ``backend.seal_program_hash``).

On a card ``ttnn.generic_op`` caches the compiled program under this key and, on a hit, only copies the new
descriptor's runtime-arg values and buffer addresses into the cached program. A key shared by two descriptors that
differ in anything the program is compiled or laid out from would run a stale program silently, so:

* every compile-time difference (a named compile-time arg, a define, a CB's data format or size, a kernel's core
  range or source, a semaphore, the compute config, another plan) gives another key, and the same plan over other
  tensors or another positions tensor (runtime args only) gives the same key;
* the emulator refuses a launch whose custom hash it has seen with a descriptor of another structure (where ttnn
  would run the program cached under that key), and runs one of the same structure.

The descriptors are built by the op's own factory over emulator tensors; only the last test runs a program.
"""

from __future__ import annotations

import pytest
import torch

import ttemu
from ttemu.errors import EmulatorError
from ttemu.ttnn_env import import_ttnn
from ttflashdecode.backend import backend_for, seal_program_hash
from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.decode.factory import DecodeBuffers, build_program
from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper
from ttflashdecode.ops.descriptors import ComputeSettings

ttnn = import_ttnn()
SHAPE = dict(batch=2, n_q_heads=4, n_kv_heads=2, head_dim=64, kv_len=256)


@pytest.fixture
def device():
    dev = ttemu.open_device(board="n150")
    yield dev
    dev.close()


def _tensors(dev, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    b, nq, nkv, d, s = (SHAPE[n] for n in ("batch", "n_q_heads", "n_kv_heads", "head_dim", "kv_len"))
    tile = dict(dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    q = dev.from_torch(torch.randn(1, b, nq, d, generator=g), **tile)
    k = dev.from_torch(torch.randn(b, nkv, s, d, generator=g), **tile)
    v = dev.from_torch(torch.randn(b, nkv, s, d, generator=g), **tile)
    pos = dev.from_torch(torch.tensor([100, 200], dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    out = dev.allocate([1, b, nq, d], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    return DecodeBuffers(q, k, v, pos, out)


def _descriptor(dev, buffers, *, k_chunk_size=64, compute=ComputeSettings()):
    wrapper = FlashDecodeWrapper(
        dev, ProgramConfig(compute_with_storage_grid_size=dev.grid, k_chunk_size=k_chunk_size), compute
    )
    plan = wrapper.plan(**SHAPE)
    return build_program(plan, buffers, backend_for(dev).noc_coord, compute)


def _key(program) -> int:
    seal_program_hash(program)
    return program.custom_program_hash


def _edit_kernel(program, index: int, **fields):
    kernels = list(program.kernels)
    for name, value in fields.items():
        setattr(kernels[index], name, value)
    program.kernels = kernels
    return program


def _edit_cb(program, index: int, *, total_size=None, data_format=None):
    cbs = list(program.cbs)
    if total_size is not None:
        cbs[index].total_size = total_size
    if data_format is not None:
        f = cbs[index].format_descriptors[0]  # remade: its data_format takes a tt::DataFormat, not a ttnn dtype
        cbs[index].format_descriptors = [
            ttnn.CBFormatDescriptor(
                buffer_index=int(f.buffer_index), data_format=data_format, page_size=int(f.page_size), tile=f.tile
            )
        ]
    program.cbs = cbs
    return program


def test_the_key_changes_with_every_compile_time_input_and_only_with_them(device):
    buffers = _tensors(device)
    base = _key(_descriptor(device, buffers))

    def fresh():
        return _descriptor(device, buffers)

    positional = [int(v) for v in fresh().kernels[1].compile_time_args]
    bumped = [positional[0] + 1, *positional[1:]]
    cb0 = fresh().cbs[0]
    float32_code = 0  # tt::DataFormat::Float32 (the getter of data_format does not convert to Python in ttnn 0.81.1)
    is_float32 = int(cb0.format_descriptors[0].data_format_as_uint8) == float32_code
    other_format = ttnn.bfloat16 if is_float32 else ttnn.float32
    one_core = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 0))])
    sems = list(fresh().semaphores)
    variants = {
        "compile-time arg": _edit_kernel(fresh(), 1, compile_time_args=bumped),
        # no kernel of ours takes any, but a descriptor may carry them
        "named compile-time arg": _edit_kernel(fresh(), 1, named_compile_time_args=[("TTFD_HASH_TEST", 1)]),
        "define": _edit_kernel(fresh(), 0, defines=[("TTFD_HASH_TEST", "1")]),
        "CB data format": _edit_cb(fresh(), 0, data_format=other_format),
        "CB total size": _edit_cb(fresh(), 0, total_size=int(cb0.total_size) * 2),
        "kernel core range": _edit_kernel(fresh(), 2, core_ranges=one_core),
        "kernel source": _edit_kernel(fresh(), 0, kernel_source=str(fresh().kernels[2].kernel_source)),
        "another plan (k_chunk_size)": _descriptor(device, buffers, k_chunk_size=128),
        "compute config (fidelity)": _descriptor(device, buffers, compute=ComputeSettings(math_fidelity="HiFi2")),
    }
    if sems:
        sems[0].initial_value = int(sems[0].initial_value) + 1
        edited = fresh()
        edited.semaphores = sems
        variants["semaphore initial value"] = edited
    keys = {name: _key(p) for name, p in variants.items()}
    assert all(key != base for key in keys.values()), {n: k for n, k in keys.items() if k == base}
    assert len(set(keys.values())) == len(keys), keys

    # Runtime args only: other tensors (other addresses), another positions tensor, the same plan built again.
    others = _tensors(device, seed=1)
    assert others.q.buffer_address() != buffers.q.buffer_address()
    moved_pos = DecodeBuffers(buffers.q, buffers.k, buffers.v, others.cur_pos, buffers.out)
    for name, b in {"other tensors": others, "other positions tensor": moved_pos, "rebuilt": buffers}.items():
        assert _key(_descriptor(device, b)) == base, name


def test_sealing_keeps_a_set_key_and_ttnn_reads_it(device):
    program = _descriptor(device, _tensors(device))
    structural = ttnn.compute_program_descriptor_hash(program)
    seal_program_hash(program)
    assert program.custom_program_hash == structural
    program.custom_program_hash = 12345
    seal_program_hash(program)  # a key already there stays (set by its maker)
    assert ttnn.compute_program_descriptor_hash(program) == 12345


def test_the_emulator_refuses_a_key_ttnn_would_answer_with_a_stale_program(device):
    buffers = _tensors(device)
    first = _descriptor(device, buffers)
    key = _key(first)
    device.generic_op(DecodeBuffers.io_tensors(buffers), first)
    stale = _edit_cb(_descriptor(device, buffers), 0, total_size=int(first.cbs[0].total_size) * 2)
    stale.custom_program_hash = key
    with pytest.raises(EmulatorError, match=f"custom_program_hash {key:#x}.*another structure"):
        device.generic_op(DecodeBuffers.io_tensors(buffers), stale)
    assert stale.custom_program_hash == key  # the check reads the structure without losing the caller's key
    # The same structure over other tensors under that key: what ttnn serves from its cache, and it runs.
    others = _tensors(device, seed=1)
    again = _descriptor(device, others)
    assert _key(again) == key
    device.generic_op(DecodeBuffers.io_tensors(others), again)
