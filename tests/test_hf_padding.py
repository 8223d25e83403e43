"""transformers through DeviceKVCache for the prompts users send: every prompt length 1..16, left and right padding,
batches of 1 to 4 users (also fewer than the cache's max_batch_size), bfloat16 and bfloat8_b caches, paged and not.

One tiny random Llama (2 layers, 4 q / 2 kv heads, head_dim 64; ttflashdecode/integrations/hf_parity.py) serves every
case. A case is one batch of users with different prompt lengths: the prefill (a first forward of any length, short
ones included) and one decode step, teacher-forced, against the eager model's forward over the same tokens; each
length appears once with left and once with right padding across the cases, so the sweep costs 12 prefills and 12
decode steps. Thresholds are test_hf's: logits PCC >= 0.999 and max |logits - eager| within MAX_ABS_REL of max |eager
logits|, at each user's last prompt token (the prefill) and at the decode step. Greedy generation (bfloat16) must give
eager's tokens except at a near tie (test_hf's TIE_REL).

Also here: the cache's refusals (reuse without reset(), a batch larger than the cache, a torch dtype it cannot hold)
and that the integration registers its attention through transformers' public interface only, with no FutureWarning
from handing over the cache.
"""

from __future__ import annotations

import warnings

import pytest
import torch

pytest.importorskip("transformers", minversion="5.0", reason="transformers 5.x not installed: pip install '.[hf]'")

import transformers  # noqa: E402

from tests.decode_harness import emulated_n150, seed_for, tag  # noqa: E402
from tests.test_hf import MAX_ABS_REL, TIE_REL  # noqa: E402
from ttemu.ttnn_env import import_ttnn  # noqa: E402
from ttflashdecode.integrations import hf as tthf  # noqa: E402
from ttflashdecode.integrations import hf_parity  # noqa: E402


@pytest.fixture(scope="module")
def dev():
    yield from emulated_n150(min_hang_ms=5000)


@pytest.fixture(scope="module")
def models():
    """(eager, device) Llama pair shared by every case (the device model's only state is the cache each case makes)."""
    return hf_parity.build("llama", seed_for("test_hf_padding.models"))


# (padding, dtype, block_size, max_batch_size, prompt lengths): each side covers 1..16 once; batches of 1-4 users,
# five of the twelve below the cache's max_batch_size; long and short prompts together (up to 15 pads).
CASES = [
    ("left", "bfloat16", None, 4, (16, 1, 9, 6)),
    ("left", "bfloat8_b", 32, 4, (15, 2, 10)),
    ("left", "bfloat16", 32, 2, (14, 3)),
    ("left", "bfloat8_b", None, 4, (13, 4, 11, 7)),
    ("left", "bfloat16", None, 2, (12,)),
    ("left", "bfloat8_b", 32, 4, (8, 5)),
    ("right", "bfloat8_b", 32, 4, (1, 16, 5, 12)),
    ("right", "bfloat16", None, 4, (2, 15, 8)),
    ("right", "bfloat8_b", None, 2, (3, 14)),
    ("right", "bfloat16", 32, 4, (4, 13, 6, 10)),
    ("right", "bfloat8_b", 32, 2, (11,)),
    ("right", "bfloat16", None, 4, (7, 9)),
]


def test_cases_cover_every_length_on_both_sides():
    for side in ("left", "right"):
        lengths = sorted(n for padding, *_, prompt in CASES if padding == side for n in prompt)
        assert lengths == list(range(1, 17)), f"{side} padding covers {lengths}"
    assert {len(c[4]) for c in CASES} == {1, 2, 3, 4} and any(len(c[4]) < c[3] for c in CASES)


@pytest.mark.parametrize(
    "padding,dtype,block_size,max_batch_size,prompt_lengths",
    CASES,
    ids=[f"{c[0]}-{c[1]}-{'paged' if c[2] else 'flat'}-max{c[3]}-{'_'.join(map(str, c[4]))}" for c in CASES],
)
def test_prompt_lengths_and_padding(dev, models, padding, dtype, block_size, max_batch_size, prompt_lengths):
    """The prefill's last-token logits and the next decode step's logits match eager for every user of the batch."""
    seed = seed_for(f"test_prompt_lengths_and_padding[{padding}-{dtype}-{block_size}-{prompt_lengths}]")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # handing over the cache must not be a deprecated form
        r = hf_parity.teacher_forced(
            "llama",
            dev,
            dtype=dtype,
            block_size=block_size,
            prompt_lengths=prompt_lengths,
            steps=1,
            seed=seed,
            padding=padding,
            max_batch_size=max_batch_size,
            models=models,
        )
    bound = MAX_ABS_REL[dtype] * r.logits_scale
    where = (
        f"{tag(seed)} {padding}-padded {prompt_lengths} in a cache of {max_batch_size} ({dtype}, block {block_size})"
    )
    assert r.prefill_max_abs <= bound, f"{where}: prefill max |err| {r.prefill_max_abs:.4f} > {bound:.4f}"
    assert r.worst_pcc >= 0.999, f"{where}: decode PCC {r.worst_pcc:.5f} < 0.999"
    assert r.worst_max_abs <= bound, f"{where}: decode max |err| {r.worst_max_abs:.4f} > {bound:.4f}"
    assert r.launches_per_step > 0, f"{where}: the decode step did not run on the device"


