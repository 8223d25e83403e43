"""One call of a public decode function, its arguments as given: :class:`DecodeRequest`, and where it is checked.

Each public function of :mod:`ttflashdecode.ops.decode.api` builds one request and hands it on; nothing downstream
takes the arguments one by one, so an argument added to the functions is added here and read by name where it is used.
The api's functions list every field in field order (a keyword build costs a cache hit ~2.5 us: see
``api._new_request``); tests/test_decode_request.py reads back every field of each function's request, so a field
added here and not there, or out of order, fails that test. A request is immutable: the fast path signs it
(:func:`ttflashdecode.ops.decode.pipeline.call_signature`) and the full path checks it
(:meth:`DecodeRequest.check`), and the two must see the same values.

A request is checked in two steps, both here:

* :meth:`DecodeRequest.check_entry`, first, on every call: the arguments the entry point itself
  requires (a paged function's page table, an MLA function's ``head_dim_v``). These must come before the fast path: a
  paged call without a page table signs exactly like the contiguous call with the same tensors, and would replay that
  call's programs.
* :meth:`DecodeRequest.check`, on the full path only (a call the fast path launches repeats one that passed it):
  every tensor, scalar and option (:mod:`ttflashdecode.ops.decode.validate` does the work), before anything is uploaded,
  allocated or launched.

Validated values (the call's shapes, dtypes, positions) are a :class:`~ttflashdecode.ops.decode.validate.DecodeCall`;
the request is what came in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ttflashdecode.backend import Backend, backend_of
from ttflashdecode.checks import check_bool, check_device_tensor
from ttflashdecode.ops.decode.validate import (
    DecodeCall,
    check_call,
    check_mesh_call,
    require_head_dim_v,
    require_page_table,
)
from ttflashdecode.ops.descriptors import ComputeSettings

TENSOR_FIELDS = 8  # DecodeRequest's first fields are its tensor arguments


class DecodeRequest(NamedTuple):
    """The arguments of one call of :func:`~ttflashdecode.ops.decode.api.scaled_dot_product_attention_decode` or a
    sibling, as given (their meaning is in that function's docstring). Read it by name: it is a tuple only for speed.

    Why a NamedTuple and not a frozen dataclass: every decode step of every layer builds one. A frozen dataclass's
    generated ``__init__`` (one ``object.__setattr__`` a field) added ~4 us to a cache hit whose own Python work is
    ~10-13 us on the project's VM, on top of the ~2.4 us the keyword call costs either way (docs/RUNTIME.md, "Given
    back since"; tests/runtime/host_cost.py's ``request_alone`` row).
    """

    # The tensor arguments first, in the order :attr:`tensors` hands them out (the fast path's order)
    q: object
    k: object
    v: object = None  # None for the MLA functions: V is K's first head_dim_v columns
    cur_pos_tensor: object = None
    page_table: object = None  # the paged functions' page_table_tensor
    attn_mask: object = None
    attention_sink: object = None
    output_tensor: object = None
    # the other arguments
    is_causal: bool = True
    cur_pos: object = None
    scale: float | None = None
    sliding_window_size: int | None = None
    share_cache: bool = False
    program_config: object = None
    compute_kernel_config: object = None
    memory_config: object = None
    dtype: object = None
    validate_device_tensors: bool = False
    head_dim_v: int | None = None  # the MLA functions'
    # upstream's paged-only arguments (paged_scaled_dot_product_attention_decode's), at their defaults elsewhere
    paged_cache_geometry: object = None
    cache_position_modulo: int | None = None
    spec_multi_pos_tiles: int = 0
    # Which entry point made the request: what it must have been given (check_entry)
    paged: bool = False  # a paged function: page_table is required
    v_from_k: bool = False  # an MLA function: head_dim_v is required

    @property
    def tensors(self) -> tuple:
        """The tensor arguments (q, k, v, cur_pos_tensor, page_table, attn_mask, attention_sink, output_tensor): the
        order the fast path signs and unpacks them in (``launch_hit``, ``DecodePipeline.execute``; a wrapper's
        run passes the same order). The request's first fields, so one slice (every call reads them)."""
        return self[:TENSOR_FIELDS]

    def check_entry(self) -> None:
        """The arguments the entry point itself requires (checked on every call, before the fast path: see the module
        docstring); the paged function's page table first, as its signature lists it first."""
        if self.paged:
            require_page_table(self.page_table)
        if self.v_from_k:
            require_head_dim_v(self.head_dim_v)

    def check(self) -> CheckedRequest:
        """Every check of the full path, raising (naming the argument, its value and what was expected) before any
        device work. q comes first: its device is the backend the rest is checked against. On a mesh the heads must
        be sharded over the chips, checked before the shapes (a replicated K would otherwise surface as a GQA ratio
        error)."""
        check_device_tensor("q", self.q, 4, ("bfloat16",), layout=None, dram=False)
        backend = backend_of(self.q)
        compute = ComputeSettings.coerce(self.compute_kernel_config)
        validate_device_tensors = check_bool("validate_device_tensors", self.validate_device_tensors)
        check_mesh_call(
            self.q,
            self.k,
            self.v,
            self.attn_mask,
            self.attention_sink,
            num_chips=backend.num_chips,
            mesh_shape=backend.mesh_shape(),
            cur_pos=self.cur_pos,
            cur_pos_tensor=self.cur_pos_tensor,
            page_table=self.page_table,
        )
        call = check_call(
            self.q,
            self.k,
            self.v,
            self.page_table,
            is_causal=self.is_causal,
            attn_mask=self.attn_mask,
            cur_pos=self.cur_pos,
            cur_pos_tensor=self.cur_pos_tensor,
            scale=self.scale,
            sliding_window_size=self.sliding_window_size,
            attention_sink=self.attention_sink,
            share_cache=self.share_cache,
            memory_config=self.memory_config,
            output_tensor=self.output_tensor,
            dtype=self.dtype,
            fp32_dest_acc_en=compute.fp32_dest_acc_en,
            device=backend.device,
            grid=backend.grid(),
            head_dim_v=self.head_dim_v,
            paged_cache_geometry=self.paged_cache_geometry,
            cache_position_modulo=self.cache_position_modulo,
            spec_multi_pos_tiles=self.spec_multi_pos_tiles,
        )
        return CheckedRequest(backend, compute, call, validate_device_tensors)


def request_of(arguments: dict, *, paged: bool = False, v_from_k: bool = False) -> tuple[DecodeRequest, object]:
    """(the request, ``return_stats``) of a call of a decode-family function whose parameters are request fields under
    ttnn's names (``page_table_tensor`` is the request's ``page_table``) and ``return_stats``. ``arguments`` is the
    function's ``locals()`` taken first thing, so the function's signature is the one place its keywords are spelled
    (the fused update + decode, the upstream baseline).

    The public decode functions (:mod:`ttflashdecode.ops.decode.api`) spell their request out by keyword instead: a
    cache hit's Python work is ~10 us, and building a request through ``locals()`` costs ~2 us more than by keyword
    (3.0 -> 5.0 us median over 30 runs of 20,000 calls of a 17-keyword function, on the project's shared VM)."""
    fields = dict(arguments)
    return_stats = fields.pop("return_stats")
    if "page_table_tensor" in fields:
        fields["page_table"] = fields.pop("page_table_tensor")
    return DecodeRequest(**fields, paged=paged, v_from_k=v_from_k), return_stats


@dataclass(frozen=True)
class CheckedRequest:
    """What :meth:`DecodeRequest.check` worked out: the backend of q's device, the compute settings, the validated
    call and the flag ``validate_device_tensors`` as a Python bool."""

    backend: Backend
    compute: ComputeSettings
    call: DecodeCall
    validate_device_tensors: bool


__all__ = ["DecodeRequest", "CheckedRequest", "request_of"]
