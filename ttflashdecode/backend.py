"""Where a program runs: Tenstorrent devices through ttnn, or the host emulator (one chip or a mesh of chips).

The op builds ``ttnn.ProgramDescriptor``s whatever the backend; a backend only supplies what differs between a card
and the emulator: putting host tensors on the device, reading them back, allocating outputs, the NOC coordinates of
worker cores, which chips need a descriptor of their own, and the launch itself.

Meshes. A tensor on a mesh has one shard per chip and reports the shard's shape, so the op plans one chip's share
(every chip's share has the same shape: one plan for all). Kernels get buffer addresses in their runtime args, so a
descriptor belongs to the addresses it was built for:

- on a card, a mesh tensor is one ``MeshBuffer`` at the same address on every device (tt-metal allocates mesh buffers
  in lock step), so one descriptor serves every chip; it launches as a ``ttnn.MeshProgramDescriptor`` over the whole
  mesh (``ttnn.generic_op`` runs a mesh workload: the program on every device of its ``MeshCoordinateRange``);
- on the emulator's mesh each chip allocates on its own, so :meth:`Backend.chip_tensors` hands out each chip's
  shards; chips whose tensors sit at the same addresses share one descriptor (the device cache keys descriptors by
  addresses), and the launch is a ``ttnn.MeshProgramDescriptor`` too: the emulator's mesh ``generic_op`` takes the
  same object ``ttnn.generic_op`` does.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

# The op package's one way to ttnn: the emulator's import of it, which sets up ttnn's environment first (every module
# here takes import_ttnn from this one).
from ttemu.ttnn_env import import_ttnn

CARD, EMULATOR, EMULATOR_MESH = "card", "emulator", "emulator_mesh"


def noc1_reader_stride(device) -> int:
    """:data:`~ttflashdecode.plan.rules.NOC1_READER_STRIDE` of ``device``'s chip (a ttnn or emulated device or
    mesh: its ``arch()``)."""
    from ttflashdecode.plan.rules import NOC1_READER_STRIDE  # noqa: PLC0415

    ttnn = import_ttnn()
    arch = "blackhole" if device.arch() == ttnn.Arch.BLACKHOLE else "wormhole_b0"
    return NOC1_READER_STRIDE[arch]


@dataclass(frozen=True)
class Backend:
    device: Any
    kind: str  # CARD (a ttnn device or MeshDevice), EMULATOR (one emulated chip) or EMULATOR_MESH

    @property
    def is_emulator(self) -> bool:
        return self.kind != CARD

    @property
    def num_chips(self) -> int:
        """Chips the device spans (a MeshDevice's devices, an emulated mesh's chips; 1 otherwise)."""
        count = getattr(self.device, "get_num_devices", None)
        return int(count()) if callable(count) else 1

    def mesh_shape(self) -> tuple[int, ...]:
        """The mesh's shape (rows, cols); (1, 1) for one chip."""
        shape = getattr(self.device, "shape", None)
        return tuple(int(d) for d in shape) if shape is not None else (1, 1)

    def grid(self) -> tuple[int, int]:
        """A chip's compute grid (every chip of a mesh has the same)."""
        g = self.device.compute_with_storage_grid_size()
        return (g.x, g.y)

    def noc1_reader_stride(self) -> int:
        """The chip's :data:`~ttflashdecode.plan.rules.NOC1_READER_STRIDE`: a DRAM-bound decode program reads
        over NoC 1 on every this-many-th reading core."""
        return noc1_reader_stride(self.device)

    def noc_coord(self, core: tuple[int, int]) -> tuple[int, int]:
        """NOC (virtual) coordinates of logical worker core ``core``, as kernels address it (the same on every chip of
        a mesh: Wormhole's translated coordinates)."""
        ttnn = import_ttnn()
        c = self.device.worker_core_from_logical_core(ttnn.CoreCoord(*core))
        return (c.x, c.y)

    def from_torch(self, tensor: torch.Tensor, dtype, layout):
        """A host tensor on the device, replicated on every chip of a mesh (positions and page tables the op uploads
        are the same for every chip's share of the heads)."""
        ttnn = import_ttnn()
        if self.is_emulator:
            return self.device.from_torch(tensor, dtype=dtype, layout=layout)
        mapper = ttnn.replicate_tensor_to_mesh_mapper(self.device) if self.num_chips > 1 else None
        return ttnn.from_torch(
            tensor,
            dtype=dtype,
            layout=layout,
            device=self.device,
            memory_config=ttnn.DRAM_MEMORY_CONFIG,
            mesh_mapper=mapper,
        )

    def int32_tensor(self, values, shape: list[int]):
        """Host int32 ``values`` (positions, page-table rows) as a row-major device tensor of ``shape``, the layout
        the kernels read them in."""
        ttnn = import_ttnn()
        host = torch.tensor(values, dtype=torch.int32).reshape(shape)
        return self.from_torch(host, ttnn.int32, ttnn.ROW_MAJOR_LAYOUT)

    def to_torch_per_chip(self, tensor) -> list[torch.Tensor]:
        """Each chip's copy of a device tensor read back (``validate_device_tensors`` checks the values every chip's
        kernels will read)."""
        if self.kind == EMULATOR_MESH:
            return self.device.shards_to_torch(tensor)
        if self.kind == EMULATOR:
            return [self.device.to_torch(tensor)]
        ttnn = import_ttnn()
        if self.num_chips > 1:
            return [ttnn.to_torch(t) for t in ttnn.get_device_tensors(tensor)]
        return [ttnn.to_torch(tensor)]

    def to_torch(self, tensor) -> torch.Tensor:
        """A device tensor read back (chip 0's copy on a mesh: see :meth:`to_torch_per_chip`)."""
        return self.to_torch_per_chip(tensor)[0]

    def allocate(self, shape, dtype, layout, memory_config=None):
        """A device tensor of (per chip) ``shape``; on a mesh one per chip."""
        ttnn = import_ttnn()
        memory_config = ttnn.DRAM_MEMORY_CONFIG if memory_config is None else memory_config
        if self.is_emulator:
            if memory_config == ttnn.DRAM_MEMORY_CONFIG:
                return self.device.allocate(shape, dtype, layout)
            return self.device.allocate(shape, dtype, layout, memory_config=memory_config)
        return ttnn.allocate_tensor_on_device(ttnn.Shape(list(shape)), dtype, layout, self.device, memory_config)

    def output_allocator(self, shape, dtype, layout, memory_config=None):
        """``new(like)``: :meth:`allocate` of these arguments followed by :meth:`share_topology` with ``like``, with
        everything but the allocation worked out here, once. The fast path keeps it and calls it on every hit whose
        output the op allocates: resolving the shape, memory config and chip count per call cost ~2-4 us of a hit's
        ~9 us above ``ttnn.allocate_tensor_on_device`` alone on a mock N150 (tests/runtime/host_cost.py: the rows with
        generic_op a no-op)."""
        ttnn = import_ttnn()
        memory_config = ttnn.DRAM_MEMORY_CONFIG if memory_config is None else memory_config
        if self.is_emulator:
            device, shape = self.device, list(shape)
            if memory_config == ttnn.DRAM_MEMORY_CONFIG:  # the emulator's default placement

                def allocate(like=None):
                    return device.allocate(shape, dtype, layout)

            else:

                def allocate(like=None):
                    return device.allocate(shape, dtype, layout, memory_config=memory_config)

        else:
            # The first output is allocated through ttnn's public op from the call's shape, dtype, layout and memory
            # config; every later one from that tensor's own TensorSpec through the C++ function under ttnn's Python
            # op wrapper (``FastOperation.function``): the same spec, so the same allocation, without rebuilding the
            # spec from four arguments and without the wrapper's per-call work (its runtime-mode and graph-recording
            # checks), ~2 us of ~7 on a mock N150 (tests/runtime/host_cost.py). The allocation is internal to the
            # op, as upstream's op allocates its output in C++, not through a Python op.
            allocate_public = ttnn.allocate_tensor_on_device
            allocate_spec = getattr(allocate_public, "function", allocate_public)
            spec_shape, device = ttnn.Shape(list(shape)), self.device
            made = []  # [the first output's TensorSpec]

            def allocate(like=None):
                if made:
                    return allocate_spec(made[0], device)
                tensor = allocate_public(spec_shape, dtype, layout, device, memory_config)
                made.append(tensor.spec)
                return tensor

        if self.num_chips == 1:
            return allocate  # ``like`` says nothing on one chip (one frame less per hit)

        def allocate_like(like):
            tensor = allocate()
            tensor.update_tensor_topology(like.tensor_topology())
            return tensor

        return allocate_like

    def share_topology(self, tensor, like) -> None:
        """Record on a new output of a mesh that its chips hold the pieces ``like``'s chips hold (the same dims split
        the same way), so its topology says how the chips' shards make the whole tensor."""
        if self.num_chips > 1:
            tensor.update_tensor_topology(like.tensor_topology())

    def lowest_l1_buffer_address(self) -> int | None:
        """Lowest address of a live L1 buffer on the device (over every chip of a mesh), None if there is none. A
        program's circular buffers must end below it (tt-metal refuses the launch otherwise)."""
        if self.is_emulator:
            return self.device.lowest_l1_buffer_address()
        ttnn = import_ttnn()
        l1 = ttnn.BufferType.L1
        base = int(ttnn.get_allocator_base_address(self.device, l1))
        return _lowest_l1_buffer(ttnn.get_memory_view(self.device, l1), base)

    def l1_line_reader(self) -> Callable[..., int | None]:
        """:meth:`lowest_l1_buffer_address` as a function, with what it needs looked up once: the fast path reads the
        line on every hit (a wrapper makes its reader when it is made). It takes an optional ``witness``: the address
        of an L1 buffer the caller knows is live and placed by the device's L1 allocator (a tensor of the call, not
        per-core allocated), which lets a card answer from the allocator's totals alone (:func:`_l1_line_from_totals`);
        the answer is the same with or without it."""
        if self.is_emulator:
            lowest = self.device.lowest_l1_buffer_address
            return lambda witness=None: lowest()
        ttnn = import_ttnn()
        device, l1 = self.device, ttnn.BufferType.L1
        try:  # ttnn.get_memory_view is a Python function around this C++ one: one frame less a hit
            memory_view = ttnn._ttnn.device.GetMemoryView
        except AttributeError:
            memory_view = ttnn.get_memory_view
        # Where the allocator's region ends (absolute): fixed for the device's life (its worker L1 and L1_SMALL sizes
        # are set when it opens; a sub-device manager shrinks the region from the bottom only, FreeListOpt::shrink_size)
        blocks = memory_view(device, l1).block_table
        base = int(ttnn.get_allocator_base_address(device, l1))
        top = base + max(int(b["address"]) + int(b["size"]) for b in blocks) if blocks else -1

        def lowest_l1_buffer_address(witness=None) -> int | None:
            view = memory_view(device, l1)
            allocated = view.total_bytes_allocated_per_bank
            if not allocated:  # no L1 buffer at all: the totals answer
                return None
            if witness == top - allocated and _l1_line_from_totals(view, allocated):
                return witness
            return _lowest_l1_buffer(view, base)

        return lowest_l1_buffer_address

    def chip_tensors(self, tensors: list) -> list[list]:
        """The tensors each descriptor is built over: one list per chip of an emulated mesh (chip i's shards, in the
        mesh's row-major order), else one list (a card's mesh tensors sit at one address on every chip)."""
        if self.kind != EMULATOR_MESH:
            return [list(tensors)]
        return [[None if t is None else t.shards[i] for t in tensors] for i in range(self.num_chips)]

    def launch(self, io_tensors: list, programs) -> Any:
        """Runs ``programs`` (one per list of :meth:`chip_tensors`, or one program for every chip) over
        ``io_tensors`` (outputs last). Returns the emulator's run statistics (a ``MeshStats`` on a mesh), or None on a
        card."""
        if not isinstance(programs, list):
            programs = [programs] * len(self.chip_tensors(io_tensors))
        return self.run(io_tensors, self.launchable(programs))

    def launchable(self, programs: list):
        """What ``generic_op`` takes for ``programs`` (one per list of :meth:`chip_tensors`): the program itself on one
        chip, else a ``ttnn.MeshProgramDescriptor``. Made once per set of programs: the op's fast path keeps it.
        Each program gets its program-cache key first (:func:`seal_program_hash`)."""
        for program in programs:
            seal_program_hash(program)
        if self.kind == EMULATOR:
            (program,) = programs
            return program
        mesh_program = self.mesh_program(programs)
        return programs[0] if mesh_program is None else mesh_program

    def run(self, io_tensors: list, launchable) -> Any:
        """One ``generic_op`` of a :meth:`launchable` over ``io_tensors`` (outputs last): the emulator's statistics, or
        None on a card."""
        if self.is_emulator:
            return self.device.generic_op(io_tensors, launchable)
        import_ttnn().generic_op(io_tensors, launchable)
        return None

    def card_launcher(self) -> Callable[[list, Any], None]:
        """``launch(io_tensors, launchable)``: :meth:`run` on a card, for the fast path's hits (made once per pipeline).

        ``ttnn.generic_op`` is ttnn's Python op wrapper (``FastOperation``) around the C++ op; when the wrapper would
        do nothing but call it -- fast runtime mode, no comparison mode or op logging, no Python I/O recording of a
        graph, no ``queue_id`` -- it costs ~1 us of a hit (11.0 against 10.0 us p10 on a mock N150, the op's
        descriptor), and the launcher calls the C++ op itself. Otherwise it calls ``ttnn.generic_op`` as it stands at
        the call (the wrapper then logs, compares or records the launch; a test may have replaced it), as does a ttnn
        whose wrapper lacks what is read here."""
        ttnn = import_ttnn()
        wrapper = ttnn.generic_op
        function = getattr(wrapper, "function", None)
        requires_slow_runtime = getattr(wrapper, "_requires_slow_runtime", None)
        recording = getattr(getattr(ttnn, "graph", None), "is_python_io_recording_enabled", None)
        if function is None or requires_slow_runtime is None or recording is None:

            def launch(io_tensors: list, launchable) -> None:
                ttnn.generic_op(io_tensors, launchable)

            return launch

        def launch(io_tensors: list, launchable) -> None:
            if ttnn.generic_op is wrapper and not recording() and not requires_slow_runtime():
                function(io_tensors, launchable)
            else:
                ttnn.generic_op(io_tensors, launchable)

        return launch

    def address_key(self, tensor):
        """Where a device tensor is, as program descriptors see it: its buffer address, or on an emulated mesh each
        chip's (chips allocate on their own there)."""
        if self.kind == EMULATOR_MESH:
            return tuple(shard.buffer_address() for shard in tensor.shards)
        return tensor.buffer_address()

    def is_capturing(self) -> bool:
        """Whether a trace is being captured on the device (``ttnn.begin_trace_capture``, or the emulator's): a call
        made then must not read from or write to the device from the host."""
        if self.is_emulator:
            from ttemu import trace  # noqa: PLC0415

            return trace.is_trace_capture_active(self.device)
        return bool(import_ttnn().is_trace_capture_active(self.device))

    def refuse_upload_in_capture(self, argument: str, device_argument: str) -> None:
        """Raises, naming ``argument``, when its host values would be uploaded while a trace is captured: tt-metal
        refuses host writes then ("Writes are not supported during trace capture"). ``device_argument``: what to pass
        instead."""
        if self.is_capturing():
            raise ValueError(
                f"{argument}: host values would be uploaded inside a trace capture, which cannot hold a host write; "
                f"pass a device tensor ({device_argument}) written before the capture or between replays"
            )

    def mesh_program(self, programs: list):
        """The ``ttnn.MeshProgramDescriptor`` of a launch: one program over the whole mesh when every chip has the
        same (the same descriptor object: the chips' tensors share their addresses), else each chip's program on its
        own coordinate. None for a card device that is not a MeshDevice (no mesh shape)."""
        ttnn = import_ttnn()
        if self.kind == CARD and getattr(self.device, "shape", None) is None:
            return None
        rows, cols = self.mesh_shape()
        if all(p is programs[0] for p in programs):
            return ttnn.MeshProgramDescriptor({ttnn.MeshCoordinateRange(ttnn.MeshShape(rows, cols)): programs[0]})
        ranges = {}
        for i, program in enumerate(programs):
            coord = ttnn.MeshCoordinate(i // cols, i % cols)
            ranges[ttnn.MeshCoordinateRange(coord, coord)] = program
        return ttnn.MeshProgramDescriptor(ranges)


def _lowest_l1_buffer(view, base: int) -> int | None:
    """The lowest live L1 buffer of a card's device from the L1 allocator's memory view: its block table (offsets
    from the allocator's base address ``base``), not ttnn.reports.get_buffers, which lists every buffer of the device
    and took ~670 us with one 8 MiB DRAM buffer on a mock N150 (docs/RUNTIME.md). No L1 buffer at all (a decode loop
    over DRAM tensors): the view's total answers without converting its block table to Python (~1 us against ~3 us)."""
    if not view.total_bytes_allocated_per_bank:
        return None
    used = [int(b["address"]) for b in view.block_table if b["allocated"] == "yes"]
    if not used:
        return None
    return base + min(used)


def _l1_line_from_totals(view, allocated: int) -> bool:
    """Whether a live L1 buffer at ``top - allocated`` (the allocator region's end less its allocated bytes per bank)
    is the lowest live L1 buffer, read off the memory view's totals without its block table (whose conversion to
    Python dicts costs ~2-3 us a call on a mock N150, tests/runtime/host_cost.py).

    It is when the free bytes form one block (total free == largest free block, F) and at most half the region is
    allocated (allocated A <= F). The region is [s, top) (s > 0 once a sub-device manager shrank it), so the free
    block is [a, a + F) for some a >= s, and it must leave the live buffer at w = top - A allocated: either it ends at
    or below w, a + F <= top - A = s + F, so a = s and every byte below w is free; or it starts above w, and then
    F <= top - a < top - w = A, which A <= F rules out."""
    free = view.total_bytes_free_per_bank
    return allocated <= free == view.largest_contiguous_bytes_free_per_bank


def seal_program_hash(program) -> None:
    """Set ``program.custom_program_hash`` to ttnn's own structural hash of the descriptor, once.

    ``ttnn.generic_op`` keys its program cache by ``compute_program_descriptor_hash`` of each descriptor: the kernel
    sources, core ranges, compile-time and named compile-time args, defines, configs, runtime-arg counts, CB sizes,
    formats and page sizes, semaphores -- everything but runtime-arg values and buffer addresses, which it copies from
    the caller's descriptor into the cached program on every hit (tt-metal: generic_op_device_operation.cpp,
    ``apply_descriptor_runtime_args`` in program_descriptors.hpp). Without a custom hash it walks the whole descriptor
    on every call (16-20 us on a mock N150 for the Llama-3.1-8B decode descriptor: docs/RUNTIME.md); with one it
    takes the value as the key. The value set here is that same walk, done once when the descriptor is made (the op
    keeps and relaunches the descriptor), so the key is the one ttnn would compute per call, never a key of our own
    that could name a stale program. A descriptor must not change after it is sealed except in runtime-arg values
    (the emulator refuses a launch whose descriptor no longer has the structure its hash was first seen with)."""
    if program.custom_program_hash is None:
        program.custom_program_hash = import_ttnn().compute_program_descriptor_hash(program)


def backend_of(tensor) -> Backend:
    """The backend that owns ``tensor`` (which must live on a device, a mesh or the emulator)."""
    device = tensor.device() if callable(getattr(tensor, "device", None)) else None
    if device is None:
        raise ValueError(
            f"q: expected a tensor on a device or on the emulator (ttnn.from_torch(..., device=...) or "
            f"emulator device .from_torch(...)), got a host tensor of type {type(tensor).__name__}"
        )
    return backend_for(device)


def backend_for(device) -> Backend:
    """The backend of ``device``: a ttnn device or MeshDevice, an emulated chip or an emulated mesh."""
    ttemu = emulator()
    if isinstance(device, ttemu.EmuMeshDevice):
        return Backend(device=device, kind=EMULATOR_MESH)
    if isinstance(device, ttemu.EmuDevice):
        return Backend(device=device, kind=EMULATOR)
    return Backend(device=device, kind=CARD)


# ---- the emulator ----------------------------------------------------------------------------------------------------
# ttemu is a package of its own and imports nothing of this one. The op package reaches it only here (import_ttnn above
# and these functions; tests/test_package_import.py checks no other module imports it), so a change of the emulator's
# layout is met in this one module.


def emulator():
    """The ttemu package: its devices (``open_device``, ``EmuDevice``, ``EmuTensor``, meshes), imported on first use."""
    import ttemu  # noqa: PLC0415 - deferred: the emulator is only needed when used

    return ttemu


def emulator_grids() -> dict[str, tuple[int, int]]:
    """Each emulated board's compute grid (``ttemu.arch.GRIDS``)."""
    from ttemu.arch import GRIDS  # noqa: PLC0415

    return GRIDS


def emulator_root() -> Path:
    """The emulator package's folder, found without importing it (its timing model's sources key the tuner's cache)."""
    return Path(importlib.util.find_spec("ttemu").origin).parent


def wheel_kernel_source(relative_path: str) -> Path:
    """A kernel source of the installed ttnn wheel, found where the emulator's compiler finds it
    (``ttemu.jit_env.kernel_source``): read in place, never copied."""
    from ttemu.jit_env import kernel_source  # noqa: PLC0415

    return kernel_source(relative_path)
