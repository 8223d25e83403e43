"""The decode run pipeline: validate -> plan -> program -> launch -> result, and the one fast path.

Every decode call goes through one :class:`DecodePipeline` (one per device, program config and compute settings):
the module functions (:func:`run_request`, for :mod:`ttflashdecode.ops.decode.api` and so for ``patch_ttnn``),
:class:`~ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper` (:meth:`DecodePipeline.run`, after its own ``plan()``)
and the fused update + decode (:mod:`ttflashdecode.ops.fused`: :func:`for_device`,
:meth:`DecodePipeline.plan_call`, the positions / page table / output it makes) are thin faces over it and call only
its public methods.

A run is a sequence of small steps, each its own method: check the call, check device values (on request), upload
host positions and page tables, allocate the output, check L1 room, look up or build the program, launch. What a run
derives (plans, program descriptors, staging outputs) lives in the device's
:class:`~ttflashdecode.device_cache.DeviceCache` and dies with the device. A call that repeats one that passed (same
tensors' addresses and properties, device positions) takes the fast path instead (:func:`launch_hit`, one for every
face): allocate the output, launch the programs kept for it
(:mod:`ttflashdecode.ops.decode.fast_path`).
:meth:`DecodePipeline.prepare` makes what runs reuse (a bfloat8_b output's staging tensor, a non-causal call's
positions), so a run uploads nothing and can be captured in a trace.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import methodcaller
from pathlib import Path

from ttflashdecode.backend import EMULATOR_MESH, Backend, backend_for, import_ttnn
from ttflashdecode.checks import (
    check_bool,
    check_device_tensor,
)
from ttflashdecode.config import AUTO, TILE, ProgramConfig
from ttflashdecode.device_arch import chip_facts
from ttflashdecode.device_cache import DeviceCache, device_cache, existing_cache
from ttflashdecode.ops.convert.factory import build_convert_program
from ttflashdecode.ops.decode.factory import DecodeBuffers, build_program
from ttflashdecode.ops.decode.fast_path import (
    PLAIN_TYPES,
    FastCall,
    NotSignable,
    compute_config_value,
    flag,
    plain,
    program_config_value,
    remember_call,
    remember_launch,
    tensors_signature,
)
from ttflashdecode.ops.decode.request import DecodeRequest
from ttflashdecode.ops.decode.validate import (
    BLOCK_FLOAT_OUT_DTYPES,
    DecodeCall,
    check_call,
    check_device_page_table,
    check_device_positions,
    check_mesh_call,
)
from ttflashdecode.ops.descriptors import ComputeSettings
from ttflashdecode.plan import L1_RESERVED_BYTES, TILE_BYTES, DecodePlan, DecodeShapes
from ttflashdecode.tuning import plan_for


@dataclass
class DecodeResult:
    """What a run did: its plan and, on the emulator, the run's statistics. For a bfloat8_b output also the staging
    tensor the decode wrote and the tile convert program's statistics."""

    plan: DecodePlan
    stats: object | None
    staging: object | None = None
    convert_stats: object | None = None


@dataclass(frozen=True)
class Planned:
    """A plan and what a run needs besides it: the call's fixed options, as a :class:`DecodeCall` without tensors."""

    call: DecodeCall
    plan: DecodePlan
    plan_id: int  # the device cache's id of the plan's value (program keys hold it)


@dataclass(frozen=True)
class _Launch:
    """A call's programs, as generic_op takes them (made once per set of addresses, kept by the fast path)."""

    decode: object  # the decode program, or a MeshProgramDescriptor
    convert: object | None  # a block-float output's tile convert program
    lookups: int  # program-table lookups the full path makes to find them (the counters a fast hit adds)
    # On a card a run's DecodeResult is the same every time (no statistics): made once, so a hit makes no object.
    card_result: DecodeResult | None = None


class DecodePipeline:
    """Decode attention on one device for one program config and compute settings: the current plan
    (:meth:`plan_call`) and every step of a run. ``device``, ``program_config`` and ``compute_kernel_config`` as in
    :class:`~ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper`."""

    def __init__(self, device, program_config=None, compute_kernel_config=None):
        if not callable(getattr(device, "compute_with_storage_grid_size", None)):
            raise TypeError(
                f"device={device!r} ({type(device).__name__}): expected a ttnn device or an emulator device"
            )
        self.backend: Backend = backend_for(device)
        self.grid = self.backend.grid()  # one chip's (every chip of a mesh has the same)
        self.num_chips = self.backend.num_chips
        # read on every fast-path hit: the lowest live L1 buffer, and where an output is (the key of its programs)
        self._l1_line = self.backend.l1_line_reader()
        # one chip's (or a card mesh's lock-step) address: the tensor's own, read without a Python frame
        self._address_key = self.backend.address_key if self.backend.kind == EMULATOR_MESH else _buffer_address
        # a card's hit launches through this (ttnn.generic_op looked up at each launch: a test may replace it)
        self._card_launch = None if self.backend.is_emulator else self.backend.card_launcher()
        self.cache: DeviceCache = device_cache(device)
        self.compute = ComputeSettings.coerce(compute_kernel_config)
        self._config = ProgramConfig.coerce(AUTO if program_config is None else program_config, default_grid=self.grid)
        self.planned: Planned | None = None
        self.last_run: DecodeResult | None = None

    @property
    def device(self):
        return self.backend.device

    @property
    def program_config(self) -> ProgramConfig:
        return self._config

    @property
    def decode_plan(self) -> DecodePlan | None:
        """The current plan (None before :meth:`plan_call`)."""
        return None if self.planned is None else self.planned.plan

    # ---- plan ---------------------------------------------------------------------------------------------------

    def plan_call(self, call: DecodeCall, new_output: bool, max_cur_pos: int | None) -> DecodePlan:
        """Plan (or find the plan of) a validated call: its shapes on this wrapper's config, in the L1 left below the
        device's live L1 buffers (and a new L1 output)."""
        l1_budget = _l1_budget(call, self.backend, new_output)
        fp32 = self.compute.fp32_dest_acc_en
        key = (call.shapes, self._config, self.grid, fp32, l1_budget, max_cur_pos)
        decode_plan = self.cache.lookup(
            "plans",
            key,
            lambda: plan_for(
                call.shapes, self._config, self.grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32, l1_budget=l1_budget
            ),
        )
        # run()'s fast-path entries of the previous plan stay in the device's table until they age out: a hit
        # requires the entry's plan to be the wrapper's current one (launch_hit).
        self.planned = Planned(call, decode_plan, self.cache.plan_id(decode_plan))
        return decode_plan

    def prepare(self, call: DecodeCall) -> None:
        """Make now what runs of ``call`` reuse (a block-float output's staging tensor, a non-causal call's
        positions), so a run makes no upload (a run inside a trace capture must not)."""
        if call.out_dtype in BLOCK_FLOAT_OUT_DTYPES:
            self.staging(call)
        if not call.shapes.is_causal:
            self.constant_positions(call.shapes)

    # ---- run ----------------------------------------------------------------------------------------------------

    def run(self, tensors: tuple, cur_pos, validate_device_tensors, return_stats):
        """One run of the current plan (:meth:`FlashDecodeWrapper.run
        <ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper.run>`): ``tensors`` in the fast path's order
        (:attr:`~ttflashdecode.ops.decode.request.DecodeRequest.tensors`). The fast path when the call repeats one
        that passed, else every check against the plan and the full run. Returns the output, or ``(output,
        DecodeResult)`` with ``return_stats``."""
        planned = self.require_plan()
        signature = _run_signature(self, tensors, cur_pos, validate_device_tensors, return_stats)
        if signature is not None:  # the fast path: a call like one that passed, at the same addresses
            hit = launch_hit(self.cache, signature[0], signature[1], tensors, planned)
            if hit is not None:
                return (hit[0], self.last_run) if return_stats else hit[0]
        validate_device_tensors = check_bool("validate_device_tensors", validate_device_tensors)
        return_stats = check_bool("return_stats", return_stats)
        call = self.check_run(planned, tensors, cur_pos)
        self.check_l1_room()
        out, entry = self.execute(
            planned,
            call,
            tensors,
            validate_device_tensors,
            plan_hits=0,
            check=None if signature is None else signature[1],
        )
        if entry is not None:
            remember_call(self.cache, signature[0], entry)
        return (out, self.last_run) if return_stats else out

    def require_plan(self) -> Planned:
        if self.planned is None:
            raise RuntimeError("FlashDecodeWrapper.run: call plan(...) first (it fixes the shapes runs must match)")
        if self.cache.closed:
            raise RuntimeError("FlashDecodeWrapper.run: the wrapper's device was closed; make a new wrapper")
        return self.planned

    def check_run(self, planned: Planned, tensors: tuple, cur_pos) -> DecodeCall:
        """Every argument checked as the op checks it, with the plan's options; then against the plan. ``tensors``:
        the run's, in the fast path's order (:attr:`~ttflashdecode.ops.decode.request.DecodeRequest.tensors`)."""
        q, k, v, cur_pos_tensor, page_table, attn_mask, attention_sink, output_tensor = tensors
        fixed, s = planned.call, planned.call.shapes
        # The call's tensors must live on the wrapper's device (check_call then holds every other tensor to q's).
        check_device_tensor(
            "q", q, 4, ("bfloat16",), layout=None, dram=False, device=self.device, device_name="the wrapper's"
        )
        check_mesh_call(
            q,
            k,
            v,
            attn_mask,
            attention_sink,
            num_chips=self.num_chips,
            mesh_shape=self.backend.mesh_shape(),
            cur_pos=cur_pos,
            cur_pos_tensor=cur_pos_tensor,
            page_table=page_table,
        )
        if s.v_from_k and v is not None:
            raise ValueError("v: expected None: the plan takes V from K (v_from_k=True)")
        if s.is_paged != (page_table is not None):
            expected = "a page table (the plan is paged)" if s.is_paged else "None (the plan is not paged)"
            raise ValueError(f"page_table_tensor: expected {expected}")
        given = output_tensor is not None
        call = check_call(
            q,
            k,
            v,
            page_table,
            is_causal=s.is_causal,
            attn_mask=attn_mask,
            cur_pos=cur_pos,
            cur_pos_tensor=cur_pos_tensor,
            scale=fixed.scale,
            sliding_window_size=s.sliding_window_size or None,
            attention_sink=attention_sink,
            share_cache=s.share_cache,
            memory_config=None if given else fixed.memory_config,
            output_tensor=output_tensor,
            dtype=None if given else getattr(import_ttnn(), fixed.out_dtype),
            fp32_dest_acc_en=self.compute.fp32_dest_acc_en,
            device=self.device,
            grid=self.grid,
            head_dim_v=s.v_head_dim if s.v_from_k else None,
        )
        _check_matches_plan(call, fixed, self.num_chips)
        return call

    def check_l1_room(self) -> None:
        """The plan's circular buffers must end below every live L1 buffer; an L1 tensor allocated since planning
        may have moved that line down."""
        lowest = self._l1_line()
        end = chip_facts(self.backend.device).l1_reserved + self.planned.plan.l1_bytes
        if lowest is not None and end > lowest:
            raise ValueError(
                f"FlashDecodeWrapper.run: the planned circular buffers reach L1 address {end:#x} but a live L1 buffer "
                f"starts at {lowest:#x} (allocated after plan()); plan again"
            )

    def execute(
        self,
        planned: Planned,
        call: DecodeCall,
        tensors: tuple,
        validate_device_tensors: bool,
        *,
        plan_hits: int,
        check: tuple | None,
    ):
        """Run a call already checked against ``planned`` (the full path); ``tensors``: the call's, in the fast path's
        order (:attr:`~ttflashdecode.ops.decode.request.DecodeRequest.tensors`: the op's and a run's alike). Returns the
        output and, for a signed call (``check``: its signature's compared part), the
        :class:`~ttflashdecode.ops.decode.fast_path.FastCall` that launches the same call again; ``plan_hits``: the plan
        lookups the caller made for it (a hit counts them again)."""
        q, k, v, cur_pos_tensor, page_table, attn_mask, attention_sink, output_tensor = tensors
        l1_line = self._l1_line() if check is not None else None
        if validate_device_tensors:
            self.check_device_values(call, cur_pos_tensor, page_table)
        positions = self.positions(call, cur_pos_tensor)
        page_table = self.page_table(call, page_table)
        out = self.output(call, output_tensor, q)
        check_cbs_end_below(out, planned.plan)
        staging = self.staging(call) if call.out_dtype in BLOCK_FLOAT_OUT_DTYPES else None
        buffers = _buffers(
            tensors, positions=positions, decoded=out if staging is None else staging, page_table=page_table
        )
        launch = self._make_launch(planned, buffers, staging, out)
        self._launch(planned, buffers, staging, out, launch)
        if check is None:
            return out, None
        entry = FastCall(
            owner=self,
            planned=planned,
            check=check,
            l1_lines={l1_line},
            positions=None if call.shapes.is_causal else positions,
            staging=staging,
            cbs_end=(
                chip_facts(self.backend.device).l1_reserved + planned.plan.l1_bytes
                if call.memory_config.buffer_type == import_ttnn().BufferType.L1
                else None
            ),
            plan_hits=plan_hits,
            new_output=self.output_allocator(call),
            witness=None if l1_line is None else _witness(tensors, l1_line),
        )
        entry.programs_per_launch = launch.lookups
        remember_launch(entry, self._address_key(out), launch)
        return out, entry

    def hit(self, entry: FastCall, check: tuple, tensors: tuple, addresses: tuple) -> bool:
        """Whether a signed call may take ``entry``'s fast path: its compared part matches and the lowest live L1
        buffer is at one of the entry's lines (``addresses``: the call's tensors', from its key; the entry's
        :attr:`~FastCall.witness` among them lets a card read the line from the allocator's totals). On a mesh the
        tensors' layout over the chips is checked as the full path checks it (raising its error): it can change in
        place."""
        witness = entry.witness
        l1_line = self._l1_line(None if witness is None else addresses[witness])
        try:
            if l1_line not in entry.l1_lines or entry.check != check:
                return False
        except Exception:  # an argument whose == raises (a numpy array as dtype): the full path names it
            return False
        if self.num_chips > 1:
            q, k, v, cur_pos_tensor, page_table, attn_mask, attention_sink, _ = tensors
            check_mesh_call(
                q,
                k,
                v,
                attn_mask,
                attention_sink,
                num_chips=self.num_chips,
                mesh_shape=self.backend.mesh_shape(),
                cur_pos_tensor=cur_pos_tensor,
                page_table=page_table,
            )
        return True

    def run_hit(self, entry: FastCall, tensors: tuple):
        """Launch a call that matched ``entry`` (``tensors``: the call's, in the fast path's order): its output (a new
        one, or the given one), the entry's programs for the output's address, the launch. No validation, no
        planning, no descriptor lookup."""
        q, k, v, cur_pos_tensor, page_table, attn_mask, attention_sink, output_tensor = tensors
        out = entry.new_output(q) if output_tensor is None else output_tensor
        if entry.cbs_end is not None and out.buffer_address() < entry.cbs_end:
            check_cbs_end_below(out, entry.planned.plan)  # raises the full path's error
        staging = entry.staging
        positions = cur_pos_tensor if entry.positions is None else entry.positions
        launch = entry.launches.get(self._address_key(out))
        if launch is None:  # a new output at an address this call has not used yet
            return self._launch_new_output(entry, tensors, out, positions)
        entry.hits += 1  # counted as the lookups it skipped when the counters are read (FastCall.settle)
        # The io list in DecodeBuffers.io_tensors()'s order, built without the dataclass (this runs every step).
        io = [q, k, k if v is None else v, positions]
        if page_table is not None:
            io.append(page_table)
        if attn_mask is not None:
            io.append(attn_mask)
        if attention_sink is not None:
            io.append(attention_sink)
        io.append(out if staging is None else staging)
        if launch.card_result is not None:
            run = self._card_launch
            run(io, launch.decode)
            if launch.convert is not None:
                run([staging, out], launch.convert)
            self.last_run = launch.card_result
            return out
        stats = self.backend.run(io, launch.decode)
        convert_stats = self.backend.run([staging, out], launch.convert) if staging is not None else None
        self.last_run = DecodeResult(entry.planned.plan, stats, staging, convert_stats)
        return out

    def _launch_new_output(self, entry: FastCall, tensors: tuple, out, positions):
        """A hit whose output sits at an address the entry has no programs for: they are made (a program-table
        lookup, or a build) and kept for the next call there."""
        planned, staging, page_table = entry.planned, entry.staging, tensors[4]  # a signed call's device page table
        buffers = _buffers(
            tensors, positions=positions, decoded=out if staging is None else staging, page_table=page_table
        )
        launch = self._make_launch(planned, buffers, staging, out)
        remember_launch(entry, self._address_key(out), launch)
        self.cache.count_hits(entry.plan_hits, 0)
        self._launch(planned, buffers, staging, out, launch)
        return out

    def _make_launch(self, planned: Planned, buffers: DecodeBuffers, staging, out) -> _Launch:
        decode = self._decode_programs(planned, planned.call.scale, buffers)
        convert = self._convert_programs(staging, out) if staging is not None else []
        card_result = None if self.backend.is_emulator else DecodeResult(planned.plan, None, staging, None)
        return _Launch(
            self.backend.launchable(decode),
            self.backend.launchable(convert) if convert else None,
            len(decode) + len(convert),
            card_result,
        )

    def _launch(self, planned: Planned, buffers: DecodeBuffers, staging, out, launch: _Launch) -> None:
        stats = self.backend.run(buffers.io_tensors(), launch.decode)
        convert_stats = self.backend.run([staging, out], launch.convert) if staging is not None else None
        self.last_run = DecodeResult(planned.plan, stats, staging, convert_stats)

    # ---- the steps of a run --------------------------------------------------------------------------------------

    def check_device_values(self, call: DecodeCall, cur_pos_tensor, page_table) -> None:
        """validate_device_tensors=True: read the device cur_pos_tensor and page table back and check the values the
        kernels will use (host ones were checked with the call)."""
        chips = self.num_chips
        per_chip_positions = [call.positions] * chips
        if call.positions is None:  # a device cur_pos_tensor: each chip reads its own copy
            per_chip_positions = []
            for chip, values in enumerate(self.backend.to_torch_per_chip(cur_pos_tensor)):
                with _on_chip(chip, chips):
                    per_chip_positions.append(check_device_positions(values.flatten().tolist(), call.shapes))
        if call.shapes.is_paged and call.page_table_rows is None:  # a device page table
            for chip, rows in enumerate(self.backend.to_torch_per_chip(page_table)):
                with _on_chip(chip, chips):
                    check_device_page_table(rows.tolist(), per_chip_positions[chip], call.shapes, call.num_blocks)

    def positions(self, call: DecodeCall, cur_pos_tensor):
        """The cur_pos tensor the kernels read: the caller's device tensor, a non-causal call's constant positions
        (made once per shape), or host positions uploaded."""
        if call.positions is None:
            return cur_pos_tensor
        if not call.shapes.is_causal:
            return self.constant_positions(call.shapes)
        return self._upload_int32("cur_pos", call.positions, [call.shapes.batch])

    def constant_positions(self, shapes: DecodeShapes):
        """A non-causal call's positions (every query sees the whole cache: kv_len - 1 for every user), one device
        tensor per (batch, kv_len) reused every call: a non-causal call then uploads nothing (and can be captured)."""
        last = shapes.logical_kv_len - 1
        return self.cache.lookup(
            "staging",
            ("positions", shapes.batch, last),
            lambda: self._upload_int32("cur_pos", [last] * shapes.batch, [shapes.batch]),
        )

    def page_table(self, call: DecodeCall, page_table):
        if call.page_table_rows is None:
            return page_table
        rows = call.page_table_rows
        return self._upload_int32("page_table_tensor", rows, [len(rows), len(rows[0])])

    def _upload_int32(self, name: str, values, shape: list[int]):
        self.backend.refuse_upload_in_capture(name, "cur_pos_tensor" if name == "cur_pos" else name)
        return self.backend.int32_tensor(values, shape)

    def output(self, call: DecodeCall, output_tensor, q):
        if output_tensor is not None:
            return output_tensor
        return self.output_allocator(call)(q)

    def output_allocator(self, call: DecodeCall):
        """``new(q)``: a new output of ``call``. On a mesh each chip writes the users and heads of its q shard: the
        output ([1, b, heads, d]) is laid over the chips as q is."""
        ttnn = import_ttnn()
        layout = ttnn.TILE_LAYOUT if call.out_layout == "TILE" else ttnn.ROW_MAJOR_LAYOUT
        return self.backend.output_allocator(call.out_shape, getattr(ttnn, call.out_dtype), layout, call.memory_config)

    def staging(self, call: DecodeCall):
        """The tensor a block-float call's decode writes (bfloat16 or float32), one per shape and dtype, reused every
        step so the cached programs' addresses stay valid."""
        ttnn = import_ttnn()
        shape, dtype = call.out_shape, call.shapes.out_dtype
        return self.cache.lookup(
            "staging",
            (shape, dtype),
            lambda: self.backend.allocate(list(shape), getattr(ttnn, dtype), ttnn.TILE_LAYOUT),
        )

    def _decode_programs(self, planned: Planned, scale: float | None, buffers: DecodeBuffers) -> list:
        """One descriptor per distinct set of addresses: one for a single chip or a card's mesh, one per chip of an
        emulated mesh unless chips share their addresses (then they share the cached descriptor)."""
        programs = []
        for chip in self.backend.chip_tensors(list(_buffer_fields(buffers))):
            chip_buffers = DecodeBuffers(*chip)
            key = ("decode", planned.plan_id, self.compute, scale, tensor_key(chip_buffers.io_tensors()))
            programs.append(
                self.cache.lookup(
                    "programs",
                    key,
                    lambda b=chip_buffers: build_program(
                        planned.plan,
                        b,
                        self.backend.noc_coord,
                        self.compute,
                        scale=scale,
                        noc1_stride=self.backend.noc1_reader_stride(),
                    ),
                )
            )
        return programs

    def _convert_programs(self, decoded, out) -> list:
        programs = []
        for chip_decoded, chip_out in self.backend.chip_tensors([decoded, out]):
            programs.append(
                self.cache.lookup(
                    "programs",
                    ("convert", tensor_key([chip_decoded, chip_out])),
                    lambda d=chip_decoded, o=chip_out: build_convert_program(d, o, self.grid),
                )
            )
        return programs


