"""The public fused functions (``update_cache_and_decode``, ``paged_update_cache_and_decode``) and one call's run:
both halves checked on the host, planned (:mod:`ttflashdecode.ops.fused.plan`), the program built once per plan and
tensor addresses (:mod:`ttflashdecode.ops.fused.factory`) and launched."""

from __future__ import annotations

from dataclasses import dataclass

from ttflashdecode.backend import backend_of
from ttflashdecode.checks import check_bool, check_device_tensor
from ttflashdecode.config import ProgramConfig
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.decode.factory import DecodeBuffers
from ttflashdecode.ops.decode.pipeline import check_cbs_end_below, tensor_key
from ttflashdecode.ops.decode.request import request_of
from ttflashdecode.ops.decode.validate import BLOCK_FLOAT_OUT_DTYPES
from ttflashdecode.ops.fused.factory import build_fused_program
from ttflashdecode.ops.fused.plan import FusedPlan, plan_fused
from ttflashdecode.ops.update_cache.args import UpdateShapes
from ttflashdecode.ops.update_cache.validate import check_update


@dataclass
class FusedResult:
    """What a fused call launched (``return_stats=True``): its plan and, on the emulator, the run's statistics."""

    plan: FusedPlan
    update_shapes: UpdateShapes
    stats: object | None


# ---- the ops ----------------------------------------------------------------------------------------------------


def update_cache_and_decode(
    q,
    k,
    v,
    k_new,
    v_new,
    *,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink=None,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
    dtype=None,
    return_stats: bool = False,
):
    """Writes ``k_new`` / ``v_new`` (``[1, b, n_kv_heads, head_dim]`` bfloat16, DRAM or L1 interleaved) into the caches
    ``k`` / ``v`` (``[b, n_kv_heads, kv_len, head_dim]``) at each user's position, then attends with ``q``
    (``[1, b, n_q_heads, head_dim]``) over positions up to it, in one program. Positions: exactly one of ``cur_pos``
    (ints) or ``cur_pos_tensor`` (int32 ``[b]``; a device tensor is read by the kernels at run time); -1 skips a user
    (nothing written, output rows zero). The other arguments are
    :func:`ttflashdecode.scaled_dot_product_attention_decode`'s (causal, one query token per user; no mask, shared cache
    or block-float output), except that ``program_config=None`` is the planner's fixed rule on the device grid (the op's
    default is the tuned table, else that rule). Returns the output; the caches are updated in place, exactly as
    :func:`ttflashdecode.paged_fused_update_cache` updates them. ``return_stats=True`` returns ``(output,
    FusedResult)``."""
    return _fused(locals())


def paged_update_cache_and_decode(
    q,
    k,
    v,
    k_new,
    v_new,
    page_table_tensor,
    *,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    sliding_window_size: int | None = None,
    attention_sink=None,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
    dtype=None,
    return_stats: bool = False,
):
    """:func:`update_cache_and_decode` over a paged cache ``[num_blocks, n_kv_heads, block_size, head_dim]`` and
    ``page_table_tensor`` (int32 ``[b, max_blocks_per_user]``), as in
    :func:`ttflashdecode.paged_scaled_dot_product_attention_decode` and :func:`ttflashdecode.paged_update_cache`."""
    return _fused(locals())


# ---- one call ---------------------------------------------------------------------------------------------------


def _fused(arguments: dict):
    """One call: ``arguments`` are the public function's (its ``locals()`` on entry): the decode family's request
    (:class:`~ttflashdecode.ops.decode.request.DecodeRequest`: causal, no mask, no shared cache) and the new rows."""
    arguments = dict(arguments)
    k_new, v_new = arguments.pop("k_new"), arguments.pop("v_new")
    request, return_stats = request_of(arguments)
    return_stats = check_bool("return_stats", return_stats)
    # ---- check both halves on the host before any device work
    q, k, v, page_table, attention_sink = request.q, request.k, request.v, request.page_table, request.attention_sink
    check_device_tensor("q", q, 4, ("bfloat16",), layout=None, dram=False)
    backend = backend_of(q)
    if backend.num_chips > 1:
        raise ValueError(
            f"q: lives on a mesh of {backend.num_chips} chips; the fused update + attention takes one chip's tensors"
        )
    checked = request.check()
    compute, call = checked.compute, checked.call
    if call.shapes.q_len != 1:
        raise ValueError(
            f"q: q_len={call.shapes.q_len}; the fused call writes one new row per user, so q_len must be "
            "1 (several tokens: paged_fused_update_cache per token, then the decode op)"
        )
    if call.out_dtype in BLOCK_FLOAT_OUT_DTYPES:
        raise ValueError(
            f"dtype={call.out_dtype}: the fused call writes bfloat16 or float32 (a block-float output "
            "needs a second program: use the separate calls)"
        )
    positions_name = "cur_pos" if call.positions is not None else "cur_pos_tensor"
    positions = call.positions if call.positions is not None else request.cur_pos_tensor
    update = check_update(
        [(k, k_new), (v, v_new)],
        positions,
        page_table,
        compute,
        index_name=positions_name,
        names=[("k", "k_new"), ("v", "v_new")],
    )
    if (update.shapes.batch, update.shapes.n_kv_heads) != (call.shapes.batch, call.shapes.n_kv_heads):
        raise ValueError(
            f"k_new: {update.shapes.batch} users x {update.shapes.n_kv_heads} kv heads; expected q's "
            f"{call.shapes.batch} users and the cache's {call.shapes.n_kv_heads} kv heads"
        )

    # ---- plan, then the tensors the kernels read (both halves read the same positions and page table)
    config = ProgramConfig.coerce(request.program_config, default_grid=backend.grid())
    pipeline, fused_plan = plan_fused(
        backend, call, config, compute, update.shapes.num_units, new_output=request.output_tensor is None
    )
    cur_pos_dev = pipeline.positions(call, request.cur_pos_tensor)
    table_dev = pipeline.page_table(call, page_table)
    out = pipeline.output(call, request.output_tensor, q)
    check_cbs_end_below(out, fused_plan.decode)
    buffers = DecodeBuffers(
        q=q, k=k, v=v, cur_pos=cur_pos_dev, out=out, page_table=table_dev, attention_sink=attention_sink
    )
    io = [
        q,
        k,
        v,
        k_new,
        v_new,
        cur_pos_dev,
        *([table_dev] if table_dev is not None else []),
        *([attention_sink] if attention_sink is not None else []),
        out,
    ]
    key = (
        "fused_update_decode",
        device_cache(backend.device).plan_id(fused_plan.decode),
        fused_plan.update_cores,
        compute,
        call.scale,
        tensor_key(io),
    )
    program = device_cache(backend.device).lookup(
        "programs",
        key,
        lambda: build_fused_program(
            fused_plan, buffers, [(k, k_new), (v, v_new)], update.shapes, backend, compute, call.scale
        ),
    )
    stats = backend.launch(io, program)
    return (out, FusedResult(fused_plan, update.shapes, stats)) if return_stats else out


__all__ = ["update_cache_and_decode", "paged_update_cache_and_decode", "FusedResult"]
