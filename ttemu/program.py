"""Turns a real ``ttnn.ProgramDescriptor`` into the emulator's flat program description.

Reads kernels (source, core ranges, compile-time / named compile-time args, defines, per-core and common runtime args,
config), circular buffers and semaphores; validates them (cores inside the grid, runtime args only for a kernel's cores,
CB indices 0..31, one kernel per RISC per core, L1 capacity) and raises ``EmulatorError`` naming the offending item
before anything runs. Each kernel is compiled with the descriptor's ``compiler_include_paths`` (the compiler adds the
include roots tt-metal's JIT build gives every kernel, jit_env.source_include_paths). CBs are placed like tt-metal's
allocator does: one address for all cores of a CB descriptor (the highest current top over those cores), starting at
``arch.L1_UNRESERVED_BASE``, 16-B aligned; a descriptor with several format descriptors shares one buffer among its CB
indices.

How ttnn 0.81.1 stores per-core runtime args: ``KernelDescriptor.runtime_args`` is a RuntimeArgsView holding
(CoreCoord, args) entries; ``len(view)`` is the number of entries and ``view[x][y]`` the args of core (x, y)
(IndexError when that core has none). Iterating the view does not terminate, so cores are probed by coordinate.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from . import arch, jit_env
from .compiler import KERNEL_CACHE, KernelBuild, compile_kernel, compile_kernels, kernel_flags
from .errors import EmulatorError
from .ttnn_env import import_ttnn

ttnn = import_ttnn()

PROC_NAMES = {0: "brisc", 1: "ncrisc", 2: "compute"}

PROC_LABEL = {0: "BRISC", 1: "NCRISC", 2: "TRISC"}


@dataclass
class KernelPlan:
    id: int
    name: str
    processor: int
    library: Path
    cores: list[tuple[int, int]]
    runtime_args: dict[tuple[int, int], list[int]]
    common_runtime_args: list[int]
    compute_config: dict | None = None
    noc_index: int = 0  # the data-movement kernel's default NOC (the timing model routes its transfers on it)


@dataclass
class ProgramPlan:
    kernels: list[KernelPlan] = field(default_factory=list)
    cbs: list[tuple[int, int, int, int, int, int, int]] = field(default_factory=list)  # x y idx addr size page fmt
    semaphores: list[tuple[int, int, int, int]] = field(default_factory=list)  # x y id initial


def _cores_of(crs) -> list[tuple[int, int]]:
    out = []
    for r in crs.ranges():
        for y in range(r.start.y, r.end.y + 1):
            for x in range(r.start.x, r.end.x + 1):
                out.append((x, y))
    return out


def _config_processor(cfg) -> tuple[int, dict | None, int, int]:
    """(processor, compute config, NOC index, NOC mode) of a kernel config. tt-metal's ReaderDataMovementConfig is
    {RISCV_1, GetPreferredNOCForDRAMRead} and WriterDataMovementConfig {RISCV_0, GetPreferredNOCForDRAMWrite}; on
    Wormhole those NOCs are NOC_0 and NOC_1 (tt_metal/api/tt-metalium/kernel_types.hpp, tt_metal/detail)."""
    if isinstance(cfg, ttnn.ReaderConfigDescriptor):
        return 1, None, 0, 0
    if isinstance(cfg, ttnn.WriterConfigDescriptor):
        return 0, None, 1, 0
    if isinstance(cfg, ttnn.DataMovementConfigDescriptor):
        p = int(cfg.processor.value)
        if p not in (0, 1):
            raise EmulatorError(f"DataMovementConfigDescriptor(processor=RISCV_{p}): Wormhole has RISCV_0 and RISCV_1")
        return p, None, int(cfg.noc.value), int(cfg.noc_mode.value)
    if isinstance(cfg, ttnn.ComputeConfigDescriptor):
        return (
            2,
            {
                "math_fidelity": int(cfg.math_fidelity.value),
                "math_approx_mode": bool(cfg.math_approx_mode),
                "fp32_dest_acc_en": bool(cfg.fp32_dest_acc_en),
                "dst_full_sync_en": bool(cfg.dst_full_sync_en),
                "bfp8_pack_precise": bool(cfg.bfp8_pack_precise),
            },
            0,
            0,
        )
    raise EmulatorError(f"unsupported kernel config {type(cfg).__name__}")


def _cb_entry(f, label: str) -> jit_env.CBEntry:
    """A CBFormatDescriptor's chlkc_descriptors.h entry (its tile, if given, and face-geometry override)."""
    tile = f.tile
    fg = f.face_geometry
    try:
        return jit_env.cb_entry(
            int(f.buffer_index),
            int(f.data_format_as_uint8),
            None if tile is None else (int(tile.height), int(tile.width)),
            None if fg is None else (int(fg.face_r_dim), int(fg.num_faces)),
        )
    except EmulatorError as e:
        raise EmulatorError(f"{label}: {e}") from None


