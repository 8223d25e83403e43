"""The environment module: mock cluster descriptors are used only without a card and without a user choice."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ttemu import ttnn_env


def _configure_in_child(env: dict[str, str]) -> str:
    code = "from ttemu import ttnn_env; print(ttnn_env.configure())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("board", ttnn_env.BOARDS)
def test_each_board_descriptor_is_shipped_and_chosen(board, monkeypatch):
    if ttnn_env.has_tenstorrent_card():
        pytest.skip("a card is present: the mock descriptor must not be used")
    path = ttnn_env.cluster_descriptor_path(board)
    assert path.is_file() and "Wormhole" in path.read_text()
    env = {k: v for k, v in __import__("os").environ.items() if k != ttnn_env.MOCK_ENV_VAR}
    env[ttnn_env.BOARD_ENV_VAR] = board
    assert _configure_in_child(env) == str(path)


def test_user_choice_is_kept(tmp_path):
    if ttnn_env.has_tenstorrent_card():
        pytest.skip("a card is present")
    import os

    mine = tmp_path / "mine.yaml"
    mine.write_text("arch: {}\n")
    env = dict(os.environ, **{ttnn_env.MOCK_ENV_VAR: str(mine)})
    assert _configure_in_child(env) == str(mine)


def test_unknown_board_is_rejected():
    with pytest.raises(ValueError, match="board='n999'"):
        ttnn_env.cluster_descriptor_path("n999")


@pytest.mark.parametrize("board", ["n150", "n300", "t3k"])
def test_ttnn_builds_host_tensors_with_each_descriptor(board):
    """ttnn accepts the descriptor: a bfloat8_b host tensor round-trips (needs a fresh process per board)."""
    if ttnn_env.has_tenstorrent_card():
        pytest.skip("a card is present")
    import os

    env = {k: v for k, v in os.environ.items() if k != ttnn_env.MOCK_ENV_VAR}
    env[ttnn_env.BOARD_ENV_VAR] = board
    code = (
        "import torch\n"
        "from ttemu.ttnn_env import import_ttnn\n"
        "ttnn = import_ttnn()\n"
        "x = torch.randn(64, 64)\n"
        "y = ttnn.to_torch(ttnn.from_torch(x, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT))\n"
        "assert (y.float() - x).abs().max() < 0.1 and (y.float() != x).any()\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


def _child(code: str, **env_changes: str) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("TTFD_LOG_LEVEL", "LOGURU_LEVEL")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


IMPORT_AND_LOG = (
    "from loguru import logger\n"
    "from ttemu.ttnn_env import import_ttnn\n"
    "ttnn = import_ttnn()\n"
    # A message from a ttnn module after the import still reaches the handlers (the silence covers the import
    # alone): loguru names a record by its caller's module, here one called ttnn.probe.
    "exec(\"from loguru import logger\\nlogger.warning('ttnn still logs')\", {'__name__': 'ttnn.probe'})\n"
    "print('ok')\n"
)


def test_ttnn_import_does_not_dump_its_config():
    out = _child(IMPORT_AND_LOG)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Initial ttnn.CONFIG" not in out.stderr, out.stderr[:1000]
    assert "ttnn still logs" in out.stderr


@pytest.mark.parametrize("var", ["TTFD_LOG_LEVEL", "LOGURU_LEVEL"])
def test_ttnn_config_dump_when_debug_is_asked_for(var):
    out = _child(IMPORT_AND_LOG, **{var: "DEBUG"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Initial ttnn.CONFIG" in out.stderr


def test_environment_module_is_light():
    """``ttemu.ttnn_env`` (what every module of a package built on the emulator imports) loads neither ttnn, torch nor
    the emulator: the package's names are imported on first use."""
    code = (
        "import sys\n"
        "import ttemu.ttnn_env\n"
        "print(sorted(m for m in ('ttnn', 'torch', 'numpy', 'ttemu.device', 'ttemu.compiler') if m in sys.modules))\n"
        "import ttemu\n"
        "assert ttemu.open_device.__module__ == 'ttemu.device' and ttemu.timing.variant_names()[0] == 'nominal'\n"
        "assert sorted(ttemu.__all__) == ttemu.__all__ and all(getattr(ttemu, n) for n in ttemu.__all__)\n"
    )
    out = _child(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout
