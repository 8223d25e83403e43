"""Route ttnn's decode-attention ops to ttflashdecode, so unchanged model code switches with one line.

    import ttflashdecode
    ttflashdecode.patch_ttnn()                 # from now on (until .restore())
    with ttflashdecode.patch_ttnn():           # or only inside the block
        out = ttnn.transformer.scaled_dot_product_attention_decode(q, k, v, cur_pos_tensor=pos)

While patched, these attributes of ``ttnn.transformer`` are the functions of this module, which take upstream's exact
signatures (printed from the ttnn 0.81.1 wheel's ``__call__.__doc__``) and call this package:

============================================================  ==================================================
upstream (ttnn.transformer.*)                                 ttflashdecode
============================================================  ==================================================
``scaled_dot_product_attention_decode(                        ``scaled_dot_product_attention_decode(q, k, v, ...)``
input_tensor_q, input_tensor_k, input_tensor_v, *, ...)``
``paged_scaled_dot_product_attention_decode(                  ``paged_scaled_dot_product_attention_decode(
input_tensor_q, input_tensor_k, input_tensor_v,               q, k, v, page_table_tensor, ...)``
page_table_tensor, *, ...)``
``flash_multi_latent_attention_decode(input_tensor_q,         ``flash_multi_latent_attention_decode(q, k, *,
input_tensor_k, input_tensor_v=None, head_dim_v, *, ...)``    head_dim_v, ...)``; with a V tensor (not None):
                                                              the plain op with that V (its last dim must be
                                                              head_dim_v)
``paged_flash_multi_latent_attention_decode(input_tensor_q,   ``paged_flash_multi_latent_attention_decode(q, k,
input_tensor_k, input_tensor_v=None, head_dim_v,              page_table_tensor, *, head_dim_v, ...)``; with a V
page_table_tensor, *, ...)``                                  tensor: the paged op with that V
``cur_pos=[]`` (upstream's "not given")                       ``cur_pos=None``
``share_cache=None``                                          ``share_cache=False``
``is_causal``, ``attn_mask``, ``cur_pos_tensor``,             the same names, passed through unchanged (and
``attention_sink``, ``scale``, ``sliding_window_size``,       checked by the op before any device work)
``memory_config``, ``program_config``,
``compute_kernel_config``
paged ``paged_cache_geometry`` (None), ``cache_position_      passed on under the same names (upstream's
modulo`` (None), ``spec_multi_pos_tiles`` (0)                 semantics; see the paged op's docstring)
this package's own extras: ``output_tensor``, ``dtype``,      passed through (upstream has no such arguments)
``validate_device_tensors``, ``return_stats``; ``cur_pos``
and ``share_cache`` where upstream's variant lacks them
any other keyword                                             TypeError naming it
============================================================  ==================================================

The cache ops every model calls each step (and at prefill) are routed too, with upstream's signatures:

===============================================================  ==================================================
upstream                                                         ttflashdecode
===============================================================  ==================================================
``ttnn.experimental.paged_update_cache(cache_tensor,             ``paged_update_cache`` (same arguments; input
input_tensor, *, update_idxs, update_idxs_tensor, share_cache,   ``[1, b, n_kv_heads, d]`` DRAM/L1 interleaved or L1
page_table, batch_offset, compute_kernel_config, mesh_coords,    height-sharded one user per core)
block_size, num_kv_heads, cache_position_modulo)``
``ttnn.experimental.paged_fused_update_cache(cache_tensor1,      ``paged_fused_update_cache`` (same arguments)
input_tensor1, cache_tensor2, input_tensor2, *, ...)``
``ttnn.experimental.paged_fill_cache(cache_tensor,               ``paged_fill_cache`` (same arguments)
input_tensor, page_table, *, batch_idx_tensor, batch_idx, ...)``
``ttnn.update_cache(cache, input, update_idx, *, batch_offset,   ``update_cache`` (same arguments; upstream's input
compute_kernel_config)``                                         ``[1, n_kv_heads, b padded to 32, d]``)
``ttnn.fill_cache(cache_tensor, input_tensor, batch_idx, *,      ``fill_cache`` (same arguments)
update_idx)``
===============================================================  ==================================================

``cache_position_modulo`` (a ring cache: positions wrapped by the kernels before the page-table lookup) and
``paged_fill_cache``'s ``valid_seq_len_tensor`` are upstream's. Arguments the package does not implement
(``share_cache``, ``mesh_coords``, ``block_size``, ``num_kv_heads``) must keep upstream's default: ValueError naming
them otherwise.

While patched, ttnn's own functions also meet emulator tensors sensibly (:mod:`ttflashdecode.emulator_calls`):
``ttnn.from_torch(..., device=<emulator device>)``, ``ttnn.to_torch``, ``ttnn.deallocate``, ``ttnn.to_memory_config``,
``ttnn.copy_host_to_device_tensor`` and the mesh mappers go to the emulator; any other ttnn function that fails on an
emulator tensor raises ``EmulatorTensorError`` naming the emulator's methods instead of a binding TypeError.

Nothing falls back to upstream: a call this package cannot serve raises before anything runs. The MLA functions are
looked up on :mod:`ttflashdecode` at call time (they may land after this module).

Tensor arguments are passed through unchanged: the op takes upstream's tensor forms as they are, among them the
``[padded q heads, 32]`` attention sink (head h's unscaled value at row h, column 0) and the ``[b, 1, q heads,
kv_len]`` decode mask, besides its own (see the README's "Coming from ttnn.transformer").

Patching is reference counted: the first :func:`patch_ttnn` saves upstream's attributes and installs ours;
further calls only count; the attributes are put back when every handle has been restored (``.restore()`` or the
end of its ``with`` block). A handle restores at most once, so duplicate or nested patches never stack or lose the
originals.
"""