@pytest.mark.parametrize("padding,max_batch_size,prompt_lengths", [("left", 2, (7, 3)), ("right", 4, (16, 1, 5))])
def test_greedy_generation_with_padding(dev, models, padding, max_batch_size, prompt_lengths):
    """model.generate with a bfloat16 cache gives eager's tokens (users part from eager only at a near tie)."""
    seed = seed_for(f"test_greedy_generation_with_padding[{padding}-{prompt_lengths}]")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        r = hf_parity.greedy(
            "llama",
            dev,
            dtype="bfloat16",
            prompt_lengths=prompt_lengths,
            new_tokens=4,
            seed=seed,
            padding=padding,
            max_batch_size=max_batch_size,
            models=models,
        )
    want, got = r.tokens
    tie = TIE_REL * r.logits_scale
    for user, step, deficit in r.first_differences:
        assert deficit <= tie, (
            f"{tag(seed)} user {user} parts from eager at step {step}, where eager's best logit leads the device's "
            f"token by {deficit:.4f} > {tie:.4f} (not a tie)\neager  {want.tolist()}\ndevice {got.tolist()}"
        )


def test_reuse_needs_reset(dev, models):
    """A used cache refuses a new prompt (both a long one and a short one) naming reset(); after reset() the same
    cache serves the new prompt as a fresh one would."""
    _, model = models
    gen = torch.Generator().manual_seed(seed_for("test_reuse_needs_reset"))
    cache = hf_parity._cache(model, dev, 2, "bfloat16", None, max_cache_len=64)
    with_cache = tthf.cache_argument(model, cache)
    first, first_mask = hf_parity.padded_prompts([3, 2], gen)
    with torch.no_grad():
        model(
            input_ids=first, attention_mask=first_mask, position_ids=hf_parity.position_ids_of(first_mask), **with_cache
        )
        for width in (12, 4):  # chunked prefill; a short prompt that does not append
            ids, mask = hf_parity.padded_prompts([width, 2], gen)
            with pytest.raises((ValueError, NotImplementedError), match=r"cache\.reset\(\)"):
                model(input_ids=ids, attention_mask=mask, position_ids=hf_parity.position_ids_of(mask), **with_cache)
        # one token whose mask says both users' 3 earlier tokens are real (user 1 has 2 in the cache)
        with pytest.raises(ValueError, match=r"see \[3, 3\] earlier tokens .* holds \[3, 2\].*cache\.reset\(\)"):
            model(input_ids=first[:, :1], attention_mask=torch.ones(2, 4, dtype=torch.long), **with_cache)
        cache.reset()
    seed = seed_for("test_reuse_needs_reset.after")
    eager, _ = models
    ids, mask = hf_parity.padded_prompts([5, 2], torch.Generator().manual_seed(seed))
    with torch.no_grad():
        want = eager(input_ids=ids, attention_mask=mask, position_ids=hf_parity.position_ids_of(mask)).logits
        model(input_ids=ids, attention_mask=mask, position_ids=hf_parity.position_ids_of(mask), **with_cache)
        step = torch.randint(1, hf_parity.VOCAB, (2, 1), generator=torch.Generator().manual_seed(seed))
        full = torch.cat([ids, step], 1)
        full_mask = torch.cat([mask, torch.ones_like(step)], 1)
        got = model(
            input_ids=step,
            attention_mask=full_mask,
            position_ids=hf_parity.position_ids_of(full_mask)[:, -1:],
            **with_cache,
        ).logits[:, -1]
        want = eager(input_ids=full, attention_mask=full_mask, position_ids=hf_parity.position_ids_of(full_mask)).logits
    bound = MAX_ABS_REL["bfloat16"] * float(want[:, -1].abs().max())
    err = float((got - want[:, -1]).abs().max())
    assert err <= bound, f"{tag(seed)}: after reset() the decode step is off by {err:.4f} > {bound:.4f}"


def test_cache_refusals(dev, models):
    """Errors name the argument and the value, raised before anything runs on the device."""
    ttnn = import_ttnn()
    config = models[1].config
    with pytest.raises(ValueError, match=r"dtype=torch\.float16: expected one of ttnn\.bfloat16.*torch\.bfloat16"):
        tthf.DeviceKVCache(config, device=dev, max_batch_size=2, max_cache_len=64, dtype=torch.float16)
    cache = tthf.DeviceKVCache(config, device=dev, max_batch_size=2, max_cache_len=64, dtype=torch.bfloat16)
    assert cache.dtype == ttnn.bfloat16
    ids = torch.ones(3, 4, dtype=torch.long)
    with pytest.raises(ValueError, match=r"input batch 3 is larger than DeviceKVCache\(max_batch_size=2\)"):
        with torch.no_grad():
            models[1](input_ids=ids, **tthf.cache_argument(models[1], cache))
    assert cache.stats.prefill_launches == 0 and all(layer.seen == 0 for layer in cache.layers)


def test_registered_through_public_interface_only():
    """The attention is a registered AttentionInterface function under a name transformers does not take for a
    FlashAttention kernel; no transformers method is replaced."""
    from transformers import AttentionInterface, PreTrainedModel
    from transformers.utils.generic import is_flash_attention_requested

    assert tthf.ATTENTION_NAME in AttentionInterface().valid_keys()
    assert not is_flash_attention_requested(requested_attention_implementation=tthf.ATTENTION_NAME)
    check = PreTrainedModel._check_and_adjust_attn_implementation
    assert check.__module__ == "transformers.modeling_utils" and not hasattr(check, "_ttflashdecode")
    model = transformers.LlamaForCausalLM(hf_parity.config_of("llama", layers=1))
    model.set_attn_implementation(tthf.ATTENTION_NAME)
    assert model.config._attn_implementation == tthf.ATTENTION_NAME
