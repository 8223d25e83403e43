"""transformers integration: decode attention and the KV cache on a Tenstorrent device (or the host emulator).

    import ttflashdecode.integrations.hf as tthf          # registers the "ttdecode" attention implementation
    model.set_attn_implementation(tthf.ATTENTION_NAME)
    cache = tthf.DeviceKVCache(model.config, device=dev, max_batch_size=2, max_cache_len=256, dtype=ttnn.bfloat8_b)
    out = model.generate(ids, attention_mask=mask, cache=cache, max_new_tokens=32, do_sample=False)

``cache=`` is the name transformers 5 gives the cache argument of ``forward`` and ``generate`` (``past_key_values=``
still works there but raises a FutureWarning and leaves ``forward`` in 5.40); :func:`cache_argument` picks whichever
name the installed version takes.

What runs where. Every layer's K and V live on the device (``[max_batch_size, n_kv_heads, max_cache_len, head_dim]``,
or paged ``[num_blocks, n_kv_heads, block_size, head_dim]`` with a page table when ``block_size`` is given).

- Prefill: the first forward after the cache is made (or ``reset()``), whatever its length. It runs the model's own
  eager attention in torch (padded users have fewer real tokens than the batch's width, which the decode kernels'
  contiguous-positions rule cannot express) and writes each user's real K/V rows into the device cache with
  :func:`ttflashdecode.paged_fill_cache` (one launch for K and one for V per layer, every user at once), so nothing
  but the prompt's rows crosses to the device.
- Decode step (every later forward, 1 to 8 new tokens per user, appended at each user's next positions): the new K/V
  rows go into the device cache with :func:`ttflashdecode.paged_fused_update_cache` (K and V in one launch per
  token, positions in a device tensor rewritten in place) and
  :func:`ttflashdecode.scaled_dot_product_attention_decode` (or the
  paged op) attends over it: the cache itself never leaves the device. The query and the new K/V come from the model
  on the host and the attention output goes back to it (the model's projections run in torch).

A batch may be smaller than ``max_batch_size``: it uses the cache's first users (the rest are skipped by the kernels:
position -1). Starting new prompts on a used cache needs ``cache.reset()`` (a later forward must append to every
user's cached tokens; chunked prefill is not supported).

Each user's real tokens are stored at positions 0, 1, .. of its cache in the order they come (pads are not stored;
which tokens are real comes from the attention mask, so left and right padding both work). The model's
``position_ids`` rotate Q and K in torch before the attention sees them, so the device needs only this order: a query
sees its user's stored tokens and itself, as eager's mask lets it. Sliding
windows come from each attention module (``sliding_window``: Mistral's, Qwen3's and gpt-oss's sliding layers) and
attention sinks from gpt-oss's ``s_aux`` (``module.sinks``), both from the model's config.

``DeviceKVCache.stats`` counts what the device did for decode steps: launches and DRAM bytes read / written (the
emulator's counters; None on a card).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field

import torch

try:
    import transformers
    from transformers import AttentionInterface
    from transformers.cache_utils import Cache, CacheLayerMixin
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ttflashdecode.integrations.hf needs transformers 5.x: pip install 'ttflashdecode[hf]' "
        "(or pip install 'transformers>=5,<6')"
    ) from error

import ttflashdecode
from ttflashdecode.backend import backend_for, import_ttnn
from ttflashdecode.checks import KV_DTYPES, dtype_name_of, padded_rows
from ttflashdecode.ops.decode.validate import MAX_Q_LEN
from ttflashdecode.ops.update_cache.api import read_host, write_host

# transformers treats every implementation whose name contains "flash" as a FlashAttention kernel
# (utils.generic.is_flash_attention_requested: set_attn_implementation then loads it from the hub, generate and the
# masks take FlashAttention's paths), so the registered name must not contain it.
ATTENTION_NAME = "ttdecode"

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
    prefill_launches: int = 0  # cache fills of prefills (not counted above: those are the decode steps')

    def add(self, stats, kind: str) -> None:
        if kind == "prefill":
            self.prefill_launches += 1
            return
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
    them on the device); it keeps HF's token count for masks and cache positions, and each user's count of stored
    tokens (``lengths``: where its next token goes)."""

    is_sliding = False
    is_compileable = False
    is_croppable = False

    def __init__(self, cache: DeviceKVCache, layer_idx: int):
        super().__init__()
        self.cache = cache
        self.layer_idx = layer_idx
        self.k = self.v = None  # device tensors, allocated on first use (shapes from the first states)
        self.seen = 0  # tokens HF has sent through this layer (pads included): its cache positions
        self.lengths = torch.zeros(cache.max_batch_size, dtype=torch.long)  # real tokens stored, per cache user
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
        if query_length == 0:  # generate on a used cache whose prompt is no longer than what the cache holds
            raise ValueError(
                f"DeviceKVCache: a forward with no new tokens (the cache already holds {self.seen} tokens per user, as "
                "many as the input or more). To start new prompts on this cache, call cache.reset() first"
            )
        return self.seen + query_length, 0

    def get_seq_length(self) -> int:
        return self.seen

    def get_max_length(self) -> int:
        return self.cache.max_cache_len

    def reset(self) -> None:
        """Forgets the layer's tokens: the next forward is a prefill. The device rows stay as they are (positions past
        a user's length are never read)."""
        self.seen = 0
        self.lengths.zero_()

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

    def __init__(
        self,
        config,
        *,
        device,
        max_batch_size: int,
        max_cache_len: int,
        dtype=None,
        block_size=None,
        compute_kernel_config=None,
    ):
        ttnn = import_ttnn()
        config = config.get_text_config() if hasattr(config, "get_text_config") else config
        dtype = cache_dtype(dtype)
        for name, value in (("max_batch_size", max_batch_size), ("max_cache_len", max_cache_len)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name}={value!r}: expected a positive int")
        if block_size is not None and (not isinstance(block_size, int) or block_size <= 0 or block_size % 32):
            raise ValueError(f"block_size={block_size!r}: expected None or a positive multiple of 32")
        self.device = device
        self.backend = backend_for(device)
        self.max_batch_size = max_batch_size
        self.max_cache_len = max_cache_len
        self.dtype = dtype
        num_layers = config.num_hidden_layers
        super().__init__(layers=[DeviceKVLayer(self, i) for i in range(num_layers)])
        for layer, kind in zip(self.layers, getattr(config, "layer_types", None) or ["full_attention"] * num_layers):
            layer.is_sliding = kind == "sliding_attention"
        self.block_size = block_size
        self.stats = DeviceStats()
        # Decode attention's compute settings; with fp32_dest_acc_en the attention output is float32 as well.
        self.compute_kernel_config = compute_kernel_config
        self.page_table = None
        if block_size is None:
            self.max_cache_len = padded_rows(max_cache_len)  # whole tiles: the cache's size in memory anyway
        else:
            blocks_per_user = -(-max_cache_len // block_size)
            self.max_cache_len = blocks_per_user * block_size
            self.num_blocks = max_batch_size * blocks_per_user
            # A fixed shuffle: block i of user u is physical block order[u * blocks_per_user + i].
            order = torch.randperm(self.num_blocks, generator=torch.Generator().manual_seed(self.num_blocks))
            self.page_table_host = order.reshape(max_batch_size, blocks_per_user).to(torch.int32)
            self.page_table = self.backend.from_torch(self.page_table_host, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
        # The page table prefill fills go through. An unpaged cache [max_batch_size, n_kv, S, d] is laid out as a
        # paged one of max_batch_size blocks of S positions (S a whole number of tiles), block u = user u.
        self._fill_page_table = self.page_table
        if block_size is None:
            identity = torch.arange(max_batch_size, dtype=torch.int32).reshape(max_batch_size, 1)
            self._fill_page_table = self.backend.from_torch(identity, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
        self._fill_user_tensors = {}
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
        return (
            self.backend.allocate(shape, self.dtype, ttnn.TILE_LAYOUT),
            self.backend.allocate(shape, self.dtype, ttnn.TILE_LAYOUT),
        )

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
        return (
            blocks.reshape(b, per_user, *blocks.shape[1:])
            .permute(0, 2, 1, 3, 4)
            .reshape(b, blocks.shape[1], per_user * self.block_size, blocks.shape[-1])
        )

    # ---- what the attention function calls
    def _padded(self, states: torch.Tensor) -> torch.Tensor:
        """``states`` ``[b, ...]`` with zero rows for cache users b .. max_batch_size - 1 (their position is -1: the
        kernels write and read nothing for them), so every batch size runs the programs of max_batch_size."""
        missing = self.max_batch_size - states.shape[0]
        return states if missing == 0 else torch.cat([states, states.new_zeros(missing, *states.shape[1:])])

    def _user_positions(self, positions: torch.Tensor) -> torch.Tensor:
        """One position per cache user (int32 ``[max_batch_size]``): ``positions`` for the batch's users, -1 after."""
        out = torch.full((self.max_batch_size,), -1, dtype=torch.int32)
        out[: positions.shape[0]] = positions.to(torch.int32)
        return out

    def write_rows(self, layer: DeviceKVLayer, keys: torch.Tensor, values: torch.Tensor, positions: torch.Tensor):
        """Writes token t of every user (``keys[:, :, t]``, ``values[:, :, t]``) at ``positions[:, t]`` (-1: that user
        writes nothing): one fused K/V update launch per token (:func:`ttflashdecode.paged_fused_update_cache`)."""
        ttnn = import_ttnn()
        for t in range(keys.shape[2]):
            write_host(self.backend, self._write_pos, self._user_positions(positions[:, t]))
            new_k, new_v = (
                self.backend.from_torch(
                    self._padded(states[:, :, t]).unsqueeze(0).float(), ttnn.bfloat16, ttnn.TILE_LAYOUT
                )
                for states in (keys, values)
            )
            _, run = ttflashdecode.paged_fused_update_cache(
                layer.k,
                new_k,
                layer.v,
                new_v,
                update_idxs_tensor=self._write_pos,
                page_table=self.page_table,
                return_stats=True,
            )
            self.stats.add(run.stats, "update")

    def write_prefill(self, layer: DeviceKVLayer, keys: torch.Tensor, values: torch.Tensor, real: torch.Tensor):
        """Stores user u's real prompt tokens (the columns where ``real[u]`` is True, in order) at positions
        0 .. n_u - 1 of its device cache with :func:`ttflashdecode.paged_fill_cache`: one launch for K and one for V
        (input row u to cache user u); only the prompt's tiles cross to the device. Positions n_u .. of the last
        tile get zeros: past the user's length, never read, and the next decode step writes n_u."""
        ttnn = import_ttnn()
        batch, n_kv, _, head_dim = keys.shape
        counts = real.sum(1)
        width = int(counts.max())
        for cache_tensor, states in ((layer.k, keys), (layer.v, values)):
            rows = states.new_zeros(batch, n_kv, width, head_dim)
            for u in range(batch):
                rows[u, :, : int(counts[u])] = states[u][:, real[u]]
            new = self.backend.from_torch(rows.float(), ttnn.bfloat16, ttnn.TILE_LAYOUT)
            _, run = ttflashdecode.paged_fill_cache(
                cache_tensor, new, self._fill_page_table, batch_idx_tensor=self._fill_users(batch), return_stats=True
            )
            self.stats.add(run.stats, "prefill")
        layer.lengths.zero_()
        layer.lengths[:batch] = counts

    def _fill_users(self, batch: int):
        """The device tensor ``[0, 1, .., batch - 1]`` (input row u fills cache user u), one per batch size."""
        if batch not in self._fill_user_tensors:
            ttnn = import_ttnn()
            users = torch.arange(batch, dtype=torch.int32)
            self._fill_user_tensors[batch] = self.backend.from_torch(users, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)
        return self._fill_user_tensors[batch]

    def attend(
        self,
        layer: DeviceKVLayer,
        query: torch.Tensor,
        cur_pos: torch.Tensor,
        *,
        scale: float,
        sliding_window: int | None,
        sinks: torch.Tensor | None,
    ) -> torch.Tensor:
        """Decode attention of ``query`` ``[b, n_q_heads, q_len, head_dim]`` over the layer's device cache, the last
        query token of user u at ``cur_pos[u]``; returns ``[b, q_len, n_q_heads, head_dim]`` (float32)."""
        ttnn = import_ttnn()
        batch = query.shape[0]
        write_host(self.backend, self._cur_pos, self._user_positions(cur_pos))
        q = self.backend.from_torch(self._padded(query).permute(2, 0, 1, 3).float(), ttnn.bfloat16, ttnn.TILE_LAYOUT)
        sink = None
        if sinks is not None:
            sink = self.backend.from_torch(sinks.detach().float().reshape(1, -1), ttnn.bfloat16, ttnn.TILE_LAYOUT)
        fp32 = bool(getattr(self.compute_kernel_config, "fp32_dest_acc_en", False))
        options = dict(
            cur_pos_tensor=self._cur_pos,
            scale=scale,
            sliding_window_size=sliding_window,
            attention_sink=sink,
            compute_kernel_config=self.compute_kernel_config,
            dtype=ttnn.float32 if fp32 else None,
            return_stats=True,
        )
        if self.block_size is None:
            out, run = ttflashdecode.scaled_dot_product_attention_decode(q, layer.k, layer.v, **options)
        else:
            out, run = ttflashdecode.paged_scaled_dot_product_attention_decode(
                q, layer.k, layer.v, self.page_table, **options
            )
        self.stats.add(run.stats, "attention")
        return read_host(self.backend, out).float().permute(1, 0, 2, 3)[:batch]


def cache_dtype(dtype):
    """The ttnn dtype a :class:`DeviceKVCache` stores for its ``dtype`` argument: None -> ``ttnn.bfloat16``; a ttnn
    dtype of ``KV_DTYPES`` as it is; ``torch.bfloat16`` -> ``ttnn.bfloat16`` (the one torch dtype a device cache can
    hold: block-float caches have no torch counterpart). Anything else is refused naming ``dtype``."""
    ttnn = import_ttnn()
    expected = f"expected one of {', '.join('ttnn.' + d for d in KV_DTYPES)} or torch.bfloat16"
    if dtype is None or dtype == torch.bfloat16:
        return ttnn.bfloat16
    if isinstance(dtype, torch.dtype) or dtype_name_of(dtype) not in KV_DTYPES:
        raise ValueError(f"dtype={dtype}: {expected}")
    return getattr(ttnn, dtype_name_of(dtype))


def cache_argument(model, cache) -> dict:
    """The keyword that hands ``cache`` to ``model(...)`` / ``model.generate(...)``: ``{"cache": cache}`` where the
    installed transformers names it so (``past_key_values`` is deprecated there, with a FutureWarning, and leaves
    ``forward`` in 5.40), else ``{"past_key_values": cache}`` (earlier 5.x)."""
    takes_cache = "cache" in inspect.signature(model.forward).parameters
    return {"cache" if takes_cache else "past_key_values": cache}


# ---- the attention function ---------------------------------------------------------------------------------------


def ttflashdecode_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers attention function "ttdecode": the first forward on a cache is the prefill (the model's own eager
    attention in torch, its real K/V rows written into the device cache), every later one a decode step on the
    device. ``key`` / ``value`` are what :class:`DeviceKVCache` handed back from ``update``."""
    if not isinstance(key, NewStates):
        raise TypeError(
            f"attention {ATTENTION_NAME!r} needs cache=ttflashdecode.integrations.hf.DeviceKVCache(...) "
            f"(the model passed key of type {type(key).__name__}); use_cache must be on"
        )
    layer, cache = key.layer, key.layer.cache
    batch, _, new_tokens, _ = query.shape
    cached = layer.seen - new_tokens  # HF's tokens before this forward (update already counted the new ones)
    try:
        if batch > cache.max_batch_size:
            raise ValueError(f"input batch {batch} is larger than DeviceKVCache(max_batch_size={cache.max_batch_size})")
        real = _real_tokens(attention_mask, batch, new_tokens)
        if cached == 0:
            return _prefill(module, query, key, value, attention_mask, real, scaling, **kwargs)
        positions = _decode_positions(layer, real, cached)
        if kwargs.get("sliding_window") is None:  # a sliding layer's mask hides old tokens: nothing to count there
            _check_cached_tokens(layer, attention_mask, batch, cached)
    except (ValueError, NotImplementedError):
        layer.seen -= new_tokens  # a refused forward leaves the layer as it was
        raise
    return _decode(module, query, key, value, positions, scaling, **kwargs)


def _real_tokens(attention_mask, batch: int, new_tokens: int) -> torch.Tensor:
    """``[batch, new_tokens]`` bool: which new tokens are real (not padding). A padding token's key is hidden from
    every query, so its own query row does not see it: the diagonal of the new tokens' block of the mask tells."""
    if attention_mask is None:
        return torch.ones(batch, new_tokens, dtype=torch.bool)
    diagonal = torch.diagonal(attention_mask[:, 0, :, -new_tokens:], dim1=-2, dim2=-1).cpu()
    if diagonal.dtype != torch.bool:  # additive mask: 0 where visible, the dtype's minimum where hidden
        diagonal = diagonal > torch.finfo(diagonal.dtype).min / 2
    return diagonal.expand(batch, -1)


def _prefill(module, query, key, value, attention_mask, real, scaling=None, **kwargs):
    layer, cache = key.layer, key.layer.cache
    longest = int(real.sum(1).max())
    if longest > cache.max_cache_len:
        raise ValueError(
            f"a prompt of {longest} tokens is longer than DeviceKVCache(max_cache_len={cache.max_cache_len})"
        )
    scale = module.scaling if scaling is None else scaling
    eager = importlib.import_module(type(module).__module__).eager_attention_forward
    out, weights = eager(module, query, key.states, value.states, attention_mask, scaling=scale, dropout=0.0, **kwargs)
    cache.write_prefill(layer, key.states, value.states, real)
    return out, weights


def _decode_positions(layer: DeviceKVLayer, real: torch.Tensor, cached: int) -> torch.Tensor:
    """Where a decode step's tokens go: user u's at its next slots, lengths[u] .. lengths[u] + q - 1. The slots are
    the cache's own (the model's position_ids only rotate Q and K, in torch, before the attention sees them), so
    what a query sees on the device is what eager's mask lets it see: the user's real tokens so far and itself,
    whichever positions the model gave them (generate's right-padded users continue from a pad's position)."""
    batch, new_tokens = real.shape
    if new_tokens > MAX_Q_LEN:
        raise NotImplementedError(
            f"DeviceKVCache: a forward of {new_tokens} new tokens after {cached} cached ones (chunked prefill) is not "
            f"supported: decode steps take 1 to {MAX_Q_LEN} tokens per user. To start new prompts on this cache, call "
            "cache.reset() first"
        )
    if not bool(real.all()):
        raise ValueError(
            f"attention_mask: a decode step appends every new token to its user's cache, but tokens "
            f"{[[t for t in range(new_tokens) if not real[u, t]] for u in range(batch)]} of the users' new ones are "
            "padding. To start new prompts on this cache, call cache.reset() first"
        )
    positions = layer.lengths[:batch].unsqueeze(1) + torch.arange(new_tokens)
    if int(positions.max()) >= layer.cache.max_cache_len:
        raise ValueError(
            f"position {int(positions.max())} is past DeviceKVCache(max_cache_len={layer.cache.max_cache_len})"
        )
    return positions


def _check_cached_tokens(layer: DeviceKVLayer, attention_mask, batch: int, cached: int) -> None:
    """The mask's view of the past must be the cache's: the first new token of user u sees as many earlier tokens as
    the cache holds for u. A new prompt handed to a used cache (generate again without reset) fails here."""
    if attention_mask is None:
        seen = torch.full((batch,), cached)
    else:
        row = attention_mask[:, 0, 0, :cached].cpu()
        visible = row if row.dtype == torch.bool else row > torch.finfo(row.dtype).min / 2
        seen = visible.sum(-1).expand(batch)
    if not torch.equal(seen, layer.lengths[:batch]):
        raise ValueError(
            f"attention_mask: the new tokens see {seen.tolist()} earlier tokens per user, but the cache holds "
            f"{layer.lengths[:batch].tolist()} (the mask is not this cache's sequence). To start new prompts on this "
            "cache, call cache.reset() first"
        )


def _decode(module, query, key, value, positions, scaling=None, **kwargs):
    layer, cache = key.layer, key.layer.cache
    if layer.layer_idx == 0:
        cache.stats.decode_steps += 1
        cache.stats.per_step_read_bytes.append(0)
    scale = module.scaling if scaling is None else scaling
    cache.write_rows(layer, key.states, value.states, positions)
    out = cache.attend(
        layer,
        query,
        positions[:, -1],
        scale=scale,
        sliding_window=kwargs.get("sliding_window"),
        sinks=kwargs.get("s_aux"),
    )
    layer.lengths[: query.shape[0]] += query.shape[2]
    return out.to(query.dtype), None


def register() -> None:
    """Registers the "ttdecode" attention implementation (and its mask: eager's additive mask, which the prefill uses
    and from which it tells padding apart)."""
    AttentionInterface.register(ATTENTION_NAME, ttflashdecode_attention_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION_NAME, eager_mask)


register()

__all__ = [
    "DeviceKVCache",
    "DeviceStats",
    "ATTENTION_NAME",
    "ttflashdecode_attention_forward",
    "register",
    "cache_argument",
    "cache_dtype",
]
