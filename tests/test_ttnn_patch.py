"""ttflashdecode.patch_ttnn(): ttnn.transformer's decode-attention ops routed to this package.

Three kinds of test: patching and restoring (attribute identity); argument mapping, checked with a spy in place of
the package's op (cheap, no emulator); and upstream's call forms of the plain and paged ops run end to end on the
emulator against the golden. The MLA functions' patched forms run end to end in tests/test_drop_in_forms.py, the home
of the MLA behaviour (V read from K, the cache read once).
"""

from __future__ import annotations

import types

import pytest
import torch

import ttflashdecode
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden, ttnn_patch
from ttflashdecode.ops.decode import api as op_module

NAMES = tuple(ttnn_patch.REPLACEMENTS)

# The decode harness's bfloat16 thresholds against the golden on the same stored inputs.
PCC_MIN, MAX_ABS_ERR = 0.999, 0.08


@pytest.fixture
def transformer():
    return import_ttnn().transformer


@pytest.fixture(autouse=True)
def no_leaked_patch(transformer):
    """Every test starts and ends with upstream's ops in place."""
    originals = {name: getattr(transformer, name) for name in NAMES}
    assert not ttnn_patch.is_patched(), "a previous test left ttnn patched"
    yield
    leaked = [name for name in NAMES if getattr(transformer, name) is not originals[name]]
    assert not leaked and not ttnn_patch.is_patched(), f"test left ttnn.transformer patched: {leaked}"


def _state(transformer, originals) -> str:
    """'ours', 'upstream' or a list of the mixed attributes."""
    ours = [getattr(transformer, n) is ttnn_patch.REPLACEMENTS[n] for n in NAMES]
    upstream = [getattr(transformer, n) is originals[n] for n in NAMES]
    if all(ours):
        return "ours"
    if all(upstream):
        return "upstream"
    return f"mixed: {dict(zip(NAMES, ours))}"


# ---- patching and restoring -----------------------------------------------------------------------------------


def test_context_manager_patches_inside_and_restores_after(transformer):
    originals = {name: getattr(transformer, name) for name in NAMES}
    assert _state(transformer, originals) == "upstream"
    with ttflashdecode.patch_ttnn() as handle:
        assert _state(transformer, originals) == "ours"
        assert ttnn_patch.is_patched() and handle.active
    assert _state(transformer, originals) == "upstream"
    assert not handle.active


def test_context_manager_restores_after_an_exception(transformer):
    originals = {name: getattr(transformer, name) for name in NAMES}
    with pytest.raises(RuntimeError, match="boom"):
        with ttflashdecode.patch_ttnn():
            raise RuntimeError("boom")
    assert _state(transformer, originals) == "upstream"


def test_function_form_stays_patched_until_restore(transformer):
    originals = {name: getattr(transformer, name) for name in NAMES}
    handle = ttflashdecode.patch_ttnn()
    try:
        assert _state(transformer, originals) == "ours"
    finally:
        handle.restore()
    assert _state(transformer, originals) == "upstream"
    handle.restore()  # a second restore is harmless
    assert _state(transformer, originals) == "upstream"


def test_duplicate_and_nested_patches_do_not_stack_or_lose_the_originals(transformer):
    originals = {name: getattr(transformer, name) for name in NAMES}
    first = ttflashdecode.patch_ttnn()
    second = ttflashdecode.patch_ttnn()
    try:
        assert _state(transformer, originals) == "ours"
        with ttflashdecode.patch_ttnn():
            with ttflashdecode.patch_ttnn():
                assert _state(transformer, originals) == "ours"
            assert _state(transformer, originals) == "ours"
        assert _state(transformer, originals) == "ours", "an inner context exit must not undo the outer patches"
        first.restore()
        first.restore()  # restoring one handle twice must not release another
        assert _state(transformer, originals) == "ours", "second is still active"
    finally:
        second.restore()
        first.restore()
    assert _state(transformer, originals) == "upstream"
    # And once more from scratch: the saved originals are upstream's, not ours.
    with ttflashdecode.patch_ttnn():
        assert _state(transformer, originals) == "ours"
    assert _state(transformer, originals) == "upstream"


# ---- argument mapping (a spy in place of the package's op) -----------------------------------------------------


