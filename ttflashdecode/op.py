"""``scaled_dot_product_attention_decode``: the public FlashDecode op.

Same argument names, shapes and defaults as ``ttnn.transformer.scaled_dot_product_attention_decode``.
The call validates every input on the host, plans the work split (:mod:`ttflashdecode.plan`), builds one
``ttnn.ProgramDescriptor`` (:mod:`ttflashdecode.program_factory`) and launches it on the tensors' backend:
``ttnn.generic_op`` on a Wormhole device, the host emulator's ``generic_op`` on emulator tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ttflashdecode.backend import Backend, backend_of
from ttflashdecode.plan import TILE, DecodePlan, DecodeShapes, plan
from ttflashdecode.program_factory import ComputeSettings, DecodeBuffers, build_program
from ttflashdecode.ttnn_env import import_ttnn

KV_DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b")
OUT_DTYPES = ("bfloat16", "float32")


@dataclass
class DecodeResult:
    """What the last call did: its plan and, on the emulator, the run's statistics."""

    plan: DecodePlan
    stats: object | None


last_run: DecodeResult | None = None  # for demos and tests that inspect the split and the counters


def _dtype_name(tensor) -> str:
    return str(tensor.dtype).split(".")[-1].lower()


def _shape(tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in tensor.shape)


def _check_tensor(name: str, tensor, rank: int, dtypes: tuple[str, ...]) -> tuple[int, ...]:
    ttnn = import_ttnn()
    shape = _shape(tensor)
    if len(shape) != rank:
        raise ValueError(f"{name}: expected a rank-{rank} tensor, got shape {list(shape)}")
    if _dtype_name(tensor) not in dtypes:
        raise TypeError(f"{name}: dtype {_dtype_name(tensor)} not supported; expected one of {', '.join(dtypes)}")
    if tensor.layout != ttnn.TILE_LAYOUT:
        raise ValueError(f"{name}: expected TILE_LAYOUT, got {tensor.layout}")
    mem = tensor.memory_config()
    if mem.buffer_type != ttnn.BufferType.DRAM or mem.memory_layout != ttnn.TensorMemoryLayout.INTERLEAVED:
        raise ValueError(f"{name}: expected a DRAM interleaved tensor, got {mem}")
    return shape


def _cur_pos_list(cur_pos, batch: int, kv_len: int) -> list[int]:
    if isinstance(cur_pos, torch.Tensor):
        cur_pos = cur_pos.flatten().tolist()
    values = list(cur_pos)
    if len(values) != batch:
        raise ValueError(f"cur_pos: expected {batch} positions (one per user), got {len(values)}")
    for b, p in enumerate(values):
        if not isinstance(p, int) or isinstance(p, bool) or not -1 <= p < kv_len:
            raise ValueError(f"cur_pos[{b}]={p!r}: expected an int in [-1, {kv_len}) (kv_len={kv_len}; -1 skips the user)")
    return values


