"""The device kernels use only the tt-metal kernel API that the ttnn 0.81.1 wheel ships.

The emulator compiles our kernels against its own implementation of that API, so a function the emulator
provides but silicon lacks would pass every emulator test and fail to compile on a card. These checks compare
against the wheel's own headers (``ttnn/tt_metal/hw/inc``). They look at names, not signatures.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tests_support_paths import DEVICE_KERNELS, REPO

EMULATOR_API = REPO / "ttflashdecode" / "emulator" / "include"
KERNEL_SOURCES = sorted([*DEVICE_KERNELS.rglob("*.cpp"), *DEVICE_KERNELS.rglob("*.hpp")])
NOT_API = {"if", "for", "while", "switch", "return", "sizeof", "static_assert", "static_cast", "reinterpret_cast",
           "const_cast", "decltype", "defined", "uint32_t", "int32_t", "uint16_t", "uint8_t", "int64_t", "uint64_t",
           "float"}  # fmt: skip


def _wheel_inc() -> Path:
    spec = importlib.util.find_spec("ttnn")
    return Path(spec.submodule_search_locations[0]) / "tt_metal" / "hw" / "inc"


def _code(path: Path) -> str:
    """Source without comments."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(errors="ignore"), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _defined_in_our_kernels() -> set[str]:
    """Functions (and lambdas bound to names) our kernel sources define themselves."""
    names = set()
    for path in KERNEL_SOURCES:
        code = _code(path)
        names |= set(re.findall(r"\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:->\s*[\w:]+\s*)?\{", code))
        names |= set(re.findall(r"\bauto\s+([A-Za-z_]\w*)\s*=\s*\[", code))
    return names


def _api_calls() -> dict[str, list[str]]:
    """Called names that the emulator's API headers provide, with the kernel files that call them."""
    emulator_text = "\n".join(_code(p) for p in EMULATOR_API.rglob("*.h"))
    own = _defined_in_our_kernels()
    calls: dict[str, list[str]] = {}
    for path in KERNEL_SOURCES:
        for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*(?:<[^;(){}]*>)?\s*\(", _code(path))):
            if name not in own and name not in NOT_API and re.search(rf"\b{name}\b", emulator_text):
                calls.setdefault(name, []).append(path.name)
    return calls


def test_kernel_includes_exist_in_the_wheel():
    includes = {inc for path in KERNEL_SOURCES for inc in re.findall(r'#include "(api/[^"]+)"', path.read_text())}
    assert includes, "the kernels include no tt-metal API header?"
    missing = sorted(inc for inc in includes if not (_wheel_inc() / inc).is_file())
    assert not missing, f"included by our kernels but not shipped in the wheel's hw/inc: {missing}"


def test_kernel_api_calls_are_declared_in_the_wheel():
    wheel_text = "\n".join(_code(p) for p in _wheel_inc().rglob("*.h"))
    calls = _api_calls()
    # The FlashDecode kernels need at least CBs, NOC reads/writes, semaphores, matmul, reduce and exp.
    for needed in ("cb_wait_front", "noc_async_read_tile", "noc_semaphore_inc", "matmul_tiles", "reduce_tile",
                   "exp_tile", "pack_tile"):  # fmt: skip
        assert needed in calls, f"{needed} not found among the kernels' API calls: the scan is broken"
    missing = {name: files for name, files in calls.items() if not re.search(rf"\b{name}\s*(?:<[^;(){{}}]*>)?\s*\(", wheel_text)}
    assert not missing, f"called by our kernels, provided by the emulator, absent from the wheel: {missing}"


@pytest.mark.parametrize("header", sorted(p.relative_to(EMULATOR_API) for p in (EMULATOR_API / "api").rglob("*.h")),
                         ids=str)  # fmt: skip
def test_emulator_api_headers_mirror_wheel_paths(header):
    """Kernels include the same paths on silicon and here, so each emulator API header stands where the wheel's is."""
    assert (_wheel_inc() / header).is_file(), f"emulator header {header} has no counterpart in the wheel's hw/inc"
