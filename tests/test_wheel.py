"""The package as a user installs it: sdist, then a wheel built from that sdist, installed (not editable) into a fresh
virtual environment, decodes on the emulator from outside the checkout and matches the golden model.

Steps: the checkout's files (git's list: tracked and new, not ignored) are copied to a scratch directory, so the build
writes nothing into the checkout; setuptools builds the sdist there; pip builds the wheel from the unpacked sdist (so a
file the sdist misses is missing from the wheel too); every file under ``ttflashdecode/`` and ``ttemu/`` in the
checkout must be in both, except the emulator's tests (``ttemu/tests/``), which the wheel must not ship. The new
environment is made with this interpreter's base Python and no pip; pip (this environment's) installs the wheel into it
with ``--python``. Third-party dependencies (ttnn, torch, ...) are not downloaded again: a ``.pth`` file adds this
environment's site-packages *after* the new one. A path line in a ``.pth`` does not run the ``.pth`` files in that
directory, so the editable install's finder (``__editable__.ttflashdecode-*.pth``) never loads; the new environment's
ttflashdecode and ttemu are the only ones importable, and the child asserts it. The child runs with ``-I`` (no
``PYTHONPATH``, no script or working directory on ``sys.path``) in a scratch directory.

The decode is the README's first example's shape (GQA 8/2, head_dim 64, 1024 positions, bfloat8_b K/V, one user
skipped), so a warm kernel cache from the rest of the suite serves it: the kernels' cache keys name files from the
emulator's install root, which is the checkout here and site-packages there.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tarfile
import time
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "ttflashdecode"
PACKAGES = ("ttflashdecode", "ttemu")  # what the wheel ships: the op and the emulator, without the emulator's tests

pytestmark = pytest.mark.wheel


def _checkout_files() -> list[str]:
    """The checkout's files as git lists them (tracked, plus new files not ignored), relative to the checkout."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the wheel test builds from the checkout's file list")
    out = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [f for f in out.split("\0") if f and (REPO / f).is_file()]


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert res.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    )
    return res


def _build_sdist_and_wheel(tmp: Path, files: list[str]) -> tuple[Path, Path]:
    src = tmp / "src"
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, src / f)
    dist = tmp / "dist"
    code = f"import setuptools.build_meta as b; print(b.build_sdist({str(dist)!r}))"
    name = _run([sys.executable, "-c", code], cwd=src).stdout.strip().splitlines()[-1]
    sdist = dist / name
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "sdist", filter="data")
    (unpacked,) = (tmp / "sdist").iterdir()
    # This environment's setuptools builds the wheel when it has one (seconds, no package index); otherwise pip
    # fetches the build backend pyproject names into an isolated build environment.
    backend = ["--no-build-isolation", "--no-index"] if _has("setuptools") else []
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *backend, "-w", str(tmp / "wheel"), str(unpacked)])
    (wheel,) = (tmp / "wheel").glob(f"{PACKAGE}-*.whl")
    return sdist, wheel


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _fresh_venv(tmp: Path, wheel: Path) -> tuple[Path, Path]:
    """A new environment holding the wheel; this environment's site-packages behind it for the dependencies."""
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    python = env_dir / "bin" / "python"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            str(wheel),
        ]
    )
    purelib = Path(
        _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    )
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "_ttfd_wheel_test_deps.pth").write_text("".join(f"{p}\n" for p in deps))
    return python, purelib


