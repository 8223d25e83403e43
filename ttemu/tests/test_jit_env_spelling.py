"""The emulator's kernel build spells three things as tt-metal's JIT (the 0.81.1 wheel) does; docs/RUNTIME.md, "What
differed between the JIT and the emulator". tests/runtime compares whole builds through the real runtime; these are
the quick checks that need no mock cluster."""

from __future__ import annotations

import subprocess

from ttemu import compiler, jit_env

BFLOAT16 = 5  # tt::DataFormat::Float16_b


def _flags(tmp_path, processor, ct_args):
    src = tmp_path / f"{processor}.cpp"
    return src, compiler.kernel_flags(
        src,
        processor=processor,
        compile_time_args=ct_args,
        named_compile_time_args=[],
        defines=[],
        include_paths=[],
        cbs=[jit_env.cb_entry(1, BFLOAT16, None)],
    )


def test_unpack_format_arrays_are_bytes():
    """genfiles.cpp emit_unpack_data_formats: uint8_t (older sources: std::int32_t); pack arrays unsigned char."""
    for compute in (False, True):
        h = jit_env.chlkc_descriptors([jit_env.cb_entry(1, BFLOAT16, None)], compute=compute)
        assert "constexpr uint8_t unpack_src_format[32]" in h and "constexpr uint8_t unpack_dst_format[32]" in h
        assert "constexpr unsigned char pack_src_format[32]" in h and "int32_t" not in h


def test_compile_time_args_define_only_when_there_are_some(tmp_path):
    """JitBuildState::compile_one adds -DKERNEL_COMPILE_TIME_ARGS only for a non-empty list."""
    for processor in ("ncrisc", "brisc", "compute"):
        _, none = _flags(tmp_path, processor, [])
        _, some = _flags(tmp_path, processor, [3, 4])
        assert not [f for f in none if f.startswith("-DKERNEL_COMPILE_TIME_ARGS")], processor
        assert "-DKERNEL_COMPILE_TIME_ARGS=3,4" in some, processor


def test_compute_kernels_get_noc_mode_and_compile_without_args(tmp_path):
    """ComputeKernel::process_defines defines NOC_MODE = DM_DEDICATED_NOC (0); a kernel without positional args sees
    an empty kernel_compile_time_args; the unpack format arrays are bytes in the compiled program too."""
    src, flags = _flags(tmp_path, "compute", [])
    assert "-DNOC_MODE=0" in flags
    src.write_text(
        "#include <type_traits>\n"
        "static_assert(NOC_MODE == 0 && kernel_compile_time_args.size() == 0);\n"
        "static_assert(std::is_same_v<std::remove_cv_t<std::remove_extent_t<decltype(unpack_src_format)>>, uint8_t>);\n"
        "static_assert(unpack_src_format[1] == 5 && unpack_src_format[0] == 255);\n"
        '#include "api/compute/compute_kernel_api.h"\nvoid kernel_main() {}\n'
    )
    res = subprocess.run(
        [compiler.CXX, *[f for f in flags if f != "-shared"], "-fsyntax-only", str(src)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
