"""Compiles kernels (tt-metal kernel sources) for the host emulator.

Each KernelDescriptor becomes one shared library: ``g++ -std=c++20 -O2 -fPIC -shared`` with the emulator's API
headers first on the include path (``include/`` mirrors the wheel's include roots, so ``#include
"api/dataflow/dataflow_api.h"`` resolves to the emulator's implementation), then the kernel's generated-files
directory, the kernel's directory and the descriptor's ``compiler_include_paths`` (the package's factories name their
kernel folders there, so nothing depends on where the package lies: a checkout or an installed wheel).

The build environment is tt-metal's JIT build's (the wheel's libtt_metal; jit_env.py describes the generated files):

- compile-time args as ``-DKERNEL_COMPILE_TIME_ARGS=a,b,c`` (not defined when there are none); named compile-time
  args in the force-included ``named_ct_arg_map_generated.h`` (``#define KERNEL_COMPILE_TIME_ARG_MAP
  {"name",v},...``, names ascending);
- ``chlkc_descriptors.h`` (per-CB data formats, tile shapes and tile sizes) in the generated-files directory, so
  ``get_tile_size(cb)`` / ``get_dataformat(cb)`` are compile-time constants as on silicon;
- per-RISC defines as hal_1xx_common.cpp ``HalJitBuildQueryBase::defines`` sets them: data movement
  ``COMPILE_FOR_BRISC`` (RISCV_0) or ``COMPILE_FOR_NCRISC`` (RISCV_1) with ``PROCESSOR_INDEX`` 0 / 1, plus the
  DataMovementKernel's ``NOC_INDEX`` / ``NOC_MODE`` (from the config's noc / noc_mode) and the device's
  ``NUM_L1_BANKS`` with ``LOG_BASE_2_OF_NUM_L1_BANKS`` or ``IS_NOT_POW2_NUM_L1_BANKS``; compute ``COMPILE_FOR_TRISC``
  with all of ``UCK_CHLKC_UNPACK`` / ``UCK_CHLKC_MATH`` / ``UCK_CHLKC_PACK`` and ``TRISC_UNPACK`` / ``TRISC_MATH`` /
  ``TRISC_PACK`` (one host thread runs the three TRISC programs as one; silicon builds each with one of them) plus
  ``NOC_MODE=0`` (ComputeKernel::process_defines' DM_DEDICATED_NOC) and the ``EMU_*`` compute-config defines from
  which the emulator's compute API derives ``DST_ACCUM_MODE``, ``DST_SYNC_MODE``, ``MATH_FIDELITY`` and ``APPROX``
  (genfiles.cpp emits those into chlkc_descriptors.h);
- ``KERNEL_BUILD``, the chip's ``ARCH_WORMHOLE`` / ``ARCH_BLACKHOLE``, ``TENSIX_FIRMWARE`` and the descriptor's defines;
- what the firmware wrapper includes ahead of the kernel source (ncrisck.cc / brisck.cc: api/dataflow/dataflow_api.h;
  trisck.cc: api/compile_time_args.h and, through chlkc_list.h, chlkc_descriptors.h), force-included.

Libraries are cached in ~/.cache/ttemu/kernels (``$TTFD_CACHE_DIR/kernels``) by a hash of what the compiler reads,
not of where it lies (:func:`cache_key`): the compiler's identity, the kernel source's name and text, the flags and the
name and content of every header the kernel includes (from ``g++ -MM``), with every path written relative to a stable
root -- the directory the emulator is installed in (the checkout, or site-packages for an installed wheel; packages
installed beside it are named from it), ttnn's site-packages, the cache, the kernel's own directory. So the same
kernel built from two checkouts (a fresh clone at /tmp/x and /work/main, each with its own .venv) is one entry, while
an edit to any header it includes is a new one. ``-fmacro-prefix-map`` writes those roots out of ``__FILE__`` as well
(an ASSERT's message names ``mypackage/kernels/...`` or ``ttnn/tt_metal/...``, a kernel outside those roots by its
file name), so nothing a library does or prints depends on the checkout that compiled it (only its symbol
table's source-file entry names that checkout's path; nothing reads it). Libraries and their metadata are written to
a temporary name and renamed into place, so processes compiling the same kernel at once each publish a whole file.
:func:`compile_cache_stats` counts hits and misses. A program whose kernels are not all in the cache says so in one
INFO line before compiling (:func:`compile_kernels`): a first use compiles for seconds to minutes.

Warnings are on (``-Wall``), and reported rather than fatal: each library's compiler warnings are kept next to it (so a
cache hit reports them too), logged once per process (a use of API the wheel marks ``[[deprecated]]`` -- the
emulator's headers carry the wheel's markings and messages -- at WARNING, the rest at DEBUG) and returned by
:func:`compile_warnings`. ``TTFD_EMU_DEPRECATED_ERROR=1`` in the environment makes a deprecated call a compile error
(``-Werror=deprecated-declarations``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from loguru import logger

from . import jit_env
from .build import CACHE_ROOT, CXX, INCLUDE, INSTALL_ROOT, file_lock, sanitizer, sanitizer_flags
from .errors import KernelCompileError

KERNEL_CACHE = CACHE_ROOT / "kernels"
GENERATED = KERNEL_CACHE / "generated"
# -Wall as tt-metal's JIT build; -Wno-unknown-pragmas: "#pragma GCC unroll" and friends are meant for the RISC-V
# compiler, not warnings about the kernel. C++20: tt-metal builds kernels with "-std=c++17 -ftt-nttp -ftt-consteval
# -ftt-constinit" (libtt_metal's JIT flags), its SFPI compiler's C++17 plus class-type template parameters, consteval
# and constinit, which ttnn's kernel_lib (compute_kernel_lib::eltwise_chain, used by upstream's softmax and bcast
# kernels) relies on; host g++ has those only as C++20.
# -fno-gnu-unique: g++ gives function-local statics of inline functions, static data of templates and inline
# variables STB_GNU_UNIQUE binding, which the dynamic loader unifies across every library of the process whatever
# RTLD_LOCAL says. The runtime loads one copy of a kernel's library per core so that its statics are per core, as on
# silicon; with unique binding all cores' threads shared one object instead (the timing hooks' SFPU memo, a
# std::unordered_map, was filled by every core's compute thread at once and now and then crashed a run).
# -g1 -gz: line tables only, compressed (a library 1.5x the size, no change to the code), so a fault's program
# counter resolves to a kernel source line (runtime.py, fault_location).
CXXFLAGS = [
    "-std=c++20",
    "-O2",
    "-fPIC",
    "-shared",
    "-pthread",
    "-fno-strict-aliasing",
    "-fno-gnu-unique",
    "-g1",
    "-gz",
    "-Wall",
    "-Wno-unknown-pragmas",
]
DEPRECATED_ERROR_ENV = "TTFD_EMU_DEPRECATED_ERROR"
# The standard headers every kernel build parses (include/emu/std_headers.h), precompiled once per compiler and
# code-generation flag set (precompiled_std_headers) and force-included first. -fpch-preprocess carries the
# precompiled header through a compute kernel's preprocess-then-compile build as a pragma naming it;
# -Winvalid-pch reports (among the build's warnings) a precompiled header g++ had to skip.
STD_HEADERS = INCLUDE / "emu" / "std_headers.h"
PCH_FLAGS = ["-Winvalid-pch", "-fpch-preprocess"]

_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0}
# library path -> (its kernel source, its warnings), for every library compiled or taken from the cache in this process
_warnings: dict[str, tuple[str, tuple[CompileWarning, ...]]] = {}
# (source digest, flags) -> header list, so a cache hit costs one hash of the files, no compiler run.
_deps_memo: dict[str, list[str]] = {}


def compile_cache_stats() -> dict[str, int]:
    """Kernel compile cache counters of this process: {"hits": n, "misses": m}."""
    with _lock:
        return dict(_stats)


def reset_compile_cache_stats() -> None:
    with _lock:
        _stats["hits"] = _stats["misses"] = 0


@dataclass(frozen=True)
class CompileWarning:
    """One compiler warning of a kernel build."""

    kernel: str  # the kernel source compiled
    file: str  # where the warning points (the kernel, or a header it includes)
    line: int
    column: int
    message: str
    option: str  # the -W option that produced it, e.g. "-Wdeprecated-declarations"

    @property
    def deprecated(self) -> bool:
        """A use of API marked [[deprecated]] (the wheel's markings, carried by the emulator's headers)."""
        return self.option == "-Wdeprecated-declarations"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message} [{self.option}]"


_WARNING_LINE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): warning: (?P<msg>.*?)(?: \[(?P<opt>-W[^\]]+)\])?$"
)


def parse_warnings(kernel: str, compiler_output: str) -> tuple[CompileWarning, ...]:
    """The warnings in g++'s output (one per "file:line:col: warning: ... [-Wopt]" line; notes are dropped)."""
    found = []
    for line in compiler_output.splitlines():
        m = _WARNING_LINE.match(line.strip())
        if m:
            found.append(CompileWarning(kernel, m["file"], int(m["line"]), int(m["col"]), m["msg"], m["opt"] or ""))
    return tuple(dict.fromkeys(found))  # a header's warning repeats once per include path it is reached by


