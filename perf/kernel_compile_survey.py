"""How many of the ttnn wheel's kernel sources compile against the emulator's kernel API headers.

Runs ``g++ -std=c++20 -fsyntax-only`` (as ttemu.compiler: the host form of tt-metal's ``-std=c++17
-ftt-nttp -ftt-consteval -ftt-constinit``) on every kernel source under the wheel's
``ttnn/cpp/ttnn/operations/**/kernels`` (1,495 files in ttnn 0.81.1) with the emulator's ``include/`` first on the
include path and a plausible tt-metal JIT build environment:

- the per-RISC defines of ttemu.compiler (data movement: NCRISC, NOC 0; compute: the fused TRISC
  build), ``KERNEL_COMPILE_TIME_ARGS`` = 128 x 2 (2 = ArgConfig::IsDram, so every TensorAccessorArgs is a DRAM
  interleaved tensor of page size 2, every CB index / count is 2), every name the source passes to
  ``get_named_compile_time_arg_val`` in the force-included named-args header (value 2);
- chlkc_descriptors.h for bf16 CBs at every index;
- for Metal 2.0 kernels (``args::``, ``dfb::``, ``tensor::``, ``sem::``, ``scratch::`` names), kernel_args_generated.h
  and kernel_bindings_generated.h with one binding per name the source uses (an ``args::`` name read into a constexpr
  variable is a compile-time arg, any other a runtime arg), as tt-metal's genfiles.cpp lays them out;
- after the emulator's headers, the wheel's ttnn sources (kernel_lib, shared kernel headers, fabric helpers) and
  hostdevcommon; for compute kernels also the emulator's LLK layer (include_llk/) after its API and, last, the wheel's
  LLK trees and hw/inc (jit_env.compute_llk_include_paths: the wheel's SFPU op headers compile against the
  emulator's LLK layer and host SFPI); never the wheel's hw/inc for data-movement kernels.

Prints the number that compile (by kind) and the symbols / headers most often missing. Run on demand (not part of
the test suite); ``--limit N`` surveys an evenly spaced sample of N sources, ``--jobs`` sets the parallel compiler
runs (default 2), ``--include DIR`` surveys another header tree (e.g. an older checkout of the emulator's include/).

    .venv/bin/python perf/kernel_compile_survey.py [--limit 300] [--jobs 2] [--include DIR] [--list-failures]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ttemu import jit_env  # noqa: E402  (no ttnn import: plain Python)
from ttemu.build import INCLUDE as EMU_INCLUDE  # noqa: E402

CT_VALUE = 2
NUM_CT_ARGS = 128


def wheel_root() -> Path:
    spec = importlib.util.find_spec("ttnn")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("ttnn is not installed in this interpreter (run with the project's .venv)")
    return Path(spec.submodule_search_locations[0])


def kernel_sources(root: Path) -> list[Path]:
    ops = root / "ttnn" / "cpp" / "ttnn" / "operations"
    return sorted(p for p in ops.rglob("*.cpp") if "kernels" in str(p.relative_to(ops).parent))


COMPUTE_CALLS = re.compile(
    r"\b(tile_regs_acquire|tile_regs_commit|acquire_dst|pack_tile|copy_tile|compute_kernel_hw_startup|"
    r"binary_op_init_common|unary_op_init_common|mm_init|reduce_init|tilize_init|untilize_init|"
    r"pack_untilize_init|init_sfpu)\s*[<(]"
)


def is_compute(text: str) -> bool:
    """A compute kernel: includes the compute API (directly or through a compute helper) or calls it."""
    code = strip_comments(text)
    return (
        bool(re.search(r'#include\s*[<"][^>"]*(api/compute/|compute_kernel_api|/compute/|compute_common)', code))
        or "void MAIN" in code
        or bool(COMPUTE_CALLS.search(code))
    )


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def generated_files(text: str, compute: bool) -> dict[str, str]:
    """Generated headers for one kernel source (see the module docstring)."""
    code = strip_comments(text)
    files = {
        jit_env.DESCRIPTORS_HEADER: jit_env.chlkc_descriptors(
            [jit_env.cb_entry(i, jit_env.FLOAT16_B, None) for i in range(jit_env.MAX_CBS)], compute=compute
        )
    }
    named = sorted(set(re.findall(r'get_named_compile_time_arg_val\s*\(\s*"([^"]*)"', code)))
    if named:
        files[jit_env.NAMED_CT_ARG_MAP_HEADER] = jit_env.named_ct_arg_map_header([(n, CT_VALUE) for n in named])
    names = {
        ns: sorted(set(re.findall(rf"\b{ns}::([A-Za-z_]\w*)", code)))
        for ns in ("args", "dfb", "tensor", "sem", "scratch")
    }
    if any(names.values()):
        b = [
            "// survey stand-in for tt-metal's kernel_bindings_generated.h",
            "#pragma once",
            "#include <cstdint>",
            '#include "api/dataflow/dfb_binding_token.h"',
            '#include "api/dataflow/semaphore_binding_token.h"',
            '#include "api/tensor/tensor_binding_token.h"',
        ]
        if names["dfb"]:
            b.append('#include "api/dataflow/dataflow_buffer.h"')
        if names["scratch"]:
            b.append('#include "api/scratchpad.h"')
            b += (
                ["namespace scratch {"]
                + [f"constexpr ScratchpadBindingToken {n}{{{i}u, 4096u}};" for i, n in enumerate(names["scratch"])]
                + ["}  // namespace scratch"]
            )
        if names["dfb"]:
            b += ["namespace dfb {"] + [f"constexpr DFBBindingToken<> {n}{{{i}}};" for i, n in enumerate(names["dfb"])]
            b += ["}  // namespace dfb"]
        if names["sem"]:
            b += (
                ["namespace sem {"]
                + [
                    f"constexpr SemaphoreBindingToken {n}{{{i}u, SemScope::LOCAL_NONATOMIC}};"
                    for i, n in enumerate(names["sem"])
                ]
                + ["}  // namespace sem"]
            )
        if names["tensor"]:
            b += ["namespace tensor {"]
            for i, n in enumerate(names["tensor"]):
                b += [
                    f"using {n}_t = ::tensor_accessor::TensorBindingToken<{2 * i}u, {4 * i}u>;",
                    f"constexpr {n}_t {n}{{binding_details::LLKMetadata{{}}}};",
                ]
            b += ["}  // namespace tensor"]
        files["kernel_bindings_generated.h"] = "\n".join(b) + "\n"
        a = [
            "// survey stand-in for tt-metal's kernel_args_generated.h",
            "#pragma once",
            '#include "experimental/kernel_args.h"',
        ]
        if names["args"]:
            a += ["namespace args {"]
            for i, n in enumerate(names["args"]):
                cta = re.search(rf"constexpr[^;{{}}]*\bargs::{n}\b", code) is not None
                a.append(
                    f"constexpr experimental::CtaVal<uint32_t> {n}{{{CT_VALUE}u}};"
                    if cta
                    else f"constexpr experimental::RtaArg<uint32_t> {n}{{{4 * i}}};"
                )
            a += ["}  // namespace args"]
        a += [
            "FORCE_INLINE uint32_t get_vararg(uint32_t idx) { return get_arg_val<uint32_t>(idx); }",
            "FORCE_INLINE uint32_t get_common_vararg(uint32_t idx) { return get_common_arg_val<uint32_t>(idx); }",
        ]
        files["kernel_args_generated.h"] = "\n".join(a) + "\n"
    return files


def flags(include: Path, gen: Path, src: Path, root: Path, compute: bool, files: dict[str, str]) -> list[str]:
    f = [
        "-std=c++20",
        "-fsyntax-only",
        "-w",
        "-fmax-errors=40",
        f"-I{include}",
        f"-I{gen}",
        f"-I{src.parent}",
        f"-I{root / 'ttnn' / 'cpp'}",
        f"-I{root / 'ttnn'}",
        f"-I{root}",
        f"-I{root / 'tt_metal'}",
        f"-I{root / 'tt_metal' / 'api'}",
        f"-I{root / 'tt_metal' / 'hostdevcommon' / 'api'}",
        "-DKERNEL_COMPILE_TIME_ARGS=" + ",".join([str(CT_VALUE)] * NUM_CT_ARGS),
        "-DKERNEL_BUILD",
        "-DARCH_WORMHOLE",
        "-DTENSIX_FIRMWARE",
    ]
    if compute:
        f += [
            "-DCOMPILE_FOR_TRISC",
            "-DUCK_CHLKC_UNPACK",
            "-DUCK_CHLKC_MATH",
            "-DUCK_CHLKC_PACK",
            "-DTRISC_UNPACK",
            "-DTRISC_MATH",
            "-DTRISC_PACK",
            "-DNOC_INDEX=0",
            *jit_env.COMPUTE_DEFINES,
        ]
        # as ttemu.compiler: the emulator's LLK layer right after its API, the wheel's LLK trees
        # (SFPU kernels) and compute API last
        f.insert(f.index(f"-I{include}") + 1, f"-I{include.parent / 'include_llk'}")
        f += [f"-I{p}" for p in jit_env.compute_llk_include_paths()]
    else:
        f += [
            "-DCOMPILE_FOR_NCRISC",
            "-DPROCESSOR_INDEX=1",
            "-DNOC_INDEX=0",
            "-DNOC_MODE=0",
            "-DNUM_L1_BANKS=64",
            "-DLOG_BASE_2_OF_NUM_L1_BANKS=6",
        ]
    if jit_env.NAMED_CT_ARG_MAP_HEADER in files:
        f += ["-include", str(gen / jit_env.NAMED_CT_ARG_MAP_HEADER)]
    # as ttemu.compiler: what the firmware wrapper includes ahead of the kernel
    if compute:
        f += [
            "-include",
            str(include / "api" / "compile_time_args.h"),
            "-include",
            str(gen / jit_env.DESCRIPTORS_HEADER),
        ]
    else:
        f += ["-include", str(include / "api" / "dataflow" / "dataflow_api.h")]
    for h in ("kernel_bindings_generated.h", "kernel_args_generated.h"):
        if h in files:
            f += ["-include", str(gen / h)]
    return f


ERROR_PATTERNS = [
    (re.compile(r"fatal error: ([^:]+): No such file or directory"), "header {}"),
    (re.compile(r"error: ‘([^’]+)’ was not declared in this scope"), "{}"),
    (re.compile(r"error: ‘([^’]+)’ has not been declared"), "{}"),
    (re.compile(r"error: ‘([^’]+)’ is not a member of ‘([^’]+)’"), "{1}::{0}"),
    (re.compile(r"error: ‘([^’]+)’ does not name a type"), "{}"),
    (re.compile(r"error: ‘(?:class|struct) ([^’]+)’ has no member named ‘([^’]+)’"), "{0}::{1}"),
    (re.compile(r"error: ‘([^’]+)’ is not a class template"), "{}"),
    (re.compile(r"error: no matching function for call to ‘([^(’<]+)"), "call {}"),
    (re.compile(r"error: static assertion failed: ?(.{0,70})"), "static_assert: {}"),
    (re.compile(r"error: ‘([^’]+)’ is not a template"), "{}"),
]


def classify(stderr: str) -> list[str]:
    out = []
    for line in stderr.splitlines():
        for pat, fmt in ERROR_PATTERNS:
            m = pat.search(line)
            if m:
                out.append(fmt.format(*m.groups()).strip())
                break
    return list(dict.fromkeys(out))


def survey_one(src: Path, include: Path, root: Path, tmp: Path) -> tuple[Path, bool, bool, list[str], str]:
    text = src.read_text(errors="ignore")
    compute = is_compute(text)
    files = generated_files(text, compute)
    gen = jit_env.write_generated(tmp, files)
    cmd = ["g++", *flags(include, gen, src, root, compute, files), str(src)]
    try:
        if compute:  # as the emulator's compiler: preprocess, jit_env.host_compile_source, compile
            ii = gen / (src.stem + f".{os.getpid()}.{abs(hash(str(src)))}.ii")
            pp = [f for f in cmd if f != "-fsyntax-only"] + ["-E", "-o", str(ii)]
            res = subprocess.run(pp, capture_output=True, text=True, timeout=180)
            if res.returncode == 0:
                ii.write_text(jit_env.host_compile_source(ii.read_text()))
                cmd = ["g++", *jit_env.non_preprocessor_flags(cmd[1:-1]), str(ii)]
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
            ii.unlink(missing_ok=True)
        else:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return src, compute, False, ["(compiler timeout)"], ""
    ok = res.returncode == 0
    errs = [] if ok else (classify(res.stderr) or ["(other error)"])
    return src, compute, ok, errs, "" if ok else res.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="survey an evenly spaced sample of this many sources")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--include", type=Path, default=EMU_INCLUDE, help="kernel API header tree (default: the emulator's)"
    )
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--list-failures", action="store_true", help="print each failing source with its first problems")
    ap.add_argument("--kind", choices=("all", "dataflow", "compute"), default="all", help="survey only this kind")
    ap.add_argument("--show-errors", type=int, default=0, help="with --list-failures: first N compiler error lines")
    args = ap.parse_args()
    root = wheel_root()
    sources = kernel_sources(root)
    total = len(sources)
    if args.kind != "all":
        sources = [s for s in sources if is_compute(s.read_text(errors="ignore")) == (args.kind == "compute")]
    if args.limit and args.limit < len(sources):
        step = len(sources) / args.limit
        sources = [sources[int(i * step)] for i in range(args.limit)]
    t0 = time.monotonic()
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="ttfd_survey_") as tmp,
        cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool,
    ):
        futs = [pool.submit(survey_one, s, args.include.resolve(), root, Path(tmp)) for s in sources]
        for f in cf.as_completed(futs):
            results.append(f.result())
    wall = time.monotonic() - t0
    ok = [r for r in results if r[2]]
    kinds = collections.Counter(("compute" if r[1] else "dataflow", r[2]) for r in results)
    print(
        f"kernel sources under ttnn/cpp/ttnn/operations/**/kernels: {total}; surveyed {len(results)} "
        f"({'all' if len(results) == total else args.kind + ', evenly spaced sample'}) against {args.include} "
        f"in {wall:.0f} s"
    )
    print(f"compile (g++ -fsyntax-only): {len(ok)} of {len(results)}")
    for kind in ("dataflow", "compute"):
        n = kinds[(kind, True)] + kinds[(kind, False)]
        print(f"  {kind:9s} {kinds[(kind, True)]:5d} of {n}")
    missing = collections.Counter(sym for r in results for sym in r[3])
    print("\ntop missing symbols / headers (number of sources whose errors name them):")
    for sym, n in missing.most_common(args.top):
        print(f"  {n:5d}  {sym}")
    if args.list_failures:
        ops = root / "ttnn" / "cpp" / "ttnn" / "operations"
        for src, _compute, good, errs, stderr in sorted(results):
            if not good:
                print(f"FAIL {src.relative_to(ops)}: {'; '.join(errs[:4])}")
                if args.show_errors:
                    lines = [ln for ln in stderr.splitlines() if "error" in ln][: args.show_errors]
                    print("\n".join("      " + ln[-220:] for ln in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
