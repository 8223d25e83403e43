"""KV cache updates on the device: write each user's new K or V row into the cache at the user's position.

    ttflashdecode.paged_update_cache(k_cache, k_new, update_idxs_tensor=pos_dev,   # [blocks, n_kv, block, d] cache
                                     page_table=page_table)                      # (no page_table: [b, n_kv, S, d])
    ttflashdecode.paged_fused_update_cache(k_cache, k_new, v_cache, v_new,        # K and V in one launch
                                           update_idxs_tensor=pos_dev, page_table=page_table)
    ttflashdecode.update_cache(k_cache, k_new_heads_major, pos)                    # ttnn.update_cache's form

Each function is its upstream namesake, with its argument names and tensor forms (a drop-in, and what patch_ttnn()
routes ttnn's calls to). The paged ops' ``input`` (upstream's name; "new" in the docs) is ``[1, b, n_kv_heads,
head_dim]`` (nlp_create_qkv_heads_decode's output): row ``(u, h)`` goes to position ``update_idx[u]`` of head ``h``
of user ``u``'s cache (through ``page_table[u]`` for a paged cache). ``update_cache``'s ``input`` is upstream's
heads-major ``[1, n_kv_heads, b padded to 32, head_dim]``: user ``u``'s row of head ``h`` is ``input[0, h,
batch_offset + u]``. A model calls one of them once per layer per token before decode attention.

The program (``ops/update_cache/kernels/``) is its own: the work units are (cache, user, kv head) triples (one cache, or
K and V for the fused op) split over the grid; for each, the reader finds the tile row holding the position (positions
and page tables are device tensors it reads at run time, so one program serves every step), compute unpacks the tile row
to bfloat16 rows, the writer replaces the unit's row and compute packs the rows back into the cache's format, which the
writer writes over the tile row. That is upstream's untilize / replace / tilize, so a bfloat8_b or bfloat4_b tile is
re-packed exactly as upstream re-packs it: each 16-datum face row (one position, half a tile's columns) gets its shared
exponent from its own values, so the new row's exponents come from the new values and every other row keeps its values.

A position outside the cache at run time (negative, -1 among them, or at / past the cache's length; or, paged, a
page-table column past the table or a block past the cache) writes nothing for that user. Host positions and host
page tables are checked before anything runs. A paged ring cache (``cache_position_modulo = M``, upstream's for
sliding-window layers) is wrapped first: the reader writes a non-negative position p at ``p % M``, so positions grow
without bound.

Parts: ``api`` (the public functions and one call's run), ``validate`` (host checks), ``args`` (the one Python
definition of the kernels' arguments), ``factory`` (the program descriptor), ``kernels/`` (reader, compute, writer).
"""

from ttflashdecode.ops.update_cache.api import paged_fused_update_cache, paged_update_cache, update_cache

__all__ = ["update_cache", "paged_update_cache", "paged_fused_update_cache"]
