"""ProgramConfig validation, ttnn round trips and the named YAML configs."""

import pytest

from ttflashdecode.config import (
    PROGRAM_CONFIGS_DIR,
    PROGRAM_CONFIGS_ENV_VAR,
    ProgramConfig,
    list_program_configs,
    load_program_config,
)


@pytest.fixture(scope="module")
def ttnn():
    from ttemu.ttnn_env import import_ttnn

    return import_ttnn()


def test_defaults_match_ttnn_and_list_becomes_tuple():
    cfg = ProgramConfig([8, 8])
    assert cfg.compute_with_storage_grid_size == (8, 8) and cfg.num_cores == 64
    assert (cfg.q_chunk_size, cfg.k_chunk_size, cfg.exp_approx_mode, cfg.max_cores_per_head_batch) == (0, 0, True, 16)
    assert hash(cfg) == hash(ProgramConfig((8, 8)))


def test_exp_default_is_upstreams_approximate_exp(ttnn):
    # Upstream's sdpa_decode factory reads an unset exp_approx_mode as the approximate exp; so does every way a config
    # reaches this package: the dataclass default, None, a ttnn config that leaves it unset, "auto" and no config.
    from ttflashdecode.config import AUTO

    approx = ProgramConfig((8, 8), exp_approx_mode=True)
    assert ProgramConfig((8, 8)) == approx and ProgramConfig((8, 8), exp_approx_mode=None) == approx
    unset = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=0, k_chunk_size=0)
    assert unset.exp_approx_mode is None and ProgramConfig.from_ttnn(unset).exp_approx_mode is True
    assert ProgramConfig.coerce(None).exp_approx_mode is True and ProgramConfig.coerce(AUTO).exp_approx_mode is True
    exact = ttnn.SDPAProgramConfig(
        compute_with_storage_grid_size=(8, 8), q_chunk_size=0, k_chunk_size=0, exp_approx_mode=False
    )
    assert ProgramConfig.from_ttnn(exact).exp_approx_mode is False
    assert ProgramConfig((8, 8), exp_approx_mode=False).to_ttnn().exp_approx_mode is False


def test_fast_path_key_tells_exp_modes_apart(ttnn):
    # The fast path (fast_path.py) reuses a launch when a call's arguments compare equal: a ttnn config with
    # exp_approx_mode False (exact) must never reuse one made for unset or True (approximate).
    from ttflashdecode.ops.decode.fast_path import program_config_value

    def value(**extra):
        return program_config_value(
            ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=0, k_chunk_size=0, **extra)
        )

    unset, approx, exact = value(), value(exp_approx_mode=True), value(exp_approx_mode=False)
    assert exact != unset and exact != approx and unset != approx
    assert value(exp_approx_mode=False) == exact


@pytest.mark.parametrize(
    "kw, needles",
    [
        (dict(compute_with_storage_grid_size=(0, 8)), ["compute_with_storage_grid_size=(0, 8)", "positive"]),
        (dict(compute_with_storage_grid_size=(8,)), ["compute_with_storage_grid_size=(8,)"]),
        (dict(compute_with_storage_grid_size="8x8"), ["compute_with_storage_grid_size='8x8'"]),
        (dict(k_chunk_size=48), ["k_chunk_size=48", "multiple of 32"]),
        (dict(k_chunk_size=-32), ["k_chunk_size=-32"]),
        (dict(k_chunk_size=True), ["k_chunk_size=True"]),
        (dict(q_chunk_size=33), ["q_chunk_size=33"]),
        (dict(exp_approx_mode=1), ["exp_approx_mode=1", "true, false or None"]),
        (dict(max_cores_per_head_batch=0), ["max_cores_per_head_batch=0", "1..64"]),
        (dict(max_cores_per_head_batch=128), ["max_cores_per_head_batch=128"]),
    ],
)
def test_validation_names_field_value_and_expectation(kw, needles):
    args = dict(compute_with_storage_grid_size=(8, 8)) | kw
    with pytest.raises(ValueError) as e:
        ProgramConfig(**args)
    for needle in needles:
        assert needle in str(e.value)


ROUND_TRIP = [
    ProgramConfig((8, 8)),
    ProgramConfig((2, 2), k_chunk_size=32, max_cores_per_head_batch=4),
    ProgramConfig((8, 7), q_chunk_size=64, k_chunk_size=512, exp_approx_mode=True, max_cores_per_head_batch=64),
]


@pytest.mark.parametrize("cfg", ROUND_TRIP + [load_program_config(n) for n in list_program_configs()], ids=str)
def test_round_trip_through_ttnn(ttnn, cfg):
    t = cfg.to_ttnn()
    assert isinstance(t, ttnn.SDPAProgramConfig)
    grid = t.compute_with_storage_grid_size
    assert (grid.x, grid.y) == cfg.compute_with_storage_grid_size
    assert (t.q_chunk_size, t.k_chunk_size, t.exp_approx_mode, t.max_cores_per_head_batch) == (
        cfg.q_chunk_size,
        cfg.k_chunk_size,
        cfg.exp_approx_mode,
        cfg.max_cores_per_head_batch,
    )
    assert ProgramConfig.from_ttnn(t) == cfg
    assert ProgramConfig.coerce(t) == cfg


