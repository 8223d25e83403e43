"""The cache-hit fast path (ttflashdecode.ops.decode.fast_path): a repeated call skips validation and planning and
launches the programs the first call made, with the same result; any change to a tensor or an argument misses it, and a
call that fails fails with the full path's error, word for word (perf/host_overhead.py measures the time)."""

from __future__ import annotations

import pytest
import torch

from decode_harness import check_close, generator, seed_for
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import FlashDecodeWrapper, cache_stats, clear_program_cache, golden
from ttflashdecode.backend import Backend
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.decode import api as op_module
from ttflashdecode.ops.decode import pipeline as pipeline_module
from ttflashdecode.ops.decode import request as decode_request_module
from ttflashdecode.ops.decode.pipeline import DecodePipeline

ttnn = import_ttnn()
CONFIG = "small/test-2x2"  # 4 cores: short emulated runs
B, NQ, NKV, D, S = 2, 8, 1, 64, 256
TILE = dict(layout=ttnn.TILE_LAYOUT)
INT32 = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


@pytest.fixture
def paths(monkeypatch):
    """Counts the calls that took the full path (check_call, from the op or a wrapper's run) and those that took the
    fast path (DecodePipeline.run_hit)."""
    counts = {"full": 0, "fast": 0}
    check_call, run_hit = decode_request_module.check_call, DecodePipeline.run_hit

    def full(*args, **kwargs):
        counts["full"] += 1
        return check_call(*args, **kwargs)

    def fast(self, *args, **kwargs):
        counts["fast"] += 1
        return run_hit(self, *args, **kwargs)

    monkeypatch.setattr(decode_request_module, "check_call", full)
    monkeypatch.setattr(pipeline_module, "check_call", full)
    monkeypatch.setattr(DecodePipeline, "run_hit", fast)
    return counts


@pytest.fixture
def fresh_devices():
    """Two new emulated chips: a freed buffer's address is then the first fit for a tensor of its size (no holes left
    by other tests), so a case can put a different tensor at a good one's address."""
    import ttemu

    devices = [ttemu.open_device(board="n150") for _ in range(2)]
    yield devices
    for device in devices:
        device.close()


def _inputs(dev, seed_key: str):
    gen = generator(seed_for(seed_key))
    q = torch.randn(1, B, NQ, D, generator=gen)
    k = torch.randn(B, NKV, S, D, generator=gen)
    v = torch.randn(B, NKV, S, D, generator=gen)
    return (q, k, v), tuple(dev.from_torch(x, dtype=ttnn.bfloat16, **TILE) for x in (q, k, v))


