"""Emulated meshes of Wormhole chips (N300, T3K, Galaxy): ttnn's ``MeshDevice`` surface over one :class:`EmuDevice`
per chip.

    import ttemu
    mesh = ttemu.open_mesh_device(board="t3k")                  # MeshShape (2, 4): ttnn's default for a T3K
    q = mesh.from_torch(q_host, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                        mesh_mapper=ttemu.ShardTensorToMesh(mesh, dim=2))    # heads over the 8 chips
    out_host = mesh.to_torch(out, mesh_composer=ttemu.ConcatMeshToTensor(mesh, dim=2))

Each chip is an emulated Wormhole with its own DRAM and L1 (an ``EmuDevice`` of an N300 card's chip: 8x7 worker grid); a
chip of a T3K is a chip of one of its four N300 cards; a Galaxy's 32 chips are unharvested (8x9 worker grid, 7x10 with
dispatch on a column). On a Galaxy, model code shards over both mesh axes (Llama-3.1-70B: kv heads over the 8 rows,
users over the 4 columns) with ``ShardTensor2dMesh`` and joins with ``ConcatMesh2dToTensor``. The chips of a mesh run
their programs concurrently: :meth:`EmuMeshDevice.generic_op` starts every chip's program at once (each emulated program
runs in its own child process) and waits for all of them, as ``ttnn.generic_op`` enqueues a mesh workload on every
device. Nothing travels between chips: the ops here split heads (and users) over chips, so no chip needs another's data.

Default mesh shapes are ttnn 0.81.1's: ``ttnn.open_mesh_device(mesh_shape=None)`` opens "the global shape of the
system mesh" (its docstring, ``ttnn/distributed/distributed.py``), which tt-metal reads from the board's mesh graph
descriptor shipped in the wheel: ``tt_metal/fabric/mesh_graph_descriptors/n300_mesh_graph_descriptor.textproto``
(``device_topology { dims: [ 1, 2 ] }``) and ``t3k_mesh_graph_descriptor.textproto`` (``dims: [ 2, 4 ]``). Model code
often reshapes a T3K to ``(1, 8)`` (tt_transformers' T3K meshes); any shape of at most the board's chips is taken.

Mesh tensors (:class:`EmuMeshTensor`) hold one :class:`EmuTensor` per chip (row-major over the mesh) and report what a
``ttnn.Tensor`` on a ``MeshDevice`` reports: the per-chip shape (ttnn's tensor spec is per device),
``tensor_topology()`` (a real ``ttnn.TensorTopology``: distribution shape, placements, mesh coordinates) and
``device()`` (the mesh). The mappers and the composer take ttnn's arguments (``ttnn.ShardTensorToMesh(mesh_device,
dim)``, ``ttnn.ReplicateTensorToMesh(mesh_device)``, ``ttnn.ConcatMeshToTensor(mesh_device, dim)``) and split or join
over all chips in row-major order, as ttnn's do (a 1-D distribution of ``get_num_devices()`` chips).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import torch

from .device import EmuDevice
from .errors import EmulatorError
from .program import build_plan
from .stats import EmulatorStats
from .tensor import EmuTensor
from .ttnn_env import import_ttnn

ttnn = import_ttnn()

# Chips and default mesh shape per board: the wheel's mesh graph descriptors (module docstring).
# galaxy: single_galaxy_mesh_graph_descriptor.textproto (``device_topology { dims: [ 8, 4 ] }``).
# p300: p300_mesh_graph_descriptor.textproto (arch BLACKHOLE, ``device_topology { dims: [ 1, 2 ] }``).
BOARD_CHIPS = {"n300": 2, "t3k": 8, "galaxy": 32, "p300": 2}
DEFAULT_MESH_SHAPE = {"n300": (1, 2), "t3k": (2, 4), "galaxy": (8, 4), "p300": (1, 2)}
# The chip each board is made of: a chip of an N300 or a T3K is an N300 card's chip (8x7 worker grid); a Galaxy's
# chips are unharvested (ttemu.arch.GRIDS["galaxy"]).
# A P300's two Blackhole chips are taken as P150 chips (ttemu/arch.py).
CHIP_BOARD = {"n300": "n300", "t3k": "n300", "galaxy": "galaxy", "p300": "p150"}


# ---- mappers and composers ----------------------------------------------------------------------------------------


def _check_mesh(mesh_device, what: str) -> EmuMeshDevice:
    if not isinstance(mesh_device, EmuMeshDevice):
        raise TypeError(
            f"{what}: mesh_device={mesh_device!r} ({type(mesh_device).__name__}): expected an emulated "
            "mesh (ttemu.open_mesh_device(...))"
        )
    return mesh_device


def _check_dim(dim, rank: int, what: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{what}: dim={dim!r} ({type(dim).__name__}): expected an int")
    if not -rank <= dim < rank:
        raise ValueError(f"{what}: dim={dim} is out of range for a rank-{rank} tensor")
    return dim % rank


@dataclass(frozen=True)
class ShardTensorToMesh:
    """Splits a host tensor along ``dim`` into ``get_num_devices()`` equal shards, shard i to chip i (row-major), as
    ``ttnn.ShardTensorToMesh(mesh_device, dim)``. A ``dim`` whose size the chips do not divide is refused, naming the
    size and the chips: uneven shards would give the chips tensors of different shapes."""

    mesh_device: EmuMeshDevice
    dim: int

    def __post_init__(self):
        _check_mesh(self.mesh_device, "ShardTensorToMesh")
        if isinstance(self.dim, bool) or not isinstance(self.dim, int):
            raise TypeError(f"ShardTensorToMesh: dim={self.dim!r} ({type(self.dim).__name__}): expected an int")

    def map(self, x: torch.Tensor) -> list[torch.Tensor]:
        n = self.mesh_device.get_num_devices()
        dim = _check_dim(self.dim, x.dim(), "ShardTensorToMesh")
        size = int(x.shape[dim])
        if size % n:
            raise ValueError(
                f"mesh_mapper=ShardTensorToMesh(dim={self.dim}): dim {dim} of shape {list(x.shape)} has size {size}, "
                f"which the mesh's {n} chips (MeshShape {self.mesh_device.shape_tuple}) do not divide; expected a "
                f"multiple of {n} (each chip takes size / {n})"
            )
        return list(torch.chunk(x, n, dim=dim))

    def placement(self):
        return ttnn.PlacementShard(self.dim)


@dataclass(frozen=True)
class ReplicateTensorToMesh:
    """The whole host tensor on every chip, as ``ttnn.ReplicateTensorToMesh(mesh_device)``."""

    mesh_device: EmuMeshDevice

    def __post_init__(self):
        _check_mesh(self.mesh_device, "ReplicateTensorToMesh")

    def map(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [x] * self.mesh_device.get_num_devices()

    def placement(self):
        return ttnn.PlacementReplicate()


@dataclass(frozen=True)
class ConcatMeshToTensor:
    """Joins the chips' shards along ``dim`` in row-major chip order, as ``ttnn.ConcatMeshToTensor(mesh_device,
    dim)``."""

    mesh_device: EmuMeshDevice
    dim: int

    def __post_init__(self):
        _check_mesh(self.mesh_device, "ConcatMeshToTensor")
        if isinstance(self.dim, bool) or not isinstance(self.dim, int):
            raise TypeError(f"ConcatMeshToTensor: dim={self.dim!r} ({type(self.dim).__name__}): expected an int")

    def compose(self, shards: list[torch.Tensor]) -> torch.Tensor:
        _check_dim(self.dim, shards[0].dim(), "ConcatMeshToTensor")
        return torch.cat(shards, dim=self.dim)


def _check_mesh_shape(mesh_device: EmuMeshDevice, mesh_shape, what: str) -> tuple[int, int]:
    shape = tuple(mesh_shape)
    if shape != tuple(mesh_device.shape_tuple):
        raise ValueError(
            f"{what}: mesh_shape={shape}: expected the mesh's own shape {mesh_device.shape_tuple} (chip (r, c) takes "
            "piece r along the first dim and piece c along the second)"
        )
    return shape


@dataclass(frozen=True)
class ShardTensor2dMesh:
    """Splits a host tensor over the mesh's rows along ``dims[0]`` and over its columns along ``dims[1]`` (None:
    replicated along that mesh axis), as ``ttnn.ShardTensor2dMesh(mesh_device, mesh_shape, dims)``: chip (r, c) takes
    piece r of ``dims[0]`` and piece c of ``dims[1]``. Model code on a Galaxy shards heads over the 8 rows and users
    over the 4 columns this way."""

    mesh_device: EmuMeshDevice
    mesh_shape: tuple
    dims: tuple

    def __post_init__(self):
        _check_mesh(self.mesh_device, "ShardTensor2dMesh")
        _check_mesh_shape(self.mesh_device, self.mesh_shape, "ShardTensor2dMesh")
        if len(tuple(self.dims)) != 2:
            raise ValueError(f"ShardTensor2dMesh: dims={self.dims!r}: expected (row dim or None, column dim or None)")
        for d in self.dims:
            if d is not None and (isinstance(d, bool) or not isinstance(d, int)):
                raise TypeError(f"ShardTensor2dMesh: dims={self.dims!r}: expected ints or None")

    def map(self, x: torch.Tensor) -> list[torch.Tensor]:
        rows, cols = self.mesh_device.shape_tuple
        row_dim, col_dim = (None if d is None else _check_dim(d, x.dim(), "ShardTensor2dMesh") for d in self.dims)
        if row_dim is not None and row_dim == col_dim:
            raise ValueError(f"ShardTensor2dMesh: dims={self.dims!r} name one dim twice; expected two different dims")
        for dim, n, axis in ((row_dim, rows, "rows"), (col_dim, cols, "columns")):
            if dim is not None and x.shape[dim] % n:
                raise ValueError(
                    f"mesh_mapper=ShardTensor2dMesh(dims={self.dims}): dim {dim} of shape {list(x.shape)} has size "
                    f"{x.shape[dim]}, which the mesh's {n} {axis} do not divide; expected a multiple of {n}"
                )
        by_row = [x] * rows if row_dim is None else list(torch.chunk(x, rows, dim=row_dim))
        return [
            piece for r in by_row for piece in ([r] * cols if col_dim is None else torch.chunk(r, cols, dim=col_dim))
        ]

    def placements(self) -> list:
        return [ttnn.PlacementReplicate() if d is None else ttnn.PlacementShard(d) for d in self.dims]


@dataclass(frozen=True)
class ConcatMesh2dToTensor:
    """Joins the chips' shards: each mesh row's chips along ``dims[1]``, then the rows along ``dims[0]``, as
    ``ttnn.ConcatMesh2dToTensor(mesh_device, mesh_shape, dims)`` (the inverse of :class:`ShardTensor2dMesh` with
    the same dims)."""

    mesh_device: EmuMeshDevice
    mesh_shape: tuple
    dims: tuple

    def __post_init__(self):
        _check_mesh(self.mesh_device, "ConcatMesh2dToTensor")
        _check_mesh_shape(self.mesh_device, self.mesh_shape, "ConcatMesh2dToTensor")
        dims = tuple(self.dims)
        if len(dims) != 2 or any(isinstance(d, bool) or not isinstance(d, int) for d in dims):
            raise TypeError(f"ConcatMesh2dToTensor: dims={self.dims!r}: expected (row dim, column dim), two ints")

    def compose(self, shards: list[torch.Tensor]) -> torch.Tensor:
        rank = shards[0].dim()
        row_dim, col_dim = (_check_dim(d, rank, "ConcatMesh2dToTensor") for d in self.dims)
        if row_dim == col_dim:
            raise ValueError(
                f"ConcatMesh2dToTensor: dims={self.dims!r} name one dim twice; expected two different dims"
            )
        cols = self.mesh_device.shape_tuple[1]
        rows = [torch.cat(shards[i : i + cols], dim=col_dim) for i in range(0, len(shards), cols)]
        return torch.cat(rows, dim=row_dim)


# ---- mesh tensors -------------------------------------------------------------------------------------------------


def _topology(mesh: EmuMeshDevice, mapper):
    """ttnn's topology of a tensor mapped by ``mapper`` over every chip of ``mesh``: a 1-D distribution over the chips,
    or the mesh's 2-D shape for :class:`ShardTensor2dMesh`."""
    coords = [ttnn.MeshCoordinate(r, c) for r, c in mesh.coordinates()]
    if isinstance(mapper, ShardTensor2dMesh):
        return ttnn.TensorTopology(ttnn.MeshShape(*mesh.shape_tuple), mapper.placements(), coords)
    return ttnn.TensorTopology(ttnn.MeshShape([mesh.get_num_devices()]), [mapper.placement()], coords)