from __future__ import annotations

import threading

from ttflashdecode.backend import import_ttnn

__all__ = [
    "patch_ttnn",
    "is_patched",
    "TtnnPatch",
    "scaled_dot_product_attention_decode",
    "paged_scaled_dot_product_attention_decode",
    "flash_multi_latent_attention_decode",
    "paged_flash_multi_latent_attention_decode",
    "paged_update_cache",
    "paged_fused_update_cache",
    "paged_fill_cache",
    "update_cache",
    "fill_cache",
]

# Keywords this package takes that upstream's signatures do not have; passed through as they are.
_PACKAGE_EXTRAS = frozenset({"output_tensor", "dtype", "validate_device_tensors", "return_stats"})


def _package():
    import ttflashdecode  # noqa: PLC0415 - the package imports this module

    return ttflashdecode


def _check_extras(op: str, extra: dict, allowed=_PACKAGE_EXTRAS) -> None:
    unknown = sorted(set(extra) - allowed)
    if unknown:
        raise TypeError(
            f"ttnn.transformer.{op} (patched by ttflashdecode): unsupported argument(s) {', '.join(unknown)}; "
            f"expected upstream's arguments or ttflashdecode's {', '.join(sorted(allowed))}"
        )


# The tensors upstream's signatures take before their keywords, handed on positionally (head_dim_v by keyword).
_POSITIONAL = frozenset({"input_tensor_q", "input_tensor_k", "input_tensor_v", "page_table_tensor", "head_dim_v"})
# Upstream's paged-only arguments and their "not given" values: passed on only when given, so the op's defaults
# are upstream's (the op checks them before anything runs, naming the argument).
_PAGED_UNSET = {"paged_cache_geometry": None, "cache_position_modulo": None, "spec_multi_pos_tiles": 0}


