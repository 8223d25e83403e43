"""The decode-attention calls of real model code written for ttnn, run over a few decode steps, against the golden.

Each test replays one model's call as that model makes it (tensor forms, argument names, configs), with positions
advancing every step in a device ``cur_pos_tensor`` rewritten in place (``device.write``, like
``ttnn.copy_host_to_device_tensor``), and runs every step twice:

* through ``with ttflashdecode.patch_ttnn(): ttnn.transformer.<op>(...)`` with upstream's argument names and forms,
* directly through ``ttflashdecode.<op>(...)``,

checking both against the golden model (on the values the device stores) and against each other (the same program,
so the same bits). Shapes are per chip; the models they come from:

* Llama-3.1-8B as tt_transformers decodes it (models/tt_transformers/tt/attention.py): q from
  nlp_create_qkv_heads_decode, L1 height-sharded one user per core; paged cache, page_table_tensor and
  cur_pos_tensor by keyword; scale; ttnn.SDPAProgramConfig; HiFi4; here a height-sharded output.
* Llama-3.1-70B on 8 chips: 8 q heads / 1 kv head per chip, bfloat8_b paged cache, DRAM output (as tt_transformers).
* gpt-oss (models/demos/gpt_oss/tt/attention/decode.py): attention sinks as gpt-oss uploads them (``[heads, 32]``,
  value in column 0, divided by the scale), sliding-window and full layers alternating.
* DeepSeek-V3 MLA (models/demos/deepseek_v3/tt/mla/mla1d.py): paged_flash_multi_latent_attention_decode(q, cache,
  page_table_tensor=, cur_pos_tensor=, head_dim_v=512, ...) over a bfloat8_b latent cache with one kv head.
* Llama-3.2-vision cross-attention (models/tt_transformers/tt/multimodal/llama_cross_attention.py): is_causal=False
  with a mask per step.
* A serving engine's paged decode (vLLM-style): a batch of slots, some inactive (-1), page tables whose entries past
  each user's position (and whole rows of inactive slots) hold garbage; users finish and join between steps.
"""

from __future__ import annotations

import pytest
import torch

import ttflashdecode
from decode_harness import height_sharded as _height_sharded
from decode_harness import hifi4 as _hifi4
from decode_harness import int32 as _int32
from decode_harness import sdpa_config as _sdpa_config
from decode_harness import tile as _tile
from output_checks import check_output
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden, ttnn_patch

ttnn = import_ttnn()

# The suite's thresholds against the golden on the same stored inputs (tests/decode_harness.py's bfloat16 / bfloat8_b
# values); the max-abs bound scales with the output's magnitude, as in tests/test_position_contract.py.


@pytest.fixture(autouse=True)
def no_leaked_patch():
    assert not ttnn_patch.is_patched(), "a previous test left ttnn patched"
    yield
    assert not ttnn_patch.is_patched(), "the test left ttnn patched"


# ---- helpers --------------------------------------------------------------------------------------------------


def _stored(x, dtype="bfloat16"):
    return golden.quantize_like_device(x, dtype)


def _paged(gen, users: int, per_user: int, spare: int = 3):
    num_blocks = users * per_user + spare
    table = torch.randperm(num_blocks, generator=gen)[: users * per_user].reshape(users, per_user).to(torch.int32)
    return num_blocks, table


def _run_both(dev, upstream_call, direct_call, what: str):
    """The step's call through the patched ttnn.transformer, then directly; both outputs as float torch tensors.
    They run the same program, so they must agree bit for bit."""
    with ttflashdecode.patch_ttnn():
        out = upstream_call(ttnn.transformer)
    patched = dev.to_torch(out).float()
    del out  # a sharded output leaves L1 before the next call plans its circular buffers
    out = direct_call()
    direct = dev.to_torch(out).float()
    del out
    assert torch.equal(torch.nan_to_num(patched), torch.nan_to_num(direct)) and torch.equal(
        patched.isnan(), direct.isnan()
    ), (
        f"{what}: the patched ttnn.transformer call and the direct call differ (max |diff| "
        f"{(patched - direct).abs().nan_to_num(float('inf')).max():.4g})"
    )
    return patched, direct


def _check_both(outs, expected, seed, what, **kwargs):
    for path, out in zip(("patched ttnn.transformer", "direct ttflashdecode"), outs):
        check_output(out, expected, seed, f"{what} ({path})", **kwargs)


# ---- Llama-3.1-8B and -70B as tt_transformers decodes them ---------------------------------------------------


