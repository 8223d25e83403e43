"""Decode steps captured as a trace and replayed: on the emulator (ttnn's call shapes, ttemu.trace)
and, marked ``device``, on a card with ttnn.begin_trace_capture.

A captured call must make no host transfer (positions and page tables are device tensors written between replays;
staging tensors exist before the capture), and a replay must read what the tensors hold then."""

from __future__ import annotations

import pytest
import torch

import ttemu
import ttflashdecode
from decode_harness import check_close, generator, seed_for, tag
from ttemu import EmulatorError
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import FlashDecodeWrapper, golden
from ttflashdecode.ops.decode import api as op_module

ttnn = import_ttnn()
CONFIG = "small/test-2x2"  # 4 cores: short emulated runs that still split a group and reduce
B, NQ, NKV, D = 2, 8, 2, 64
BLOCK, BLOCKS_PER_USER, NUM_BLOCKS = 32, 8, 20  # kv_len 256 per user over a pool of 20 blocks
TILE = dict(layout=ttnn.TILE_LAYOUT)
INT32 = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


def _int32(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int32)


def _step_inputs(gen: torch.Generator, step: int):
    """Step ``step``'s positions (growing, one user skipped every fourth step) and a fresh page table (each user's
    blocks drawn anew from the pool: a replay that kept reading the captured table would read other blocks)."""
    positions = [min(40 + 13 * step, BLOCK * BLOCKS_PER_USER - 1), 7 + 11 * step]
    if step % 4 == 3:
        positions[1] = -1
    table = torch.stack([torch.randperm(NUM_BLOCKS, generator=gen)[:BLOCKS_PER_USER] for _ in range(B)]).int()
    return positions, table