def _kernel_source(k) -> tuple[Path, str]:
    src = k.kernel_source
    if k.source_type == ttnn.KernelDescriptor.SourceType.SOURCE_CODE:
        digest = hashlib.sha256(src.encode()).hexdigest()[:16]
        d = KERNEL_CACHE / "inline"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"inline_{digest}.cpp"
        if not p.exists():
            tmp = p.with_suffix(".tmp")
            tmp.write_text(src)
            tmp.rename(p)
        return p, f"inline_{digest[:8]}"
    # As tt-metal resolves a kernel path: as given (absolute, or from the working directory), then from its root
    # directory, which for the ttnn wheel is the installed ttnn package (upstream kernels as "ttnn/cpp/ttnn/...").
    p = Path(src)
    root = jit_env.wheel_root()
    for cand in (p, *([root / p] if root is not None and not p.is_absolute() else [])):
        if cand.is_file():
            return cand.resolve(), cand.stem
    raise EmulatorError(
        f"kernel source file not found: {src} (tried as given from {Path.cwd()}"
        + (f" and from ttnn's root {root})" if root is not None else ")")
    )


def _runtime_args(k, cores: list[tuple[int, int]], name: str, grid: tuple[int, int]) -> dict:
    view = k.runtime_args
    total = len(view)
    out = {}
    for x, y in cores:
        try:
            args = view[x][y]
        except IndexError:
            continue
        out[(x, y)] = [int(args[i]) for i in range(len(args))]
    if len(out) != total:
        own = set(cores)
        stray = []
        for y in range(max(grid[1], 16)):
            for x in range(max(grid[0], 16)):
                if (x, y) in own:
                    continue
                try:
                    view[x][y]
                    stray.append((x, y))
                except IndexError:
                    pass
        raise EmulatorError(
            f"kernel {name}: runtime args set for core(s) {stray or '(unknown)'} that are not in its core_ranges"
        )
    return out


