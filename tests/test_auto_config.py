"""The default program config and opt-in tuning.

* The default (``program_config=None`` or ``"auto"``, ttflashdecode/plan/auto.py) is the shipped tuned table's
  config for the shapes it holds and the fixed rule for the rest: a lookup that never runs the tuner, opens an
  emulator or compiles a kernel.
* ``program_config="tune"`` (ttflashdecode/tuning.py) runs the planner's candidates through the emulator's timing
  model at a shape's first call, says so per candidate, picks the modelled-fastest and caches the choice in memory
  and on disk (keyed so a kernel edit invalidates it); a function given as program_config decides itself.
* Explicit configs are planned as written.

Durations are MODELLED by the emulator's timing model.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pytest
from loguru import logger

import ttemu
from decode_harness import DecodeCase, assert_matches_golden, run_case
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import tuning
from ttflashdecode.config import AutoProgramConfig, ChosenProgramConfig, ProgramConfig, load_program_config
from ttflashdecode.ops.decode import api as op_module
from ttflashdecode.plan import DecodeShapes, L1OverflowError, auto, plan

GRID = (8, 8)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def private_tuning_cache(tmp_path, monkeypatch):
    """Each test starts with no choices in memory and an empty disk cache of its own."""
    monkeypatch.setenv(tuning.AUTO_CACHE_ENV_VAR, str(tmp_path / "auto"))
    monkeypatch.delenv(auto.AUTO_MODE_ENV_VAR, raising=False)
    tuning.clear()
    yield
    tuning.clear()


@dataclass(frozen=True)
class TuneCase(DecodeCase):
    """A harness case run with program_config="tune"."""

    def program_config(self):
        return "tune"


# Small enough to run in seconds, so the tuner's line is lowered to make it evaluate: 2 groups on 64 cores give 3
# group sizes and 2 chunk sizes to choose from (the golden test runs the first 3 candidates).
CASE = TuneCase(2, 8, 1, 64, 512, (511, 200), "bfloat16")


def _shapes(case: DecodeCase) -> DecodeShapes:
    return DecodeShapes(
        batch=case.batch,
        n_q_heads=case.n_q_heads,
        n_kv_heads=case.n_kv_heads,
        head_dim=case.head_dim,
        kv_len=case.kv_len,
        k_dtype=case.kv_dtype,
        v_dtype=case.kv_dtype,
    )


def _tile(dev):
    return lambda x, dtype, **kw: dev.from_torch(x, dtype=dtype, layout=import_ttnn().TILE_LAYOUT, **kw)


# ---- the default: table or rule, never the tuner ------------------------------------------------------------------


def _forbid_tuning_runs_and_compiles(monkeypatch, dev):
    """Every way planning with the default could reach the tuner, open an emulator, run a program or compile a kernel
    raises."""
    from ttemu import compiler, program

    def refuse(what):
        def raiser(*a, **k):
            raise AssertionError(f"planning with the default program config reached {what}")

        return raiser

    for name in ("tune", "choose", "evaluate", "_device"):
        monkeypatch.setattr(tuning, name, refuse(f"tuning.{name}"))
    monkeypatch.setattr(ttemu, "open_device", refuse("ttemu.open_device"))
    monkeypatch.setattr(type(dev), "generic_op", refuse("a program run"))
    for module in (compiler, program):
        for name in ("compile_kernel", "compile_kernels"):
            monkeypatch.setattr(module, name, refuse("the kernel compiler"), raising=False)


def _table_entries():
    return auto.load_table()["entries"]


def test_shipped_table_covers_the_builders_shapes_and_every_entry_plans():
    """The table in the package holds every shape perf/build_tuned_table.py lists (models in program_configs/ on
    N150, N300, T3K, Galaxy, P150); each entry's config plans within its chip's L1, and its modelled duration is no
    worse than the rule's."""
    sys.path.insert(0, str(REPO / "perf"))
    try:
        import build_tuned_table
    finally:
        sys.path.remove(str(REPO / "perf"))
    listed = build_tuned_table.entries()
    assert len(listed) >= 12 and {e.board for e in listed} == {"n150", "n300", "t3k", "galaxy", "p150"}
    galaxy = [e.shapes for e in listed if e.board == "galaxy"]  # the 2-D split: b32 -> 8 users, 8 q / 1 kv a chip
    assert galaxy and all((s.batch, s.n_q_heads, s.n_kv_heads) == (8, 8, 1) for s in galaxy), galaxy
    assert {e.model for e in listed} == {"llama-3.1-8b", "llama-3.1-70b"}
    for e in listed:
        assert auto.table_entry(e.shapes, e.grid) is not None, f"{e.label}: not in {auto.TUNED_TABLE_PATH}"
    tuned = 0
    for entry in _table_entries():
        s, grid, budget = DecodeShapes(**entry["shapes"]), tuple(entry["grid"]), entry["l1_budget"]
        got = auto.plan_for(s, AutoProgramConfig(grid), grid, l1_budget=budget)
        if entry["config"] is None:
            assert got == plan(s, None, grid, l1_budget=budget), entry["label"]
            continue
        tuned += 1
        config = ProgramConfig(**entry["config"])
        assert got == plan(s, config, grid, l1_budget=budget) and got.l1_bytes <= got.l1_budget, entry["label"]
        chosen, rule = entry["modelled_ns"]["chosen"], entry["modelled_ns"]["rule"]
        assert rule is None or chosen <= rule * 1.005, entry  # the rule's plan is always a candidate
        assert [chosen] == [r[3] for r in entry["candidates_modelled_ns"][:1]]
    assert tuned >= 1, "no entry of the table was decided by the timing model"


