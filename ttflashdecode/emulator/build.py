"""Builds the emulator runtime (csrc/) with the host g++ on first use, cached under ~/.cache/ttflashdecode/ keyed by
a hash of csrc/ and include/ (any source change rebuilds). Produces the runtime executable ``ttfd_emu_run`` (run in a
child process per program; kernels are dlopen'ed into it) and ``libttfd_host.so`` (tile format conversion for the
Python driver, loaded with ctypes)."""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import subprocess
from functools import lru_cache
from pathlib import Path

from .errors import EmulatorError

HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"
INCLUDE = HERE / "include"
CACHE_ROOT = Path(os.environ.get("TTFD_CACHE_DIR", Path.home() / ".cache" / "ttflashdecode"))
CXX = os.environ.get("CXX", "g++")


def tree_hash(*roots: Path) -> str:
    h = hashlib.sha256()
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in (".h", ".hpp", ".cpp", ".cc", ""):
                h.update(str(p.relative_to(root.parent)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:20]


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise EmulatorError(f"building the emulator runtime failed: {' '.join(cmd)}", details=res.stderr[-8000:])


@lru_cache(maxsize=1)
def runtime_dir() -> Path:
    """Directory holding the built runtime for the current sources (built if missing)."""
    out = CACHE_ROOT / f"runtime-{tree_hash(CSRC, INCLUDE)}"
    exe, lib = out / "ttfd_emu_run", out / "libttfd_host.so"
    if exe.exists() and lib.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        if not (exe.exists() and lib.exists()):
            common = ["-std=c++17", "-O2", "-g", "-pthread", f"-I{INCLUDE}"]
            tmp = exe.with_suffix(f".{os.getpid()}")
            _run([CXX, *common, "-rdynamic", str(CSRC / "runtime.cpp"), "-o", str(tmp), "-ldl"])
            tmp.rename(exe)
            tmp = lib.with_suffix(f".{os.getpid()}")
            _run([CXX, *common, "-fPIC", "-shared", str(CSRC / "host_formats.cpp"), "-o", str(tmp)])
            tmp.rename(lib)
    return out


def runtime_executable() -> Path:
    return runtime_dir() / "ttfd_emu_run"


@lru_cache(maxsize=1)
def host_lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(runtime_dir() / "libttfd_host.so"))
    lib.ttfd_tile_size_bytes.argtypes = [ctypes.c_int]
    lib.ttfd_tile_size_bytes.restype = ctypes.c_uint
    for name in ("ttfd_pack_tiles", "ttfd_unpack_tiles"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_void_p]
        fn.restype = None
    return lib
