"""Mutation check: do the tests catch plausible kernel bugs? (Run on demand, not in CI.)

Copies the repository (the working tree, without .venv and .git) to a scratch directory, then plants one bug at a time
in a copy of a kernel source by an exact string replacement, and runs a subset of the tests there (``pytest -x``, the
most relevant and fastest first, then the rest of the emulator decode tests) with the copy first on PYTHONPATH, so
``ttflashdecode.ops.decode.factory.KERNEL_DIR`` is the copy's ``ttflashdecode/ops/decode/kernels/``. The first failing
test is the one that catches the bug. Every replaced string must occur exactly once in its file, checked for every
mutation before anything runs: a refactor that moves the code fails this script loudly instead of silently neutralising
a mutation.
    .venv/bin/python perf/mutation_check.py                  # every mutation (long: each compiles its kernel per case)
    .venv/bin/python perf/mutation_check.py --list           # the mutations
    .venv/bin/python perf/mutation_check.py --only sinks_not_merged,mask_bound_lt

Prints a table (mutation, caught, the first test that failed, why, seconds) and exits 1 when a mutation survives
(or the unmutated copy fails its tests: the baseline), 2 when a mutation no longer applies. Emulator builds go to
``<workdir>/cache`` (the kernel cache is keyed by source path and content, so the scratch copy never mixes with the
repository's builds, and a second run reuses the unmutated builds).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNELS = "ttflashdecode/ops/decode/kernels"
READER = f"{KERNELS}/dataflow/reader_flash_decode.cpp"
COMPUTE = f"{KERNELS}/compute/compute_flash_decode.cpp"
COMMON = f"{KERNELS}/flash_decode_common.hpp"
WRITER = f"{KERNELS}/dataflow/writer_flash_decode.cpp"

# Tests run after a mutation's own (targeted) tests, in this order: every emulator decode test of the op.
FALLBACK = [
    "tests/test_flash_decode.py",
    "tests/test_position_contract.py",
    "tests/test_features.py",
    "tests/test_readme.py",
]

CHUNK_EDGES = "tests/test_flash_decode.py::test_chunk_edges"
CORES = "tests/test_flash_decode.py::test_cores_per_head"
MATRIX = "tests/test_flash_decode.py::test_matrix"
SINK = "tests/test_features.py::test_attention_sink"
PAGED_WINDOW_SINK = "tests/test_features.py::test_paged_window_sink"
WINDOW = "tests/test_features.py::test_sliding_window_reads_only_the_window"
MULTI_TOKEN = "tests/test_features.py::test_multi_token"
GARBAGE = "tests/test_position_contract.py::test_garbage_outside_the_visible_positions_never_reaches_the_output"
OUT_OF_RANGE = "tests/test_position_contract.py::test_out_of_range_device_positions_skip_their_user"
HIDDEN_MASKS = "tests/test_hidden_values.py::test_garbage_behind_minus_inf_masks_contributes_nothing"
HIDDEN_WINDOW = "tests/test_hidden_values.py::test_garbage_outside_window_and_past_cur_pos_contributes_nothing"
HIDDEN_LIMIT = "tests/test_hidden_values.py::test_non_finite_value_some_rows_of_a_group_see_stays_in_that_group"


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to the repository
    old: str  # must occur exactly once in the file
    new: str
    what: str
    tests: tuple[str, ...] = field(default=())  # node ids (or prefixes of node ids), run first, in this order


MUTATIONS = [
    Mutation(
        "o_rescale_dropped",
        COMPUTE,
        """                    mul_bcast_cols_init(cb_o, cb_alpha);
                    for (uint32_t cc = 0; cc < o_block; ++cc) {
                        mul_tiles_bcast_cols(cb_o, cb_alpha, r * vDHt + c + cc, r, cc);
                    }""",
        """                    copy_init(cb_o);  // mutated: the running O copied into DST, not multiplied by alpha
                    for (uint32_t cc = 0; cc < o_block; ++cc) {
                        copy_tile(cb_o, r * vDHt + c + cc, cc);
                    }""",
        "process_chunk: O = O + P.V, the running O not rescaled by exp(m_old - m_new)",
        (CORES, CHUNK_EDGES),
    ),
    Mutation(
        "l_rescale_dropped",
        COMPUTE,
        """    mul_bcast_cols_init(cb_l, cb_alpha);
    mul_tiles_bcast_cols(cb_l, cb_alpha, r, alpha_index, 0);""",
        """    copy_init(cb_l);  // mutated: the running l copied into DST, not multiplied by alpha
    copy_tile(cb_l, r, 0);""",
        "rescaled_l_in_dst: l = l + sum(P) in a chunk, the running l not rescaled",
        (CORES, CHUNK_EDGES),
    ),
    Mutation(
        "merge_partner_rescale_dropped",
        COMPUTE,
        "                            mul_tiles_bcast_cols(in, cb_merge_factors, at + r * vDHt + j, factor, j - j0);",
        "                            mul_tiles_bcast_cols(in, cb_merge_factors, at + r * vDHt + j, r, j - j0);",
        "merge_partials: a partner's O_i rescaled by this core's factor exp(m - m_new) instead of its own "
        "exp(m_i - m_new)",
        (CORES, CHUNK_EDGES),
    ),
    Mutation(
        "merge_partner_uses_own_max",
        COMPUTE,
        "            matmul_tiles(in, cb_merge_select, (k - 1) * stride + m_in + r, k, 0);",
        "            matmul_tiles(cb_max_cur, cb_merge_select, r, k, 0);  // mutated: m in every partner's column",
        "merge_row_factors: each partner's factor computed from this core's max instead of the partner's",
        (CORES, CHUNK_EDGES),
    ),
    Mutation(
        "scale_squared",
        READER,
        "    fill_tile_bf16(Bf16Tile(scale_buf.get_write_ptr()), float_to_bfloat16(softmax_scale()));",
        "    fill_tile_bf16(Bf16Tile(scale_buf.get_write_ptr()), "
        "float_to_bfloat16(softmax_scale() * softmax_scale()));",
        "reader: the softmax scale tile holds scale^2",
        (CHUNK_EDGES,),
    ),
    Mutation(
        "scale_not_applied",
        COMPUTE,
        """            scale_tiles(cb_q, cb_scale, cb_q_scaled, q_tiles);
            CircularBuffer(cb_q).pop_front(q_tiles);""",
        "            move_tiles(cb_q, cb_q_scaled, q_tiles);",
        "compute, exact exp (and approximate with a mask or sinks): Q copied instead of scaled (scores not multiplied "
        "by the softmax scale)",
        (SINK, "tests/test_model_calls.py"),
    ),
    Mutation(
        "scale_not_applied_in_exp",
        COMPUTE,
        """constexpr uint32_t probs_exp_scale_bits = scale_in_exp ? scale_bits : ONE_FP32_BITS;
