"""Builds the emulator runtime (csrc/) with the host g++ on first use, cached under ~/.cache/ttemu/ (or
``$TTFD_CACHE_DIR``) keyed by a hash of csrc/ and include/ (any source change rebuilds). Produces the runtime
executable ``ttfd_emu_run`` (run in a child process per program; kernels are dlopen'ed into it) and
``libttfd_host.so`` (tile format conversion for the Python driver, loaded with ctypes).

``TTFD_EMU_SANITIZE=address|thread`` (:func:`sanitizer`) selects a sanitizer build: the runtime executable (in its own
cache directory) and every kernel (compiler.py adds the same flags, so they are separate cache entries) compiled with
``-fsanitize=...``. The executable links the sanitizer's runtime itself, so the child needs no LD_PRELOAD; the kernels
dlopen'ed into it resolve the sanitizer's hooks there. ``libttfd_host.so``, loaded into Python, is never sanitized."""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import subprocess
from contextlib import contextmanager
from functools import cache, lru_cache
from pathlib import Path

from loguru import logger

from .errors import EmulatorError

HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"
INCLUDE = HERE / "include"
# The directory the emulator package is installed in: site-packages for a wheel, the source tree for an editable
# install or a checkout on sys.path. Kernels of packages installed beside it are named from it ("mypackage/kernels/
# reader.cpp"): in cache keys, in __FILE__ and in a fault's location (compiler.location_roots, fault_location).
INSTALL_ROOT = HERE.parent
# TTFD_CACHE_DIR: the name users and CI already set for this cache (it predates the emulator's own package)
CACHE_ROOT = Path(os.environ.get("TTFD_CACHE_DIR", Path.home() / ".cache" / "ttemu"))
CXX = os.environ.get("CXX", "g++")


def tree_hash(*roots: Path) -> str:
    h = hashlib.sha256()
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in (".h", ".hpp", ".cpp", ".cc", ""):
                h.update(str(p.relative_to(root.parent)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:20]


SANITIZE_ENV = "TTFD_EMU_SANITIZE"
SANITIZERS = ("address", "thread")


def sanitizer() -> str:
    """The sanitizer selected by ``TTFD_EMU_SANITIZE`` ("" when unset or empty), checked on every call so a test can
    switch it for one run."""
    value = os.environ.get(SANITIZE_ENV, "").strip()
    if value not in ("", *SANITIZERS):
        raise EmulatorError(
            f"{SANITIZE_ENV}={value!r} is not a sanitizer the emulator builds with; expected one of "
            f"{', '.join(SANITIZERS)} (or unset)"
        )
    return value


def sanitizer_flags(name: str) -> list[str]:
    """Compiler flags of a sanitizer build (runtime and kernels): frame pointers and line tables keep the reports'
    stacks readable."""
    if not name:
        return []
    return [f"-fsanitize={name}", "-fno-omit-frame-pointer", "-g"]


@contextmanager
def file_lock(path: Path):
    """Holds an exclusive lock on the file ``path`` (created if missing): between processes, and between threads of
    one process (each holder opens the file itself). What the cache builds once -- the runtime, the timing library, a
    kernel library, the precompiled header -- is built under one."""
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise EmulatorError(f"building the emulator runtime failed: {' '.join(cmd)}", details=res.stderr[-8000:])


def _run_all(cmds: list[list[str]]) -> None:
    """Runs independent compiles side by side (the host's cores), then reports the first that failed."""
    procs = [(cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)) for cmd in cmds]
    results = [(cmd, proc.communicate()[1], proc.returncode) for cmd, proc in procs]
    for cmd, stderr, code in results:
        if code != 0:
            raise EmulatorError(f"building the emulator runtime failed: {' '.join(cmd)}", details=stderr[-8000:])


# The out-of-line half of the kernel API (include/emu declares it): the compute engine's model and the tile formats,
# compiled once here rather than inline into every kernel (a compute kernel's compile then generates only its own
# code and the templates it instantiates). Built into the runtime executable, whose -rdynamic exports them to the
# kernel libraries it dlopens; formats.cpp into libttfd_host.so as well; the C++ unit tests compile them into their
# own libraries (ttemu/tests/cxx.py). -fno-strict-aliasing as the kernels these functions were compiled into
# before (compiler.CXXFLAGS).
KERNEL_API_SOURCES = (
    CSRC / "compute.cpp",
    CSRC / "compute_sfpu.cpp",
    CSRC / "compute_sfpu_blackhole.cpp",
    CSRC / "formats.cpp",
)
KERNEL_API_FLAGS = ("-fno-strict-aliasing",)


@cache
def runtime_dir(sanitize: str = "") -> Path:
    """Directory holding the built runtime for the current sources (built if missing); ``sanitize``: a sanitizer
    build of the executable alone (no host library)."""
    out = CACHE_ROOT / (f"runtime-{tree_hash(CSRC, INCLUDE)}" + (f"-{sanitize}" if sanitize else ""))
    exe, lib = out / "ttfd_emu_run", out / "libttfd_host.so"
    wanted = (exe,) if sanitize else (exe, lib)
    if all(p.exists() for p in wanted):
        return out
    out.mkdir(parents=True, exist_ok=True)
    with file_lock(out / ".lock"):
        if not all(p.exists() for p in wanted):
            # A minute or more on a loaded machine: say what is happening rather than look hung.
            logger.info(
                "building the emulator runtime{} (first use of these sources; cached in {})",
                f" with -fsanitize={sanitize}" if sanitize else "",
                out,
            )
            common = ["-std=c++17", "-O2", "-g", "-pthread", f"-I{INCLUDE}"]
            flags = [*common, *sanitizer_flags(sanitize)]
            objects = [out / f"{src.stem}.{os.getpid()}.o" for src in (CSRC / "runtime.cpp", *KERNEL_API_SOURCES)]
            _run_all(
                [[CXX, *flags, "-c", str(CSRC / "runtime.cpp"), "-o", str(objects[0])]]
                + [
                    [CXX, *flags, *KERNEL_API_FLAGS, "-c", str(src), "-o", str(obj)]
                    for src, obj in zip(KERNEL_API_SOURCES, objects[1:])
                ]
            )
            tmp = exe.with_suffix(f".{os.getpid()}")
            try:
                _run([CXX, *flags, "-rdynamic", *map(str, objects), "-o", str(tmp), "-ldl"])
            finally:
                for obj in objects:
                    obj.unlink(missing_ok=True)
            tmp.rename(exe)
            if not sanitize:
                tmp = lib.with_suffix(f".{os.getpid()}")
                _run(
                    [
                        CXX,
                        *common,
                        *KERNEL_API_FLAGS,
                        "-fPIC",
                        "-shared",
                        str(CSRC / "host_formats.cpp"),
                        str(CSRC / "formats.cpp"),
                        "-o",
                        str(tmp),
                    ]
                )
                tmp.rename(lib)
    return out


def runtime_executable(sanitize: str | None = None) -> Path:
    """The runtime executable; ``sanitize`` None: the build ``TTFD_EMU_SANITIZE`` selects."""
    return runtime_dir(sanitizer() if sanitize is None else sanitize) / "ttfd_emu_run"


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
