"""The cache update and decode attention of one layer's step as ONE program (one ``generic_op`` launch).

    out = ttflashdecode.update_cache_and_decode(q, k, v, k_new, v_new, cur_pos_tensor=pos)
    out = ttflashdecode.paged_update_cache_and_decode(q, k, v, k_new, v_new, page_table, cur_pos_tensor=pos)

replace the two launches a model makes per layer and token::

    ttflashdecode.paged_fused_update_cache(k, k_new, v, v_new, update_idxs_tensor=pos, page_table=page_table)
    out = ttflashdecode.paged_scaled_dot_product_attention_decode(q, k, v, page_table, cur_pos_tensor=pos)

with the same arguments: the new K/V rows (``[1, b, n_kv_heads, head_dim]`` bfloat16) are written at each user's
``cur_pos``, the position the attention's query (q_len 1) sits at, and the attention reads them.

The program is the two programs' descriptors side by side, each built by its own factory (nothing is described
twice): the attention's kernels on the cores of its plan, the cache update's kernels
(``ops/update_cache/kernels/``) on cores that plan leaves free, or, when it leaves too few, on the grid's last
row, which the attention is then planned without. Ordering is one semaphore (``sem_cache_updated``, the program's
semaphore table, on every core of both): when an update core has written its rows (write barrier), its writer adds
one count per row on every attention core serving that row's (user, kv head) group; an attention reader waits for
all its groups' counts only before it reads the chunk holding ``cur_pos``, the one chunk the update touches. Every
other chunk streams at once, so the update overlaps the attention instead of preceding it.

Whether that is worth it: docs/USER_GUIDE.md, "Update and attend in one launch" (separate vs fused, modelled).

Parts: ``api`` (the public functions and one call's checks and launch), ``plan`` (where each half runs:
:class:`~ttflashdecode.ops.fused.plan.FusedPlan`), ``factory`` (the two descriptors joined). The kernels are decode's
and the cache update's own.
"""

from ttflashdecode.ops.fused.api import paged_update_cache_and_decode, update_cache_and_decode

__all__ = ["update_cache_and_decode", "paged_update_cache_and_decode"]
