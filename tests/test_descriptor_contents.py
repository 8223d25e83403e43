"""The decode descriptor carries what its kernels read and nothing more.

``ttnn.generic_op`` copies the whole descriptor on every launch, a program-cache hit too: its named compile-time
args, circular buffers and common runtime args each cost host time a call (tests/runtime/host_cost.py, rows
``generic_op_no_*``; docs/RUNTIME.md). So:

* each kernel is passed exactly the named args its source (and the headers of ours it includes) reads -- a name too
  many is paid for on every call, a name too few must fail the build, which it does on a card only where the read is
  a constant expression (tests/test_kernel_api.py checks every read is one) and does in the emulator (checked here);
* the program creates only the circular buffers its kernels touch for the configuration (plan/cbs.py), and a kernel
  touching one it does not create faults in the emulator (checked here); the golden decode tests run every feature
  under that check.

The descriptors are built by the op's own factory over emulator tensors.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from ttemu.errors import EmulatorError
from ttemu.ttnn_env import import_ttnn
from ttflashdecode.backend import backend_for
from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.decode import args as kernel_args
from ttflashdecode.ops.decode import factory
from ttflashdecode.ops.decode.factory import DecodeBuffers, build_program
from ttflashdecode.ops.decode.wrapper import FlashDecodeWrapper
from ttflashdecode.ops.descriptors import ComputeSettings
from ttflashdecode.plan.cbs import CB_INDEX
from ttflashdecode.plan.rules import NOC1_READER_STRIDE

ttnn = import_ttnn()
SHAPE = dict(batch=2, n_q_heads=4, n_kv_heads=2, head_dim=64, kv_len=256)
CUR_POS = [100, 200]


def _code(path: Path) -> str:
    """Source without comments."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(errors="ignore"), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def names_read(source: Path) -> set[str]:
    """The named compile-time args ``source`` reads, with those of the headers of ours it includes (found next to it
    or at the kernels' root, the factory's include path)."""
    code = _code(source)
    read = set(re.findall(r'get_named_compile_time_arg_val\("(\w+)"\)', code))
    for header in re.findall(r'#include "([^"]+)"', code):
        for place in (source.parent / header, factory.KERNEL_DIR / header):
            if place.is_file():
                read |= names_read(place)
                break
    return read


