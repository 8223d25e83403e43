"""The cache update + attention sequence of real model code's decode step, patched and direct, against torch.

Each test replays a model's step as its code makes it: the new K/V rows come as nlp_create_qkv_heads_decode hands them
over (``[1, b, n_kv_heads, head_dim]`` L1 height-sharded, one user per core), ``ttnn.experimental.paged_update_cache``
writes them at each user's position (a device ``update_idxs_tensor`` rewritten in place each step) through the page
table, and decode attention reads the cache. Every step runs twice, through ``patch_ttnn()`` with upstream's names
and directly through ``ttflashdecode``; the second writes the same rows again (an update is idempotent), so both
attentions see the same cache. Checked: the cache as stored equals the host model exactly (each written row packed by
the packer, every other value unchanged), the two outputs agree bit for bit, and both match the golden attention over
the host cache. Models (per chip, as tests/test_model_calls.py's shapes):

* tt_transformers' Attention.forward_decode (models/tt_transformers/tt/attention.py): paged_update_cache(keys,
  k_heads_1BKD, update_idxs_tensor=current_pos, page_table=page_table), the same for values, then
  paged_scaled_dot_product_attention_decode; then ttnn.deallocate of the heads.
* gpt-oss (models/demos/gpt_oss/tt/attention): the same update calls over bfloat8_b caches, then attention with
  sinks and a sliding window.
* DeepSeek-V3 MLA (models/demos/deepseek_v3/tt/mla/mla1d.py): paged_update_cache(kvpe_cache, tt_kvpe,
  update_idxs_tensor=position_idxs, page_table=page_table) with tt_kvpe ``[1, b, 1, 576]`` height-sharded, then
  paged_flash_multi_latent_attention_decode over the bfloat8_b latent cache.
"""

from __future__ import annotations

import torch

import ttflashdecode
from decode_harness import height_sharded as _height_sharded
from decode_harness import hifi4 as _hifi4
from decode_harness import int32 as _int32
from decode_harness import sdpa_config as _sdpa_config
from decode_harness import tile as _tile
from output_checks import check_output
from packer_model import packed_by_the_packer
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden, ttnn_patch

ttnn = import_ttnn()