def test_decode_loop_captured_once_replays_16_steps(emu_device):
    """The Llama-style decode step of a paged cache, captured once; every replay after rewriting cur_pos_tensor and
    the page table in place (same buffers) matches the golden model, with the output poisoned before each replay."""
    seed = seed_for("test_trace.decode_loop")
    gen = generator(seed)
    dev = emu_device
    q = torch.randn(1, B, NQ, D, generator=gen)
    k = torch.randn(NUM_BLOCKS, NKV, BLOCK, D, generator=gen)
    v = torch.randn(NUM_BLOCKS, NKV, BLOCK, D, generator=gen)
    tq = dev.from_torch(q, dtype=ttnn.bfloat16, **TILE)
    tk = dev.from_torch(k, dtype=ttnn.bfloat8_b, **TILE)
    tv = dev.from_torch(v, dtype=ttnn.bfloat8_b, **TILE)
    positions, table = _step_inputs(gen, 0)
    pos, page_table = dev.from_torch(_int32(positions), **INT32), dev.from_torch(table, **INT32)
    out = dev.allocate([1, B, NQ, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)

    def step():
        return op_module.paged_scaled_dot_product_attention_decode(
            tq, tk, tv, page_table, cur_pos_tensor=pos, output_tensor=out, program_config=CONFIG
        )

    step()  # warm-up outside the capture, as on silicon (a capture can neither compile nor upload)
    trace_id = ttemu.begin_trace_capture(dev, cq_id=0)
    try:
        assert step() is out
    finally:
        ttemu.end_trace_capture(dev, trace_id, cq_id=0)
    trace = ttemu.get_trace(dev, trace_id)
    assert trace.num_launches == 1 and trace.host_transfers == [], (trace.num_launches, trace.host_transfers)

    qd, kd, vd = (golden.quantize_like_device(x, dt) for x, dt in ((q, "bfloat16"), (k, "bfloat8_b"), (v, "bfloat8_b")))
    poison = torch.full((1, B, NQ, D), float("nan"))
    for s in range(16):
        positions, table = _step_inputs(gen, s)
        dev.write(pos, _int32(positions))  # in place: the captured program reads these buffers
        dev.write(page_table, table)
        dev.write(out, poison)
        stats = ttemu.execute_trace(dev, trace_id, cq_id=0, blocking=True)
        assert len(stats) == 1
        got = dev.to_torch(out).float()
        expected = golden.sdpa_decode(qd, kd, vd, cur_pos=positions, page_table=table)
        live = [b for b, p in enumerate(positions) if p != -1]
        for b, p in enumerate(positions):
            if p == -1:
                assert torch.count_nonzero(got[:, b]) == 0, f"{tag(seed)} step {s}: skipped user {b} must be zero"
        check_close(got[:, live], expected[:, live], "bfloat8_b", seed, f"replay {s}, cur_pos {positions}")
    ttemu.release_trace(dev, trace_id)
    with pytest.raises(EmulatorError, match=r"no such trace"):
        ttemu.execute_trace(dev, trace_id)


def test_captured_calls_make_no_host_transfer(emu_device):
    """Inside a capture: the op with device positions records its launch and transfers nothing (its output is not
    written until a replay); a wrapper planned for a bfloat8_b output or a non-causal call uploads nothing either
    (the staging tensor and the constant positions are made by plan()). Host positions are refused by the op, naming
    the argument, before any transfer; a direct upload is refused by the emulator as tt-metal refuses it."""
    seed = seed_for("test_trace.no_host_transfer")
    gen = generator(seed)
    dev = emu_device
    S = 256
    q = torch.randn(1, B, NQ, D, generator=gen)
    k = torch.randn(B, NKV, S, D, generator=gen)
    v = torch.randn(B, NKV, S, D, generator=gen)
    tq, tk, tv = (dev.from_torch(x, dtype=ttnn.bfloat16, **TILE) for x in (q, k, v))
    positions = [100, 255]
    pos = dev.from_torch(_int32(positions), **INT32)
    out = dev.from_torch(torch.full((1, B, NQ, D), float("nan")), dtype=ttnn.bfloat16, **TILE)
    bfp8 = FlashDecodeWrapper(dev, program_config=CONFIG)
    bfp8.plan(batch=B, n_q_heads=NQ, n_kv_heads=NKV, head_dim=D, kv_len=S, dtype=ttnn.bfloat8_b)
    full = FlashDecodeWrapper(dev, program_config=CONFIG)
    full.plan(batch=B, n_q_heads=NQ, n_kv_heads=NKV, head_dim=D, kv_len=S, is_causal=False)
    call = dict(cur_pos_tensor=pos, output_tensor=out, program_config=CONFIG)
    op_module.scaled_dot_product_attention_decode(tq, tk, tv, **call)  # warm-up (compiles, makes the program)
    dev.write(out, torch.full((1, B, NQ, D), float("nan")))

    trace_id = ttemu.begin_trace_capture(dev)
    try:
        op_module.scaled_dot_product_attention_decode(tq, tk, tv, **call)
        bfp8_out = bfp8.run(tq, tk, tv, cur_pos_tensor=pos)
        full_out = full.run(tq, tk, tv)
        with pytest.raises(ValueError, match=r"^cur_pos: host values would be uploaded inside a trace capture"):
            op_module.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=positions, program_config=CONFIG)
        assert ttemu.get_trace(dev, trace_id).host_transfers == [], "a captured call moved data to or from the host"
        with pytest.raises(EmulatorError, match=r"from_torch: Writes are not supported during trace capture"):
            dev.from_torch(_int32(positions), **INT32)
        with pytest.raises(EmulatorError, match=r"to_torch: Reads are not supported during trace capture"):
            dev.to_torch(out)
    finally:
        ttemu.end_trace_capture(dev, trace_id)
    trace = ttemu.get_trace(dev, trace_id)
    assert trace.host_transfers == ["from_torch", "to_torch"]
    assert trace.num_launches == 4  # the op; the bfloat8_b run's decode and tile convert; the non-causal run
    assert torch.isnan(dev.to_torch(out).float()).all(), "a captured launch ran during the capture"

    ttemu.execute_trace(dev, trace_id)
    ttemu.release_trace(dev, trace_id)
    qd, kd, vd = (golden.quantize_like_device(x, "bfloat16") for x in (q, k, v))
    check_close(dev.to_torch(out).float(), golden.sdpa_decode(qd, kd, vd, cur_pos=positions), "bfloat16", seed, "op")
    check_close(
        dev.to_torch(bfp8_out).float(),
        golden.sdpa_decode(qd, kd, vd, cur_pos=positions),
        "bfloat8_b",
        seed,
        "bfloat8_b output",
    )
    check_close(
        dev.to_torch(full_out).float(), golden.sdpa_decode(qd, kd, vd, is_causal=False), "bfloat16", seed, "non-causal"
    )


def test_trace_calls_are_checked(emu_device):
    """The trace API refuses what ttnn refuses: a second capture, replaying a trace still being captured, an unknown
    id, another command queue."""
    dev = emu_device
    trace_id = ttemu.begin_trace_capture(dev, cq_id=0)
    try:
        assert ttemu.is_trace_capture_active(dev)
        with pytest.raises(EmulatorError, match=r"is still being captured on this device"):
            ttemu.begin_trace_capture(dev)
        with pytest.raises(EmulatorError, match=r"still being captured; call end_trace_capture"):
            ttemu.execute_trace(dev, trace_id)
    finally:
        ttemu.end_trace_capture(dev, trace_id)
    assert not ttemu.is_trace_capture_active(dev)
    assert ttemu.execute_trace(dev, trace_id) == []  # an empty trace replays nothing
    with pytest.raises(EmulatorError, match=r"cq_id=1: the emulator has one command queue"):
        ttemu.execute_trace(dev, trace_id, cq_id=1)
    ttemu.release_trace(dev, trace_id)
    with pytest.raises(EmulatorError, match=r"trace id 999999: no such trace"):
        ttemu.release_trace(dev, 999999)