# ---- the op's calls: a request as it comes -------------------------------------------------------------------


def run_request(request: DecodeRequest, return_stats: bool):
    """A call as it comes, its arguments in one :class:`~ttflashdecode.ops.decode.request.DecodeRequest`, the entry
    point's required arguments checked first (:meth:`DecodeRequest.check_entry`). A call like one that already passed
    (same arguments, tensors at the same addresses with the same properties: :mod:`ttflashdecode.ops.decode.fast_path`)
    launches that call's programs again; any other call is checked (:meth:`DecodeRequest.check`), planned on the
    device's pipeline for its config (a lookup after the first call of a shape) and run. Returns the output, or
    ``(output, DecodeResult)`` with ``return_stats``."""
    if type(return_stats) is not bool:  # checked first: the fast path below returns by it
        check_bool("return_stats", return_stats)
    request.check_entry()
    tensors = request.tensors
    signature = call_signature(request, tensors)
    if signature is not None:
        hit = launch_hit(existing_cache(signature[2]), signature[0], signature[1], tensors)
        if hit is not None:
            out, owner = hit
            return (out, owner.last_run) if return_stats else out

    # Check and plan first: nothing is uploaded or allocated for a call that cannot run.
    checked = request.check()
    call = checked.call
    pipeline = for_device(checked.backend.device, request.program_config, checked.compute)
    # The config's choice (the default's table or rule; "tune" or a function at a shape's first call) is made inside
    # plan_call, on this path only.
    pipeline.plan_call(
        call, new_output=request.output_tensor is None, max_cur_pos=positions_bound(call, pipeline.program_config)
    )
    out, entry = pipeline.execute(
        pipeline.planned,
        call,
        tensors,
        checked.validate_device_tensors,
        plan_hits=1,
        check=None if signature is None else signature[1],
    )
    if entry is not None:
        remember_call(pipeline.cache, signature[0], entry)
    return (out, pipeline.last_run) if return_stats else out


