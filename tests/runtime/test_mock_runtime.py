"""Every program the package builds, through the real ttnn runtime on a mock cluster (no card, no simulator).

A real ttnn device (N150) or MeshDevice (N300 1x2, T3K 2x4) is opened on the package's mock cluster descriptors; the
JIT build runs with a stand-in for Tenstorrent's compiler (standin_compiler.py: a TEST DOUBLE that emits valid RISC-V
ELF files and records every compile command and generated file). Each program of programs.py is called through the
public op as on a card, so its descriptors go through ``ttnn.generic_op``. Nothing executes on a mock cluster: values
are the emulator tests' business; here ttnn must accept every program (CB and L1 allocation, runtime args,
semaphores, core ranges, kernel builds and ELF loading), and the JIT's build environment of every kernel must equal
the one the emulator builds the kernel with (jit_parity.py). docs/RUNTIME.md records what was found.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runtime import host_cost, programs
from runtime.host_cost import GOAL_US

# The load (1-minute average per CPU) up to which the host-cost test judges the 30 us goal.
QUIET_LOAD_PER_CPU = 0.5

# The kernels every program family uses; each must have been compared at least once.
PACKAGE_KERNELS = {
    "reader_flash_decode",
    "compute_flash_decode",
    "writer_flash_decode",
    "reader_update_cache",
    "compute_update_cache",
    "writer_update_cache",
    "reader_fill_cache",
    "writer_fill_cache",
    "compute_copy",
    "reader_tiles",
}


def _result(mock_session, name: str) -> dict:
    board, _ = programs.CATALOGUE[name]
    return mock_session.board(board)["programs"][name]


@pytest.mark.parametrize("name", list(programs.CATALOGUE))
def test_ttnn_accepts_the_program(mock_session, name):
    r = _result(mock_session, name)
    assert r["status"] == "accepted", f"{name}: ttnn rejected the program:\n{r['error']}"
    assert r["launches"], f"{name}: the call launched nothing through ttnn.generic_op"


@pytest.mark.parametrize("name", list(programs.CATALOGUE))
def test_jit_environment_matches_the_emulator(mock_session, name):
    r = _result(mock_session, name)
    if r["status"] != "accepted":
        pytest.skip("rejected by ttnn (test_ttnn_accepts_the_program fails)")
    assert "parity_error" not in r, r.get("parity_error")
    problems = []
    for k in r["parity"]:
        if k.get("not_ours"):
            continue
        # jit_parity classifies the emulator's documented differences as by_design: anything in differs,
        # including a define only one side has and no list names, is a new difference
        if k["differs"]:
            problems.append(f"{k['kernel']}: {json.dumps(k['differs'])[:2000]}")
    assert not problems, f"{name}: the JIT's build differs from the emulator's:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", list(programs.HIT_CHECKED))
def test_a_fast_path_hit_launches_what_the_full_path_launched(mock_session, name):
    """A decode loop's repeated call (same tensors, same output) takes the op's fast path: it must hand
    ``ttnn.generic_op`` the io tensors the full path handed it, in the same order, and the same launchable object (the
    cached one: its runtime args hold those tensors' addresses). A full-path call makes a new launchable, so the same
    object also shows the call was a hit."""
    r = _result(mock_session, name)
    assert r["status"] == "accepted", r["error"]
    check = r["hit_check"]
    assert len(check["hit"]) == programs.HIT_CHECKED[name], check
    assert check["hit"] == check["full"], f"{name}: the hit launched {check['hit']}, the full path {check['full']}"


def test_every_package_kernel_was_compared(mock_session):
    compared = set()
    for board in ("n150", "n300", "t3k"):
        for r in mock_session.board(board)["programs"].values():
            compared |= {k["kernel"].split("/")[0] for k in r.get("parity", []) if not k.get("not_ours")}
    assert PACKAGE_KERNELS <= compared, f"never compared: {sorted(PACKAGE_KERNELS - compared)}"


def test_the_stand_in_recorded_every_build_with_riscv_elf_outputs(mock_session):
    mock_session.board("n150")
    log = mock_session.workers["n150"].log
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    builds = [e for e in entries if e.get("kind") in ("compile", "link")]
    assert builds, "the stand-in compiler saw no builds"
    for e in builds:
        data = bytes.fromhex(e["elf_header"])
        # ELF, 32-bit, little-endian, machine EM_RISCV (0xF3)
        assert data[:6] == b"\x7fELF\x01\x01" and data[18:20] == b"\xf3\x00", f"{e['output']}: not a RISC-V ELF32"
        # the JIT renamed its temporary output (<name>.<pid>_<n>.o) to the name it loads
        final = Path(re.sub(r"\.\d+_\d+(\.\w+)$", r"\1", e["output"]))
        assert final.is_file(), f"{final}: the JIT's output is missing"
        if e["kind"] == "compile":
            assert e["generated"] and (Path(e["generated"]) / "chlkc_descriptors.h").is_file(), e["output"]


def test_card_path_host_cost_per_cached_call(mock_session, record_property):
    """The numbers go to the test report and docs/RUNTIME.md (``pytest -s`` prints the table). The checks make sure
    the measurement measured cached calls (a rebuild or a recompile costs milliseconds) and that the op launches its
    descriptor keyed by ttnn's own structural hash (``custom_program_hash``, backend.seal_program_hash), so generic_op
    does not walk the descriptor per call.

    The 30 us goal is judged only on a quiet machine (1-minute load average at most QUIET_LOAD_PER_CPU per CPU before
    and after the timed calls), on the 10th percentile of the op's wall times: host work is the same every call and
    other processes only add to it, and on a shared 2-CPU machine at load 10-40 the same call's median moved by up to
    2x between runs (docs/RUNTIME.md). A loaded run records its numbers and skips the judgement, saying so."""
    r = mock_session.measure_host_cost()
    m = r["median_us"]
    for key, value in m.items():
        record_property(key, value)
    for key, value in r["cpu_median_us"].items():
        record_property(f"cpu_{key}", value)
    print(json.dumps(r, indent=1))
    print(host_cost.table(r))
    assert m["generic_op_alone"] > 0 and m["op_device_positions_output_given"] >= m["generic_op_alone"] * 0.5
    for row in ("op_device_positions", "op_device_positions_output_given", "op_device_positions_output_given_before"):
        assert m[row] < 5000, f"{row}: a cached call took {m[row]:.0f} us: not a cache hit"
    record_property("goal_us", GOAL_US)
    line = r["l1_line"]
    assert line["backend"] == line["reports"] and line["backend_no_l1"] == line["reports_no_l1"], line
    entries = r["program_cache_entries"]  # before and after each set of rows (the rows, the paged pair, the L1 output)
    assert entries[0::2] == entries[1::2], f"ttnn built programs in the timed calls: {entries}"
    for row in ("upstream_op", "upstream_paged_op", "op_upstream_arguments", "op_paged_upstream_arguments"):
        assert m[row] < 5000, f"{row}: a cached call took {m[row]:.0f} us: not a cache hit"
    keys = r["program_hash"]
    assert keys["sealed"] is not None and keys["sealed"] == keys["structural"], keys
    assert keys["unsealed"] is None, keys
    loads = [r["load_average_before"][0], r["load_average_after"][0]]
    if max(loads) > QUIET_LOAD_PER_CPU * r["cpus"]:
        pytest.skip(f"the {GOAL_US:.0f} us goal is not judged at load {loads} on {r['cpus']} CPUs (numbers recorded)")
    p10 = r["p10_us"]["op_device_positions_output_given"]
    assert p10 <= GOAL_US, f"an op cache hit (output given) took {p10:.1f} us (10th percentile), goal {GOAL_US} us"


def test_the_comparison_sees_each_kind_of_difference():
    """jit_parity.compare_kernel on a hand-made pair of builds (no runtime): each planted difference is reported in
    its category, and identical builds report none, so the parity test above cannot pass vacuously."""
    from types import SimpleNamespace

    from runtime import jit_parity

    arrays = (
        "constexpr uint8_t unpack_src_format[4] = {\n 5,6,255,255\n};\n"
        "constexpr uint8_t unpack_dst_format[4] = {\n 5,6,255,255\n};\n"
    )
    math = (
        "constexpr ckernel::MathFidelity MATH_FIDELITY = static_cast<ckernel::MathFidelity>(4);\n"
        "constexpr bool APPROX = false;\nconstexpr bool DST_ACCUM_MODE = false;\n"
        "#define DST_SYNC_MODE DstSync::SyncHalf\n"
    )
    named = '#define KERNEL_COMPILE_TIME_ARG_MAP {"a",1},{"b",2}\n'
    kernel = SimpleNamespace(defines=[("MY_DEFINE", "3")], compiler_include_paths=["/k/inc"])

    def jit(arrays=arrays, named=named, define="3"):
        risc = {"defines": {"KERNEL_COMPILE_TIME_ARGS": "7"}, "includes": ["/k", "/k/inc"], "forced_includes": []}
        return {
            "name": "k",
            "build": "k/1",
            "riscs": {"trisc0": risc, "trisc1": risc, "trisc2": risc},
            "files": {
                "chlkc_descriptors.h": arrays + math,
                "named_ct_arg_map_generated.h": named,
                "defines_generated.h": f"#define MY_DEFINE {define}\n",
            },
        }

    def emu(arrays=arrays, named=named, fidelity="4"):
        return {
            "name": "k",
            "source": "/k/k.cpp",
            "includes": ["/k", "/k/inc"],
            "defines": {
                "MY_DEFINE": "3",
                "KERNEL_COMPILE_TIME_ARGS": "7",
                "EMU_MATH_FIDELITY": fidelity,
                "EMU_MATH_APPROX_MODE": "0",
                "EMU_DST_ACCUM_MODE": "0",
                "EMU_DST_FULL_SYNC_EN": "0",
            },
            "files": {"chlkc_descriptors.h": arrays, "named_ct_arg_map_generated.h": named},
        }

    assert jit_parity.compare_kernel(jit(), emu(), kernel)["differs"] == {}
    no_ct_args = emu()
    del no_ct_args["defines"]["KERNEL_COMPILE_TIME_ARGS"]
    extra_define = emu()
    extra_define["defines"]["EMU_SOMETHING_NEW"] = "1"
    noc_mode = jit()
    noc_mode["files"]["defines_generated.h"] += "#define NOC_MODE 0\n"
    planted = {
        "cb_descriptors": (jit(), emu(arrays=arrays.replace("5,6,255", "5,7,255"))),
        "cb_descriptor_types": (jit(), emu(arrays=arrays.replace("uint8_t", "std::int32_t"))),
        "named_compile_time_args": (jit(), emu(named=named.replace('"b",2', '"b",3'))),
        "descriptor_defines": (jit(define="4"), emu()),
        "math_settings": (jit(), emu(fidelity="2")),
        "compile_time_args": (jit(), no_ct_args),
        "jit_generated_defines": (noc_mode, emu()),
        "defines_only_one_side": (jit(), extra_define),
    }
    for category, (j, e) in planted.items():
        assert category in jit_parity.compare_kernel(j, e, kernel)["differs"], category