class Spy:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "spy-result"

    @property
    def only(self):
        assert len(self.calls) == 1, f"expected one call, got {len(self.calls)}"
        return self.calls[0]


@pytest.fixture
def spies(monkeypatch):
    """The package's four ops replaced by spies (the MLA ones set even before they land)."""
    names = (
        "scaled_dot_product_attention_decode",
        "paged_scaled_dot_product_attention_decode",
        "flash_multi_latent_attention_decode",
        "paged_flash_multi_latent_attention_decode",
    )
    spies = {name: Spy() for name in names}
    for name, spy in spies.items():
        monkeypatch.setattr(ttflashdecode, name, spy, raising=False)
    return types.SimpleNamespace(**spies)


def _tensor(last_dim=64):
    return types.SimpleNamespace(shape=(1, 2, 256, last_dim))


Q, K, V, TABLE, POS = object(), object(), _tensor(), object(), object()


def test_upstream_defaults_map_to_the_packages(transformer, spies):
    with ttflashdecode.patch_ttnn():
        assert transformer.scaled_dot_product_attention_decode(Q, K, V, is_causal=False) == "spy-result"
    args, kwargs = spies.scaled_dot_product_attention_decode.only
    assert args == (Q, K, V)
    assert kwargs["cur_pos"] is None, "upstream's cur_pos=[] means not given"
    assert kwargs["share_cache"] is False, "upstream's share_cache=None means False"
    assert kwargs["is_causal"] is False
    assert set(kwargs) == {
        "is_causal",
        "attn_mask",
        "cur_pos",
        "cur_pos_tensor",
        "attention_sink",
        "scale",
        "sliding_window_size",
        "memory_config",
        "program_config",
        "compute_kernel_config",
        "share_cache",
    }


def test_upstream_keyword_names_pass_through(transformer, spies):
    given = dict(
        is_causal=True,
        attn_mask=None,
        cur_pos=[5, 9],
        cur_pos_tensor=None,
        attention_sink=object(),
        scale=0.5,
        sliding_window_size=64,
        memory_config=object(),
        program_config=object(),
        compute_kernel_config=object(),
        share_cache=True,
    )
    with ttflashdecode.patch_ttnn():
        transformer.scaled_dot_product_attention_decode(input_tensor_q=Q, input_tensor_k=K, input_tensor_v=V, **given)
        transformer.paged_scaled_dot_product_attention_decode(
            input_tensor_q=Q,
            input_tensor_k=K,
            input_tensor_v=V,
            page_table_tensor=TABLE,
            cur_pos_tensor=POS,
            scale=0.25,
            paged_cache_geometry=None,
            cache_position_modulo=None,
            spec_multi_pos_tiles=0,
        )
    args, kwargs = spies.scaled_dot_product_attention_decode.only
    assert args == (Q, K, V) and kwargs == given
    args, kwargs = spies.paged_scaled_dot_product_attention_decode.only
    assert args == (Q, K, V, TABLE)
    assert kwargs["cur_pos_tensor"] is POS and kwargs["scale"] == 0.25 and kwargs["cur_pos"] is None
    assert not {"paged_cache_geometry", "cache_position_modulo", "spec_multi_pos_tiles"} & set(kwargs)


def test_upstream_paged_arguments_pass_through(transformer, spies):
    """paged_cache_geometry, cache_position_modulo and spec_multi_pos_tiles reach the paged op under their names (it
    checks them: tests/test_paged_upstream_args.py); the defaults are not passed."""
    geometry = object()
    with ttflashdecode.patch_ttnn():
        transformer.paged_scaled_dot_product_attention_decode(
            Q,
            K,
            V,
            TABLE,
            cur_pos_tensor=POS,
            paged_cache_geometry=geometry,
            cache_position_modulo=4096,
            spec_multi_pos_tiles=2,
        )
    _, kwargs = spies.paged_scaled_dot_product_attention_decode.only
    assert kwargs["paged_cache_geometry"] is geometry
    assert kwargs["cache_position_modulo"] == 4096 and kwargs["spec_multi_pos_tiles"] == 2


