"""The kernel compile cache is keyed by what the compiler reads, not by where the checkout lies.

The same kernel (and the header it includes) copied to two directories compiles once: the second build is a hit on
the first one's library. Editing the included header is a miss. ``__FILE__`` in a library names the kernel without
its directory, so a library shared by two checkouts says the same thing in both. Each kernel here is new (a unique
tag in its text), so the first build is always a real compile.
"""

from __future__ import annotations

import ctypes
import os
import uuid
from pathlib import Path

from ttemu import compiler
from ttemu.build import INSTALL_ROOT

HEADER = """
#pragma once
#include <cstdint>
constexpr uint32_t kPageBytes = {page};
"""

KERNEL = """
#include <cstdint>
#include "page_size.h"
// build {tag}
extern "C" const char* ttfd_test_kernel_file() {{ return __FILE__; }}
void kernel_main() {{
    const uint32_t addr = get_arg_val<uint32_t>(0);
    noc_async_read(get_noc_addr(addr), get_write_ptr(0), kPageBytes);
    noc_async_read_barrier();
}}
"""


def _checkout(root: Path, tag: str, page: int = 2048) -> compiler.KernelBuild:
    """A kernel and the header beside it, in directory `root`, and its build."""
    root.mkdir(parents=True)
    (root / "page_size.h").write_text(HEADER.format(page=page))
    source = root / "cache_reader.cpp"
    source.write_text(KERNEL.format(tag=tag))
    flags = compiler.kernel_flags(
        source,
        processor="ncrisc",
        compile_time_args=[7],
        named_compile_time_args=[],
        defines=[("TTFD_CACHE_TEST", "1")],
        include_paths=[],
    )
    return compiler.KernelBuild(source, "cache_reader", flags)


def test_same_kernel_at_two_paths_compiles_once_and_a_header_edit_recompiles(tmp_path):
    tag = uuid.uuid4().hex
    first = _checkout(tmp_path / "main", tag)
    second = _checkout(tmp_path / "fresh_clone" / "elsewhere", tag)
    assert first.flags != second.flags  # the -I / prefix-map flags name each checkout's own directory

    compiler.reset_compile_cache_stats()
    lib = compiler.compile_kernel(first)
    assert compiler.compile_cache_stats() == {"hits": 0, "misses": 1}
    assert compiler.compile_kernel(second) == lib, "the same kernel at another path must hit the first build's entry"
    assert compiler.compile_cache_stats() == {"hits": 1, "misses": 1}

    # __FILE__ is the file name alone: the shared library says the same in either checkout.
    assert _file_macro(lib) == "cache_reader.cpp"

    # One edit to the included header (not to the kernel) is a new entry.
    (second.source.parent / "page_size.h").write_text(HEADER.format(page=4096))
    edited = compiler.compile_kernel(second)
    assert edited != lib and edited.exists()
    assert compiler.compile_cache_stats() == {"hits": 1, "misses": 2}
    # ... and the unedited checkout still hits its own entry.
    assert compiler.compile_kernel(first) == lib
    assert compiler.compile_cache_stats() == {"hits": 2, "misses": 2}


def _file_macro(lib: Path) -> str:
    # RTLD_LAZY: the kernel API's functions are the runtime's (resolved when it dlopens the library); only this
    # one function, which calls none of them, runs here.
    fn = ctypes.CDLL(str(lib), mode=os.RTLD_LAZY | os.RTLD_LOCAL).ttfd_test_kernel_file
    fn.restype = ctypes.c_char_p
    return fn().decode()


def test_key_names_checkout_paths_by_stable_roots(tmp_path):
    """The emulator's install root (the checkout here), the wheel and the cache enter the key as tokens; a directory
    that merely starts with a root's name is not that root."""
    build = _checkout(tmp_path / "k", "unused")
    roots = compiler.location_roots(build.source)
    tokens = dict(roots)
    assert tokens[str(INSTALL_ROOT)] == "<install-root>" and tokens[str(tmp_path / "k")] == "<kernel-dir>"
    repo = str(INSTALL_ROOT)
    assert compiler.stable_paths(f"-I{repo}/mypackage/kernels", roots) == "-I<install-root>/mypackage/kernels"
    assert compiler.stable_paths(f"-I{repo}_other/x", roots) == f"-I{repo}_other/x"
    text = f"{tmp_path}/k/cache_reader.cpp:9:5: warning: unused"
    assert compiler.local_paths(compiler.stable_paths(text, roots), roots) == text
    # A kernel of a package installed beside the emulator is keyed by its place there (no separate kernel-dir root).
    inside = compiler.location_roots(INSTALL_ROOT / "mypackage" / "kernels" / "x.cpp")
    assert "<kernel-dir>" not in dict(inside).values()


def test_a_header_edited_after_repeated_launches_recompiles(tmp_path):
    """A process launching one program many times keeps each build's key while its source and headers are unchanged
    on disk (compiler._library_path): an edit of the header after several launches, even one that keeps its size, is
    still a new entry at the next launch, and restoring the header finds the first entry again."""
    build = _checkout(tmp_path / "loop", uuid.uuid4().hex)
    header = build.source.parent / "page_size.h"
    lib = compiler.compile_kernel(build)
    for _ in range(3):  # the later launches take the key this process kept
        assert compiler.compile_kernel(build) == lib
    original = header.read_text()
    header.write_text(HEADER.format(page=4096))  # as many bytes as page=2048
    assert len(header.read_text()) == len(original)
    edited = compiler.compile_kernel(build)
    assert edited != lib and edited.exists()
    assert compiler.compile_kernel(build) == edited
    header.write_text(original)
    assert compiler.compile_kernel(build) == lib
