"""program_config="auto" (ttflashdecode/plan/auto.py): the choice runs, is right, is the modelled-fastest of its
candidates, is cached (in memory and on disk, keyed so a kernel edit invalidates it), and leaves explicit configs
alone. Durations are MODELLED by the emulator's timing model."""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import pytest

from decode_harness import DecodeCase, assert_matches_golden, run_case
from ttflashdecode import emulator
from ttflashdecode import op as op_module
from ttflashdecode.config import AutoProgramConfig, ProgramConfig, load_program_config
from ttflashdecode.plan import DecodeShapes, L1OverflowError, plan
from ttflashdecode.plan import auto
from ttflashdecode.ttnn_env import import_ttnn

GRID = (8, 8)


@pytest.fixture(autouse=True)
def private_auto_cache(tmp_path, monkeypatch):
    """Each test starts with no choices in memory and an empty disk cache of its own."""
    monkeypatch.setenv(auto.AUTO_CACHE_ENV_VAR, str(tmp_path / "auto"))
    auto.clear()
    yield
    auto.clear()


@dataclass(frozen=True)
class AutoCase(DecodeCase):
    """A harness case run with program_config="auto"."""

    def program_config(self):
        return "auto"


# Small enough to run in seconds, so the rule's threshold is lowered to make auto evaluate it: 2 groups on 64 cores
# give 3 group sizes and 2 chunk sizes to choose from (the golden test runs the first 3 candidates).
CASE = AutoCase(2, 8, 1, 64, 512, (511, 200), "bfloat16")


def _shapes(case: DecodeCase) -> DecodeShapes:
    return DecodeShapes(batch=case.batch, n_q_heads=case.n_q_heads, n_kv_heads=case.n_kv_heads,
                        head_dim=case.head_dim, kv_len=case.kv_len, k_dtype=case.kv_dtype, v_dtype=case.kv_dtype)


def test_auto_plan_matches_golden_and_is_the_fastest_candidate(monkeypatch):
    monkeypatch.setattr(auto, "RULE_MAX_KV_BYTES_PER_CORE", 0)
    monkeypatch.setattr(auto, "MAX_CANDIDATES", 3)  # the rule's plan and two others: few kernel variants to compile
    dev = emulator.open_device("n150")  # its own: no plan of this shape cached from another test
    try:
        outcome = run_case(dev, CASE, to_device=lambda x, dtype, **kw: dev.from_torch(x, dtype=dtype, layout=import_ttnn().TILE_LAYOUT, **kw),
                           to_torch=dev.to_torch)  # fmt: skip
    finally:
        dev.close()
    assert_matches_golden(outcome, CASE)
    choice = auto.choose(_shapes(CASE), GRID)
    assert choice.source == "model" and len(choice.durations) == 3, choice
    # The op ran the chosen config's plan.
    assert (outcome.plan.k_chunk_size, outcome.plan.num_cores_per_head) == choice.durations[0][1:3]
    # Chosen: the modelled-fastest candidate (ties within 0.5% go to fewer cores).
    fastest = min(ns for *_, ns in choice.durations)
    assert choice.durations[0][3] <= fastest * 1.005, choice.durations
    # The ranking is the model's: the chosen plan evaluated again gives the same duration (deterministic replay).
    assert auto.evaluate(outcome.plan) == pytest.approx(choice.durations[0][3], abs=0.1)
    # Every candidate is a plan the planner accepted within L1.
    for _config, p in auto.candidates(_shapes(CASE), GRID):
        assert p.l1_bytes <= p.l1_budget


def _fake_model(monkeypatch) -> list:
    """Replace the emulator runs with a deterministic stand-in (the cache logic does not need the model)."""
    calls = []

    def fake_evaluate(p, fp32_dest_acc=False):
        calls.append((p.k_chunk_size, p.num_cores_per_head))
        return 1000.0 + abs(p.num_cores_per_head - 8) * 100 + p.k_chunk_size

    monkeypatch.setattr(auto, "evaluate", fake_evaluate)
    monkeypatch.setattr(auto, "RULE_MAX_KV_BYTES_PER_CORE", 0)
    return calls


