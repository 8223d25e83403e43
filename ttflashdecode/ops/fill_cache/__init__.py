"""KV cache fills on the device: write a prefill's K or V into users' caches from position 0 (the prefill half of
the cache ops; :mod:`ttflashdecode.ops.update_cache` is the decode half).

    ttflashdecode.fill_cache(k_cache, k_prefill, batch_idx)                          # [b, n_kv, S, d] cache
    ttflashdecode.paged_fill_cache(k_cache, k_prefill, page_table, batch_idx=user)   # [blocks, n_kv, block, d]
    ttflashdecode.paged_fill_cache(k_cache, k_prefill, page_table, batch_idx_tensor=users_dev)
    ttflashdecode.paged_fill_cache(k_ring, k_prefill, page_table, batch_idx=user,    # a sliding-window layer's ring
                                   cache_position_modulo=ring, valid_seq_len_tensor=valid_len_dev)

``input_tensor`` is ``[input_batch, n_kv_heads, seq_len, head_dim]`` (TILE, DRAM or L1 interleaved; bfloat16,
float32, bfloat8_b or bfloat4_b): positions ``0 .. seq_len - 1`` (tile-padded) of head ``h`` of user ``batch_idx``
(``fill_cache``: from position ``update_idx``, a multiple of 32) or, paged, of user ``batch_idx_tensor[i]`` for input
row i (``batch_idx`` when there is no tensor; then input_batch is 1), through that user's page-table row. The names and
defaults are upstream's (``ttnn.fill_cache``, ``ttnn.experimental.paged_fill_cache``). Unlike upstream, which copies
tiles raw and so requires the cache's dtype, the input may be in any of those formats: each tile is unpacked and
packed again in the cache's format by the packer (a bfloat8_b cache gets shared exponents per 16-datum face row, as
any op producing bfloat8_b), so a model can pass its bfloat16 prefill K/V as they are.

The program (``ops/fill_cache/kernels/dataflow/reader_fill_cache.cpp``,
``ops/convert/kernels/compute/compute_copy.cpp``, ``ops/fill_cache/kernels/dataflow/writer_fill_cache.cpp``) splits
the input's tile rows (user, head, 32 positions) over the grid; the reader finds each one's place in the cache (through
the page table, and the batch index tensor, both read at run time: ``update_cache_common.hpp: locate_fill_row``),
compute converts the tiles and the writer writes them. At run time a batch index past the page table's rows, or a
page-table entry past the cache's blocks, writes nothing for those tiles; host values (``batch_idx``, a torch page table
or batch index tensor) are checked before anything runs.

A ring cache (upstream's ``cache_position_modulo = M``, M / 32 = ``ring_tiles``): only the prefill's last M positions
survive, so the reader keeps the tile rows ``[end - ring_tiles, end)`` and writes tile row t at ring tile row ``t %
ring_tiles`` (before the page-table lookup, as upstream's writer); ``end`` is the input's tile rows or, with
upstream's ``valid_seq_len_tensor`` (one int read at run time: the real prompt length), that length in tiles rounded
up to whole blocks when shorter, so the padding tail never wraps over the real recent positions.

Parts as every op's (:mod:`ttflashdecode.ops`): ``api``, ``validate``, ``args``, ``factory``, ``kernels/``.
"""

from ttflashdecode.ops.fill_cache.api import fill_cache, paged_fill_cache

__all__ = ["fill_cache", "paged_fill_cache"]