@pytest.mark.device
def test_decode_loop_trace_on_card(ttnn):
    """On a card: the same decode step captured with ttnn.begin_trace_capture and replayed with positions and the
    page table copied in between (ttnn.copy_host_to_device_tensor into the captured buffers)."""
    seed = seed_for("test_trace.card")
    gen = generator(seed)
    device = ttnn.open_device(device_id=0, trace_region_size=1 << 20)
    try:
        q = torch.randn(1, B, NQ, D, generator=gen)
        k = torch.randn(NUM_BLOCKS, NKV, BLOCK, D, generator=gen)
        v = torch.randn(NUM_BLOCKS, NKV, BLOCK, D, generator=gen)
        on_device = dict(device=device, layout=ttnn.TILE_LAYOUT)
        tq = ttnn.from_torch(q, dtype=ttnn.bfloat16, **on_device)
        tk, tv = (ttnn.from_torch(x, dtype=ttnn.bfloat8_b, **on_device) for x in (k, v))
        positions, table = _step_inputs(gen, 0)
        rm = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
        pos = ttnn.from_torch(_int32(positions), device=device, **rm)
        page_table = ttnn.from_torch(table, device=device, **rm)

        def step():
            return op_module.paged_scaled_dot_product_attention_decode(tq, tk, tv, page_table, cur_pos_tensor=pos)

        step()  # compile and cache the program outside the capture
        trace_id = ttnn.begin_trace_capture(device, cq_id=0)
        out = step()
        ttnn.end_trace_capture(device, trace_id, cq_id=0)
        qd, kd, vd = (
            golden.quantize_like_device(x, dt) for x, dt in ((q, "bfloat16"), (k, "bfloat8_b"), (v, "bfloat8_b"))
        )
        for s in range(16):
            positions, table = _step_inputs(gen, s)
            ttnn.copy_host_to_device_tensor(ttnn.from_torch(_int32(positions), **rm), pos)
            ttnn.copy_host_to_device_tensor(ttnn.from_torch(table, **rm), page_table)
            ttnn.execute_trace(device, trace_id, cq_id=0, blocking=True)
            got = ttnn.to_torch(out).float()
            live = [b for b, p in enumerate(positions) if p != -1]
            expected = golden.sdpa_decode(qd, kd, vd, cur_pos=positions, page_table=table)
            check_close(got[:, live], expected[:, live], "bfloat8_b", seed, f"card replay {s}")
        ttnn.release_trace(device, trace_id)
    finally:
        ttnn.close_device(device)


def test_captured_cache_updates_make_no_host_transfer(emu_device):
    """The paged cache update inside a capture (a decode step updates the cache, then attends): with a device index
    tensor and page table it records its launch and transfers nothing; host positions or a host page table are
    refused before any transfer, naming the argument, as the decode op refuses host positions."""
    seed = seed_for("test_trace.update_no_host_transfer")
    gen = generator(seed)
    dev = emu_device
    cache = dev.from_torch(torch.randn(NUM_BLOCKS, NKV, BLOCK, D, generator=gen), dtype=ttnn.bfloat16, **TILE)
    rows = dev.from_torch(torch.randn(1, B, NKV, D, generator=gen), dtype=ttnn.bfloat16, **TILE)
    positions, table = _step_inputs(gen, 0)
    index = dev.from_torch(_int32(positions), **INT32)
    page_table = dev.from_torch(table, **INT32)
    op = ttflashdecode.paged_update_cache
    op(cache, rows, update_idxs_tensor=index, page_table=page_table)  # warm-up (compiles, makes the program)

    trace_id = ttemu.begin_trace_capture(dev)
    try:
        op(cache, rows, update_idxs_tensor=index, page_table=page_table)
        with pytest.raises(ValueError, match=r"^update_idxs: host values would be uploaded inside a trace capture"):
            op(cache, rows, update_idxs=positions, page_table=page_table)
        with pytest.raises(ValueError, match=r"^page_table: host values would be uploaded inside a trace capture"):
            op(cache, rows, update_idxs_tensor=index, page_table=table)
        trace = ttemu.get_trace(dev, trace_id)
        assert trace.host_transfers == [], "a captured update moved data to or from the host"
        assert trace.num_launches == 1, trace.num_launches
    finally:
        ttemu.end_trace_capture(dev, trace_id)
