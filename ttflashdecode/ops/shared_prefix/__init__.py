"""Shared-prefix decode (cascade attention): a prefix many users share is read once per (prefix group, kv head), or
once per sub-group of at most ``max_group_rows`` query rows when a group is larger (:class:`PrefixGroups`).

In serving, many decode users share a long prefix (n samples of one prompt, beam search, a common system prompt).
With a paged cache their page tables point at the same prefix blocks, yet a plain paged decode reads those blocks
once per user. Here the cache has two levels, as FlashInfer's cascade attention has:

- the **prefix level**: one page table row per prefix group, ``prefix_lens[g]`` positions. For one group and one kv
  head, the query rows of all the group's users (users x q heads per kv head) are the rows of one group of the decode
  kernels (several row tiles when there are more than 32), so each prefix K/V tile is read from DRAM once and
  multiplied against every user's query. The users of a group are a list (any users of the batch, any number): the
  reader gathers their Q rows from the standard ``q [1, b, n_q_heads, d]`` through a slot-to-user map (no reshuffle
  on the host), and the writer scatters the rows back the same way.
- the **suffix level**: each user's own blocks (``suffix_page_table``, positions ``0 .. suffix_cur_pos[u]`` counted
  from the end of its prefix), exactly the plain paged decode.

Both levels run the decode kernels with ``emit_partial``: the root of each (group, kv head) writes its partial state
(O unnormalised, running max m, running sum l: the state the split-KV tree merges) instead of the normalised output.
A third, small device program merges the two partials per query row with the same (m, l, O) combine and normalises
(``ops/shared_prefix/kernels``). Everything runs on the device (or the emulator); the host only plans, builds
descriptors and uploads the groups' constant positions once per plan.

Supported: paged K/V (bfloat16 / bfloat8_b / bfloat4_b), GQA / MQA / MHA, one query token per user (``q_len`` 1),
causal decode (every user sees its whole prefix and its suffix up to its position), any scale, program configs and
compute kernel configs as the decode op takes them, bfloat16 or float32 output. Refused with an error naming the
argument: ``q_len > 1``, masks, attention sinks, sliding windows, ring caches, MLA, sharded Q / output, meshes.
Users with no suffix this step (``suffix_cur_pos`` -1) attend to their prefix alone. Design, measurements and an
example: docs/SHARED_PREFIX.md.

Parts: ``api`` (the public function, one planned wrapper per call shape), ``wrapper``
(:class:`~ttflashdecode.ops.shared_prefix.wrapper.SharedPrefixDecodeWrapper`: plan once, run per layer and step; the
levels' programs are decode's own, :func:`ttflashdecode.ops.decode.factory.build_program`), ``validate`` (the groups
and the arguments decode's checks do not cover), ``plan`` (the groups and the two levels' plans), ``args`` and
``factory`` (the merge program's arguments and descriptor), ``kernels/`` (the merge's reader, compute, writer).
"""

from ttflashdecode.ops.shared_prefix.api import shared_prefix_decode
from ttflashdecode.ops.shared_prefix.plan import SharedPrefixPlan
from ttflashdecode.ops.shared_prefix.wrapper import SharedPrefixDecodeWrapper, SharedPrefixResult

__all__ = ["shared_prefix_decode", "SharedPrefixDecodeWrapper", "SharedPrefixPlan", "SharedPrefixResult"]