def call_signature(request: DecodeRequest, tensors: tuple) -> tuple | None:
    """(key, check, device) of a call for the fast path (:mod:`ttflashdecode.ops.decode.fast_path`), or None for a call
    it does not sign: host positions or page tables, ``validate_device_tensors=True``, a non-plain scalar, a tensor
    argument that is not a live device tensor. ``tensors``: the request's, in :attr:`DecodeRequest.tensors`' order.
    Scalars go into the key with their type: ``scale=1`` passes validation, ``scale=True`` (equal, and hashing alike)
    does not.

    This runs on every call, so the scalars are checked inline and go into the key flat (no per-argument helper
    calls or tuples: they were ~2.5 of this function's ~8 us on a mock N150, tests/runtime/host_cost.py)."""
    if request.cur_pos is not None or request.validate_device_tensors is not False:
        return None  # True, or not a Python bool (the full path's check_bool names it)
    is_causal, share_cache = request.is_causal, request.share_cache
    if type(is_causal) is not bool or type(share_cache) is not bool:
        return None
    scale, window, head_dim_v = request.scale, request.sliding_window_size, request.head_dim_v
    scale_type, window_type, head_dim_v_type = type(scale), type(window), type(head_dim_v)
    if scale_type not in PLAIN_TYPES or window_type not in PLAIN_TYPES or head_dim_v_type not in PLAIN_TYPES:
        return None
    try:
        geometry, modulo, multi_pos = (
            request.paged_cache_geometry,
            request.cache_position_modulo,
            request.spec_multi_pos_tiles,
        )
        # upstream's defaults (every unpaged call, a paged call's usual case) have one key, made once; checked by
        # type, as plain() does
        if geometry is None and modulo is None and type(multi_pos) is int and multi_pos == 0:
            paged = _NO_PAGED_KEY
        else:
            paged = _paged_args_key(geometry, modulo, multi_pos)
        addresses, specs = tensors_signature(tensors)
        if specs[0] is None:  # no q tensor: the full path refuses it by name
            return None
        # A name (or None) is its own key; any other config is compared by value (a type marks it in the key).
        program_config = request.program_config
        if program_config is None or type(program_config) is str:
            named, config = program_config, None
        else:
            named, config = type(program_config), program_config_value(program_config)
        key = (
            "op",
            addresses,
            is_causal,
            share_cache,
            scale_type,
            scale,
            window_type,
            window,
            head_dim_v_type,
            head_dim_v,
            named,
            paged,
        )
        compute_kernel_config = request.compute_kernel_config
        compute = None if compute_kernel_config is None else compute_config_value(compute_kernel_config)
        # q's device: where the entry lives
        return key, (specs, request.dtype, request.memory_config, config, compute), specs[0][0]
    except NotSignable:
        return None


