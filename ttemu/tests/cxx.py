"""Build helpers for the emulator's C++ unit tests: compile a few sources against the kernel API headers into a
shared library (cached by content hash under the pytest cache dir / $TMPDIR) and load it with ctypes.

The cache key is content, not location (as the emulator's kernel cache, ttemu/compiler.py): the
sources, every header under the repository's include directories the build names (the emulator's include/ and
include_llk/, the sources' directories, each -I inside the repository), the flags with the repository and the
wheel's site-packages written as tokens, the installed ttnn version (the wheel's headers) and the compiler. So a fresh
clone at another path reuses these builds, and an edit to any of those headers rebuilds."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import os
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from ttemu import compiler, jit_env
from ttemu.build import INCLUDE, KERNEL_API_FLAGS, KERNEL_API_SOURCES
from ttemu.jit_env import LLK_INCLUDE

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("TTFD_TEST_BUILD_DIR", Path(tempfile.gettempdir()) / "ttfd_test_build"))
HEADER_SUFFIXES = (".h", ".hpp", ".inl")


@lru_cache(maxsize=1)
def _toolchain() -> str:
    """The compiler's identity (as the kernel cache keys it) and the ttnn wheel's version (its headers are fixed per
    version)."""
    try:
        ttnn = importlib.metadata.version("ttnn")
    except importlib.metadata.PackageNotFoundError:
        ttnn = "none"
    return f"{compiler.compiler_identity('g++')} ttnn {ttnn}"


def _stable(text: str) -> str:
    return compiler.stable_paths(text, compiler.location_roots())


def _digest(paths: list[Path], flags: list[str]) -> str:
    h = hashlib.sha256((_toolchain() + "\0" + "\0".join(_stable(f) for f in flags)).encode())
    for p in paths:
        h.update(_stable(str(Path(p).resolve())).encode() + b"\0" + Path(p).read_bytes())
    dirs = {INCLUDE, LLK_INCLUDE, *(Path(p).resolve().parent for p in paths)}
    dirs |= {Path(f[2:]).resolve() for f in flags if f.startswith("-I")}
    wheel = jit_env.wheel_root()
    site = wheel.parent.resolve() if wheel is not None else None  # a .venv inside the checkout is the wheel's, not ours
    for d in sorted(d for d in dirs if d.is_relative_to(REPO) and not (site and d.is_relative_to(site)) and d.is_dir()):
        for hdr in sorted(q for q in d.rglob("*") if q.suffix in HEADER_SUFFIXES and q.is_file()):
            h.update(str(hdr.relative_to(REPO)).encode() + b"\0" + hdr.read_bytes())
    return h.hexdigest()[:16]


def _compile(out: Path, cmd: list[str]) -> Path:
    if not out.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        cmd = [*cmd, "-o", str(tmp)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"compile failed: {' '.join(cmd)}\n{res.stderr}")
        tmp.rename(out)
    return out


def build_shared(name: str, sources: list[Path], extra_flags: list[str] | None = None) -> Path:
    """A shared library of `sources` (C++ files, or objects such as :func:`kernel_api_objects`)."""
    flags = ["-std=c++17", "-O1", "-g0", "-shared", "-fPIC", "-pthread", f"-I{INCLUDE}"] + list(extra_flags or [])
    return _compile(CACHE / f"{name}-{_digest(sources, flags)}.so", ["g++", *flags, *map(str, sources)])


def kernel_api_objects(*names: str) -> list[Path]:
    """Objects of the kernel API's out-of-line half (ttemu/build.py KERNEL_API_SOURCES: the compute model and the
    tile formats; all of them, or those of the file names given), which the runtime executable defines for the kernels
    it loads: a test library that runs kernel API code against a fake runtime links them instead. Compiled once per
    content, not once per test library."""
    sources = [s for s in KERNEL_API_SOURCES if not names or s.name in names]
    if names and len(sources) != len(names):
        raise ValueError(f"kernel_api_objects: {names} are not all among {[s.name for s in KERNEL_API_SOURCES]}")
    flags = ["-std=c++17", "-O1", "-g0", "-fPIC", "-pthread", f"-I{INCLUDE}", *KERNEL_API_FLAGS, "-c"]
    return [_compile(CACHE / f"{s.stem}-{_digest([s], flags)}.o", ["g++", *flags, str(s)]) for s in sources]


def fake_compute_flags(
    ct_args: list[int], fp32=False, fidelity: int = 4, approx=False, full_sync=False, spec=None
) -> list[str]:
    """The g++ flags of a compute kernel built against the fake single-threaded runtime (fake_runtime.cpp): the
    compute build environment of ttemu.compiler -- the emulator's LLK layer, then the wheel's LLK trees and compute
    API (the SFPU ops run the wheel's kernels on the host SFPI), the fused-TRISC defines -- with the fake include dir
    first, so its arg headers stand in for the missing runtime. ``spec``: the chip (a ttemu.arch.ArchSpec; None:
    Wormhole B0), its LLK trees and ARCH_* define. test_compute_fake.py and perf/compute_differential.py build with
    these."""
    return [
        f"-I{LLK_INCLUDE}",
        f"-I{HERE / 'fake_include'}",
        *[f"-I{p}" for p in jit_env.compute_llk_include_paths(spec)],
        f"-D{'ARCH_WORMHOLE' if spec is None else spec.define}",
        "-DTRISC_UNPACK",
        "-DTRISC_MATH",
        "-DTRISC_PACK",
        "-DUCK_CHLKC_UNPACK",
        "-DUCK_CHLKC_MATH",
        "-DUCK_CHLKC_PACK",
        *jit_env.COMPUTE_DEFINES,
        "-Wno-deprecated-declarations",
        f"-DKERNEL_COMPILE_TIME_ARGS={','.join(map(str, ct_args))}",
        f"-DEMU_DST_ACCUM_MODE={int(fp32)}",
        f"-DEMU_MATH_FIDELITY={fidelity}",
        f"-DEMU_MATH_APPROX_MODE={int(approx)}",
        f"-DEMU_DST_FULL_SYNC_EN={int(full_sync)}",
    ]


def load(name: str, sources: list[Path], extra_flags: list[str] | None = None) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_shared(name, sources, extra_flags)))