def build_plan(
    pd, grid: tuple[int, int], spec: arch.ArchSpec = arch.WORMHOLE_B0, num_dram_banks: int = arch.NUM_DRAM_BANKS
) -> ProgramPlan:
    """Validate `pd`, compile its kernels (cached) for `spec`'s chip and lay out its L1; return the ProgramPlan."""
    gw, gh = grid
    plan = ProgramPlan()

    def check_core(c, what):
        if not (0 <= c[0] < gw and 0 <= c[1] < gh):
            raise EmulatorError(f"{what}: core ({c[0]},{c[1]}) is outside the {gw}x{gh} compute grid")

    # ---- circular buffers
    top: dict[tuple[int, int], int] = {}
    used_idx: dict[tuple[int, int], set[int]] = {}
    cb_entries: dict[tuple[int, int], dict[int, jit_env.CBEntry]] = {}  # core -> CB index -> descriptor entry
    for n, cb in enumerate(pd.cbs):
        cores = _cores_of(cb.core_ranges)
        fds = list(cb.format_descriptors)
        label = f"CB descriptor #{n} (indices {[int(f.buffer_index) for f in fds]})"
        for c in cores:
            check_core(c, label)
        if cb.has_buffer() or cb.has_global_circular_buffer():
            raise EmulatorError(f"{label}: globally allocated / tensor-backed CBs are not supported by the emulator")
        if not fds:
            raise EmulatorError(f"{label}: no format descriptors")
        size = int(cb.total_size)
        base = spec.l1_unreserved_base
        addr = max([base] + [top.get(c, base) for c in cores])
        addr = (addr + spec.l1_alignment - 1) // spec.l1_alignment * spec.l1_alignment
        if addr + size > spec.l1_size:
            raise EmulatorError(
                f"{label}: L1 overflow: CB of {size} B at 0x{addr:x} ends at {addr + size} B, past the core's "
                f"{spec.l1_size} B L1 (CBs start at {base})"
            )
        for f in fds:
            idx, page, fmt = int(f.buffer_index), int(f.page_size), int(f.data_format_as_uint8)
            if not 0 <= idx < arch.NUM_CBS:
                raise EmulatorError(f"{label}: CB index {idx} out of range 0..{arch.NUM_CBS - 1}")
            if page <= 0 or size % page:
                raise EmulatorError(f"CB {idx}: total_size {size} is not a multiple of page_size {page}")
            entry = _cb_entry(f, label)
            for c in cores:
                s = used_idx.setdefault(c, set())
                if idx in s:
                    raise EmulatorError(f"CB {idx} is configured twice on core ({c[0]},{c[1]})")
                s.add(idx)
                cb_entries.setdefault(c, {})[idx] = entry
                plan.cbs.append((c[0], c[1], idx, addr, size, page, fmt))
        for c in cores:
            top[c] = addr + size

    # ---- semaphores
    seen_sem = set()
    for s in pd.semaphores:
        sid = int(s.id)
        if not 0 <= sid < arch.NUM_SEMAPHORES:
            raise EmulatorError(f"semaphore id {sid} out of range 0..{arch.NUM_SEMAPHORES - 1}")
        for c in _cores_of(s.core_ranges):
            check_core(c, f"semaphore {sid}")
            if (c, sid) in seen_sem:
                raise EmulatorError(f"semaphore {sid} defined twice on core ({c[0]},{c[1]})")
            seen_sem.add((c, sid))
            plan.semaphores.append((c[0], c[1], sid, int(s.initial_value) & 0xFFFFFFFF))

    # ---- kernels
    owner: dict[tuple[tuple[int, int], int], str] = {}
    builds: list[KernelBuild] = []
    kernels = []  # per kernel, what its KernelPlan takes besides the library
    for kid, k in enumerate(pd.kernels):
        source, name = _kernel_source(k)
        proc, ccfg, noc_index, noc_mode = _config_processor(k.config)
        label = f"kernel {name} ({PROC_LABEL[proc]})"
        cores = _cores_of(k.core_ranges)
        if not cores:
            raise EmulatorError(f"{label}: empty core_ranges")
        for c in cores:
            check_core(c, label)
            prev = owner.get((c, proc))
            if prev:
                raise EmulatorError(f"{label} and {prev} both run on {PROC_LABEL[proc]} of core ({c[0]},{c[1]})")
            owner[(c, proc)] = label
        rtas = _runtime_args(k, cores, name, grid)
        crta = [int(v) for v in k.common_runtime_args]
        for c, a in rtas.items():
            if len(a) > arch.MAX_RUNTIME_ARGS:
                raise EmulatorError(f"{label}: {len(a)} runtime args on core {c} (max {arch.MAX_RUNTIME_ARGS})")
        if len(crta) > arch.MAX_RUNTIME_ARGS:
            raise EmulatorError(f"{label}: {len(crta)} common runtime args (max {arch.MAX_RUNTIME_ARGS})")
        # ProgramImpl::set_cb_data_fmt / set_cb_tile_dims: every CB on any of the kernel's cores enters the kernel's
        # one table (a CB index configured differently on two of its cores: the later core's entry, as there).
        kcbs: dict[int, jit_env.CBEntry] = {}
        for c in cores:
            kcbs.update(cb_entries.get(c, {}))
        flags = kernel_flags(
            source,
            processor=PROC_NAMES[proc],
            compile_time_args=[int(v) for v in k.compile_time_args],
            named_compile_time_args=[(str(n), int(v)) for n, v in k.named_compile_time_args],
            defines=[(str(n), str(v)) for n, v in k.defines],
            include_paths=[str(p) for p in k.compiler_include_paths],
            compute_config=ccfg,
            num_l1_banks=gw * gh,
            noc_index=noc_index,
            noc_mode=noc_mode,
            cbs=[kcbs[i] for i in sorted(kcbs)],
            spec=spec,
            num_dram_banks=num_dram_banks,
        )
        builds.append(KernelBuild(source, name, flags))
        kernels.append((kid, name, proc, cores, rtas, crta, ccfg, int(noc_index or 0)))
    # One batch per program, so a first use says once what it compiles; each kernel through this module's
    # compile_kernel (a test may replace it with a recorder of the builds).
    names = ", ".join(dict.fromkeys(b.name for b in builds))
    libraries = compile_kernels(builds, f"program [{names}]", compile=compile_kernel)
    for (kid, name, proc, cores, rtas, crta, ccfg, noc), lib in zip(kernels, libraries):
        plan.kernels.append(KernelPlan(kid, name, proc, lib, cores, rtas, crta, ccfg, noc_index=noc))
    return plan
