"""Build helpers for the emulator's C++ unit tests: compile a few sources against the kernel API headers into a
shared library (cached by content hash under the pytest cache dir / $TMPDIR) and load it with ctypes."""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "ttflashdecode" / "emulator" / "include"
LLK_INCLUDE = REPO / "ttflashdecode" / "emulator" / "include_llk"
HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("TTFD_TEST_BUILD_DIR", Path(tempfile.gettempdir()) / "ttfd_test_build"))


def _digest(paths: list[Path], flags: list[str]) -> str:
    h = hashlib.sha256(" ".join(flags).encode())
    for p in paths:
        h.update(p.read_bytes())
    for hdr in sorted([*INCLUDE.rglob("*.h"), *LLK_INCLUDE.rglob("*.h")]):
        h.update(str(hdr).encode())
        h.update(hdr.read_bytes())
    return h.hexdigest()[:16]


def build_shared(name: str, sources: list[Path], extra_flags: list[str] | None = None) -> Path:
    flags = ["-std=c++17", "-O1", "-g0", "-shared", "-fPIC", "-pthread", f"-I{INCLUDE}"] + list(extra_flags or [])
    out = CACHE / f"{name}-{_digest(sources, flags)}.so"
    if not out.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        cmd = ["g++", *flags, *map(str, sources), "-o", str(tmp)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"compile failed: {' '.join(cmd)}\n{res.stderr}")
        tmp.rename(out)
    return out


def load(name: str, sources: list[Path], extra_flags: list[str] | None = None) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_shared(name, sources, extra_flags)))
