"""The emulator compiles kernels with warnings on and reports use of API the wheel marks deprecated.

The emulator's headers carry the wheel's ``[[deprecated]]`` markings (same functions, same messages), so a kernel
calling, say, ``noc_async_read_tile`` on an ``InterleavedAddrGenFast`` compiles (warnings are not fatal: the wheel's
own kernels still build) and the warning is logged and returned by ``compile_warnings()``, from a fresh build and
from the cache alike; ``TTFD_EMU_DEPRECATED_ERROR=1`` turns it into a compile error.
"""

from __future__ import annotations

import importlib.util
import re
import uuid
from pathlib import Path

import pytest
from loguru import logger

from ttemu import KernelCompileError, compiler

WHEEL_MESSAGE = "Use <typename AddrGen> noc_async_read_page instead."

DEPRECATED_READER = """
#include <cstdint>
#include "api/dataflow/dataflow_api.h"
// build {tag}
void kernel_main() {{
    const uint32_t addr = get_arg_val<uint32_t>(0);
    const InterleavedAddrGenFast<true> src = {{
        .bank_base_address = addr, .page_size = 2048, .data_format = DataFormat::Float16_b}};
    noc_async_read_tile(0, src, get_write_ptr(0));
    noc_async_read_barrier();
}}
"""

CLEAN_READER = """
#include <cstdint>
#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"
// build {tag}
void kernel_main() {{
    const uint32_t addr = get_arg_val<uint32_t>(0);
    constexpr auto args = TensorAccessorArgs<0>();
    Noc noc;
    noc.async_read(TensorAccessor(args, addr), CoreLocalMem<uint32_t>(get_write_ptr(0)), 2048, {{.page_id = 0}}, {{}});
    noc.async_read_barrier();
}}
"""


def _build(tmp_path, text: str, name: str):
    source = tmp_path / f"{name}.cpp"
    source.write_text(text.format(tag=uuid.uuid4().hex))  # a new source each run: a fresh build, then a cache hit
    flags = compiler.kernel_flags(
        source, processor="brisc", compile_time_args=[2, 2048], named_compile_time_args=[], defines=[], include_paths=[]
    )
    return source, compiler.KernelBuild(source, name, flags)


def test_deprecated_call_is_reported_with_the_wheels_message(tmp_path):
    compiler.reset_compile_warnings()
    logged = []
    sink = logger.add(lambda message: logged.append(str(message)), level="WARNING")
    try:
        source, build = _build(tmp_path, DEPRECATED_READER, "deprecated_reader")
        assert compiler.compile_kernel(build).exists()  # reported, not fatal
    finally:
        logger.remove(sink)
    found = compiler.compile_warnings(source, deprecated_only=True)
    assert len(found) == 1, found
    warning = found[0]
    assert "noc_async_read_tile" in warning.message and WHEEL_MESSAGE in warning.message, warning
    assert warning.file == str(source) and warning.line == 9, warning
    assert any(WHEEL_MESSAGE in line for line in logged), logged

    # A cache hit reports the same warning (kept next to the library).
    compiler.reset_compile_warnings()
    assert compiler.compile_kernel(build).exists()
    assert compiler.compile_warnings(source, deprecated_only=True) == found


def test_a_kernel_in_the_device2_form_has_no_deprecation(tmp_path):
    compiler.reset_compile_warnings()
    source, build = _build(tmp_path, CLEAN_READER, "clean_reader")
    compiler.compile_kernel(build)
    assert str(source) in compiler.compiled_sources()
    assert compiler.compile_warnings(source) == []


def test_deprecation_as_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv(compiler.DEPRECATED_ERROR_ENV, "1")
    _, build = _build(tmp_path, DEPRECATED_READER, "deprecated_reader_strict")
    assert "-Werror=deprecated-declarations" in build.flags
    with pytest.raises(KernelCompileError, match="deprecated"):
        compiler.compile_kernel(build)


def _code(text: str) -> str:
    """Without comments and __attribute__((...)) (which would hide the declared name)."""
    text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    return re.sub(r"__attribute__\s*\(\([^()]*\)\)", "", text)


def _deprecations(root: Path, skip=()) -> dict[str, set[str]]:
    """function name -> the messages of the [[deprecated("...")]] markings on it, in the headers under root."""
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.h"):
        if any(part in path.parts for part in skip):
            continue
        for m in re.finditer(
            r'\[\[deprecated\(((?:\s*"[^"]*")+)\s*\)\]\]([^;{]*?)\(', _code(path.read_text(errors="ignore"))
        ):
            name = [w for w in re.findall(r"\b\w+\b", m.group(2)) if not w.startswith("__")][-1]
            found.setdefault(name, set()).add("".join(re.findall(r'"([^"]*)"', m.group(1))))
    return found


def test_emulator_headers_carry_the_wheels_deprecations():
    """Every function the wheel marks [[deprecated]] (Wormhole and the kernel API) that the emulator's own headers
    define carries the same marking with the same message there."""
    wheel_inc = Path(importlib.util.find_spec("ttnn").submodule_search_locations[0]) / "tt_metal" / "hw" / "inc"
    wheel = _deprecations(wheel_inc, skip=("blackhole", "tt-2xx"))
    include = Path(compiler.INCLUDE)
    emulator = _deprecations(include)
    emulator_text = "\n".join(_code(p.read_text(errors="ignore")) for p in include.rglob("*.h"))
    assert {"noc_async_read_tile", "get_noc_addr", "acquire_dst", "copy_tile_init"} <= set(wheel), sorted(wheel)
    defined = {name for name in wheel if re.search(rf"\b{name}\s*\(", emulator_text)}
    drift = {name: (emulator.get(name), wheel[name]) for name in defined if emulator.get(name) != wheel[name]}
    assert not drift, f"deprecations the emulator's headers do not carry as the wheel does (emulator, wheel): {drift}"
