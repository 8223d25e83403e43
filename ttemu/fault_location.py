"""Turns a faulting run's stack, as the runtime reports it ((library file, offset, exact) frames, innermost first),
into source lines: ``addr2line`` over each library (kernel libraries carry line tables, compiler.CXXFLAGS ``-g1``;
the runtime executable is built with ``-g``).

The fault's *location* is the innermost line in the faulting kernel's own source file (what the kernel was doing when an
API rule broke or a pointer went bad, e.g. ``mypackage/kernels/compute/attention.cpp:412``); the backtrace
lists every resolved frame, inlined callers included, so a crash inside a header (the emulator's API, the STL) shows the
path down from the kernel line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .build import INSTALL_ROOT

ADDR2LINE = "addr2line"


@dataclass(frozen=True)
class SourceFrame:
    """One resolved stack entry (an inlined call is an entry of its own)."""

    function: str
    file: str  # as the line tables name it: mypackage/kernels/..., ttnn/..., or an absolute path
    line: int
    library: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}" + ("" if self.line else f" ({Path(self.library).name})")


def _addr2line(library: str, offsets: list[int]) -> list[list[SourceFrame]]:
    """Per offset, its inline chain (innermost first); unresolvable entries keep the function name, line 0."""
    if not offsets or shutil.which(ADDR2LINE) is None or not Path(library).exists():
        return [[] for _ in offsets]
    res = subprocess.run(
        [ADDR2LINE, "-e", library, "-a", "-f", "-C", "-i", *(hex(o) for o in offsets)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    chains: list[list[SourceFrame]] = []
    lines = res.stdout.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            chains.append([])
            i += 1
            continue
        if not chains or i + 1 >= len(lines):
            break
        function, where = lines[i], lines[i + 1]
        file, _, line = where.rpartition(":")
        # Kernels name their files from the emulator's install root or site-packages (-fdebug-prefix-map), which
        # addr2line joins to the compiling process's directory again: show them as the kernel build named them.
        file = file.removeprefix(f"{INSTALL_ROOT}/")
        line = line.split(" ")[0]
        chains[-1].append(SourceFrame(function, file, int(line) if line.isdigit() else 0, library))
        i += 2
    chains += [[] for _ in range(len(offsets) - len(chains))]
    return chains[: len(offsets)]


def frames_at(library: str, offset: int) -> list[SourceFrame]:
    """The inline chain (innermost first) at `offset` of `library`, as the line tables give it."""
    return _addr2line(library, [offset])[0]


def _kernel_source(library: str) -> str | None:
    """The kernel source a cached library was built from, named as its line tables name it (compiler.py keeps it
    next to the library as a stable path, "<install-root>/mypackage/kernels/x.cpp")."""
    try:
        meta = json.loads(Path(library).with_suffix(".json").read_text())
    except (OSError, ValueError):
        return None
    source = str(meta.get("source", ""))
    return source.split(">/", 1)[1] if source.startswith("<") and ">/" in source else source or None


def resolve(frames: list) -> tuple[str | None, list[SourceFrame]]:
    """(location "file:line" or None, resolved backtrace) of a runtime result's ``frames``."""
    by_library: dict[str, list[int]] = {}
    for library, offset, exact in frames:
        # A return address points past its call; the call's own line is one byte back.
        by_library.setdefault(library, []).append(int(offset) if exact else max(int(offset) - 1, 0))
    resolved = {lib: iter(_addr2line(lib, offs)) for lib, offs in by_library.items()}
    backtrace: list[SourceFrame] = []
    location = None
    for library, _offset, _exact in frames:
        chain = next(resolved[library])
        backtrace += chain
        source = _kernel_source(library)
        if location is None and source:
            hit = next((f for f in chain if f.line and f.file.endswith(source)), None)
            if hit is not None:
                location = f"{source}:{hit.line}"
    if location is None:  # no line in the kernel's own file: the innermost kernel-library line there is
        hit = next((f for f in backtrace if f.line and _kernel_source(f.library)), None)
        location = f"{hit.file}:{hit.line}" if hit else None
    return location, backtrace
