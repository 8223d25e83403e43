"""FlashDecodeWrapper: planned once, run per layer and decode step; its cache lives and dies with the device."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from decode_harness import check_close, generator, seed_for, tag
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import FlashDecodeWrapper, cache_stats, clear_program_cache, golden, program_cache_stats
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.decode import api as op_module

CONFIG = "small/test-2x2"  # 4 cores: short emulated runs that still split a group and reduce
B, NQ, NKV, D, S = 2, 8, 1, 64, 256  # MQA: 2 (batch, kv head) groups of 2 cores each, one reduction round


def _shape_kwargs(**overrides):
    return dict(batch=B, n_q_heads=NQ, n_kv_heads=NKV, head_dim=D, kv_len=S) | overrides


def _to_device(device, x: torch.Tensor, dtype=None):
    ttnn = import_ttnn()
    return device.from_torch(x, dtype=dtype or ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)


def _positions_tensor(device, positions):
    ttnn = import_ttnn()
    return device.from_torch(torch.tensor(positions, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


@pytest.fixture
def layers(emu_device):
    """Three layers' Q, K, V (distinct K and V) on the device, and their values as the device stores them."""
    ttnn = import_ttnn()
    seed = seed_for("test_wrapper.layers")
    gen = generator(seed)
    host = [
        (
            torch.randn(1, B, NQ, D, generator=gen),
            torch.randn(B, NKV, S, D, generator=gen),
            torch.randn(B, NKV, S, D, generator=gen),
        )
        for _ in range(3)
    ]
    kv = ttnn.bfloat8_b
    tt = [(_to_device(emu_device, q), _to_device(emu_device, k, kv), _to_device(emu_device, v, kv)) for q, k, v in host]
    stored = [
        (
            golden.quantize_like_device(q, "bfloat16"),
            golden.quantize_like_device(k, "bfloat8_b"),
            golden.quantize_like_device(v, "bfloat8_b"),
        )
        for q, k, v in host
    ]
    return seed, tt, stored


def test_plan_once_run_every_layer_and_step(emu_device, layers):
    """One plan and one compiled kernel set serve every layer and step; cur_pos is a device tensor rewritten in place
    and every output matches the golden model."""
    import ttemu

    ttnn = import_ttnn()
    seed, tt, stored = layers
    clear_program_cache()
    wrapper = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    decode_plan = wrapper.plan(**_shape_kwargs(kv_dtype=ttnn.bfloat8_b))
    assert decode_plan is wrapper.decode_plan and decode_plan.num_cores_per_head == 2
    pos = _positions_tensor(emu_device, [0, 0])
    out = emu_device.allocate([1, B, NQ, D], ttnn.bfloat16, ttnn.TILE_LAYOUT)  # NaN-free poison: 0xDEADBEEF
    steps = [[37, 200], [38, 201], [-1, 255]]  # user 0 skipped in the last step
    compiles_after_first = None
    for step, positions in enumerate(steps):
        emu_device.write(pos, torch.tensor(positions, dtype=torch.int32))  # in place, as a model's decode loop does
        for layer, (q, k, v) in enumerate(tt):
            emu_device.write(out, torch.full((1, B, NQ, D), float("nan")))
            result = wrapper.run(q, k, v, cur_pos_tensor=pos, output_tensor=out)
            assert result is out
            if compiles_after_first is None:
                compiles_after_first = ttemu.compile_cache_stats()["misses"]
            expected = golden.sdpa_decode(*stored[layer], cur_pos=positions)
            check_close(
                emu_device.to_torch(out).float(),
                expected,
                "bfloat8_b",
                seed,
                f"layer {layer}, step {step}, cur_pos {positions}",
            )
            assert wrapper.last_run.plan is decode_plan
    assert ttemu.compile_cache_stats()["misses"] == compiles_after_first, tag(seed) + " kernels recompiled"
    runs, num_layers = len(steps) * len(tt), len(tt)
    # One plan; one descriptor per layer (the layers' K/V sit at other addresses), reused by every later step.
    assert cache_stats() == {"plans": 1, "plan_hits": 0, "programs": num_layers, "program_hits": runs - num_layers}
    assert program_cache_stats() == {"hits": runs - num_layers, "misses": num_layers, "entries": num_layers}


