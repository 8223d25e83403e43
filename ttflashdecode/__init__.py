"""ttflashdecode: FlashDecode attention for Tenstorrent Wormhole, callable like a TT-NN op.

    import ttflashdecode
    out = ttflashdecode.scaled_dot_product_attention_decode(q, k, v, cur_pos=cur_pos)

or, planned once and run per layer and decode step::

    wrapper = ttflashdecode.FlashDecodeWrapper(device)
    wrapper.plan(batch=8, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=4096)
    out = wrapper.run(q, k, v, cur_pos_tensor=cur_pos)

Tensors may live on a Wormhole device (the op launches with ``ttnn.generic_op``) or on the host emulator
(``ttemu.open_device()``); the same program descriptor runs on both.
"""

__version__ = "0.1.0"

from importlib import import_module as _import_module
from importlib import util as _importlib_util

# The public names and the module each comes from. They are imported on first use (module __getattr__, PEP 562), so
# ``import ttflashdecode`` costs milliseconds and imports neither torch nor ttnn (importing ttnn sets up its
# environment first, ttnn_env.import_ttnn); the first call of an op pays for them.
_EXPORTS = {
    "ProgramConfig": "config",
    "load_program_config": "config",
    "fill_cache": "ops.fill_cache",
    "paged_fill_cache": "ops.fill_cache",
    "paged_update_cache_and_decode": "ops.fused",
    "update_cache_and_decode": "ops.fused",
    "cache_stats": "ops.decode.api",
    "clear_program_cache": "ops.decode.api",
    "flash_multi_latent_attention_decode": "ops.decode.api",
    "paged_flash_multi_latent_attention_decode": "ops.decode.api",
    "paged_scaled_dot_product_attention_decode": "ops.decode.api",
    "program_cache_stats": "ops.decode.api",
    "scaled_dot_product_attention_decode": "ops.decode.api",
    "patch_ttnn": "ttnn_patch",
    "paged_fused_update_cache": "ops.update_cache",
    "paged_update_cache": "ops.update_cache",
    "update_cache": "ops.update_cache",
    "DecodeResult": "ops.decode.pipeline",
    "FlashDecodeWrapper": "ops.decode.wrapper",
    "shared_prefix_decode": "ops.shared_prefix",
    "SharedPrefixDecodeWrapper": "ops.shared_prefix",
}


def __getattr__(name: str):
    """A public name (imported from its module on first use) or a submodule (``ttflashdecode.golden`` after a bare
    ``import ttflashdecode``, as when the package imported its modules eagerly)."""
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(_import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        return _import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "scaled_dot_product_attention_decode",
    "paged_scaled_dot_product_attention_decode",
    "flash_multi_latent_attention_decode",
    "paged_flash_multi_latent_attention_decode",
    "FlashDecodeWrapper",
    "DecodeResult",
    "program_cache_stats",
    "cache_stats",
    "clear_program_cache",
    "patch_ttnn",
    "update_cache",
    "paged_update_cache",
    "paged_fused_update_cache",
    "fill_cache",
    "paged_fill_cache",
    "update_cache_and_decode",
    "paged_update_cache_and_decode",
    "shared_prefix_decode",
    "SharedPrefixDecodeWrapper",
    "ProgramConfig",
    "load_program_config",
    "__version__",
]