def test_default_plans_from_the_table_or_the_rule_without_tuning(monkeypatch):
    """On an emulated N150 (the same code path as a card: the plan depends on the device's grid only), a table shape
    gets the table's config and an unseen shape the rule, with the tuner, emulator opening and compiler forbidden."""
    dev = ttemu.open_device("n150")
    _forbid_tuning_runs_and_compiles(monkeypatch, dev)
    hit = next(e for e in _table_entries() if tuple(e["grid"]) == GRID and e["config"] is not None)
    s = DecodeShapes(**hit["shapes"])
    try:
        for config in (None, "auto"):
            wrapper = op_module.FlashDecodeWrapper(dev, program_config=config)
            assert isinstance(wrapper.program_config, AutoProgramConfig)
            ttnn = import_ttnn()
            got = wrapper.plan(
                batch=s.batch,
                n_q_heads=s.n_q_heads,
                n_kv_heads=s.n_kv_heads,
                head_dim=s.head_dim,
                kv_len=s.kv_len,
                kv_dtype=getattr(ttnn, s.k_dtype),
            )
            assert got == plan(s, ProgramConfig(**hit["config"]), GRID)
            unseen = wrapper.plan(
                batch=3,
                n_q_heads=8,
                n_kv_heads=1,
                head_dim=64,
                kv_len=8192 + 96,
                kv_dtype=ttnn.bfloat8_b,
                max_cur_pos=5000,
            )
            assert unseen == plan(unseen.shapes, auto.rule_config(GRID), GRID, max_cur_pos=5000)
    finally:
        dev.close()


@pytest.mark.parametrize("board, n_q_heads", [("n300", 32), ("t3k", 32), ("t3k", 64)])
def test_default_on_a_mesh_plans_each_chips_share_from_the_table(board, n_q_heads, monkeypatch):
    """Llama-3.1-8B (32 q heads) and 70B (64) with 8 kv heads on an emulated N300 / T3K: each chip's shapes (the
    heads split over the chips) hit the table's entry for that board, with nothing tuned, run or compiled."""
    mesh = ttemu.open_mesh_device(board)
    try:
        chip = mesh.get_devices()[0] if hasattr(mesh, "get_devices") else mesh
        _forbid_tuning_runs_and_compiles(monkeypatch, chip)
        ttnn = import_ttnn()
        got = op_module.FlashDecodeWrapper(mesh).plan(
            batch=1, n_q_heads=n_q_heads, n_kv_heads=8, head_dim=128, kv_len=8192, kv_dtype=ttnn.bfloat8_b
        )
    finally:
        mesh.close()
    model = {32: "llama-3.1-8b", 64: "llama-3.1-70b"}[n_q_heads]
    entry = next(
        e
        for e in _table_entries()
        if (e["model"], e["board"], e["shapes"]["batch"], e["shapes"]["kv_len"]) == (model, board, 1, 8192)
    )
    assert got.shapes == DecodeShapes(**entry["shapes"]) and got.grid == tuple(entry["grid"])
    assert got == plan(got.shapes, ProgramConfig(**entry["config"]), got.grid)


