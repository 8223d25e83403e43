"""Runs one program in a child process (``ttfd_emu_run``) and turns its result into stats or an exception.

The parent writes a flat program file (grid, DRAM layout, L1 bank table, live buffers, CBs, semaphores, kernels and
their runtime args), passes the DRAM memfd and the L1-image memfd (storage of L1 sharded and L1-interleaved buffers) to
the child, and reads
back a JSON result. A kernel crash can therefore never
take down Python: exit 0 -> EmulatorStats, 3 -> EmulatorHang, 4 -> KernelFault, anything else -> EmulatorError. A
fault's stack comes back as (library, offset) frames, resolved here to the kernel's source line (fault_location.py).

With ``TTFD_EMU_SANITIZE=address|thread`` the child is the sanitizer build (build.py); the sanitizer writes its reports
into the run's temporary directory, and any report becomes a SanitizerReport (after the run's own fault or hang,
which the report then explains).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from . import arch, fault_location
from .build import runtime_executable, sanitizer
from .errors import EmulatorError, EmulatorHang, KernelFault, SanitizerReport
from .program import ProgramPlan
from .stats import EmulatorStats


def _tmp_root() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


WALL_BACKSTOP_FACTOR = 10  # the wall-clock limit, in multiples of the deadline (which counts CPU time)


def write_program(
    f,
    plan: ProgramPlan,
    *,
    grid,
    dram_fd,
    buffers,
    result_path,
    so_dir,
    deadline_ms,
    hang_ms,
    dprint,
    l1_fd=-1,
    l1_buffers=(),
    l1i_buffers=(),
    timing=True,
    timing_only=False,
    nodata_buffers=(),
    spec: arch.ArchSpec = arch.WORMHOLE_B0,
    dram=None,
):
    """dram: (channels, banks) of the device (default: the spec's full layout)."""
    w = f.write
    w(f"result {result_path}\nso_dir {so_dir}\ntiming {int(bool(timing))}\ntiming_only {int(bool(timing_only))}\n")
    w(f"grid {grid[0]} {grid[1]}\nl1 {spec.l1_size} {spec.l1_unreserved_base}\nchip {spec.name}\n")
    w(f"translate {spec.worker_x[0]} {spec.worker_y0}\n")
    if not spec.affine_x:  # translated x of each logical column (Blackhole: the die's Tensix columns, arch.py)
        w("xmap " + str(grid[0]) + " " + " ".join(str(x) for x in spec.worker_x[: grid[0]]) + "\n")
    channels, banks = dram if dram is not None else arch.dram_layout_for(spec)
    w(f"dram {dram_fd} {len(channels)} {spec.dram_channel_bytes} {spec.dram_bank_bytes}\n")
    for ch, cores in enumerate(channels):
        for x, y in cores:
            w(f"dram_core {ch} {x} {y}\n")
    for b in banks:
        w(f"bank {b.channel} {b.noc_x} {b.noc_y} {b.offset} {b.noc1_x} {b.noc1_y}\n")
    for x, y in arch.l1_bank_cores(tuple(grid)):  # L1 bank b -> logical core, in bank order
        w(f"l1bank {x} {y}\n")
    w(f"limits {int(deadline_ms)} {int(hang_ms)}\ndprint {int(dprint)}\n")
    for bid, base, aligned, npages in buffers:
        w(f"buffer {bid} {base} {aligned} {npages}\n")
    for bid in nodata_buffers:
        w(f"nodata {bid}\n")
    if l1_fd >= 0:
        w(f"l1store {l1_fd}\n")
    for bid, base, aligned, npages, per_shard, region, cores in l1_buffers:
        w(
            f"l1buf {bid} {base} {aligned} {npages} {per_shard} {region} {len(cores)} "
            + " ".join(map(str, cores))
            + "\n"
        )
    for bid, base, aligned, npages in l1i_buffers:
        w(f"l1ibuf {bid} {base} {aligned} {npages}\n")
    for cb in plan.cbs:
        w("cb " + " ".join(str(v) for v in cb) + "\n")
    for s in plan.semaphores:
        w("sem " + " ".join(str(v) for v in s) + "\n")
    for k in plan.kernels:
        w(f"kernel {k.id} {k.processor} {k.library} {k.name}\nknoc {k.id} {k.noc_index}\n")
        if k.compute_config:
            c = k.compute_config
            w(
                f"kcfg {k.id} {c['math_fidelity']} {int(c['math_approx_mode'])} {int(c['fp32_dest_acc_en'])} "
                f"{int(c['dst_full_sync_en'])} {int(c['bfp8_pack_precise'])}\n"
            )
        w(
            f"kcrta {k.id} {len(k.common_runtime_args)} "
            + " ".join(str(v & 0xFFFFFFFF) for v in k.common_runtime_args)
            + "\n"
        )
        for x, y in k.cores:
            a = k.runtime_args.get((x, y), [])
            w(f"inst {k.id} {x} {y} {len(a)} " + " ".join(str(v & 0xFFFFFFFF) for v in a) + "\n")
    w("end\n")


def run_program(
    plan: ProgramPlan,
    *,
    grid,
    dram_fd,
    buffers,
    page_sizes,
    l1_fd=-1,
    l1_buffers=(),
    l1i_buffers=(),
    deadline_s=120.0,
    hang_ms=200,
    dprint=True,
    timing=None,
    timing_only=False,
    nodata_buffers=(),
    spec: arch.ArchSpec = arch.WORMHOLE_B0,
    dram=None,
) -> EmulatorStats:
    """timing: record and replay the timing model (docs/TIMING.md); None = on unless TTFD_EMU_TIMING=0.
    timing_only: skip compute arithmetic and the bytes of `nodata_buffers` (DRAM buffers with undefined contents);
    every check, transfer and timing event stays, so the modelled duration equals a full run's (TIMING.md, 6)."""
    if timing is None:
        timing = os.environ.get("TTFD_EMU_TIMING", "1") != "0"
    if timing_only and not timing:
        raise EmulatorError("timing_only=True needs the timing model, but it is off (TTFD_EMU_TIMING=0)")
    sanitize = sanitizer()
    exe = runtime_executable(sanitize)
    with tempfile.TemporaryDirectory(prefix="ttfd-emu-", dir=_tmp_root()) as tmp:
        prog = Path(tmp) / "program.txt"
        result = Path(tmp) / "result.json"
        with open(prog, "w") as f:
            write_program(
                f,
                plan,
                grid=grid,
                dram_fd=dram_fd,
                buffers=buffers,
                result_path=result,
                so_dir=tmp,
                deadline_ms=deadline_s * 1000,
                hang_ms=hang_ms,
                dprint=dprint,
                l1_fd=l1_fd,
                l1_buffers=l1_buffers,
                l1i_buffers=l1i_buffers,
                timing=timing,
                timing_only=timing_only,
                nodata_buffers=nodata_buffers,
                spec=spec,
                dram=dram,
            )
        t0 = time.monotonic()
        # The child's own deadline counts the CPU time it received; this wall-clock backstop only ends a child the host
        # never schedules (or one wedged outside its watchdog), so it leaves room for a heavily loaded machine.
        backstop_s = WALL_BACKSTOP_FACTOR * deadline_s + 30
        fds = (dram_fd,) if l1_fd < 0 else (dram_fd, l1_fd)
        proc = subprocess.Popen(
            [str(exe), str(prog)], pass_fds=fds, stdout=subprocess.DEVNULL, env=_sanitizer_env(sanitize, tmp)
        )
        code, killed = _wait(proc, backstop_s)
        if killed:
            raise EmulatorHang(f"emulator child did not finish within {backstop_s:.0f} s of wall time (killed)")
        wall = time.monotonic() - t0
        report = _sanitizer_report(tmp, plan) if sanitize else ""
        res = None
        if result.exists():
            try:
                res = json.loads(result.read_text())
            except json.JSONDecodeError as e:
                raise EmulatorError(f"unreadable emulator result ({e}); exit code {code}") from None
            if res.get("status") == "ok":
                _read_page_counts(res["stats"], result.with_name(result.name + ".pages"))
    if report:  # the report explains what the run did, whether or not it failed
        try:
            _outcome(res, code, page_sizes, wall)
        except EmulatorError as e:
            raise SanitizerReport(sanitize, report) from e
        raise SanitizerReport(sanitize, report)
    return _outcome(res, code, page_sizes, wall)


def _read_page_counts(stats: dict, path: Path) -> None:
    """Each buffer's per-page byte counts, which the child writes beside its JSON result (``<result>.pages``: for each
    buffer its read counts then its written counts, native uint64, from word ``at``): into ``stats["buffers"]`` as the
    lists EmulatorStats takes."""
    words = np.fromfile(path, dtype=np.uint64)
    for entry in stats.get("buffers", {}).values():
        at, n = entry.pop("at"), entry.pop("pages")
        entry["read"] = words[at : at + n].tolist()
        entry["written"] = words[at + n : at + 2 * n].tolist()


def _wait(proc: subprocess.Popen, backstop_s: float) -> tuple[int, bool]:
    """The child's exit code once it exits, and whether the backstop killed it first. A blocking wait with a timer
    for the backstop, not ``Popen.wait(timeout)``: that one polls with sleeps growing to 50 ms, so every run's wall time
    would include up to 50 ms after the child exited."""
    killed = threading.Event()

    def backstop():
        if proc.poll() is None:
            killed.set()
            proc.kill()

    timer = threading.Timer(backstop_s, backstop)
    timer.daemon = True
    timer.start()
    try:
        code = proc.wait()
    except BaseException:  # interrupted (Ctrl-C): no child outlives its caller
        proc.kill()
        proc.wait()
        raise
    finally:
        timer.cancel()
    return code, killed.is_set()


def _outcome(res: dict | None, code: int, page_sizes, wall: float) -> EmulatorStats:
    """The run's stats, or its fault / hang / error as an exception."""
    if res is None:
        sig = f" (signal {-code})" if code < 0 else ""
        raise EmulatorError(f"emulator child exited with code {code}{sig} without a result")
    status = res.get("status")
    if status == "ok" and code == 0:
        return EmulatorStats.from_result(res["stats"], page_sizes, wall)
    msg = res.get("message", "")
    first, _, rest = msg.partition("\n")
    kw = dict(core=res.get("core") or None, kernel=res.get("kernel") or None, details=rest)
    if status == "hang":
        raise EmulatorHang(first, **kw)
    if status == "fault":
        location, backtrace = fault_location.resolve(res.get("frames") or [])
        if backtrace:
            kw["details"] = (rest + "\n" if rest else "") + "backtrace:\n" + "\n".join(f"  {f}" for f in backtrace)
        raise KernelFault(first, location=location, **kw)
    raise EmulatorError(f"emulator: {first}", **kw)


def _sanitizer_env(sanitize: str, tmp: str) -> dict | None:
    """The child's environment for a sanitizer build: reports as files in the run's directory (the parent reads
    them), the run's own fault handling kept (the runtime installs its signal handlers after the sanitizer's)."""
    if not sanitize:
        return None
    env = dict(os.environ)
    log = f"log_path={tmp}/sanitizer"
    if sanitize == "address":
        env["ASAN_OPTIONS"] = f"{log}:detect_leaks=0:abort_on_error=0:allow_user_segv_handler=1:" + env.get(
            "ASAN_OPTIONS", ""
        )
    else:
        env["TSAN_OPTIONS"] = (
            f"{log}:halt_on_error=0:second_deadlock_stack=1:suppressions={TSAN_SUPPRESSIONS}:"
            + env.get("TSAN_OPTIONS", "")
        )
    return env


TSAN_SUPPRESSIONS = Path(__file__).resolve().parent / "csrc" / "tsan.supp"
# A report's frame in a kernel: the per-core copy the runtime loaded (k<kernel id>_c<core index>.so, deleted once
# loaded, so the sanitizer cannot read its symbols) and the offset.
_KERNEL_FRAME = re.compile(r"<null> <null> \(k(\d+)_c\d+\.so\+0x([0-9a-f]+)\)")


def _sanitizer_report(tmp: str, plan: ProgramPlan) -> str:
    """The sanitizer's reports of the run, kernel frames resolved to function and source line in the kernel's
    cached library."""
    text = "\n".join(p.read_text(errors="replace") for p in sorted(Path(tmp).glob("sanitizer*")))
    libraries = {k.id: str(k.library) for k in plan.kernels}

    def resolve(m: re.Match) -> str:
        library = libraries.get(int(m.group(1)))
        chain = fault_location.frames_at(library, int(m.group(2), 16)) if library else []
        return " <- ".join(f"{f.function} {f.file}:{f.line}" for f in chain) or m.group(0)

    return _KERNEL_FRAME.sub(resolve, text)
