"""ttemu, a Tenstorrent program emulator with a timing model: runs tt-metal kernels (as given to ``ttnn.generic_op`` in
a ProgramDescriptor) on an emulated Wormhole B0 chip (or Blackhole, or a mesh of chips) on the host CPU.

Kernels are compiled with the host g++ against the emulator's implementation
of the tt-metal kernel API (``include/``), every core gets a real L1 image, circular buffers, semaphores, and a NOC that
moves bytes between L1s and 12 interleaved DRAM banks; the compute API reproduces the tile math and data formats.
Tensors are DRAM interleaved, L1 interleaved (``memory_config=ttnn.L1_MEMORY_CONFIG``: pages round-robin over one L1
bank per compute core, in tt-metal's bank order) or L1 HEIGHT_SHARDED (``memory_config=`` a ttnn.MemoryConfig with a
ShardSpec); L1 data stays in the cores' L1 across programs. A timing model (docs/TIMING.md) gives every run a modelled
duration. Each program runs in a child process, so a crashing kernel raises ``KernelFault`` instead of killing Python;
deadlocks raise ``EmulatorHang`` with what each thread waits for. ``EmulatorStats`` reports bytes per DRAM bank, NOC
traffic per core pair, per-page DRAM read/write counts of every buffer (for L1 buffers: bytes the NOC moved into / out
of each page), CB high-water marks and compute counters.

    import ttemu
    dev = ttemu.open_device(board="n150")
    t = dev.from_torch(x, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT)
    stats = dev.generic_op([t, out], program_descriptor)
    y = dev.to_torch(out)

Meshes of chips (N300, T3K, Galaxy; :mod:`.mesh`): ``ttemu.open_mesh_device(board="t3k")`` has ttnn's MeshDevice
surface, one emulated chip per mesh coordinate, chips running their programs concurrently; ``ShardTensorToMesh``,
``ShardTensor2dMesh``, ``ReplicateTensorToMesh``, ``ConcatMeshToTensor`` and ``ConcatMesh2dToTensor`` map host tensors
onto it and back as ttnn's mappers do.

Traces (:mod:`.trace`): ``begin_trace_capture`` / ``end_trace_capture`` / ``execute_trace`` / ``release_trace`` with
ttnn's call shapes; captured programs are recorded (not run) and replayed over the same buffers.
"""

import importlib

# Public name -> the module defining it. Loaded on first use (PEP 562), so that ``import ttemu.ttnn_env`` (the ttnn
# environment alone, what a package built on the emulator imports everywhere) does not load the emulator itself.
_EXPORTS = {
    "compile_cache_stats": "compiler",
    "reset_compile_cache_stats": "compiler",
    "EmuDevice": "device",
    "open_device": "device",
    "EmulatorError": "errors",
    "EmulatorHang": "errors",
    "KernelCompileError": "errors",
    "KernelFault": "errors",
    "SanitizerReport": "errors",
    "ConcatMesh2dToTensor": "mesh",
    "ConcatMeshToTensor": "mesh",
    "EmuMeshDevice": "mesh",
    "EmuMeshTensor": "mesh",
    "MeshStats": "mesh",
    "ReplicateTensorToMesh": "mesh",
    "ShardTensor2dMesh": "mesh",
    "ShardTensorToMesh": "mesh",
    "open_mesh_device": "mesh",
    "EmulatorStats": "stats",
    "EmuTensor": "tensor",
    "begin_trace_capture": "trace",
    "end_trace_capture": "trace",
    "execute_trace": "trace",
    "get_trace": "trace",
    "is_trace_capture_active": "trace",
    "release_trace": "trace",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """A public name (or a submodule, ``ttemu.timing``) imported on first use."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