def _tt_transformers_decode(
    dev, seed, *, batch, n_q, n_kv, head_dim, block, per_user, kv_dtype, out_sharded, positions
):
    """tt_transformers' Attention.forward_decode, paged branch: q height-sharded [32, head_dim] one user per core,
    keys/values positional, cur_pos_tensor / page_table_tensor / scale / program_config / compute_kernel_config /
    memory_config by keyword."""
    gen = torch.Generator().manual_seed(seed)
    num_blocks, table = _paged(gen, batch, per_user)
    k = torch.randn(num_blocks, n_kv, block, head_dim, generator=gen)
    v = torch.randn(num_blocks, n_kv, block, head_dim, generator=gen)
    keys, values = _tile(dev, k, kv_dtype), _tile(dev, v, kv_dtype)
    page_table = _int32(dev, table)
    current_pos = _int32(dev, torch.tensor(positions[0]))
    scale = head_dim**-0.5
    q_mem = _height_sharded(batch, [32, head_dim])
    memory_config = _height_sharded(batch, [32, head_dim]) if out_sharded else ttnn.DRAM_MEMORY_CONFIG
    program_config, compute_kernel_config = _sdpa_config(256, q_chunk_size=256), _hifi4()
    ks, vs = _stored(k, kv_dtype), _stored(v, kv_dtype)
    for step, pos in enumerate(positions):
        dev.write(current_pos, torch.tensor(pos, dtype=torch.int32))  # the decode loop's position update
        q = torch.randn(1, batch, n_q, head_dim, generator=gen)
        q_heads_1BQD = _tile(dev, q, memory_config=q_mem)
        outs = _run_both(
            dev,
            lambda transformer: transformer.paged_scaled_dot_product_attention_decode(
                q_heads_1BQD,
                keys,
                values,
                cur_pos_tensor=current_pos,
                page_table_tensor=page_table,
                scale=scale,
                program_config=program_config,
                compute_kernel_config=compute_kernel_config,
                memory_config=memory_config,
            ),
            lambda: ttflashdecode.paged_scaled_dot_product_attention_decode(
                q_heads_1BQD,
                keys,
                values,
                page_table,
                cur_pos_tensor=current_pos,
                scale=scale,
                program_config=program_config,
                compute_kernel_config=compute_kernel_config,
                memory_config=memory_config,
            ),
            f"step {step}",
        )
        expected = golden.sdpa_decode(_stored(q), ks, vs, cur_pos=pos, page_table=table, scale=scale)
        _check_both(outs, expected, seed, f"step {step}, cur_pos {pos}", kv_dtype=kv_dtype)


def test_llama_3_1_8b_tt_transformers_decode(emu_device):
    """One N150 chip: 32 q heads / 8 kv heads x 128, paged bfloat16 cache (blocks of 64), height-sharded output;
    user 0 crosses a block boundary, user 1 a tile boundary."""
    _tt_transformers_decode(
        emu_device,
        800,
        batch=2,
        n_q=32,
        n_kv=8,
        head_dim=128,
        block=64,
        per_user=16,
        kv_dtype="bfloat16",
        out_sharded=True,
        positions=[[510, 94], [511, 95], [512, 96]],
    )


def test_llama_3_1_70b_tt_transformers_decode(emu_device):
    """One chip of eight: 8 q heads / 1 kv head x 128, paged bfloat8_b cache, DRAM output (tt_transformers)."""
    _tt_transformers_decode(
        emu_device,
        801,
        batch=4,
        n_q=8,
        n_kv=1,
        head_dim=128,
        block=64,
        per_user=16,
        kv_dtype="bfloat8_b",
        out_sharded=False,
        positions=[[1000, 63, 300, 0], [1001, 64, 301, 1], [1002, 65, 302, 2]],
    )


# ---- gpt-oss: sinks and alternating sliding-window / full layers ------------------------------------------------


