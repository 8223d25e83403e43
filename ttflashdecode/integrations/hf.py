"""transformers integration: decode attention and the KV cache on a Tenstorrent device (or the host emulator).

    import ttflashdecode.integrations.hf as tthf          # registers the "ttflashdecode" attention implementation
    model.set_attn_implementation("ttflashdecode")
    cache = tthf.DeviceKVCache(model.config, device=dev, max_batch_size=2, max_cache_len=256, dtype=ttnn.bfloat8_b)
    out = model.generate(ids, attention_mask=mask, past_key_values=cache, max_new_tokens=32, do_sample=False)

What runs where. Every layer's K and V live on the device (``[max_batch_size, n_kv_heads, max_cache_len, head_dim]``,
or paged ``[num_blocks, n_kv_heads, block_size, head_dim]`` with a page table when ``block_size`` is given). A decode
step (1 to 8 new tokens per user) writes each new K/V row into the device cache with
:func:`ttflashdecode.paged_fused_update_cache` (K and V in one launch per token, positions in a device tensor rewritten
in place) and runs :func:`ttflashdecode.scaled_dot_product_attention_decode`
(or the paged op) over the device cache: the cache itself never leaves the device. The query and the new K/V come
from the model on the host and the attention output goes back to it (the model's projections run in torch).
Prefill (more than 8 new tokens) runs the model's own eager attention in torch and writes its K/V into the device
cache (one host-to-device write per layer tensor).

Positions are the model's own ``position_ids`` (each user's, so left-padded batches decode at each user's real
position: a padded prompt's tokens are stored from position 0 of the user's cache, pads are not stored). Sliding
windows come from each attention module (``sliding_window``: Mistral's, Qwen3's and gpt-oss's sliding layers) and
attention sinks from gpt-oss's ``s_aux`` (``module.sinks``), both from the model's config.

``DeviceKVCache.stats`` counts what the device did for decode steps: launches and DRAM bytes read / written (the
emulator's counters; None on a card).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import torch

try:
    import transformers
    from transformers import AttentionInterface, PreTrainedModel
    from transformers.cache_utils import Cache, CacheLayerMixin
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ttflashdecode.integrations.hf needs transformers 5.x: pip install 'ttflashdecode[hf]' "
        "(or pip install 'transformers>=5,<6')"
    ) from error

import ttflashdecode
from ttflashdecode import op as decode_op
from ttflashdecode import update_cache_op
from ttflashdecode.backend import backend_for
from ttflashdecode.ttnn_env import import_ttnn
from ttflashdecode.update_cache_op import read_host, write_host
from ttflashdecode.validate import KV_DTYPES, MAX_Q_LEN, dtype_name_of

ATTENTION_NAME = "ttflashdecode"

if int(transformers.__version__.split(".")[0]) != 5:  # pragma: no cover
    raise ImportError(f"ttflashdecode.integrations.hf needs transformers 5.x, found {transformers.__version__}")


@dataclass
class DeviceStats:
    """What the device did for decode steps since the cache was made: launches, and DRAM bytes (emulator counters)."""

    decode_steps: int = 0  # forward calls served on the device (one per new-token batch, all layers)
    launches: int = 0
    update_launches: int = 0
    attention_launches: int = 0
    dram_read_bytes: int = 0
    dram_write_bytes: int = 0
    update_read_bytes: int = 0  # of dram_read_bytes, what the cache updates read (the rest: attention)
    per_step_read_bytes: list[int] = field(default_factory=list)

    def add(self, stats, kind: str) -> None:
        self.launches += 1
        setattr(self, f"{kind}_launches", getattr(self, f"{kind}_launches") + 1)
        if stats is not None:
            self.dram_read_bytes += stats.dram_read_bytes
            self.dram_write_bytes += stats.dram_write_bytes
            if kind == "update":
                self.update_read_bytes += stats.dram_read_bytes
            if self.per_step_read_bytes:
                self.per_step_read_bytes[-1] += stats.dram_read_bytes


class DeviceKVLayer(CacheLayerMixin):
    """One layer's K and V on the device. ``update`` hands the new states to the attention function (which writes
    them on the device at the model's positions); it keeps HF's token count for masks and cache positions."""

    is_sliding = False
    is_compileable = False
    is_croppable = False

    def __init__(self, cache: "DeviceKVCache", layer_idx: int):
        super().__init__()
        self.cache = cache
        self.layer_idx = layer_idx
        self.k = self.v = None  # device tensors, allocated on first use (shapes from the first states)
        self.seen = 0  # tokens HF has sent through this layer (pads included): its cache positions
        self.is_initialized = False

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.k, self.v = self.cache._allocate_layer(key_states.shape[1], key_states.shape[-1])
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self.seen += key_states.shape[-2]
        return NewStates(self, key_states), NewStates(self, value_states)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.seen + query_length, 0

    def get_seq_length(self) -> int:
        return self.seen

    def get_max_length(self) -> int:
        return self.cache.max_cache_len

    def reset(self) -> None:
        self.seen = 0

    def reorder_cache(self, beam_idx) -> None:
        raise NotImplementedError("DeviceKVCache: beam search (reorder_cache) is not supported")


@dataclass
class NewStates:
    """What the cache hands the attention function instead of K or V: the layer whose device tensors hold the past,
    and the new states ``[b, n_kv_heads, new_tokens, head_dim]`` (host torch) still to be written."""

    layer: DeviceKVLayer
    states: torch.Tensor

    @property
    def shape(self):
        return self.states.shape


class DeviceKVCache(Cache):
    """A transformers ``Cache`` whose K/V live on ``device`` (an emulator device or a Wormhole device).

    config: the model's config (layers, kv heads, head_dim). device: where the cache lives. max_batch_size: the batch
    every call must have. max_cache_len: positions per user. dtype: ``ttnn.bfloat16`` / ``bfloat8_b`` / ``bfloat4_b``.
    block_size: a paged cache with blocks of this many positions (a multiple of 32), found through a page table (the
    blocks of the users are dealt out shuffled, as a serving engine's allocator would leave them).
    compute_kernel_config: decode attention's ``ttnn.WormholeComputeKernelConfig`` (default HiFi4, bfloat16 DST);
    with ``fp32_dest_acc_en=True`` the attention output is float32 too."""

    def __init__(self, config, *, device, max_batch_size: int, max_cache_len: int, dtype=None, block_size=None,
                 compute_kernel_config=None):
        ttnn = import_ttnn()
        config = config.get_text_config() if hasattr(config, "get_text_config") else config
        dtype = ttnn.bfloat16 if dtype is None else dtype
        if dtype_name_of(dtype) not in KV_DTYPES:
            raise ValueError(f"dtype={dtype}: expected one of {', '.join('ttnn.' + d for d in KV_DTYPES)}")
        for name, value in (("max_batch_size", max_batch_size), ("max_cache_len", max_cache_len)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name}={value!r}: expected a positive int")
        if block_size is not None and (not isinstance(block_size, int) or block_size <= 0 or block_size % 32):
            raise ValueError(f"block_size={block_size!r}: expected None or a positive multiple of 32")
        num_layers = config.num_hidden_layers
        super().__init__(layers=[DeviceKVLayer(self, i) for i in range(num_layers)])
        for layer, kind in zip(self.layers, getattr(config, "layer_types", None) or ["full_attention"] * num_layers):
            layer.is_sliding = kind == "sliding_attention"
        self.device = device
        self.backend = backend_for(device)
        self.max_batch_size = max_batch_size
        self.max_cache_len = max_cache_len
        self.dtype = dtype
        self.block_size = block_size
        self.stats = DeviceStats()
        # Decode attention's compute settings; with fp32_dest_acc_en the attention output is float32 as well.
        self.compute_kernel_config = compute_kernel_config
        self.page_table = None
        if block_size is not None:
            blocks_per_user = -(-max_cache_len // block_size)
            self.max_cache_len = blocks_per_user * block_size
            self.num_blocks = max_batch_size * blocks_per_user
            # A fixed shuffle: block i of user u is physical block order[u * blocks_per_user + i].
            order = torch.randperm(self.num_blocks, generator=torch.Generator().manual_seed(self.num_blocks))
            self.page_table_host = order.reshape(max_batch_size, blocks_per_user).to(torch.int32)
            self.page_table = self.backend.from_torch(self.page_table_host, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
        # Positions the kernels read: rewritten in place every call (so their programs are built once).
        zeros = torch.zeros(max_batch_size, dtype=torch.int32)
        self._write_pos = self.backend.from_torch(zeros, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
        self._cur_pos = self.backend.from_torch(zeros, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)

    # ---- device tensors
    def _allocate_layer(self, n_kv_heads: int, head_dim: int):
        ttnn = import_ttnn()
        if self.block_size is None:
            shape = [self.max_batch_size, n_kv_heads, self.max_cache_len, head_dim]
        else:
            shape = [self.num_blocks, n_kv_heads, self.block_size, head_dim]
        return (self.backend.allocate(shape, self.dtype, ttnn.TILE_LAYOUT),
                self.backend.allocate(shape, self.dtype, ttnn.TILE_LAYOUT))  # fmt: skip

    def layer_tensors(self, layer_idx: int):
        """(K, V) device tensors of a layer (None before its first update)."""
        layer = self.layers[layer_idx]
        return layer.k, layer.v

    def read_layer(self, layer_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A layer's K and V read back to the host as ``[max_batch_size, n_kv_heads, max_cache_len, head_dim]`` (for
        tests and debugging; paged caches are gathered through the page table)."""
        k, v = (read_host(self.backend, t).float() for t in self.layer_tensors(layer_idx))
        if self.block_size is None:
            return k, v
        return tuple(self._gather(t) for t in (k, v))

    def _gather(self, physical: torch.Tensor) -> torch.Tensor:
        blocks = physical[self.page_table_host.flatten().long()]  # [b * blocks_per_user, n_kv, block, d]
        b, per_user = self.page_table_host.shape
        return blocks.reshape(b, per_user, *blocks.shape[1:]).permute(0, 2, 1, 3, 4).reshape(
            b, blocks.shape[1], per_user * self.block_size, blocks.shape[-1])  # fmt: skip

    # ---- what the attention function calls
    def write_prefill(self, layer: DeviceKVLayer, keys: torch.Tensor, values: torch.Tensor, lengths: list[int]):
        """Stores user u's last ``lengths[u]`` prompt tokens (its real ones: left padding comes first) at positions
        0 .. lengths[u] - 1 of its device cache: one host-to-device write of each layer tensor."""
        for tensor, states in ((layer.k, keys), (layer.v, values)):
            host = torch.zeros(tuple(int(d) for d in tensor.shape))
            if self.block_size is None:
                for u, n in enumerate(lengths):
                    host[u, :, :n] = states[u, :, states.shape[2] - n:].float()
            else:
                for u, n in enumerate(lengths):
                    rows = states[u, :, states.shape[2] - n:].float()
                    for start in range(0, n, self.block_size):
                        block = int(self.page_table_host[u, start // self.block_size])
                        chunk = rows[:, start : start + self.block_size]
                        host[block, :, : chunk.shape[1]] = chunk
            write_host(self.backend, tensor, host)

    def write_rows(self, layer: DeviceKVLayer, keys: torch.Tensor, values: torch.Tensor, positions: torch.Tensor):
        """Writes token t of every user (``keys[:, :, t]``, ``values[:, :, t]``) at ``positions[:, t]``: one fused K/V
        update launch per token (:func:`ttflashdecode.paged_fused_update_cache`)."""
        ttnn = import_ttnn()
        for t in range(keys.shape[2]):
            write_host(self.backend, self._write_pos, positions[:, t].to(torch.int32).contiguous())
            new_k, new_v = (self.backend.from_torch(states[:, :, t].unsqueeze(0).float(), ttnn.bfloat16,
                                                    ttnn.TILE_LAYOUT) for states in (keys, values))  # fmt: skip
            ttflashdecode.paged_fused_update_cache(layer.k, new_k, layer.v, new_v, update_idxs_tensor=self._write_pos,
                                                   page_table=self.page_table)  # fmt: skip
            self.stats.add(update_cache_op.last_run.stats, "update")

    def attend(self, layer: DeviceKVLayer, query: torch.Tensor, cur_pos: torch.Tensor, *, scale: float,
               sliding_window: int | None, sinks: torch.Tensor | None) -> torch.Tensor:  # fmt: skip
        """Decode attention of ``query`` ``[b, n_q_heads, q_len, head_dim]`` over the layer's device cache, the last
        query token of user u at ``cur_pos[u]``; returns ``[b, q_len, n_q_heads, head_dim]`` (float32)."""
        ttnn = import_ttnn()
        write_host(self.backend, self._cur_pos, cur_pos.to(torch.int32).contiguous())
        q = self.backend.from_torch(query.permute(2, 0, 1, 3).float(), ttnn.bfloat16, ttnn.TILE_LAYOUT)
        sink = None
        if sinks is not None:
            sink = self.backend.from_torch(sinks.detach().float().reshape(1, -1), ttnn.bfloat16, ttnn.TILE_LAYOUT)
        fp32 = bool(getattr(self.compute_kernel_config, "fp32_dest_acc_en", False))
        options = dict(cur_pos_tensor=self._cur_pos, scale=scale, sliding_window_size=sliding_window,
                       attention_sink=sink, compute_kernel_config=self.compute_kernel_config,
                       dtype=ttnn.float32 if fp32 else None)  # fmt: skip
        if self.block_size is None:
            out = ttflashdecode.scaled_dot_product_attention_decode(q, layer.k, layer.v, **options)
        else:
            out = ttflashdecode.paged_scaled_dot_product_attention_decode(q, layer.k, layer.v, self.page_table,
                                                                          **options)  # fmt: skip
        self.stats.add(decode_op.last_run.stats if decode_op.last_run is not None else None, "attention")
        return read_host(self.backend, out).float().permute(1, 0, 2, 3)


# ---- the attention function ---------------------------------------------------------------------------------------


def ttflashdecode_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers attention function "ttflashdecode": decode steps on the device, prefill in torch (the model's own
    eager attention) with its K/V stored in the device cache. ``key`` / ``value`` are what
    :class:`DeviceKVCache` handed back from ``update``."""
    if not isinstance(key, NewStates):
        raise TypeError(
            "attention 'ttflashdecode' needs past_key_values=ttflashdecode.integrations.hf.DeviceKVCache(...) "
            f"(the model passed key of type {type(key).__name__}); use_cache must be on"
        )
    layer, cache = key.layer, key.layer.cache
    batch, _, new_tokens, _ = query.shape
    if batch != cache.max_batch_size:
        raise ValueError(f"input batch {batch} does not match DeviceKVCache(max_batch_size={cache.max_batch_size})")
    positions = kwargs.get("position_ids")
    if positions is None:
        start = layer.seen - new_tokens
        positions = torch.arange(start, start + new_tokens).unsqueeze(0)
    positions = positions.expand(batch, -1).cpu()
    scale = module.scaling if scaling is None else scaling
    sinks = kwargs.get("s_aux")
    sliding_window = kwargs.get("sliding_window")
    if new_tokens > MAX_Q_LEN:
        if layer.seen != new_tokens:
            raise NotImplementedError(
                f"DeviceKVCache: a prefill of {new_tokens} tokens after {layer.seen - new_tokens} cached ones "
                f"(chunked prefill) is not supported; decode steps take 1 to {MAX_Q_LEN} tokens"
            )
        eager = importlib.import_module(type(module).__module__).eager_attention_forward
        out, weights = eager(module, query, key.states, value.states, attention_mask, scaling=scale, dropout=0.0,
                             **kwargs)  # fmt: skip
        # Left padding first: user u's real tokens are the last (its last position + 1).
        lengths = [int(p) + 1 for p in positions[:, -1]]
        cache.write_prefill(layer, key.states, value.states, lengths)
        return out, weights
    if layer.layer_idx == 0:
        cache.stats.decode_steps += 1
        cache.stats.per_step_read_bytes.append(0)
    if int(positions.max()) >= cache.max_cache_len:
        raise ValueError(f"position {int(positions.max())} is past DeviceKVCache(max_cache_len={cache.max_cache_len})")
    cache.write_rows(layer, key.states, value.states, positions)
    out = cache.attend(layer, query, positions[:, -1], scale=scale, sliding_window=sliding_window, sinks=sinks)
    return out.to(query.dtype), None


def register() -> None:
    """Registers the "ttflashdecode" attention implementation (and its mask: eager's additive mask, used by prefill)."""
    AttentionInterface.register(ATTENTION_NAME, ttflashdecode_attention_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION_NAME, eager_mask)
    _accept_name_in_set_attn_implementation()


def _accept_name_in_set_attn_implementation() -> None:
    """transformers takes every implementation whose name contains "flash" for a FlashAttention kernel
    (``utils.generic.is_flash_attention_requested``): ``set_attn_implementation`` then tries to load it from the hub,
    or, for models that list ``_compatible_flash_implementations`` (gpt-oss), swaps it for one of those. "ttflashdecode"
    is a registered attention function, not such a kernel, so for this one name the check returns it as it is;
    every other name goes through transformers' own check unchanged."""
    check = PreTrainedModel._check_and_adjust_attn_implementation
    if getattr(check, "_ttflashdecode", False):
        return

    def checked(self, attn_implementation, *args, **kwargs):
        if attn_implementation == ATTENTION_NAME:
            return ATTENTION_NAME
        return check(self, attn_implementation, *args, **kwargs)

    checked._ttflashdecode = True
    PreTrainedModel._check_and_adjust_attn_implementation = checked


register()

__all__ = ["DeviceKVCache", "DeviceStats", "ATTENTION_NAME", "ttflashdecode_attention_forward", "register"]
