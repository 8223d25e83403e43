"""A sliding-window layer's decode loop over a ring cache (upstream's ``cache_position_modulo``), against torch on
the full history.

A sliding-window layer (gpt-oss's sliding layers, Mistral's window W) keeps only a ring of W rounded up to whole
blocks: position p lives at ring row ``p % ring`` of the user's page-table row. Each step replays the model's decode:
``paged_update_cache(k_cache, k_heads, update_idxs_tensor=pos, page_table=..., cache_position_modulo=ring)`` (and V),
the new rows height-sharded one user per core as nlp_create_qkv_heads_decode hands them over, then
``paged_scaled_dot_product_attention_decode(..., cur_pos_tensor=pos, sliding_window_size=W,
cache_position_modulo=ring)``; the device position tensor is rewritten in place, so one program of each serves every
step. Steps alternate between ``patch_ttnn()`` (ttnn's names) and this package's functions, and run the users far past
the ring's length, across wraps. Expected: torch attention over each user's whole history (every row ever written,
packed as the packer packs it into the cache), not over the ring, so a wrong wrap in either the update or the
attention reads a stale or never-written row and fails. The cache starts as garbage (NaN, Inf, 3e38) everywhere no
history was written, and the direct path's output is poisoned with NaN. One user's history comes from a ring prefill
(``paged_fill_cache`` with ``cache_position_modulo`` and ``valid_seq_len_tensor``, direct for K, patched for V).
"""

from __future__ import annotations

import torch

import ttflashdecode
from decode_harness import seed_for
from output_checks import check_output
from packer_model import packed_by_the_packer
from test_cache_ops_models import _height_sharded, _hifi4, _int32, _sdpa_config, _tile
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import golden

ttnn = import_ttnn()
GARBAGE = (float("nan"), float("inf"), float("-inf"), 3.0e38)


def _window_attention(q: torch.Tensor, k_full: torch.Tensor, v_full: torch.Tensor, positions, window: int, scale):
    """torch attention of each user's query over the last ``window`` positions of its full history ``[b, n_kv, S,
    d]`` (q ``[1, b, n_q, d]``, heads grouped over the kv heads); ``[1, b, n_q, d]``."""
    out = torch.empty_like(q, dtype=torch.float64)
    group = q.shape[2] // k_full.shape[1]
    for u, p in enumerate(positions):
        lo = max(0, p - window + 1)
        k = k_full[u, :, lo : p + 1].double().repeat_interleave(group, dim=0)
        v = v_full[u, :, lo : p + 1].double().repeat_interleave(group, dim=0)
        scores = torch.einsum("hd,hsd->hs", q[0, u].double(), k) * scale
        out[0, u] = torch.einsum("hs,hsd->hd", torch.softmax(scores, dim=-1), v)
    return out.float()