class EmuMeshTensor:
    """A tensor on an emulated mesh: one :class:`EmuTensor` per chip (``shards``, row-major over the mesh), all of one
    shape, dtype, layout and memory config. Its accessors are those of a ``ttnn.Tensor`` on a ``MeshDevice``: the
    shape is a chip's shard, ``device()`` the mesh, ``tensor_topology()`` how the shards relate to the host tensor."""

    def __init__(self, mesh: EmuMeshDevice, shards: list[EmuTensor], topology):
        first = shards[0]
        for i, s in enumerate(shards):
            if s._shape != first._shape or s._dtype != first._dtype or s._layout != first._layout:
                raise EmulatorError(f"mesh tensor: chip {i}'s shard {s!r} differs from chip 0's {first!r}")
        self._mesh = mesh
        self._shards = tuple(shards)
        self._topology = topology

    # ---- what a mesh tensor is made of
    @property
    def shards(self) -> tuple[EmuTensor, ...]:
        """One tensor per chip, in the mesh's row-major chip order."""
        return self._shards

    def tensor_topology(self):
        return self._topology

    def update_tensor_topology(self, topology) -> None:
        self._topology = topology

    def device(self):
        return self._mesh

    def devices(self) -> list[EmuDevice]:
        return [s.device() for s in self._shards]

    def device_coords(self):
        return [ttnn.MeshCoordinate(r, c) for r, c in self._mesh.coordinates()]

    # ---- a shard's description (the same on every chip)
    @property
    def shape(self):
        return self._shards[0].shape

    @property
    def padded_shape(self):
        return self._shards[0].padded_shape

    @property
    def dtype(self):
        return self._shards[0].dtype

    @property
    def layout(self):
        return self._shards[0].layout

    def get_dtype(self):
        return self.dtype

    def get_layout(self):
        return self.layout

    def memory_config(self):
        return self._shards[0].memory_config()

    def is_sharded(self) -> bool:
        return self._shards[0].is_sharded()

    def is_l1_interleaved(self) -> bool:
        return self._shards[0].is_l1_interleaved()

    def buffer_type(self):
        return self._shards[0].buffer_type()

    def buffer_page_size(self) -> int:
        return self._shards[0].buffer_page_size()

    def buffer_aligned_page_size(self) -> int:
        return self._shards[0].buffer_aligned_page_size()

    def buffer_num_pages(self) -> int:
        return self._shards[0].buffer_num_pages()

    def element_size(self) -> int:
        return self._shards[0].element_size()

    def tensor_accessor_args(self) -> list[int]:
        return self._shards[0].tensor_accessor_args()

    def shard_cores(self):
        return self._shards[0].shard_cores()

    def buffer_address(self) -> int:
        """The buffer's address when every chip holds it at the same address (ttnn's MeshBuffer always does; the
        emulator's chips allocate independently, so a tensor made on one chip alone can shift later ones). Programs
        are built per chip from :attr:`shards`, so this is only a convenience."""
        addresses = {s.buffer_address() for s in self._shards}
        if len(addresses) != 1:
            raise EmulatorError(
                f"buffer_address: the chips hold this tensor at different addresses "
                f"({', '.join(hex(a) for a in sorted(addresses))}); read a chip's shard (shards[i])"
            )
        return addresses.pop()

    def is_allocated(self) -> bool:
        return all(s.is_allocated() for s in self._shards)

    def deallocate(self, force: bool = False) -> None:
        for s in self._shards:
            s.deallocate()

    def __repr__(self) -> str:
        placements = ", ".join(str(p) for p in self._topology.placements())
        return (
            f"EmuMeshTensor({len(self._shards)} chips of MeshShape {self._mesh.shape_tuple}, [{placements}], "
            f"per chip: {self._shards[0]!r})"
        )


