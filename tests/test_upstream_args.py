"""The upstream baseline's argument lists against the installed wheel's own kernels.

``ttflashdecode.upstream.program`` builds upstream sdpa_decode's compile-time and runtime args from named lists. The
wheel ships the kernels but not the program factory's source, so the kernels are the contract: this test parses every
``constexpr ... NAME = get_compile_time_arg_val(i)``, every ``TensorAccessorArgs<...>`` and every
``get_arg_val<uint32_t>(arg_idx++)`` of ``reader_decode_all.cpp``, ``writer_decode_all.cpp`` and
``sdpa_flash_decode.cpp`` in the installed wheel and requires our lists to name the same args in the same order. A wheel
whose kernels add, drop or move an argument fails here, naming the kernel and the first difference, before any run reads
a wrong value.
"""

from __future__ import annotations

import re

import pytest

from ttflashdecode.upstream import program, wheel

CT = re.compile(r"constexpr\s+(?:uint32_t|bool|auto)\s+(\w+)\s*=\s*get_compile_time_arg_val\((\d+)\)")
ACCESSOR = re.compile(r"constexpr\s+auto\s+(\w+)_args\s*=\s*TensorAccessorArgs<")
RT = re.compile(r"(?:const\s+)?(?:uint32_t|bool)\s+(\w+)\s*=\s*get_arg_val<uint32_t>\(arg_idx\+\+\)")


def _source(name: str) -> str:
    return wheel.sdpa_decode_kernel(name).read_text()


def compile_time_names(src: str) -> list[str]:
    """Compile-time arg names by index; every index from 0 up must be read exactly once."""
    found = sorted((int(i), n) for n, i in CT.findall(src))
    indices = [i for i, _ in found]
    assert indices == list(range(len(found))), f"compile-time arg indices are not 0..n-1 exactly once: {indices}"
    return [n for _, n in found]


@pytest.mark.parametrize(
    "kernel, names",
    [
        ("dataflow/reader_decode_all.cpp", program.READER_CT_NAMES),
        ("dataflow/writer_decode_all.cpp", program.WRITER_CT_NAMES),
        ("compute/sdpa_flash_decode.cpp", program.COMPUTE_CT_NAMES),
    ],
)
def test_compile_time_args_match_the_wheels_kernels(kernel, names):
    wheel_names = compile_time_names(_source(kernel))
    diff = next((i for i, (a, b) in enumerate(zip(wheel_names, names)) if a != b), min(len(wheel_names), len(names)))
    assert list(names) == wheel_names, (
        f"{kernel}: ttflashdecode.upstream passes {len(names)} compile-time args, the wheel's kernel reads "
        f"{len(wheel_names)}; first difference at index {diff}: ours "
        f"{names[diff] if diff < len(names) else '(none)'}, wheel's "
        f"{wheel_names[diff] if diff < len(wheel_names) else '(none)'}"
    )


def test_reader_tensor_accessors_follow_the_compile_time_args_in_order():
    src = _source("dataflow/reader_decode_all.cpp")
    assert ACCESSOR.findall(src) == list(program.READER_ACCESSOR_NAMES)
    # The first accessor starts right after the last compile-time arg.
    assert f"TensorAccessorArgs<{len(program.READER_CT_NAMES)}>" in src
    assert f"TensorAccessorArgs<{len(program.WRITER_CT_NAMES)}>" in _source("dataflow/writer_decode_all.cpp")


def _runtime_names(src: str, stop: str) -> list[str]:
    """The ``get_arg_val(arg_idx++)`` names before ``stop`` (where the kernel turns to arrays)."""
    return RT.findall(src[: src.index(stop)])


def test_reader_runtime_args_match():
    src = _source("dataflow/reader_decode_all.cpp")
    assert _runtime_names(src, "// idle core") == list(program.READER_RT_NAMES)
    # then the output cores' x coordinates (num_output_cores of them) and y coordinates
    assert re.search(r"all_output_noc_x = .*get_arg_addr\(arg_idx\)\);\s*arg_idx \+= num_output_cores;", src)


def test_writer_runtime_args_match():
    src = _source("dataflow/writer_decode_all.cpp")
    assert _runtime_names(src, "// Semaphore encoding") == list(program.WRITER_RT_NAMES)
    # then children_per_round[MAX_TREE_REDUCTION_ROUNDS], the group's x then y coordinates
    tail = src[src.index("// Semaphore encoding") :]
    assert re.search(
        r"for \(uint32_t r = 0; r < MAX_TREE_REDUCTION_ROUNDS; \+\+r\) \{\s*children_per_round\[r\] = "
        r"get_arg_val<uint32_t>\(arg_idx\+\+\);",
        tail,
    )
    assert tail.index("reduction_group_core_xs") < tail.index("reduction_group_core_ys")


def test_compute_runtime_args_match():
    src = _source("compute/sdpa_flash_decode.cpp")
    assert _runtime_names(src, "// Tree reduction runtime arguments") == list(program.COMPUTE_RT_NAMES[:4])
    tail = src[src.index("// Tree reduction runtime arguments") :]
    assert RT.findall(tail[: tail.index("children_per_round")]) == list(program.COMPUTE_RT_NAMES[4:])
    assert "get_arg_val<uint32_t>(0) == 65" in src and program.IDLE_COMPUTE_MARKER == 65


def test_named_args_refuse_a_missing_or_unknown_name():
    with pytest.raises(AssertionError, match=r"missing \['b'\]"):
        program.named_args(("a", "b"), {"a": 1})
    with pytest.raises(AssertionError, match=r"unknown \['c'\]"):
        program.named_args(("a",), {"a": 1, "c": 2})