def compile_warnings(source: str | Path | None = None, *, deprecated_only: bool = False) -> list[CompileWarning]:
    """Warnings of the kernels compiled (or taken from the cache) in this process, optionally only those of the kernel
    ``source`` and only deprecated-API uses."""
    with _lock:
        found = [w for _, ws in _warnings.values() for w in ws]
    if source is not None:
        found = [w for w in found if Path(w.kernel) == Path(source)]
    if deprecated_only:
        found = [w for w in found if w.deprecated]
    return list(dict.fromkeys(found))


def compiled_sources() -> set[str]:
    """Kernel sources compiled (or taken from the cache) in this process: those compile_warnings covers."""
    with _lock:
        return {source for source, _ in _warnings.values()}


def reset_compile_warnings() -> None:
    with _lock:
        _warnings.clear()


def _report(library: Path, source: Path, warnings: tuple[CompileWarning, ...]) -> None:
    """Records a library's warnings and logs them the first time this process sees the library."""
    with _lock:
        first = str(library) not in _warnings
        _warnings[str(library)] = (str(source), warnings)
    if not first:
        return
    for w in warnings:
        if w.deprecated:
            logger.warning("kernel {} uses API the wheel marks deprecated: {}", w.kernel, w)
        else:
            logger.debug("kernel {}: {}", w.kernel, w)