def test_package_extras_pass_through(transformer, spies):
    out, extras = object(), dict(dtype="bf16", validate_device_tensors=True)
    with ttflashdecode.patch_ttnn():
        transformer.scaled_dot_product_attention_decode(Q, K, V, cur_pos=[3], output_tensor=out, **extras)
    _, kwargs = spies.scaled_dot_product_attention_decode.only
    assert kwargs["output_tensor"] is out and kwargs["dtype"] == "bf16" and kwargs["validate_device_tensors"] is True


@pytest.mark.parametrize(
    "op, args, bad, error, named",
    [
        ("scaled_dot_product_attention_decode", (Q, K, V), {"q_chunk_size": 32}, TypeError, ["q_chunk_size"]),
        ("scaled_dot_product_attention_decode", (Q, K, V), {"foo": 1, "bar": 2}, TypeError, ["bar", "foo"]),
        (
            "paged_scaled_dot_product_attention_decode",
            (Q, K, V, TABLE),
            {"is_causual": True},
            TypeError,
            ["is_causual"],
        ),
        ("flash_multi_latent_attention_decode", (Q, K), {}, TypeError, ["head_dim_v"]),
        (
            "flash_multi_latent_attention_decode",
            (Q, K, None, 64),
            {"paged_cache_geometry": None},
            TypeError,
            ["paged_cache_geometry"],
        ),
        (
            "flash_multi_latent_attention_decode",
            (Q, K, _tensor(128), 64),
            {},
            ValueError,
            ["input_tensor_v", "128", "head_dim_v=64"],
        ),
        ("paged_flash_multi_latent_attention_decode", (Q, K, None, 64), {}, TypeError, ["page_table_tensor"]),
        ("paged_flash_multi_latent_attention_decode", (Q, K), {"page_table_tensor": TABLE}, TypeError, ["head_dim_v"]),
        (
            "paged_flash_multi_latent_attention_decode",
            (Q, K, _tensor(32), 64, TABLE),
            {},
            ValueError,
            ["input_tensor_v", "32", "head_dim_v=64"],
        ),
    ],
)
def test_unsupported_arguments_raise_naming_them_before_anything_runs(transformer, spies, op, args, bad, error, named):
    with ttflashdecode.patch_ttnn():
        with pytest.raises(error) as info:
            getattr(transformer, op)(*args, **bad)
    message = str(info.value)
    for name in named:
        assert name in message, f"{op}({bad}): the error must name {name!r}: {message}"
    called = {name: len(spy.calls) for name, spy in vars(spies).items() if spy.calls}
    assert not called, f"{op}({bad}): nothing may run after a refused argument, but {called} ran"


def test_mla_forms_route_to_the_packages_mla_functions(transformer, spies):
    table = TABLE
    with ttflashdecode.patch_ttnn():
        transformer.flash_multi_latent_attention_decode(Q, K, head_dim_v=512, cur_pos=[7, 8])
        transformer.flash_multi_latent_attention_decode(Q, K, None, 512, cur_pos_tensor=POS)
        transformer.flash_multi_latent_attention_decode(
            input_tensor_q=Q, input_tensor_k=K, input_tensor_v=None, head_dim_v=512, scale=0.1
        )
        transformer.paged_flash_multi_latent_attention_decode(Q, K, None, 512, table, cur_pos_tensor=POS)
        transformer.paged_flash_multi_latent_attention_decode(
            input_tensor_q=Q, input_tensor_k=K, head_dim_v=512, page_table_tensor=table, cur_pos_tensor=POS
        )
    calls = spies.flash_multi_latent_attention_decode.calls
    assert [c[0] for c in calls] == [(Q, K)] * 3
    assert all(c[1]["head_dim_v"] == 512 and c[1]["share_cache"] is False for c in calls)
    assert calls[0][1]["cur_pos"] == [7, 8] and calls[1][1]["cur_pos"] is None and calls[2][1]["scale"] == 0.1
    paged = spies.paged_flash_multi_latent_attention_decode.calls
    assert [c[0] for c in paged] == [(Q, K, table)] * 2
    assert all(c[1]["head_dim_v"] == 512 and c[1]["cur_pos_tensor"] is POS for c in paged)
    assert not spies.scaled_dot_product_attention_decode.calls
    assert not spies.paged_scaled_dot_product_attention_decode.calls