def _paged_args_key(paged_cache_geometry, cache_position_modulo, spec_multi_pos_tiles) -> tuple:
    """Upstream's paged-only arguments in a fast-path key: a geometry by its two fields (its type must be ttnn's)."""
    geometry = None
    if paged_cache_geometry is not None:
        if type(paged_cache_geometry) is not import_ttnn().PagedCacheGeometryOverride:
            raise NotSignable("paged_cache_geometry")
        geometry = (paged_cache_geometry.block_size, paged_cache_geometry.num_kv_heads)
    return (
        geometry,
        plain("cache_position_modulo", cache_position_modulo),
        plain("spec_multi_pos_tiles", spec_multi_pos_tiles),
    )


_NO_PAGED_KEY = _paged_args_key(None, None, 0)  # upstream's paged-only arguments at their defaults


def for_device(device, program_config, compute: ComputeSettings) -> DecodePipeline:
    """The device's pipeline for a program config and compute settings, made (and a named config read) once."""
    config_key = program_config
    if not (program_config is None or isinstance(program_config, (str, Path, ProgramConfig))):
        # ttnn.SDPAProgramConfig (or a wrong type, which raises here): by value.
        config_key = ProgramConfig.coerce(program_config)
    return device_cache(device).lookup(
        "decoders", (config_key, compute), lambda: DecodePipeline(device, config_key, compute)
    )