constexpr uint16_t factor_exp_scale_bf16 = scale_bits >> 16;""",
        """constexpr uint32_t probs_exp_scale_bits = ONE_FP32_BITS;
constexpr uint16_t factor_exp_scale_bf16 = ONE_FP32_BITS >> 16;""",
        "compute, approximate exp: the softmax scale not fused into the exps (scores not multiplied by it)",
        (CHUNK_EDGES,),
    ),
    Mutation(
        "k_chunk_read_short",
        READER,
        """                if (seq_tile < first_live_tile || seq_tile > last_live_tile) {
                    zero_bytes(o.l1 + i * tile_bytes, tile_bytes);""",
        """                if (seq_tile < first_live_tile || seq_tile > last_live_tile ||
                    (is_k && seq_tile % Sk_t == Sk_t - 1)) {  // mutated: a chunk's last K position tile
                    zero_bytes(o.l1 + i * tile_bytes, tile_bytes);""",
        "reader: the last K tile of every chunk is not read (zero-filled)",
        (CHUNK_EDGES,),
    ),
    Mutation(
        "k_tile_dropped",
        READER,
        """                } else if (is_k) {
                    noc.async_read<NocOptions::TXN_ID>(k_pages, dst, tile_bytes,""",
        """                } else if (is_k) {
                    if (i % k_head_block == k_head_block - 1) {
                        continue;  // mutated: the block's last head-dim tile is not read
                    }
                    noc.async_read<NocOptions::TXN_ID>(k_pages, dst, tile_bytes,""",
        "reader: the last head-dim tile of every K block is never read (its slot keeps a stale tile)",
        (CHUNK_EDGES, "tests/test_features.py::test_head_dim_tiling_in_dst"),
    ),
    Mutation(
        "v_last_live_tile_not_read",
        READER,
        """                if (seq_tile < first_live_tile || seq_tile > last_live_tile) {
                    zero_bytes(o.l1 + i * tile_bytes, tile_bytes);""",
        """                if (seq_tile < first_live_tile || seq_tile > last_live_tile ||
                    (!is_k && seq_tile == last_live_tile)) {  // mutated: V's last live tile
                    zero_bytes(o.l1 + i * tile_bytes, tile_bytes);""",
        "reader: V read short by one tile (the tile holding cur_pos is zero-filled)",
        (CHUNK_EDGES,),
    ),
    Mutation(
        "mask_bound_lt",
        READER,
        "const bool visible = !real_row || (key_pos <= pos && key_pos >= row_window_start);",
        "const bool visible = !real_row || (key_pos < pos && key_pos >= row_window_start);",
        "reader: causal mask key_pos < pos (a query does not see its own position)",
        (CHUNK_EDGES,),
    ),
    Mutation(
        "chunk_mask_edge_off_by_one",
        COMMON,
        "    if (chunk_last_pos > first_query_pos) {",
        "    if (chunk_last_pos > first_query_pos + 1) {",
        "chunk_needs_mask: a chunk ending one past the first query's position is not masked",
        (CHUNK_EDGES, MULTI_TOKEN),
    ),
    Mutation(
        "chunk_count_off_by_one",
        COMMON,
        "    const uint32_t num_chunks = last - first + 1;\n    const uint32_t base = num_chunks / num_cores_per_head;",
        "    const uint32_t num_chunks = last - first;\n    const uint32_t base = num_chunks / num_cores_per_head;",
        "chunk_range: the last chunk of [window_start, cur_pos] is dealt to nobody",
        (CHUNK_EDGES,),
    ),
    Mutation(
        "window_start_off_by_one",
        COMMON,
        "    const int64_t start = first_query_pos - int64_t(sliding_window) + 1;",
        "    const int64_t start = first_query_pos - int64_t(sliding_window);",
        "window_start: a sliding window of W positions reaches back W + 1 (chunks, live tiles, masks)",
        (WINDOW, SINK, PAGED_WINDOW_SINK, GARBAGE),
    ),
    Mutation(
        "window_mask_row_off_by_one",
        READER,
        "sliding_window == 0 ? 0 : window_start(pos, 1, sliding_window);",
        "sliding_window == 0 ? 0 : window_start(pos, 1, sliding_window) + 1;",
        "reader: the window mask of each row starts one position late (W - 1 positions visible)",
        (WINDOW, SINK, PAGED_WINDOW_SINK, MULTI_TOKEN),
    ),
    Mutation(
        "query_position_off_by_one",
        COMMON,
        "    return cur_pos - (q_len - 1) + token;",
        "    return cur_pos - q_len + token;",
        "query_position: query tokens sit one position early (multi-token decode)",
        (MULTI_TOKEN,),
    ),
    Mutation(
        "sinks_not_merged",
        COMPUTE,
        """            merge_partials(cb_sink, 1, /*has_o=*/false, /*to_partial=*/false, merged);
            merged = true;""",
        """            if constexpr (use_sink) {  // mutated: the sinks are read, then dropped
                CircularBuffer(cb_sink).wait_front(2 * PNHt);
                CircularBuffer(cb_sink).pop_front(2 * PNHt);
            } else {
                merge_partials(cb_sink, 1, /*has_o=*/false, /*to_partial=*/false, merged);
                merged = true;
            }""",
        "compute: the root reads the sink partial but never merges it",
        (SINK, PAGED_WINDOW_SINK),
    ),
    Mutation(
        "upstream_sink_not_scaled",
        READER,
        "            logit = float_to_bfloat16(bfloat16_to_float(logit) * softmax_scale());"
        "  // upstream's sinks are unscaled",
        "            logit = float_to_bfloat16(bfloat16_to_float(logit));  // mutated: not multiplied by the scale",
        "reader: upstream's [32k, 32] sink values used as logits without the softmax scale",
        (SINK,),
    ),
    Mutation(
        "tree_round_skipped",
        COMMON,
        """    for (uint32_t reach = 1; reach < num_cores; reach *= radix) {
        ++rounds;
    }
    return rounds;""",
        """    for (uint32_t reach = 1; reach < num_cores; reach *= radix) {
        ++rounds;
    }
    return rounds > 0 ? rounds - 1 : 0;""",
        "tree_rounds: one round short (the top round's partner is never merged)",
        (CORES, CHUNK_EDGES),
    ),
    Mutation(
        "round_last_child_not_merged",
        COMPUTE,
        "            merge_partials(cb_partial_in, children, /*has_o=*/true, to_partial, /*after_merge=*/round > 0);",
        """            merge_partials(cb_partial_in, children > 1 ? children - 1 : children, /*has_o=*/true, to_partial,
                           /*after_merge=*/round > 0);
            if (children > 1) {  // mutated: the last child's partial is popped unmerged
                CircularBuffer(cb_partial_in).pop_front(partial_tiles);
            }""",
        "compute: the last child of a round with several children is never merged",
        (CORES, CHUNK_EDGES),
    ),
    Mutation(
        "partial_slot_of_round",
        WRITER,
        "            const uint32_t slot = partial_in_base + send_slot(core_index, merge_radix) * partial_bytes;",
        "            const uint32_t slot = partial_in_base + round * partial_bytes;",
        "writer: a sender writes its partial into the slot of its round, not its own (children of a round collide)",
        (CORES, CHUNK_EDGES),
    ),
    Mutation(
        "semaphore_of_round_0",
        WRITER,
        "            Semaphore<> arrived(sem_partial_arrived + round);",
        "            Semaphore<> arrived(sem_partial_arrived);",
        "writer: a receiver waits on round 0's semaphore in every round",
        (CORES, CHUNK_EDGES),
    ),
    Mutation(
        "kv_swapped",
        READER,
        """    const uint32_t k_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t v_addr = get_common_arg_val<uint32_t>(arg++);""",
        """    const uint32_t v_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t k_addr = get_common_arg_val<uint32_t>(arg++);""",
        "reader: K read from V's buffer and V from K's",
        (CHUNK_EDGES,),
    ),
    Mutation(
        "checked_cur_pos_upper",
        COMMON,
        "    return (cur_pos < kv_len && cur_pos + 1 >= q_len) ? cur_pos : SKIPPED_USER;",
        "    return (cur_pos <= kv_len && cur_pos + 1 >= q_len) ? cur_pos : SKIPPED_USER;",
        "checked_cur_pos: a device position equal to kv_len is used (reads past the cache)",
        (OUT_OF_RANGE,),
    ),
    Mutation(
        "checked_cur_pos_lower",
        COMMON,
        "    return (cur_pos < kv_len && cur_pos + 1 >= q_len) ? cur_pos : SKIPPED_USER;",
        "    return (cur_pos < kv_len && cur_pos + 1 > q_len) ? cur_pos : SKIPPED_USER;",
        "checked_cur_pos: the valid position q_len - 1 is skipped",
        (CHUNK_EDGES, OUT_OF_RANGE),
    ),
    Mutation(
        "live_range_zeroing_dropped",
        READER,
        "return live_rows(seq_tile, first_live_pos, cur_pos).outside() | masked_rows[seq_tile % Sk_t];",
        "return masked_rows[seq_tile % Sk_t];",
        "reader: K/V rows outside [window_start, cur_pos] in the first and last live tiles keep what the cache holds",
        (GARBAGE, HIDDEN_WINDOW),
    ),
    Mutation(
        "masked_rows_not_zeroed",
        READER,
        "return live_rows(seq_tile, first_live_pos, cur_pos).outside() | masked_rows[seq_tile % Sk_t];",
        "return live_rows(seq_tile, first_live_pos, cur_pos).outside();",
        "reader: K/V rows a user mask hides from every row of the group keep what the cache holds",
        (HIDDEN_MASKS,),
    ),
    Mutation(
        "v_zeroing_skipped",
        READER,
        "zero_rows<v_tile_bytes>(o.l1 + i * v_tile_bytes, rows);",
        "(void)0;  // mutated: V's hidden rows keep what the cache holds",
        "reader: V rows past cur_pos, before the window or behind a -inf mask keep what the cache holds",
        (HIDDEN_MASKS, GARBAGE),
    ),
    Mutation(
        "masked_rows_one_row_decides",
        READER,
        "for (uint32_t row = 0; row < q_rows && hidden; ++row) {",
        "for (uint32_t row = 0; row < 1 && hidden; ++row) {",
        "reader: a position the mask hides from the group's first row is zeroed though other rows see it",
        (HIDDEN_MASKS, HIDDEN_LIMIT),
    ),
    Mutation(
        "paged_head_stride",
        READER,
        "return (block * num_kv_heads + kv_head) * tiles_per_block + seq_tile % tiles_per_block;",
        "return (kv_head * num_blocks + block) * tiles_per_block + seq_tile % tiles_per_block;",
        "reader: paged K/V addressed as [n_kv_heads, num_blocks, ...] instead of [num_blocks, n_kv_heads, ...]",
        ("tests/test_features.py::test_paged",),
    ),
    Mutation(
        "mask_head_ignores_kv_head",
        READER,
        "const uint32_t head = mask_heads == 1 ? 0 : q_head;",
        "const uint32_t head = mask_heads == 1 ? 0 : row % heads_per_group;",
        "reader: a per-head user mask read for the kv head's first q heads only",
        ("tests/test_features.py::test_attn_mask",),
    ),
    Mutation(
        "split_d_q_offset",
        COMPUTE,
        "matmul_tiles(cb_q_mm, cb_k, r * DHt + block * k_head_block + d, d, r);",
        "matmul_tiles(cb_q_mm, cb_k, r * DHt + d, d, r);",
        "compute, head-dim-tiled K: every K block multiplied by Q's first head-dim block",
        ("tests/test_features.py::test_head_dim_tiling_in_dst", "tests/test_features.py::test_large_head_dims"),
    ),
    Mutation(
        "share_cache_ignored",
        READER,
        "        const uint32_t kv_user = share_cache ? 0 : b;",
        "        const uint32_t kv_user = b;",
        "reader: with share_cache every user still reads its own cache",
        ("tests/test_features.py::test_share_cache",),
    ),
]


def check_mutations(mutations) -> list[str]:
    """Every replaced string must occur exactly once in the repository's file."""
    problems = []
    for m in mutations:
        text = (REPO / m.path).read_text()
        count = text.count(m.old)
        if count != 1:
            problems.append(
                f"{m.name}: the string to replace occurs {count} times in {m.path} (expected once):\n{m.old}"
            )
    return problems


def copy_repo(dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".hypothesis", ".pytest_cache", "*.egg-info")
    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)


def environment(copy: Path, cache: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(copy), env["PYTHONPATH"]]) if env.get("PYTHONPATH") else str(copy)
    env["TTFD_CACHE_DIR"] = str(cache)
    env["COLUMNS"] = "1000"  # pytest's short summary keeps the whole first line of the failure
    env.pop("PYTEST_ADDOPTS", None)
    return env


def check_import(copy: Path, env: dict) -> None:
    """The copy's package must be the one imported (it names the kernel directory)."""
    res = subprocess.run(
        [sys.executable, "-c", "import ttflashdecode.ops.decode.factory as p; print(p.KERNEL_DIR)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    kernel_dir = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    if res.returncode != 0 or Path(kernel_dir) != copy / KERNELS:
        sys.exit(f"the copy's package is not the one imported: KERNEL_DIR={kernel_dir!r}\n{res.stderr[-2000:]}")


def collect(copy: Path, env: dict, paths: list[str]) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *paths],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    ids = [line.strip() for line in res.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    if res.returncode != 0 or not ids:
        sys.exit(f"collecting {paths} in the copy failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return ids


def ordered_tests(targets, collected: list[str]) -> list[str]:
    """The mutation's targets (expanded to collected node ids, in their order), then every other collected test."""
    chosen: list[str] = []
    for target in targets:
        matches = [t for t in collected if t == target or t.startswith(target + "[") or t.startswith(target + "::")]
        if not matches:
            sys.exit(f"no collected test matches {target!r}")
        chosen += [t for t in matches if t not in chosen]
    return chosen + [t for t in collected if t not in chosen]


FAIL_LINE = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$")


def run_tests(copy: Path, env: dict, tests: list[str], timeout: float) -> tuple[str | None, str, str]:
    """(first failing test or None, why, pytest's output tail)."""
    shutil.rmtree(copy / ".hypothesis", ignore_errors=True)  # each run starts from no remembered examples
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-rfE", "--hypothesis-seed=0", *tests]
    try:
        res = subprocess.run(
            cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout, start_new_session=True
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return "(timeout)", f"no result after {timeout:.0f} s", out[-3000:]
    for line in res.stdout.splitlines():
        match = FAIL_LINE.match(line.strip())
        if match:
            return match.group(2), (match.group(3) or match.group(1)).strip(), res.stdout[-3000:]
    if res.returncode not in (0, 5):
        return "(pytest error)", f"exit code {res.returncode}", (res.stdout + res.stderr)[-3000:]
    return None, "", res.stdout[-3000:]


def short_why(why: str) -> str:
    """The reason of a failure, short: the exception's class unless an assertion, without the seed tag and the case."""
    match = re.match(r"^([\w.]+): (.*)$", why)
    kind, message = (match.group(1).rsplit(".", 1)[-1], match.group(2)) if match else ("", why)
    message = re.sub(r"\[seed \d+;[^\]]*\]\s*", "", message)
    if kind == "AssertionError":
        return re.sub(r"^[^:]*: ", "", message, count=1)[:90]
    return f"{kind}: {message}"[:90] if kind else message[:90]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--only", action="append", default=[], help="comma-separated mutation names (repeatable)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path("/tmp/ttfd_mutation_check"),
        help="scratch directory: the repository copy and its emulator build cache",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per mutation's test run")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the targeted tests")
    parser.add_argument(
        "--targeted-only",
        action="store_true",
        help="run only each mutation's own tests, not the fallback suite after them",
    )
    args = parser.parse_args()

    problems = check_mutations(MUTATIONS)
    if problems:
        print("mutations that no longer apply (update perf/mutation_check.py):", *problems, sep="\n", file=sys.stderr)
        return 2
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:32} {m.path:40} {m.what}")
        return 0
    names = [n for chunk in args.only for n in chunk.split(",") if n]
    unknown = sorted(set(names) - {m.name for m in MUTATIONS})
    if unknown:
        print(f"unknown mutations: {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    mutations = [m for m in MUTATIONS if not names or m.name in names]

    copy, cache = args.workdir / "repo", args.workdir / "cache"
    args.workdir.mkdir(parents=True, exist_ok=True)
    copy_repo(copy)
    env = environment(copy, cache)
    check_import(copy, env)
    collected = collect(copy, env, FALLBACK + sorted({t.split("::")[0] for m in mutations for t in m.tests}))
    print(f"repository copied to {copy}; {len(collected)} tests collected; {len(mutations)} mutations", flush=True)

    def tests_for(m: Mutation) -> list[str]:
        tests = ordered_tests(m.tests, collected)
        if args.targeted_only:
            tests = [t for t in tests if any(t == x or t.startswith((x + "[", x + "::")) for x in m.tests)]
        return tests

    if not args.no_baseline:
        # The targeted tests must pass unmutated (this also builds the unmutated kernels once, in the copy's cache).
        targets = ordered_tests([t for m in mutations for t in m.tests], collected)
        targets = [
            t for t in targets if any(t == x or t.startswith((x + "[", x + "::")) for m in mutations for x in m.tests)
        ]
        start = time.monotonic()
        failed, why, tail = run_tests(copy, env, targets, args.timeout)
        print(
            f"baseline: {len(targets)} targeted tests, {time.monotonic() - start:.0f} s: "
            f"{'FAILED ' + failed + ' - ' + why if failed else 'pass'}",
            flush=True,
        )
        if failed:
            print(tail)
            return 1

    rows = []
    for m in mutations:
        target = copy / m.path
        original = target.read_text()
        target.write_text(original.replace(m.old, m.new, 1))
        start = time.monotonic()
        try:
            failed, why, tail = run_tests(copy, env, tests_for(m), args.timeout)
        finally:
            target.write_text(original)
        seconds = time.monotonic() - start
        rows.append((m.name, failed is not None, failed or "-", short_why(why), seconds))
        verdict = "caught" if failed else "SURVIVED"
        print(f"{m.name:32} {verdict:8} {failed or '-'}  ({seconds:.0f} s)  {short_why(why)}", flush=True)
        if failed in ("(pytest error)", "(timeout)"):
            print(tail)

    print()
    w = max(len(r[2]) for r in rows)
    print(f"| {'mutation':30} | caught | {'first catching test':{w}} | {'why':90} | seconds |")
    print(f"|{'-' * 32}|--------|{'-' * (w + 2)}|{'-' * 92}|---------|")
    for name, caught, test, why, seconds in rows:
        print(f"| {name:30} | {'yes' if caught else 'NO':6} | {test:{w}} | {why:90} | {seconds:7.0f} |")
    survivors = [r[0] for r in rows if not r[1]]
    print(
        f"\n{len(rows) - len(survivors)} of {len(rows)} mutations caught"
        + (f"; SURVIVED: {', '.join(survivors)}" if survivors else "")
    )
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