def test_run_returns_stats_when_asked(emu_device, layers):
    ttnn = import_ttnn()
    seed, tt, stored = layers
    wrapper = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    wrapper.plan(**_shape_kwargs(kv_dtype=ttnn.bfloat8_b))
    q, k, v = tt[0]
    out, run = wrapper.run(q, k, v, cur_pos=[100, 5], return_stats=True)
    assert run is wrapper.last_run and run.plan is wrapper.decode_plan
    assert run.stats.pages_read(k) and run.stats.pages_read(v), "the emulator's statistics of the run"
    check_close(
        emu_device.to_torch(out).float(),
        golden.sdpa_decode(*stored[0], cur_pos=[100, 5]),
        "bfloat8_b",
        seed,
        "host cur_pos",
    )


def test_module_functions_share_the_wrapper_plan(emu_device, layers):
    """The module-level op is a convenience over the same machinery: a call of the planned shape finds the plan."""
    ttnn = import_ttnn()
    seed, tt, stored = layers
    clear_program_cache()
    wrapper = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    wrapper.plan(**_shape_kwargs(kv_dtype=ttnn.bfloat8_b))
    pos = _positions_tensor(emu_device, [150, 60])
    out, run = op_module.scaled_dot_product_attention_decode(
        *tt[1], cur_pos_tensor=pos, program_config=CONFIG, return_stats=True
    )
    assert run.plan is wrapper.decode_plan
    assert cache_stats()["plans"] == 1 and cache_stats()["plan_hits"] == 1, tag(seed)
    check_close(
        emu_device.to_torch(out).float(),
        golden.sdpa_decode(*stored[1], cur_pos=[150, 60]),
        "bfloat8_b",
        seed,
        "module-level call",
    )