@pytest.mark.parametrize("kv_len", [8192, 32768])
def test_default_on_a_p150_plans_from_its_table_entry(kv_len, monkeypatch):
    """Llama-3.1-8B (32 q / 8 kv heads) on an emulated P150 (Blackhole, 11x10 grid): the call's shapes (Blackhole's
    64-byte DRAM alignment) and L1 budget hit the table's P150 entry, not the N150's, with nothing tuned, run or
    compiled; the same shape on an N150 gets the N150's entry."""
    ttnn = import_ttnn()
    got = {}
    for board in ("p150", "n150"):
        dev = ttemu.open_device(board)
        try:
            _forbid_tuning_runs_and_compiles(monkeypatch, dev)
            got[board] = op_module.FlashDecodeWrapper(dev).plan(
                batch=1, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=kv_len, kv_dtype=ttnn.bfloat8_b
            )
        finally:
            dev.close()
        monkeypatch.undo()
    for board, p in got.items():
        entry = next(
            e
            for e in _table_entries()
            if (e["model"], e["board"], e["shapes"]["batch"], e["shapes"]["kv_len"])
            == ("llama-3.1-8b", board, 1, kv_len)
        )
        assert p.shapes == DecodeShapes(**entry["shapes"]) and p.grid == tuple(entry["grid"]), board
        assert p.l1_budget == entry["l1_budget"], board
        if entry["config"] is not None:
            assert p == plan(p.shapes, ProgramConfig(**entry["config"]), p.grid, l1_budget=p.l1_budget), board
    assert got["p150"].grid == (11, 10) and got["p150"].shapes.dram_alignment == 64
    assert got["p150"].l1_budget > got["n150"].l1_budget


@dataclass(frozen=True)
class DefaultCase(DecodeCase):
    """A harness case run with no program_config."""

    def program_config(self):
        return None


def test_default_op_call_runs_without_tuning(monkeypatch):
    """A whole op call with no program_config (plan, program, launch on the emulator) never reaches the tuner."""
    for name in ("tune", "choose", "evaluate", "_device"):
        monkeypatch.setattr(tuning, name, lambda *a, **k: pytest.fail("the default reached the tuner"))
    case = DefaultCase(1, 8, 1, 64, 256, (255,), "bfloat16")
    dev = ttemu.open_device("n150")
    try:
        outcome = run_case(dev, case, to_device=_tile(dev), to_torch=dev.to_torch)
    finally:
        dev.close()
    assert_matches_golden(outcome, case)
    assert outcome.plan == plan(_shapes(case), auto.rule_config(GRID), GRID, max_cur_pos=255)


def test_rule_mode_from_the_environment(monkeypatch):
    """TTFLASHDECODE_AUTO=rule: the table is not read, every shape gets the rule's plan."""
    hit = next(e for e in _table_entries() if e["config"] is not None)
    s, grid = DecodeShapes(**hit["shapes"]), tuple(hit["grid"])
    assert auto.table_config(s, grid) is not None
    monkeypatch.setenv(auto.AUTO_MODE_ENV_VAR, "rule")
    assert auto.table_config(s, grid) is None
    assert auto.plan_for(s, AutoProgramConfig(grid), grid) == plan(s, auto.rule_config(grid), grid)


def test_table_applies_only_at_its_l1_budget():
    """A call with less L1 left (an L1 output below the buffers) gets the rule, planned within its budget."""
    hit = next(e for e in _table_entries() if e["config"] is not None)
    s, grid = DecodeShapes(**hit["shapes"]), tuple(hit["grid"])
    budget = hit["l1_budget"] - 64 * 1024
    assert auto.table_config(s, grid, l1_budget=budget) is None
    rule = plan(s, auto.rule_config(grid), grid, l1_budget=budget)
    assert auto.plan_for(s, AutoProgramConfig(grid), grid, l1_budget=budget) == rule


def test_a_table_file_of_another_format_is_refused(tmp_path):
    path = tmp_path / "decode.json"
    path.write_text(json.dumps({"format": 99, "entries": []}))
    with pytest.raises(ValueError, match="decode.json: expected a tuned table of format"):
        auto.load_table(path)
    assert auto.load_table(tmp_path / "missing.json")["entries"] == []


