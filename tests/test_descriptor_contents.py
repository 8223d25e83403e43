"""The decode descriptor carries what its kernels read and nothing more.

``ttnn.generic_op`` copies the whole descriptor on every launch, a program-cache hit too: its compile-time args,
circular buffers and common runtime args each cost host time a call (tests/runtime/host_cost.py, rows
``generic_op_no_*``; docs/RUNTIME.md). So:

* each kernel is passed exactly the positional args its source declares, arg i the value of the name it declares at
  i, then the TensorAccessorArgs of its tensors, and no named args (a name is copied with its value on every call);
  an arg too few fails the build (checked here), as it does on a card;
* the program creates only the circular buffers its kernels touch for the configuration (plan/cbs.py), and a kernel
  touching one it does not create faults in the emulator (checked here); the golden decode tests run every feature
  under that check.

The descriptors are built by the op's own factory over emulator tensors.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernel_source_args import declared_args
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


def declared(kernel) -> list[str]:
    """The names of a kernel descriptor's positional args, as its source declares them (arg i at index i)."""
    return declared_args(_source(kernel))


def arg(kernel, name: str) -> int:
    """The value a kernel descriptor passes for its source's arg ``name``."""
    return int(kernel.compile_time_args[declared(kernel).index(name)])


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


def test_each_kernel_is_passed_exactly_the_args_it_declares(emu_device):
    """Arg i of each kernel is the value of the name its source declares at i (checked on values this shape fixes
    independently of args.py: head dims, heads, chunk, the CB table), then the TensorAccessorArgs of its tensors from
    the index its *_cta_offset args give, and nothing else: no named args, no arg past them."""
    buffers = _buffers(emu_device)
    plan, program = _program(emu_device, buffers)
    sources = [_source(k) for k in program.kernels]
    assert set(sources) == {factory.READER, factory.COMPUTE, factory.WRITER}, sources
    d_tiles, kv_heads, q_heads = SHAPE["head_dim"] // 32, SHAPE["n_kv_heads"], SHAPE["n_q_heads"]
    expected = {"DHt": d_tiles, "vDHt": d_tiles, "Sk_t": 2, "num_kv_heads": kv_heads, "n_q_heads": q_heads}
    expected |= {"heads_per_group": q_heads // kv_heads, "q_len": 1, "is_causal": 1, "work_args_at": 0}
    expected |= {f"cb_{name}": index for name, index in CB_INDEX.items()}
    accessors = {  # each kernel's tensors, in the order their args follow the kernel's own
        factory.READER: {"k": buffers.k, "v": buffers.v, "q": buffers.q, "cur_pos": buffers.cur_pos},
        factory.COMPUTE: {},
        factory.WRITER: {"out": buffers.out},
    }
    for kernel, source in zip(program.kernels, sources, strict=True):
        names = declared(kernel)
        assert list(kernel.named_compile_time_args) == [], f"{source.name}: named args"
        passed = {name: arg(kernel, name) for name in names}
        checked = {name: passed[name] for name in expected if name in passed}
        assert checked == {name: expected[name] for name in checked}, source.name
        assert len(checked) >= 10, f"{source.name}: only {sorted(checked)} checked"
        tail, at = [], len(names)
        for tensor_name, tensor in accessors[source].items():
            assert passed[f"{tensor_name}_cta_offset"] == at, f"{source.name}: {tensor_name}'s args"
            own = tensor.tensor_accessor_args()
            tail += own
            at += len(own)
        assert [int(v) for v in kernel.compile_time_args[len(names) :]] == tail, f"{source.name}: the accessor args"
    assert plan.k_chunk_size == 64


def test_a_missing_arg_fails_the_build(emu_device):
    """The emulator's build of a kernel refuses a descriptor passing fewer args than the kernel reads (as a card's JIT
    build does: get_compile_time_arg_val's index is checked by a static_assert), naming the read."""
    buffers = _buffers(emu_device)
    _, program = _program(emu_device, buffers)
    kernels = list(program.kernels)
    writer = kernels[2]
    names = declared(writer)
    cut = names.index("out_page_bytes")
    writer.compile_time_args = list(writer.compile_time_args)[:cut]
    program.kernels = kernels
    read = rf"out_page_bytes = get_compile_time_arg_val\({cut}\)"
    with pytest.raises(EmulatorError, match=rf"(?s)index out of range.*{read}"):
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
    own_at = arg(kernel, "work_args_at") if "work_args_at" in declared(kernel) else 0
    at = own_at + len(kernel_args.runtime_arg_names(OWN_ARGS[source]))
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