# ---- statistics -------------------------------------------------------------------------------------------------


@dataclass
class MeshStats:
    """Statistics of one mesh launch: each chip's :class:`EmulatorStats` (None for a chip the launch did not cover),
    and totals over the chips. ``bytes_read_from`` / ``bytes_written_to`` take a mesh tensor (summed over its
    shards) or one chip's tensor."""

    chips: list[EmulatorStats | None]
    wall_seconds: float = 0.0
    _ran: list[EmulatorStats] = field(init=False, repr=False)

    def __post_init__(self):
        self._ran = [s for s in self.chips if s is not None]

    @property
    def dram_read_bytes(self) -> int:
        return sum(s.dram_read_bytes for s in self._ran)

    @property
    def dram_write_bytes(self) -> int:
        return sum(s.dram_write_bytes for s in self._ran)

    @property
    def duration_ns(self):
        """The modelled duration of the launch, the slowest chip's (chips run concurrently), when the emulator's
        timing model reports one per chip; else None."""
        durations = [getattr(s, "duration_ns", None) for s in self._ran]
        if not durations or any(d is None for d in durations):
            return None
        return max(durations)

    def durations_ns(self) -> dict[str, float | None]:
        """The launch's modelled duration under every timing variant each chip replayed (TTFD_TIMING_VARIANTS):
        per variant the slowest chip's, None when a chip has none for it."""
        per_chip = [s.durations_ns() for s in self._ran]
        if not per_chip:
            return {}
        out = {}
        for v in per_chip[0]:
            ds = [d.get(v) for d in per_chip]
            out[v] = None if any(x is None for x in ds) else max(ds)
        return out

    def counter(self, name: str) -> int:
        return sum(s.counter(name) for s in self._ran)

    def _per_chip(self, tensor, method: str) -> int:
        if isinstance(tensor, EmuMeshTensor):
            return sum(getattr(s, method)(shard) for s, shard in zip(self.chips, tensor.shards) if s is not None)
        return sum(getattr(s, method)(tensor) for s in self._ran)

    def bytes_read_from(self, tensor) -> int:
        return self._per_chip(tensor, "bytes_read_from")

    def bytes_written_to(self, tensor) -> int:
        return self._per_chip(tensor, "bytes_written_to")


