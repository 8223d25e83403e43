"""Model-level parity of the "ttflashdecode" attention against transformers' eager attention (tests and perf).

Small random-weight models (no weights are downloaded) of four families, each exercising what its decode needs:

- ``llama``: GQA, full attention;
- ``qwen3``: q/k norms, GQA;
- ``mistral``: a sliding window shorter than the context (every layer);
- ``gpt-oss``: attention sinks and alternating sliding / full layers (its MoE MLP runs in torch, both experts for
  every token: a top-k router's ties would swamp attention's rounding).

:func:`teacher_forced` feeds the same tokens to the eager model (one full forward) and to the device model (torch
prefill, then decode steps through ttflashdecode with the cache on the device) and compares the logits of every decode
step. :func:`greedy` generates with both through ``model.generate`` and compares the tokens. Batches are padded (users
of different prompt lengths) on the left, as ``generate`` expects them, or on the right (``padding="right"``); the
cache may hold more users than the batch (``max_batch_size``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch

from ttflashdecode.backend import import_ttnn
from ttflashdecode.integrations import hf as tthf

FAMILIES = ("llama", "qwen3", "mistral", "gpt-oss")
VOCAB = 256
# Weights drawn wider than transformers' default (0.02), so the random model's next-token distribution is peaked
# enough for greedy decoding to be a meaningful comparison (with 0.02 the logits of a 256-token vocabulary differ by
# ~1e-3 and any rounding flips the argmax).
INIT_RANGE = 0.08


def config_of(family: str, layers: int = 2):
    """A tiny config of ``family``: hidden 128, 4 q heads / 2 kv heads of head_dim 64."""
    import transformers

    common = dict(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=512,
        initializer_range=INIT_RANGE,
        tie_word_embeddings=False,
    )
    if family == "llama":
        return transformers.LlamaConfig(**common)
    if family == "qwen3":
        return transformers.Qwen3Config(**common)
    if family == "mistral":
        return transformers.MistralConfig(**common, sliding_window=16)
    if family == "gpt-oss":
        layer_types = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
        # Every token uses both experts: a top-k router is discontinuous (a logit change within rounding can swap an
        # expert and move the output by O(1)), which would test the router's ties, not attention.
        return transformers.GptOssConfig(
            **common, sliding_window=16, layer_types=layer_types, num_local_experts=2, num_experts_per_tok=2
        )
    raise ValueError(f"family={family!r}: expected one of {FAMILIES}")


def build(family: str, seed: int, layers: int = 2):
    """(eager model, ttflashdecode model): the same random weights."""
    import transformers

    torch.manual_seed(seed)
    config = config_of(family, layers)
    eager = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    if family == "gpt-oss":  # sinks start at zero: draw them, so they weigh in every softmax
        with torch.no_grad():
            for layer in eager.model.layers:
                layer.self_attn.sinks.normal_(0.0, 1.0)
    device_model = copy.deepcopy(eager)
    device_model.set_attn_implementation(tthf.ATTENTION_NAME)
    return eager, device_model


def without_windows_and_sinks(model):
    """A copy of an eager model whose attention sees every position (no sliding window) and has no sinks."""
    plain = copy.deepcopy(model)
    plain.config.sliding_window = 1 << 20
    if hasattr(plain.config, "layer_types"):
        plain.config.layer_types = ["full_attention"] * len(plain.config.layer_types)
    for layer in plain.model.layers:
        attention = layer.self_attn
        if getattr(attention, "sliding_window", None) is not None:
            attention.sliding_window = None
        if hasattr(attention, "sinks"):
            with torch.no_grad():
                attention.sinks.fill_(-1e4)  # exp(-1e4) == 0: no sink mass
    return plain


def padded_prompts(prompt_lengths: list[int], gen: torch.Generator, padding: str = "left", pad_id: int = 0):
    """(input_ids, attention_mask) of random prompts of the given lengths, padded to the longest on the ``padding``
    side ("left" or "right")."""
    if padding not in ("left", "right"):
        raise ValueError(f"padding={padding!r}: expected 'left' or 'right'")
    width = max(prompt_lengths)
    ids = torch.full((len(prompt_lengths), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for u, n in enumerate(prompt_lengths):
        columns = slice(width - n, width) if padding == "left" else slice(0, n)
        ids[u, columns] = torch.randint(1, VOCAB, (n,), generator=gen)
        mask[u, columns] = 1
    return ids, mask


def position_ids_of(mask: torch.Tensor) -> torch.Tensor:
    """Each token's position in its own sequence, as ``generate`` derives it (pads get 1)."""
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)


