"""FlashDecode as a plan/run object: planned once per shape and configuration, run per layer and decode step.

    wrapper = ttflashdecode.FlashDecodeWrapper(device, program_config="llama-3.1-8b/n150")
    wrapper.plan(batch=8, n_q_heads=32, n_kv_heads=8, head_dim=128, kv_len=4096, kv_dtype=ttnn.bfloat8_b)
    for step in range(num_steps):
        for layer in range(num_layers):
            out = wrapper.run(q[layer], k[layer], v[layer], cur_pos_tensor=cur_pos)

:meth:`FlashDecodeWrapper.plan` takes everything that decides the program (shapes, dtypes, masks and sinks, the
output's dtype and placement; the program config and compute settings at construction) and runs the planner
(:mod:`ttflashdecode.plan`) once. :meth:`FlashDecodeWrapper.run` checks the call's tensors, refuses any that do not
match the plan (naming the argument), and launches: positions and page tables are device tensors the kernels read
at run time, so one program serves every step, and one compiled kernel set every layer.

The class is a public face: the run (its checks, the fast path, the programs, the launch) is the decode pipeline's
(:class:`~ttflashdecode.ops.decode.pipeline.DecodePipeline`), which the module-level functions of
:mod:`ttflashdecode.ops.decode.api` run on as well.
"""

from __future__ import annotations

from ttflashdecode.backend import import_ttnn
from ttflashdecode.checks import (
    KV_DTYPES,
    as_int,
    check_bool,
    check_scale,
    check_sliding_window,
    dtype_name_of,
    padded_rows,
)
from ttflashdecode.device_arch import chip_facts
from ttflashdecode.ops.decode.pipeline import DecodePipeline, DecodeResult
from ttflashdecode.ops.decode.validate import (
    DecodeCall,
    check_head_dim_v,
    check_mesh_heads_divide,
    check_mesh_users_split,
    check_out_dtype,
    check_output_memory_config,
    check_q_len,
    decode_dtype,
)
from ttflashdecode.plan import DecodePlan, DecodeShapes