def test_sliding_window_decode_loop_on_a_ring_cache(emu_device):
    """gpt-oss-like sliding layer on one chip: 8 q heads / 1 kv head x 64, bfloat8_b caches, window W = 40 (not a
    multiple of the block) over a ring of 64 positions (two blocks of 32) at the head of 4-column page-table rows
    (the spare columns name garbage blocks: a write or read past the ring would show). Eight steps, each user crossing
    a wrap: user 0 from 60 (the first wrap, at 64), user 1 from 188 (the third, at 192), user 2 from 1019 right
    after its ring prefill (the sixteenth, at 1024); user 3 from 0, a young ring before any wrap."""
    seed = seed_for("test_sliding_window_decode_loop_on_a_ring_cache")
    gen = torch.Generator().manual_seed(seed)
    batch, n_q, n_kv, d, block, ring, window, steps = 4, 8, 1, 64, 32, 64, 40, 8
    scale = d**-0.5
    start = [60, 188, 1019, 0]
    ring_blocks, columns = ring // block, 4
    num_blocks = batch * columns
    order = torch.randperm(num_blocks, generator=gen)
    table = order[: batch * ring_blocks].reshape(batch, ring_blocks)
    spare = order[batch * ring_blocks :].reshape(batch, columns - ring_blocks)
    table = torch.cat([table, spare], dim=1).to(torch.int32)

    # The history before the loop: users 0 and 1 have their last ring positions in the ring (as earlier steps left
    # them); user 2's 1019-token prompt is prefilled by paged_fill_cache into the ring, from a traced prefill's
    # padded input of 1088 positions with valid_seq_len_tensor = 1019 (so the ring keeps 960..1023, not the padding
    # 1024..1087). Garbage everywhere else; older rows are never in a window again (the full history leaves them 0).
    prefilled, padded_len = 2, 1088
    history_len = max(start) + steps
    full = [torch.zeros(batch, n_kv, history_len, d) for _ in range(2)]  # every row ever written, as stored
    prompts = [torch.randn(1, n_kv, padded_len, d, generator=gen) for _ in range(2)]
    stored = []
    for which in range(2):
        cache = torch.tensor(GARBAGE)[torch.randint(len(GARBAGE), (num_blocks, n_kv, block, d), generator=gen)]
        for u, first in enumerate(start):
            for p in range(max(0, first - ring), first):
                row = prompts[which][0, :, p] if u == prefilled else torch.randn(n_kv, d, generator=gen)
                full[which][u, :, p] = packed_by_the_packer(row, "bfloat8_b")
                if u != prefilled:
                    r = p % ring
                    cache[table[u, r // block], :, r % block] = full[which][u, :, p]
        stored.append(_tile(emu_device, cache, "bfloat8_b"))
    k_cache, v_cache = stored
    spare_before = [torch.nan_to_num(emu_device.to_torch(c).float()[spare.flatten().long()]) for c in stored]
    page_table = _int32(emu_device, table)
    valid_len = _int32(emu_device, torch.tensor([start[prefilled]]))
    fill = dict(batch_idx=prefilled, cache_position_modulo=ring, valid_seq_len_tensor=valid_len)
    ttflashdecode.paged_fill_cache(k_cache, _tile(emu_device, prompts[0]), page_table, **fill)
    with ttflashdecode.patch_ttnn():
        ttnn.experimental.paged_fill_cache(v_cache, _tile(emu_device, prompts[1]), page_table, **fill)
    position = _int32(emu_device, torch.tensor(start))
    rows = _height_sharded(batch, [32, d])
    program_config, compute_kernel_config = _sdpa_config(64), _hifi4()
    options = dict(
        sliding_window_size=window,
        cache_position_modulo=ring,
        scale=scale,
        program_config=program_config,
        compute_kernel_config=compute_kernel_config,
    )

    for step in range(steps):
        positions = [s + step for s in start]
        emu_device.write(position, torch.tensor(positions, dtype=torch.int32))
        k_new, v_new = (torch.randn(1, batch, n_kv, d, generator=gen) for _ in range(2))
        q = torch.randn(1, batch, n_q, d, generator=gen)
        tt_k, tt_v = (_tile(emu_device, x, memory_config=rows) for x in (k_new, v_new))
        tt_q = _tile(emu_device, q)
        patched = step % 2 == 1
        if patched:
            with ttflashdecode.patch_ttnn():
                for cache, new in ((k_cache, tt_k), (v_cache, tt_v)):
                    ttnn.experimental.paged_update_cache(
                        cache, new, update_idxs_tensor=position, page_table=page_table, cache_position_modulo=ring
                    )
                out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
                    tt_q, k_cache, v_cache, page_table_tensor=page_table, cur_pos_tensor=position, **options
                )
        else:
            for cache, new in ((k_cache, tt_k), (v_cache, tt_v)):
                ttflashdecode.paged_update_cache(
                    cache, new, update_idxs_tensor=position, page_table=page_table, cache_position_modulo=ring
                )
            out = ttflashdecode.paged_scaled_dot_product_attention_decode(
                tt_q,
                k_cache,
                v_cache,
                page_table,
                cur_pos_tensor=position,
                output_tensor=_tile(emu_device, torch.full(tuple(q.shape), float("nan"))),
                **options,
            )
        for which, new in enumerate((k_new, v_new)):
            for u, p in enumerate(positions):
                full[which][u, :, p] = packed_by_the_packer(new[0, u], "bfloat8_b")
        expected = _window_attention(golden.quantize_like_device(q, "bfloat16"), *full, positions, window, scale)
        what = f"step {step} ({'patched' if patched else 'direct'}), positions {positions}"
        check_output(emu_device.to_torch(out).float(), expected, seed, what, kv_dtype="bfloat8_b")
    # The ring holds exactly each user's last `ring` rows; the spare blocks are untouched garbage.
    for which, cache in enumerate(stored):
        got = emu_device.to_torch(cache).float()
        for u, p in enumerate(positions):
            for pos in range(max(0, p - ring + 1), p + 1):
                r = pos % ring
                assert torch.equal(got[table[u, r // block], :, r % block], full[which][u, :, pos]), (
                    f"seed {seed}: cache {which} user {u} position {pos} is not at ring row {r}"
                )
        spare_after = torch.nan_to_num(got[spare.flatten().long()])
        assert torch.equal(spare_after, spare_before[which]), f"seed {seed}: cache {which}: a spare block was written"