def pcc(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.flatten().double(), b.flatten().double()
    return float(torch.corrcoef(torch.stack([a, b]))[0, 1])


@dataclass
class ParityResult:
    family: str
    dtype: str
    paged: bool
    steps: int
    worst_pcc: float = 1.0
    worst_max_abs: float = 0.0  # max |logits - eager logits| over the steps
    prefill_max_abs: float = 0.0  # teacher_forced: the same at each user's last real prompt token (the prefill's)
    logits_scale: float = 0.0  # max |eager logits|, for reading worst_max_abs
    greedy_agree: int | None = None  # tokens equal to eager's, of greedy_total
    greedy_total: int | None = None
    read_bytes_per_token: float = 0.0  # device DRAM bytes read per decoded token (one user's token, all layers)
    launches_per_step: float = 0.0
    update_read_share: float = 0.0  # of the device bytes read, the share the cache updates read
    per_step: list[tuple[float, float]] = field(default_factory=list)  # (pcc, max_abs) per decode step
    # greedy: (user, step, eager's best logit minus eager's logit of the device's token) at each user's first difference
    first_differences: list[tuple[int, int, float]] = field(default_factory=list)
    tokens: tuple | None = None  # greedy: (eager tokens, device tokens)
    # max |eager logits - logits of eager without the family's windows and sinks| over the decode steps: what a
    # device that ignored them would be off by (0 for families without them)
    feature_gap: float = 0.0


def _cache(model, device, batch: int, dtype: str, block_size, max_cache_len: int, fp32_dest: bool = False):
    ttnn = import_ttnn()
    compute = None
    if fp32_dest:
        compute = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True)
    return tthf.DeviceKVCache(
        model.config,
        device=device,
        max_batch_size=batch,
        max_cache_len=max_cache_len,
        dtype=getattr(ttnn, dtype),
        block_size=block_size,
        compute_kernel_config=compute,
    )


