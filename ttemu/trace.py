"""Trace capture and replay on the emulator, with ttnn's call shapes.

    trace_id = ttemu.begin_trace_capture(device, cq_id=0)
    device.generic_op([q, pos, out], program)  # recorded, not run
    ttemu.end_trace_capture(device, trace_id, cq_id=0)
    for step in range(steps):
        device.write(pos, next_positions)  # in place between replays: the trace reads the same buffer
        ttemu.execute_trace(device, trace_id, cq_id=0, blocking=True)
    ttemu.release_trace(device, trace_id)

The semantics are tt-metal's, the emulator's only job being to behave like silicon:

* Capture records, it does not run (tt-metal's ``BeginTraceCapture``: "captured commands will have their execution
  delayed until the trace is replayed"). A program launched with ``generic_op`` during capture is checked as any
  launch is (its tensors, its descriptor built and its kernels compiled, its circular buffers against the live L1
  buffers) and recorded.
* Nothing moves between host and device during capture: ``from_torch``, ``write`` and ``to_torch`` raise, as
  tt-metal's command queue does (``TT_FATAL``: "Writes are not supported during trace capture" / "Reads are not
  supported during trace capture", fd_mesh_command_queue.cpp). Allocating is allowed (ops allocate their outputs
  inside captures on silicon too; an allocation writes nothing on silicon, and the emulator's poison fill is not a
  transfer). Every refused transfer is also listed in :attr:`Trace.host_transfers`, so a test can assert a captured
  call attempted none.
* A replay runs the recorded programs again, in order, over the same buffers: each reads whatever its tensors hold
  at that moment (positions and page tables written in place between replays). The op does no host work then: no
  validation, no planning, no descriptor; the emulator itself runs each program as any launch.
* A trace holds its tensors until :func:`release_trace`. On silicon a replay writes into whatever now occupies a
  freed buffer; the emulator keeps them alive instead so a test never reads memory another tensor owns.
* On an emulated mesh a trace captures on every chip; a replay runs each chip's programs, chip after chip (our
  programs never exchange data between chips, so the order between chips does not change a result).

One command queue is emulated: ``cq_id`` must be 0 (or None, ttnn's "current queue").
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field

from .errors import EmulatorError

_ids = itertools.count(1)
# Each device's (an EmuDevice or an EmuMeshDevice) traces by id; weak: the traces go with the device.
_traces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(eq=False)
class ChipCapture:
    """One chip's part of a trace: the launches recorded on it (set as ``EmuDevice.trace_capture`` while capturing)."""

    trace_id: int
    launches: list = field(default_factory=list)  # (io_tensors, program_descriptor, launch options)
    host_transfers: list = field(default_factory=list)  # refused host transfers, e.g. "from_torch"

    def record(self, io_tensors, program_descriptor, launch: dict) -> None:
        """A launch during capture: kept for replay, not run (``generic_op`` returns None, as on a card)."""
        self.launches.append((list(io_tensors), program_descriptor, dict(launch)))
        return None

    def refuse(self, transfer: str) -> None:
        """A host transfer during capture: listed, then refused as tt-metal refuses it."""
        self.host_transfers.append(transfer)
        kind = "Reads" if transfer == "to_torch" else "Writes"
        raise EmulatorError(
            f"{transfer}: {kind} are not supported during trace capture (trace id {self.trace_id}); as on silicon, "
            "move host transfers before begin_trace_capture or between execute_trace calls"
        )


@dataclass(eq=False)
class Trace:
    """A captured trace: per chip, the programs to replay."""

    trace_id: int
    chips: list  # EmuDevice per chip
    captures: list[ChipCapture]
    captured: bool = False  # end_trace_capture was called

    @property
    def num_launches(self) -> int:
        """Programs one replay runs (summed over the chips)."""
        return sum(len(c.launches) for c in self.captures)

    @property
    def host_transfers(self) -> list[str]:
        """Host transfers attempted (and refused) during the capture, over every chip."""
        return [t for c in self.captures for t in c.host_transfers]


def _chips(device) -> list:
    from .device import EmuDevice
    from .mesh import EmuMeshDevice

    if isinstance(device, EmuMeshDevice):
        return list(device.get_devices())
    if isinstance(device, EmuDevice):
        return [device]
    raise TypeError(f"device={device!r} ({type(device).__name__}): expected an emulated device or mesh")


def _check_cq(cq_id) -> None:
    if cq_id is not None and int(cq_id) != 0:
        raise EmulatorError(f"cq_id={cq_id!r}: the emulator has one command queue (cq_id=0)")


def _trace(device, trace_id) -> Trace:
    trace = _traces.get(device, {}).get(int(trace_id))
    if trace is None:
        raise EmulatorError(f"trace id {trace_id}: no such trace on {device!r} (released, or made on another device)")
    return trace


def begin_trace_capture(device, cq_id=0) -> int:
    """Start recording the programs launched on ``device`` (an emulated chip or mesh); returns the trace id."""
    _check_cq(cq_id)
    chips = _chips(device)
    for chip in chips:
        chip._check_open()
        if chip.trace_capture is not None:
            raise EmulatorError(
                f"begin_trace_capture: trace {chip.trace_capture.trace_id} is still being captured on "
                "this device; end it first"
            )
    trace_id = next(_ids)
    captures = [ChipCapture(trace_id) for _ in chips]
    for chip, capture in zip(chips, captures):
        chip.trace_capture = capture
    _traces.setdefault(device, {})[trace_id] = Trace(trace_id, chips, captures)
    return trace_id


def end_trace_capture(device, trace_id, cq_id=0) -> None:
    """Stop recording: the trace can now be replayed."""
    _check_cq(cq_id)
    trace = _trace(device, trace_id)
    if trace.captured:
        raise EmulatorError(f"end_trace_capture: trace {trace.trace_id} was already ended")
    for chip, capture in zip(trace.chips, trace.captures):
        if chip.trace_capture is capture:
            chip.trace_capture = None
    trace.captured = True


def execute_trace(device, trace_id, cq_id=0, blocking=True) -> list:
    """Replay a captured trace: its programs run again, in order, reading what their tensors hold now.

    Returns the programs' run statistics in launch order (ttnn's ``execute_trace`` returns None; code written for
    ttnn ignores it). The emulator always completes the replay before returning (``blocking=False`` is then just
    an early completion, which a caller must accept on silicon too)."""
    _check_cq(cq_id)
    trace = _trace(device, trace_id)
    if not trace.captured:
        raise EmulatorError(f"execute_trace: trace {trace.trace_id} is still being captured; call end_trace_capture")
    if any(chip.trace_capture is not None for chip in trace.chips):
        raise EmulatorError("execute_trace: a trace is being captured on this device; end it first")
    stats = []
    for chip, capture in zip(trace.chips, trace.captures):
        for io_tensors, program_descriptor, launch in capture.launches:
            stats.append(chip.generic_op(io_tensors, program_descriptor, **launch))
    return stats


def release_trace(device, trace_id) -> None:
    """Drop a trace and the tensors it held."""
    trace = _trace(device, trace_id)
    if not trace.captured:
        raise EmulatorError(f"release_trace: trace {trace.trace_id} is still being captured; call end_trace_capture")
    del _traces[device][trace.trace_id]


def get_trace(device, trace_id) -> Trace:
    """The emulator's record of a trace (what it launches, the host transfers refused during its capture)."""
    return _trace(device, trace_id)


def is_trace_capture_active(device) -> bool:
    """Whether a trace is being captured on ``device`` (any chip of a mesh), as ``ttnn.is_trace_capture_active``."""
    return any(chip.trace_capture is not None for chip in _chips(device))
