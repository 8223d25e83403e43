"""TEST DOUBLE: a stand-in for Tenstorrent's RISC-V compiler (sfpi's ``riscv-tt-elf-g++``), for the mock-runtime tests.

ttnn's JIT build (tt-metal's jit_build) compiles every kernel with sfpi's g++ before ``generic_op`` can place a
program, and sfpi is published only as a GitHub release binary (../shared/TTSIM.md). This stand-in lets ttnn's host
side run to the end without it. It compiles NOTHING: it

- answers ``--version`` as sfpi 7.89.0 answers (tt-metal checks the toolchain once);
- for a compile (``-c``) writes a genuine RISC-V object, a two-symbol stub (``_start``, weak, and ``kernel_launch``)
  assembled once by Debian's ``riscv64-unknown-elf-as``, and the ``-MF`` depfile naming the source;
- for a link writes a genuine RISC-V ELF linked by Debian's ``riscv64-unknown-elf-ld`` with tt-metal's own linker
  script, firmware symbols (``--just-symbols``) and objects, so the runtime maps it as it maps a real kernel;
- for a precompiled header (``-x c++-header``) writes an empty file (no later step reads it: the compiles here are
  stubs);
- records every command (argv, working directory, outputs) as one JSON line in ``$TTFD_STANDIN_LOG`` and, the first
  time it sees a kernel's build folder, copies the folder's generated files (``chlkc_descriptors.h``,
  ``named_ct_arg_map_generated.h``, ``defines_generated.h``, ``kernel_args_generated.h``, ...) into
  ``$TTFD_STANDIN_LOG``'s folder, so a test compares them with the emulator's JIT environment.

:func:`make_runtime_root` builds the folder ttnn is pointed at through ``TT_METAL_RUNTIME_ROOT``: the wheel's files
(symlinks) with ``runtime/sfpi/compiler/bin/riscv-tt-elf-g++`` running this file. The wheel itself is not touched.

Run by tt-metal as a program (``python -S -E standin_compiler.py ...``): stdlib only.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

LOG_ENV = "TTFD_STANDIN_LOG"
STUB_ENV = "TTFD_STANDIN_STUB"
SFPI_VERSION_LINE = "riscv-tt-elf-g++ (tenstorrent/sfpi:7.89.0[1050]) 15.1.0"
AS, LD = "riscv64-unknown-elf-as", "riscv64-unknown-elf-ld"
# Debian package binutils-riscv64-unknown-elf provides both.
BINUTILS_PACKAGE = "binutils-riscv64-unknown-elf"

# `_start` is weak: NCRISC kernels link the wheel's wh-iram-start.o, which defines it and calls kernel_launch. The
# call leaves a relocation in the linked ELF (--emit-relocs): tt-metal's loader rewrites a kernel's relocations to
# run it from wherever it is placed (ElfFile XIPify) and refuses an ELF without any.
STUB_ASM = """\
    .section .start,"ax",@progbits
    .weak _start
    .globl kernel_launch
_start:
    call kernel_launch
kernel_launch:
    ret
"""
# Files tt-metal's JIT writes into a kernel's build folder (genfiles.cpp, jit_build_utils): what the compile sees.
GENERATED_SUFFIXES = (".h", ".hpp", ".cpp")


def binutils_missing() -> str | None:
    """Why the stand-in cannot make ELF files here, or None."""
    missing = [t for t in (AS, LD) if shutil.which(t) is None]
    if missing:
        return (
            f"{', '.join(missing)} not found: install the Debian package {BINUTILS_PACKAGE} "
            f"(apt-get install -y {BINUTILS_PACKAGE})"
        )
    return None


def make_runtime_root(dest: Path, wheel: Path, python: str | None = None) -> Path:
    """A TT_METAL_RUNTIME_ROOT at ``dest``: symlinks to every entry of the installed ttnn package ``wheel`` except
    ``runtime/``, which holds a symlink to the wheel's ``runtime/hw`` and ``sfpi/compiler/bin/riscv-tt-elf-g++``
    (a shell script running this file)."""
    dest.mkdir(parents=True, exist_ok=True)
    for entry in wheel.iterdir():
        if entry.name == "runtime":
            continue
        link = dest / entry.name
        if not link.is_symlink():
            link.symlink_to(entry)
    runtime = dest / "runtime"
    runtime.mkdir(exist_ok=True)
    hw = runtime / "hw"
    if not hw.is_symlink():
        hw.symlink_to(wheel / "runtime" / "hw")
    bin_dir = runtime / "sfpi" / "compiler" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    # The stub object every compile hands back, assembled once (a copy per compile instead of an assembler run).
    stub = runtime / "sfpi" / "stub.o"
    if not stub.is_file():
        _assemble(str(stub), use_cached=False)
    gxx = bin_dir / "riscv-tt-elf-g++"
    gxx.write_text(
        f'#!/bin/sh\n{STUB_ENV}="{stub}" exec "{python or sys.executable}" -S -E "{Path(__file__).resolve()}" "$@"\n'
    )
    gxx.chmod(0o755)
    return dest


def _after(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag]


def _wl(args: list[str]) -> list[str]:
    """The linker's own options from ``-Wl,a,b`` arguments."""
    out: list[str] = []
    for a in args:
        if a.startswith("-Wl,"):
            out.extend(a[4:].split(","))
    return out