def _keywords(op: str, arguments: dict, required: tuple[str, ...] = ()) -> dict:
    """The keywords to call the package's function with, from a replacement's ``arguments`` (its ``locals()`` taken
    first thing: upstream's signature is the one place they are spelled). Upstream's "not given" defaults become the
    package's: ``cur_pos=[]`` -> None, ``share_cache=None`` -> False (any other value is passed on as given, the op
    refuses a non-bool); the package's extras (``**extra``) are checked and passed through."""
    _require(op, **{name: arguments[name] for name in required})
    extra = arguments["extra"]
    _check_extras(op, extra)
    options = {name: value for name, value in arguments.items() if name not in _POSITIONAL and name != "extra"}
    for name, unset in _PAGED_UNSET.items():
        if name in options and (options[name] is None if unset is None else options[name] == unset):
            del options[name]
    cur_pos = options["cur_pos"]
    if isinstance(cur_pos, (list, tuple)) and len(cur_pos) == 0:
        options["cur_pos"] = None
    if options["share_cache"] is None:
        options["share_cache"] = False
    return {**options, **extra}


def _mla_v_route(op: str, input_tensor_v, head_dim_v) -> None:
    """Checks for an MLA call that passes its own V: routed to the plain op, so V's head dim must be head_dim_v."""
    v_dim = int(input_tensor_v.shape[-1])
    if v_dim != head_dim_v:
        raise ValueError(
            f"ttnn.transformer.{op} (patched by ttflashdecode): input_tensor_v's last dim is {v_dim} but "
            f"head_dim_v={head_dim_v!r}; they must be equal"
        )


def _mla_function(name: str):
    """The package's MLA entry point, looked up at call time (the package imports this module)."""
    return getattr(_package(), name)


def _require(op: str, **arguments) -> None:
    missing = [name for name, value in arguments.items() if value is None]
    if missing:
        raise TypeError(
            f"ttnn.transformer.{op} (patched by ttflashdecode): missing required argument(s) {', '.join(missing)}"
        )


# ---- the replacements: upstream's signatures ------------------------------------------------------------------


def scaled_dot_product_attention_decode(
    input_tensor_q,
    input_tensor_k,
    input_tensor_v,
    *,
    is_causal=True,
    attn_mask=None,
    cur_pos=(),
    cur_pos_tensor=None,
    attention_sink=None,
    scale=None,
    sliding_window_size=None,
    memory_config=None,
    program_config=None,
    compute_kernel_config=None,
    share_cache=None,
    **extra,
):
    kwargs = _keywords("scaled_dot_product_attention_decode", locals())
    return _package().scaled_dot_product_attention_decode(input_tensor_q, input_tensor_k, input_tensor_v, **kwargs)


def paged_scaled_dot_product_attention_decode(
    input_tensor_q,
    input_tensor_k,
    input_tensor_v,
    page_table_tensor,
    *,
    is_causal=True,
    attn_mask=None,
    cur_pos_tensor=None,
    attention_sink=None,
    scale=None,
    sliding_window_size=None,
    memory_config=None,
    program_config=None,
    compute_kernel_config=None,
    paged_cache_geometry=None,
    cache_position_modulo=None,
    spec_multi_pos_tiles=0,
    cur_pos=(),
    share_cache=None,
    **extra,
):
    kwargs = _keywords("paged_scaled_dot_product_attention_decode", locals())
    return _package().paged_scaled_dot_product_attention_decode(
        input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor, **kwargs
    )


def flash_multi_latent_attention_decode(
    input_tensor_q,
    input_tensor_k,
    input_tensor_v=None,
    head_dim_v=None,
    *,
    is_causal=True,
    attn_mask=None,
    cur_pos=(),
    cur_pos_tensor=None,
    attention_sink=None,
    scale=None,
    sliding_window_size=None,
    memory_config=None,
    program_config=None,
    compute_kernel_config=None,
    share_cache=None,
    **extra,
):
    # first thing: locals() is then the arguments alone
    kwargs = _keywords("flash_multi_latent_attention_decode", locals(), required=("head_dim_v",))
    op = "flash_multi_latent_attention_decode"
    if input_tensor_v is not None:
        _mla_v_route(op, input_tensor_v, head_dim_v)
        return _package().scaled_dot_product_attention_decode(input_tensor_q, input_tensor_k, input_tensor_v, **kwargs)
    return _mla_function(op)(input_tensor_q, input_tensor_k, head_dim_v=head_dim_v, **kwargs)