def positions_bound(call: DecodeCall, config: ProgramConfig) -> int | None:
    """The largest cur_pos the plan must cover when the planner derives k_chunk_size from it: the batch's largest
    host position, rounded up to a power of two (so a decode loop whose positions grow every step meets a handful of
    plans, not one per step; what that gains: docs/USER_GUIDE.md's derived chunk rule). None (the cache length rules)
    for a device cur_pos_tensor, whose values the host does not see, and for an explicit k_chunk_size."""
    if call.positions is None or config.k_chunk_size != 0:
        return None
    span = max(call.positions) + 1
    if span <= 0:
        return None  # every user skipped
    return min(call.shapes.kv_len, 1 << (span - 1).bit_length()) - 1


# ---- helpers ----------------------------------------------------------------------------------------------------

_buffer_address = methodcaller("buffer_address")


def _buffers(tensors: tuple, *, positions, decoded, page_table) -> DecodeBuffers:
    """The program's tensors from a call's (``tensors``, in the fast path's order) and what the run made of them: the
    positions and page table the kernels read (the caller's, or uploaded) and the tensor the decode writes (the output
    or a staging tensor). V is K's columns when v is None (multi-latent attention)."""
    q, k, v, _, _, attn_mask, attention_sink, _ = tensors
    return DecodeBuffers(
        q=q,
        k=k,
        v=k if v is None else v,
        cur_pos=positions,
        out=decoded,
        page_table=page_table,
        attn_mask=attn_mask,
        attention_sink=attention_sink,
    )


