"""ttflashdecode: FlashDecode attention for Tenstorrent Wormhole, callable like a TT-NN op.

    import ttflashdecode
    out = ttflashdecode.scaled_dot_product_attention_decode(q, k, v, cur_pos=cur_pos)

or, planned once and run per layer and decode step::

    wrapper = ttflashdecode.FlashDecodeWrapper(device)
    wrapper.plan(batch=8, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=4096)
    out = wrapper.run(q, k, v, cur_pos_tensor=cur_pos)

Tensors may live on a Wormhole device (the op launches with ``ttnn.generic_op``) or on the host emulator
(``ttflashdecode.emulator.open_device()``); the same program descriptor runs on both.
"""

__version__ = "0.1.0"

from ttflashdecode.config import ProgramConfig, load_program_config  # noqa: E402
from ttflashdecode.fill_cache_op import fill_cache, paged_fill_cache  # noqa: E402
from ttflashdecode.fused_update_decode import paged_update_cache_and_decode, update_cache_and_decode  # noqa: E402
from ttflashdecode.op import (  # noqa: E402
    cache_stats,
    clear_program_cache,
    flash_multi_latent_attention_decode,
    paged_flash_multi_latent_attention_decode,
    paged_scaled_dot_product_attention_decode,
    program_cache_stats,
    scaled_dot_product_attention_decode,
)
from ttflashdecode.ttnn_patch import patch_ttnn  # noqa: E402
from ttflashdecode.update_cache_op import paged_fused_update_cache, paged_update_cache, update_cache  # noqa: E402
from ttflashdecode.wrapper import DecodeResult, FlashDecodeWrapper  # noqa: E402

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
    "ProgramConfig",
    "load_program_config",
    "__version__",
]