def test_default_keeps_the_callers_exp():
    """The default chooses grid use, k_chunk_size and group size; an exact exp asked for stays exact, on the table's
    path and on the rule's."""
    hit = next(e for e in _table_entries() if e["config"] is not None)
    s, grid = DecodeShapes(**hit["shapes"]), tuple(hit["grid"])
    exact = auto.plan_for(s, AutoProgramConfig(grid, exp_approx_mode=False), grid)
    assert exact.config.exp_approx_mode is False and exact.k_chunk_size == hit["config"]["k_chunk_size"]
    small = _shapes(CASE)
    exact = auto.plan_for(small, AutoProgramConfig(GRID, exp_approx_mode=False), GRID)
    assert exact == plan(small, replace(auto.rule_config(GRID), exp_approx_mode=False), GRID)
    assert auto.plan_for(small, AutoProgramConfig(GRID), GRID).config.exp_approx_mode is True


def test_nothing_fits_raises_the_planners_error():
    s, budget = DecodeShapes(batch=1, n_q_heads=8, n_kv_heads=1, head_dim=128, kv_len=8192), 4096  # L1 left: 4 KiB
    with pytest.raises(L1OverflowError) as default_error:
        auto.plan_for(s, AutoProgramConfig(GRID), GRID, l1_budget=budget)
    with pytest.raises(L1OverflowError) as tune_error:
        tuning.plan_for(s, ProgramConfig.coerce("tune"), GRID, l1_budget=budget)
    with pytest.raises(L1OverflowError) as rule_error:
        plan(s, None, GRID, l1_budget=budget)
    assert str(default_error.value) == str(tune_error.value) == str(rule_error.value)


def test_the_planner_refuses_a_chosen_config():
    with pytest.raises(TypeError, match="resolved by ttflashdecode.tuning.plan_for"):
        auto.plan_for(_shapes(CASE), ProgramConfig.coerce("tune"), GRID)
    for given in ("tune", lambda request: None):
        with pytest.raises(TypeError, match="resolved at the op's first call"):
            plan(_shapes(CASE), given, GRID)


# ---- "tune": the timing model at the first call -------------------------------------------------------------------


def test_tune_plan_matches_golden_is_the_fastest_candidate_and_reports_progress(monkeypatch):
    monkeypatch.setattr(tuning, "RULE_MAX_KV_BYTES_PER_CORE", 0)
    monkeypatch.setattr(auto, "MAX_CANDIDATES", 3)  # the rule's plan and two others: few kernel variants to compile
    lines = []
    sink = logger.add(lambda m: lines.append(m.record["message"]), level="INFO")
    dev = ttemu.open_device("n150")  # its own: no plan of this shape cached from another test
    try:
        outcome = run_case(dev, CASE, to_device=_tile(dev), to_torch=dev.to_torch)
    finally:
        dev.close()
        logger.remove(sink)
    assert_matches_golden(outcome, CASE)
    choice = tuning.choose(_shapes(CASE), GRID)
    assert choice.source == "model" and len(choice.durations) == 3, choice
    # One progress line per candidate, then the choice.
    progress = [line for line in lines if line.startswith("program_config='tune': candidate ")]
    assert [line.split()[2] for line in progress] == ["1/3", "2/3", "3/3"] and all("modelled" in p for p in progress)
    assert any("chose" in line for line in lines)
    # The op ran the chosen config's plan.
    assert (outcome.plan.k_chunk_size, outcome.plan.num_cores_per_head) == choice.durations[0][1:3]
    # Chosen: the modelled-fastest candidate (ties within 0.5% go to fewer cores).
    fastest = min(ns for *_, ns in choice.durations)
    assert choice.durations[0][3] <= fastest * 1.005, choice.durations
    # The ranking is the model's: the chosen plan evaluated again gives the same duration (deterministic replay).
    assert tuning.evaluate(outcome.plan) == pytest.approx(choice.durations[0][3], abs=0.1)
    for _config, p in auto.candidates(_shapes(CASE), GRID):
        assert p.l1_bytes <= p.l1_budget


def _fake_model(monkeypatch) -> list:
    """Replace the emulator runs with a deterministic stand-in (the cache logic does not need the model)."""
    calls = []

    def fake_evaluate(p, fp32_dest_acc=False):
        calls.append((p.k_chunk_size, p.num_cores_per_head))
        return 1000.0 + abs(p.num_cores_per_head - 8) * 100 + p.k_chunk_size

    monkeypatch.setattr(tuning, "evaluate", fake_evaluate)
    monkeypatch.setattr(tuning, "RULE_MAX_KV_BYTES_PER_CORE", 0)
    return calls


