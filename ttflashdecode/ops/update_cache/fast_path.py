"""The cache-hit fast path of the paged update ops: a call that repeats a checked call launches the descriptor that
call built again, without checking, uploading or looking anything up by shape (the decode op's rules,
:mod:`ttflashdecode.ops.decode.fast_path`).

A model calls ``paged_update_cache`` (or ``paged_fused_update_cache``) once per layer per token with the same caches,
index tensor and page table, and new rows of one form, usually at one address. The full path
(:func:`~ttflashdecode.ops.update_cache.validate.check_update`, the program key with each tensor's memory config as a
string) took ~110 us of Python a call on a mock N150 (tests/runtime/update_host_cost.py).

The signature's **key** holds the op, each tensor argument's buffer address (None for an absent page table) and the
plain scalars (``cache_position_modulo``, ``return_stats``); its **check** (compared, never hashed) each tensor's
device and spec (shape, dtype, layout, memory config) and the compute kernel config's fields. That is everything the
checks read and everything the descriptor depends on (it holds addresses, nothing else of a tensor), so a call that
matches an entry passes the checks as the call that made it did and launches the same program. Not signed (the full
path, which raises the errors it always raised): host ``update_idxs`` or a host page table (their values need
checking and uploading every call), an unsupported argument away from upstream's default, a non-plain scalar, a
tensor argument that is not a live device tensor. Entries are made only by calls that passed the full path.
"""

from __future__ import annotations

from dataclasses import dataclass

from ttflashdecode.device_cache import existing_cache
from ttflashdecode.ops.decode.fast_path import NotSignable, compute_config_value, tensors_signature


@dataclass(eq=False)
class UpdateHit:
    """What a checked update call needs to launch again (the tensors are the call's own, passed per call).

    check: the signature's compared part. launchable: the sealed descriptor (as ``generic_op`` takes it). run: the
    backend's launch (``Backend.card_launcher()`` on a card, ``Backend.run`` on the emulator: it returns the run's
    statistics). shapes: the call's :class:`~ttflashdecode.ops.update_cache.args.UpdateShapes` (for ``return_stats``).
    """

    check: tuple
    launchable: object
    run: object
    shapes: object
    hits: int = 0  # hits not yet counted as program hits in the device's counters (settle)

    def settle(self, cache) -> None:
        """Count this entry's pending hits in ``cache`` as the program lookups they skipped."""
        if self.hits:
            cache.count_hits(0, self.hits)
            self.hits = 0


def signature(op: str, tensors: tuple, compute_kernel_config, *scalars) -> tuple | None:
    """(key, check) of a call whose ``tensors`` are its (cache, input, ..., index, page table or None) and
    ``scalars`` its plain scalar arguments (already checked plain by the caller), or None when it is not signed."""
    try:
        addresses, facts = tensors_signature(tensors)
        compute = compute_config_value(compute_kernel_config)
    except NotSignable:
        return None
    return (op, addresses, *scalars), (facts, compute)


def untouched(update_idxs, share_cache, batch_offset, *nones) -> bool:
    """Whether the arguments the op does not implement (and the host positions) are at upstream's defaults, in the
    forms the full path takes for them (None and False by identity, batch_offset the int 0)."""
    return (
        type(update_idxs) in (tuple, list)
        and not update_idxs
        and (share_cache is None or share_cache is False)
        and type(batch_offset) is int
        and batch_offset == 0
        and all(value is None for value in nones)
    )


def launch_hit(signed: tuple | None, tensors: tuple):
    """``(caches, shapes, stats)`` of a signed call launched from its entry, or None (the full path then runs)."""
    if signed is None:
        return None
    key, check = signed
    first = check[0][0]  # the first cache's (device, spec); None: no cache given, which the full path names
    if first is None:
        return None
    cache = existing_cache(first[0])
    entry = None if cache is None else cache.calls.get(key)
    if entry is None or entry.check != check:
        return None
    io = [t for t in tensors if t is not None]
    stats = entry.run(io, entry.launchable)
    entry.hits += 1
    return stats, entry.shapes


def remember(signed: tuple | None, device, launchable, run, shapes) -> None:
    """Keep a full-path call's launch under its signature (a call that was not signed keeps nothing)."""
    if signed is not None:
        key, check = signed
        existing_cache(device).remember("calls", key, UpdateHit(check, launchable, run, shapes))
