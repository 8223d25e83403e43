"""What ttflashdecode keeps between calls, per device: the one cache.

A decode loop calls the op once per layer per token with the same shapes, so everything derived from a call's
shapes and configuration is made once and looked up afterwards. All of it lives in one :class:`DeviceCache` per
device, in five bounded tables (least recently used goes first):

* ``decoders`` -- the module-level functions' :class:`~ttflashdecode.ops.decode.pipeline.DecodePipeline` per
  (program_config, compute settings): a named config is read once per device, not once per call;
* ``plans`` -- :class:`~ttflashdecode.plan.DecodePlan` per plan key (shapes, config, grid, L1 budget, ...);
* ``programs`` -- program descriptors per (plan, compute, scale, the tensors' addresses and forms);
* ``staging`` -- device tensors the op makes once and reuses every step so the cached programs' addresses stay
  valid: the staging outputs of block-float (bfloat8_b) calls, one per (shape, dtype), and the constant positions of
  non-causal calls;
* ``calls`` -- the cache-hit fast path of every decode call, the module-level functions' and
  :meth:`~ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper.run`'s (:mod:`ttflashdecode.ops.decode.fast_path`,
  :func:`~ttflashdecode.ops.decode.pipeline.launch_hit`): what a validated, planned call needs to launch again, keyed by
  its tensors' addresses and its arguments (a wrapper's run also by the wrapper); and of the paged cache updates
  (:mod:`ttflashdecode.ops.update_cache.fast_path`: the launch a checked call made, under the op's name).

The cache is owned by the device object itself (see :func:`device_cache`), so it lives exactly as long as that
device and can never be found through another device that happens to reuse a closed one's ``id()``.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

# Entries per table and device, so a long-running process that decodes many shapes does not grow forever.
TABLE_SIZE = 64
TABLES = ("decoders", "plans", "programs", "staging", "calls")

_ATTR = "_ttflashdecode_cache"

# Process-wide totals since the last clear_program_cache(), over every device (closed ones too).
_COUNTERS = {"plans": ("plans", "plan_hits"), "programs": ("programs", "program_hits")}  # table: (miss, hit)
_totals = {name: 0 for pair in _COUNTERS.values() for name in pair}
# Every live cache, for the totals' ``entries`` and for clear_program_cache(). Weak: a cache dies with its device.
_live: weakref.WeakSet = weakref.WeakSet()
# Caches of devices that take no attributes, keyed by MeshDevice.id() (see device_cache).
_by_mesh_id: dict[int, DeviceCache] = {}


class DeviceCache:
    """Everything ttflashdecode keeps for one device (see the module docstring)."""

    __slots__ = ("decoders", "plans", "programs", "staging", "calls", "counts", "closed", "_plan_ids", "__weakref__")

    def __init__(self) -> None:
        self.decoders: OrderedDict = OrderedDict()
        self.plans: OrderedDict = OrderedDict()
        self.programs: OrderedDict = OrderedDict()
        self.staging: OrderedDict = OrderedDict()
        self.calls: OrderedDict = OrderedDict()
        self.counts = dict.fromkeys(_totals, 0)  # this device's share of the totals
        self.closed = False
        # Equal plans reached through different plan keys (a larger L1 budget, another position bound) share one id,
        # so they share their programs; ids are never reused, so a dropped id can only cost a rebuild.
        self._plan_ids: dict = {}

    def lookup(self, table: str, key, make: Callable[[], Any]):
        """The entry of ``table`` under ``key``, made by ``make()`` on a miss (nothing is stored if ``make`` raises).
        Plans and programs count their misses and hits (:func:`cache_stats`)."""
        if self.closed:
            raise RuntimeError("ttflashdecode: the device was closed; open a device and make the call there")
        entries: OrderedDict = getattr(self, table)
        value = entries.pop(key, _MISSING)
        if value is _MISSING:
            value = make()
            if len(entries) >= TABLE_SIZE:
                entries.popitem(last=False)
            self._count(table, hit=False)
        else:
            self._count(table, hit=True)
        entries[key] = value  # (re)inserted last: most recently used
        return value

    def remember(self, table: str, key, value) -> None:
        """Store ``value`` under ``key`` (most recent last; the oldest goes when the table is full). For tables whose
        readers look entries up themselves (``calls``: a fast-path lookup must not pay for LRU bookkeeping)."""
        entries: OrderedDict = getattr(self, table)
        dropped = [entries.pop(key, None)]
        if len(entries) >= TABLE_SIZE:
            dropped.append(entries.popitem(last=False)[1])
        if table == "calls":
            for entry in dropped:
                if entry is not None:
                    entry.settle(self)
        entries[key] = value

    def count_hits(self, plans: int, programs: int) -> None:
        """A fast-path call counts as the lookups it skipped: ``plans`` plan hits and ``programs`` program hits (what
        the full path would have counted for the same call)."""
        self.counts["plan_hits"] += plans
        self.counts["program_hits"] += programs
        _totals["plan_hits"] += plans
        _totals["program_hits"] += programs

    def plan_id(self, plan) -> int:
        """A small id for the program ``plan`` (a :class:`~ttflashdecode.plan.DecodePlan`) lays out: program keys
        hold it instead of the whole nested plan. Plans that differ only in the L1 budget they were made under share
        it (the budget chose the layout; the program is built from the layout alone), so a call whose lowest live L1
        buffer moves (an L1 output the op allocates every step) keeps its programs and its fast-path entry."""
        layout = replace(plan, l1_budget=0)
        plan_id = self._plan_ids.get(layout)
        if plan_id is None:
            if len(self._plan_ids) >= 4 * TABLE_SIZE:
                self._plan_ids.clear()
            plan_id = self._plan_ids[layout] = _next_plan_id()
        return plan_id

    def settle(self) -> None:
        """Count the fast-path hits the ``calls`` entries hold (:meth:`FastCall.settle
        <ttflashdecode.ops.decode.fast_path.FastCall.settle>`): before the counters are read or the entries dropped."""
        for entry in self.calls.values():
            entry.settle(self)

    def stats(self) -> dict[str, int]:
        """This device's counters (``plans`` made and ``plan_hits``, ``programs`` built and ``program_hits``) and its
        entries per table (``<table>_cached``)."""
        self.settle()
        return dict(self.counts, **{f"{table}_cached": len(getattr(self, table)) for table in TABLES})

    def clear(self) -> None:
        self.settle()
        for table in TABLES:
            getattr(self, table).clear()
        self._plan_ids.clear()

    def _count(self, table: str, hit: bool) -> None:
        counter = _COUNTERS.get(table)
        if counter is not None:
            name = counter[hit]
            self.counts[name] += 1
            _totals[name] += 1


_MISSING = object()
_plan_id_counter = iter(range(1, 1 << 62))


def _next_plan_id() -> int:
    return next(_plan_id_counter)


def device_cache(device) -> DeviceCache:
    """The device's cache, created on first use.

    The cache is stored on the device object (``vars(device)``), not in a table keyed by ``id(device)``: a closed
    device's id is reused by the next object, and a table would keep every closed device alive (its staging tensors
    hold their device). The emulator's EmuDevice is a plain class; ttnn's MeshDevice (nanobind) is not
    weak-referenceable but has a per-instance ``__dict__``, and ttnn hands back that same Python object for the
    device as long as it is referenced, so both carry their own cache. A device object without ``__dict__`` is keyed
    by ``MeshDevice.id()``, which tt-metal draws from a process-wide counter and never reuses (such caches then live
    until :func:`clear_program_cache`)."""
    try:
        attributes = vars(device)
    except TypeError:  # no per-instance attributes
        attributes = None
    if attributes is not None:
        cache = attributes.get(_ATTR)
        if cache is None:
            cache = attributes[_ATTR] = _new_cache(device)
        return cache
    mesh_id = int(device.id())
    if mesh_id not in _by_mesh_id:
        _by_mesh_id[mesh_id] = _new_cache(device)
    return _by_mesh_id[mesh_id]


def existing_cache(device) -> DeviceCache | None:
    """The device's cache if it has one (None otherwise, and for a closed device): the fast path's lookup, which must
    not create anything."""
    attributes = getattr(device, "__dict__", None)
    cache = attributes.get(_ATTR) if attributes is not None else _by_mesh_id.get(int(device.id()))
    return None if cache is None or cache.closed else cache


def _new_cache(device) -> DeviceCache:
    cache = DeviceCache()
    _live.add(cache)
    on_close = getattr(device, "on_close", None)  # the emulator reports its close; ttnn devices do not
    if on_close is not None:
        on_close(_forget_device)
    return cache


# Called with the device when one closes, after its cache is cleared (the op drops its last run there).
close_listeners: list[Callable[[Any], None]] = []


def _forget_device(device) -> None:
    """Close callback: drop everything kept for the device, and mark its cache closed for wrappers still holding it."""
    cache = vars(device).pop(_ATTR, None)
    if cache is not None:
        cache.clear()
        cache.closed = True
    for listener in close_listeners:
        listener(device)


def program_cache_stats() -> dict[str, int]:
    """Descriptor cache counters since the last :func:`clear_program_cache`, over all devices: ``misses`` = programs
    built, ``hits`` = calls that reused one, ``entries`` = descriptors cached over all live devices."""
    caches = list(_live)
    for cache in caches:
        cache.settle()
    entries = sum(len(cache.programs) for cache in caches)
    return {"hits": _totals["program_hits"], "misses": _totals["programs"], "entries": entries}


def cache_stats() -> dict[str, int]:
    """Every counter since the last :func:`clear_program_cache`, over all devices: ``plans`` made and ``plan_hits``,
    ``programs`` built and ``program_hits``."""
    for cache in list(_live):
        cache.settle()
    return dict(_totals)


def clear_program_cache() -> None:
    """Drop every device's plans, programs, staging outputs and decoders, and reset the counters."""
    for cache in list(_live):
        cache.clear()
    _by_mesh_id.clear()
    _totals.update(dict.fromkeys(_totals, 0))
