"""FlashDecode work planner: which core reads which KV chunks, the reduction tree, CBs and L1.

Pure Python (no ttnn), so it can be tested exhaustively and used by the emulator, the op and the demo alike.
One module per job:

* :mod:`~ttflashdecode.plan.shapes` -- :class:`DecodeShapes`, the call's tensors as the plan sees them.
* :mod:`~ttflashdecode.plan.rules` -- THE chunk rule and the reduction tree, the contract the kernels' shared
  header (``ops/decode/kernels/flash_decode_common.hpp``) mirrors name for name and argument for argument.
* :mod:`~ttflashdecode.plan.cbs` -- the circular-buffer table and the L1 budget.
* :mod:`~ttflashdecode.plan.search` -- core assignment and the search for a plan that fits (:func:`plan`).

Every public name is importable from ``ttflashdecode.plan`` itself.
"""

from ttflashdecode.config import TILE
from ttflashdecode.plan.cbs import (
    L1_BUDGET_BYTES,
    L1_RESERVED_BYTES,
    L1_SIZE_BYTES,
    CBPlan,
    L1OverflowError,
    check_l1,
    circular_buffers,
    l1_bytes,
)
from ttflashdecode.plan.rules import (
    DRAM_BOUND_CHUNK_TILES,
    DRAM_BOUND_CORES,
    DRAM_BOUND_LONG_RUN_CHUNK_TILES,
    DRAM_BOUND_SHORT_RUN_POSITIONS,
    DRAM_SATURATING_CORES,
    MAX_DEFAULT_K_CHUNK_SIZE,
    MAX_POSITIONS_PER_CORE,
    MIN_K_CHUNK_SIZE,
    MIN_POSITIONS_PER_CORE,
    active_cores,
    children_in_round,
    chunk_range,
    default_k_chunk_size,
    default_merge_radix,
    default_num_cores_per_head,
    expected_partials,
    is_dram_bound,
    partial_slots,
    receive_rounds,
    receives_in_round,
    send_round,
    send_slot,
    tree_parent,
    tree_rounds,
    window_start,
)
from ttflashdecode.plan.search import (
    DST_TILES,
    ROLES,
    CoreAssignment,
    DecodePlan,
    SemaphorePlan,
    TreeReceive,
    TreeSend,
    plan,
    tree_semaphores,
)
from ttflashdecode.plan.shapes import DTYPES, TILE_BYTES, DecodeShapes

__all__ = [
    "TILE",
    "TILE_BYTES",
    "DTYPES",
    "DecodeShapes",
    "window_start",
    "chunk_range",
    "active_cores",
    "tree_rounds",
    "send_round",
    "receives_in_round",
    "receive_rounds",
    "expected_partials",
    "children_in_round",
    "send_slot",
    "tree_parent",
    "partial_slots",
    "default_merge_radix",
    "default_k_chunk_size",
    "default_num_cores_per_head",
    "is_dram_bound",
    "DRAM_BOUND_CORES",
    "DRAM_BOUND_CHUNK_TILES",
    "DRAM_BOUND_LONG_RUN_CHUNK_TILES",
    "DRAM_BOUND_SHORT_RUN_POSITIONS",
    "MIN_POSITIONS_PER_CORE",
    "DRAM_SATURATING_CORES",
    "MAX_POSITIONS_PER_CORE",
    "MIN_K_CHUNK_SIZE",
    "MAX_DEFAULT_K_CHUNK_SIZE",
    "L1_SIZE_BYTES",
    "L1_RESERVED_BYTES",
    "L1_BUDGET_BYTES",
    "L1OverflowError",
    "CBPlan",
    "circular_buffers",
    "l1_bytes",
    "check_l1",
    "DST_TILES",
    "ROLES",
    "SemaphorePlan",
    "tree_semaphores",
    "TreeReceive",
    "TreeSend",
    "CoreAssignment",
    "DecodePlan",
    "plan",
]