def test_gpt_oss_decode_sinks_and_alternating_windows(emu_device):
    """gpt-oss-20b on 8 chips: 8 q heads / 1 kv head x 64 per chip, scale 1/8; even layers use a 128-position sliding
    window, odd layers full attention; each layer has its own paged cache and sinks. The sinks are uploaded as
    gpt-oss does: ``pad(sinks.view(-1, 1), (0, 31)) / scaling``, this chip's [8, 32] rows."""
    seed = 810
    gen = torch.Generator().manual_seed(seed)
    batch, n_q, n_kv, head_dim, block, per_user = 2, 8, 1, 64, 64, 8
    scaling, sliding_window = head_dim**-0.5, 128
    program_config, compute_kernel_config = _sdpa_config(128), _hifi4()
    layers = []
    for layer in range(2):
        num_blocks, table = _paged(gen, batch, per_user)
        k = torch.randn(num_blocks, n_kv, block, head_dim, generator=gen)
        v = torch.randn(num_blocks, n_kv, block, head_dim, generator=gen)
        sinks = torch.randn(n_q, generator=gen) * 2  # the model's sinks, in scaled-logit space
        decode_sinks = torch.nn.functional.pad(sinks.view(-1, 1), (0, 31), "constant", value=0.0) / scaling
        layers.append(
            dict(
                window=sliding_window if layer % 2 == 0 else None,
                table=table,
                page_table=_int32(emu_device, table),
                k=_tile(emu_device, k, "bfloat8_b"),
                v=_tile(emu_device, v, "bfloat8_b"),
                ks=_stored(k, "bfloat8_b"),
                vs=_stored(v, "bfloat8_b"),
                sinks=_tile(emu_device, decode_sinks),
                golden_sinks=scaling * _stored(decode_sinks)[:, 0].reshape(1, n_q),
            )
        )
    positions = [[300, 140], [301, 141], [302, 142]]
    position_idx = _int32(emu_device, torch.tensor(positions[0]))
    for step, pos in enumerate(positions):
        emu_device.write(position_idx, torch.tensor(pos, dtype=torch.int32))
        for layer, w in enumerate(layers):
            q = torch.randn(1, batch, n_q, head_dim, generator=gen)
            tt_q = _tile(emu_device, q, memory_config=_height_sharded(batch, [32, head_dim]))
            outs = _run_both(
                emu_device,
                lambda transformer: transformer.paged_scaled_dot_product_attention_decode(
                    tt_q,
                    w["k"],
                    w["v"],
                    cur_pos_tensor=position_idx,
                    sliding_window_size=w["window"],
                    attention_sink=w["sinks"],
                    page_table_tensor=w["page_table"],
                    scale=scaling,
                    program_config=program_config,
                    compute_kernel_config=compute_kernel_config,
                    memory_config=ttnn.DRAM_MEMORY_CONFIG,
                ),
                lambda: ttflashdecode.paged_scaled_dot_product_attention_decode(
                    tt_q,
                    w["k"],
                    w["v"],
                    w["page_table"],
                    cur_pos_tensor=position_idx,
                    sliding_window_size=w["window"],
                    attention_sink=w["sinks"],
                    scale=scaling,
                    program_config=program_config,
                    compute_kernel_config=compute_kernel_config,
                    memory_config=ttnn.DRAM_MEMORY_CONFIG,
                ),
                f"step {step} layer {layer}",
            )
            expected = golden.sdpa_decode(
                _stored(q),
                w["ks"],
                w["vs"],
                cur_pos=pos,
                page_table=w["table"],
                scale=scaling,
                sliding_window_size=w["window"],
                attention_sink=w["golden_sinks"],
            )
            _check_both(
                outs,
                expected,
                seed,
                f"step {step} layer {layer} (window {w['window']}), cur_pos {pos}",
                kv_dtype="bfloat8_b",
            )


# ---- DeepSeek-V3 multi-latent attention ----------------------------------------------------------------------


def test_deepseek_v3_mla_decode(emu_device):
    """MLA1D._fwd_decode_flash_mla: q [1, b, 128, 576] L1 height-sharded [32, 576] (four shards per user), the
    kvpe cache [blocks, 1, 32, 576] bfloat8_b, V = its first 512 columns, output height-sharded [32, 512]."""
    seed = 820
    gen = torch.Generator().manual_seed(seed)
    batch, n_q, head_dim, kv_lora_rank, block, per_user = 2, 128, 576, 512, 32, 8
    num_blocks, table = _paged(gen, batch, per_user)
    kvpe = torch.randn(num_blocks, 1, block, head_dim, generator=gen)
    kvpe_cache = _tile(emu_device, kvpe, "bfloat8_b")
    page_table = _int32(emu_device, table)
    positions = [[200, 60], [201, 61], [202, 62]]
    position_idxs = _int32(emu_device, torch.tensor(positions[0]))
    shards = batch * n_q // 32
    flash_mla = {  # cfg["flash_mla"]
        "head_dim_v": kv_lora_rank,
        "scale": head_dim**-0.5 * 1.2,
        "program_config": _sdpa_config(128),
        "compute_kernel_config": _hifi4(),
        "memory_config": _height_sharded(shards, [32, kv_lora_rank]),
    }
    ks = _stored(kvpe, "bfloat8_b")
    for step, pos in enumerate(positions):
        emu_device.write(position_idxs, torch.tensor(pos, dtype=torch.int32))
        q = torch.randn(1, batch, n_q, head_dim, generator=gen)
        tt_q = _tile(emu_device, q, memory_config=_height_sharded(shards, [32, head_dim]))
        outs = _run_both(
            emu_device,
            lambda transformer: transformer.paged_flash_multi_latent_attention_decode(
                tt_q, kvpe_cache, page_table_tensor=page_table, cur_pos_tensor=position_idxs, **flash_mla
            ),
            lambda: ttflashdecode.paged_flash_multi_latent_attention_decode(
                tt_q, kvpe_cache, page_table, cur_pos_tensor=position_idxs, **flash_mla
            ),
            f"step {step}",
        )
        expected = golden.sdpa_decode(
            _stored(q), ks, ks[..., :kv_lora_rank], cur_pos=pos, page_table=table, scale=flash_mla["scale"]
        )
        _check_both(outs, expected, seed, f"step {step}, cur_pos {pos}", kv_dtype="bfloat8_b")