CHILD = r"""
import json, sys
import ttflashdecode
assert "torch" not in sys.modules and "ttnn" not in sys.modules, "import ttflashdecode imported torch or ttnn"
import torch
import ttemu
from ttflashdecode import golden
from ttemu import compiler
from ttemu.ttnn_env import import_ttnn

ttnn = import_ttnn()
dev = ttemu.open_device(board="n150")
torch.manual_seed(20271)
b, n_q, n_kv, d, S = 2, 8, 2, 64, 1024
q, k, v = torch.randn(1, b, n_q, d), torch.randn(b, n_kv, S, d), torch.randn(b, n_kv, S, d)
tile = dict(layout=ttnn.TILE_LAYOUT)
tq = dev.from_torch(q, dtype=ttnn.bfloat16, **tile)
tk = dev.from_torch(k, dtype=ttnn.bfloat8_b, **tile)
tv = dev.from_torch(v, dtype=ttnn.bfloat8_b, **tile)
cur_pos = [1000, -1]
out = dev.to_torch(ttflashdecode.scaled_dot_product_attention_decode(tq, tk, tv, cur_pos=cur_pos)).float()
dev.close()
expected = golden.sdpa_decode(golden.quantize_like_device(q, "bfloat16"), golden.quantize_like_device(k, "bfloat8_b"),
                              golden.quantize_like_device(v, "bfloat8_b"), cur_pos=cur_pos)
from ttflashdecode import config
named = ttflashdecode.load_program_config("llama-3.1-8b/n150")  # a named config, from the installed package data
print(json.dumps({
    "package": ttflashdecode.__file__,
    "emulator": ttemu.__file__,
    "program_configs": [str(config.PROGRAM_CONFIGS_DIR), config.list_program_configs(), named.k_chunk_size],
    "sys_path": sys.path,
    "pcc": golden.pcc(out[:, :1], expected[:, :1]),
    "max_abs_error": golden.max_abs_error(out[:, :1], expected[:, :1]),
    "skipped_user_max": float(out[:, 1].abs().max()),
    "kernels": sorted(compiler.compiled_sources()),
}))
"""


def test_wheel_installs_and_decodes_outside_the_checkout(tmp_path):
    files = _checkout_files()
    shipped = sorted(f for f in files if f.split("/", 1)[0] in PACKAGES and not f.startswith("ttemu/tests/"))
    start = time.monotonic()
    sdist, wheel = _build_sdist_and_wheel(tmp_path, files)
    phases = {"sdist and wheel": time.monotonic() - start}

    with tarfile.open(sdist) as tar:
        in_sdist = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    with zipfile.ZipFile(wheel) as z:
        in_wheel = set(z.namelist())
    assert not [f for f in shipped if f not in in_sdist], "sdist lacks package files"
    assert not [n for n in in_wheel if n.startswith("ttemu/tests/")], "the wheel ships the emulator's tests"
    missing = [f for f in shipped if f not in in_wheel]
    assert not missing, f"the wheel lacks {len(missing)} package files, e.g. {missing[:5]} (pyproject package-data)"
    from ttflashdecode import kernel_sources

    kernels = [str(p.relative_to(REPO)) for p in kernel_sources.all_kernel_files()]
    assert kernels and set(kernels) <= in_wheel

    start = time.monotonic()
    python, purelib = _fresh_venv(tmp_path, wheel)
    phases["venv and install"] = time.monotonic() - start
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    start = time.monotonic()
    res = _run([str(python), "-I", "-c", CHILD], cwd=run_dir, env=env, timeout=1800)
    phases["decode from the venv"] = time.monotonic() - start
    print("wheel test phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))  # pytest -s / -rP shows it
    got = json.loads(res.stdout.strip().splitlines()[-1])

    installed = purelib / PACKAGE
    assert Path(got["package"]).parent == installed, got["package"]
    assert Path(got["emulator"]).parent == purelib / "ttemu", got["emulator"]
    assert not any(p and Path(p).resolve() == REPO for p in got["sys_path"]), "the checkout is on the child's sys.path"
    configs_dir, names, _ = got["program_configs"]
    assert Path(configs_dir).parent == installed and "llama-3.1-8b/n150" in names, got["program_configs"]
    # The kernels the decode compiled (or took from the cache) are the wheel's copies.
    assert got["kernels"] and all(Path(k).is_relative_to(installed) for k in got["kernels"]), got["kernels"]
    # A wrong kernel cannot pass: PCC on seeded random inputs, the error bound of a bfloat8_b cache, the skipped user
    # (cur_pos -1) all zeros.
    assert got["pcc"] >= 0.999, got
    assert got["max_abs_error"] < 0.05, got
    assert got["skipped_user_max"] == 0.0, got