@dataclass(frozen=True)
class KernelBuild:
    """What to compile: a source file and the full flag set (everything that determines the binary)."""

    source: Path
    name: str
    flags: tuple[str, ...]


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def _headers(build: KernelBuild) -> list[str]:
    cmd = [CXX, *(f for f in build.flags if not f.startswith("-shared")), "-MM", str(build.source)]
    res = _run(cmd)
    if res.returncode != 0:
        raise KernelCompileError(str(build.source), res.stderr, " ".join(map(shlex.quote, cmd)))
    text = res.stdout.replace("\\\n", " ")
    deps = text.split(":", 1)[1].split() if ":" in text else []
    return sorted(set(deps))


# Bump when what the key covers changes meaning (old entries are then simply not found).
CACHE_KEY_VERSION = "content-2"


@cache
def compiler_identity(cxx: str = CXX) -> str:
    """The compiler's version banner and target: a new g++ (its own system headers, which ``-MM`` leaves out, come
    with it) is a new key."""
    res = subprocess.run([cxx, "--version"], capture_output=True, text=True)
    target = subprocess.run([cxx, "-dumpmachine"], capture_output=True, text=True)
    return (res.stdout.splitlines() or [""])[0] + " " + target.stdout.strip()


def location_roots(source: Path | None = None) -> list[tuple[str, str]]:
    """(absolute directory, stable token) for every location a kernel build names, longest directory first: the
    emulator's install root (build.INSTALL_ROOT), ttnn's site-packages, the cache (generated headers, inline sources)
    and, for a kernel ``source`` outside all of those, the kernel's own directory."""
    return list(_location_roots(None if source is None else Path(source)))


