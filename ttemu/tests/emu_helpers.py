"""Helpers for emulator tests: kernel descriptors for the test kernels in kernels/dataflow/."""

from __future__ import annotations

from pathlib import Path

from ttemu.ttnn_env import import_ttnn

ttnn = import_ttnn()

KERNELS = Path(__file__).resolve().parent / "kernels" / "dataflow"


def crs(*cores):
    return ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(x, y), ttnn.CoreCoord(x, y)) for x, y in cores])


def rect(x0, y0, x1, y1):
    return ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(x0, y0), ttnn.CoreCoord(x1, y1))])


def kernel(name, cores, ct=(), rt=None, config=None, crta=()):
    return ttnn.KernelDescriptor(
        kernel_source=str(KERNELS / name),
        core_ranges=cores,
        compile_time_args=list(ct),
        runtime_args=[(ttnn.CoreCoord(x, y), list(a)) for (x, y), a in (rt or {}).items()],
        common_runtime_args=list(crta),
        config=config if config is not None else ttnn.ReaderConfigDescriptor(),
    )


def cb(index, dtype, page_size, num_pages, cores):
    return ttnn.CBDescriptor(
        total_size=page_size * num_pages,
        core_ranges=cores,
        format_descriptors=[ttnn.CBFormatDescriptor(buffer_index=index, data_format=dtype, page_size=page_size)],
    )


def sem(sid, cores, initial=0):
    return ttnn.SemaphoreDescriptor(id=sid, core_ranges=cores, initial_value=initial)