def test_repeated_calls_take_the_fast_path_with_the_same_result(emu_device, paths):
    """Op calls with a device cur_pos_tensor rewritten in place, with a preallocated and with a new output, and a
    wrapper's runs: the first call of each signature is validated and planned, the next ones are not, and every
    output matches the golden model. The counters count a fast call as the lookups it skipped."""
    seed = seed_for("test_host_path.same_result")
    dev = emu_device
    (q, k, v), (tq, tk, tv) = _inputs(dev, "test_host_path.same_result")
    qd, kd, vd = (golden.quantize_like_device(x, "bfloat16") for x in (q, k, v))
    pos = dev.from_torch(torch.tensor([5, 6], dtype=torch.int32), **INT32)
    out = dev.allocate([1, B, NQ, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    clear_program_cache()
    for step, positions in enumerate(([100, 37], [101, 255], [102, 0])):
        dev.write(pos, torch.tensor(positions, dtype=torch.int32))
        got, run = op_module.scaled_dot_product_attention_decode(
            tq, tk, tv, cur_pos_tensor=pos, output_tensor=out, program_config=CONFIG, return_stats=True
        )
        assert got is out
        check_close(
            dev.to_torch(out).float(),
            golden.sdpa_decode(qd, kd, vd, cur_pos=positions),
            "bfloat16",
            seed,
            f"op step {step}",
        )
    assert paths == {"full": 1, "fast": 2}, paths
    assert cache_stats() == {"plans": 1, "plan_hits": 2, "programs": 1, "program_hits": 2}, cache_stats()
    assert run.plan is device_cache(dev).calls[next(iter(device_cache(dev).calls))].planned.plan

    # A new output every call: a signature of its own (no output_tensor); the output lands where the freed last one was
    for step in range(2):
        new = op_module.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos_tensor=pos, program_config=CONFIG)
        check_close(
            dev.to_torch(new).float(),
            golden.sdpa_decode(qd, kd, vd, cur_pos=[102, 0]),
            "bfloat16",
            seed,
            f"new output {step}",
        )
        del new
    assert paths == {"full": 2, "fast": 3}, paths

    wrapper = FlashDecodeWrapper(dev, program_config=CONFIG)
    wrapper.plan(batch=B, n_q_heads=NQ, n_kv_heads=NKV, head_dim=D, kv_len=S)
    for step, positions in enumerate(([3, 4], [200, 100])):
        dev.write(pos, torch.tensor(positions, dtype=torch.int32))
        got, run = wrapper.run(tq, tk, tv, cur_pos_tensor=pos, output_tensor=out, return_stats=True)
        assert got is out and run is wrapper.last_run and run.plan is wrapper.decode_plan
        check_close(
            dev.to_torch(out).float(),
            golden.sdpa_decode(qd, kd, vd, cur_pos=positions),
            "bfloat16",
            seed,
            f"wrapper run {step}",
        )
    assert paths == {"full": 3, "fast": 4}, paths
    # A new plan drops the wrapper's fast calls: the next run is checked against it.
    wrapper.plan(batch=B, n_q_heads=NQ, n_kv_heads=NKV, head_dim=D, kv_len=S)
    wrapper.run(tq, tk, tv, cur_pos_tensor=pos, output_tensor=out)
    assert paths == {"full": 4, "fast": 4}, paths


def _error(call) -> tuple[type, str] | None:
    try:
        call()
    except (ValueError, TypeError, RuntimeError) as error:
        return type(error), str(error)
    return None


def _replaced_at_its_address(dev, tensor, shape, dtype, layout):
    """Frees ``tensor`` and allocates one of another form that must sit at its address: the case then tests the
    signature's compared part, not just its key."""
    address = tensor.buffer_address()
    tensor.deallocate()
    replacement = dev.allocate(shape, dtype, layout)
    assert replacement.buffer_address() == address, "the allocator did not reuse the freed address; adjust the case"
    return replacement


# Each case: (name, how to break the call). ``t`` holds the tensors of a good call ("q", "k", "v", "pos", "out") and
# the device; a case returns the failing call (it may free a good tensor and put a bad one at its address).
def _deallocated_q(t):
    t["q"].deallocate()
    return dict()


def _q_of_another_shape_at_its_address(t):
    # [1, 2, 32, 64] stores as many tiles as [1, 2, 8, 64]: the same bytes, at the same address, another shape
    t["q"] = _replaced_at_its_address(t["dev"], t["q"], [1, B, 32, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    return dict()


def _positions_of_another_dtype_at_their_address(t):
    t["pos"] = _replaced_at_its_address(t["dev"], t["pos"], [B], ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT)
    return dict()


def _positions_of_another_length_at_their_address(t):
    t["pos"] = _replaced_at_its_address(t["dev"], t["pos"], [4], ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
    return dict()


def _output_of_another_shape_at_its_address(t):
    t["out"] = _replaced_at_its_address(t["dev"], t["out"], [1, B, 32, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    return dict()


def _k_on_another_device(t):
    t["k"] = t["other"].from_torch(torch.randn(B, NKV, S, D), dtype=ttnn.bfloat16, **TILE)
    return dict()


CASES = [
    ("q deallocated", _deallocated_q),
    ("q of another shape at q's address", _q_of_another_shape_at_its_address),
    ("cur_pos_tensor of another dtype at its address", _positions_of_another_dtype_at_their_address),
    ("cur_pos_tensor of another length at its address", _positions_of_another_length_at_their_address),
    ("output of another shape at its address", _output_of_another_shape_at_its_address),
    ("k on another device", _k_on_another_device),
    ("scale=True after scale=1", lambda t: dict(scale=True)),
    ("scale as a string", lambda t: dict(scale="0.125")),
    ("memory_config with output_tensor", lambda t: dict(memory_config=ttnn.DRAM_MEMORY_CONFIG)),
    ("dtype with output_tensor", lambda t: dict(dtype=ttnn.bfloat16)),
    ("is_causal=False with cur_pos_tensor", lambda t: dict(is_causal=False)),
    ("is_causal=1", lambda t: dict(is_causal=1)),
    ("sliding_window_size=1.0 after 1", lambda t: dict(sliding_window_size=1.0)),
    ("program_config of another type", lambda t: dict(program_config=3)),
    ("host cur_pos beside cur_pos_tensor", lambda t: dict(cur_pos=[1, 2])),
    ("validate_device_tensors with a device position out of range", lambda t: dict(validate_device_tensors=True)),
]


@pytest.mark.parametrize("name, breaks", CASES, ids=[c[0] for c in CASES])
def test_a_changed_call_misses_and_fails_with_the_full_paths_error(fresh_devices, paths, monkeypatch, name, breaks):
    """A good call made twice (the second a fast hit), then the call broken one way: it must miss the fast path and
    raise exactly what the full path raises for it with no fast entry at all. Host path only (launches are no-ops)."""
    monkeypatch.setattr(Backend, "run", lambda self, tensors, launchable: None)
    dev, other = fresh_devices
    _, (tq, tk, tv) = _inputs(dev, f"test_host_path.changed.{name}")
    positions = [9999, 5] if "out of range" in name else [100, 5]
    pos = dev.from_torch(torch.tensor(positions, dtype=torch.int32), **INT32)
    out = dev.allocate([1, B, NQ, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    t = dict(dev=dev, other=other, q=tq, k=tk, v=tv, pos=pos, out=out)
    base = dict(program_config=CONFIG, scale=1, sliding_window_size=1 if "sliding" in name else None)

    def call(**changes):
        kwargs = dict(base, cur_pos_tensor=t["pos"], output_tensor=t["out"]) | changes
        return op_module.scaled_dot_product_attention_decode(t["q"], t["k"], t["v"], **kwargs)

    clear_program_cache()
    call()
    call()
    assert paths == {"full": 1, "fast": 1}, f"{name}: the good call's repeat must take the fast path ({paths})"
    changes = breaks(t)
    warm = _error(lambda: call(**changes))
    assert paths["fast"] == 1, f"{name}: the changed call took the fast path"
    clear_program_cache()
    cold = _error(lambda: call(**changes))
    assert cold is not None, f"{name}: the case is meant to fail on the full path"
    assert warm == cold, f"{name}: with a fast entry the call raised {warm}, without one {cold}"


def test_a_wrapper_run_that_changed_fails_as_before(fresh_devices, paths, monkeypatch):
    """wrapper.run: after a fast hit, a run whose output has another shape at the same address, or whose k has
    another length, raises what a run of a fresh wrapper with the same plan raises."""
    monkeypatch.setattr(Backend, "run", lambda self, tensors, launchable: None)
    dev = fresh_devices[0]
    _, (tq, tk, tv) = _inputs(dev, "test_host_path.wrapper_changed")
    pos = dev.from_torch(torch.tensor([7, 8], dtype=torch.int32), **INT32)
    out = dev.allocate([1, B, NQ, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)

    def planned():
        wrapper = FlashDecodeWrapper(dev, program_config=CONFIG)
        wrapper.plan(batch=B, n_q_heads=NQ, n_kv_heads=NKV, head_dim=D, kv_len=S)
        return wrapper

    warm_wrapper = planned()
    for _ in range(2):
        warm_wrapper.run(tq, tk, tv, cur_pos_tensor=pos, output_tensor=out)
    assert paths["fast"] == 1
    wide = _replaced_at_its_address(dev, out, [1, B, 32, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    short_k = dev.from_torch(torch.randn(B, NKV, S // 2, D), dtype=ttnn.bfloat16, **TILE)
    for what, run in (
        ("output of another shape", lambda w: w.run(tq, tk, tv, cur_pos_tensor=pos, output_tensor=wide)),
        ("k of another length", lambda w: w.run(tq, short_k, short_k, cur_pos_tensor=pos)),
    ):
        warm, cold = _error(lambda: run(warm_wrapper)), _error(lambda: run(planned()))
        assert cold is not None and warm == cold, f"{what}: {warm} != {cold}"
    assert paths["fast"] == 1


def test_an_l1_tensor_allocated_since_takes_the_full_path(emu_device, paths, monkeypatch):
    """The lowest live L1 buffer is part of every hit's check: an L1 tensor allocated after a call sends the next one
    down the full path (which re-plans in the L1 left, or refuses); freeing it brings the line back to one the entry
    has seen, which hits at once."""
    monkeypatch.setattr(Backend, "run", lambda self, tensors, launchable: None)
    dev = emu_device
    _, (tq, tk, tv) = _inputs(dev, "test_host_path.l1")
    pos = dev.from_torch(torch.tensor([7, 8], dtype=torch.int32), **INT32)
    out = dev.allocate([1, B, NQ, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    clear_program_cache()

    def call():
        op_module.scaled_dot_product_attention_decode(
            tq, tk, tv, cur_pos_tensor=pos, output_tensor=out, program_config=CONFIG
        )

    call()
    call()
    assert paths == {"full": 1, "fast": 1}
    l1 = dev.allocate([1, 1, 32, 32], ttnn.bfloat16, ttnn.TILE_LAYOUT, memory_config=ttnn.L1_MEMORY_CONFIG)
    call()
    assert paths == {"full": 2, "fast": 1}, paths
    call()
    assert paths == {"full": 2, "fast": 2}, paths  # the full path made an entry for the new L1 state
    l1.deallocate()  # back at the first line: the entry keeps it (the full path made the same plan at both)
    call()
    call()
    assert paths == {"full": 2, "fast": 4}, paths


def test_an_l1_output_the_op_allocates_stays_on_the_fast_path(emu_device, paths):
    """A decode loop whose op allocates an L1 height-sharded output and drops the previous step's after the call: the
    two live outputs take turns as the lowest L1 buffer, so the line moves every step. The entry keeps both lines
    (the full path made the same plan at each), so after one full call per line every step is a hit, and every
    output still matches the golden model."""
    seed = seed_for("test_host_path.l1_output_loop")
    dev = emu_device
    (q, k, v), (tq, tk, tv) = _inputs(dev, "test_host_path.l1_output_loop")
    qd, kd, vd = (golden.quantize_like_device(x, "bfloat16") for x in (q, k, v))
    pos = dev.from_torch(torch.tensor([40, 7], dtype=torch.int32), **INT32)
    cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0))])
    sharded = ttnn.MemoryConfig(
        ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
        ttnn.BufferType.L1,
        ttnn.ShardSpec(cores, [32, D], ttnn.ShardOrientation.ROW_MAJOR),
    )
    clear_program_cache()
    previous, lines, addresses = None, [], []
    for step in range(6):
        positions = [40 + step, 7 + 2 * step]
        dev.write(pos, torch.tensor(positions, dtype=torch.int32))
        lines.append(dev.lowest_l1_buffer_address())
        out = op_module.scaled_dot_product_attention_decode(
            tq, tk, tv, cur_pos_tensor=pos, memory_config=sharded, program_config=CONFIG
        )
        addresses.append(out.buffer_address())
        check_close(
            dev.to_torch(out).float(),
            golden.sdpa_decode(qd, kd, vd, cur_pos=positions),
            "bfloat16",
            seed,
            f"step {step}",
        )
        previous = out  # the step before's output is dropped here, after the call (a model's `x = op(...)`)
    del previous
    # the case is what it means to be: from the second step on the line alternates between the two outputs
    assert lines[0] is None and len(set(lines[1:])) == 2 and lines[1] == lines[3] == lines[5] != lines[2], lines
    assert len(set(addresses)) == 2, addresses
    # step 0 (no L1 buffer), step 1 (the first output's line) and step 2 (the second's): full; then hits
    assert paths == {"full": 3, "fast": 3}, paths


def test_a_line_that_changes_the_plan_is_not_kept(emu_device, paths, monkeypatch):
    """An L1 tensor large enough to change the plan (head_dim 2048: the program would otherwise fill L1) sends the
    call down the full path, which re-plans below it; that entry keeps only the new line (its plan differs), so freeing
    the tensor misses once more and the full path goes back to the first plan. Host path only (launches are no-ops)."""
    monkeypatch.setattr(Backend, "run", lambda self, tensors, launchable: None)
    dev = emu_device
    gen = generator(seed_for("test_host_path.plan_changing_line"))
    tq, tk, tv = (
        dev.from_torch(torch.randn(*shape, generator=gen), dtype=ttnn.bfloat16, **TILE)
        for shape in ((2, 1, 16, 2048), (1, 1, 512, 2048), (1, 1, 512, 2048))
    )
    pos = dev.from_torch(torch.tensor([500], dtype=torch.int32), **INT32)
    out = dev.allocate([2, 1, 16, 2048], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    clear_program_cache()

    def call():
        _, result = op_module.scaled_dot_product_attention_decode(
            tq, tk, tv, cur_pos_tensor=pos, output_tensor=out, program_config="small/test-2x2", return_stats=True
        )
        return result.plan

    first = call()
    assert call() is first and paths == {"full": 1, "fast": 1}, paths
    cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 7))])
    hog_config = ttnn.MemoryConfig(
        ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
        ttnn.BufferType.L1,
        ttnn.ShardSpec(cores, [32, 1024], ttnn.ShardOrientation.ROW_MAJOR),
    )
    hog = dev.allocate([64, 32, 1024], ttnn.bfloat16, ttnn.TILE_LAYOUT, memory_config=hog_config)
    below = call()
    assert below.l1_bytes < first.l1_bytes, "the case needs an L1 tensor that changes the plan"
    assert call() is below and paths == {"full": 2, "fast": 2}, paths
    hog.deallocate()
    assert call() == first and paths == {"full": 3, "fast": 2}, paths
    assert call() == first and paths == {"full": 3, "fast": 3}, paths


def test_a_ttnn_program_config_changed_in_place_misses(emu_device, paths, monkeypatch):
    """A ``ttnn.SDPAProgramConfig`` is mutable and passed as the same object every call; the fast path compares it by
    value (every field), so a field changed in place after a hit sends the next call down the full path,
    which plans the new chunk size. Host path only (launches are no-ops)."""
    monkeypatch.setattr(Backend, "run", lambda self, tensors, launchable: None)
    dev = emu_device
    _, (tq, tk, tv) = _inputs(dev, "test_host_path.config_in_place")
    pos = dev.from_torch(torch.tensor([200, 100], dtype=torch.int32), **INT32)
    out = dev.allocate([1, B, NQ, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)
    config = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(2, 2), q_chunk_size=0, k_chunk_size=64, exp_approx_mode=False
    )
    clear_program_cache()

    def call():
        _, result = op_module.scaled_dot_product_attention_decode(
            tq, tk, tv, cur_pos_tensor=pos, output_tensor=out, program_config=config, return_stats=True
        )
        return result.plan

    assert call().k_chunk_size == 64 and call().k_chunk_size == 64
    assert paths == {"full": 1, "fast": 1}, paths
    for field, value in (("k_chunk_size", 128), ("exp_approx_mode", None), ("max_cores_per_head_batch", 2)):
        setattr(config, field, value)
        plan = call()
        assert paths["fast"] == 1, f"{field} changed in place: the call took the fast path ({paths})"
        assert plan.k_chunk_size == 128, plan
        paths["full"] = 0
    assert call() is plan and paths["fast"] == 2, paths


class _OpWrapper:
    """ttnn's Python op wrapper (``FastOperation``) as the card launcher reads it: the C++ op as ``function`` and
    whether the wrapper would do more than call it (``_requires_slow_runtime``)."""

    def __init__(self, launches: list):
        self.launches, self.slow = launches, False
        self.function = lambda io, program: launches.append(("op itself", program))

    def __call__(self, io, program):
        self.launches.append(("wrapper", program))

    def _requires_slow_runtime(self) -> bool:
        return self.slow


def test_the_card_launcher_calls_the_op_itself_only_where_the_wrapper_would_only_call_it(monkeypatch):
    """A card's hit launches through ``Backend.card_launcher``: ttnn.generic_op's C++ op itself when ttnn's wrapper
    would do nothing else, the wrapper when it would log or compare (slow runtime mode) or record the launch (Python
    I/O recording of a graph), and whatever ``ttnn.generic_op`` is at the call when something replaced it."""
    from types import SimpleNamespace

    from ttflashdecode import backend as backend_module

    launches, recording = [], [False]
    wrapper = _OpWrapper(launches)
    graph = SimpleNamespace(is_python_io_recording_enabled=lambda: recording[0])
    fake = SimpleNamespace(generic_op=wrapper, graph=graph)
    monkeypatch.setattr(backend_module, "import_ttnn", lambda: fake)
    launch = backend_module.Backend(object(), backend_module.CARD).card_launcher()

    launch([], 1)
    wrapper.slow = True
    launch([], 2)
    wrapper.slow, recording[0] = False, True
    launch([], 3)
    recording[0] = False
    fake.generic_op = lambda io, program: launches.append(("replaced", program))
    launch([], 4)
    fake.generic_op = wrapper
    launch([], 5)
    assert launches == [("op itself", 1), ("wrapper", 2), ("wrapper", 3), ("replaced", 4), ("op itself", 5)]

    # a ttnn whose wrapper lacks what the launcher reads: always the wrapper
    del fake.graph
    launch = backend_module.Backend(object(), backend_module.CARD).card_launcher()
    launches.clear()
    launch([], 6)
    assert launches == [("wrapper", 6)]


def test_ttnns_generic_op_wrapper_has_what_the_card_launcher_reads():
    """The installed ttnn's generic_op is the wrapper the card launcher knows (else every hit pays the wrapper)."""
    real = pytest.importorskip("ttnn")
    op = real.generic_op
    if type(op).__name__ != "FastOperation":
        pytest.skip(f"ttnn.generic_op is a {type(op).__name__}")
    assert callable(op.function) and callable(op._requires_slow_runtime)
    assert callable(real.graph.is_python_io_recording_enabled)