class FlashDecodeWrapper:
    """Decode attention on one device, planned once (:meth:`plan`) and run per layer and step (:meth:`run`).

    device: a Wormhole device or mesh (ttnn ``MeshDevice``), an emulated chip (``ttemu.open_device()``)
        or an emulated mesh (``ttemu.open_mesh_device()``). On a mesh of N chips the heads are
        split over the chips: :meth:`plan` takes the model's heads (each chip plans ``n_q_heads / N`` q and
        ``n_kv_heads / N`` kv heads: one plan, the same for every chip) and :meth:`run` takes mesh tensors whose heads
        are sharded over the chips (q on dim 2, K/V on dim 1), each chip running the program for its shard.
    program_config: ``ProgramConfig``, ``ttnn.SDPAProgramConfig``, a name from ``program_configs/`` (read once,
        here), ``"auto"`` or None (the same: the tuned table shipped in the package, else the fixed rule; a lookup,
        :mod:`ttflashdecode.plan.auto`), ``"tune"`` (chosen at a shape's first call by the emulator's timing model,
        :mod:`ttflashdecode.tuning`) or a function of a :class:`~ttflashdecode.plan.auto.PlanRequest` returning a
        config (or None: the default's).
    compute_kernel_config: ``ttnn.WormholeComputeKernelConfig`` or None (HiFi4, exact exp, bfloat16 DST).
    """

    def __init__(self, device, program_config=None, compute_kernel_config=None):
        self._pipeline = DecodePipeline(device, program_config, compute_kernel_config)

    @property
    def device(self):
        return self._pipeline.device

    @property
    def program_config(self):
        return self._pipeline.program_config

    @property
    def decode_plan(self) -> DecodePlan | None:
        """The current plan (None before :meth:`plan`)."""
        return self._pipeline.decode_plan

    @property
    def planned_call(self) -> DecodeCall | None:
        """What the plan fixes for every run besides the plan itself (shapes, scale, output form), as a
        :class:`~ttflashdecode.ops.decode.validate.DecodeCall` without tensors (None before :meth:`plan`)."""
        planned = self._pipeline.planned
        return None if planned is None else planned.call

    @property
    def last_run(self) -> DecodeResult | None:
        """The last run's :class:`~ttflashdecode.ops.decode.pipeline.DecodeResult` (None before the first)."""
        return self._pipeline.last_run

    # ---- plan ---------------------------------------------------------------------------------------------------

    def plan(
        self,
        *,
        batch: int,
        n_q_heads: int,
        n_kv_heads: int,
        head_dim: int,
        kv_len: int | None = None,
        v_head_dim: int | None = None,
        q_len: int = 1,
        kv_dtype=None,
        v_dtype=None,
        block_size: int | None = None,
        max_blocks_per_user: int | None = None,
        v_from_k: bool = False,
        is_causal: bool = True,
        sliding_window_size: int | None = None,
        scale: float | None = None,
        share_cache: bool = False,
        attn_mask_heads: int = 0,
        attn_mask_dtype=None,
        attention_sink: bool = False,
        dtype=None,
        memory_config=None,
        layout=None,
        max_cur_pos: int | None = None,
        users_mesh_axis: int | None = None,
    ) -> DecodePlan:
        """Plan decode calls of one shape; every :meth:`run` until the next plan must match it.

        Shapes as in :func:`ttflashdecode.scaled_dot_product_attention_decode`: q ``[q_len, batch, n_q_heads,
        head_dim]``, K/V ``[batch, n_kv_heads, kv_len, head_dim / v_head_dim]`` of ``kv_dtype`` / ``v_dtype`` (ttnn
        dtypes, default ``ttnn.bfloat16``; V's default K's). Paged caches give ``block_size`` and
        ``max_blocks_per_user`` (kv_len is their product); ``v_from_k`` is multi-latent attention (V is K's first
        ``v_head_dim`` columns, runs pass no v). ``attn_mask_heads`` (1 or n_q_heads; 0: no mask) and
        ``attn_mask_dtype`` describe a non-causal call's mask, ``attention_sink`` whether runs pass sinks.
        ``dtype``, ``memory_config`` and ``layout`` describe the output (the output's layout is q's, TILE by
        default); ``is_causal``, ``sliding_window_size``, ``scale`` and ``share_cache`` are the op's.
        ``max_cur_pos``: the largest position runs will use, if known; it only lets a derived k_chunk_size be
        smaller (a device cur_pos tensor otherwise plans for the whole cache).

        On a mesh of N chips ``n_q_heads`` and ``n_kv_heads`` are the model's (both must be multiples of N: each
        chip takes ``1/N`` of them; one kv head, MQA or MLA, is replicated on every chip instead) and
        ``attn_mask_heads`` is 1 or the model's ``n_q_heads``; the plan (and :attr:`decode_plan`) is one chip's.
        ``users_mesh_axis`` (0: the mesh's rows, 1: its columns) splits the ``batch`` users along that mesh axis and
        the heads along the other instead (a Galaxy's Llama-3.1-70B: ``users_mesh_axis=1``, users over the 4
        columns, kv heads over the 8 rows; runs pass q with ``ShardTensor2dMesh(dims=(2, 1))``).

        Raises ValueError / TypeError naming the argument, or :class:`~ttflashdecode.plan.L1OverflowError`.
        """
        ttnn = import_ttnn()
        pipeline = self._pipeline
        pipeline.planned = None  # a plan that fails leaves none behind
        if users_mesh_axis is not None:
            batch, n_q_heads, n_kv_heads = check_mesh_users_split(
                users_mesh_axis, batch, n_q_heads, n_kv_heads, pipeline.backend.mesh_shape(), attn_mask_heads
            )
        elif pipeline.num_chips > 1:
            if attn_mask_heads and attn_mask_heads == n_q_heads:
                attn_mask_heads = n_q_heads // pipeline.num_chips if isinstance(n_q_heads, int) else attn_mask_heads
            n_q_heads, n_kv_heads = check_mesh_heads_divide(
                n_q_heads, n_kv_heads, pipeline.num_chips, pipeline.backend.mesh_shape()
            )
        is_causal = check_bool("is_causal", is_causal)
        window = check_sliding_window(sliding_window_size, is_causal)
        q_len = check_q_len(q_len)
        scale = check_scale(scale)
        paged = block_size is not None or max_blocks_per_user is not None
        logical_kv_len = kv_len
        if paged:
            if kv_len is not None and kv_len != _product(block_size, max_blocks_per_user):
                raise ValueError(
                    f"kv_len={kv_len!r}: a paged cache's kv_len is block_size * max_blocks_per_user "
                    f"= {block_size!r} * {max_blocks_per_user!r}; leave it None"
                )
            logical_kv_len = kv_len = _product(block_size, max_blocks_per_user)
        elif as_int(kv_len) is None or as_int(kv_len) <= 0:
            raise ValueError(f"kv_len={kv_len!r}: expected a positive int (or block_size and max_blocks_per_user)")
        else:
            logical_kv_len = as_int(kv_len)
            kv_len = padded_rows(logical_kv_len)  # the kernels stream whole tiles and never attend the padding
        if v_from_k:
            v_head_dim = check_head_dim_v(v_head_dim, head_dim)
        k_name = _dtype_arg("kv_dtype", kv_dtype or ttnn.bfloat16, KV_DTYPES)
        v_name = k_name if v_from_k or v_dtype is None else _dtype_arg("v_dtype", v_dtype, KV_DTYPES)
        mask_name = _dtype_arg("attn_mask_dtype", attn_mask_dtype or ttnn.bfloat16, ("bfloat16", "bfloat8_b"))
        if attn_mask_heads and is_causal:
            raise ValueError("attn_mask_heads: must be 0 when is_causal=True (causality comes from cur_pos)")
        out_dtype = check_out_dtype(dtype, None) or "bfloat16"
        out_layout = _layout_arg(layout)
        shapes = DecodeShapes(
            batch=batch,
            n_q_heads=n_q_heads,
            n_kv_heads=n_kv_heads,
            head_dim=head_dim,
            kv_len=kv_len,
            logical_kv_len=logical_kv_len,
            v_head_dim=v_head_dim,
            q_len=q_len,
            k_dtype=k_name,
            v_dtype=v_name,
            block_size=block_size,
            max_blocks_per_user=max_blocks_per_user,
            sliding_window_size=window,
            share_cache=check_bool("share_cache", share_cache),
            is_causal=is_causal,
            attn_mask_heads=attn_mask_heads,
            attn_mask_dtype=mask_name,
            has_attention_sink=check_bool("attention_sink", attention_sink),
            v_from_k=check_bool("v_from_k", v_from_k),
            out_dtype=decode_dtype(out_dtype, pipeline.compute.fp32_dest_acc_en),
            dram_alignment=chip_facts(pipeline.backend.device).dram_alignment,
        )
        out_shape = (shapes.q_len, shapes.batch, shapes.n_q_heads, shapes.v_head_dim)
        memory_config = check_output_memory_config(memory_config, out_shape, pipeline.grid, out_dtype, out_layout)
        call = DecodeCall(
            shapes,
            out_shape,
            out_dtype,
            memory_config,
            positions=None,
            page_table_rows=None,
            scale=scale,
            num_blocks=None,
            out_layout=out_layout,
        )
        decode_plan = pipeline.plan_call(call, new_output=True, max_cur_pos=max_cur_pos)
        pipeline.prepare(call)
        return decode_plan

    # ---- run ----------------------------------------------------------------------------------------------------

    def run(
        self,
        q,
        k,
        v=None,
        *,
        cur_pos=None,
        cur_pos_tensor=None,
        page_table_tensor=None,
        attn_mask=None,
        attention_sink=None,
        output_tensor=None,
        validate_device_tensors: bool = False,
        return_stats: bool = False,
    ):
        """One decode call of the planned shape: q, k, v (None with ``v_from_k``) and the per-call tensors as in
        :func:`ttflashdecode.scaled_dot_product_attention_decode`. Returns the output, or ``(output, DecodeResult)``
        with ``return_stats=True`` (also kept as :attr:`last_run`)."""
        return self._pipeline.run(
            (q, k, v, cur_pos_tensor, page_table_tensor, attn_mask, attention_sink, output_tensor),
            cur_pos,
            validate_device_tensors,
            return_stats,
        )


