"""Identical results (issue 24): any change to the emulator -- its runtime, kernel API headers, timing model, compile
flags, format conversion -- must leave every output bit and every modelled cycle of a fixed set of programs as they
were. Speed work on the emulator is checked by this test.

The set is the wheel's own kernels (they never change with this repository) run from descriptors built as upstream's
factories build them (ttemu/tests/conformance/factories.py and ``ttflashdecode.upstream``): eltwise binary (FPU, bf16
and bfloat8_b), eltwise unary exp (SFPU), bmm (matmul), row reduce, softmax with an fp32 DEST (Metal 2.0 kernels),
upstream's sdpa_decode paged with bfloat8_b K/V over a 4-core reduction tree (semaphores, NOC writes between cores),
the same on a timing-only device, and this package's own FlashDecode op. For each program the pins hold:

- ``output``: sha256 of the output tensor's raw device bytes (tile layout, the dtype's own encoding);
- ``duration_ns``: the modelled DEVICE KERNEL DURATION, compared exactly;
- ``timing``: sha256 of every core's and RISC's modelled start / end / busy / wait (and compute lanes), the DRAM banks'
  busy time and the busiest links -- a cycle moved anywhere changes it;
- ``counters``: sha256 of the functional counts (DRAM bank bytes, NOC bytes per link, per-core tile counters,
  per-page bytes of the buffers the program touched).

The package's own op is pinned together with a digest of the sources that decide its program (decode kernels, kernel
args, program factory, planner): those are edited for reasons unrelated to the emulator, so when they differ from the
pinned digest that one case is skipped, saying so, until the pins are regenerated. The wheel's programs have no such
escape.

Regenerate the pins (only at a commit whose emulator results are known good, i.e. before an emulator change):

    TTFD_WRITE_PINS=1 .venv/bin/python -m pytest -q tests/test_identical_results.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import torch

import ttemu
import ttflashdecode
from ttemu.tests.conformance import factories
from ttflashdecode import upstream
from ttflashdecode.ops.decode.factory import noc1_reader_cores
from ttflashdecode.plan.rules import NOC1_READER_STRIDE

PINS = Path(__file__).with_name("identical_results.json")
WRITE = os.environ.get("TTFD_WRITE_PINS", "") not in ("", "0")
PACKAGE = Path(ttflashdecode.__file__).resolve().parent
# What decides the package's own decode program besides the emulator.
OURS_SOURCES = ("ops/decode/kernels", "ops/decode/args.py", "ops/decode/factory.py", "ops/descriptors.py", "plan")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def _json_sha(obj) -> str:
    return _sha(json.dumps(obj, sort_keys=True, default=repr).encode())


def ours_digest() -> str:
    h = hashlib.sha256()
    for rel in OURS_SOURCES:
        root = PACKAGE / rel
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for p in files:
            if p.suffix in (".cpp", ".hpp", ".h", ".py"):
                h.update(str(p.relative_to(PACKAGE)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:32]


def fingerprint(dev, out, stats) -> dict:
    t = stats.timing
    assert t is not None and t.ok, f"the timing model did not finish: {t.error if t else 'timing off'}"
    timing = {
        "cores": {
            core: {r: [v.start, v.end, v.busy, v.wait, v.lanes] for r, v in riscs.items()}
            for core, riscs in t.cores.items()
        },
        "span": [t.first_start_ns, t.last_end_ns],
        "dram": t.dram_bank_busy_ns,
        "links": [[int(link.noc), list(link.origin), link.axis, link.busy] for link in t.busiest_links],
    }
    counters = {
        "dram_read": stats.dram_bank_read_bytes,
        "dram_write": stats.dram_bank_write_bytes,
        "noc": sorted([a, b, n] for (a, b), n in stats.noc_bytes.items()),
        "cores": stats.core_counters,
        # per-buffer page bytes of the buffers the program touched, without the buffer ids (which, like the set of
        # live buffers, depend on what else the session allocated and when Python freed it). CB high-water marks are
        # left out: they depend on how the host scheduled the kernel threads.
        "page_read": sorted(v for v in stats.buffer_page_read_bytes.values() if any(v)),
        "page_write": sorted(v for v in stats.buffer_page_write_bytes.values() if any(v)),
    }
    return {
        "output": _sha(dev._read_pages(out)),
        "duration_ns": t.duration_ns,
        "trace": t.trace_digest,
        "timing": _json_sha(timing),
        "counters": _json_sha(counters),
    }


# ------------------------------------------------------------------------------------------------ the programs
def _randn(g, *shape, scale=1.0):
    return torch.randn(*shape, generator=g) * scale


def eltwise_add_bf16(dev, ttnn, g):
    x, y = _randn(g, 1, 2, 64, 160, scale=3), _randn(g, 1, 2, 64, 160, scale=3)
    a, b = (dev.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT) for t in (x, y))
    out = dev.allocate([1, 2, 64, 160], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    return out, dev.generic_op([a, b, out], factories.eltwise_binary_program(ttnn, dev.grid, a, b, out, "add"))


def eltwise_mul_bfp8_hifi2(dev, ttnn, g):
    x, y = _randn(g, 1, 1, 96, 256), _randn(g, 1, 1, 96, 256)
    a, b = (dev.from_torch(t, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT) for t in (x, y))
    out = dev.allocate([1, 1, 96, 256], ttnn.bfloat8_b, ttnn.TILE_LAYOUT)
    program = factories.eltwise_binary_program(ttnn, dev.grid, a, b, out, "mul", "HiFi2")
    return out, dev.generic_op([a, b, out], program)


def eltwise_exp(dev, ttnn, g):
    src = dev.from_torch(_randn(g, 1, 1, 128, 192, scale=2), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = dev.allocate([1, 1, 128, 192], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    return out, dev.generic_op([src, out], factories.eltwise_unary_program(ttnn, dev.grid, src, out, "exp"))


def bmm(dev, ttnn, g):
    a = dev.from_torch(_randn(g, 2, 1, 64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    b = dev.from_torch(_randn(g, 2, 1, 128, 96), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = dev.allocate([2, 1, 64, 96], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    return out, dev.generic_op([a, b, out], factories.bmm_program(ttnn, dev.grid, a, b, out, 2, 2, 4, 3, False))


def reduce_row_sum(dev, ttnn, g):
    src = dev.from_torch(_randn(g, 1, 2, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = dev.allocate([1, 2, 64, 32], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    return out, dev.generic_op([src, out], factories.reduce_w_program(ttnn, dev.grid, src, out, "sum", 1.0))


def softmax_fp32_dest(dev, ttnn, g):
    src = dev.from_torch(_randn(g, 1, 1, 64, 320, scale=4), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    out = dev.allocate([1, 1, 64, 320], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    program = factories.softmax_program(ttnn, dev.grid, src, out, fp32_dest_acc_en=True)
    return out, dev.generic_op([src, out], program)


def _decode_inputs(dev, ttnn, g, *, empty_kv: bool):
    """Paged GQA decode: b2, 16 q / 2 kv heads, d64, bfloat8_b cache in shuffled 32-row blocks, positions from a
    device tensor."""
    b, hq, hkv, d, blocks, per_user = 2, 16, 2, 64, 37, 16
    q = dev.from_torch(_randn(g, 1, b, hq, d), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    if empty_kv:
        k, v = (dev.empty((blocks, hkv, 32, d), ttnn.bfloat8_b) for _ in range(2))
    else:
        k, v = (
            dev.from_torch(_randn(g, blocks, hkv, 32, d), dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT)
            for _ in range(2)
        )
    table = torch.randperm(blocks, generator=g)[: b * per_user].reshape(b, per_user).to(torch.int32)
    table = dev.from_torch(table, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    pos = dev.from_torch(torch.tensor([450, 97], dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
        q_chunk_size=0,
        k_chunk_size=128,
        max_cores_per_head_batch=4,
    )
    return q, k, v, table, pos, config


def upstream_sdpa_decode_paged(dev, ttnn, g, empty_kv=False):
    q, k, v, table, pos, config = _decode_inputs(dev, ttnn, g, empty_kv=empty_kv)
    out, run = upstream.paged_scaled_dot_product_attention_decode(
        q, k, v, table, cur_pos_tensor=pos, program_config=config, return_stats=True
    )
    return out, run.stats


def ours_decode_paged(dev, ttnn, g):
    q, k, v, table, pos, config = _decode_inputs(dev, ttnn, g, empty_kv=False)
    out, run = ttflashdecode.paged_scaled_dot_product_attention_decode(
        q, k, v, table, cur_pos_tensor=pos, program_config=config, return_stats=True
    )
    return out, run.stats


def _ours_config(ttnn, k_chunk_size, cores):
    return ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8),
        q_chunk_size=0,
        k_chunk_size=k_chunk_size,
        max_cores_per_head_batch=cores,
    )


def _positions(dev, ttnn, values):
    return dev.from_torch(torch.tensor(values, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


def ours_decode_window_sinks(dev, ttnn, g):
    """Sliding window, attention sinks and a scale other than 1/sqrt(head_dim) (the scale stays out of the exp), three
    users of which one sees fewer positions than the window; bfloat16 cache, 2-core tree."""
    b, hq, hkv, d, s = 3, 8, 2, 64, 512
    tile = dict(dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    q = dev.from_torch(_randn(g, 1, b, hq, d), **tile)
    k, v = (dev.from_torch(_randn(g, b, hkv, s, d), **tile) for _ in range(2))
    sinks = dev.from_torch(_randn(g, 1, hq, scale=2), **tile)
    out, run = ttflashdecode.scaled_dot_product_attention_decode(
        q,
        k,
        v,
        cur_pos_tensor=_positions(dev, ttnn, [300, 511, 40]),
        scale=0.2,
        sliding_window_size=128,
        attention_sink=sinks,
        program_config=_ours_config(ttnn, 64, 2),
        return_stats=True,
    )
    return out, run.stats


def ours_decode_user_mask(dev, ttnn, g):
    """Non-causal with a user mask [b, 1, 1, kv_len] hiding random positions, MQA d128, 4-core tree."""
    b, hq, hkv, d, s = 2, 4, 1, 128, 256
    tile = dict(dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    q = dev.from_torch(_randn(g, 1, b, hq, d), **tile)
    k, v = (dev.from_torch(_randn(g, b, hkv, s, d), **tile) for _ in range(2))
    hidden = torch.rand(b, 1, 1, s, generator=g) < 0.3
    mask = dev.from_torch(torch.where(hidden, -1e9, 0.0), **tile)
    out, run = ttflashdecode.scaled_dot_product_attention_decode(
        q,
        k,
        v,
        is_causal=False,
        attn_mask=mask,
        program_config=_ours_config(ttnn, 64, 4),
        return_stats=True,
    )
    return out, run.stats


def ours_decode_scale_in_exp(dev, ttnn, g):
    """Causal GQA with the approximate exp and a given scale fused into it (the compute kernel's one compile-time
    scale), bfloat8_b cache, a skipped user (-1)."""
    b, hq, hkv, d, s = 4, 16, 4, 128, 1024
    q = dev.from_torch(_randn(g, 1, b, hq, d), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    k, v = (dev.from_torch(_randn(g, b, hkv, s, d), dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT) for _ in range(2))
    out, run = ttflashdecode.scaled_dot_product_attention_decode(
        q,
        k,
        v,
        cur_pos_tensor=_positions(dev, ttnn, [1023, -1, 517, 64]),
        scale=0.1,
        program_config=_ours_config(ttnn, 128, 4),
        return_stats=True,
    )
    return out, run.stats


def ours_decode_noc1_readers(dev, ttnn, g):
    """Llama-3.1-8B's N150 call at 2K (b1, 32 q / 8 kv heads, d128, paged bfloat8_b in 64-row blocks, 8x8 grid, 8
    cores a group): a DRAM-bound plan whose every eighth reading core reads over NoC 1, so the pins cover both NoCs'
    routes, barriers and DRAM bank tables."""
    b, hq, hkv, d, block, blocks = 1, 32, 8, 128, 64, 32
    q = dev.from_torch(_randn(g, 1, b, hq, d), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    k, v = (
        dev.from_torch(_randn(g, blocks, hkv, block, d), dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT)
        for _ in range(2)
    )
    table = torch.randperm(blocks, generator=g).reshape(b, blocks).to(torch.int32)
    table = dev.from_torch(table, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    out, run = ttflashdecode.paged_scaled_dot_product_attention_decode(
        q,
        k,
        v,
        table,
        cur_pos_tensor=_positions(dev, ttnn, [2000]),
        program_config=_ours_config(ttnn, 256, 8),
        return_stats=True,
    )
    assert noc1_reader_cores(run.plan, NOC1_READER_STRIDE["wormhole_b0"]), "the plan has no NoC 1 readers to pin"
    return out, run.stats


PROGRAMS = {
    "eltwise_add_bf16": (eltwise_add_bf16, False),
    "eltwise_mul_bfp8_hifi2": (eltwise_mul_bfp8_hifi2, False),
    "eltwise_exp": (eltwise_exp, False),
    "bmm": (bmm, False),
    "reduce_row_sum": (reduce_row_sum, False),
    "softmax_fp32_dest": (softmax_fp32_dest, False),
    "upstream_sdpa_decode_paged": (upstream_sdpa_decode_paged, False),
    "upstream_sdpa_decode_paged_timing_only": (lambda d, t, g: upstream_sdpa_decode_paged(d, t, g, True), True),
    "ours_decode_paged": (ours_decode_paged, False),
    "ours_decode_window_sinks": (ours_decode_window_sinks, False),
    "ours_decode_user_mask": (ours_decode_user_mask, False),
    "ours_decode_scale_in_exp": (ours_decode_scale_in_exp, False),
    "ours_decode_noc1_readers": (ours_decode_noc1_readers, False),
}


@pytest.fixture(scope="module")
def timing_only_device():
    dev = ttemu.open_device("n150", timing_only=True)
    yield dev
    dev.close()


@pytest.fixture(scope="module")
def pins():
    found = json.loads(PINS.read_text()) if PINS.exists() else {}
    yield found
    if WRITE:
        PINS.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_identical_results(emu_device, timing_only_device, ttnn, pins, name):
    build, timing_only = PROGRAMS[name]
    dev = timing_only_device if timing_only else emu_device
    g = torch.Generator().manual_seed(24_000 + sum(map(ord, name)))
    want = pins.get(name)
    assert WRITE or want, f"{name}: no pins in {PINS.name}; generate them with TTFD_WRITE_PINS=1 (see the docstring)"
    sources = ours_digest() if name.startswith("ours_") else None
    if not WRITE and sources is not None and want.get("sources") != sources:
        pytest.skip(
            f"{name}: the package's decode sources ({', '.join(OURS_SOURCES)}) differ from those pinned "
            f"(digest {sources} vs {want.get('sources')}); regenerate the pins with TTFD_WRITE_PINS=1 at a "
            "commit whose emulator is known good"
        )
    out, stats = build(dev, ttnn, g)
    got = fingerprint(dev, out, stats)
    if timing_only:  # a timing-only run's output holds no data: only its timing and counts are pinned
        del got["output"]
    if sources is not None:
        got["sources"] = sources
    if WRITE:
        pins[name] = got
        return
    diff = {k: (want.get(k), v) for k, v in got.items() if want.get(k) != v}
    assert not diff, f"{name}: results differ from the pinned ones (pinned, now): {diff}"
