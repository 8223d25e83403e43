"""The cache-hit fast path: a decode call that repeats a validated, planned call launches its cached programs again
without validating or planning.

A model calls the op once per layer per token with the same shapes, dtypes and placements and mostly the same
tensors (K/V caches, cur_pos_tensor and page tables stay put; q and the output are remade every step, usually at the
same addresses). The full path -- :func:`~ttflashdecode.ops.decode.validate.check_call`, the plan lookup, the descriptor
lookup -- reads every tensor property and hashes nested frozen dataclasses: 100-300 us of Python per call. The fast path
keeps, per call signature, what the full path worked out (:class:`FastCall`) and redoes only what may differ between
two calls of one signature (a new output tensor, the launch).

A signature has two parts:

* the **key** (hashed, so only cheap values): the call's kind, each tensor argument's buffer address (None for an
  absent one) and the plain scalar arguments (bools, ints, floats, strings, None);
* the **check** (compared with ``==``, never hashed: ttnn's enums and shapes hash in Python, slowly): each tensor's
  device, shape, dtype, layout and memory config (a ttnn tensor's ``spec``, which holds the last four), and the
  arguments that are ttnn objects (output dtype, output memory config, compute and program configs, read into plain
  values).

Together they hold everything validation reads of a call, so a call that matches an entry's key and check passes
validation as the call that made the entry did, gets the same plan and -- its tensors sitting at the same addresses
-- the same programs. A call that is not plain enough to sign (host ``cur_pos`` or page table: their values need
checking and uploading; numpy or 0-dim torch scalars; ``validate_device_tensors=True``; a deallocated tensor; a
torch tensor where a device tensor belongs) and a call that matches no entry take the full path, which raises
exactly the error it always raised. Entries are made only by calls that passed the full path.

Two things can change under an unchanged signature and are checked on every hit: the lowest live L1 buffer (an L1
tensor allocated since may leave the planned circular buffers no room: the full path then plans again, or refuses)
and, on a mesh, how each tensor lies over the chips (``tensor_topology`` can change in place:
:func:`~ttflashdecode.ops.decode.validate.check_mesh_call` runs on every call). An entry keeps every lowest L1 line at
which the full path made its plan (:attr:`FastCall.l1_lines`), not only the last: a decode loop whose op allocates an L1
output moves the line every step (the previous step's output, alive until the model drops it, alternates with the new
one as the lowest L1 buffer), and a line the entry has not seen sends the call down the full path once, after which
:func:`remember_call` adds it to the entry when the full path made the same plan there.

The tensors' Python identity is deliberately not in the key: a model hands the op a new q (and output) every step,
usually at the same address, and keying on ``id()`` would send all of those calls down the full path. A new tensor
object with the same device, address, shape, dtype, layout and memory config is the same call for validation and for
the program's runtime args (which hold addresses, nothing else of the tensor).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.descriptors import ComputeSettings

# Scalars that go into a key as they are: hashing them is cheap and their equality is their value's.
_PLAIN = (type(None), bool, int, float, str)
PLAIN_TYPES = frozenset(_PLAIN)  # the same, for a membership test (callers that check a scalar inline)


class NotSignable(Exception):
    """A call the fast path does not sign (it takes the full path)."""


@dataclass(eq=False)
class FastCall:
    """What a validated, planned call needs to launch again (the tensors are the call's own, passed per call).

    owner: the :class:`~ttflashdecode.ops.decode.pipeline.DecodePipeline` that launches it.
    planned: the wrapper's plan for the call (a ``_Planned``: the plan and the call's fixed options).
    check: the signature's compared part (see the module docstring).
    l1_lines: the lowest live L1 buffers (None: no L1 buffer) at which a full-path call of this signature made, or
        checked, this plan; a hit requires the device's current line to be one of them.
    positions: the op's own positions tensor (a non-causal call's constant positions), None when the call's
        ``cur_pos_tensor`` is read.
    staging: a block-float call's staging output (None otherwise).
    cbs_end: an L1 output's floor: the L1 address the plan's circular buffers reach (an output the allocator placed
        below it is refused every call, as the full path refuses it); None for a DRAM output.
    launches: per output address key, the (decode, convert) launchables built for it.
    plan_hits: plan lookups the full path makes per call (1 for the op's functions, 0 for a wrapper's run).
    """

    owner: Any
    planned: Any
    check: tuple
    l1_lines: set
    positions: Any
    staging: Any
    cbs_end: int | None
    plan_hits: int
    new_output: Any = None  # new_output(q): the call's output when the op allocates it (Backend.output_allocator)
    # The position in the signature's tensors of one whose buffer was the lowest live L1 buffer when the entry was made
    # (None if none was): a hit hands its address to the L1 line reader as a witness (Backend.l1_line_reader)
    witness: int | None = None
    launches: dict = field(default_factory=dict)
    programs_per_launch: int = 0  # program lookups the full path makes per call (decode + convert, per chip)
    # Hits not yet added to the device's counters: a hit adds one here (one store, where the counters' four dict
    # updates cost ~0.3 us a hit on a mock N150); the device cache settles them before anyone reads or drops them.
    hits: int = 0

    def settle(self, cache) -> None:
        """Count this entry's pending hits in ``cache`` (a DeviceCache) as the lookups they skipped."""
        if self.hits:
            cache.count_hits(self.hits * self.plan_hits, self.hits * self.programs_per_launch)
            self.hits = 0

    def launches_like(self, other: FastCall) -> bool:
        """Whether ``other`` (a full-path call's entry under the same key) launches what this entry launches: the
        same call, wrapper and plan, and the same tensors of the op's own (positions, staging output)."""
        try:
            same_call = other.check == self.check
        except Exception:
            return False
        return (
            same_call
            and other.owner is self.owner
            and other.planned.plan_id == self.planned.plan_id
            and other.positions is self.positions
            and other.staging is self.staging
        )