def test_choice_is_cached_in_memory_and_on_disk(monkeypatch):
    calls = _fake_model(monkeypatch)
    s = _shapes(CASE)
    first = auto.choose(s, GRID)
    assert first.source == "model" and len(calls) == len(first.durations) >= 3
    assert (first.config.k_chunk_size, first.config.max_cores_per_head_batch) == (32, 8)  # the stand-in's fastest
    n = len(calls)
    again = auto.choose(s, GRID)
    assert again is first and len(calls) == n, "a second call in the process must run no evaluation"
    auto.clear()  # a new process: memory empty, disk kept
    from_disk = auto.choose(s, GRID)
    assert from_disk.source == "disk" and len(calls) == n, "a second process must read the choice, not evaluate"
    assert from_disk.config == first.config and from_disk.durations == first.durations


def test_second_op_call_runs_no_evaluation(monkeypatch):
    calls = _fake_model(monkeypatch)
    for step in range(2):  # two devices: the second has no plan cached, so it asks auto again
        dev = emulator.open_device("n150")
        try:
            wrapper = op_module.FlashDecodeWrapper(dev)  # program_config None: auto
            assert isinstance(wrapper.program_config, AutoProgramConfig)
            p = wrapper.plan(batch=2, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=512)
        finally:
            dev.close()
        if step == 0:
            n = len(calls)
            assert n >= 3
    assert len(calls) == n and auto.stats()["memory"] == 1
    assert (p.k_chunk_size, p.num_cores_per_head) == (32, 8)