@cache
def _location_roots(source: Path | None) -> tuple[tuple[str, str], ...]:
    # Once per kernel source and process: every launch of a program asks for each of its kernels' roots several times
    # (the flags' prefix maps, the cache key), and none of the locations moves while the process runs.
    roots = {str(INSTALL_ROOT): "<install-root>", str(CACHE_ROOT): "<cache>"}
    wheel = jit_env.wheel_root()
    if wheel is not None:
        roots[str(wheel.parent)] = "<site-packages>"
    kernel_dir = Path(source).parent if source is not None else None
    if kernel_dir is not None and not any(kernel_dir.is_relative_to(d) for d in roots):
        roots[str(kernel_dir)] = "<kernel-dir>"
    return tuple(sorted(roots.items(), key=lambda r: (-len(r[0]), r[1])))


def stable_paths(text: str, roots: list[tuple[str, str]]) -> str:
    """`text` with each root directory (longest first) replaced by its token."""
    if not roots:
        return text
    tokens = dict(roots)
    alternatives = "|".join(re.escape(d) for d, _ in roots)  # longest first: the most specific root wins
    return re.sub(f"(?:{alternatives})(?=/|=|\\s|$)", lambda m: tokens[m.group(0)], text)


def local_paths(text: str, roots: list[tuple[str, str]]) -> str:
    """Inverse of stable_paths for this build's roots."""
    for d, token in roots:
        text = text.replace(token, d)
    return text


def cache_key(build: KernelBuild, headers: list[str], roots: list[tuple[str, str]] | None = None) -> str:
    """The library's cache key: what the compiler reads, with every path relative to a stable root (so two checkouts
    of the same tree share one entry), the content of every header (so an edited header is a new entry)."""
    roots = location_roots(build.source) if roots is None else roots
    h = hashlib.sha256()
    for part in (CACHE_KEY_VERSION, compiler_identity(CXX), build.source.name):
        h.update(part.encode() + b"\0")
    h.update(build.source.read_bytes() + b"\0")
    for f in build.flags:
        h.update(stable_paths(f, roots).encode() + b"\0")
    for p in headers:
        h.update(stable_paths(p, roots).encode() + b"\0")
        try:
            h.update(Path(p).read_bytes())
        except OSError:
            h.update(b"<missing>")
        h.update(b"\0")
    return h.hexdigest()[:24]


@cache
def precompiled_std_headers(codegen_flags: tuple[str, ...]) -> Path:
    """The copy of include/emu/std_headers.h whose precompiled form (``.gch`` beside it) was built with
    ``codegen_flags`` (what g++ requires to match: language, optimisation, PIC, debug and sanitizer options), built
    on first use under a lock so that concurrent processes build it once. A kernel force-includes the returned path."""
    text = STD_HEADERS.read_bytes()
    h = hashlib.sha256()
    for part in (compiler_identity(CXX), *codegen_flags):
        h.update(part.encode() + b"\0")
    h.update(text)
    where = KERNEL_CACHE / "pch" / h.hexdigest()[:20]
    header, gch = where / STD_HEADERS.name, where / (STD_HEADERS.name + ".gch")
    if gch.exists():
        return header
    where.mkdir(parents=True, exist_ok=True)
    with file_lock(where / ".lock"):
        if not gch.exists():
            _write_atomic(header, text.decode())
            tmp = gch.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            cmd = [CXX, *codegen_flags, "-x", "c++-header", str(header), "-o", str(tmp)]
            res = _run(cmd)
            if res.returncode != 0:
                raise KernelCompileError(str(STD_HEADERS), res.stderr, " ".join(map(shlex.quote, cmd)))
            tmp.rename(gch)
    return header


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    tmp.rename(path)