# ---- Llama-3.2-vision cross-attention --------------------------------------------------------------------------

VISION_MASK_FORMS = {
    # What the model hands over: prepare_inputs_decode builds [1, B, n_heads, vision_tokens] (the wheel's docstring
    # form "[1 x b x nh x s]"; upstream validates only dims 2 and 3).
    "model-1-b-nh-s": lambda mask_b_nh_s: mask_b_nh_s.unsqueeze(0),
    # The form /tmp/upstream_forms.md and ttnn's golden use: [b, 1, nh, s] (same tiles in the same order).
    "b-1-nh-s": lambda mask_b_nh_s: mask_b_nh_s.unsqueeze(1),
}


@pytest.mark.parametrize(
    "mask_form",
    [
        "model-1-b-nh-s",
        "b-1-nh-s",
    ],
)
def test_llama_3_2_vision_cross_attention_decode(emu_device, mask_form):
    """LlamaCrossAttention.forward_decode: xq [1, B, heads, 64] in DRAM, the cross-attention cache [B, kv heads,
    vision tokens, 64], is_causal=False with a mask per step (0 where the text token sees an image chunk, the
    float32 minimum elsewhere; a user without an image gets a zero mask), SDPAProgramConfig(q_chunk_size=32,
    k_chunk_size=128)."""
    seed = 830
    gen = torch.Generator().manual_seed(seed)
    batch, n_heads, n_kv, head_dim, chunk_tokens, chunks = 2, 8, 2, 64, 128, 3
    vision_tokens = chunk_tokens * chunks
    scale = head_dim**-0.5
    k = torch.randn(batch, n_kv, vision_tokens, head_dim, generator=gen)
    v = torch.randn(batch, n_kv, vision_tokens, head_dim, generator=gen)
    xk, xv = _tile(emu_device, k), _tile(emu_device, v)
    program_config, compute_kernel_config = _sdpa_config(128, q_chunk_size=32), _hifi4()
    negative_inf = torch.finfo(torch.float32).min  # get_negative_inf_value(torch.float32)
    visible_chunks = [[2, 0], [2, 3], [1, 3]]  # per step, per user (0: no image, a zero mask)
    for step, per_user in enumerate(visible_chunks):
        mask = torch.zeros(batch, n_heads, vision_tokens)
        for u, n in enumerate(per_user):
            if n:
                mask[u, :, n * chunk_tokens :] = negative_inf
        q = torch.randn(1, batch, n_heads, head_dim, generator=gen)
        xq = _tile(emu_device, q)
        xattn_mask = _tile(emu_device, VISION_MASK_FORMS[mask_form](mask))
        outs = _run_both(
            emu_device,
            lambda transformer: transformer.scaled_dot_product_attention_decode(
                xq,
                xk,
                xv,
                is_causal=False,
                attn_mask=xattn_mask,
                scale=scale,
                program_config=program_config,
                compute_kernel_config=compute_kernel_config,
            ),
            lambda: ttflashdecode.scaled_dot_product_attention_decode(
                xq,
                xk,
                xv,
                is_causal=False,
                attn_mask=xattn_mask,
                scale=scale,
                program_config=program_config,
                compute_kernel_config=compute_kernel_config,
            ),
            f"step {step}",
        )
        golden_mask = _stored(mask).unsqueeze(2)  # [b, heads, q_len 1, tokens]
        expected = golden.sdpa_decode(
            _stored(q), _stored(k), _stored(v), is_causal=False, attn_mask=golden_mask, scale=scale
        )
        _check_both(outs, expected, seed, f"step {step}, visible chunks {per_user}")