# Output addresses a FastCall keeps launchables for (a new output every step lands on a few addresses at most).
LAUNCHES_PER_CALL = 8


def plain(name: str, value) -> tuple:
    """``(type, value)`` of a plain scalar (see :data:`_PLAIN`), else :class:`NotSignable`. The type goes with the
    value: ``True == 1`` and ``1 == 1.0`` (and they hash alike), but validation takes only some of them."""
    kind = type(value)
    if kind not in _PLAIN:
        raise NotSignable(name)
    return kind, value


def flag(name: str, value) -> bool:
    """A Python bool (the full path's check_bool also takes numpy bools: those calls are not signed)."""
    if type(value) is not bool:
        raise NotSignable(name)
    return value


def tensors_signature(tensors) -> tuple[tuple, tuple]:
    """(addresses, facts) of the call's tensor arguments: each one's buffer address, and its (device, spec) (None for
    an absent tensor). A tensor that is not a live device tensor (a torch tensor, a list, a deallocated tensor) is
    :class:`NotSignable`: the full path names it.

    This runs on every call: one pass, no per-tensor helper or ``getattr``, three reads a tensor (~0.45 us of the ~0.55
    us a tensor costs here on a mock N150). No ``is_allocated()`` first (0.11 us a tensor): ``buffer_address()`` raises
    on a deallocated tensor (ttnn logs a TT_FATAL line as it does, the emulator raises), and the full path then refuses
    the call naming the argument."""
    addresses, facts = [], []
    try:
        for tensor in tensors:
            if tensor is None:
                addresses.append(None)
                facts.append(None)
            else:
                addresses.append(tensor.buffer_address())
                # A ttnn tensor's TensorSpec holds its shape, dtype, layout (tile shape included) and memory config:
                # one read and one C++ comparison instead of four reads (memory_config() alone costs ~0.5 us a tensor
                # on a mock N150).
                facts.append((tensor.device(), tensor.spec))
    except AttributeError:  # no spec: an emulator tensor (or not a device tensor at all)
        return _emulated_signature(tensors)
    except Exception as error:  # not a live device tensor, or a mesh tensor whose chips hold it at different addresses
        raise NotSignable("tensor") from error
    return tuple(addresses), tuple(facts)