# Per process: each build's (source and header list, their stat signatures, cache key) when its key was last computed.
_key_memo: dict[tuple, tuple[list[str], tuple, str]] = {}


def _stat_signature(paths) -> tuple:
    """Size, modification time and inode of each of ``paths`` (None for a missing one): what an edit changes."""
    signature = []
    for path in paths:
        try:
            st = os.stat(path)
            signature.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            signature.append(None)
    return tuple(signature)


def _library_path(build: KernelBuild, roots: list[tuple[str, str]]) -> Path:
    """Where the cache keeps (or will keep) the library of `build`.

    The key hashes the source and every header it includes (~40 files a kernel), and a program is launched many times
    per process (a decode loop, the test suite): when neither the source nor any header changed on disk since this
    process last computed the key (same size, modification time and inode), the key is the one computed then. The
    signature is taken before the files are read, so an edit made while they are read is seen at the next launch."""
    memo = (build.name, str(build.source), tuple(build.flags), tuple(roots))
    files, signature = [str(build.source)], None
    known = _key_memo.get(memo)
    if known is not None:
        files, signature, key = known
        if signature is not None and _stat_signature(files) == signature:
            return KERNEL_CACHE / f"{build.name}-{key}.so"
    signature = _stat_signature(files)  # before the key reads them
    out, headers = _library_path_from_content(build, roots)
    read = [str(build.source), *headers]
    # A first launch (or a changed header list) had not stat-ed every file it read: the next one does, then keeps it.
    _key_memo[memo] = (read, signature if read == files else None, out.name[len(build.name) + 1 : -len(".so")])
    return out


def _library_path_from_content(build: KernelBuild, roots: list[tuple[str, str]]) -> tuple[Path, list[str]]:
    """Where the cache keeps the library of `build`, its key computed from the files' contents, and the headers the
    key read."""
    # Memo key of the header list: this process, this source file at this path with these flags.
    key0 = hashlib.sha256(
        build.source.read_bytes() + "\0".join(build.flags).encode() + str(build.source).encode()
    ).hexdigest()
    # The header list of a known source is memoised, so a warm cache costs no preprocessor run; the headers'
    # contents are always re-hashed, so an edited header still rebuilds.
    if key0 in _deps_memo:
        out = KERNEL_CACHE / f"{build.name}-{cache_key(build, _deps_memo[key0], roots)}.so"
        if out.exists():
            return out, _deps_memo[key0]
    _deps_memo[key0] = _headers(build)
    return KERNEL_CACHE / f"{build.name}-{cache_key(build, _deps_memo[key0], roots)}.so", _deps_memo[key0]


def _display_path(path: Path) -> str:
    """`path` with the home directory written as ~ (as a user would type it)."""
    home = str(Path.home())
    return "~" + str(path)[len(home) :] if str(path).startswith(home + "/") else str(path)


def compile_kernels(builds: list[KernelBuild], program: str, compile=None) -> list[Path]:
    """The libraries of one program's kernels (`program` names it in the log), compiling those the cache lacks. When
    any must be compiled, one INFO line says so first: each compile takes seconds (a compute kernel tens of seconds on
    a loaded machine), and a silent first call looks hung. ``compile``: the per-kernel step (default
    :func:`compile_kernel`; a caller may pass its own, e.g. one that records the builds instead)."""
    found = []
    for build in builds:
        roots = location_roots(build.source)
        found.append((build, _library_path(build, roots), roots))
    missing = [build.name for build, out, _ in found if not out.exists()]
    start = time.monotonic()
    if missing:
        logger.info(
            "compiling {} kernel{} for {} (first use; cached in {})",
            len(missing),
            "" if len(missing) == 1 else "s",
            program,
            _display_path(KERNEL_CACHE),
        )
    if compile is None or compile is compile_kernel:
        # Each compile is its own g++ process: a program's kernels (a compute kernel takes several seconds, its
        # reader and writer a few) build side by side on the host's cores; cached ones cost a file check.
        workers = min(len(missing), os.cpu_count() or 1)
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ttfd-compile") as pool:
                libraries = list(pool.map(lambda entry: _compile_or_reuse(*entry), found))
        else:
            libraries = [_compile_or_reuse(*entry) for entry in found]
    else:
        libraries = [compile(build) for build in builds]
    if missing:
        logger.debug(
            "compiled {} kernel{} for {} in {:.1f} s",
            len(missing),
            "" if len(missing) == 1 else "s",
            program,
            time.monotonic() - start,
        )
    return libraries