def test_model_code_call_forms(transformer, spies):
    """The exact forms of tt-metal model code: tt_transformers / gpt-oss (q, k, v positional, page_table_tensor and
    the rest by keyword) and DeepSeek-V3's MLA decode (q, kvpe_cache positional, head_dim_v by keyword)."""
    sink, pc, ckc, mem = object(), object(), object(), object()
    with ttflashdecode.patch_ttnn():
        transformer.paged_scaled_dot_product_attention_decode(
            Q,
            K,
            V,
            cur_pos_tensor=POS,
            sliding_window_size=128,
            attention_sink=sink,
            page_table_tensor=TABLE,
            scale=0.125,
            program_config=pc,
            compute_kernel_config=ckc,
            memory_config=mem,
        )
        transformer.scaled_dot_product_attention_decode(
            Q,
            K,
            V,
            cur_pos_tensor=POS,
            is_causal=True,
            attn_mask=None,
            attention_sink=sink,
            scale=0.125,
            program_config=pc,
            compute_kernel_config=ckc,
            memory_config=mem,
        )
        transformer.paged_flash_multi_latent_attention_decode(
            Q,
            K,
            page_table_tensor=TABLE,
            cur_pos_tensor=POS,
            head_dim_v=512,
            scale=0.1,
            program_config=pc,
            compute_kernel_config=ckc,
            memory_config=mem,
        )
    args, kwargs = spies.paged_scaled_dot_product_attention_decode.only
    assert args == (Q, K, V, TABLE) and kwargs["attention_sink"] is sink and kwargs["sliding_window_size"] == 128
    assert kwargs["program_config"] is pc and kwargs["compute_kernel_config"] is ckc and kwargs["memory_config"] is mem
    args, kwargs = spies.scaled_dot_product_attention_decode.only
    assert args == (Q, K, V) and kwargs["cur_pos_tensor"] is POS and kwargs["cur_pos"] is None
    args, kwargs = spies.paged_flash_multi_latent_attention_decode.only
    assert args == (Q, K, TABLE) and kwargs["head_dim_v"] == 512 and kwargs["memory_config"] is mem


def test_mla_with_an_explicit_v_routes_to_the_plain_ops(transformer, spies):
    v = _tensor(512)
    with ttflashdecode.patch_ttnn():
        transformer.flash_multi_latent_attention_decode(Q, K, v, 512, cur_pos=[1])
        transformer.paged_flash_multi_latent_attention_decode(Q, K, v, 512, TABLE, cur_pos_tensor=POS)
    args, kwargs = spies.scaled_dot_product_attention_decode.only
    assert args == (Q, K, v) and kwargs["cur_pos"] == [1] and "head_dim_v" not in kwargs
    args, kwargs = spies.paged_scaled_dot_product_attention_decode.only
    assert args == (Q, K, v, TABLE) and kwargs["cur_pos_tensor"] is POS and "head_dim_v" not in kwargs
    assert not spies.flash_multi_latent_attention_decode.calls


# ---- upstream's call forms on the emulator, against the golden -------------------------------------------------

B, N_Q, N_KV, D, S, BLOCK = 2, 8, 2, 64, 256, 64
CUR_POS = [200, 37]


def _check(out, expected, what: str, seed: int) -> None:
    assert out.shape == expected.shape, f"{what} (seed {seed}): shape {tuple(out.shape)} != {tuple(expected.shape)}"
    pcc, err = golden.pcc(out, expected), golden.max_abs_error(out, expected)
    assert pcc >= PCC_MIN, f"{what} (seed {seed}): PCC {pcc:.6f} < {PCC_MIN}"
    assert err <= MAX_ABS_ERR, f"{what} (seed {seed}): max |error| {err:.4f} > {MAX_ABS_ERR}"


def _stored(x):
    return golden.quantize_like_device(x, "bfloat16")


def _upload(dev, ttnn, x, dtype=None):
    return dev.from_torch(x, dtype=dtype or ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)


def _decode_calls() -> int:
    """Plans made or found by ttflashdecode's op so far (each call it takes adds one)."""
    stats = op_module.cache_stats()
    return stats["plans"] + stats["plan_hits"]