# ---- the mesh ---------------------------------------------------------------------------------------------------


def _mesh_shape_arg(board: str, mesh_shape) -> tuple[int, int]:
    if mesh_shape is None:
        return DEFAULT_MESH_SHAPE[board]
    dims = list(mesh_shape) if isinstance(mesh_shape, ttnn.MeshShape) else mesh_shape
    try:
        dims = [int(d) for d in dims]
    except (TypeError, ValueError):
        raise TypeError(f"mesh_shape={mesh_shape!r}: expected (rows, cols), a ttnn.MeshShape or None") from None
    if len(dims) == 1:
        dims = [1, dims[0]]
    chips = BOARD_CHIPS[board]
    if len(dims) != 2 or min(dims) < 1 or dims[0] * dims[1] > chips:
        raise ValueError(
            f"mesh_shape={tuple(dims)}: expected (rows, cols) of at most the {board}'s {chips} chips "
            f"(default {DEFAULT_MESH_SHAPE[board]})"
        )
    return dims[0], dims[1]


class EmuMeshDevice:
    """A mesh of emulated chips (Wormhole, or Blackhole on a P300) with ttnn's ``MeshDevice`` surface. Use
    :func:`open_mesh_device`."""

    def __init__(self, board: str = "t3k", mesh_shape=None, dispatch_core_axis: str | None = None):
        board = board.lower() if isinstance(board, str) else board
        if board not in BOARD_CHIPS:
            raise ValueError(
                f"board={board!r}: expected one of {', '.join(BOARD_CHIPS)} (a mesh of chips; "
                "ttemu.open_device() opens one chip)"
            )
        self.board = board
        self.shape_tuple = _mesh_shape_arg(board, mesh_shape)
        rows, cols = self.shape_tuple
        self._devices: list[EmuDevice] = []
        try:
            for i in range(rows * cols):
                chip = EmuDevice(CHIP_BOARD[board], dispatch_core_axis=dispatch_core_axis)
                chip.mesh_coordinate = divmod(i, cols)  # (row, col) of the chip in its mesh
                chip.device_id = i
                self._devices.append(chip)
        except BaseException:
            for chip in self._devices:
                chip.close()
            raise
        self.grid = self._devices[0].grid
        self.spec = self._devices[0].spec
        self._closed = False
        self._close_callbacks: list = []

    # ---- ttnn.MeshDevice queries
    @property
    def shape(self):
        """The mesh's shape as ``ttnn.MeshShape(rows, cols)`` (``MeshDevice.shape``)."""
        return ttnn.MeshShape(*self.shape_tuple)

    def get_num_devices(self) -> int:
        return len(self._devices)

    def get_devices(self) -> list[EmuDevice]:
        """The chips, row-major over the mesh (chip i at mesh coordinate ``divmod(i, cols)``)."""
        return list(self._devices)

    def get_device_ids(self) -> list[int]:
        return list(range(len(self._devices)))

    def coordinates(self) -> list[tuple[int, int]]:
        """(row, col) of every chip, row-major."""
        return [d.mesh_coordinate for d in self._devices]

    def arch(self):
        return self._devices[0].arch()

    def compute_with_storage_grid_size(self):
        return self._devices[0].compute_with_storage_grid_size()

    def worker_core_from_logical_core(self, core):
        return self._devices[0].worker_core_from_logical_core(core)

    def dram_bank_noc_coords(self) -> list[tuple[int, int]]:
        return self._devices[0].dram_bank_noc_coords()

    def l1_size_per_core(self) -> int:
        return self._devices[0].l1_size_per_core()

    def lowest_l1_buffer_address(self) -> int | None:
        """The lowest live L1 buffer address over the chips (a program's CBs must end below it on every chip)."""
        addresses = [a for a in (d.lowest_l1_buffer_address() for d in self._devices) if a is not None]
        return min(addresses) if addresses else None

    # ---- tensors
    def from_torch(self, x: torch.Tensor, dtype=None, layout=None, memory_config=None, mesh_mapper=None):
        """Upload ``x`` to the chips: each chip gets its piece from ``mesh_mapper`` (``ShardTensorToMesh``,
        ``ReplicateTensorToMesh``, ``ShardTensor2dMesh``; None replicates, as ``ttnn.from_torch`` on a mesh does)."""
        self._check_open()
        mapper = ReplicateTensorToMesh(self) if mesh_mapper is None else mesh_mapper
        if not isinstance(mapper, (ShardTensorToMesh, ReplicateTensorToMesh, ShardTensor2dMesh)):
            raise TypeError(
                f"mesh_mapper={mesh_mapper!r} ({type(mesh_mapper).__name__}): expected "
                "ttemu.ShardTensorToMesh(mesh, dim), ttemu.ShardTensor2dMesh(mesh, mesh_shape, dims), "
                "ttemu.ReplicateTensorToMesh(mesh) or None"
            )
        if mapper.mesh_device is not self:
            raise ValueError("mesh_mapper: made for another mesh; expected one made with this mesh")
        pieces = mapper.map(x)
        shards = [
            d.from_torch(p.contiguous(), dtype=dtype, layout=layout, memory_config=memory_config)
            for d, p in zip(self._devices, pieces)
        ]
        return EmuMeshTensor(self, shards, _topology(self, mapper))

    def allocate(self, shape, dtype, layout=None, fill: int | None = 0xDEADBEEF, memory_config=None):
        """A tensor of per-chip ``shape`` on every chip (``ttnn.allocate_tensor_on_device`` on a mesh), filled with
        the 32-bit pattern ``fill``; its topology says replicated until a writer says otherwise."""
        self._check_open()
        shards = [d.allocate(shape, dtype, layout, fill=fill, memory_config=memory_config) for d in self._devices]
        return EmuMeshTensor(self, shards, _topology(self, ReplicateTensorToMesh(self)))

    def write(self, t: EmuMeshTensor, x: torch.Tensor, mesh_mapper=None) -> None:
        """Overwrite ``t`` in place (its addresses kept) with ``x`` mapped by ``mesh_mapper`` (None: the same ``x`` on
        every chip): a decode loop's cur_pos / page table update, as ``ttnn.copy_host_to_device_tensor``."""
        self._check_tensor(t, "write")
        mapper = ReplicateTensorToMesh(self) if mesh_mapper is None else mesh_mapper
        for chip, shard, piece in zip(self._devices, t.shards, mapper.map(x)):
            chip.write(shard, piece.contiguous())

    def to_torch(self, t: EmuMeshTensor, mesh_composer=None) -> torch.Tensor:
        """The chips' shards joined by ``mesh_composer`` (``ConcatMeshToTensor``). Without one, a one-chip mesh's
        shard; a tensor spread over several chips needs a composer (which dim joins them is the caller's)."""
        self._check_tensor(t, "to_torch")
        shards = [chip.to_torch(s) for chip, s in zip(self._devices, t.shards)]
        if mesh_composer is None:
            if len(shards) == 1:
                return shards[0]
            raise ValueError(
                f"mesh_composer=None: the tensor spans the mesh's {len(shards)} chips; expected "
                "ttemu.ConcatMeshToTensor(mesh, dim) (or read one chip's shard: t.shards[i])"
            )
        if not isinstance(mesh_composer, (ConcatMeshToTensor, ConcatMesh2dToTensor)):
            raise TypeError(
                f"mesh_composer={mesh_composer!r} ({type(mesh_composer).__name__}): expected "
                "ttemu.ConcatMeshToTensor(mesh, dim), ttemu.ConcatMesh2dToTensor(mesh, mesh_shape, dims) or None"
            )
        if mesh_composer.mesh_device is not self:
            raise ValueError("mesh_composer: made for another mesh; expected one made with this mesh")
        return mesh_composer.compose(shards)

    def shards_to_torch(self, t: EmuMeshTensor) -> list[torch.Tensor]:
        """Every chip's shard read back, row-major (``ttnn.get_device_tensors`` then ``to_torch`` each)."""
        self._check_tensor(t, "shards_to_torch")
        return [chip.to_torch(s) for chip, s in zip(self._devices, t.shards)]

    def _check_tensor(self, t, what: str) -> None:
        self._check_open()
        if not isinstance(t, EmuMeshTensor) or t.device() is not self:
            raise EmulatorError(f"{what}: {t!r} is not a tensor of this mesh")

    # ---- programs
    def generic_op(self, io_tensors, program_descriptor, **launch) -> MeshStats:
        """Run a program on the chips, as ``ttnn.generic_op`` on a MeshDevice: a ``ttnn.ProgramDescriptor`` runs on
        every chip (SPMD), a ``ttnn.MeshProgramDescriptor`` runs each of its programs on the chips of its
        ``MeshCoordinateRange``. ``io_tensors`` are mesh tensors; chip i's program sees their i-th shards. The chips
        run concurrently; the first chip's error (in chip order) is raised, with the chip's coordinate in a note.
        ``launch`` (deadline_s, hang_ms, dprint) goes to every chip's :meth:`EmuDevice.generic_op`."""
        self._check_open()
        for t in io_tensors:
            self._check_tensor(t, "generic_op")
        programs = self._programs_per_chip(program_descriptor)
        # Compile each distinct program's kernels once before the chips start, so N chips do not build the same
        # kernel N times in parallel (the compile cache is keyed by content; the chips then all hit it).
        for pd in {id(pd): pd for pd in programs if pd is not None}.values():
            build_plan(pd, self.grid, self.spec, len(self._devices[0].banks))
        results: list[EmulatorStats | None] = [None] * len(self._devices)
        errors: list[BaseException | None] = [None] * len(self._devices)

        def run(i: int) -> None:
            try:
                results[i] = self._devices[i].generic_op([t.shards[i] for t in io_tensors], programs[i], **launch)
            except BaseException as e:  # noqa: BLE001 - re-raised below, in chip order
                errors[i] = e

        t0 = time.monotonic()
        threads = [
            threading.Thread(target=run, args=(i,), name=f"emu-chip-{i}")
            for i, pd in enumerate(programs)
            if pd is not None
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for i, e in enumerate(errors):
            if e is not None:
                e.add_note(
                    f"on chip {i} (mesh coordinate {self._devices[i].mesh_coordinate}) of the emulated "
                    f"{self.board} mesh {self.shape_tuple}"
                )
                raise e
        return MeshStats(results, wall_seconds=time.monotonic() - t0)

    def _programs_per_chip(self, program_descriptor) -> list:
        """Chip i's ProgramDescriptor (None: the launch does not cover chip i)."""
        n, cols = len(self._devices), self.shape_tuple[1]
        if isinstance(program_descriptor, ttnn.ProgramDescriptor):
            return [program_descriptor] * n
        if not isinstance(program_descriptor, ttnn.MeshProgramDescriptor):
            raise TypeError(
                f"program_descriptor={program_descriptor!r}: expected a ttnn.ProgramDescriptor or a "
                "ttnn.MeshProgramDescriptor"
            )
        programs: list = [None] * n
        for coord_range, pd in program_descriptor:
            for coord in coord_range:
                r, c = tuple(coord)  # MeshCoordinateRange reuses its coordinate object: read it at once
                if not (0 <= r < self.shape_tuple[0] and 0 <= c < cols):
                    raise EmulatorError(
                        f"MeshProgramDescriptor: coordinate ({r}, {c}) lies outside the mesh {self.shape_tuple}"
                    )
                if programs[r * cols + c] is not None:
                    raise EmulatorError(f"MeshProgramDescriptor: chip ({r}, {c}) is covered by two ranges")
                programs[r * cols + c] = pd
        return programs

    # ---- lifetime
    def _check_open(self):
        if self._closed:
            raise EmulatorError("mesh device is closed")

    def on_close(self, callback) -> None:
        """Run ``callback(mesh)`` once when the mesh closes (before its chips close)."""
        self._check_open()
        self._close_callbacks.append(callback)

    def close(self) -> None:
        if self._closed:
            return
        callbacks, self._close_callbacks = self._close_callbacks, []
        try:
            for callback in callbacks:
                callback(self)
        finally:
            self._closed = True
            for chip in self._devices:
                chip.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"EmuMeshDevice(board={self.board!r}, shape={self.shape_tuple}, chips={len(self._devices)})"


def open_mesh_device(board: str = "t3k", mesh_shape=None, dispatch_core_axis: str | None = None) -> EmuMeshDevice:
    """Open an emulated mesh: ``board`` "n300" (2 chips, default MeshShape (1, 2)), "t3k" (8 chips, default (2, 4)) or
    "galaxy" (32 chips, default (8, 4)), ttnn's defaults for those boards, or the Blackhole "p300" (2 P150 chips,
    default (1, 2)); ``mesh_shape`` (rows, cols) or a
    ``ttnn.MeshShape`` of at most the board's chips (e.g. (1, 8) on a T3K, as tt_transformers runs it; (1, 1), (1, 2),
    (1, 4) for fewer chips). ``dispatch_core_axis="col"`` (Galaxy only) gives each chip the 7x10 compute grid that
    models/demos/llama3_70b_galaxy runs on; the default (None: ttnn's default, a row on Wormhole) gives 8x9.
    A P300's chips take only Blackhole's default, a column."""
    return EmuMeshDevice(board, mesh_shape, dispatch_core_axis)


def num_chips_of(device) -> int:
    """Chips a device spans: an emulated mesh's or a ttnn MeshDevice's count, 1 otherwise."""
    count = getattr(device, "get_num_devices", None)
    return int(count()) if callable(count) else 1


__all__ = [
    "ConcatMesh2dToTensor",
    "ConcatMeshToTensor",
    "EmuMeshDevice",
    "EmuMeshTensor",
    "MeshStats",
    "ReplicateTensorToMesh",
    "ShardTensor2dMesh",
    "ShardTensorToMesh",
    "open_mesh_device",
]