def compile_kernel(build: KernelBuild) -> Path:
    """Return the path of the compiled library for `build`, compiling it if the cache has no current copy."""
    roots = location_roots(build.source)
    return _compile_or_reuse(build, _library_path(build, roots), roots)


def _compile_or_reuse(build: KernelBuild, out: Path, roots: list[tuple[str, str]]) -> Path:
    """`out` (the library of `build`, _library_path), compiled unless the cache holds it."""
    if out.exists():
        return _reuse(build, out, roots)
    KERNEL_CACHE.mkdir(parents=True, exist_ok=True)
    # One compile of a library at a time: processes (pytest-xdist workers, parallel sweeps) that need the same
    # library wait for the first to publish it instead of compiling it again.
    with file_lock(out.with_name(out.name + ".lock")):
        if out.exists():
            return _reuse(build, out, roots)
        return _compile(build, out, roots)


def _reuse(build: KernelBuild, out: Path, roots: list[tuple[str, str]]) -> Path:
    """`out`, the cached library of `build`: a cache hit, its warnings reported as a compile's would be."""
    with _lock:
        _stats["hits"] += 1
    _report(out, build.source, _cached_warnings(out, build, roots))
    return out


def _compile(build: KernelBuild, out: Path, roots: list[tuple[str, str]]) -> Path:
    """Compiles `build` into `out` (under its lock)."""
    tmp = out.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    cmd = [CXX, *build.flags, str(build.source), "-o", str(tmp)]
    if "-DCOMPILE_FOR_TRISC" in build.flags:
        res, cmd = _compile_compute(build, tmp)
    else:
        res = _run(cmd)
    if res.returncode != 0:
        raise KernelCompileError(str(build.source), res.stderr, " ".join(map(shlex.quote, cmd)))
    warnings = parse_warnings(str(build.source), res.stderr)
    # The metadata in stable paths (a hit from another checkout reads its warnings in its own paths), written
    # before the library so that a library in place always has its metadata.
    _write_atomic(
        out.with_suffix(".json"),
        json.dumps(
            {
                "source": stable_paths(str(build.source), roots),
                "flags": [stable_paths(f, roots) for f in build.flags],
                "compiler_output": stable_paths(res.stderr, roots),
                "roots": [t for _, t in roots],
            }
        ),
    )
    tmp.rename(out)
    _report(out, build.source, warnings)
    with _lock:
        _stats["misses"] += 1
    return out