def paged_flash_multi_latent_attention_decode(
    input_tensor_q,
    input_tensor_k,
    input_tensor_v=None,
    head_dim_v=None,
    page_table_tensor=None,
    *,
    is_causal=True,
    attn_mask=None,
    cur_pos_tensor=None,
    attention_sink=None,
    scale=None,
    sliding_window_size=None,
    memory_config=None,
    program_config=None,
    compute_kernel_config=None,
    cur_pos=(),
    share_cache=None,
    **extra,
):
    # first thing: locals() is then the arguments alone
    kwargs = _keywords("paged_flash_multi_latent_attention_decode", locals(), ("head_dim_v", "page_table_tensor"))
    op = "paged_flash_multi_latent_attention_decode"
    if input_tensor_v is not None:
        _mla_v_route(op, input_tensor_v, head_dim_v)
        return _package().paged_scaled_dot_product_attention_decode(
            input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor, **kwargs
        )
    return _mla_function(op)(input_tensor_q, input_tensor_k, page_table_tensor, head_dim_v=head_dim_v, **kwargs)


REPLACEMENTS = {
    fn.__name__: fn
    for fn in (
        scaled_dot_product_attention_decode,
        paged_scaled_dot_product_attention_decode,
        flash_multi_latent_attention_decode,
        paged_flash_multi_latent_attention_decode,
    )
}


# ---- the cache ops: upstream's signatures (ttnn 0.81.1's nanobind arguments) -----------------------------------


def paged_update_cache(
    cache_tensor,
    input_tensor,
    *,
    update_idxs=(),
    update_idxs_tensor=None,
    share_cache=None,
    page_table=None,
    batch_offset=0,
    compute_kernel_config=None,
    mesh_coords=None,
    block_size=None,
    num_kv_heads=None,
    cache_position_modulo=None,
):
    """``ttnn.experimental.paged_update_cache`` -> :func:`ttflashdecode.paged_update_cache` (the same arguments)."""
    return _package().paged_update_cache(
        cache_tensor,
        input_tensor,
        update_idxs=update_idxs,
        update_idxs_tensor=update_idxs_tensor,
        share_cache=share_cache,
        page_table=page_table,
        batch_offset=batch_offset,
        compute_kernel_config=compute_kernel_config,
        mesh_coords=mesh_coords,
        block_size=block_size,
        num_kv_heads=num_kv_heads,
        cache_position_modulo=cache_position_modulo,
    )


def paged_fused_update_cache(
    cache_tensor1,
    input_tensor1,
    cache_tensor2,
    input_tensor2,
    *,
    update_idxs=(),
    update_idxs_tensor=None,
    share_cache=None,
    page_table=None,
    batch_offset=0,
    compute_kernel_config=None,
    mesh_coords=None,
):
    """``ttnn.experimental.paged_fused_update_cache`` -> :func:`ttflashdecode.paged_fused_update_cache`."""
    return _package().paged_fused_update_cache(
        cache_tensor1,
        input_tensor1,
        cache_tensor2,
        input_tensor2,
        update_idxs=update_idxs,
        update_idxs_tensor=update_idxs_tensor,
        share_cache=share_cache,
        page_table=page_table,
        batch_offset=batch_offset,
        compute_kernel_config=compute_kernel_config,
        mesh_coords=mesh_coords,
    )


