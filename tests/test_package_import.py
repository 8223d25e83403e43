"""Importing the op package is light: neither torch nor ttnn (nor the emulator, which imports both) until the first
op call."""

from __future__ import annotations

import subprocess
import sys


def _child(code: str, **env_changes: str) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("TTFD_LOG_LEVEL", "LOGURU_LEVEL")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def test_package_import_is_light():
    """``import ttflashdecode`` imports neither torch, ttnn nor the emulator (they come with the first op call), and
    every public name still resolves."""
    code = (
        "import sys, time\n"
        "t = time.perf_counter()\n"
        "import ttflashdecode\n"
        "dt = time.perf_counter() - t\n"
        "heavy = sorted(m for m in ('torch', 'ttnn', 'numpy', 'loguru', 'ttemu') if m in sys.modules)\n"
        "print(heavy, dt)\n"
        "for name in ttflashdecode.__all__:\n"
        "    assert getattr(ttflashdecode, name) is not None, name\n"
        "assert (ttflashdecode.ops.decode.api.scaled_dot_product_attention_decode\n"
        "        is ttflashdecode.scaled_dot_product_attention_decode)\n"
        "print('ok')\n"
    )
    out = _child(code)
    assert out.returncode == 0, out.stderr[-2000:]
    heavy, seconds = out.stdout.splitlines()[0].rsplit(" ", 1)
    assert heavy == "[]", f"import ttflashdecode imported {heavy}"
    assert float(seconds) < 1.0, f"import ttflashdecode took {seconds} s"
    assert out.stdout.strip().endswith("ok")


def test_only_the_backend_imports_the_emulator():
    """The op package reaches ttemu through one module, ttflashdecode/backend.py (``import_ttnn``, ``emulator()`` and
    its neighbours), so the emulator's layout is known in one place; no other module imports ttemu, at its top or in a
    function body."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "ttflashdecode"
    offenders = {}
    for path in sorted(package.rglob("*.py")):
        if path.name == "backend.py" and path.parent == package:
            continue
        tree = ast.parse(path.read_text(), str(path))
        names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        names += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
        found = sorted(n for n in names if n.split(".")[0] == "ttemu")
        if found:
            offenders[str(path.relative_to(package.parent))] = found
    assert not offenders, f"modules importing ttemu other than ttflashdecode/backend.py: {offenders}"