def test_tune_choice_is_cached_in_memory_and_on_disk(monkeypatch):
    calls = _fake_model(monkeypatch)
    s = _shapes(CASE)
    first = tuning.choose(s, GRID)
    assert first.source == "model" and len(calls) == len(first.durations) >= 3
    assert (first.config.k_chunk_size, first.config.max_cores_per_head_batch) == (32, 8)  # the stand-in's fastest
    n = len(calls)
    again = tuning.choose(s, GRID)
    assert again is first and len(calls) == n, "a second call in the process must run no evaluation"
    tuning.clear()  # a new process: memory empty, disk kept
    from_disk = tuning.choose(s, GRID)
    assert from_disk.source == "disk" and len(calls) == n, "a second process must read the choice, not evaluate"
    assert from_disk.config == first.config and from_disk.durations == first.durations


def test_second_tuned_op_plan_runs_no_evaluation(monkeypatch):
    calls = _fake_model(monkeypatch)
    for step in range(2):  # two devices: the second has no plan cached, so it asks the tuner again
        dev = ttemu.open_device("n150")
        try:
            wrapper = op_module.FlashDecodeWrapper(dev, program_config="tune")
            assert isinstance(wrapper.program_config, ChosenProgramConfig)
            p = wrapper.plan(batch=2, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=512)
        finally:
            dev.close()
        if step == 0:
            n = len(calls)
            assert n >= 3
    assert len(calls) == n and tuning.stats()["memory"] == 1
    assert (p.k_chunk_size, p.num_cores_per_head) == (32, 8)


