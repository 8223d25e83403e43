"""Model-level parity: tiny random-weight transformers models decoding through ttflashdecode vs the eager model.

For each family (Llama, Qwen3, Mistral with a sliding window, gpt-oss with sinks and alternating windows) and cache
dtype: teacher-forced decode steps (the same tokens fed to both; batch 2, prompts of 20 and 13 tokens, left-padded)
with the worst logits PCC and max |error| over the steps, greedy generation agreement (32 tokens per user, tokens up
to each user's first difference, and the eager logit lead of eager's token over the device's token there: a lead
within the logits' error is a near tie), and what the device did per decoded token (DRAM bytes read, from the
emulator's counters, and launches per decode step).

    .venv/bin/python perf/model_parity.py                      # every family, bfloat16 and bfloat8_b, paged
    .venv/bin/python perf/model_parity.py --families llama --dtypes bfloat16 --steps 4 --no-greedy

No weights are downloaded (models are built from small configs: ttflashdecode/integrations/hf_parity.py). Nothing
here is timed: the counters are functional facts of the emulated runs.
"""

from __future__ import annotations

import argparse
import time

import harness

from ttflashdecode.integrations import hf_parity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(hf_parity.FAMILIES))
    parser.add_argument("--dtypes", default="bfloat16,bfloat8_b")
    parser.add_argument("--steps", type=int, default=8, help="teacher-forced decode steps")
    parser.add_argument("--tokens", type=int, default=32, help="greedy tokens per user")
    parser.add_argument("--block-size", type=int, default=32, help="paged cache block (0: unpaged)")
    parser.add_argument("--no-greedy", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    block = args.block_size or None

    # The emulator calls a program hung when no thread progresses for default_hang_ms of wall time; on a loaded
    # machine a runnable thread can wait longer than the 200 ms default for a CPU.
    dev = harness.open_device(hang_ms=5000)
    rows = []
    started = time.time()
    for family in args.families.split(","):
        for dtype in args.dtypes.split(","):
            tf = hf_parity.teacher_forced(family, dev, dtype=dtype, block_size=block, steps=args.steps, seed=args.seed)
            greedy = "-"
            if not args.no_greedy:
                g = hf_parity.greedy(
                    family,
                    dev,
                    dtype=dtype,
                    block_size=block,
                    prompt_lengths=(12, 7),
                    new_tokens=args.tokens,
                    seed=args.seed,
                )
                ties = ", ".join(f"u{u}@{s}: {lead:.3f}" for u, s, lead in g.first_differences) or "none"
                greedy = f"{g.greedy_agree}/{g.greedy_total} (first differences: {ties})"
            rows.append(
                (
                    family,
                    dtype,
                    tf.steps,
                    tf.worst_pcc,
                    tf.worst_max_abs / tf.logits_scale,
                    greedy,
                    tf.read_bytes_per_token,
                    tf.launches_per_step,
                    tf.update_read_share,
                )
            )
            print(f"# {time.time() - started:.0f} s: {_row(*rows[-1])}", flush=True)
    dev.close()

    paged = f"paged, block {block}" if block else "unpaged"
    print(
        f"\nteacher-forced: batch 2 (prompts 20 and 13 tokens), {args.steps} decode steps, {paged}; greedy: "
        f"{args.tokens} tokens for 2 users (prompts 12 and 7)\n"
    )
    print(
        "| family | cache | steps | worst logits PCC | worst max \\|err\\| / max \\|logits\\| "
        "| greedy tokens agreeing (eager's lead at the first difference) | device bytes read / token "
        "| launches / step | update share of bytes |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(_row(*row))


def _row(family, dtype, steps, pcc, rel, greedy, bytes_per_token, launches, share) -> str:
    return (
        f"| {family} | {dtype} | {steps} | {pcc:.5f} | {rel:.4f} | {greedy} | {bytes_per_token:,.0f} | "
        f"{launches:.0f} | {share:.1%} |"
    )


if __name__ == "__main__":
    main()
