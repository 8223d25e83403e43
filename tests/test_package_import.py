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