def test_from_ttnn_built_upstream_style(ttnn):
    # exp_approx_mode unset (None): the approximate exp here as in upstream's factory (README "Precision").
    t = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(4, 2), q_chunk_size=0, k_chunk_size=128)
    assert ProgramConfig.from_ttnn(t) == ProgramConfig((4, 2), k_chunk_size=128)
    assert ProgramConfig.from_ttnn(t).to_ttnn().max_cores_per_head_batch == 16


def test_from_ttnn_rejects_unsupported_options(ttnn):
    t = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=0, k_chunk_size=0, max_k_splits=2)
    with pytest.raises(ValueError, match="max_k_splits=2"):
        ProgramConfig.from_ttnn(t)


def test_from_ttnn_validates_values(ttnn):
    t = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=0, k_chunk_size=40)
    with pytest.raises(ValueError, match="k_chunk_size=40"):
        ProgramConfig.from_ttnn(t)


def test_coerce():
    cfg = ProgramConfig((4, 4))
    assert ProgramConfig.coerce(cfg) is cfg
    assert ProgramConfig.coerce(None) == ProgramConfig((8, 8))
    assert ProgramConfig.coerce(None, default_grid=(8, 7)) == ProgramConfig((8, 7))
    assert ProgramConfig.coerce("small/test-2x2") == load_program_config("small/test-2x2")
    with pytest.raises(TypeError, match=r"program_config=\(8, 8\)"):
        ProgramConfig.coerce((8, 8))


# ---- named configs -----------------------------------------------------------------------------

REQUIRED = ["llama-3.1-8b/n150", "llama-3.1-8b/t3k", "llama-3.1-70b/t3k", "small/test-2x2"]


def test_required_configs_ship():
    assert set(REQUIRED) <= set(list_program_configs())
    # These files pin the exact exp (exp_approx_mode: false), so they differ from the dataclass default there.
    assert load_program_config("llama-3.1-8b/n150") == ProgramConfig(
        (8, 8), k_chunk_size=0, exp_approx_mode=False, max_cores_per_head_batch=16
    )
    assert load_program_config("llama-3.1-8b/t3k") == ProgramConfig(
        (8, 8), exp_approx_mode=False, max_cores_per_head_batch=16
    )


@pytest.mark.parametrize("name", list_program_configs())
def test_every_shipped_config_loads_and_says_why(name):
    cfg = load_program_config(name)
    assert isinstance(cfg, ProgramConfig)
    text = (PROGRAM_CONFIGS_DIR / f"{name}.yaml").read_text()
    assert "Tuned for" in text and "Why" in text
    assert load_program_config(PROGRAM_CONFIGS_DIR / f"{name}.yaml") == cfg  # by path too


GOOD = "compute_with_storage_grid_size: [8, 8]\n"


@pytest.mark.parametrize(
    "body, needles",
    [
        (GOOD + "k_chunk_size: 48\n", ["k_chunk_size=48", "multiple of 32"]),
        (GOOD + "k_chunk_sise: 64\n", ["unknown field 'k_chunk_sise'"]),
        (GOOD + "k_chunk_size: '64'\n", ["'k_chunk_size'", "wrong type", "integer"]),
        (GOOD + "exp_approx_mode: 1\n", ["'exp_approx_mode'", "wrong type"]),
        (GOOD + "max_cores_per_head_batch: 0\n", ["max_cores_per_head_batch=0"]),
        ("compute_with_storage_grid_size: [8, 8, 1]\n", ["'compute_with_storage_grid_size'", "wrong type"]),
        ("compute_with_storage_grid_size: [0, 8]\n", ["compute_with_storage_grid_size=[0, 8]"]),
        ("k_chunk_size: 64\n", ["missing required field 'compute_with_storage_grid_size'"]),
        ("- 8\n- 8\n", ["expected a mapping"]),
        ("compute_with_storage_grid_size: [8, 8\n", ["not valid YAML"]),
    ],
)
def test_broken_yaml_names_file_and_field(tmp_path, body, needles):
    path = tmp_path / "broken.yaml"
    path.write_text(body)
    with pytest.raises(ValueError) as e:
        load_program_config(path)
    assert str(path) in str(e.value)
    for needle in needles:
        assert needle in str(e.value)


def test_unknown_name_says_where_it_looked():
    with pytest.raises(FileNotFoundError) as e:
        load_program_config("llama-9/n999")
    assert str(PROGRAM_CONFIGS_DIR) in str(e.value) and "llama-3.1-8b/n150" in str(e.value)


def test_extra_config_directory_from_environment(tmp_path, monkeypatch):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "tiny.yaml").write_text("compute_with_storage_grid_size: [1, 1]\nk_chunk_size: 64\n")
    monkeypatch.setenv(PROGRAM_CONFIGS_ENV_VAR, str(tmp_path))
    assert "mine/tiny" in list_program_configs()
    assert load_program_config("mine/tiny") == ProgramConfig((1, 1), k_chunk_size=64)
