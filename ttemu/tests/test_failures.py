"""Failure reporting of the host emulator: hangs, kernel faults, compile errors and descriptor validation."""

from __future__ import annotations

import time

import pytest
import torch

import ttemu
from ttemu import EmulatorError, EmulatorHang, KernelCompileError, KernelFault
from ttemu.ttnn_env import import_ttnn

from .emu_helpers import cb, crs, kernel, sem

ttnn = import_ttnn()


@pytest.fixture(scope="module")
def dev():
    ttemu.build.runtime_dir()  # build the runtime up front: the hang tests time generic_op
    d = ttemu.open_device("n150")
    yield d
    d.close()


def test_deadlock_cb_wait_front(dev):
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("hang_cb.cpp", crs((1, 2)))], semaphores=[], cbs=[cb(3, ttnn.bfloat16, 2048, 2, crs((1, 2)))]
    )
    t0 = time.monotonic()
    with pytest.raises(EmulatorHang) as ei:
        dev.generic_op([], pd)
    assert time.monotonic() - t0 < 5
    e = ei.value
    assert e.core == "1,2" and "hang_cb" in e.kernel
    assert "cb_wait_front(cb=3" in str(e) and "received 0" in str(e)


def test_deadlock_semaphore(dev):
    pd = ttnn.ProgramDescriptor(
        kernels=[
            kernel("hang_sem.cpp", crs((5, 0)), [2], config=ttnn.WriterConfigDescriptor()),
            kernel("hang_cb.cpp", crs((6, 6))),
        ],
        semaphores=[sem(2, crs((5, 0)), initial=0)],
        cbs=[cb(3, ttnn.bfloat16, 2048, 1, crs((6, 6)))],
    )
    t0 = time.monotonic()
    with pytest.raises(EmulatorHang) as ei:
        dev.generic_op([], pd)
    assert time.monotonic() - t0 < 5
    text = str(ei.value)
    assert "core (5,0) hang_sem (BRISC): noc_semaphore_wait" in text  # writer config: RISCV_0
    assert "semaphore 2" in text and "value 0, waiting for == 1" in text
    assert "core (6,6) hang_cb (NCRISC): cb_wait_front(cb=3" in text  # reader config: RISCV_1


def test_deadline(dev):
    with pytest.raises(EmulatorHang, match="deadline"):
        dev.generic_op(
            [],
            ttnn.ProgramDescriptor(
                kernels=[
                    ttnn.KernelDescriptor(
                        kernel_source='#include "api/dataflow/dataflow_api.h"\n'
                        "void kernel_main() { for (;;) poll_yield_loop: ; }",
                        source_type=ttnn.KernelDescriptor.SourceType.SOURCE_CODE,
                        core_ranges=crs((0, 0)),
                        config=ttnn.ReaderConfigDescriptor(),
                    )
                ],
                semaphores=[],
                cbs=[],
            ),
            deadline_s=1.0,
        )


def test_deadline_counts_cpu_time_not_a_starved_wall_clock(dev):
    """A run the host starves is slow, not hung: the deadline counts the CPU time the run received (a stress run at
    load average 90 once passed a 120 s wall-clock deadline with every kernel still making progress). Stand-in for
    starvation: a kernel that sleeps for three times the deadline without using CPU finishes; the spinning kernel of
    test_deadline, which burns CPU, still passes it."""
    t0 = time.monotonic()
    dev.generic_op(
        [],
        ttnn.ProgramDescriptor(
            kernels=[
                ttnn.KernelDescriptor(
                    kernel_source='#include <unistd.h>\n#include "api/dataflow/dataflow_api.h"\n'
                    "void kernel_main() { usleep(1500000); }",
                    source_type=ttnn.KernelDescriptor.SourceType.SOURCE_CODE,
                    core_ranges=crs((0, 0)),
                    config=ttnn.ReaderConfigDescriptor(),
                )
            ],
            semaphores=[],
            cbs=[],
        ),
        deadline_s=0.5,
    )
    assert time.monotonic() - t0 >= 1.5