def _run_signature(wrapper, tensors: tuple, cur_pos, validate_device_tensors, return_stats) -> tuple | None:
    """(key, check) of a :meth:`FlashDecodeWrapper.run` call (see :mod:`ttflashdecode.ops.decode.fast_path`), None for a
    call the fast path does not sign: host positions or page tables, ``validate_device_tensors=True``, flags that are
    not Python bools, tensor arguments that are not live device tensors. The key names the wrapper (its entries share
    the device's ``calls`` table with the op's; an entry holds its wrapper, so the id is not reused while it lives)."""
    try:
        if cur_pos is not None or flag("validate_device_tensors", validate_device_tensors):
            return None
        addresses, specs = tensors_signature(tensors)
        return ("run", addresses, id(wrapper), flag("return_stats", return_stats)), specs
    except NotSignable:
        return None


def _witness(tensors: tuple, l1_line: int) -> int | None:
    """The position among ``tensors`` of a tensor whose buffer is the lowest live L1 buffer ``l1_line`` (None if none
    is): on later calls of the signature it is live at the same address, so the card's L1 line reader may take it as
    its witness (:meth:`Backend.l1_line_reader`). A per-core or range-lockstep allocated tensor is left out: it is not
    placed by the allocator whose totals the reader reads (and its memory config, which says so, is in the
    signature's check, so no later call of the signature brings one in its place)."""
    l1 = import_ttnn().BufferType.L1
    for slot, tensor in enumerate(tensors):
        if (
            tensor is not None
            and tensor.buffer_address() == l1_line
            and tensor.memory_config().buffer_type == l1
            and not getattr(tensor, "is_per_core_allocated", bool)()
            and not getattr(tensor, "is_range_lockstep_allocated", bool)()
        ):
            return slot
    return None


def launch_hit(cache: DeviceCache | None, key, check: tuple, tensors: tuple, planned: Planned | None = None):
    """The fast path of every decode call (:func:`run_request`'s and :meth:`FlashDecodeWrapper.run`'s): (output, the
    wrapper that launched it) of the signed call ``(key, check)``, launched again from the entry of the device's
    ``calls`` table that a validated call of the same signature left (the wrapper's ``last_run`` is the run's
    result), or None when there is no such entry or it does not apply (then the caller takes the
    full path). ``planned``: the plan the entry must have been made with (a wrapper's current plan), None for the
    op's calls (their signature holds everything their plan is chosen by)."""
    entry = None if cache is None else cache.calls.get(key)
    if entry is None or (planned is not None and entry.planned is not planned):
        return None
    owner = entry.owner
    if not owner.hit(entry, check, tensors, key[1]):
        return None
    return owner.run_hit(entry, tensors), owner


def _buffer_fields(buffers: DecodeBuffers) -> tuple:
    """DecodeBuffers' tensors in field order (``DecodeBuffers(*fields)`` rebuilds it, e.g. from one chip's shards)."""
    return tuple(getattr(buffers, f.name) for f in fields(DecodeBuffers))


class _on_chip:
    """Context: a ValueError raised inside names the chip of the mesh it is about (nothing on one chip)."""

    def __init__(self, chip: int, num_chips: int):
        self.chip, self.num_chips = chip, num_chips

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if kind is ValueError and self.num_chips > 1:
            raise ValueError(f"{error} (chip {self.chip} of the mesh's {self.num_chips})") from None
        return False