def teacher_forced(
    family: str,
    device,
    *,
    dtype: str = "bfloat16",
    block_size=None,
    prompt_lengths=(20, 13),
    steps: int = 4,
    seed: int = 0,
    layers: int = 2,
    fp32_dest: bool = False,
    tokens_per_step: int = 1,
    padding: str = "left",
    max_batch_size: int | None = None,
    models=None,
) -> ParityResult:
    """Logits of ``steps`` decode steps (``tokens_per_step`` tokens per user each, 1 to 8: the same random tokens fed
    to both models) on the device against the eager model's full forward over the same sequence. ``models``: an
    (eager, device) pair from :func:`build` to reuse (else built from ``family``, ``seed``, ``layers``)."""
    gen = torch.Generator().manual_seed(seed)
    eager, model = models or build(family, seed, layers)
    ids, mask = padded_prompts(list(prompt_lengths), gen, padding)
    batch, width = ids.shape
    fed = torch.randint(1, VOCAB, (batch, steps * tokens_per_step), generator=gen)
    full_ids = torch.cat([ids, fed], dim=1)
    full_mask = torch.cat([mask, torch.ones_like(fed)], dim=1)
    result = ParityResult(family, dtype, block_size is not None, steps)
    with torch.no_grad():
        want = eager(input_ids=full_ids, attention_mask=full_mask, position_ids=position_ids_of(full_mask)).logits
        if family in ("mistral", "gpt-oss"):
            plain = without_windows_and_sinks(eager)
            ablated = plain(
                input_ids=full_ids, attention_mask=full_mask, position_ids=position_ids_of(full_mask)
            ).logits
            result.feature_gap = float((ablated - want)[:, width:].abs().max())
        cache = _cache(
            model, device, max_batch_size or batch, dtype, block_size, max_cache_len=128, fp32_dest=fp32_dest
        )
        with_cache = tthf.cache_argument(model, cache)
        prefill = model(input_ids=ids, attention_mask=mask, position_ids=position_ids_of(mask), **with_cache).logits
        # each user's last real prompt token: what the model predicts from the whole prompt
        last = (mask * torch.arange(width)).argmax(1)
        users = torch.arange(batch)
        result.prefill_max_abs = float((prefill[users, last] - want[users, last]).abs().max())
        n = tokens_per_step
        for step in range(steps):
            seen = full_mask[:, : width + (step + 1) * n]
            out = model(
                input_ids=fed[:, step * n : (step + 1) * n],
                attention_mask=seen,
                position_ids=position_ids_of(seen)[:, -n:],
                **with_cache,
            ).logits
            expected = want[:, width + step * n : width + (step + 1) * n]
            result.per_step.append((pcc(out, expected), float((out - expected).abs().max())))
            result.logits_scale = max(result.logits_scale, float(expected.abs().max()))
    result.worst_pcc = min(p for p, _ in result.per_step)
    result.worst_max_abs = max(m for _, m in result.per_step)
    _device_counts(result, cache, batch)
    return result


def greedy(
    family: str,
    device,
    *,
    dtype: str = "bfloat16",
    block_size=None,
    prompt_lengths=(12,),
    new_tokens: int = 32,
    seed: int = 0,
    layers: int = 2,
    padding: str = "left",
    max_batch_size: int | None = None,
    models=None,
) -> ParityResult:
    """``model.generate`` greedily, eager and on the device. ``greedy_agree`` counts each user's tokens up to its
    first difference (every later token depends on that one); ``first_differences`` says, for each user that differs,
    the step and by how much the device's token trails the eager model's best logit there (a tie within the logits'
    error is a difference of rounding, not of attention)."""
    gen = torch.Generator().manual_seed(seed)
    eager, model = models or build(family, seed, layers)
    ids, mask = padded_prompts(list(prompt_lengths), gen, padding)
    batch, width = ids.shape
    result = ParityResult(family, dtype, block_size is not None, new_tokens - 1)
    options = dict(max_new_tokens=new_tokens, do_sample=False, pad_token_id=0, eos_token_id=None)
    with torch.no_grad():
        ran = eager.generate(ids, attention_mask=mask, output_scores=True, return_dict_in_generate=True, **options)
        want, scores = ran.sequences[:, width:], torch.stack(ran.scores, 1)  # scores [b, new_tokens, vocab]
        cache = _cache(model, device, max_batch_size or batch, dtype, block_size, max_cache_len=width + new_tokens + 32)
        got = model.generate(ids, attention_mask=mask, **tthf.cache_argument(model, cache), **options)[:, width:]
    result.greedy_agree, result.greedy_total = 0, batch * new_tokens
    result.first_differences = []
    result.logits_scale = float(scores.abs().max())
    for u in range(batch):
        same = (got[u] == want[u]).int().cumprod(0)
        result.greedy_agree += int(same.sum())
        if int(same.sum()) < new_tokens:
            step = int(same.sum())
            row = scores[u, step]
            result.first_differences.append((u, step, float(row.max() - row[got[u, step]])))
    result.tokens = (want, got)
    _device_counts(result, cache, batch)
    return result


def _device_counts(result: ParityResult, cache, batch: int) -> None:
    stats = cache.stats
    if stats.decode_steps:
        result.read_bytes_per_token = stats.dram_read_bytes / (stats.decode_steps * batch)
        result.launches_per_step = stats.launches / stats.decode_steps
        result.update_read_share = stats.update_read_bytes / max(stats.dram_read_bytes, 1)