def test_out_of_bounds_l1_pointer_write(dev):
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("oob_l1.cpp", crs((2, 3)), rt={(2, 3): [4096]})],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 2048, 2, crs((2, 3)))],
    )
    with pytest.raises(KernelFault) as ei:
        dev.generic_op([], pd)
    e = ei.value
    assert e.core == "2,3" and "oob_l1" in e.kernel
    assert "SIGSEGV" in str(e) and "L1 of core (2,3)" in str(e) and "unallocated L1" in str(e)


@pytest.mark.parametrize(
    "mode,expect",
    [
        (0, "not inside the pages of any live DRAM buffer"),
        (1, "neither a worker core"),
        (2, "past the end of L1"),
    ],
)
def test_bad_noc_addresses(dev, mode, expect):
    src = dev.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("oob_noc.cpp", crs((7, 1)), [mode], {(7, 1): [src.buffer_address(), src.buffer_num_pages()]})],
        semaphores=[],
        cbs=[cb(0, ttnn.bfloat16, 2048, 1, crs((7, 1)))],
    )
    with pytest.raises(KernelFault) as ei:
        dev.generic_op([src], pd)
    assert ei.value.core == "7,1" and "oob_noc" in ei.value.kernel
    assert expect in str(ei.value) and "0x" in str(ei.value)
    src.deallocate()


def test_compile_error(dev):
    pd = ttnn.ProgramDescriptor(kernels=[kernel("syntax_error.cpp", crs((0, 0)))], semaphores=[], cbs=[])
    with pytest.raises(KernelCompileError) as ei:
        dev.generic_op([], pd)
    assert ei.value.kernel_path.endswith("syntax_error.cpp")
    assert "expected primary-expression" in ei.value.compiler_output


def test_runtime_arg_index_out_of_range(dev):
    pd = ttnn.ProgramDescriptor(
        kernels=[kernel("oob_l1.cpp", crs((0, 1)))], semaphores=[], cbs=[cb(0, ttnn.bfloat16, 2048, 1, crs((0, 1)))]
    )
    with pytest.raises(KernelFault, match=r"get_arg_val\(0\): only 0 runtime args"):
        dev.generic_op([], pd)


def test_validation_errors(dev):
    with pytest.raises(EmulatorError, match=r"core \(8,0\) is outside the 8x8"):
        dev.generic_op([], ttnn.ProgramDescriptor(kernels=[kernel("hang_cb.cpp", crs((8, 0)))], semaphores=[], cbs=[]))
    with pytest.raises(EmulatorError, match=r"runtime args set for core\(s\) \[\(3, 3\)\]"):
        dev.generic_op(
            [],
            ttnn.ProgramDescriptor(
                kernels=[kernel("hang_cb.cpp", crs((0, 0)), rt={(3, 3): [1]})], semaphores=[], cbs=[]
            ),
        )
    with pytest.raises(EmulatorError, match="CB index 32 out of range"):
        dev.generic_op(
            [], ttnn.ProgramDescriptor(kernels=[], semaphores=[], cbs=[cb(32, ttnn.bfloat16, 2048, 1, crs((0, 0)))])
        )
    with pytest.raises(EmulatorError, match=r"indices \[5\]\): L1 overflow"):
        dev.generic_op(
            [],
            ttnn.ProgramDescriptor(
                kernels=[],
                semaphores=[],
                cbs=[cb(4, ttnn.bfloat16, 2048, 300, crs((0, 0))), cb(5, ttnn.bfloat16, 2048, 400, crs((0, 0)))],
            ),
        )


def test_wall_backstop_kills_only_a_child_that_outlives_it():
    """The parent's wall-clock backstop (runtime._wait): a child still running when it expires is killed and reported
    as such; a child that exits first keeps its own exit code."""
    import subprocess

    from ttemu.runtime import _wait

    t0 = time.monotonic()
    assert _wait(subprocess.Popen(["sleep", "30"]), 0.2) == (-9, True)
    assert time.monotonic() - t0 < 5
    t0 = time.monotonic()
    assert _wait(subprocess.Popen(["sh", "-c", "exit 3"]), 30) == (3, False)
    assert time.monotonic() - t0 < 5