def tensor_key(tensors: list) -> tuple:
    """What a descriptor depends on besides the plan: where its tensors are (address, page size, memory config) and
    how they are read (shape and layout: a sink or mask of upstream's form at the address of one of ours needs other
    kernel arguments)."""
    return tuple(
        (t.buffer_address(), t.buffer_page_size(), str(t.memory_config()), tuple(t.shape), str(t.layout))
        for t in tensors
    )


# Which argument of a run carries each planned field, for the error of a run that does not match its plan.
_FIELD_ARGUMENT = {
    "batch": "q",
    "n_q_heads": "q",
    "head_dim": "q",
    "q_len": "q",
    "n_kv_heads": "k",
    "kv_len": "k",
    "logical_kv_len": "k",
    "k_dtype": "k",
    "block_size": "k",
    "v_head_dim": "v",
    "v_dtype": "v",
    "max_blocks_per_user": "page_table_tensor",
    "attn_mask_heads": "attn_mask",
    "attn_mask_dtype": "attn_mask",
    "has_attention_sink": "attention_sink",
    "out_dtype": "output_tensor",
}


def _check_matches_plan(call: DecodeCall, planned: DecodeCall, num_chips: int = 1) -> None:
    """A run's tensors must be those the plan was made for; the error names the first argument that differs (on a
    mesh, in one chip's terms: the plan and the tensors' shapes are per chip)."""
    per_chip = f" (per chip: the mesh splits the heads over {num_chips} chips)" if num_chips > 1 else ""
    if call.shapes != planned.shapes:
        for f in fields(DecodeShapes):
            got, want = getattr(call.shapes, f.name), getattr(planned.shapes, f.name)
            if got != want:
                argument = _FIELD_ARGUMENT.get(f.name, f.name)
                raise ValueError(
                    f"{argument}: {f.name}={got!r} does not match the plan's {f.name}={want!r}{per_chip}; "
                    "call FlashDecodeWrapper.plan(...) for this shape"
                )
    for name, argument in (("out_dtype", "output_tensor"), ("out_layout", "q"), ("memory_config", "output_tensor")):
        got, want = getattr(call, name), getattr(planned, name)
        if got != want:
            what = "layout (the output's)" if name == "out_layout" else name
            raise ValueError(
                f"{argument}: {what} {got} does not match the plan's {want}; call FlashDecodeWrapper.plan(...) for it"
            )


def _l1_budget(call: DecodeCall, backend: Backend, new_output: bool) -> int:
    """CB bytes per core the plan may use. Circular buffers must end below the lowest live L1 buffer (tt-metal
    refuses the launch otherwise): the user's L1 tensors (Q among them), a preallocated L1 output, and a new L1
    output, which the top-down L1 allocator places below the buffers already there."""
    chip = chip_facts(backend.device)  # Wormhole's or Blackhole's L1 (ttflashdecode.device_arch)
    lowest = backend.lowest_l1_buffer_address() or chip.l1_size
    if new_output:
        lowest -= _new_l1_output_bytes_per_core(call, backend)
    return min(chip.l1_budget, lowest - chip.l1_reserved)


def _new_l1_output_bytes_per_core(call: DecodeCall, backend: Backend) -> int:
    """L1 bytes per core (bank) a new output will take: one shard when height-sharded, its share of the pages when
    L1 interleaved (one bank per core of the grid), 0 in DRAM. Pages keep the 32-B L1 alignment."""
    mc = call.memory_config
    if mc.buffer_type != import_ttnn().BufferType.L1:
        return 0
    q_len, b, heads, width = call.out_shape
    datum = 4 if call.out_dtype == "float32" else 2
    if call.out_layout == "TILE":
        page, pages = TILE_BYTES[call.out_dtype], q_len * b * (-(-heads // TILE)) * (width // TILE)
    else:
        page, pages = -(-width * datum // 32) * 32, q_len * b * heads
    if mc.is_sharded():
        shard_h, shard_w = (int(d) for d in mc.shard_spec.shape)
        return (shard_h // TILE) * (shard_w // TILE) * page if call.out_layout == "TILE" else shard_h * page
    gx, gy = backend.grid()
    return -(-pages // (gx * gy)) * page


def check_cbs_end_below(out, decode_plan: DecodePlan) -> None:
    """A new L1 output the allocator placed lower than planned (in a gap below other L1 buffers) must still clear
    the CB region."""
    in_l1 = out.memory_config().buffer_type == import_ttnn().BufferType.L1
    reserved = chip_facts(out.device()).l1_reserved if callable(getattr(out, "device", None)) else L1_RESERVED_BYTES
    if in_l1 and reserved + decode_plan.l1_bytes > out.buffer_address():
        raise ValueError(
            f"memory_config: the L1 output sits at L1 address {out.buffer_address():#x} (below other live L1 "
            f"buffers) but this program's circular buffers reach {reserved + decode_plan.l1_bytes:#x}; "
            "free those L1 tensors, pass a preallocated output_tensor, or use a DRAM output"
        )