def _compile_compute(build: KernelBuild, tmp: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Compile a compute kernel in two steps (jit_env.host_compile_source): preprocess, drop what the host g++ cannot
    parse but the kernel toolchain accepts (a template-dependent ``#pragma GCC unroll``), compile the result."""
    ii = tmp.with_suffix(".ii")
    pp = [CXX, *(f for f in build.flags if f != "-shared"), "-E", str(build.source), "-o", str(ii)]
    res = _run(pp)
    if res.returncode != 0:
        return res, pp
    ii.write_text(jit_env.host_compile_source(ii.read_text()))
    cmd = [CXX, *jit_env.non_preprocessor_flags(build.flags), str(ii), "-o", str(tmp)]
    res = _run(cmd)
    ii.unlink(missing_ok=True)
    return res, cmd


def _cached_warnings(library: Path, build: KernelBuild, roots: list[tuple[str, str]]) -> tuple[CompileWarning, ...]:
    """The warnings of a cached library, from the compiler output kept next to it, in this build's paths."""
    try:
        meta = json.loads(library.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return ()
    return parse_warnings(str(build.source), local_paths(meta.get("compiler_output", ""), roots))


def macro_prefix_maps(source: Path) -> list[str]:
    """``-fmacro-prefix-map`` flags that make ``__FILE__`` independent of the checkout: a package file is named
    from the emulator's install root (``mypackage/kernels/...``), a wheel file from site-packages
    (``ttnn/tt_metal/...``), a cache file from the cache, a kernel elsewhere by its file name. g++ uses the last
    matching map: the longest goes last."""
    return [f"-fmacro-prefix-map={d.rstrip('/')}/=" for d, _ in reversed(location_roots(source))]


def debug_prefix_maps(source: Path) -> list[str]:
    """``-fdebug-prefix-map`` flags naming files in the line tables as macro_prefix_maps names them in ``__FILE__``, so
    a fault resolves to ``mypackage/kernels/...`` whichever checkout compiled the (shared) cached
    library."""
    return [f"-fdebug-prefix-map={d.rstrip('/')}/=" for d, _ in reversed(location_roots(source))]


@lru_cache(maxsize=1024)
def _descriptors_header(cbs: tuple, compute: bool, fp32_dest_acc_en: bool, bfp8_pack_precise: bool) -> str:
    """jit_env.chlkc_descriptors of a kernel's CB table, once per table and process: a program's launches (a decode
    loop, the suite) rebuild every kernel's flags, and the header's text is a third of that."""
    return jit_env.chlkc_descriptors(
        list(cbs), compute=compute, fp32_dest_acc_en=fp32_dest_acc_en, bfp8_pack_precise=bfp8_pack_precise
    )


def kernel_flags(
    source: Path,
    *,
    processor: str,
    compile_time_args: list[int],
    named_compile_time_args: list[tuple[str, int]],
    defines: list[tuple[str, str]],
    include_paths: list[str],
    compute_config: dict | None = None,
    num_l1_banks: int = 64,
    noc_index: int | None = None,
    noc_mode: int = 0,
    cbs: list[jit_env.CBEntry] | None = None,
    spec=None,
    num_dram_banks: int = 12,
) -> tuple[str, ...]:
    """Full g++ flag list for one kernel. processor: "brisc", "ncrisc" or "compute"; num_l1_banks: L1 banks of the
    device (one per compute core); noc_index: the data-movement kernel's NOC (default: 0 on BRISC, 1 on NCRISC);
    cbs: the CBs on the kernel's cores (for chlkc_descriptors.h; None = no descriptors header)."""
    compute = processor not in ("brisc", "ncrisc")
    cc = compute_config or {}
    files = {}
    if cbs is not None:
        files[jit_env.DESCRIPTORS_HEADER] = _descriptors_header(
            tuple(cbs), compute, bool(cc.get("fp32_dest_acc_en", 0)), bool(cc.get("bfp8_pack_precise", 0))
        )
    if named_compile_time_args:
        files[jit_env.NAMED_CT_ARG_MAP_HEADER] = jit_env.named_ct_arg_map_header(named_compile_time_args)
    gen = jit_env.write_generated(GENERATED, files) if files else None
    sanitize = sanitizer_flags(sanitizer())  # TTFD_EMU_SANITIZE: kernels instrumented like the runtime (build.py)
    codegen = [f for f in CXXFLAGS if f != "-shared"] + sanitize
    flags = list(CXXFLAGS)
    flags += [*PCH_FLAGS, "-include", str(precompiled_std_headers(tuple(codegen)))]
    flags += macro_prefix_maps(source)
    flags += debug_prefix_maps(source)
    flags.append(f"-I{INCLUDE}")
    if compute:
        flags.append(f"-I{jit_env.LLK_INCLUDE}")
    if gen is not None:
        flags.append(f"-I{gen}")
    flags.append(f"-I{source.parent}")
    flags += [f"-I{p}" for p in include_paths]
    # tt-metal's JIT include roots (jit_env.py): the LLK trees for compute, the ttnn source roots for every kernel
    if compute:
        flags += [f"-I{p}" for p in jit_env.compute_llk_include_paths(spec)]
    flags += [f"-I{p}" for p in jit_env.source_include_paths()]
    # JitBuildState::compile_one adds no define for an empty list (api/compile_time_args.h then defines it empty)
    if compile_time_args:
        flags.append("-DKERNEL_COMPILE_TIME_ARGS=" + ",".join(str(int(v) & 0xFFFFFFFF) for v in compile_time_args))
    if named_compile_time_args:
        flags += ["-include", str(gen / jit_env.NAMED_CT_ARG_MAP_HEADER)]
    # What the firmware wrapper includes before the kernel source: ncrisck.cc / brisck.cc include
    # api/dataflow/dataflow_api.h; trisck.cc includes api/compile_time_args.h and chlkc_list.h (which includes
    # chlkc_descriptors.h).
    if not compute:
        flags += ["-include", str(INCLUDE / "api" / "dataflow" / "dataflow_api.h")]
    else:
        flags += ["-include", str(INCLUDE / "api" / "compile_time_args.h")]
        if cbs is not None:
            flags += ["-include", str(gen / jit_env.DESCRIPTORS_HEADER)]
    # spec: the device's arch.ArchSpec (None: Wormhole B0); its ARCH_* define as tt-metal's JIT build sets it
    define = "ARCH_WORMHOLE" if spec is None else spec.define
    flags += ["-DKERNEL_BUILD", f"-D{define}", "-DTENSIX_FIRMWARE"]
    if not compute:
        if processor == "brisc":
            flags += ["-DCOMPILE_FOR_BRISC", "-DPROCESSOR_INDEX=0"]
        else:
            flags += ["-DCOMPILE_FOR_NCRISC", "-DPROCESSOR_INDEX=1"]
        noc = (0 if processor == "brisc" else 1) if noc_index is None else int(noc_index)
        flags += [f"-DNOC_INDEX={noc}", f"-DNOC_MODE={int(noc_mode)}"]
        n = int(num_l1_banks)
        if int(num_dram_banks) != 12:  # dataflow_api.h's default is Wormhole's 12
            flags.append(f"-DNUM_DRAM_BANKS={int(num_dram_banks)}")
        flags.append(f"-DNUM_L1_BANKS={n}")
        flags.append(
            f"-DLOG_BASE_2_OF_NUM_L1_BANKS={n.bit_length() - 1}" if n & (n - 1) == 0 else "-DIS_NOT_POW2_NUM_L1_BANKS=1"
        )
    else:
        flags += [
            "-DCOMPILE_FOR_TRISC",
            "-DUCK_CHLKC_UNPACK",
            "-DUCK_CHLKC_MATH",
            "-DUCK_CHLKC_PACK",
            "-DTRISC_UNPACK",
            "-DTRISC_MATH",
            "-DTRISC_PACK",
            *jit_env.COMPUTE_DEFINES,
        ]
        # ComputeKernel::process_defines: NOC_MODE = DM_DEDICATED_NOC (0) for every compute kernel
        flags.append("-DNOC_MODE=0")
        flags += [
            f"-DEMU_DST_ACCUM_MODE={int(cc.get('fp32_dest_acc_en', 0))}",
            f"-DEMU_MATH_APPROX_MODE={int(cc.get('math_approx_mode', 0))}",
            f"-DEMU_MATH_FIDELITY={int(cc.get('math_fidelity', 4))}",
            f"-DEMU_DST_FULL_SYNC_EN={int(cc.get('dst_full_sync_en', 0))}",
        ]
    for name, value in defines:
        flags.append(f"-D{name}={value}" if value != "" else f"-D{name}")
    if os.environ.get(DEPRECATED_ERROR_ENV, "").strip() not in ("", "0"):
        flags.append("-Werror=deprecated-declarations")
    flags += sanitize
    return tuple(flags)
