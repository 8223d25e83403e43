"""The default program config (``program_config=None`` or ``"auto"``): grid use, k_chunk_size and
max_cores_per_head_batch for a call's shapes from the tuned table shipped in the package, else the fixed rule.

Pure planning: a dictionary lookup in a JSON file read once per process and one :func:`~ttflashdecode.plan.plan`.
Nothing here compiles or runs a program, opens a device or imports ttnn, the emulator or the program factory, and the
choice depends on the device only through its compute grid, so the default costs the same on a card as on the
emulator (``tests/test_plan.py`` checks the imports, ``tests/test_auto_config.py`` that planning tunes, runs and
compiles nothing).

* **The table** (``ttflashdecode/tuned/decode.json``, written by ``perf/build_tuned_table.py``): the per-chip decode
  shapes of the models in ``program_configs/`` on the boards they run on (N150, N300, T3K), each with the config the
  emulator's timing model found fastest among :func:`candidates` (MODELLED durations, recorded in the file). A
  shape is looked up exactly (:func:`table_key`: the call's :class:`DecodeShapes`, the device grid and fp32
  accumulation) and only at the L1 budget the table was built for (a call with L1 buffers below its circular
  buffers has less room, and gets the rule).
* **The rule** for every other shape: :func:`rule_config`, the whole grid with the planner's derived k_chunk_size
  and group size (refined by the batch's largest host position).
* ``TTFLASHDECODE_AUTO=rule`` in the environment skips the table (every shape takes the rule).

Choosing at the first call of a shape is opt-in and lives above the program factory: ``program_config="tune"``
(the timing model over :func:`candidates`, :mod:`ttflashdecode.tuning`) or a function of a :class:`PlanRequest`
(:class:`~ttflashdecode.config.ChosenProgramConfig`); :func:`plan_for` refuses those configs rather than guess.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ttflashdecode.config import ProgramConfig, is_auto, is_chosen
from ttflashdecode.plan.cbs import L1_BUDGET_BYTES, L1OverflowError
from ttflashdecode.plan.rules import DRAM_SATURATING_CORES, MIN_K_CHUNK_SIZE, default_k_chunk_size
from ttflashdecode.plan.search import DecodePlan, plan
from ttflashdecode.plan.shapes import TILE_BYTES, DecodeShapes

# At most this many configs are candidates per shape key (the rule's plan included).
MAX_CANDIDATES = 7

# TTFLASHDECODE_AUTO=rule: the default is the fixed rule for every shape (the table is not read).
AUTO_MODE_ENV_VAR = "TTFLASHDECODE_AUTO"

# The tuned table: package data (pyproject's package-data ships ttflashdecode/tuned/*.json).
TUNED_TABLE_PATH = Path(__file__).resolve().parent.parent / "tuned" / "decode.json"
TABLE_FORMAT = 1


@dataclass(frozen=True)
class PlanRequest:
    """What a chooser (``program_config="tune"`` or a function) is asked: the config to plan ``shapes`` with on a
    device of compute grid ``grid``, with fp32 DST accumulation ``fp32_dest_acc``, within ``l1_budget`` bytes of
    circular buffers per core."""

    shapes: DecodeShapes
    grid: tuple[int, int]
    fp32_dest_acc: bool = False
    l1_budget: int = L1_BUDGET_BYTES

    def rule_config(self) -> ProgramConfig:
        return rule_config(self.grid)

    def rule_plan(self) -> DecodePlan:
        """The rule's plan at the whole cache (raises the planner's error when nothing fits)."""
        return plan(
            self.shapes, rule_config(self.grid), self.grid, fp32_dest_acc=self.fp32_dest_acc, l1_budget=self.l1_budget
        )

    def candidates(self) -> list[tuple[ProgramConfig, DecodePlan]]:
        return candidates(self.shapes, self.grid, fp32_dest_acc=self.fp32_dest_acc, l1_budget=self.l1_budget)

    def table_config(self) -> ProgramConfig | None:
        """The shipped table's config for this request, or None (the rule)."""
        return table_config(self.shapes, self.grid, fp32_dest_acc=self.fp32_dest_acc, l1_budget=self.l1_budget)


# ---- the planner hook ---------------------------------------------------------------------------------------------