def test_tune_disk_key_changes_with_the_kernels(monkeypatch, tmp_path):
    """Editing a device kernel gives new disk keys, so a choice made for the old kernels is never read back."""
    calls = _fake_model(monkeypatch)
    s = _shapes(CASE)
    tuning.choose(s, GRID)
    old_key, n = tuning.disk_key(s, GRID, False, auto.L1_BUDGET_BYTES), len(calls)
    assert (tuning.auto_cache_dir() / f"{old_key}.json").is_file()
    # A copy of the sources the hash reads, with one kernel edited.
    repo = tmp_path / "repo"
    shutil.copytree(tuning._PACKAGE, repo / "ttflashdecode", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    monkeypatch.setattr(tuning, "_REPO", repo)
    monkeypatch.setattr(tuning, "_PACKAGE", repo / "ttflashdecode")
    monkeypatch.setattr(tuning, "_HASHES", {})
    assert tuning.disk_key(s, GRID, False, auto.L1_BUDGET_BYTES) == old_key  # same sources, same key
    reader = repo / "ttflashdecode" / "ops" / "decode" / "kernels" / "dataflow" / "reader_flash_decode.cpp"
    reader.write_text(reader.read_text() + "\n// edited\n")
    monkeypatch.setattr(tuning, "_HASHES", {})
    assert tuning.disk_key(s, GRID, False, auto.L1_BUDGET_BYTES) != old_key
    tuning.clear()
    assert tuning.choose(s, GRID).source == "model" and len(calls) > n, "the old kernels' choice must not be read"


def test_tune_keeps_the_rule_for_small_shapes_without_runs(monkeypatch):
    """Under RULE_MAX_KV_BYTES_PER_CORE the tuner's choice is the rule, position refinement included, with no run."""
    monkeypatch.setattr(tuning, "evaluate", lambda *a, **k: pytest.fail("a small shape must not be evaluated"))
    s = _shapes(CASE)
    assert auto.kv_bytes_per_core(plan(s, None, GRID)) < tuning.RULE_MAX_KV_BYTES_PER_CORE
    for max_cur_pos in (None, 100):
        got = tuning.plan_for(s, ProgramConfig.coerce("tune"), GRID, max_cur_pos=max_cur_pos)
        assert got == plan(s, auto.rule_config(GRID), GRID, max_cur_pos=max_cur_pos)
    assert tuning.stats()["rule"] == 1 and tuning.stats()["evaluations"] == 0


# ---- a function as program_config ---------------------------------------------------------------------------------


def test_a_function_chooses_the_config(monkeypatch):
    """program_config=f: f gets a PlanRequest once per shape key and returns the config (or None: the default's)."""
    monkeypatch.setattr(tuning, "choose", lambda *a, **k: pytest.fail("a function config must not run the tuner"))
    asked = []

    def pick(request: auto.PlanRequest):
        asked.append(request)
        if request.shapes.kv_len == 1024:
            return None
        return ProgramConfig((8, 1), k_chunk_size=64, max_cores_per_head_batch=4)

    dev = ttemu.open_device("n150")
    try:
        wrapper = op_module.FlashDecodeWrapper(dev, program_config=pick)
        got = wrapper.plan(batch=2, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=512)
        again = wrapper.plan(batch=2, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=512)
        default = wrapper.plan(batch=2, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=1024)
    finally:
        dev.close()
    s = _shapes(CASE)
    assert got == again == plan(s, ProgramConfig((8, 1), k_chunk_size=64, max_cores_per_head_batch=4), GRID)
    assert [(r.shapes.kv_len, r.grid, r.fp32_dest_acc) for r in asked] == [(512, GRID, False), (1024, GRID, False)]
    assert asked[0].shapes == s and asked[0].l1_budget == auto.L1_BUDGET_BYTES
    assert default == plan(default.shapes, auto.rule_config(GRID), GRID)
    with pytest.raises(TypeError, match="expected an explicit config or None"):
        tuning.plan_for(s, ProgramConfig.coerce(lambda r: "tune"), GRID)


# ---- explicit configs ---------------------------------------------------------------------------------------------

EXPLICIT = [
    ProgramConfig(GRID),
    ProgramConfig((4, 4), k_chunk_size=64, max_cores_per_head_batch=4),
    "llama-3.1-8b/n150",
    "small/test-2x2",
]


@pytest.mark.parametrize("config", EXPLICIT, ids=str)
def test_explicit_configs_are_planned_as_before(config, monkeypatch, ttnn):
    """An explicit config (ProgramConfig, ttnn.SDPAProgramConfig, a named config) gets exactly plan()'s plan, and
    nothing is evaluated or looked up in the table."""
    monkeypatch.setattr(tuning, "evaluate", lambda *a, **k: pytest.fail("an explicit config must not be evaluated"))
    monkeypatch.setattr(auto, "table_config", lambda *a, **k: pytest.fail("an explicit config must not read the table"))
    s = DecodeShapes(
        batch=1, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=8192, k_dtype="bfloat8_b", v_dtype="bfloat8_b"
    )
    resolved = ProgramConfig.coerce(config)
    for given in (resolved, resolved.to_ttnn()):
        cfg = ProgramConfig.coerce(given)
        for max_cur_pos in (None, 1000):
            expected = plan(s, given, GRID, max_cur_pos=max_cur_pos)
            assert tuning.plan_for(s, cfg, GRID, max_cur_pos=max_cur_pos) == expected
    dev = ttemu.open_device("n150")
    try:
        wrapper = op_module.FlashDecodeWrapper(dev, program_config=config)
        assert wrapper.program_config == resolved and not isinstance(wrapper.program_config, AutoProgramConfig)
        got = wrapper.plan(batch=1, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=8192, kv_dtype=ttnn.bfloat8_b)
        assert got == plan(s, resolved, GRID)
    finally:
        dev.close()
    assert tuning.stats()["evaluations"] == 0


def test_config_names_and_forms():
    assert isinstance(ProgramConfig.coerce("auto"), AutoProgramConfig)
    assert ProgramConfig.coerce("auto", default_grid=(8, 7)).compute_with_storage_grid_size == (8, 7)
    tune = ProgramConfig.coerce("tune", default_grid=(8, 7))
    assert isinstance(tune, ChosenProgramConfig) and tune.chooser == "tune"
    assert tune.compute_with_storage_grid_size == (8, 7)
    assert ProgramConfig.coerce(None) == ProgramConfig(GRID)  # the planner's own default is still the rule
    assert not isinstance(load_program_config("llama-3.1-8b/n150"), AutoProgramConfig)
    with pytest.raises(ValueError, match="chooser='fast': expected 'tune' or a function"):
        ChosenProgramConfig(GRID, chooser="fast")
    assert asdict(ProgramConfig(GRID)).keys() <= asdict(tune).keys()