class PagedLayerCache:
    """A layer's paged K (and V) cache on the device and its host model, as stored."""

    def __init__(self, dev, gen, *, batch, n_kv, head_dim, block, per_user, dtype, with_v=True):
        self.dev, self.dtype, self.block = dev, dtype, block
        num_blocks = batch * per_user + 3
        self.table = torch.randperm(num_blocks, generator=gen)[: batch * per_user].reshape(batch, per_user)
        self.page_table = _int32(dev, self.table)
        self.host, self.caches = [], []
        for _ in range(2 if with_v else 1):
            self.caches.append(_tile(dev, torch.randn(num_blocks, n_kv, block, head_dim, generator=gen), dtype))
            self.host.append(dev.to_torch(self.caches[-1]).float())  # the values as stored

    def write_host(self, which: int, new: torch.Tensor, positions) -> None:
        """The host model of an update: user u's row (every head) at positions[u], packed by the packer."""
        for u, p in enumerate(positions):
            block = int(self.table[u, p // self.block])
            self.host[which][block, :, p % self.block] = packed_by_the_packer(new[0, u], self.dtype)

    def check_stored(self, seed, what: str) -> None:
        for which, (cache, host) in enumerate(zip(self.caches, self.host)):
            got = self.dev.to_torch(cache).float()
            bad = (got != host).nonzero().tolist()
            assert not bad, (
                f"seed {seed} {what}: cache {which} differs from the host model at {len(bad)} values, first {bad[:3]}"
            )


def _step_both(dev, update_and_attend, what: str):
    """update_and_attend(experimental, transformer) through patch_ttnn() (ttnn's namespaces) and directly (this
    package's functions under upstream's names); the two outputs, which must agree bit for bit."""
    assert not ttnn_patch.is_patched()
    with ttflashdecode.patch_ttnn():
        out = update_and_attend(ttnn.experimental, ttnn.transformer)
    patched = dev.to_torch(out).float()
    del out  # a sharded output leaves L1 before the next call plans its circular buffers
    out = update_and_attend(ttflashdecode, ttflashdecode)
    direct = dev.to_torch(out).float()
    del out
    assert torch.equal(patched, direct), f"{what}: patched and direct outputs differ"
    return patched, direct


def _check_both(outs, expected, seed, what, **kwargs):
    for path, out in zip(("patched", "direct"), outs):
        check_output(out, expected, seed, f"{what} ({path})", **kwargs)


def test_tt_transformers_update_then_paged_attention(emu_device):
    """Llama-3.1-8B on one N150 chip: 32 q heads / 8 kv heads x 128, bfloat16 paged cache (blocks of 64); K/V rows
    height-sharded one user per core; user 1 crosses a tile boundary, user 0 a block boundary."""
    seed = 900
    gen = torch.Generator().manual_seed(seed)
    batch, n_q, n_kv, d = 2, 32, 8, 128
    layer = PagedLayerCache(
        emu_device, gen, batch=batch, n_kv=n_kv, head_dim=d, block=64, per_user=16, dtype="bfloat16"
    )
    keys, values = layer.caches
    positions = [[511, 95], [512, 96]]
    current_pos = _int32(emu_device, torch.tensor(positions[0]))
    rows = _height_sharded(batch, [32, d])
    scale, program_config, compute_kernel_config = d**-0.5, _sdpa_config(256, q_chunk_size=256), _hifi4()
    for step, pos in enumerate(positions):
        emu_device.write(current_pos, torch.tensor(pos, dtype=torch.int32))
        k_new, v_new = (torch.randn(1, batch, n_kv, d, generator=gen) for _ in range(2))
        q = torch.randn(1, batch, n_q, d, generator=gen)
        k_heads_1BKD, v_heads_1BKD = (_tile(emu_device, x, memory_config=rows) for x in (k_new, v_new))
        q_heads_1BQD = _tile(emu_device, q, memory_config=rows)

        def update_and_attend(experimental, transformer):
            experimental.paged_update_cache(
                keys, k_heads_1BKD, update_idxs_tensor=current_pos, page_table=layer.page_table
            )
            experimental.paged_update_cache(
                values, v_heads_1BKD, update_idxs_tensor=current_pos, page_table=layer.page_table
            )
            if transformer is ttflashdecode:
                return ttflashdecode.paged_scaled_dot_product_attention_decode(
                    q_heads_1BQD,
                    keys,
                    values,
                    layer.page_table,
                    cur_pos_tensor=current_pos,
                    scale=scale,
                    program_config=program_config,
                    compute_kernel_config=compute_kernel_config,
                    memory_config=rows,
                )
            return transformer.paged_scaled_dot_product_attention_decode(
                q_heads_1BQD,
                keys,
                values,
                cur_pos_tensor=current_pos,
                page_table_tensor=layer.page_table,
                scale=scale,
                program_config=program_config,
                compute_kernel_config=compute_kernel_config,
                memory_config=rows,
            )

        outs = _step_both(emu_device, update_and_attend, f"step {step}")
        layer.write_host(0, k_new, pos)
        layer.write_host(1, v_new, pos)
        layer.check_stored(seed, f"step {step}")
        expected = golden.sdpa_decode(
            golden.quantize_like_device(q, "bfloat16"),
            layer.host[0],
            layer.host[1],
            cur_pos=pos,
            page_table=layer.table,
            scale=scale,
        )
        _check_both(outs, expected, seed, f"step {step}, cur_pos {pos}", kv_dtype="bfloat16")
        with ttflashdecode.patch_ttnn():  # tt_transformers frees the heads after the update
            for t in (k_heads_1BKD, v_heads_1BKD):
                ttnn.deallocate(t)
                assert not t.is_allocated()


def test_gpt_oss_update_then_attention_with_sinks_and_window(emu_device):
    """gpt-oss-20b, one chip of eight: 8 q heads / 1 kv head x 64, bfloat8_b paged caches, a 128-position window and
    sinks (gpt-oss's ``[heads, 32]`` upload, divided by the scale)."""
    seed = 910
    gen = torch.Generator().manual_seed(seed)
    batch, n_q, n_kv, d = 2, 8, 1, 64
    scaling = d**-0.5
    layer = PagedLayerCache(
        emu_device, gen, batch=batch, n_kv=n_kv, head_dim=d, block=64, per_user=8, dtype="bfloat8_b"
    )
    k_cache, v_cache = layer.caches
    sinks = torch.randn(n_q, generator=gen) * 2
    decode_sinks = torch.nn.functional.pad(sinks.view(-1, 1), (0, 31), "constant", value=0.0) / scaling
    tt_sinks = _tile(emu_device, decode_sinks)
    golden_sinks = scaling * golden.quantize_like_device(decode_sinks, "bfloat16")[:, 0].reshape(1, n_q)
    positions = [[300, 140], [301, 141]]
    position_idx = _int32(emu_device, torch.tensor(positions[0]))
    rows = _height_sharded(batch, [32, d])
    program_config, compute_kernel_config = _sdpa_config(128), _hifi4()
    for step, pos in enumerate(positions):
        emu_device.write(position_idx, torch.tensor(pos, dtype=torch.int32))
        k_new, v_new = (torch.randn(1, batch, n_kv, d, generator=gen) for _ in range(2))
        q = torch.randn(1, batch, n_q, d, generator=gen)
        tt_k, tt_v, tt_q = (_tile(emu_device, x, memory_config=rows) for x in (k_new, v_new, q))
        options = dict(
            cur_pos_tensor=position_idx,
            sliding_window_size=128,
            attention_sink=tt_sinks,
            scale=scaling,
            program_config=program_config,
            compute_kernel_config=compute_kernel_config,
            memory_config=ttnn.DRAM_MEMORY_CONFIG,
        )

        def update_and_attend(experimental, transformer):
            experimental.paged_update_cache(k_cache, tt_k, update_idxs_tensor=position_idx, page_table=layer.page_table)
            experimental.paged_update_cache(v_cache, tt_v, update_idxs_tensor=position_idx, page_table=layer.page_table)
            if transformer is ttflashdecode:
                return ttflashdecode.paged_scaled_dot_product_attention_decode(
                    tt_q, k_cache, v_cache, layer.page_table, **options
                )
            return transformer.paged_scaled_dot_product_attention_decode(
                tt_q, k_cache, v_cache, page_table_tensor=layer.page_table, **options
            )

        outs = _step_both(emu_device, update_and_attend, f"step {step}")
        layer.write_host(0, k_new, pos)
        layer.write_host(1, v_new, pos)
        layer.check_stored(seed, f"step {step}")
        expected = golden.sdpa_decode(
            golden.quantize_like_device(q, "bfloat16"),
            layer.host[0],
            layer.host[1],
            cur_pos=pos,
            page_table=layer.table,
            scale=scaling,
            sliding_window_size=128,
            attention_sink=golden_sinks,
        )
        _check_both(outs, expected, seed, f"step {step}, cur_pos {pos}", kv_dtype="bfloat8_b")


def test_deepseek_v3_mla_update_then_flash_mla(emu_device):
    """MLA1D decode: the new kvpe row ``[1, b, 1, 576]`` height-sharded [32, 576] one user per core, written into the
    bfloat8_b latent cache [blocks, 1, 32, 576]; then flash MLA with V = the cache's first 512 columns."""
    seed = 920
    gen = torch.Generator().manual_seed(seed)
    batch, n_q, head_dim, kv_lora_rank = 2, 128, 576, 512
    layer = PagedLayerCache(
        emu_device, gen, batch=batch, n_kv=1, head_dim=head_dim, block=32, per_user=8, dtype="bfloat8_b", with_v=False
    )
    (kvpe_cache,) = layer.caches
    positions = [[200, 63], [201, 64]]
    position_idxs = _int32(emu_device, torch.tensor(positions[0]))
    shards = batch * n_q // 32
    flash_mla = dict(
        head_dim_v=kv_lora_rank,
        scale=head_dim**-0.5 * 1.2,
        program_config=_sdpa_config(128),
        compute_kernel_config=_hifi4(),
        memory_config=_height_sharded(shards, [32, kv_lora_rank]),
    )
    for step, pos in enumerate(positions):
        emu_device.write(position_idxs, torch.tensor(pos, dtype=torch.int32))
        kvpe = torch.randn(1, batch, 1, head_dim, generator=gen)
        q = torch.randn(1, batch, n_q, head_dim, generator=gen)
        tt_kvpe = _tile(emu_device, kvpe, memory_config=_height_sharded(batch, [32, head_dim]))
        tt_q = _tile(emu_device, q, memory_config=_height_sharded(shards, [32, head_dim]))

        def update_and_attend(experimental, transformer):
            experimental.paged_update_cache(
                kvpe_cache, tt_kvpe, update_idxs_tensor=position_idxs, page_table=layer.page_table
            )
            if transformer is ttflashdecode:
                return ttflashdecode.paged_flash_multi_latent_attention_decode(
                    tt_q, kvpe_cache, layer.page_table, cur_pos_tensor=position_idxs, **flash_mla
                )
            return transformer.paged_flash_multi_latent_attention_decode(
                tt_q, kvpe_cache, page_table_tensor=layer.page_table, cur_pos_tensor=position_idxs, **flash_mla
            )

        outs = _step_both(emu_device, update_and_attend, f"step {step}")
        layer.write_host(0, kvpe, pos)
        layer.check_stored(seed, f"step {step}")
        ks = layer.host[0]
        expected = golden.sdpa_decode(
            golden.quantize_like_device(q, "bfloat16"),
            ks,
            ks[..., :kv_lora_rank],
            cur_pos=pos,
            page_table=layer.table,
            scale=flash_mla["scale"],
        )
        _check_both(outs, expected, seed, f"step {step}, cur_pos {pos}", kv_dtype="bfloat8_b")