def _record(entry: dict) -> None:
    log = os.environ.get(LOG_ENV)
    if not log:
        return
    with open(log, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(entry) + "\n")


def _snapshot_generated(kernel_dir: Path) -> str | None:
    """Copies the generated files of a kernel's build folder (the parent of the RISC's folder) next to the log, once
    per folder; returns the copy's folder."""
    log = os.environ.get(LOG_ENV)
    if not log or not kernel_dir.is_dir():
        return None
    # Folder names are <kernel name>/<hash>/: the hash keys the build (sources, defines, args, CB formats).
    dest = Path(log).parent / "generated" / kernel_dir.parent.name / kernel_dir.name
    if dest.is_dir():
        return str(dest)
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    for f in kernel_dir.iterdir():
        if f.is_file() and f.suffix in GENERATED_SUFFIXES:
            shutil.copyfile(f, tmp / f.name)
    try:
        tmp.rename(dest)
    except OSError:  # another RISC's compile copied it first
        shutil.rmtree(tmp, ignore_errors=True)
    return str(dest)


def _run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(f"stand-in compiler: {' '.join(cmd)} failed:\n{r.stderr}")
        sys.exit(r.returncode)


def _assemble(obj: str, use_cached: bool = True) -> None:
    stub = os.environ.get(STUB_ENV)
    if use_cached and stub and os.path.isfile(stub):
        shutil.copyfile(stub, obj)
        return
    src = obj + ".stub.s"
    Path(src).write_text(STUB_ASM)
    try:
        _run([AS, "-march=rv32i", "-mabi=ilp32", "-o", obj, src])
    finally:
        os.unlink(src)


def _link(args: list[str], out: str) -> None:
    # -T<script> reaches ld as `-T script`; -Wl options pass as written (--just-symbols=..., -z ..., --emit-relocs).
    cmd = [LD, "-m", "elf32lriscv"]
    wl = _wl(args)
    i = 0
    while i < len(wl):
        if wl[i] == "-z" and i + 1 < len(wl):
            cmd += ["-z", wl[i + 1]]
            i += 2
            continue
        cmd.append(wl[i])
        i += 1
    for a in args:
        if a.startswith("-T") and len(a) > 2:
            cmd += ["-T", a[2:]]
    cmd += [a for a in args if a.endswith(".o") and not a.startswith("-") and a != out]
    cmd += ["-o", out]
    _run(cmd)


def main(argv: list[str]) -> int:
    args = argv[1:]
    if "--version" in args or "-v" in args:
        print(SFPI_VERSION_LINE)
        return 0
    outs = _after(args, "-o")
    out = outs[0] if outs else None
    entry: dict = {"argv": args, "cwd": os.getcwd(), "output": out}
    if out is None:
        _record(entry)
        return 0
    if "c++-header" in _after(args, "-x"):
        entry["kind"] = "pch"
        Path(out).write_bytes(b"")
    elif "-c" in args:
        entry["kind"] = "compile"
        _assemble(out)
        sources = [a for a in args if a.endswith((".cc", ".cpp", ".c", ".S")) and not a.startswith("-")]
        for dep in _after(args, "-MF"):
            Path(dep).write_text(f"{out}: " + " ".join(sources) + "\n")
        # The JIT writes an object into <kernel dir>/<risc>/; generated headers are in <kernel dir>.
        entry["generated"] = _snapshot_generated(Path(out).resolve().parent.parent)
    else:
        entry["kind"] = "link"
        _link(args, out)
    if entry["kind"] in ("compile", "link"):
        # The JIT writes to a temporary name and renames it afterwards: keep the ELF header as written.
        entry["elf_header"] = Path(out).read_bytes()[:20].hex()
    _record(entry)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