def plan_for(
    shapes: DecodeShapes,
    config: ProgramConfig,
    grid: tuple[int, int],
    *,
    max_cur_pos: int | None = None,
    fp32_dest_acc: bool = False,
    l1_budget: int = L1_BUDGET_BYTES,
) -> DecodePlan:
    """:func:`~ttflashdecode.plan.plan` for any config but a chosen one: the default (:class:`AutoProgramConfig`)
    takes the table's config or the rule; every other config is planned exactly as before."""
    if is_chosen(config):
        raise TypeError(
            f"program_config={config!r}: a config chosen at the first call ('tune' or a function) is resolved by "
            "ttflashdecode.tuning.plan_for (the op and FlashDecodeWrapper call it), not by the planner"
        )
    if not is_auto(config):
        return plan(shapes, config, grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
    chosen = table_config(shapes, grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
    if chosen is not None:
        # The table chooses the grid use, k_chunk_size and group size; the exp the caller asked for is kept (the
        # choice was ranked with the default approximate exp, which moves compute time, not the plan's shape).
        try:
            return plan(
                shapes,
                replace(chosen, exp_approx_mode=config.exp_approx_mode),
                grid,
                fp32_dest_acc=fp32_dest_acc,
                l1_budget=l1_budget,
            )
        except (L1OverflowError, ValueError):
            pass  # a planner that changed since the table was built refuses the entry: the rule decides
    return plan_with_rule(
        shapes,
        grid,
        exp_approx_mode=config.exp_approx_mode,
        max_cur_pos=max_cur_pos,
        fp32_dest_acc=fp32_dest_acc,
        l1_budget=l1_budget,
    )


def plan_with_rule(
    shapes: DecodeShapes,
    grid: tuple[int, int],
    *,
    exp_approx_mode: bool = True,
    max_cur_pos: int | None = None,
    fp32_dest_acc: bool = False,
    l1_budget: int = L1_BUDGET_BYTES,
) -> DecodePlan:
    """The fixed rule's plan (:func:`rule_config`), refined by the batch's largest host position when known."""
    config = replace(rule_config(grid), exp_approx_mode=exp_approx_mode)
    return plan(shapes, config, grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)


def rule_config(grid: tuple[int, int]) -> ProgramConfig:
    """The fixed default rule: the whole grid, planner-derived k_chunk_size, and groups of up to
    :data:`~ttflashdecode.plan.rules.DRAM_SATURATING_CORES` (32) cores, which the planner's
    ``default_num_cores_per_head`` halves while its cores would read too few positions each. Only calls with at
    most three (batch, kv head) groups on the grid (Llama-3.1-8B's and -70B's per-chip T3K shapes at batch 1) get more
    than upstream's default of 16, and only from 8K positions on (MODELLED, b1 4q/1kv d128 paged bfloat8_b at 32K, the
    same exp on both sides: 16 cores a group 63.3 us, 32 cores 54.6 us; upstream at its best, 32 cores, 50.0 us)."""
    return ProgramConfig(compute_with_storage_grid_size=tuple(grid), max_cores_per_head_batch=DRAM_SATURATING_CORES)


# ---- the tuned table ----------------------------------------------------------------------------------------------


def table_key(shapes: DecodeShapes, grid, fp32_dest_acc: bool = False) -> str:
    """The table's key of a shape: its fields, the device grid and fp32 accumulation, as canonical JSON."""
    return json.dumps([asdict(shapes), list(grid), bool(fp32_dest_acc)], sort_keys=True)


_TABLE: dict | None = None


def load_table(path: Path | None = None) -> dict:
    """The tuned table's file as a dict (read once per process for the shipped file). A missing file is an empty
    table; a file of another format raises ValueError naming it (a broken install, not a shape to guess)."""
    global _TABLE
    if path is None and _TABLE is not None:
        return _TABLE
    where = TUNED_TABLE_PATH if path is None else Path(path)
    try:
        data = json.loads(where.read_text())
    except FileNotFoundError:
        data = {"format": TABLE_FORMAT, "entries": []}
    if not isinstance(data, dict) or data.get("format") != TABLE_FORMAT or not isinstance(data.get("entries"), list):
        raise ValueError(f"{where}: expected a tuned table of format {TABLE_FORMAT} (perf/build_tuned_table.py)")
    data["index"] = {table_key(DecodeShapes(**e["shapes"]), e["grid"], e["fp32_dest_acc"]): e for e in data["entries"]}
    if path is None:
        _TABLE = data
    return data


def table_entry(shapes: DecodeShapes, grid, fp32_dest_acc: bool = False) -> dict | None:
    """The shipped table's entry for a shape key, or None."""
    return load_table()["index"].get(table_key(shapes, grid, fp32_dest_acc))


def table_config(
    shapes: DecodeShapes, grid, *, fp32_dest_acc: bool = False, l1_budget: int = L1_BUDGET_BYTES
) -> ProgramConfig | None:
    """The config the default plans ``shapes`` with, from the table; None: the rule (no entry, an entry whose choice
    was the rule, another L1 budget than the table's, or ``TTFLASHDECODE_AUTO=rule``)."""
    if os.environ.get(AUTO_MODE_ENV_VAR, "").strip().lower() == "rule":
        return None
    entry = table_entry(shapes, grid, fp32_dest_acc)
    if entry is None or entry["config"] is None or entry["l1_budget"] != l1_budget:
        return None
    return ProgramConfig(**entry["config"])


# ---- candidates (what a tuner ranks) ------------------------------------------------------------------------------


def candidates(
    shapes: DecodeShapes,
    grid: tuple[int, int],
    *,
    fp32_dest_acc: bool = False,
    l1_budget: int = L1_BUDGET_BYTES,
    rule_plan: DecodePlan | None = None,
) -> list[tuple[ProgramConfig, DecodePlan]]:
    """The configs a tuner ranks for ``shapes`` (the rule's first), each with the plan the planner makes of it;
    configs the planner refuses and plans equal to an earlier one are left out. At most :data:`MAX_CANDIDATES`:

    * cores per (batch, kv head) group ``N`` (max_cores_per_head_batch): the most the grid allows
      (``min(64, cores // groups)``) and the next two powers of two below it: a smaller group has fewer reduction
      rounds and reads longer runs per core, a bigger one more DRAM parallelism;
    * k_chunk_size: the rule's value for that ``N`` at the whole cache, half of it and a quarter of it (at least 32,
      dividing kv_len): smaller chunks overlap the next chunk's read with this chunk's math sooner, bigger ones issue
      fewer, longer DRAM reads;
    * grid use: the cores that work, ``groups x N``, as the smallest full-width grid holding them; the cores past it
      stay free. With more groups than cores every core serves several groups and the whole grid is used.
    """
    gx, gy = grid
    cores, groups = gx * gy, shapes.num_groups
    if rule_plan is None:
        rule_plan = plan(shapes, rule_config(grid), grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
    found = [(rule_config(grid), rule_plan)]
    seen = {plan_signature(rule_plan)}
    if groups >= cores:
        group_sizes = [1]  # every core serves whole groups; no split to choose
    else:
        widest = min(64, cores // groups)
        below = 1 << (widest.bit_length() - 1)
        if below == widest:
            below //= 2
        group_sizes = [n for n in dict.fromkeys([widest, below, below // 2]) if n >= 1]
    for n in group_sizes:
        rows = gy if groups >= cores else math.ceil(groups * n / gx)
        sk_rule = default_k_chunk_size(shapes, n, num_cores=rows * gx)
        for sk in dict.fromkeys([sk_rule, sk_rule // 2, sk_rule // 4]):
            if sk < MIN_K_CHUNK_SIZE or shapes.kv_len % sk:
                continue
            config = ProgramConfig((gx, rows), k_chunk_size=sk, max_cores_per_head_batch=n)
            try:
                candidate = plan(shapes, config, grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
            except (L1OverflowError, ValueError):
                continue
            signature = plan_signature(candidate)
            if signature not in seen:
                seen.add(signature)
                found.append((config, candidate))
    return found[:MAX_CANDIDATES]


def plan_signature(p: DecodePlan) -> tuple:
    """What makes two plans different programs (the grid's unused rows do not)."""
    return (p.k_chunk_size, p.num_cores_per_head, p.groups_per_core, p.k_head_block, p.v_head_block)


def kv_cache_bytes(shapes: DecodeShapes) -> int:
    """Bytes of K and V a call at the whole cache reads (every group; one user's cache with share_cache; users that
    share a page-table row read it once)."""
    users = 1 if shapes.share_cache else shapes.batch // shapes.users_per_page_row
    positions = min(shapes.kv_len, shapes.sliding_window_size or shapes.kv_len)
    tiles = positions // 32 * users * shapes.n_kv_heads
    k = tiles * shapes.DHt * TILE_BYTES[shapes.k_dtype]
    v = 0 if shapes.v_from_k else tiles * shapes.vDHt * TILE_BYTES[shapes.v_dtype]
    return k + v


def kv_bytes_per_core(p: DecodePlan) -> int:
    """K/V bytes of the whole cache per core plan ``p``'s config lets work: every group over
    ``min(max_cores_per_head_batch, cores // groups)`` cores (or the cores serving several groups each). Counted over
    the cores the config allows, not the derived group size (which may be smaller, plan.rules.
    default_num_cores_per_head), so the tuner's line (``tuning.RULE_MAX_KV_BYTES_PER_CORE``) stays where it was
    measured."""
    config, groups = p.config, p.num_groups
    if p.groups_per_core > 1:
        working = math.ceil(groups / p.groups_per_core)
    else:
        working = groups * max(1, min(config.max_cores_per_head_batch, config.num_cores // groups))
    return kv_cache_bytes(p.shapes) // working


def describe(config: ProgramConfig) -> str:
    return (
        f"grid {config.compute_with_storage_grid_size}, k_chunk_size {config.k_chunk_size}, "
        f"max_cores_per_head_batch {config.max_cores_per_head_batch}"
    )
