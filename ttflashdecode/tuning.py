"""Choosing a program config at the first call of a shape (opt-in): ``program_config="tune"`` ranks the planner's
candidates (:func:`ttflashdecode.plan.auto.candidates`) by the emulator's timing model; a function given as
program_config decides itself. The layer above the program factory: the planner (:mod:`ttflashdecode.plan`) does not
know it, the op and :class:`~ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper` plan through :func:`plan_for`.

The default (no program_config, or ``"auto"``) never comes here: it is the shipped table or the rule
(:mod:`ttflashdecode.plan.auto`), a lookup. ``perf/build_tuned_table.py`` makes that table offline with :func:`tune`.

How ``"tune"`` chooses (:func:`tune`), once per shape key:

1. **Small calls: the rule.** When the rule's plan gives each core its config allows less than
   :data:`RULE_MAX_KV_BYTES_PER_CORE` of K/V to read (:func:`~ttflashdecode.plan.auto.kv_bytes_per_core`), the
   choice is the rule, with no model run. Measured (``perf/auto_config_gain.py --small``, modelled): at 17-34 KiB per
   core (four shapes, 0.3-2.1 MiB caches) the rule's plan was the fastest candidate every time, since the launch, the
   tree and a chunk or two per core make most of the time; from 64 KiB per core the model finds gains.
2. **Evaluation** (:func:`evaluate`): each candidate's real program (``ops.decode.factory.build_program`` of the
   candidate plan) runs on a private emulated chip of the call's board, timing-only (no math, the same durations),
   with every user at the last position the shape allows (the program serves every step of a decode loop, so the
   whole cache is its worst case); the MODELLED ``stats.duration_ns`` ranks it. One loguru INFO line per candidate
   says what ran and its modelled duration. The first run of a kernel variant compiles it (seconds, once per
   machine; the emulator's kernel cache keeps it). The rule's own plan is always a candidate, so the choice is never
   modelled slower than the rule.
3. **Caching**: per process (:data:`_CHOICES`) and on disk under ``~/.cache/ttflashdecode/auto/``
   (``$TTFLASHDECODE_AUTO_CACHE`` overrides), one JSON file per key whose name hashes the key with
   :func:`kernel_source_hash` (the device kernels, program factory, kernel arguments and planner) and
   :func:`model_hash` (the timing model's sources and :data:`MODEL_VERSION`): an edited kernel or model makes new
   keys, so a stale choice is never read back.
4. **Errors**: the rule's plan is made first and its error, if any, is raised (it already shrinks k_chunk_size,
   head-dim blocks and the group until L1 fits, so when it fails no candidate fits either). A candidate whose
   evaluation fails is dropped with a warning, not the call.

Cost, measured (docs/TUNING.md): a shape's candidate runs take seconds to a minute with the kernel variants compiled,
minutes when they compile first.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from loguru import logger

from ttflashdecode.config import TUNE, ProgramConfig, is_chosen
from ttflashdecode.plan import auto as plan_auto
from ttflashdecode.plan.auto import PlanRequest, describe, kv_bytes_per_core
from ttflashdecode.plan.cbs import L1_BUDGET_BYTES
from ttflashdecode.plan.search import DecodePlan, plan
from ttflashdecode.plan.shapes import DecodeShapes

# Bump when the way candidates are made or ranked changes (it is part of every disk key). 3: candidates and the
# rule line moved here from plan.auto, unchanged; the key keeps the same fields.
MODEL_VERSION = 3

# Shapes whose K/V cache (every group, K and V, whole length) spread over the rule's working cores is less than this
# per core are the rule's, without model runs (module docstring, step 1).
RULE_MAX_KV_BYTES_PER_CORE = 64 << 10

AUTO_CACHE_ENV_VAR = "TTFLASHDECODE_AUTO_CACHE"

_PACKAGE = Path(__file__).resolve().parent
_REPO = _PACKAGE.parent


@dataclass(frozen=True)
class Choice:
    """What the tuner decided for one shape key: the config to plan with (None: the rule, planned with the call's
    largest position), how (``"rule"``, ``"model"`` or ``"disk"``: a previous process's model runs read back) and
    the MODELLED duration of every evaluated candidate, ``(grid, k_chunk_size, max_cores_per_head_batch,
    duration_ns)``, the chosen one first."""

    config: ProgramConfig | None
    source: str
    durations: tuple[tuple[tuple[int, int], int, int, float], ...] = ()


# Per-process choices and counters (:func:`stats`); a lock so two threads tuning the same key run it once.
_CHOICES: dict[tuple, Choice] = {}
_LOCK = threading.Lock()
_STATS = {"rule": 0, "model": 0, "disk": 0, "memory": 0, "evaluations": 0, "evaluation_s": 0.0}


# ---- the op's planning entry --------------------------------------------------------------------------------------


def plan_for(
    shapes: DecodeShapes,
    config: ProgramConfig,
    grid: tuple[int, int],
    *,
    max_cur_pos: int | None = None,
    fp32_dest_acc: bool = False,
    l1_budget: int = L1_BUDGET_BYTES,
) -> DecodePlan:
    """The plan of a call for any config the op accepts: a chosen config (``"tune"`` or a function) is resolved here
    at its first call; the default and explicit configs go to :func:`ttflashdecode.plan.auto.plan_for` (a lookup)."""
    if not is_chosen(config):
        return plan_auto.plan_for(
            shapes, config, grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget
        )
    request = PlanRequest(shapes, tuple(grid), bool(fp32_dest_acc), int(l1_budget))
    if config.chooser == TUNE:
        chosen = tune(request)
    else:
        chosen = config.chooser(request)
        if chosen is not None and not isinstance(chosen, ProgramConfig):
            chosen = ProgramConfig.coerce(chosen, default_grid=tuple(grid))  # a ttnn config or a name
        if chosen is not None and is_chosen(chosen):
            raise TypeError(f"program_config function returned {chosen!r}: expected an explicit config or None")
    if chosen is None:  # the rule, refined by the batch's largest host position as the default is
        return plan_auto.plan_with_rule(
            shapes,
            grid,
            exp_approx_mode=config.exp_approx_mode,
            max_cur_pos=max_cur_pos,
            fp32_dest_acc=fp32_dest_acc,
            l1_budget=l1_budget,
        )
    if config.chooser == TUNE:  # ranked with the default exp; the exp asked for is kept
        chosen = replace(chosen, exp_approx_mode=config.exp_approx_mode)
    return plan(shapes, chosen, grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)


# ---- the built-in tuner -------------------------------------------------------------------------------------------


def tune(request: PlanRequest) -> ProgramConfig | None:
    """``program_config="tune"``: the modelled-fastest of the request's candidates (None: the rule). See
    :func:`choose` for the whole record."""
    return choose(request.shapes, request.grid, fp32_dest_acc=request.fp32_dest_acc, l1_budget=request.l1_budget).config


def choose(
    shapes: DecodeShapes, grid: tuple[int, int], *, fp32_dest_acc: bool = False, l1_budget: int = L1_BUDGET_BYTES
) -> Choice:
    """The tuner's choice for ``shapes`` on a device of compute grid ``grid`` (see the module docstring)."""
    key = (shapes, tuple(grid), bool(fp32_dest_acc), int(l1_budget))
    with _LOCK:
        choice = _CHOICES.get(key)
        if choice is not None:
            _STATS["memory"] += 1
            return choice
        # The rule's plan first: its error is the call's error when nothing fits.
        rule_plan = plan(shapes, plan_auto.rule_config(grid), grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget)
        if kv_bytes_per_core(rule_plan) < RULE_MAX_KV_BYTES_PER_CORE or board_for(grid) is None:
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
        logger.warning("program_config='tune': the emulator's timing model is off (TTFD_EMU_TIMING=0); using the rule")
        return Choice(None, "rule"), False
    listed = plan_auto.candidates(shapes, grid, fp32_dest_acc=fp32_dest_acc, l1_budget=l1_budget, rule_plan=rule_plan)
    logger.info(
        f"program_config='tune': {len(listed)} candidates for {_label(shapes)} on grid {tuple(grid)} "
        "(modelled by the emulator; the first run of each kernel variant compiles it)"
    )
    timed, t0 = [], time.monotonic()
    for i, (config, candidate_plan) in enumerate(listed, 1):
        t1 = time.monotonic()
        try:
            ns = evaluate(candidate_plan, fp32_dest_acc=fp32_dest_acc)
        except Exception as e:  # a candidate the emulator cannot run is not chosen; the call still runs
            logger.warning(
                f"program_config='tune': candidate {i}/{len(listed)} {describe(config)} not evaluated: {str(e)[:500]}"
            )
            continue
        logger.info(
            f"program_config='tune': candidate {i}/{len(listed)} k_chunk_size {candidate_plan.k_chunk_size}, "
            f"{candidate_plan.num_cores_per_head} cores per group, grid "
            f"{config.compute_with_storage_grid_size}: {ns / 1000:.1f} us modelled "
            f"({time.monotonic() - t1:.1f} s)"
        )
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
    rows = [
        (c.compute_with_storage_grid_size, p.k_chunk_size, p.num_cores_per_head, round(t, 1))
        for t, c, p in sorted(timed, key=lambda t: (t[1] is not config, t[0]))
    ]
    rule_ns = next((f"{t / 1000:.1f} us" for t, c, _ in timed if c == plan_auto.rule_config(grid)), "not run")
    logger.info(
        f"program_config='tune': {len(timed)} of {len(listed)} candidates run in {time.monotonic() - t0:.1f} s;"
        f" chose {describe(resolved)}: {ns / 1000:.1f} us modelled; the rule's plan: {rule_ns}"
    )
    return Choice(resolved, "model", tuple(rows)), len(timed) == len(listed)


def _label(s: DecodeShapes) -> str:
    """A shape key in a log line: the numbers that size the work, and what differs from a plain causal decode."""
    default = DecodeShapes(batch=1, n_q_heads=1, n_kv_heads=1, head_dim=32, kv_len=32)
    extra = [
        f"{k}={v}"
        for k, v in asdict(s).items()
        if k not in ("batch", "n_q_heads", "n_kv_heads", "head_dim", "kv_len", "v_head_dim", "logical_kv_len")
        and v != getattr(default, k)
    ]
    return (
        f"batch {s.batch}, {s.n_q_heads} q / {s.n_kv_heads} kv heads, head_dim {s.head_dim}, kv_len {s.kv_len}"
        + "".join(f", {e}" for e in extra)
    )


# ---- evaluation on the emulator's timing model --------------------------------------------------------------------

_DEVICES: dict[str, object] = {}


def board_for(grid: tuple[int, int]) -> str | None:
    """The emulated board whose chip has ``grid`` (None: no emulated board has it; the rule decides)."""
    from ttflashdecode.backend import emulator_grids

    for board, board_grid in emulator_grids().items():
        if tuple(board_grid) == tuple(grid):
            return board
    return None


def _device(board: str):
    """The process's private emulated chip for evaluations (timing-only: no math, the same durations)."""
    dev = _DEVICES.get(board)
    if dev is None or getattr(dev, "_closed", False):
        from ttflashdecode.backend import emulator

        dev = _DEVICES[board] = emulator().open_device(board, timing_only=True)
    return dev


def evaluate(decode_plan: DecodePlan, *, fp32_dest_acc: bool = False, cur_pos: int | None = None) -> float:
    """MODELLED duration (ns) of ``decode_plan``'s program with every user at position ``cur_pos`` (None: the last
    position of the cache, the tuner's case), built with the default compute settings (and fp32 DST accumulation as
    given)."""
    import torch

    from ttflashdecode.backend import import_ttnn, noc1_reader_stride
    from ttflashdecode.ops.decode.factory import DecodeBuffers, build_program
    from ttflashdecode.ops.descriptors import ComputeSettings

    ttnn = import_ttnn()
    s = decode_plan.shapes
    board = board_for(decode_plan.grid)
    if board is None:
        raise ValueError(f"grid={decode_plan.grid}: no emulated board has this compute grid")
    dev = _device(board)
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
    # Contents that cannot steer a kernel are never written (timing-only runs move no bytes for them).
    k = dev.empty(kv_rows(s.head_dim), getattr(ttnn, s.k_dtype))
    v = k if s.v_from_k else dev.empty(kv_rows(s.v_head_dim), getattr(ttnn, s.v_dtype))
    if s.attn_mask_heads:
        tensors["attn_mask"] = dev.empty(
            [s.batch, s.attn_mask_heads, s.q_len, s.logical_kv_len], getattr(ttnn, s.attn_mask_dtype)
        )
    if s.has_attention_sink:
        tensors["attention_sink"] = dev.allocate([1, s.n_q_heads], ttnn.bfloat16, fill=0)
    buffers = DecodeBuffers(
        q=dev.allocate([s.q_len, s.batch, s.n_q_heads, s.head_dim], ttnn.bfloat16, fill=0),
        k=k,
        v=v,
        cur_pos=dev.from_torch(positions, dtype=ttnn.int32, layout=row_major),
        out=dev.allocate([s.q_len, s.batch, s.n_q_heads, s.v_head_dim], getattr(ttnn, s.out_dtype), fill=None),
        **tensors,
    )
    noc = lambda core: (lambda c: (c.x, c.y))(dev.worker_core_from_logical_core(ttnn.CoreCoord(*core)))  # noqa: E731
    program = build_program(
        decode_plan,
        buffers,
        noc,
        ComputeSettings(fp32_dest_acc_en=fp32_dest_acc),
        noc1_stride=noc1_reader_stride(dev),
    )
    t0 = time.monotonic()
    try:
        stats = dev.generic_op(buffers.io_tensors(), program)
    finally:
        _STATS["evaluations"] += 1
        _STATS["evaluation_s"] += time.monotonic() - t0
        for t in {id(t): t for t in buffers.io_tensors()}.values():
            t.deallocate()
    if stats.duration_ns is None:
        raise RuntimeError("the emulator's timing model is off (TTFD_EMU_TIMING=0): the tuner cannot rank candidates")
    return float(stats.duration_ns)


# ---- the disk cache -----------------------------------------------------------------------------------------------


def auto_cache_dir() -> Path:
    env = os.environ.get(AUTO_CACHE_ENV_VAR)
    return Path(env) if env else Path.home() / ".cache" / "ttflashdecode" / "auto"


def _hash_files(paths, root: Path) -> str:
    """Hash of the files' names (relative to `root`, so any checkout or install hashes alike) and contents."""
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


_HASHES: dict[str, str] = {}


def kernel_source_hash() -> str:
    """Hash of what decides a config's program: the FlashDecode device kernels, the program factory, the kernel
    arguments and the planner (but plan/auto.py, which only chooses). Any edit gives new disk keys."""
    if "kernels" not in _HASHES:
        kernels = [p for p in (_PACKAGE / "ops" / "decode" / "kernels").rglob("*") if p.is_file()]
        python = [
            _PACKAGE / "ops" / "decode" / "factory.py",
            _PACKAGE / "ops" / "decode" / "args.py",
            *(p for p in (_PACKAGE / "plan").glob("*.py") if p.name != "auto.py"),
        ]
        _HASHES["kernels"] = _hash_files([p for p in kernels + python if p.is_file()], _REPO)
    return _HASHES["kernels"]


def model_hash() -> str:
    """Hash of the timing model (its header, the runtime's hooks) and :data:`MODEL_VERSION`."""
    if "model" not in _HASHES:
        from ttflashdecode.backend import emulator_root

        emu = emulator_root()  # found, not imported: ttemu imports torch
        # csrc/compute.cpp holds the hooks' compute-side classification (timing_classify_sfpu, timing_matmul)
        files = [
            *(emu / "include" / "emu").glob("timing*.h"),
            emu / "csrc" / "runtime.cpp",
            emu / "csrc" / "compute.cpp",
            emu / "arch.py",
        ]
        _HASHES["model"] = f"v{MODEL_VERSION}-" + _hash_files([p for p in files if p.is_file()], emu.parent)
    return _HASHES["model"]


def disk_key(shapes: DecodeShapes, grid, fp32_dest_acc: bool, l1_budget: int) -> str:
    """The name of a choice's file: the shape key, the kernel source hash and the model hash, hashed."""
    text = json.dumps(
        [asdict(shapes), list(grid), bool(fp32_dest_acc), int(l1_budget), kernel_source_hash(), model_hash()],
        sort_keys=True,
    )
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
        logger.warning(f"program_config='tune': ignoring {path}: {e}")
        return None


def _write_disk(path: Path, choice: Choice) -> None:
    data = {
        "config": None if choice.config is None else asdict(choice.config),
        "durations": choice.durations,
        "kernel_source_hash": kernel_source_hash(),
        "model_hash": model_hash(),
        "source": "modelled",
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)  # atomic: a concurrent reader sees the old file or the whole new one
    except OSError as e:  # a read-only home: the choice still holds for this process
        logger.warning(f"program_config='tune': could not write {path}: {e}")


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