def test_disk_key_changes_with_the_kernels(monkeypatch, tmp_path):
    """Editing a device kernel gives new disk keys, so a choice made for the old kernels is never read back."""
    calls = _fake_model(monkeypatch)
    s = _shapes(CASE)
    auto.choose(s, GRID)
    old_key, n = auto.disk_key(s, GRID, False, auto.L1_BUDGET_BYTES), len(calls)
    assert (auto.auto_cache_dir() / f"{old_key}.json").is_file()
    # A copy of the sources the hash reads, with one kernel edited.
    repo = tmp_path / "repo"
    shutil.copytree(auto._PACKAGE, repo / "ttflashdecode", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    monkeypatch.setattr(auto, "_REPO", repo)
    monkeypatch.setattr(auto, "_PACKAGE", repo / "ttflashdecode")
    monkeypatch.setattr(auto, "_HASHES", {})
    assert auto.disk_key(s, GRID, False, auto.L1_BUDGET_BYTES) == old_key  # same sources, same key
    reader = repo / "ttflashdecode" / "ops" / "decode" / "kernels" / "dataflow" / "reader_flash_decode.cpp"
    reader.write_text(reader.read_text() + "\n// edited\n")
    monkeypatch.setattr(auto, "_HASHES", {})
    assert auto.disk_key(s, GRID, False, auto.L1_BUDGET_BYTES) != old_key
    auto.clear()
    assert auto.choose(s, GRID).source == "model" and len(calls) > n, "the old kernels' choice must not be read"


EXPLICIT = [
    ProgramConfig(GRID),
    ProgramConfig((4, 4), k_chunk_size=64, max_cores_per_head_batch=4),
    "llama-3.1-8b/n150",
    "small/test-2x2",
]


@pytest.mark.parametrize("config", EXPLICIT, ids=str)
def test_explicit_configs_are_planned_as_before(config, monkeypatch, ttnn):
    """An explicit config (ProgramConfig, ttnn.SDPAProgramConfig, a named config) gets exactly plan()'s plan, and
    nothing is evaluated."""
    monkeypatch.setattr(auto, "evaluate", lambda *a, **k: pytest.fail("an explicit config must not be evaluated"))
    monkeypatch.setattr(auto, "RULE_MAX_KV_BYTES_PER_CORE", 0)
    s = DecodeShapes(batch=1, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=8192, k_dtype="bfloat8_b",
                     v_dtype="bfloat8_b")
    resolved = ProgramConfig.coerce(config)
    for given in (resolved, resolved.to_ttnn()):
        cfg = ProgramConfig.coerce(given)
        for max_cur_pos in (None, 1000):
            assert auto.plan_for(s, cfg, GRID, max_cur_pos=max_cur_pos) == plan(s, given, GRID, max_cur_pos=max_cur_pos)
    dev = emulator.open_device("n150")
    try:
        wrapper = op_module.FlashDecodeWrapper(dev, program_config=config)
        assert wrapper.program_config == resolved and not isinstance(wrapper.program_config, AutoProgramConfig)
        got = wrapper.plan(batch=1, n_q_heads=8, n_kv_heads=1, head_dim=64, kv_len=8192, kv_dtype=ttnn.bfloat8_b)
        assert got == plan(s, resolved, GRID)
    finally:
        dev.close()
    assert auto.stats()["evaluations"] == 0


def test_small_shapes_keep_the_rule_without_runs(monkeypatch):
    """Below RULE_MAX_KV_BYTES_PER_CORE auto is the fixed default rule, position refinement included, with no model
    run."""
    monkeypatch.setattr(auto, "evaluate", lambda *a, **k: pytest.fail("a small shape must not be evaluated"))
    s = _shapes(CASE)
    assert auto.kv_bytes_per_core(plan(s, None, GRID)) < auto.RULE_MAX_KV_BYTES_PER_CORE
    for max_cur_pos in (None, 100):
        got = auto.plan_for(s, AutoProgramConfig(GRID), GRID, max_cur_pos=max_cur_pos)
        assert got == plan(s, None, GRID, max_cur_pos=max_cur_pos)
    assert auto.stats()["rule"] == 1 and auto.stats()["evaluations"] == 0


def test_nothing_fits_raises_the_planners_error(monkeypatch):
    monkeypatch.setattr(auto, "RULE_MAX_KV_BYTES_PER_CORE", 0)
    monkeypatch.setattr(auto, "evaluate", lambda *a, **k: pytest.fail("nothing fits: nothing to evaluate"))
    s, budget = DecodeShapes(batch=1, n_q_heads=8, n_kv_heads=1, head_dim=128, kv_len=8192), 4096  # L1 left: 4 KiB
    with pytest.raises(L1OverflowError) as auto_error:
        auto.plan_for(s, AutoProgramConfig(GRID), GRID, l1_budget=budget)
    with pytest.raises(L1OverflowError) as rule_error:
        plan(s, None, GRID, l1_budget=budget)
    assert str(auto_error.value) == str(rule_error.value)


def test_auto_by_name_and_named_configs_still_load():
    assert isinstance(ProgramConfig.coerce("auto"), AutoProgramConfig)
    assert ProgramConfig.coerce("auto", default_grid=(8, 7)).compute_with_storage_grid_size == (8, 7)
    assert ProgramConfig.coerce(None) == ProgramConfig(GRID)  # the planner's own default is still the rule
    assert not isinstance(load_program_config("llama-3.1-8b/n150"), AutoProgramConfig)


def test_rule_mode_from_the_environment(monkeypatch):
    """TTFLASHDECODE_AUTO=rule: no model runs for any shape, the rule's plan."""
    monkeypatch.setenv(auto.AUTO_MODE_ENV_VAR, "rule")
    monkeypatch.setattr(auto, "RULE_MAX_KV_BYTES_PER_CORE", 0)
    monkeypatch.setattr(auto, "evaluate", lambda *a, **k: pytest.fail("rule mode must not evaluate"))
    s = _shapes(CASE)
    assert auto.plan_for(s, AutoProgramConfig(GRID), GRID) == plan(s, None, GRID)


def test_auto_keeps_the_callers_exp(monkeypatch):
    """Auto chooses grid use, k_chunk_size and group size; an exact exp asked for (exp_approx_mode=False) stays exact,
    on the rule's path and on a model-chosen config."""
    monkeypatch.setattr(auto, "evaluate", lambda *a, **k: pytest.fail("a small shape must not be evaluated"))
    s = _shapes(CASE)
    exact = auto.plan_for(s, AutoProgramConfig(GRID, exp_approx_mode=False), GRID)
    assert exact.config.exp_approx_mode is False
    assert exact == plan(s, ProgramConfig(GRID, exp_approx_mode=False), GRID)
    assert auto.plan_for(s, AutoProgramConfig(GRID), GRID).config.exp_approx_mode is True
