"""The emulator under repetition (issue 29: a KernelFault now and then in a decode loop), short form.

The cause was shared state between cores: g++ binds function-local statics of inline functions STB_GNU_UNIQUE, which
the loader unifies across the per-core copies of a kernel's library, so every core's compute thread filled the timing
hooks' one SFPU memo (a std::unordered_map) at once. Kernels are now built with ``-fno-gnu-unique``. Here: a kernel's
statics are per core (the deterministic check), repeated calls of the stress workloads under a spinning competitor
neither fault nor change a bit (perf/stress_emulator.py is the long form, with the sanitizer builds), a fault names
its kernel source line, and TTFD_EMU_SANITIZE is checked.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

import ttemu
from tests_support_paths import REPO
from ttemu import EmulatorError, KernelFault, SanitizerReport, arch
from ttemu.build import sanitizer
from ttemu.ttnn_env import import_ttnn

from .emu_helpers import cb, crs, kernel, rect

ttnn = import_ttnn()


def _stress_module():
    spec = importlib.util.spec_from_file_location("stress_emulator", REPO / "perf" / "stress_emulator.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def dev():
    d = ttemu.open_device("n150")
    yield d
    d.close()


def test_kernel_statics_are_per_core(dev):
    """16 cores each count 2,000 in an inline function's static: every core must read 2,000 (one object shared by
    the process would give some core more)."""
    cores = [(x, y) for y in range(2) for x in range(8)]
    n = 2000
    out = dev.allocate((32, 32 * len(cores)), ttnn.bfloat16, ttnn.TILE_LAYOUT)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kernel(
                "per_core_static.cpp",
                rect(0, 0, 7, 1),
                out.tensor_accessor_args(),
                {c: [out.buffer_address(), i, n] for i, c in enumerate(cores)},
                config=ttnn.WriterConfigDescriptor(),
            )
        ],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 2048, 1, rect(0, 0, 7, 1))],
    )
    dev.generic_op([out], pd)
    words = dev._read_pages(out)
    counts = [int.from_bytes(words[i * 2048 : i * 2048 + 4], "little") for i in range(len(cores))]
    assert counts == [n] * len(cores), f"per-core counts {counts}: a kernel static is shared between cores"


def test_repeated_calls_neither_fault_nor_differ():
    """The stress loop's short form: our decode and upstream's sdpa_decode kernels, 16 calls each, one spinning
    competitor; every output bit-identical to the first (which matches the golden)."""
    stress = _stress_module()
    tallies = stress.run_stress(["decode", "upstream"], 32, load=1, report=lambda s: None)
    for name, t in tallies.items():
        assert t.calls == 16 and t.faults == 0, f"{name}: {t.faults} of {t.calls} calls failed: {t.first_messages}"


def test_fault_names_the_kernel_source_line(dev):
    """A kernel's bad store faults with the core, the kernel and the kernel's source line, and the backtrace."""
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("oob_l1.cpp", crs((2, 3)), rt={(2, 3): [4096]})],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 2048, 2, crs((2, 3)))],
    )
    with pytest.raises(KernelFault) as ei:
        dev.generic_op([], pd)
    e = ei.value
    assert e.location == "ttemu/tests/kernels/dataflow/oob_l1.cpp:7", e.location
    assert "at ttemu/tests/kernels/dataflow/oob_l1.cpp:7]" in str(e)
    assert "backtrace:" in e.details and "in kernel_main()" in e.details


def test_api_fault_names_the_calling_line(dev):
    """An API rule broken (a NOC address outside every live buffer) names the kernel line that made the call."""
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("oob_noc.cpp", crs((7, 1)), [1], {(7, 1): [0, 0]})],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 2048, 1, crs((7, 1)))],
    )
    with pytest.raises(KernelFault) as ei:
        dev.generic_op([], pd)
    assert "neither a worker core" in str(ei.value)
    assert ei.value.location == "ttemu/tests/kernels/dataflow/oob_noc.cpp:17", str(ei.value)


def test_sanitizer_setting_is_checked(monkeypatch):
    monkeypatch.setenv("TTFD_EMU_SANITIZE", "memory")
    with pytest.raises(EmulatorError, match=r"TTFD_EMU_SANITIZE='memory'.*address, thread"):
        sanitizer()
    monkeypatch.setenv("TTFD_EMU_SANITIZE", "thread")
    assert sanitizer() == "thread"


@pytest.mark.slow  # builds the ThreadSanitizer runtime (about a minute); perf/stress_emulator.py --sanitize runs it on
# the real programs
def test_thread_sanitizer_reports_a_kernel_race(dev, monkeypatch):
    """A kernel reading L1 that another core's NOC writes without a semaphore: the TSan build reports the race and
    names the kernel line."""
    monkeypatch.setenv("TTFD_EMU_SANITIZE", "thread")
    peer = (arch.TRANSLATED_X0 + 1, arch.TRANSLATED_Y0)  # NOC coordinates of logical core (1, 0)
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kernel("racy_peek.cpp", crs((0, 0)), [0], {(0, 0): list(peer)}, config=ttnn.WriterConfigDescriptor()),
            kernel("racy_peek.cpp", crs((1, 0)), [1], {(1, 0): [0, 0]}),
        ],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 2048, 1, crs((0, 0), (1, 0)))],
    )
    with pytest.raises(SanitizerReport) as ei:
        dev.generic_op([], pd)
    assert "ThreadSanitizer: data race" in str(ei.value)
    assert "racy_peek.cpp:16" in ei.value.report, ei.value.report[:3000]