# ---- a serving engine's paged decode ----------------------------------------------------------------------------

GARBAGE_ENTRIES = (-1, 2**31 - 1, -(2**31), 10**6)


def test_serving_engine_paged_decode_with_inactive_slots(emu_device):
    """Eight slots of a vLLM-style batch: inactive slots at -1 with page-table rows of garbage, active users' rows
    holding garbage past their last block; between steps a user finishes (its slot goes to -1) and another joins
    an empty slot. cur_pos_tensor and the page table are rewritten in place every step."""
    seed = 840
    gen = torch.Generator().manual_seed(seed)
    slots, n_q, n_kv, head_dim, block, per_user = 8, 8, 2, 64, 32, 8
    num_blocks = 40
    scale = head_dim**-0.5
    k = torch.randn(num_blocks, n_kv, block, head_dim, generator=gen)
    v = torch.randn(num_blocks, n_kv, block, head_dim, generator=gen)
    keys, values = _tile(emu_device, k, "bfloat8_b"), _tile(emu_device, v, "bfloat8_b")
    ks, vs = _stored(k, "bfloat8_b"), _stored(v, "bfloat8_b")
    free_blocks = torch.randperm(num_blocks, generator=gen).tolist()
    owned: dict[int, list[int]] = {}  # slot -> its blocks, in order

    def blocks_for(slot, pos):
        while len(owned.setdefault(slot, [])) < pos // block + 1:
            owned[slot].append(free_blocks.pop())
        return owned[slot]

    steps = [  # per step, each slot's position (-1: inactive)
        [100, -1, 37, 250, -1, -1, 5, -1],
        [101, -1, 38, 251, -1, -1, 6, -1],
        [102, 0, 39, -1, -1, -1, 7, -1],  # slot 3 finished, a new user in slot 1
        [103, 1, 40, -1, -1, 31, 8, -1],  # and one more in slot 5
    ]
    cur_pos_tensor = _int32(emu_device, torch.tensor(steps[0]))
    page_table = _int32(emu_device, torch.zeros(slots, per_user, dtype=torch.int32))
    program_config, compute_kernel_config = _sdpa_config(0), _hifi4()
    for step, positions in enumerate(steps):
        for slot, pos in enumerate(positions):
            if pos < 0 and slot in owned:  # finished: the engine frees its blocks
                free_blocks.extend(owned.pop(slot))
        table = torch.tensor(
            [GARBAGE_ENTRIES[(s + j) % len(GARBAGE_ENTRIES)] for s in range(slots) for j in range(per_user)],
            dtype=torch.int32,
        ).reshape(slots, per_user)
        for slot, pos in enumerate(positions):
            if pos >= 0:
                mine = blocks_for(slot, pos)
                table[slot, : len(mine)] = torch.tensor(mine, dtype=torch.int32)
        emu_device.write(cur_pos_tensor, torch.tensor(positions, dtype=torch.int32))
        emu_device.write(page_table, table)
        q = torch.randn(1, slots, n_q, head_dim, generator=gen)
        tt_q = _tile(emu_device, q, memory_config=_height_sharded(slots, [32, head_dim]))
        outs = _run_both(
            emu_device,
            lambda transformer: transformer.paged_scaled_dot_product_attention_decode(
                tt_q,
                keys,
                values,
                cur_pos_tensor=cur_pos_tensor,
                page_table_tensor=page_table,
                scale=scale,
                program_config=program_config,
                compute_kernel_config=compute_kernel_config,
                memory_config=ttnn.DRAM_MEMORY_CONFIG,
            ),
            lambda: ttflashdecode.paged_scaled_dot_product_attention_decode(
                tt_q,
                keys,
                values,
                page_table,
                cur_pos_tensor=cur_pos_tensor,
                scale=scale,
                program_config=program_config,
                compute_kernel_config=compute_kernel_config,
                memory_config=ttnn.DRAM_MEMORY_CONFIG,
            ),
            f"step {step}",
        )
        clean = torch.where((table >= 0) & (table < num_blocks), table, torch.zeros_like(table))  # golden indexing
        expected = golden.sdpa_decode(_stored(q), ks, vs, cur_pos=positions, page_table=clean, scale=scale)
        inactive = tuple(s for s, p in enumerate(positions) if p < 0)
        _check_both(
            outs, expected, seed, f"step {step}, positions {positions}", kv_dtype="bfloat8_b", zero_users=inactive
        )
