"""``program_config="auto"``: the grid use, k_chunk_size and max_cores_per_head_batch of a call, chosen by the
emulator's timing model (docs/TIMING.md) for the call's shapes. It is also what the op and
:class:`~ttflashdecode.wrapper.FlashDecodeWrapper` use when no program_config is given.

How a choice is made (:func:`choose`), once per shape key:

1. **Trivially small calls: the rule.** When the fixed default rule's plan (``ProgramConfig(device grid)``: the group
   size from :func:`~ttflashdecode.plan.default_num_cores_per_head` and k_chunk_size from
   :func:`~ttflashdecode.plan.default_k_chunk_size`, refined by the batch's largest host position as before) gives
   each core its config allows less than :data:`RULE_MAX_KV_BYTES_PER_CORE` of K/V to read (the whole cache, K and V,
   over groups x min(16, cores // groups) cores: :func:`kv_bytes_per_core`), auto is that plan, with no model run. Measured
   (``perf/auto_config_gain.py --small``, modelled): at 17-34 KiB per core (four shapes, 0.3-2.1 MiB caches) the
   rule's plan was the fastest candidate every time, since the launch, the tree and a chunk or two per core make
   most of the time; from 64 KiB per core the model finds gains (a T3K chip's one kv head over 8K positions: 136 KiB
   on each of the rule's 16 cores, 1.20x with 64 cores). Below the line a choice would cost a compile and a run per
   candidate for nothing, and the test suite (many small shapes with no program_config) keeps the rule's
   plans and cost. ``TTFLASHDECODE_AUTO=rule`` in the environment makes every shape take this path.
2. **Candidates** (:func:`candidates`): at most :data:`MAX_CANDIDATES`, each a :class:`ProgramConfig` the planner
   (:func:`~ttflashdecode.plan.plan`) accepts for the shapes within the call's L1 budget (a candidate the planner
   refuses is dropped; plans equal to one already listed are dropped):

   * cores per (batch, kv head) group ``N`` (max_cores_per_head_batch): the most the grid allows
     (``min(64, cores // groups)``) and the next two powers of two below it: a smaller group has fewer reduction
     rounds and reads longer runs per core, a bigger one more DRAM parallelism;
   * k_chunk_size: the rule's value for that ``N`` at the whole cache, half of it and a quarter of it (at least 32,
     dividing kv_len): smaller chunks overlap the next chunk's read with this chunk's math sooner, bigger ones issue
     fewer, longer DRAM reads;
   * grid use: the cores that work, ``groups x N``, as the smallest full-width grid holding them
     (``compute_with_storage_grid_size = (gx, ceil(groups * N / gx))``); the cores past it stay free. With more
     groups than cores every core serves several groups and the whole grid is used.

   The rule's own plan is always evaluated too, so auto is never modelled slower than the rule it replaces.
3. **Evaluation** (:func:`evaluate`): each candidate's real program (``program_factory.build_program`` of the
   candidate plan, the descriptor the op launches) runs on a private emulated chip of the call's board with every
   user at the last position the shape allows (``cur_pos = kv_len - 1``: the program is reused for every step of a
   decode loop, so the whole cache is its worst case), K/V, mask and sinks in DRAM and never written, Q and the
   output DRAM-interleaved; the modelled ``stats.duration_ns`` ranks it. The emulator is host code, so this is the
   same on a card: the card's call is planned from the host's model, then launched on the card. When the emulator's
   timing-only mode is available (``open_device(timing_only=True)``, no math, same durations) it is used.
   The call's default settings are used (HiFi4, and the default exp of ``ProgramConfig``: the approximate exp, as
   upstream's sdpa_decode; fp32 DST accumulation as the call's), so a choice depends only on the plan key's fields.
4. **Caching**: per process in :data:`_CHOICES` (keyed by shapes, device grid, fp32 accumulation and L1 budget;
   the device cache's ``plans`` table then holds the plan itself) and on disk under
   ``~/.cache/ttflashdecode/auto/`` (``$TTFLASHDECODE_AUTO_CACHE`` overrides), one JSON file per key whose name
   hashes the key together with :func:`kernel_source_hash` (the device kernels, program factory, kernel arguments and
   planner) and :func:`model_hash` (the timing model's sources and :data:`MODEL_VERSION`): editing a kernel or the
   model makes a new key, so a stale choice is never read back. A second process pays one file read.
5. **Errors**: the rule's plan is made first and its error, if any, is raised: it already shrinks k_chunk_size, the
   head-dim blocks and the group until L1 fits, so when it fails no candidate fits either. Evaluated candidates are
   plans the planner accepted (L1 and validation checked); an evaluation run that fails drops that candidate
   (with a warning) rather than the call.

Cost, measured (docs/DESIGN.md, "program_config=auto"): a shape's candidate runs take 13-56 s with its kernel
variants compiled, 90-200 s when they compile first, once per machine, shape and kernel version; the test suite's
calls without a program_config fall under the rule's line (76 shape keys over 270 tests, largest 38 KiB per core), so
auto adds about 2 ms per shape key there (one extra ``plan()``), 0.17 s in all.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from loguru import logger

from ttflashdecode.config import ProgramConfig, is_auto
from ttflashdecode.plan.cbs import L1_BUDGET_BYTES, L1OverflowError
from ttflashdecode.plan.rules import MIN_K_CHUNK_SIZE, default_k_chunk_size
from ttflashdecode.plan.search import DecodePlan, plan
from ttflashdecode.plan.shapes import TILE_BYTES, DecodeShapes

# Bump when the way candidates are made or ranked changes (it is part of every disk key). 2: candidates run with the
# default approximate exp (was the exact exp) and the rule's plan uses the derived group size.
MODEL_VERSION = 2

# Calls whose K/V cache (every group, K and V, whole length) spread over the rule's working cores is less than this
# per core are planned by the rule, without model runs (module docstring, step 1; docs/DESIGN.md: the measurement).
RULE_MAX_KV_BYTES_PER_CORE = 64 << 10

# At most this many configs are run per shape key (the rule's plan included).
MAX_CANDIDATES = 7

AUTO_CACHE_ENV_VAR = "TTFLASHDECODE_AUTO_CACHE"
# TTFLASHDECODE_AUTO=rule: auto is the fixed default rule for every shape, no model runs (a CI machine with a cold
# kernel cache, or a card host that must not spend the first call's seconds on the emulator).
AUTO_MODE_ENV_VAR = "TTFLASHDECODE_AUTO"

_REPO = Path(__file__).resolve().parents[2]
_PACKAGE = _REPO / "ttflashdecode"


@dataclass(frozen=True)
class Choice:
    """What auto decided for one shape key: the config to plan with, how it was decided (``"rule"``, ``"model"`` or
    ``"disk"``: read back from a previous process's model runs) and the modelled duration of every evaluated
    candidate, ``(grid, k_chunk_size, max_cores_per_head_batch, duration_ns)``, the chosen one first."""

    config: ProgramConfig | None  # None: the rule (planned with the call's max_cur_pos, as before)
    source: str
    durations: tuple[tuple[tuple[int, int], int, int, float], ...] = ()


# Per-process choices and counters (:func:`stats`); a lock so two threads planning the same key run it once.
_CHOICES: dict[tuple, Choice] = {}
_LOCK = threading.Lock()
_STATS = {"rule": 0, "model": 0, "disk": 0, "memory": 0, "evaluations": 0, "evaluation_s": 0.0}


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
    """:func:`~ttflashdecode.plan.plan` for any config the op accepts: an auto config is resolved first
    (:func:`choose`); every other config is planned exactly as before."""
    if not is_auto(config):
        return plan(shapes, config, grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
    choice = choose(shapes, grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
    # Auto chooses the grid use, k_chunk_size and group size only; the exp the caller asked for is kept (the choice
    # was ranked with the default approximate exp, which moves compute time, not the plan's shape).
    if choice.config is None:
        chosen = replace(rule_config(grid), exp_approx_mode=config.exp_approx_mode)
        return plan(shapes, chosen, grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
    chosen = replace(choice.config, exp_approx_mode=config.exp_approx_mode)
    return plan(shapes, chosen, grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)


def rule_config(grid: tuple[int, int]) -> ProgramConfig:
    """The fixed default rule: the whole grid, planner-derived k_chunk_size, max_cores_per_head_batch 16."""
    return ProgramConfig(compute_with_storage_grid_size=tuple(grid))


# ---- choosing -----------------------------------------------------------------------------------------------------


def choose(
    shapes: DecodeShapes, grid: tuple[int, int], *, fp32_dest_acc: bool = False, l1_budget: int = L1_BUDGET_BYTES
) -> Choice:
    """The config auto plans ``shapes`` with on a device of compute grid ``grid`` (see the module docstring)."""
    key = (shapes, tuple(grid), bool(fp32_dest_acc), int(l1_budget))
    with _LOCK:
        choice = _CHOICES.get(key)
        if choice is not None:
            _STATS["memory"] += 1
            return choice
        # The rule's plan first: its error is the call's error when nothing fits.
        rule_plan = plan(shapes, rule_config(grid), grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
        rule_only = os.environ.get(AUTO_MODE_ENV_VAR, "model").strip().lower() == "rule"
        if rule_only or kv_bytes_per_core(rule_plan) < RULE_MAX_KV_BYTES_PER_CORE or _board_for(grid) is None:
            choice = Choice(None, "rule")
        else:
            path = _disk_path(key)
            choice = _read_disk(path)
            if choice is None:
                choice, complete = _choose_by_model(shapes, grid, rule_plan, fp32_dest_acc, l1_budget)
                if complete:  # a choice that lost candidates to a failed run is not kept past this process
                    _write_disk(path, choice)
        _STATS[choice.source] += 1
        _CHOICES[key] = choice
        return choice


def _choose_by_model(shapes, grid, rule_plan: DecodePlan, fp32_dest_acc: bool, l1_budget: int) -> tuple[Choice, bool]:
    """The modelled-fastest candidate, and whether every candidate was evaluated."""
    if os.environ.get("TTFD_EMU_TIMING", "1") == "0":
        logger.warning("program_config=auto: the emulator's timing model is off (TTFD_EMU_TIMING=0); using the rule")
        return Choice(None, "rule"), False
    timed, listed = [], candidates(shapes, grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget, rule_plan=rule_plan)
    t0 = time.monotonic()
    for config, candidate_plan in listed:
        try:
            ns = evaluate(candidate_plan, fp32_dest_acc=fp32_dest_acc)
        except Exception as e:  # a candidate the emulator cannot run is not chosen; the call still runs
            logger.warning(f"program_config=auto: candidate {_describe(config)} not evaluated: {str(e)[:500]}")
            continue
        timed.append((ns, config, candidate_plan))
    if not timed:
        return Choice(None, "rule"), False
    # Fastest first; on a tie (within 0.5%) prefer fewer cores, then the bigger chunk (fewer programs' worth of
    # reads to issue): the same modelled time for less of the chip.
    best_ns = min(ns for ns, _, _ in timed)
    near = [t for t in timed if t[0] <= best_ns * 1.005]
    ns, config, chosen = min(near, key=lambda t: (t[2].num_cores_per_head * t[2].num_groups, -t[2].k_chunk_size, t[0]))
    # Pin what the plan derived: with an explicit k_chunk_size the planner keeps the config's group size, so the rule's
    # derived (possibly smaller) group is written out too.
    resolved = replace(config, k_chunk_size=chosen.k_chunk_size, max_cores_per_head_batch=chosen.num_cores_per_head)
    rows = [(c.compute_with_storage_grid_size, p.k_chunk_size, p.num_cores_per_head, round(t, 1))
            for t, c, p in sorted(timed, key=lambda t: (t[1] is not config, t[0]))]  # fmt: skip
    logger.info(f"program_config=auto: {len(timed)} of {len(listed)} candidates run in {time.monotonic() - t0:.1f} s "
                f"for {shapes}; chose {_describe(resolved)}: {ns:.0f} ns modelled; the rule's plan: "
                f"{next((f'{t:.0f} ns' for t, c, _ in timed if c == rule_config(grid)), 'not run')}")
    return Choice(resolved, "model", tuple(rows)), len(timed) == len(listed)


def candidates(
    shapes: DecodeShapes,
    grid: tuple[int, int],
    *,
    fp32_dest_acc: bool = False,
    l1_budget: int = L1_BUDGET_BYTES,
    rule_plan: DecodePlan | None = None,
) -> list[tuple[ProgramConfig, DecodePlan]]:
    """The configs auto evaluates for ``shapes`` (the rule's first), each with the plan the planner makes of it;
    configs the planner refuses and plans equal to an earlier one are left out."""
    gx, gy = grid
    cores, groups = gx * gy, shapes.num_groups
    if rule_plan is None:
        rule_plan = plan(shapes, rule_config(grid), grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
    found = [(rule_config(grid), rule_plan)]
    seen = {_plan_signature(rule_plan)}
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
        sk_rule = default_k_chunk_size(shapes, n)
        for sk in dict.fromkeys([sk_rule, sk_rule // 2, sk_rule // 4]):
            if sk < MIN_K_CHUNK_SIZE or shapes.kv_len % sk:
                continue
            config = ProgramConfig((gx, rows), k_chunk_size=sk, max_cores_per_head_batch=n)
            try:
                candidate = plan(shapes, config, grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
            except (L1OverflowError, ValueError):
                continue
            signature = _plan_signature(candidate)
            if signature not in seen:
                seen.add(signature)
                found.append((config, candidate))
    return found[:MAX_CANDIDATES]


def _plan_signature(p: DecodePlan) -> tuple:
    """What makes two plans different programs (the grid's unused rows do not)."""
    return (p.k_chunk_size, p.num_cores_per_head, p.groups_per_core, p.k_head_block, p.v_head_block)


def kv_cache_bytes(shapes: DecodeShapes) -> int:
    """Bytes of K and V a call at the whole cache reads (every group; one user's cache with share_cache)."""
    users = 1 if shapes.share_cache else shapes.batch
    positions = min(shapes.kv_len, shapes.sliding_window_size or shapes.kv_len)
    tiles = positions // 32 * users * shapes.n_kv_heads
    k = tiles * shapes.DHt * TILE_BYTES[shapes.k_dtype]
    v = 0 if shapes.v_from_k else tiles * shapes.vDHt * TILE_BYTES[shapes.v_dtype]
    return k + v


def kv_bytes_per_core(p: DecodePlan) -> int:
    """K/V bytes of the whole cache per core plan ``p``'s config lets work: every group over
    ``min(max_cores_per_head_batch, cores // groups)`` cores (or the cores serving several groups each). Counted over
    the cores the config allows, not the derived group size (which may be smaller, plan.rules.
    default_num_cores_per_head), so the rule's line stays where it was measured and auto's cost in the test suite
    does not change."""
    config, groups = p.config, p.num_groups
    if p.groups_per_core > 1:
        working = math.ceil(groups / p.groups_per_core)
    else:
        working = groups * max(1, min(config.max_cores_per_head_batch, config.num_cores // groups))
    return kv_cache_bytes(p.shapes) // working


def _describe(config: ProgramConfig) -> str:
    return (f"grid {config.compute_with_storage_grid_size}, k_chunk_size {config.k_chunk_size}, "
            f"max_cores_per_head_batch {config.max_cores_per_head_batch}")  # fmt: skip


# ---- evaluation on the emulator's timing model --------------------------------------------------------------------

_DEVICES: dict[str, object] = {}


def _board_for(grid: tuple[int, int]) -> str | None:
    """The emulated board whose chip has ``grid`` (None: no emulated board has it; the rule decides)."""
    from ttflashdecode.emulator.arch import GRIDS

    for board, board_grid in GRIDS.items():
        if tuple(board_grid) == tuple(grid):
            return board
    return None


def _device(board: str):
    """The process's private emulated chip for evaluations (timing-only when the emulator has that mode)."""
    dev = _DEVICES.get(board)
    if dev is None or getattr(dev, "_closed", False):
        from ttflashdecode import emulator

        try:
            dev = emulator.open_device(board, timing_only=True)
        except TypeError:  # an emulator without the timing-only mode: the full run gives the same durations
            dev = emulator.open_device(board)
        _DEVICES[board] = dev
    return dev


def evaluate(decode_plan: DecodePlan, *, fp32_dest_acc: bool = False, cur_pos: int | None = None) -> float:
    """Modelled duration (ns) of ``decode_plan``'s program with every user at position ``cur_pos`` (None: the last
    position of the cache, auto's case), built with the default compute settings (and fp32 DST accumulation as
    given)."""
    from ttflashdecode.program_factory import ComputeSettings, DecodeBuffers, build_program
    from ttflashdecode.ttnn_env import import_ttnn

    import torch

    ttnn = import_ttnn()
    s = decode_plan.shapes
    board = _board_for(decode_plan.grid)
    if board is None:
        raise ValueError(f"grid={decode_plan.grid}: no emulated board has this compute grid")
    dev = _device(board)
    # Contents that cannot steer a kernel are never written (timing-only runs move no bytes for them).
    empty = getattr(dev, "empty", None) or (lambda shape, dtype, layout=None: dev.allocate(shape, dtype, layout,
                                                                                              fill=None))
    users = 1 if s.share_cache else s.batch
    row_major = ttnn.ROW_MAJOR_LAYOUT
    tensors = {}
    if s.is_paged:
        blocks = users * s.max_blocks_per_user
        kv_rows = lambda d: [blocks, s.n_kv_heads, s.block_size, d]  # noqa: E731
        table = torch.arange(blocks, dtype=torch.int32).reshape(users, s.max_blocks_per_user)
        table = table.expand(s.batch, -1).contiguous() if s.share_cache else table
        tensors["page_table"] = dev.from_torch(table, dtype=ttnn.int32, layout=row_major)
    else:
        kv_rows = lambda d: [users, s.n_kv_heads, s.logical_kv_len, d]  # noqa: E731
    last = s.logical_kv_len - 1
    if cur_pos is not None and not -1 <= cur_pos <= last:
        raise ValueError(f"cur_pos={cur_pos!r}: expected -1..{last} (logical_kv_len={s.logical_kv_len})")
    positions = torch.full([s.batch], last if cur_pos is None else cur_pos, dtype=torch.int32)
    k = empty(kv_rows(s.head_dim), getattr(ttnn, s.k_dtype))
    v = k if s.v_from_k else empty(kv_rows(s.v_head_dim), getattr(ttnn, s.v_dtype))
    if s.attn_mask_heads:
        tensors["attn_mask"] = empty([s.batch, s.attn_mask_heads, s.q_len, s.logical_kv_len],
                                     getattr(ttnn, s.attn_mask_dtype))  # fmt: skip
    if s.has_attention_sink:
        tensors["attention_sink"] = dev.allocate([1, s.n_q_heads], ttnn.bfloat16, fill=0)
    buffers = DecodeBuffers(
        q=dev.allocate([s.q_len, s.batch, s.n_q_heads, s.head_dim], ttnn.bfloat16, fill=0),
        k=k, v=v, cur_pos=dev.from_torch(positions, dtype=ttnn.int32, layout=row_major),
        out=dev.allocate([s.q_len, s.batch, s.n_q_heads, s.v_head_dim], getattr(ttnn, s.out_dtype), fill=None),
        **tensors,
    )  # fmt: skip
    noc = lambda core: (lambda c: (c.x, c.y))(dev.worker_core_from_logical_core(ttnn.CoreCoord(*core)))  # noqa: E731
    program = build_program(decode_plan, buffers, noc, ComputeSettings(fp32_dest_acc_en=fp32_dest_acc))
    t0 = time.monotonic()
    try:
        stats = dev.generic_op(buffers.io_tensors(), program)
    finally:
        _STATS["evaluations"] += 1
        _STATS["evaluation_s"] += time.monotonic() - t0
        for t in {id(t): t for t in buffers.io_tensors()}.values():
            t.deallocate()
    if stats.duration_ns is None:
        raise RuntimeError("the emulator's timing model is off (TTFD_EMU_TIMING=0): auto cannot rank candidates")
    return float(stats.duration_ns)


# ---- the disk cache -----------------------------------------------------------------------------------------------


def auto_cache_dir() -> Path:
    env = os.environ.get(AUTO_CACHE_ENV_VAR)
    return Path(env) if env else Path.home() / ".cache" / "ttflashdecode" / "auto"


def _hash_files(paths) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(_REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


_HASHES: dict[str, str] = {}


def kernel_source_hash() -> str:
    """Hash of what decides a config's program: the FlashDecode device kernels, the program factory, the kernel
    arguments and the planner. Any edit gives new disk keys."""
    if "kernels" not in _HASHES:
        kernels = [p for p in (_PACKAGE / "ops" / "decode" / "kernels").rglob("*") if p.is_file()]
        python = [_PACKAGE / "program_factory.py", _PACKAGE / "kernel_args.py",
                  *(p for p in (_PACKAGE / "plan").glob("*.py") if p.name != "auto.py")]  # fmt: skip
        _HASHES["kernels"] = _hash_files([p for p in kernels + python if p.is_file()])
    return _HASHES["kernels"]


def model_hash() -> str:
    """Hash of the timing model (its header, the runtime's hooks) and :data:`MODEL_VERSION`."""
    if "model" not in _HASHES:
        emu = _PACKAGE / "emulator"
        files = [*(emu / "include" / "emu").glob("timing*.h"), emu / "csrc" / "runtime.cpp", emu / "arch.py"]
        _HASHES["model"] = f"v{MODEL_VERSION}-" + _hash_files([p for p in files if p.is_file()])
    return _HASHES["model"]


def disk_key(shapes: DecodeShapes, grid, fp32_dest_acc: bool, l1_budget: int) -> str:
    """The name of a choice's file: the shape key, the kernel source hash and the model hash, hashed."""
    text = json.dumps([asdict(shapes), list(grid), bool(fp32_dest_acc), int(l1_budget), kernel_source_hash(),
                       model_hash()], sort_keys=True)  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _disk_path(key: tuple) -> Path:
    return auto_cache_dir() / f"{disk_key(*key)}.json"


def _read_disk(path: Path) -> Choice | None:
    try:
        data = json.loads(path.read_text())
        config = None if data["config"] is None else ProgramConfig(**data["config"])
        rows = tuple((tuple(g), sk, n, ns) for g, sk, n, ns in data["durations"])
        return Choice(config, "disk", rows)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:  # a torn or foreign file: choose again
        logger.warning(f"program_config=auto: ignoring {path}: {e}")
        return None


def _write_disk(path: Path, choice: Choice) -> None:
    data = {"config": None if choice.config is None else asdict(choice.config), "durations": choice.durations,
            "kernel_source_hash": kernel_source_hash(), "model_hash": model_hash(), "source": "modelled"}  # fmt: skip
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)  # atomic: a concurrent reader sees the old file or the whole new one
    except OSError as e:  # a read-only home: the choice still holds for this process
        logger.warning(f"program_config=auto: could not write {path}: {e}")


# ---- introspection ------------------------------------------------------------------------------------------------


def stats() -> dict:
    """Counters since the last :func:`clear`: choices made by the ``rule``, by the ``model`` (runs), read from
    ``disk``, found in ``memory``; candidate ``evaluations`` and the wall seconds they took."""
    return dict(_STATS)


def clear(memory_only: bool = True) -> None:
    """Forget this process's choices and counters (the disk cache stays unless ``memory_only=False``)."""
    with _LOCK:
        _CHOICES.clear()
        _STATS.update({k: 0 for k in _STATS})
        _STATS["evaluation_s"] = 0.0
        if not memory_only:
            for path in auto_cache_dir().glob("*.json"):
                path.unlink(missing_ok=True)