def _buffers(dev):
    g = torch.Generator().manual_seed(5)
    b, nq, nkv, d, s = (SHAPE[n] for n in ("batch", "n_q_heads", "n_kv_heads", "head_dim", "kv_len"))
    tile = dict(dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    q = dev.from_torch(torch.randn(1, b, nq, d, generator=g), **tile)
    k = dev.from_torch(torch.randn(b, nkv, s, d, generator=g), **tile)
    v = dev.from_torch(torch.randn(b, nkv, s, d, generator=g), **tile)
    pos = dev.from_torch(torch.tensor(CUR_POS, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    out = dev.allocate([1, b, nq, d], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    return DecodeBuffers(q, k, v, pos, out)


def _program(dev, buffers, **config_fields):
    config = ProgramConfig(compute_with_storage_grid_size=dev.grid, **{"k_chunk_size": 64, **config_fields})
    plan = FlashDecodeWrapper(dev, config, ComputeSettings()).plan(**SHAPE)
    return plan, build_program(plan, buffers, backend_for(dev).noc_coord, ComputeSettings())


def _source(kernel) -> Path:
    return Path(str(kernel.kernel_source))


def test_each_kernel_is_passed_exactly_the_names_it_reads(emu_device):
    _, program = _program(emu_device, _buffers(emu_device))
    sources = [_source(k) for k in program.kernels]
    assert set(sources) == {factory.READER, factory.COMPUTE, factory.WRITER}, sources
    for kernel, source in zip(program.kernels, sources, strict=True):
        passed = [name for name, _ in kernel.named_compile_time_args]
        read = names_read(source)
        assert len(passed) == len(set(passed)), f"{source.name}: a name passed twice"
        assert set(passed) == read, (
            f"{source.name}: read but not passed {sorted(read - set(passed))}; "
            f"passed but never read {sorted(set(passed) - read)}"
        )


def test_a_missing_named_arg_fails_the_build(emu_device):
    """The emulator's build of a kernel refuses a descriptor without a name the kernel reads (as a card's JIT build
    does: the wheel's lookup ends in __builtin_unreachable, not a constant expression), naming it."""
    buffers = _buffers(emu_device)
    _, program = _program(emu_device, buffers)
    kernels = list(program.kernels)
    writer = kernels[2]
    writer.named_compile_time_args = [(n, v) for n, v in writer.named_compile_time_args if n != "out_page_bytes"]
    program.kernels = kernels
    with pytest.raises(EmulatorError, match="out_page_bytes"):
        emu_device.generic_op(DecodeBuffers.io_tensors(buffers), program)


def test_a_kernel_touching_an_uncreated_cb_faults(emu_device):
    """Left out of the descriptor, a CB the kernels use (the softmax scale's, which the reader fills and compute
    waits on in every configuration) is a fault naming it, not a silent read of another CB's memory."""
    buffers = _buffers(emu_device)
    _, program = _program(emu_device, buffers)
    scale = CB_INDEX["scale"]
    program.cbs = [cb for cb in program.cbs if all(int(f.buffer_index) != scale for f in cb.format_descriptors)]
    with pytest.raises(EmulatorError, match=f"CB {scale} is not configured"):
        emu_device.generic_op(DecodeBuffers.io_tensors(buffers), program)


def _cb_names(plan) -> set[str]:
    return {cb.name for cb in plan.cbs}


@pytest.mark.parametrize("exp_approx_mode", [True, False])
def test_features_off_create_only_the_core_cbs(emu_device, exp_approx_mode):
    """A causal, unpaged decode without mask, sinks or reduction tree (one core a group, k chunks of 64 over 256
    positions): no page-table, mask-stage, sink, partial or merge CBs; q_scaled only where compute scales Q (the
    exact exp; the approximate one takes the scale itself)."""
    plan, program = _program(
        emu_device, _buffers(emu_device), exp_approx_mode=exp_approx_mode, k_chunk_size=256, max_cores_per_head_batch=1
    )
    assert plan.num_cores_per_head == 1, plan.num_cores_per_head
    core = {"q", "k", "v", "mask", "scale", "ones", "cur_pos", "writer_cur_pos", "zeros", "m_next", "out"}
    core |= {"scores", "probs", "o", "m", "l", "row_stat", "alpha"}
    expected = core if exp_approx_mode else core | {"q_scaled"}
    assert _cb_names(plan) == expected
    created = sorted(int(f.buffer_index) for cb in program.cbs for f in cb.format_descriptors)
    assert created == sorted(CB_INDEX[name] for name in expected)


# ---- the work tables -------------------------------------------------------------------------------------------------
OWN_ARGS = {
    factory.READER: kernel_args.ReaderCommonArgs,
    factory.COMPUTE: kernel_args.ComputeCommonArgs,
    factory.WRITER: kernel_args.WriterCommonArgs,
}


def _cores(kernel) -> set[tuple[int, int]]:
    return {
        (x, y)
        for r in kernel.core_ranges.ranges()
        for y in range(r.start.y, r.end.y + 1)
        for x in range(r.start.x, r.end.x + 1)
    }


def work_table(kernel) -> tuple[tuple[int, int, int], dict[tuple[int, int], tuple[int, int]]]:
    """A kernel's work table read back from its common args (after its shard table or slot map and its own fields):
    its box (x0, y0, width) and each core's two words (kernel_args.core_work_table's layout)."""
    source, common = _source(kernel), [int(v) for v in kernel.common_runtime_args]
    at = dict(kernel.named_compile_time_args).get("work_args_at", 0) + len(
        kernel_args.runtime_arg_names(OWN_ARGS[source])
    )
    x0, y0, width = common[at : at + 3]
    words = common[at + 3 :]
    entries = {(x0 + i % width, y0 + i // width): (words[2 * i], words[2 * i + 1]) for i in range(len(words) // 2)}
    return (x0, y0, width), entries


def _llama8b_n150(emu_device):
    """Llama-3.1-8B's decode call on one N150 (batch 8, 32 q / 8 kv heads, head_dim 128, 1024 positions a user,
    bfloat8_b): a DRAM-bound plan of one core a group on all 64 cores, every eighth reading over NoC 1."""
    g = torch.Generator().manual_seed(8)
    b, nq, nkv, d, s = 8, 32, 8, 128, 1024
    tile = dict(layout=ttnn.TILE_LAYOUT)
    buffers = DecodeBuffers(
        emu_device.from_torch(torch.randn(1, b, nq, d, generator=g), dtype=ttnn.bfloat16, **tile),
        emu_device.from_torch(torch.randn(b, nkv, s, d, generator=g), dtype=ttnn.bfloat8_b, **tile),
        emu_device.from_torch(torch.randn(b, nkv, s, d, generator=g), dtype=ttnn.bfloat8_b, **tile),
        emu_device.from_torch(torch.arange(b, dtype=torch.int32) * 100, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT),
        emu_device.allocate([1, b, nq, d], ttnn.bfloat16, ttnn.TILE_LAYOUT),
    )
    config = ProgramConfig(compute_with_storage_grid_size=emu_device.grid, k_chunk_size=256, exp_approx_mode=False)
    plan = FlashDecodeWrapper(emu_device, config, ComputeSettings()).plan(
        batch=b, n_q_heads=nq, n_kv_heads=nkv, head_dim=d, kv_len=s, kv_dtype=ttnn.bfloat8_b
    )
    noc_coord, stride = backend_for(emu_device).noc_coord, NOC1_READER_STRIDE["wormhole_b0"]
    program = build_program(plan, buffers, noc_coord, ComputeSettings(), noc1_stride=stride)
    return plan, program


def test_each_kernel_carries_the_work_table_of_its_own_cores(emu_device):
    """A kernel on a few cores (the NoC 1 readers and writers) carries a table of those cores' box, not of all 64:
    each core of a kernel finds its own entry, the entry the compute kernel (on every core) has for it."""
    plan, program = _llama8b_n150(emu_device)
    assert len(program.kernels) == 5, [_source(k).name for k in program.kernels]
    (compute,) = [k for k in program.kernels if _source(k) == factory.COMPUTE]
    _, every = work_table(compute)
    assert len(_cores(compute)) == 64 and set(every) == _cores(compute)
    sizes = []
    for kernel in program.kernels:
        (x0, y0, width), entries = work_table(kernel)
        cores = _cores(kernel)
        xs, ys = [x for x, _ in cores], [y for _, y in cores]
        assert (x0, y0, width) == (min(xs), min(ys), max(xs) - min(xs) + 1), _source(kernel).name
        assert {c: entries[c] for c in cores} == {c: every[c] for c in cores}, _source(kernel).name
        sizes.append(len(entries))
    assert sorted(sizes) == [8, 8, 56, 56, 64], sizes