# ---- plan()'s argument checks -----------------------------------------------------------------------------------


def _product(block_size, max_blocks_per_user) -> int:
    for name, value in (("block_size", block_size), ("max_blocks_per_user", max_blocks_per_user)):
        if as_int(value) is None or value <= 0:
            raise ValueError(f"{name}={value!r}: expected a positive int (a paged cache needs both)")
    return block_size * max_blocks_per_user


def _dtype_arg(name: str, dtype, allowed: tuple[str, ...]) -> str:
    if not isinstance(dtype, import_ttnn().DataType):
        raise TypeError(f"{name}={dtype!r} ({type(dtype).__name__}): expected a ttnn.DataType")
    value = dtype_name_of(dtype)
    if value not in allowed:
        raise ValueError(f"{name}={dtype}: expected one of {', '.join('ttnn.' + d for d in allowed)}")
    return value


def _layout_arg(layout) -> str:
    ttnn = import_ttnn()
    if layout is None or layout == ttnn.TILE_LAYOUT:
        return "TILE"
    if layout == ttnn.ROW_MAJOR_LAYOUT:
        return "ROW_MAJOR"
    raise ValueError(f"layout={layout!r}: expected ttnn.TILE_LAYOUT or ttnn.ROW_MAJOR_LAYOUT (q's and the output's)")


__all__ = ["FlashDecodeWrapper", "DecodeResult"]