def paged_fill_cache(
    cache_tensor,
    input_tensor,
    page_table,
    *,
    batch_idx_tensor=None,
    batch_idx=0,
    compute_kernel_config=None,
    mesh_coords=None,
    block_size=None,
    cache_position_modulo=None,
    valid_seq_len_tensor=None,
):
    """``ttnn.experimental.paged_fill_cache`` -> :func:`ttflashdecode.paged_fill_cache` (the same arguments)."""
    return _package().paged_fill_cache(
        cache_tensor,
        input_tensor,
        page_table,
        batch_idx_tensor=batch_idx_tensor,
        batch_idx=batch_idx,
        compute_kernel_config=compute_kernel_config,
        mesh_coords=mesh_coords,
        block_size=block_size,
        cache_position_modulo=cache_position_modulo,
        valid_seq_len_tensor=valid_seq_len_tensor,
    )


def update_cache(cache, input, update_idx, *, batch_offset=0, compute_kernel_config=None):  # noqa: A002 - upstream's name
    """``ttnn.update_cache`` -> :func:`ttflashdecode.update_cache` (the same arguments and upstream's input form
    ``[1, n_kv_heads, b (padded to 32), head_dim]``, every cache user from input row ``batch_offset + u``)."""
    return _package().update_cache(
        cache, input, update_idx, batch_offset=batch_offset, compute_kernel_config=compute_kernel_config
    )


def fill_cache(cache_tensor, input_tensor, batch_idx, *, update_idx=0):
    """``ttnn.fill_cache`` -> :func:`ttflashdecode.fill_cache` (the same arguments)."""
    return _package().fill_cache(cache_tensor, input_tensor, batch_idx, update_idx=update_idx)


# Where each replacement goes: (namespace of ttnn, name) -> function.
ROUTES = {
    **{("transformer", name): fn for name, fn in REPLACEMENTS.items()},
    ("experimental", "paged_update_cache"): paged_update_cache,
    ("experimental", "paged_fused_update_cache"): paged_fused_update_cache,
    ("experimental", "paged_fill_cache"): paged_fill_cache,
    ("", "update_cache"): update_cache,
    ("", "fill_cache"): fill_cache,
}

# ---- patching -------------------------------------------------------------------------------------------------

_MISSING = object()  # an attribute ttnn.transformer did not have (deleted again on restore)
_lock = threading.Lock()
_originals: dict[tuple[str, str], object] = {}  # (namespace, name) -> upstream's attribute, while patched
_active: list[TtnnPatch] = []  # handles not yet restored


class TtnnPatch:
    """Handle returned by :func:`patch_ttnn`: ``restore()`` (or leaving its ``with`` block) releases it; upstream's
    ops come back when the last active handle is released. Restoring twice is harmless."""

    def __init__(self) -> None:
        self.active = True

    def restore(self) -> None:
        with _lock:
            if not self.active:
                return
            self.active = False
            _active.remove(self)
            if _active:
                return
            for (namespace, name), original in _originals.items():
                owner = _namespace(namespace)
                if original is _MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)
            _originals.clear()

    def __enter__(self) -> TtnnPatch:
        return self

    def __exit__(self, *exc_info) -> bool:
        self.restore()
        return False

    def __repr__(self) -> str:
        return f"<TtnnPatch {'active' if self.active else 'restored'}>"


def patch_ttnn() -> TtnnPatch:
    """Route ``ttnn.transformer``'s four decode-attention ops and ttnn's cache ops to ttflashdecode, and ttnn's tensor
    calls on emulator tensors to the emulator (see the module docstring); returns a handle whose ``restore()`` /
    ``__exit__`` undoes it."""
    with _lock:
        if not _active:
            from ttflashdecode.emulator_calls import replacements  # noqa: PLC0415

            for (namespace, name), replacement in {**replacements(set(ROUTES)), **ROUTES}.items():
                owner = _namespace(namespace)
                _originals[(namespace, name)] = getattr(owner, name, _MISSING)
                setattr(owner, name, replacement)
        handle = TtnnPatch()
        _active.append(handle)
        return handle


def _namespace(name: str):
    ttnn = import_ttnn()
    return getattr(ttnn, name) if name else ttnn


def is_patched() -> bool:
    """True while at least one :func:`patch_ttnn` handle is active."""
    return bool(_active)