def _emulated_signature(tensors) -> tuple[tuple, tuple]:
    """:func:`tensors_signature` of a call of emulator tensors, which have no ``spec``: :func:`_emulated_spec` gives
    the four things it holds."""
    addresses, facts = [], []
    try:
        for tensor in tensors:
            if tensor is None:
                addresses.append(None)
                facts.append(None)
            else:
                addresses.append(tensor.buffer_address())
                facts.append((tensor.device(), _emulated_spec(tensor)))
    except Exception as error:
        raise NotSignable("tensor") from error
    return tuple(addresses), tuple(facts)


def _emulated_spec(tensor) -> tuple:
    """An emulator tensor's shape, dtype, layout and memory config (what a ttnn tensor's ``spec`` holds)."""
    return tensor.shape, tensor.dtype, tensor.layout, tensor.memory_config()


def program_config_value(program_config):
    """A program config as a value the check can compare: names, paths and ProgramConfigs as they are; a
    ``ttnn.SDPAProgramConfig`` (mutable) read field by field, every field :meth:`ProgramConfig.from_ttnn` reads."""
    kind = type(program_config)
    if kind is ProgramConfig or program_config is None:  # the common cases first: this runs on every call
        return program_config
    if kind.__name__ != "SDPAProgramConfig":
        if isinstance(program_config, (str, Path, ProgramConfig)):
            return program_config
        raise NotSignable("program_config")
    c = program_config
    # Read on every signed call: each field read is a nanobind getter (~0.15 us on a mock N150's host). The grid's x
    # and y, not the CoreCoord the getter returns: that object is the config's own member, which a later assignment
    # to the config rewrites in place. Its repr (ttnn writes every field by reflection) would be one call, but took
    # longer than these reads (2.5 against 1.6 us).
    grid = c.compute_with_storage_grid_size
    try:  # plain attribute reads (getattr with a default costs ~0.1 us more a field)
        later = (c.sub_core_grids, c.max_k_splits, c.matmul_math_fidelity, c.segmented_accumulation)
    except AttributeError:  # a config of an older ttnn, without some of the later fields: their defaults
        later = (
            getattr(c, "sub_core_grids", None),
            getattr(c, "max_k_splits", 1),
            getattr(c, "matmul_math_fidelity", None),
            getattr(c, "segmented_accumulation", False),
        )
    return (
        "SDPAProgramConfig",
        grid.x,
        grid.y,
        c.q_chunk_size,
        c.k_chunk_size,
        c.exp_approx_mode,
        c.max_cores_per_head_batch,
        *later,
    )


def compute_config_value(compute_kernel_config):
    """A compute kernel config as a comparable value: the three fields ComputeSettings.coerce reads."""
    c = compute_kernel_config
    if c is None or isinstance(c, ComputeSettings):
        return c
    try:
        return (type(c), c.math_fidelity, c.math_approx_mode, c.fp32_dest_acc_en)
    except AttributeError as error:
        raise NotSignable("compute_kernel_config") from error


def remember_launch(entry: FastCall, out_key, launch) -> None:
    if len(entry.launches) >= LAUNCHES_PER_CALL:
        entry.launches.clear()
    entry.launches[out_key] = launch


# Lowest L1 lines a FastCall accepts (a decode loop's live outputs move the line among a few addresses at most).
L1_LINES_PER_CALL = 8


def remember_call(cache, key, entry: FastCall) -> None:
    """Store a full-path call's ``entry`` under ``key`` in the device's ``calls`` table. When the entry it replaces
    launched the same plan (the full path ran only because the lowest L1 line was new to it), the new entry keeps the
    old one's lines and launches as well: each was made by the full path, for this plan, and still holds."""
    known = cache.calls.get(key)
    if known is not None and known.launches_like(entry):
        if len(known.l1_lines) < L1_LINES_PER_CALL:
            entry.l1_lines |= known.l1_lines
        for out_key, launch in known.launches.items():
            if len(entry.launches) >= LAUNCHES_PER_CALL:
                break
            entry.launches.setdefault(out_key, launch)
    cache.remember("calls", key, entry)