def test_paged_and_latent_plans_run(emu_device):
    """A paged plan runs with a device page table; a multi-latent plan runs with no v."""
    ttnn = import_ttnn()
    seed = seed_for("test_paged_and_latent_plans_run")
    gen = generator(seed)
    block_size, blocks_per_user, num_blocks = 32, 8, 20
    q = torch.randn(1, B, NQ, D, generator=gen)
    k, v = (torch.randn(num_blocks, NKV, block_size, D, generator=gen) for _ in range(2))
    table = torch.randperm(num_blocks, generator=gen)[: B * blocks_per_user].reshape(B, blocks_per_user).to(torch.int32)
    tt_table = emu_device.from_torch(table, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    paged = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    paged.plan(**_shape_kwargs(kv_len=None, block_size=block_size, max_blocks_per_user=blocks_per_user))
    positions = [blocks_per_user * block_size - 1, 70]
    out = paged.run(
        _to_device(emu_device, q),
        _to_device(emu_device, k),
        _to_device(emu_device, v),
        cur_pos_tensor=_positions_tensor(emu_device, positions),
        page_table_tensor=tt_table,
    )
    stored = [golden.quantize_like_device(x, "bfloat16") for x in (q, k, v)]
    expected = golden.sdpa_decode(*stored, cur_pos=positions, page_table=table)
    check_close(emu_device.to_torch(out).float(), expected, "bfloat16", seed, "paged")

    head_dim_v = 32
    latent = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    latent.plan(**_shape_kwargs(n_kv_heads=1, v_from_k=True, v_head_dim=head_dim_v))
    q, cache = torch.randn(1, B, NQ, D, generator=gen), torch.randn(B, 1, S, D, generator=gen)
    out = latent.run(_to_device(emu_device, q), _to_device(emu_device, cache), cur_pos=[17, 250])
    stored_q, stored_cache = golden.quantize_like_device(q, "bfloat16"), golden.quantize_like_device(cache, "bfloat16")
    expected = golden.sdpa_decode(stored_q, stored_cache, stored_cache[..., :head_dim_v], cur_pos=[17, 250])
    check_close(emu_device.to_torch(out).float(), expected, "bfloat16", seed, "multi-latent")


# ---- a run that does not match its plan fails before anything runs, naming the argument ------------------------


def _mismatches(device):
    """(run arguments that differ from the plan, the error's start). Built lazily: tensors need the device."""
    ttnn = import_ttnn()
    gen = generator(seed_for("test_wrapper._mismatches"))

    def t(*shape, dtype=None):
        return _to_device(device, torch.randn(*shape, generator=gen), dtype)

    q, k, v = t(1, B, NQ, D), t(B, NKV, S, D, dtype=ttnn.bfloat8_b), t(B, NKV, S, D, dtype=ttnn.bfloat8_b)
    pos = dict(cur_pos=[3, 4])
    return {
        "batch": (
            (t(1, 1, NQ, D), t(1, NKV, S, D, dtype=ttnn.bfloat8_b), t(1, NKV, S, D, dtype=ttnn.bfloat8_b)),
            dict(cur_pos=[3]),
            r"q: batch=1 does not match the plan's batch=2",
        ),
        "q heads": ((t(1, B, 2 * NQ, D), k, v), pos, r"q: n_q_heads=16 does not match the plan's n_q_heads=8"),
        "cache length": (
            (q, t(B, NKV, 2 * S, D, dtype=ttnn.bfloat8_b), t(B, NKV, 2 * S, D, dtype=ttnn.bfloat8_b)),
            pos,
            r"k: kv_len=512 does not match the plan's kv_len=256",
        ),
        "k dtype": (
            (q, t(B, NKV, S, D), v),
            pos,
            r"k: k_dtype='bfloat16' does not match the plan's k_dtype='bfloat8_b'",
        ),
        "v dtype": (
            (q, k, t(B, NKV, S, D)),
            pos,
            r"v: v_dtype='bfloat16' does not match the plan's v_dtype='bfloat8_b'",
        ),
        "sink": (
            (q, k, v),
            dict(pos, attention_sink=t(1, NQ)),
            r"attention_sink: has_attention_sink=True does not match the plan's has_attention_sink=False",
        ),
        "page table": (
            (q, k, v),
            dict(pos, page_table_tensor=torch.zeros(B, 8, dtype=torch.int32)),
            r"page_table_tensor: expected None \(the plan is not paged\)",
        ),
        "output dtype": (
            (q, k, v),
            dict(pos, output_tensor=device.allocate([1, B, NQ, D], ttnn.float32, ttnn.TILE_LAYOUT)),
            r"output_tensor: out_dtype='float32' does not match the plan's out_dtype='bfloat16'",
        ),
        "mla v": ((q, k, v), pos, None),  # checked against a latent plan below
    }


MISMATCHES = ["batch", "q heads", "cache length", "k dtype", "v dtype", "sink", "page table", "output dtype"]


@pytest.mark.parametrize("name", MISMATCHES)
def test_run_that_does_not_match_the_plan_is_refused(emu_device, name):
    ttnn = import_ttnn()
    (q, k, v), kwargs, message = _mismatches(emu_device)[name]
    wrapper = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    wrapper.plan(**_shape_kwargs(kv_dtype=ttnn.bfloat8_b))
    before = cache_stats()["programs"] + cache_stats()["program_hits"]
    with pytest.raises(ValueError, match=message):
        wrapper.run(q, k, v, **kwargs)
    assert cache_stats()["programs"] + cache_stats()["program_hits"] == before, "a refused run reached the program"
    assert wrapper.last_run is None


def test_run_before_plan_and_v_for_a_latent_plan_are_refused(emu_device):
    (q, k, v), kwargs, _ = _mismatches(emu_device)["mla v"]
    wrapper = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    with pytest.raises(RuntimeError, match=r"call plan\(...\) first"):
        wrapper.run(q, k, v, **kwargs)
    wrapper.plan(**_shape_kwargs(n_kv_heads=1, v_from_k=True, v_head_dim=32))
    with pytest.raises(ValueError, match=r"v: expected None: the plan takes V from K"):
        wrapper.run(q, k, v, **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(kv_len=0), ValueError, r"kv_len=0: expected a positive int"),
        (dict(kv_len=512, block_size=32, max_blocks_per_user=8), ValueError, r"kv_len=512: a paged cache's kv_len is"),
        (dict(head_dim=100), ValueError, r"head_dim=100: expected a multiple of 32"),
        (dict(n_q_heads=6, n_kv_heads=4), ValueError, r"n_q_heads=6: expected a multiple of n_kv_heads=4"),
        (dict(kv_dtype="bfloat16"), TypeError, r"kv_dtype='bfloat16' \(str\): expected a ttnn.DataType"),
        (dict(sliding_window_size=64, is_causal=False), ValueError, r"sliding_window_size: only supported with"),
        (dict(attn_mask_heads=1), ValueError, r"attn_mask_heads: must be 0 when is_causal=True"),
        (dict(scale=-1.0), ValueError, r"scale=-1.0: expected a positive finite number"),
        (dict(max_cur_pos=256), ValueError, r"max_cur_pos=256: expected -1..255"),
        # what run() would refuse, plan() refuses (issue 22)
        (dict(q_len=9), ValueError, r"q_len=9: expected 1..8 query tokens per user"),
        (dict(q_len=100), ValueError, r"q_len=100: expected 1..8 query tokens per user"),
        (dict(q_len=0), ValueError, r"q_len=0: expected 1..8 query tokens per user"),
        (dict(q_len=2.0), TypeError, r"q_len=2.0 \(float\): expected an int in 1..8"),
        (
            dict(sliding_window_size=2**32 + 5),
            ValueError,
            r"sliding_window_size=4294967301: expected a positive int or None \(at most 2\*\*32 - 1",
        ),
        (dict(scale=1e39), ValueError, r"scale=1e\+39: expected a positive finite number in \[1e-27, 1e\+20\]"),
        (dict(scale=1e-40), ValueError, r"scale=1e-40: expected a positive finite number in \[1e-27, 1e\+20\]"),
        (dict(v_dtype=import_ttnn().float32), ValueError, r"v_dtype=DataType.FLOAT32: expected one of ttnn.bfloat16"),
        (
            dict(attn_mask_dtype=import_ttnn().float32, is_causal=False, attn_mask_heads=1),
            ValueError,
            r"attn_mask_dtype=DataType.FLOAT32: expected one of ttnn.bfloat16, ttnn.bfloat8_b",
        ),
        (dict(dtype=import_ttnn().bfloat4_b), ValueError, r"dtype=DataType.BFLOAT4_B: expected one of ttnn.bfloat16"),
    ],
)
def test_plan_rejects_bad_arguments(emu_device, kwargs, error, message):
    wrapper = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    with pytest.raises(error, match=message):
        wrapper.plan(**_shape_kwargs(**kwargs))
    assert wrapper.decode_plan is None


