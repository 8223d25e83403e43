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
at run time, so one program serves every step, and one compiled kernel set every layer. What a run derives (plans,
program descriptors, staging outputs) lives in the device's :class:`~ttflashdecode.device_cache.DeviceCache` and
dies with the device.

A run is a sequence of small steps, each its own method: check the call, check device values (on request), upload
host positions and page tables, allocate the output, check L1 room, look up or build the program, launch. A run that
repeats one that passed (same tensors' addresses and properties, device positions) takes the fast path instead:
allocate the output, launch the programs kept for it (:mod:`ttflashdecode.ops.decode.fast_path`). ``plan()`` makes what
runs reuse (a bfloat8_b output's staging tensor, a non-causal call's positions), so a run uploads nothing and can be
captured in a trace.
The module-level functions in :mod:`ttflashdecode.ops.decode.api` are conveniences over this class: they validate a call
as it comes, plan it (the plan table makes that a lookup after the first call) and run it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ttemu.ttnn_env import import_ttnn
from ttflashdecode.backend import Backend, backend_for
from ttflashdecode.checks import (
    KV_DTYPES,
    as_int,
    check_bool,
    check_device_tensor,
    check_scale,
    check_sliding_window,
    dtype_name_of,
    padded_rows,
)
from ttflashdecode.config import AUTO, TILE, ProgramConfig
from ttflashdecode.device_arch import chip_facts
from ttflashdecode.device_cache import DeviceCache, device_cache
from ttflashdecode.ops.convert.factory import build_convert_program
from ttflashdecode.ops.decode.factory import ComputeSettings, DecodeBuffers, build_program
from ttflashdecode.ops.decode.fast_path import (
    FastCall,
    NotSignable,
    flag,
    remember_call,
    remember_launch,
    tensors_signature,
)
from ttflashdecode.ops.decode.validate import (
    BLOCK_FLOAT_OUT_DTYPES,
    DecodeCall,
    check_call,
    check_device_page_table,
    check_device_positions,
    check_head_dim_v,
    check_mesh_call,
    check_mesh_heads_divide,
    check_mesh_users_split,
    check_out_dtype,
    check_output_memory_config,
    check_q_len,
    decode_dtype,
)
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
class _Planned:
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
        if not callable(getattr(device, "compute_with_storage_grid_size", None)):
            raise TypeError(
                f"device={device!r} ({type(device).__name__}): expected a ttnn device or an emulator device"
            )
        self._backend: Backend = backend_for(device)
        self._grid = self._backend.grid()  # one chip's (every chip of a mesh has the same)
        self._num_chips = self._backend.num_chips
        # read on every fast-path hit: the lowest live L1 buffer, and where an output is (the key of its programs)
        self._l1_line = self._backend.l1_line_reader()
        self._address_key = self._backend.address_key
        self._cache: DeviceCache = device_cache(device)
        self._compute = ComputeSettings.coerce(compute_kernel_config)
        self._config = ProgramConfig.coerce(AUTO if program_config is None else program_config, default_grid=self._grid)
        self._planned: _Planned | None = None
        self.last_run: DecodeResult | None = None

    @property
    def device(self):
        return self._backend.device

    @property
    def program_config(self) -> ProgramConfig:
        return self._config

    @property
    def decode_plan(self) -> DecodePlan | None:
        """The current plan (None before :meth:`plan`)."""
        return None if self._planned is None else self._planned.plan

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
        self._planned = None  # a plan that fails leaves none behind
        if users_mesh_axis is not None:
            batch, n_q_heads, n_kv_heads = check_mesh_users_split(
                users_mesh_axis, batch, n_q_heads, n_kv_heads, self._backend.mesh_shape(), attn_mask_heads
            )
        elif self._num_chips > 1:
            if attn_mask_heads and attn_mask_heads == n_q_heads:
                attn_mask_heads = n_q_heads // self._num_chips if isinstance(n_q_heads, int) else attn_mask_heads
            n_q_heads, n_kv_heads = check_mesh_heads_divide(
                n_q_heads, n_kv_heads, self._num_chips, self._backend.mesh_shape()
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
            out_dtype=decode_dtype(out_dtype, self._compute.fp32_dest_acc_en),
            dram_alignment=chip_facts(self._backend.device).dram_alignment,
        )
        out_shape = (shapes.q_len, shapes.batch, shapes.n_q_heads, shapes.v_head_dim)
        memory_config = check_output_memory_config(memory_config, out_shape, self._grid, out_dtype, out_layout)
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
        decode_plan = self._plan_call(call, new_output=True, max_cur_pos=max_cur_pos)
        # What runs reuse is made now, so a run makes no upload (a run inside a trace capture must not).
        if out_dtype in BLOCK_FLOAT_OUT_DTYPES:
            self._staging(call)
        if not is_causal:
            self._constant_positions(shapes)
        return decode_plan

    def _plan_call(self, call: DecodeCall, new_output: bool, max_cur_pos: int | None) -> DecodePlan:
        """Plan (or find the plan of) a validated call: its shapes on this wrapper's config, in the L1 left below the
        device's live L1 buffers (and a new L1 output)."""
        l1_budget = _l1_budget(call, self._backend, new_output)
        fp32 = self._compute.fp32_dest_acc_en
        key = (call.shapes, self._config, self._grid, fp32, l1_budget, max_cur_pos)
        decode_plan = self._cache.lookup(
            "plans",
            key,
            lambda: plan_for(
                call.shapes, self._config, self._grid, max_cur_pos=max_cur_pos, fp32_dest_acc=fp32, l1_budget=l1_budget
            ),
        )
        # run()'s fast-path entries of the previous plan stay in the device's table until they age out: a hit
        # requires the entry's plan to be the wrapper's current one (launch_hit).
        self._planned = _Planned(call, decode_plan, self._cache.plan_id(decode_plan))
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
        planned = self._require_plan()
        tensors = (q, k, v, cur_pos_tensor, page_table_tensor, attn_mask, attention_sink, output_tensor)
        signature = _run_signature(self, tensors, cur_pos, validate_device_tensors, return_stats)
        if signature is not None:  # the fast path: a call like one that passed, at the same addresses
            hit = launch_hit(self._cache, signature[0], signature[1], tensors, planned)
            if hit is not None:
                return (hit[0], self.last_run) if return_stats else hit[0]
        validate_device_tensors = check_bool("validate_device_tensors", validate_device_tensors)
        return_stats = check_bool("return_stats", return_stats)
        call = self._check_run(planned, tensors, cur_pos)
        self._check_l1_room()
        out, entry = self._execute(
            planned,
            call,
            tensors,
            validate_device_tensors,
            plan_hits=0,
            check=None if signature is None else signature[1],
        )
        if entry is not None:
            remember_call(self._cache, signature[0], entry)
        return (out, self.last_run) if return_stats else out

    def _require_plan(self) -> _Planned:
        if self._planned is None:
            raise RuntimeError("FlashDecodeWrapper.run: call plan(...) first (it fixes the shapes runs must match)")
        if self._cache.closed:
            raise RuntimeError("FlashDecodeWrapper.run: the wrapper's device was closed; make a new wrapper")
        return self._planned

    def _check_run(self, planned: _Planned, tensors: tuple, cur_pos) -> DecodeCall:
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
            num_chips=self._num_chips,
            mesh_shape=self._backend.mesh_shape(),
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
            fp32_dest_acc_en=self._compute.fp32_dest_acc_en,
            device=self.device,
            grid=self._grid,
            head_dim_v=s.v_head_dim if s.v_from_k else None,
        )
        _check_matches_plan(call, fixed, self._num_chips)
        return call

    def _check_l1_room(self) -> None:
        """The plan's circular buffers must end below every live L1 buffer; an L1 tensor allocated since planning
        may have moved that line down."""
        lowest = self._l1_line()
        end = chip_facts(self._backend.device).l1_reserved + self._planned.plan.l1_bytes
        if lowest is not None and end > lowest:
            raise ValueError(
                f"FlashDecodeWrapper.run: the planned circular buffers reach L1 address {end:#x} but a live L1 buffer "
                f"starts at {lowest:#x} (allocated after plan()); plan again"
            )

    def _execute(
        self,
        planned: _Planned,
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
            self._check_device_values(call, cur_pos_tensor, page_table)
        positions = self._positions(call, cur_pos_tensor)
        page_table = self._page_table(call, page_table)
        out = self._output(call, output_tensor, q)
        _check_cbs_end_below(out, planned.plan)
        staging = self._staging(call) if call.out_dtype in BLOCK_FLOAT_OUT_DTYPES else None
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
                chip_facts(self._backend.device).l1_reserved + planned.plan.l1_bytes
                if call.memory_config.buffer_type == import_ttnn().BufferType.L1
                else None
            ),
            plan_hits=plan_hits,
            new_output=self._output_allocator(call),
        )
        remember_launch(entry, self._address_key(out), launch)
        return out, entry

    def _hit(self, entry: FastCall, check: tuple, tensors: tuple) -> bool:
        """Whether a signed call may take ``entry``'s fast path: its compared part matches and the lowest live L1
        buffer is at one of the entry's lines. On a mesh the tensors' layout over the chips is checked as the full
        path checks it (raising its error): it can change in place."""
        if not entry.matches(check, self._l1_line()):
            return False
        if self._num_chips > 1:
            q, k, v, cur_pos_tensor, page_table, attn_mask, attention_sink, _ = tensors
            check_mesh_call(
                q,
                k,
                v,
                attn_mask,
                attention_sink,
                num_chips=self._num_chips,
                mesh_shape=self._backend.mesh_shape(),
                cur_pos_tensor=cur_pos_tensor,
                page_table=page_table,
            )
        return True

    def _run_hit(self, entry: FastCall, tensors: tuple):
        """Launch a call that matched ``entry`` (``tensors``: the call's, in the fast path's order): its output (a new
        one, or the given one), the entry's programs for the output's address, the launch. No validation, no
        planning, no descriptor lookup."""
        q, k, v, cur_pos_tensor, page_table, attn_mask, attention_sink, output_tensor = tensors
        out = entry.new_output(q) if output_tensor is None else output_tensor
        if entry.cbs_end is not None and out.buffer_address() < entry.cbs_end:
            _check_cbs_end_below(out, entry.planned.plan)  # raises the full path's error
        staging = entry.staging
        positions = cur_pos_tensor if entry.positions is None else entry.positions
        launch = entry.launches.get(self._address_key(out))
        if launch is None:  # a new output at an address this call has not used yet
            return self._launch_new_output(entry, tensors, out, positions)
        self._cache.count_hits(entry.plan_hits, launch.lookups)
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
            run = import_ttnn().generic_op
            run(io, launch.decode)
            if launch.convert is not None:
                run([staging, out], launch.convert)
            self.last_run = launch.card_result
            return out
        stats = self._backend.run(io, launch.decode)
        convert_stats = self._backend.run([staging, out], launch.convert) if staging is not None else None
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
        self._cache.count_hits(entry.plan_hits, 0)
        self._launch(planned, buffers, staging, out, launch)
        return out

    def _make_launch(self, planned: _Planned, buffers: DecodeBuffers, staging, out) -> _Launch:
        decode = self._decode_programs(planned, planned.call.scale, buffers)
        convert = self._convert_programs(staging, out) if staging is not None else []
        card_result = None if self._backend.is_emulator else DecodeResult(planned.plan, None, staging, None)
        return _Launch(
            self._backend.launchable(decode),
            self._backend.launchable(convert) if convert else None,
            len(decode) + len(convert),
            card_result,
        )

    def _launch(self, planned: _Planned, buffers: DecodeBuffers, staging, out, launch: _Launch) -> None:
        stats = self._backend.run(buffers.io_tensors(), launch.decode)
        convert_stats = self._backend.run([staging, out], launch.convert) if staging is not None else None
        self.last_run = DecodeResult(planned.plan, stats, staging, convert_stats)

    # ---- the steps of a run --------------------------------------------------------------------------------------

    def _check_device_values(self, call: DecodeCall, cur_pos_tensor, page_table) -> None:
        """validate_device_tensors=True: read the device cur_pos_tensor and page table back and check the values the
        kernels will use (host ones were checked with the call)."""
        chips = self._num_chips
        per_chip_positions = [call.positions] * chips
        if call.positions is None:  # a device cur_pos_tensor: each chip reads its own copy
            per_chip_positions = []
            for chip, values in enumerate(self._backend.to_torch_per_chip(cur_pos_tensor)):
                with _on_chip(chip, chips):
                    per_chip_positions.append(check_device_positions(values.flatten().tolist(), call.shapes))
        if call.shapes.is_paged and call.page_table_rows is None:  # a device page table
            for chip, rows in enumerate(self._backend.to_torch_per_chip(page_table)):
                with _on_chip(chip, chips):
                    check_device_page_table(rows.tolist(), per_chip_positions[chip], call.shapes, call.num_blocks)

    def _positions(self, call: DecodeCall, cur_pos_tensor):
        """The cur_pos tensor the kernels read: the caller's device tensor, a non-causal call's constant positions
        (made once per shape), or host positions uploaded."""
        if call.positions is None:
            return cur_pos_tensor
        if not call.shapes.is_causal:
            return self._constant_positions(call.shapes)
        return self._upload_int32("cur_pos", call.positions, [call.shapes.batch])

    def _constant_positions(self, shapes: DecodeShapes):
        """A non-causal call's positions (every query sees the whole cache: kv_len - 1 for every user), one device
        tensor per (batch, kv_len) reused every call: a non-causal call then uploads nothing (and can be captured)."""
        last = shapes.logical_kv_len - 1
        return self._cache.lookup(
            "staging",
            ("positions", shapes.batch, last),
            lambda: self._upload_int32("cur_pos", [last] * shapes.batch, [shapes.batch]),
        )

    def _page_table(self, call: DecodeCall, page_table):
        if call.page_table_rows is None:
            return page_table
        rows = call.page_table_rows
        return self._upload_int32("page_table_tensor", rows, [len(rows), len(rows[0])])

    def _upload_int32(self, name: str, values, shape: list[int]):
        if self._backend.is_capturing():
            # tt-metal refuses host writes while a trace is captured ("Writes are not supported during trace capture")
            raise ValueError(
                f"{name}: host values would be uploaded inside a trace capture, which cannot hold a host write; pass "
                f"a device tensor ({'cur_pos_tensor' if name == 'cur_pos' else name}) written before the capture or "
                "between replays"
            )
        return self._backend.int32_tensor(values, shape)

    def _output(self, call: DecodeCall, output_tensor, q):
        if output_tensor is not None:
            return output_tensor
        return self._output_allocator(call)(q)

    def _output_allocator(self, call: DecodeCall):
        """``new(q)``: a new output of ``call``. On a mesh each chip writes the users and heads of its q shard: the
        output ([1, b, heads, d]) is laid over the chips as q is."""
        ttnn = import_ttnn()
        layout = ttnn.TILE_LAYOUT if call.out_layout == "TILE" else ttnn.ROW_MAJOR_LAYOUT
        return self._backend.output_allocator(call.out_shape, getattr(ttnn, call.out_dtype), layout, call.memory_config)

    def _staging(self, call: DecodeCall):
        """The tensor a block-float call's decode writes (bfloat16 or float32), one per shape and dtype, reused every
        step so the cached programs' addresses stay valid."""
        ttnn = import_ttnn()
        shape, dtype = call.out_shape, call.shapes.out_dtype
        return self._cache.lookup(
            "staging",
            (shape, dtype),
            lambda: self._backend.allocate(list(shape), getattr(ttnn, dtype), ttnn.TILE_LAYOUT),
        )

    def _decode_programs(self, planned: _Planned, scale: float | None, buffers: DecodeBuffers) -> list:
        """One descriptor per distinct set of addresses: one for a single chip or a card's mesh, one per chip of an
        emulated mesh unless chips share their addresses (then they share the cached descriptor)."""
        programs = []
        for chip in self._backend.chip_tensors(list(_buffer_fields(buffers))):
            chip_buffers = DecodeBuffers(*chip)
            key = ("decode", planned.plan_id, self._compute, scale, _tensor_key(chip_buffers.io_tensors()))
            programs.append(
                self._cache.lookup(
                    "programs",
                    key,
                    lambda b=chip_buffers: build_program(
                        planned.plan, b, self._backend.noc_coord, self._compute, scale=scale
                    ),
                )
            )
        return programs

    def _convert_programs(self, decoded, out) -> list:
        programs = []
        for chip_decoded, chip_out in self._backend.chip_tensors([decoded, out]):
            programs.append(
                self._cache.lookup(
                    "programs",
                    ("convert", _tensor_key([chip_decoded, chip_out])),
                    lambda d=chip_decoded, o=chip_out: build_convert_program(d, o, self._grid),
                )
            )
        return programs


# ---- helpers ----------------------------------------------------------------------------------------------------


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
        return ("run", id(wrapper), addresses, flag("return_stats", return_stats)), specs
    except NotSignable:
        return None


def launch_hit(cache: DeviceCache | None, key, check: tuple, tensors: tuple, planned: _Planned | None = None):
    """The fast path of every decode call (the op's functions and :meth:`FlashDecodeWrapper.run`): (output, the
    wrapper that launched it) of the signed call ``(key, check)``, launched again from the entry of the device's
    ``calls`` table that a validated call of the same signature left (the wrapper's ``last_run`` is the run's
    result), or None when there is no such entry or it does not apply (then the caller takes the
    full path). ``planned``: the plan the entry must have been made with (a wrapper's current plan), None for the
    op's calls (their signature holds everything their plan is chosen by)."""
    entry = None if cache is None else cache.calls.get(key)
    if entry is None or (planned is not None and entry.planned is not planned):
        return None
    owner = entry.owner
    if not owner._hit(entry, check, tensors):
        return None
    return owner._run_hit(entry, tensors), owner


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


def _tensor_key(tensors: list) -> tuple:
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


def _check_cbs_end_below(out, decode_plan: DecodePlan) -> None:
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