def _positions(dev, ttnn, values):
    return dev.from_torch(torch.tensor(values, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


@pytest.mark.parametrize("form", ["keywords", "positional"])
def test_plain_op_upstream_forms_match_golden(emu_device, transformer, form):
    ttnn, seed = import_ttnn(), 1234
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*shape, generator=gen) for shape in ((1, B, N_Q, D), (B, N_KV, S, D), (B, N_KV, S, D)))
    tq, tk, tv = (_upload(emu_device, ttnn, x) for x in (q, k, v))
    before = _decode_calls()
    with ttflashdecode.patch_ttnn():
        if form == "keywords":
            out = transformer.scaled_dot_product_attention_decode(
                input_tensor_q=tq,
                input_tensor_k=tk,
                input_tensor_v=tv,
                cur_pos=CUR_POS,
                scale=0.125,
                share_cache=None,
            )
        else:
            out = transformer.scaled_dot_product_attention_decode(
                tq, tk, tv, cur_pos_tensor=_positions(emu_device, ttnn, CUR_POS)
            )
    assert _decode_calls() > before, f"{form}: the call did not reach ttflashdecode's op"
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=CUR_POS, scale=0.125)
    _check(emu_device.to_torch(out).float(), expected, f"plain op, {form}", seed)


def test_plain_op_upstream_non_causal_default_cur_pos(emu_device, transformer):
    """Upstream's cur_pos default ([]) with is_causal=False: the whole cache."""
    ttnn, seed = import_ttnn(), 99
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*shape, generator=gen) for shape in ((1, B, N_Q, D), (B, N_KV, S, D), (B, N_KV, S, D)))
    with ttflashdecode.patch_ttnn():
        out = transformer.scaled_dot_product_attention_decode(
            *(_upload(emu_device, ttnn, x) for x in (q, k, v)), is_causal=False
        )
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), is_causal=False)
    _check(emu_device.to_torch(out).float(), expected, "plain op, non-causal", seed)


def _paged_inputs(seed: int, v_dim: int | None = D):
    gen = torch.Generator().manual_seed(seed)
    per_user = S // BLOCK
    num_blocks = B * per_user + 2
    table = torch.randperm(num_blocks, generator=gen)[: B * per_user].reshape(B, per_user).to(torch.int32)
    q = torch.randn(1, B, N_Q, D, generator=gen)
    k = torch.randn(num_blocks, N_KV, BLOCK, D, generator=gen)
    v = None if v_dim is None else torch.randn(num_blocks, N_KV, BLOCK, v_dim, generator=gen)
    return q, k, v, table


@pytest.mark.parametrize("form", ["keywords", "positional", "model"])
def test_paged_op_upstream_forms_match_golden(emu_device, transformer, form):
    ttnn, seed = import_ttnn(), 4321
    q, k, v, table = _paged_inputs(seed)
    tq, tk, tv = (_upload(emu_device, ttnn, x) for x in (q, k, v))
    tt_table = emu_device.from_torch(table, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)
    pos = _positions(emu_device, ttnn, CUR_POS)
    before = _decode_calls()
    with ttflashdecode.patch_ttnn():
        if form == "keywords":
            out = transformer.paged_scaled_dot_product_attention_decode(
                input_tensor_q=tq,
                input_tensor_k=tk,
                input_tensor_v=tv,
                page_table_tensor=tt_table,
                cur_pos_tensor=pos,
                is_causal=True,
                spec_multi_pos_tiles=0,
            )
        elif form == "positional":
            out = transformer.paged_scaled_dot_product_attention_decode(tq, tk, tv, tt_table, cur_pos_tensor=pos)
        else:  # tt_transformers: q, k, v positional, the page table by keyword after cur_pos_tensor
            out = transformer.paged_scaled_dot_product_attention_decode(
                tq, tk, tv, cur_pos_tensor=pos, page_table_tensor=tt_table, scale=D**-0.5
            )
    assert _decode_calls() > before, f"{form}: the call did not reach ttflashdecode's op"
    expected = golden.sdpa_decode(_stored(q), _stored(k), _stored(v), cur_pos=CUR_POS, page_table=table)
    _check(emu_device.to_torch(out).float(), expected, f"paged op, {form}", seed)