def test_run_names_the_wrapper_s_device(emu_device, other_emu_device):
    """Tensors of another device are refused naming the wrapper's device (check_call then holds every other tensor
    to q's), before anything runs."""
    wrapper = FlashDecodeWrapper(emu_device, program_config=CONFIG)
    wrapper.plan(**_shape_kwargs())
    q, k, v = (
        _to_device(other_emu_device, torch.randn(*shape)) for shape in ((1, B, NQ, D), (B, NKV, S, D), (B, NKV, S, D))
    )
    with pytest.raises(
        ValueError,
        match=r"q: lives on a different device than the wrapper \(got a tensor on .*"
        r"expected the wrapper's",
    ):
        wrapper.run(q, k, v, cur_pos=[9, 99])
    with pytest.raises(TypeError, match="q: expected a ttnn or emulator device tensor, got NoneType"):
        wrapper.run(None, k, v, cur_pos=[9, 99])


def test_wrapper_needs_a_device():
    with pytest.raises(TypeError, match=r"device='cpu' \(str\): expected a ttnn device or an emulator device"):
        FlashDecodeWrapper("cpu")


# ---- the cache dies with the device ---------------------------------------------------------------------------


def test_cache_dies_with_the_device():
    import ttemu

    ttnn = import_ttnn()
    seed = seed_for("test_cache_dies_with_the_device")
    gen = generator(seed)
    dev = ttemu.open_device(board="n150")
    wrapper = FlashDecodeWrapper(dev, program_config=CONFIG)
    wrapper.plan(**_shape_kwargs(dtype=ttnn.bfloat8_b))  # a block-float output: a staging tensor too
    q, k, v = (
        _to_device(dev, torch.randn(*shape, generator=gen)) for shape in ((1, B, NQ, D), (B, NKV, S, D), (B, NKV, S, D))
    )
    wrapper.run(q, k, v, cur_pos=[9, 99])
    cache = device_cache(dev)
    stats = cache.stats()
    assert (stats["programs_cached"], stats["staging_cached"], stats["plans_cached"]) == (2, 1, 1), stats
    dev.close()
    assert cache.closed and cache.stats()["programs_cached"] == 0 and cache.stats()["staging_cached"] == 0
    with pytest.raises(RuntimeError, match=r"the wrapper's device was closed; make a new wrapper"):
        wrapper.run(q, k, v, cur_pos=[9, 99])
    closed, cache_ref = weakref.ref(dev), weakref.ref(cache)
    del dev, wrapper, cache, q, k, v
    gc.collect()
    assert closed() is None and cache_ref() is None, "the cache keeps a closed device alive, or outlives it"
