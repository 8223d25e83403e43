"""The shapes of one decode call: everything about its tensors that a plan depends on.

Pure Python (no ttnn). :class:`DecodeShapes` checks itself on construction, so every planner function can trust
the numbers it is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ttflashdecode.config import TILE

# Bytes of one 32x32 tile per data format. Block-float formats store 1024 mantissas plus one shared
# exponent per 16 values (64 B for a tile).
TILE_BYTES: dict[str, int] = {
    "bfloat16": 2048,
    "float32": 4096,
    "bfloat8_b": 1088,
    "bfloat4_b": 576,
}
DTYPES = tuple(TILE_BYTES)


def is_int(value) -> bool:
    """An int that is not a bool (``True`` is a mistake, not a 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class DecodeShapes:
    """Everything about one decode call's tensors that the plan depends on.

    Q is [q_len, batch, n_q_heads, head_dim]; K is [batch, n_kv_heads, kv_len, head_dim] (or paged:
    blocks of ``block_size`` positions, ``max_blocks_per_user`` per user, so kv_len must equal
    their product); V likewise with ``v_head_dim``. Dtypes are ttnn dtype names.
    """

    batch: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    kv_len: int
    v_head_dim: int | None = None  # None: same as head_dim
    q_len: int = 1
    q_dtype: str = "bfloat16"
    k_dtype: str = "bfloat16"
    v_dtype: str = "bfloat16"
    out_dtype: str = "bfloat16"
    block_size: int | None = None
    max_blocks_per_user: int | None = None
    sliding_window_size: int = 0  # 0: no window
    share_cache: bool = False  # every user reads user 0's K/V
    is_causal: bool = True  # False: every query sees all kv_len positions (cur_pos is kv_len - 1 for all users)
    attn_mask_heads: int = 0  # non-causal user mask [b, attn_mask_heads, q_len, kv_len]; 0 = no mask
    attn_mask_dtype: str = "bfloat16"  # bfloat16 or bfloat8_b (unpacked to bfloat16 rows by the reader)
    has_attention_sink: bool = False
    v_from_k: bool = False  # multi-latent attention: V is the first v_head_dim columns of K (the cache read once)
    # Positions the cache holds (its logical length): kv_len is that rounded up to whole tiles, the length the
    # kernels stream; positions past logical_kv_len are tile padding and never attended. None: kv_len.
    logical_kv_len: int | None = None
    # Paged ring-buffer cache (upstream's cache_position_modulo, in positions; 0: none): logical position p lives in
    # the page-table slot of p % ring_len, so positions grow past the cache while a sliding window keeps the ring
    # holding every position a query sees. A multiple of block_size of at most kv_len.
    ring_len: int = 0
    # Consecutive users that share one page-table row (upstream's spec_multi_pos_tiles: a batch row's candidates
    # are users of their own, all reading the row's page table). 1: a row per user. Users sharing a row share its
    # cache, so they form one group per kv head (their rows stacked user by user, each at its own causal bound) and
    # every chunk of the row is read once for all of them.
    users_per_page_row: int = 1
    # The device's DRAM read alignment (Wormhole 32 B, Blackhole 64 B; ttflashdecode.device_arch): the cur_pos and
    # page-table pages the readers fetch whole are padded to it in their CBs.
    dram_alignment: int = 32

    def __post_init__(self) -> None:
        if self.v_head_dim is None:
            object.__setattr__(self, "v_head_dim", self.head_dim)
        for name in ("batch", "n_q_heads", "n_kv_heads", "head_dim", "v_head_dim", "kv_len", "q_len"):
            value = getattr(self, name)
            if not is_int(value) or value <= 0:
                raise ValueError(f"{name}={value!r}: expected a positive integer")
        # K/V rows and head dims are read as whole tiles.
        for name in ("head_dim", "v_head_dim", "kv_len"):
            value = getattr(self, name)
            if value % TILE:
                raise ValueError(f"{name}={value}: expected a multiple of {TILE} (tile size)")
        if self.logical_kv_len is None:
            object.__setattr__(self, "logical_kv_len", self.kv_len)
        if not (is_int(self.logical_kv_len) and 0 < self.logical_kv_len <= self.kv_len < self.logical_kv_len + TILE):
            raise ValueError(
                f"logical_kv_len={self.logical_kv_len!r}: expected kv_len={self.kv_len} or fewer positions in its last "
                "tile"
            )
        if self.n_q_heads % self.n_kv_heads:
            raise ValueError(
                f"n_q_heads={self.n_q_heads}: expected a multiple of n_kv_heads={self.n_kv_heads} "
                "(each kv head serves the same number of q heads)"
            )
        for name in ("q_dtype", "k_dtype", "v_dtype", "out_dtype"):
            value = getattr(self, name)
            if value not in TILE_BYTES:
                raise ValueError(f"{name}={value!r}: expected one of {', '.join(DTYPES)}")
        if self.v_from_k and (self.v_head_dim > self.head_dim or self.v_dtype != self.k_dtype):
            raise ValueError(
                f"v_head_dim={self.v_head_dim}, v_dtype={self.v_dtype!r}: with V taken from K (MLA) expected at most "
                f"head_dim={self.head_dim} columns of K's dtype {self.k_dtype!r}"
            )
        if self.attn_mask_dtype not in ("bfloat16", "bfloat8_b"):
            raise ValueError(f"attn_mask_dtype={self.attn_mask_dtype!r}: expected 'bfloat16' or 'bfloat8_b'")
        if self.attn_mask_heads not in (0, 1, self.n_q_heads):
            raise ValueError(
                f"attn_mask_heads={self.attn_mask_heads!r}: expected 0 (no mask), 1 or n_q_heads={self.n_q_heads}"
            )
        w = self.sliding_window_size
        if not is_int(w) or w < 0:
            raise ValueError(f"sliding_window_size={w!r}: expected 0 (no window) or a positive integer")
        if (self.block_size is None) != (self.max_blocks_per_user is None):
            raise ValueError(
                f"block_size={self.block_size!r}, max_blocks_per_user={self.max_blocks_per_user!r}: "
                "expected both set (paged KV cache) or both None"
            )
        if self.block_size is not None:
            for name in ("block_size", "max_blocks_per_user"):
                value = getattr(self, name)
                if not is_int(value) or value <= 0:
                    raise ValueError(f"{name}={value!r}: expected a positive integer")
            if self.block_size % TILE:
                raise ValueError(f"block_size={self.block_size}: expected a multiple of {TILE}")
            if self.kv_len != self.block_size * self.max_blocks_per_user:
                raise ValueError(
                    f"kv_len={self.kv_len}: expected block_size * max_blocks_per_user = "
                    f"{self.block_size} * {self.max_blocks_per_user} for a paged KV cache"
                )
        if not is_int(self.ring_len) or self.ring_len < 0:
            raise ValueError(f"ring_len={self.ring_len!r}: expected 0 (no ring) or a positive integer")
        if self.ring_len and not (
            self.block_size is not None and self.ring_len % self.block_size == 0 and self.ring_len <= self.kv_len
        ):
            raise ValueError(
                f"ring_len={self.ring_len}: a ring needs a paged cache and a multiple of block_size={self.block_size} "
                f"of at most kv_len={self.kv_len}"
            )
        if not is_int(self.users_per_page_row) or self.users_per_page_row <= 0 or self.batch % self.users_per_page_row:
            raise ValueError(
                f"users_per_page_row={self.users_per_page_row!r}: expected a positive divisor of batch={self.batch}"
            )

    @property
    def is_paged(self) -> bool:
        return self.block_size is not None

    @property
    def position_limit(self) -> int:
        """cur_pos must be below it (THE position contract's upper bound): the cache's logical length; on a ring with
        a sliding window any int32 position (the window keeps what a query sees inside the ring); on a ring without
        one the ring's length (past it a query would see ring rows twice)."""
        if self.ring_len == 0:
            return self.logical_kv_len
        return 2**31 - 1 if self.sliding_window_size else self.ring_len

    @property
    def q_heads_per_kv(self) -> int:
        """G: q heads sharing one kv head."""
        return self.n_q_heads // self.n_kv_heads

    @property
    def num_groups(self) -> int:
        """(page-table row, kv head) groups: one a (user, kv head) unless users share a page-table row."""
        return self.batch // self.users_per_page_row * self.n_kv_heads

    @property
    def group_rows(self) -> int:
        """Query rows of a group: q_len tokens x G heads of each of its users."""
        return self.users_per_page_row * self.q_len * self.q_heads_per_kv

    @property
    def PNHt(self) -> int:
        """Q tiles (rows) per group: its query rows padded to whole tiles."""
        return math.ceil(self.group_rows / TILE)

    @property
    def q_tile_rows(self) -> int:
        """Rows of the tiles that hold a group's query rows and everything row-shaped computed from them (scores,
        probabilities, running max / sum, O, partials, output block): 16 when a group has at most 16 query rows
        (upstream's half tiles for up to 16 q heads), else 32. A 16 x 32 tile halves the QK and PV matmuls' math, the
        exp's SFPU work (two faces) and every unpack and pack of those tiles. User masks keep full tiles."""
        return 16 if self.group_rows <= 16 and self.attn_mask_heads == 0 else TILE

    @property
    def DHt(self) -> int:
        return self.head_dim // TILE

    @property
    def vDHt(self) -> int:
        return self.v_head_dim // TILE
