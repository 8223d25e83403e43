"""A program whose kernels are not in the compile cache says so once, before compiling (a first use compiles for
seconds to minutes); a program whose kernels are all cached says nothing."""

from __future__ import annotations

import uuid

from loguru import logger

from ttemu import compiler

KERNEL = """
#include <cstdint>
// build {tag}
void kernel_main() {{
    const uint32_t addr = get_arg_val<uint32_t>(0);
    noc_async_read(get_noc_addr(addr), get_write_ptr(0), {page});
    noc_async_read_barrier();
}}
"""


def _builds(tmp_path, tag: str) -> list[compiler.KernelBuild]:
    builds = []
    for name, page in (("progress_reader_a", 1024), ("progress_reader_b", 2048)):
        source = tmp_path / f"{name}.cpp"
        source.write_text(KERNEL.format(tag=tag, page=page))
        flags = compiler.kernel_flags(
            source, processor="ncrisc", compile_time_args=[], named_compile_time_args=[], defines=[], include_paths=[]
        )
        builds.append(compiler.KernelBuild(source, name, flags))
    return builds


def _logged(fn) -> list[str]:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(m.record["message"]), level="INFO", filter="ttemu")
    try:
        fn()
    finally:
        logger.remove(sink)
    return lines


def test_one_line_before_compiling_none_on_a_hit(tmp_path):
    builds = _builds(tmp_path, uuid.uuid4().hex)  # new sources: both miss the cache
    libraries: list = []
    lines = _logged(lambda: libraries.extend(compiler.compile_kernels(builds, "program [test]")))
    assert len(libraries) == 2 and all(p.exists() for p in libraries)
    assert lines == [
        f"compiling 2 kernels for program [test] (first use; cached in {compiler._display_path(compiler.KERNEL_CACHE)})"
    ], lines
    assert _logged(lambda: compiler.compile_kernels(builds, "program [test]")) == []


def test_the_count_is_of_the_kernels_to_compile(tmp_path):
    builds = _builds(tmp_path, uuid.uuid4().hex)
    compiler.compile_kernel(builds[0])  # one of the two is cached already
    lines = _logged(lambda: compiler.compile_kernels(builds, "program [half]"))
    assert len(lines) == 1 and lines[0].startswith("compiling 1 kernel for program [half] (first use"), lines
