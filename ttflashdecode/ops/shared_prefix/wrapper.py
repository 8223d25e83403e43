"""Shared-prefix decode as a plan / run object (:class:`SharedPrefixDecodeWrapper`): ``plan`` checks the groups and
shapes and plans both levels once, ``run`` checks a step's tensors and launches the prefix level, the suffix level and
the merge."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ttflashdecode.backend import backend_for, import_ttnn
from ttflashdecode.checks import KV_DTYPES, as_int, check_device_tensor, check_scale
from ttflashdecode.config import AUTO, TILE, ProgramConfig
from ttflashdecode.device_arch import chip_facts
from ttflashdecode.ops.decode.factory import DecodeBuffers, build_program
from ttflashdecode.ops.descriptors import ComputeSettings
from ttflashdecode.ops.shared_prefix.factory import build_merge_program
from ttflashdecode.ops.shared_prefix.plan import MAX_GROUP_ROWS, PARTIAL_EXTRA_COLS, SharedPrefixPlan, partial_plan
from ttflashdecode.ops.shared_prefix.validate import OUT_DTYPES, check_dtype, check_groups
from ttflashdecode.plan import DecodeShapes

# Program sets a wrapper keeps, one per set of tensor addresses (oldest dropped first).
MAX_PROGRAM_SETS = 16


@dataclass
class SharedPrefixResult:
    """A run's plan and its three programs' emulator statistics (None on a card)."""

    plan: SharedPrefixPlan
    prefix_stats: object
    suffix_stats: object
    merge_stats: object

    @property
    def duration_ns(self) -> float | None:
        """Modelled device time of the three programs one after another (None if any has none)."""
        parts = [
            s.duration_ns if s is not None else None for s in (self.prefix_stats, self.suffix_stats, self.merge_stats)
        ]
        return None if any(p is None for p in parts) else float(sum(parts))


class SharedPrefixDecodeWrapper:
    """Shared-prefix decode as a plan / run object (FlashInfer's manner).

    ``plan(...)`` once per set of groups and shapes (it uploads the prefix level's constant positions and allocates
    the two partial tensors), ``run(q, k, v, ...)`` per layer and step. ``program_config`` and
    ``compute_kernel_config`` are as :class:`~ttflashdecode.FlashDecodeWrapper`'s; both levels use them, unless
    ``prefix_program_config`` gives the prefix level its own.
    """

    def __init__(self, device, program_config=None, compute_kernel_config=None, prefix_program_config=None):
        if not callable(getattr(device, "compute_with_storage_grid_size", None)):
            raise TypeError(f"device={device!r}: expected a ttnn device or an emulator device")
        self._backend = backend_for(device)
        if self._backend.num_chips > 1:
            raise ValueError("device: shared-prefix decode runs on one chip (meshes are not supported)")
        self._grid = self._backend.grid()
        self._compute = ComputeSettings.coerce(compute_kernel_config)
        self._config = ProgramConfig.coerce(AUTO if program_config is None else program_config, default_grid=self._grid)
        self._prefix_config = (
            self._config
            if prefix_program_config is None
            else ProgramConfig.coerce(prefix_program_config, default_grid=self._grid)
        )
        self._plan: SharedPrefixPlan | None = None
        self._prefix_positions = None
        self._partials = None
        self._programs: dict = {}
        self.last_run: SharedPrefixResult | None = None

    @property
    def shared_prefix_plan(self) -> SharedPrefixPlan | None:
        return self._plan

    def plan(
        self,
        *,
        groups,
        prefix_lens,
        batch: int,
        n_q_heads: int,
        n_kv_heads: int,
        head_dim: int,
        block_size: int,
        max_prefix_blocks: int,
        max_suffix_blocks: int,
        kv_dtype=None,
        v_dtype=None,
        v_head_dim: int | None = None,
        scale: float | None = None,
        dtype=None,
        max_suffix_pos: int | None = None,
        max_group_rows: int = MAX_GROUP_ROWS,
    ) -> SharedPrefixPlan:
        """Plan runs of one shape and one set of groups (``groups[g]``: the users sharing prefix g of
        ``prefix_lens[g]`` positions). Shapes: q ``[1, batch, n_q_heads, head_dim]``, paged K/V ``[num_blocks,
        n_kv_heads, block_size, head_dim]`` of ``kv_dtype`` (V: ``v_dtype``, ``v_head_dim``), a prefix page table of
        ``max_prefix_blocks`` entries a group and a suffix page table of ``max_suffix_blocks`` a user. ``dtype``: the
        output's (bfloat16 default, or float32). ``max_suffix_pos``: the largest suffix position runs will use, if
        known (it lets the planner pick a smaller k_chunk_size for the suffix level). ``max_group_rows``: query rows
        (users x q heads per kv head) of one prefix sub-group; a larger group is served in sub-groups, each reading
        the prefix once (:class:`PrefixGroups`)."""
        ttnn = import_ttnn()
        sizes = {
            "batch": batch,
            "n_q_heads": n_q_heads,
            "n_kv_heads": n_kv_heads,
            "head_dim": head_dim,
            "block_size": block_size,
            "max_prefix_blocks": max_prefix_blocks,
            "max_suffix_blocks": max_suffix_blocks,
        }
        for name, value in sizes.items():
            if as_int(value) is None or value <= 0:
                raise ValueError(f"{name}={value!r}: expected a positive int")
        scale = check_scale(scale)
        k_name = check_dtype("kv_dtype", kv_dtype or ttnn.bfloat16, KV_DTYPES)
        v_name = k_name if v_dtype is None else check_dtype("v_dtype", v_dtype, KV_DTYPES)
        out_dtype = check_dtype("dtype", dtype or ttnn.bfloat16, OUT_DTYPES)
        prefix_len = block_size * max_prefix_blocks
        if as_int(max_group_rows) is None or max_group_rows < 1:
            raise ValueError(f"max_group_rows={max_group_rows!r}: expected a positive int (query rows a sub-group)")
        if n_q_heads % n_kv_heads:
            raise ValueError(f"n_q_heads={n_q_heads}: expected a multiple of n_kv_heads={n_kv_heads}")
        per_subgroup = max(1, max_group_rows // (n_q_heads // n_kv_heads))
        found = check_groups(groups, prefix_lens, batch, prefix_len, per_subgroup)
        chip = chip_facts(self._backend.device)  # Wormhole's or Blackhole's L1 and DRAM alignment
        common = dict(
            n_q_heads=n_q_heads,
            n_kv_heads=n_kv_heads,
            head_dim=head_dim,
            v_head_dim=v_head_dim,
            k_dtype=k_name,
            v_dtype=v_name,
            out_dtype="float32",
            block_size=block_size,
            # The readers fetch the cur_pos and page-table pages in whole DRAM-aligned units (64 B on Blackhole):
            # their CBs are padded to the chip's alignment, not Wormhole's 32 B.
            dram_alignment=chip.dram_alignment,
        )
        prefix_shapes = DecodeShapes(
            batch=len(found.subgroups) * found.slots,
            kv_len=prefix_len,
            max_blocks_per_user=max_prefix_blocks,
            users_per_page_row=found.slots,
            **common,
        )
        suffix_shapes = DecodeShapes(
            batch=batch, kv_len=block_size * max_suffix_blocks, max_blocks_per_user=max_suffix_blocks, **common
        )
        fp32 = self._compute.fp32_dest_acc_en
        budget = chip.l1_budget
        prefix_plan = partial_plan(
            prefix_shapes, self._prefix_config, self._grid, max(found.prefix_lens) - 1, fp32, budget
        )
        if max_suffix_pos is not None:
            max_suffix_pos = min(suffix_shapes.kv_len, 1 << max(int(max_suffix_pos), 0).bit_length()) - 1
        suffix_plan = partial_plan(suffix_shapes, self._config, self._grid, max_suffix_pos, fp32, budget)
        scale = head_dim**-0.5 if scale is None else scale
        rows = batch * -(-n_q_heads // TILE)
        self._plan = SharedPrefixPlan(found, prefix_plan, suffix_plan, scale, out_dtype, rows)
        # What every run reuses: the prefix level's positions (constant for the plan) and the two partial tensors.
        self._prefix_positions = self._backend.int32_tensor(found.slot_positions(), [prefix_shapes.batch])
        partial_shape = [1, batch, n_q_heads, suffix_shapes.v_head_dim + PARTIAL_EXTRA_COLS]
        self._partials = tuple(
            self._backend.allocate(partial_shape, ttnn.float32, ttnn.TILE_LAYOUT) for _ in ("prefix", "suffix")
        )
        self._programs = {}
        return self._plan

    def run(
        self,
        q,
        k,
        v,
        *,
        prefix_page_table,
        suffix_page_table,
        suffix_cur_pos=None,
        suffix_cur_pos_tensor=None,
        output_tensor=None,
    ):
        """One decode step: q ``[1, b, n_q_heads, head_dim]`` bfloat16 (DRAM interleaved), paged K/V, the prefix page
        table (int32 ``[groups, max_prefix_blocks]``: row g holds prefix g's blocks), the suffix page table (int32
        ``[b, max_suffix_blocks]``: user u's own blocks, its suffix position p in block ``row[p // block_size]``) and
        each user's last suffix position, counted from the end of its prefix (``suffix_cur_pos`` ints, or an int32
        ``[b]`` device ``suffix_cur_pos_tensor`` read by the kernels at run time; -1: no suffix, the user attends to
        its prefix alone). Page tables may be torch tensors (uploaded) or device int32 row-major tensors.
        Returns the output ``[1, b, n_q_heads, v_head_dim]``."""
        p = self._plan
        if p is None:
            raise RuntimeError("SharedPrefixDecodeWrapper.run: call plan(...) first")
        ttnn = import_ttnn()
        s = p.suffix.shapes
        device = self._backend.device
        shape = check_device_tensor("q", q, 4, ("bfloat16",), layout="TILE", dram=False, device=device)
        if shape != (1, s.batch, s.n_q_heads, s.head_dim):
            raise ValueError(
                f"q: shape {list(shape)} does not match the plan's [1, {s.batch}, {s.n_q_heads}, "
                f"{s.head_dim}] (q_len 1 only)"
            )
        if q.memory_config().is_sharded():
            raise ValueError(f"q: expected an interleaved tensor (DRAM or L1), got {q.memory_config()}")
        for name, t, d, want in (("k", k, s.head_dim, s.k_dtype), ("v", v, s.v_head_dim, s.v_dtype)):
            kshape = check_device_tensor(name, t, 4, (want,), device=device)
            if kshape[1:] != (s.n_kv_heads, s.block_size, d):
                raise ValueError(
                    f"{name}: shape {list(kshape)} does not match the plan's [num_blocks, {s.n_kv_heads}, "
                    f"{s.block_size}, {d}]"
                )
        num_blocks = int(k.shape[0])
        if int(v.shape[0]) != num_blocks:
            raise ValueError(f"v: {int(v.shape[0])} blocks, k has {num_blocks}")
        groups = len(p.groups.users)
        prefix_table = self._table(
            "prefix_page_table",
            prefix_page_table,
            groups,
            p.prefix.shapes.max_blocks_per_user,
            num_blocks,
            [math.ceil(n / s.block_size) for n in p.groups.prefix_lens],
        )
        positions = self._suffix_positions(suffix_cur_pos, suffix_cur_pos_tensor)
        needed = None
        if suffix_cur_pos is not None:
            needed = [(c + 1 + s.block_size - 1) // s.block_size for c in suffix_cur_pos]
        suffix_table = self._table(
            "suffix_page_table", suffix_page_table, s.batch, s.max_blocks_per_user, num_blocks, needed
        )
        out_shape = [1, s.batch, s.n_q_heads, s.v_head_dim]
        if output_tensor is None:
            out = self._backend.allocate(out_shape, getattr(ttnn, p.out_dtype), ttnn.TILE_LAYOUT)
        else:
            got = check_device_tensor("output_tensor", output_tensor, 4, (p.out_dtype,), device=device)
            if list(got) != out_shape:
                raise ValueError(f"output_tensor: shape {list(got)}, expected {out_shape}")
            out = output_tensor

        prefix_out, suffix_out = self._partials
        prefix_buffers = DecodeBuffers(q, k, v, self._prefix_positions, prefix_out, page_table=prefix_table)
        suffix_buffers = DecodeBuffers(q, k, v, positions, suffix_out, page_table=suffix_table)
        key = tuple(self._backend.address_key(t) for t in (q, k, v, prefix_table, suffix_table, positions, out))
        launch = self._programs.get(key)
        if launch is None:
            noc = self._backend.noc_coord
            stride = self._backend.noc1_reader_stride()
            prefix_program = build_program(
                p.prefix,
                prefix_buffers,
                noc,
                self._compute,
                scale=p.scale,
                emit_partial=True,
                slot_users=p.groups.slot_users(),
                slot_page_rows=p.groups.page_rows(),
                noc1_stride=stride,
            )
            suffix_program = build_program(
                p.suffix, suffix_buffers, noc, self._compute, scale=p.scale, emit_partial=True, noc1_stride=stride
            )
            merge_program = build_merge_program(prefix_out, suffix_out, out, p, self._grid)
            launch = tuple(self._backend.launchable([prog]) for prog in (prefix_program, suffix_program, merge_program))
            if len(self._programs) >= MAX_PROGRAM_SETS:  # host page tables upload anew each run: keep the newest
                self._programs.pop(next(iter(self._programs)))
            self._programs[key] = launch
        prefix_stats = self._backend.run(prefix_buffers.io_tensors(), launch[0])
        suffix_stats = self._backend.run(suffix_buffers.io_tensors(), launch[1])
        merge_stats = self._backend.run([prefix_out, suffix_out, out], launch[2])
        self.last_run = SharedPrefixResult(p, prefix_stats, suffix_stats, merge_stats)
        return out

    # ---- steps ---------------------------------------------------------------------------------------------------

    def _suffix_positions(self, suffix_cur_pos, suffix_cur_pos_tensor):
        s = self._plan.suffix.shapes
        if (suffix_cur_pos is None) == (suffix_cur_pos_tensor is None):
            raise ValueError("suffix_cur_pos / suffix_cur_pos_tensor: expected exactly one of them")
        if suffix_cur_pos_tensor is not None:
            shape = check_device_tensor(
                "suffix_cur_pos_tensor",
                suffix_cur_pos_tensor,
                1,
                ("int32", "uint32"),
                layout="ROW_MAJOR",
                device=self._backend.device,
            )
            if shape != (s.batch,):
                raise ValueError(f"suffix_cur_pos_tensor: shape {list(shape)}, expected [{s.batch}]")
            return suffix_cur_pos_tensor
        if not isinstance(suffix_cur_pos, (list, tuple)) or len(suffix_cur_pos) != s.batch:
            raise ValueError(f"suffix_cur_pos={suffix_cur_pos!r}: expected a list of {s.batch} ints (one a user)")
        for u, c in enumerate(suffix_cur_pos):
            n = as_int(c)
            if n is None or not -1 <= n < s.kv_len:
                raise ValueError(
                    f"suffix_cur_pos[{u}]={c!r}: expected -1 (no suffix) or a position in [0, {s.kv_len}) (the suffix "
                    "page table's max_blocks x block_size)"
                )
        return self._backend.int32_tensor(list(suffix_cur_pos), [s.batch])

    def _table(self, name: str, table, rows: int, width: int, num_blocks: int, needed: list[int] | None):
        """A page table as the kernels read it: a device int32 ``[rows, width]`` tensor (entries trusted: a needed one
        outside ``[0, num_blocks)`` makes that level skip the user), or a torch tensor checked and uploaded."""
        if isinstance(table, torch.Tensor):
            if table.dim() != 2 or tuple(table.shape) != (rows, width):
                raise ValueError(f"{name}: shape {list(table.shape)}, expected [{rows}, {width}]")
            for r in range(rows):
                for i in range(needed[r] if needed is not None else 0):
                    entry = int(table[r, i])
                    if not 0 <= entry < num_blocks:
                        raise ValueError(
                            f"{name}[{r}, {i}]={entry}: expected a block in [0, {num_blocks}) (k's blocks)"
                        )
            return self._backend.int32_tensor(table.to(torch.int32).tolist(), [rows, width])
        shape = check_device_tensor(
            name, table, 2, ("int32", "uint32"), layout="ROW_MAJOR", device=self._backend.device
        )
        if shape != (rows, width):
            raise ValueError(f"{name}: shape {list(shape)}, expected [{rows}, {width}]")
        return table