def scaled_dot_product_attention_decode(
    q,
    k,
    v,
    *,
    is_causal: bool = True,
    attn_mask=None,
    cur_pos=None,
    cur_pos_tensor=None,
    scale: float | None = None,
    program_config=None,
    compute_kernel_config=None,
    memory_config=None,
    output_tensor=None,
):
    """Decode attention for one new token per user against a KV cache.

    q: ``[1, b, n_q_heads, head_dim]`` bfloat16, tile layout, DRAM.
    k, v: ``[b, n_kv_heads, kv_len, head_dim]`` bfloat16 / bfloat8_b / bfloat4_b, tile layout, DRAM
        (v's head dim may differ from k's).
    is_causal: attend to positions ``<= cur_pos[b]``; needs exactly one of ``cur_pos`` (list of ints) and
        ``cur_pos_tensor`` (int32 ``[b]`` row-major tensor on the same device). A user at -1 is skipped and
        its output rows are zeros. ``is_causal=False`` attends to the whole cache.
    attn_mask: not supported by this op yet (non-causal masks); passing one raises ValueError.
    scale: softmax scale, default ``1/sqrt(head_dim)``.
    program_config: ``ttflashdecode.config.ProgramConfig``, ``ttnn.SDPAProgramConfig``, a name from
        ``program_configs/`` or None (whole device grid, chunk size chosen from the shape).
    compute_kernel_config: ``ttnn.WormholeComputeKernelConfig`` or None (HiFi4, exact exp, bf16 DST).
    memory_config: output memory config; only DRAM interleaved (the default) is supported.
    output_tensor: optional preallocated output (``[1, b, n_q_heads, v_head_dim]`` bfloat16, tile layout, DRAM
        interleaved, same backend), e.g. one filled with a poison value by a test.

    Returns the output ``[1, b, n_q_heads, v_head_dim]`` bfloat16 tensor on the same backend.
    """
    global last_run
    ttnn = import_ttnn()

    q_shape = _check_tensor("q", q, 4, ("bfloat16",))
    k_shape = _check_tensor("k", k, 4, KV_DTYPES)
    v_shape = _check_tensor("v", v, 4, KV_DTYPES)
    q_len, batch, n_q_heads, head_dim = q_shape
    kb, n_kv_heads, kv_len, k_head_dim = k_shape
    if q_len != 1:
        raise ValueError(f"q: expected shape [1, b, n_q_heads, head_dim] (one token per user), got {list(q_shape)}")
    if kb != batch:
        raise ValueError(f"k: batch {kb} differs from q's batch {batch}")
    if k_head_dim != head_dim:
        raise ValueError(f"k: head_dim {k_head_dim} differs from q's head_dim {head_dim}")
    if v_shape[:3] != k_shape[:3]:
        raise ValueError(f"v: shape {list(v_shape)} must match k's [b, n_kv_heads, kv_len] = {list(k_shape[:3])}")
    if n_q_heads % n_kv_heads:
        raise ValueError(f"q: n_q_heads={n_q_heads} is not a multiple of k's n_kv_heads={n_kv_heads}")
    if attn_mask is not None:
        if is_causal:
            raise ValueError("attn_mask: must be None when is_causal=True (causality comes from cur_pos)")
        raise ValueError("attn_mask: non-causal attention masks are not supported by this op yet")
    if memory_config is not None and memory_config != ttnn.DRAM_MEMORY_CONFIG:
        raise ValueError(f"memory_config={memory_config}: only ttnn.DRAM_MEMORY_CONFIG is supported")
    if scale is not None and not (isinstance(scale, (int, float)) and scale > 0):
        raise ValueError(f"scale={scale!r}: expected a positive number")

    backend = backend_of(q)
    for name, t in (("k", k), ("v", v)):
        if t.device() is not backend.device and t.device() != backend.device:
            raise ValueError(f"{name}: lives on a different device than q")

    if is_causal:
        if (cur_pos is None) == (cur_pos_tensor is None):
            raise ValueError("cur_pos, cur_pos_tensor: exactly one must be given when is_causal=True")
    elif cur_pos is not None or cur_pos_tensor is not None:
        raise ValueError("cur_pos, cur_pos_tensor: must be None when is_causal=False")

    if cur_pos_tensor is None:
        positions = _cur_pos_list(cur_pos, batch, kv_len) if is_causal else [kv_len - 1] * batch
        cur_pos_tensor = backend.from_torch(
            torch.tensor(positions, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT
        )
    else:
        if _shape(cur_pos_tensor) != (batch,) or _dtype_name(cur_pos_tensor) not in ("int32", "uint32"):
            raise ValueError(
                f"cur_pos_tensor: expected an int32 tensor of shape [{batch}], got "
                f"{_dtype_name(cur_pos_tensor)} {list(_shape(cur_pos_tensor))}"
            )

    compute = ComputeSettings.coerce(compute_kernel_config)
    shapes = DecodeShapes(
        batch=batch,
        n_q_heads=n_q_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        v_head_dim=v_shape[3],
        kv_len=kv_len,
        k_dtype=_dtype_name(k),
        v_dtype=_dtype_name(v),
    )
    decode_plan = plan(shapes, program_config, backend.grid(), fp32_dest_acc=compute.fp32_dest_acc_en)

    out_shape = (1, batch, n_q_heads, v_shape[3])
    if output_tensor is None:
        out = backend.allocate(list(out_shape), ttnn.bfloat16, ttnn.TILE_LAYOUT)
    else:
        if _check_tensor("output_tensor", output_tensor, 4, ("bfloat16",)) != out_shape:
            raise ValueError(f"output_tensor: expected shape {list(out_shape)}, got {list(_shape(output_tensor))}")
        out = output_tensor
    buffers = DecodeBuffers(q=q, k=k, v=v, cur_pos=cur_pos_tensor, out=out)
    program = build_program(decode_plan, buffers, backend.noc_coord, compute, scale=scale)
    stats = backend.launch([q, k, v, cur_pos_tensor, out], program)
    last_run = DecodeResult(plan=decode_plan, stats=stats)
    return out


__all__ = ["scaled_dot_product_attention_decode", "DecodeResult", "Backend", "TILE"]
