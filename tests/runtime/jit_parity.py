"""What tt-metal's JIT gives a kernel against what the emulator's JIT environment gives the same kernel.

For a launched ProgramDescriptor, two views of each kernel's build:

- tt-metal's (``jit``): the compile commands its JIT ran (recorded by the stand-in compiler, tests/runtime/
  standin_compiler.py: ``-D`` defines, ``-I`` include paths, ``-include`` files) and the generated files of the
  kernel's build folder (``chlkc_descriptors.h``, ``named_ct_arg_map_generated.h``, ``defines_generated.h``, ...);
- the emulator's (``emu``): the flags ``ttemu.program.build_plan`` hands its compiler for the same
  descriptor (its compile step replaced by a recorder here: nothing is compiled) and the headers
  ``ttemu/jit_env.py`` generates.

:func:`compare_kernel` reduces both to comparable facts (named and positional compile-time args, the descriptor's
defines, per-CB descriptor arrays, math fidelity / approx mode / DST settings, include roots, NOC and bank
defines) and lists every difference. Differences the emulator has by design (it runs the three TRISCs of a compute
kernel as one host program; it uses its own kernel API and LLK headers in front of the wheel's; the firmware-level
defines its runtime provides otherwise) are classified ``by_design`` with the reason, everything else ``differs``:
a define only one side has and that no list names is a difference too.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path

from ttemu.ttnn_env import import_ttnn

ttnn = import_ttnn()

_ARRAY = re.compile(r"constexpr\s+([\w:]+(?:\s+[\w:]+)?)\s+(\w+)\[(\d+)\]\s*=\s*\{([^}]*)\}")
_SCALAR = re.compile(r"constexpr\s+[\w:]+\s+(MATH_FIDELITY|APPROX|DST_ACCUM_MODE)\s*=\s*([^;]+);")
_SYNC = re.compile(r"#define\s+DST_SYNC_MODE\s+DstSync::(\w+)")
_DEFINE = re.compile(r"^#define\s+(\w+)(?:\s+(.*))?$", re.M)
_MAP = re.compile(r"#define\s+KERNEL_COMPILE_TIME_ARG_MAP\s*(.*)")

# Defines that name a build, not what a kernel computes (FULL_KERNEL_NAME: the build folder; DISPATCH_MESSAGE_ADDR:
# the firmware's mailbox) or that the emulator's runtime provides otherwise; compared nowhere, listed in the report.
_BUILD_IDENTITY = {"FULL_KERNEL_NAME", "DISPATCH_MESSAGE_ADDR"}
# The data-movement defines a kernel's code reads (NOC selection, L1 bank arithmetic of the address generators,
# the processor identity): these must be equal.
DM_MUST_MATCH = (
    "NOC_INDEX",
    "NOC_MODE",
    "NUM_L1_BANKS",
    "LOG_BASE_2_OF_NUM_L1_BANKS",
    "IS_NOT_POW2_NUM_L1_BANKS",
    "COMPILE_FOR_BRISC",
    "COMPILE_FOR_NCRISC",
    "PROCESSOR_INDEX",
    "KERNEL_BUILD",
    "ARCH_WORMHOLE",
    "TENSIX_FIRMWARE",
    "KERNEL_COMPILE_TIME_ARGS",
)
# Defines the JIT gives a kernel and the emulator does not, by design: firmware-level facts the emulator's runtime
# models itself (the DRAM bank tables, the PCIe core, local memory, the routing firmware, the core type), and for a
# compute kernel the per-TRISC build's PROCESSOR_INDEX (2, 3, 4: one host program stands for the three) and the L1
# bank defines its data-movement address generators would read (the emulator's compute API has none).
BY_DESIGN_ONLY_JIT = {
    "NUM_DRAM_BANKS",
    "IS_NOT_POW2_NUM_DRAM_BANKS",
    "LOG_BASE_2_OF_NUM_DRAM_BANKS",
    "PCIE_NOC_X",
    "PCIE_NOC_Y",
    "LOCAL_MEM_EN",
    "ROUTING_FW_ENABLED",
    "PROGRAMMABLE_CORE_TYPE",
}
BY_DESIGN_ONLY_JIT_COMPUTE = {
    "PROCESSOR_INDEX",
    "NUM_L1_BANKS",
    "LOG_BASE_2_OF_NUM_L1_BANKS",
    "IS_NOT_POW2_NUM_L1_BANKS",
}
# Defines only the emulator gives a compute kernel, by design: one program for UNPACK, MATH and PACK (each TRISC's
# TRISC_* define at once), the compute settings as EMU_* defines (the JIT writes them as constants into
# chlkc_descriptors.h, compared in math_settings), the LLK's instruction-by-instruction SFPU form.
BY_DESIGN_ONLY_EMU_COMPUTE = {
    "TRISC_UNPACK",
    "TRISC_MATH",
    "TRISC_PACK",
    "EMU_DST_ACCUM_MODE",
    "EMU_MATH_APPROX_MODE",
    "EMU_MATH_FIDELITY",
    "EMU_DST_FULL_SYNC_EN",
    "DISABLE_SFPLOADMACRO",
}


def kernel_names(program) -> list[str]:
    return [_stem(k) for k in program.kernels]


def _stem(k) -> str:
    if k.source_type == ttnn.KernelDescriptor.SourceType.SOURCE_CODE:
        return "<inline>"
    return Path(k.kernel_source).stem


# ---------------------------------------------------------------------------------------------- parsing
def _defines_from_argv(argv: list[str]) -> dict[str, str]:
    out = {}
    for a in argv:
        if a.startswith("-D"):
            name, _, value = a[2:].partition("=")
            out[name] = value
    return out


def _includes_from_argv(argv: list[str]) -> list[str]:
    return [a[2:] for a in argv if a.startswith("-I")]


def _arrays(text: str) -> dict[str, tuple[str, list[int]]]:
    out: dict[str, tuple[str, list[int]]] = {}
    for ctype, name, _, body in _ARRAY.findall(text):
        vals = [int(v) for v in body.replace("\n", "").split(",") if v.strip()]
        out.setdefault(name, (" ".join(ctype.split()), vals))
    return out


def _named_map(text: str) -> str | None:
    m = _MAP.search(text)
    return m.group(1).strip() if m else None


def _math_scalars_jit(text: str) -> dict[str, int]:
    out = {}
    for name, value in _SCALAR.findall(text):
        m = re.search(r"\((\d+)\)", value)
        out[name] = int(m.group(1)) if m else int(value.strip() == "true")
    s = _SYNC.search(text)
    if s:
        out["DST_SYNC_FULL"] = int(s.group(1) == "SyncFull")
    return out


def _math_scalars_emu(defines: dict[str, str]) -> dict[str, int]:
    keys = {
        "MATH_FIDELITY": "EMU_MATH_FIDELITY",
        "APPROX": "EMU_MATH_APPROX_MODE",
        "DST_ACCUM_MODE": "EMU_DST_ACCUM_MODE",
        "DST_SYNC_FULL": "EMU_DST_FULL_SYNC_EN",
    }
    return {k: int(defines[v]) for k, v in keys.items() if v in defines}


def _wheel_relative(paths: list[str], roots: list[str]) -> list[str]:
    out = []
    for p in paths:
        rp = str(Path(p))
        for r in roots:
            if rp == r or rp.startswith(r + "/"):
                rp = "<ttnn>" + rp[len(r) :]
                break
        out.append(rp)
    return out


# ---------------------------------------------------------------------------------------------- the two views
@contextmanager
def _recording_emulator_builds():
    """The emulator's build_plan with compile_kernel replaced by a recorder of KernelBuilds (no compile)."""
    from ttemu import program as emu_program

    builds = []
    real = emu_program.compile_kernel

    def record(build):
        builds.append(build)
        return Path("/nonexistent-not-compiled")

    emu_program.compile_kernel = record
    try:
        yield builds
    finally:
        emu_program.compile_kernel = real


def emulator_view(program, grid: tuple[int, int]) -> list[dict]:
    """Per kernel of ``program``: the emulator's defines, include paths and generated headers."""
    from ttemu import program as emu_program

    with _recording_emulator_builds() as builds:
        emu_program.build_plan(program, grid)
    out = []
    for b in builds:
        flags = list(b.flags)
        gen = next(
            (
                Path(p)
                for p in _includes_from_argv(flags)
                if (Path(p) / "chlkc_descriptors.h").is_file() or (Path(p) / "named_ct_arg_map_generated.h").is_file()
            ),
            None,
        )
        files = {}
        if gen is not None:
            for f in ("chlkc_descriptors.h", "named_ct_arg_map_generated.h"):
                if (gen / f).is_file():
                    files[f] = (gen / f).read_text()
        out.append(
            {
                "name": b.name,
                "source": str(b.source),
                "defines": _defines_from_argv(flags),
                "includes": _includes_from_argv(flags),
                "files": files,
            }
        )
    return out


def jit_view(builds: list[dict]) -> list[dict]:
    """Per kernel build folder the JIT compiled: its RISCs' defines and includes, and its generated files."""
    kernels: dict[str, dict] = {}
    for b in builds:
        if b.get("kind") != "compile":
            continue
        argv = b["argv"]
        defines = _defines_from_argv(argv)
        full = defines.get("FULL_KERNEL_NAME", "").strip('"').strip("/")
        if not full:
            continue  # firmware
        k = kernels.setdefault(full, {"name": full.split("/")[0], "build": full, "riscs": {}, "files": {}})
        risc = Path(b["output"]).parent.name
        includes = _includes_from_argv(argv)
        forced = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-include"]
        k["riscs"][risc] = {"defines": defines, "includes": includes, "forced_includes": forced}
        gen = b.get("generated")
        if gen and Path(gen).is_dir() and not k["files"]:
            k["files"] = {f.name: f.read_text() for f in Path(gen).iterdir() if f.is_file()}
    return list(kernels.values())


# ---------------------------------------------------------------------------------------------- comparison
def _diff_dict(a: dict, b: dict, keys=None) -> dict:
    keys = sorted(set(a) | set(b)) if keys is None else keys
    return {k: {"jit": a.get(k), "emu": b.get(k)} for k in keys if a.get(k) != b.get(k)}


def _compare_cb_arrays(jtext: str, etext: str, differs: dict) -> None:
    """Every per-CB array of the two chlkc_descriptors.h texts: values into ``cb_descriptors``, and for equal values
    the declared element type into ``cb_descriptor_types``."""
    ja, ea = _arrays(jtext), _arrays(etext)
    for name in sorted(set(ja) | set(ea)):
        j, e = ja.get(name), ea.get(name)
        if j is None or e is None or j[1] != e[1]:
            differs.setdefault("cb_descriptors", {})[name] = {"jit": j and j[1], "emu": e and e[1]}
        elif j[0] != e[0]:
            differs.setdefault("cb_descriptor_types", {})[name] = {"jit": j[0], "emu": e[0]}


def compare_kernel(jit: dict, emu: dict, program_kernel) -> dict:
    """Every difference between tt-metal's build of a kernel and the emulator's, grouped; ``differs`` holds what a
    kernel's code could observe, ``by_design`` the emulator's documented structural differences."""
    differs: dict = {}
    by_design: dict = {}
    compute = any(r.startswith("trisc") for r in jit["riscs"])
    files = jit["files"]

    # named compile-time args
    jmap = _named_map(files.get("named_ct_arg_map_generated.h", "")) or ""
    emap = _named_map(emu["files"].get("named_ct_arg_map_generated.h", "")) or ""
    if jmap != emap:
        differs["named_compile_time_args"] = {"jit": jmap, "emu": emap}

    # the descriptor's own defines: -D on data-movement RISCs, defines_generated.h for compute (genfiles.cpp)
    wanted = {str(n): str(v) for n, v in program_kernel.defines}
    if compute:
        jit_user = {n: (v or "").strip() for n, v in _DEFINE.findall(files.get("defines_generated.h", ""))}
    else:
        (risc,) = jit["riscs"].values()
        jit_user = {n: risc["defines"].get(n) for n in wanted if n in risc["defines"]}
    emu_user = {n: emu["defines"].get(n) for n in wanted if n in emu["defines"]}
    for n, v in wanted.items():
        if jit_user.get(n) != v or emu_user.get(n) != v:
            differs.setdefault("descriptor_defines", {})[n] = {
                "descriptor": v,
                "jit": jit_user.get(n),
                "emu": emu_user.get(n),
            }
    extra_jit_user = {n: v for n, v in jit_user.items() if n not in wanted}
    if extra_jit_user:
        missing = {n: v for n, v in extra_jit_user.items() if emu["defines"].get(n) != v}
        if missing:
            differs["jit_generated_defines"] = missing

    # one chlkc_descriptors.h per kernel (for a compute kernel, the three TRISCs' sections guarded by UCK_CHLKC_*)
    jtext, etext = files.get("chlkc_descriptors.h", ""), emu["files"].get("chlkc_descriptors.h", "")
    _compare_cb_arrays(jtext, etext, differs)
    if compute:
        js, es = _math_scalars_jit(jtext), _math_scalars_emu(emu["defines"])
        d = _diff_dict(js, es)
        if d:
            differs["math_settings"] = d
        if jit["riscs"]:
            jd = {}
            for r in jit["riscs"].values():
                jd.update(r["defines"])
            pos_j = jd.get("KERNEL_COMPILE_TIME_ARGS")
            pos_e = emu["defines"].get("KERNEL_COMPILE_TIME_ARGS")
            if pos_j != pos_e:  # None: not defined (no positional args)
                differs["compile_time_args"] = {"jit": pos_j, "emu": pos_e}
        by_design["trisc_structure"] = (
            "the emulator compiles UNPACK, MATH and PACK as one host program (all "
            "UCK_CHLKC_* defined); tt-metal builds trisc0/1/2 separately"
        )
    else:
        (risc,) = jit["riscs"].values()
        jd = {k: risc["defines"].get(k) for k in DM_MUST_MATCH}
        ed = {k: emu["defines"].get(k) for k in DM_MUST_MATCH}
        d = _diff_dict(jd, ed)
        if d:
            differs["dm_defines"] = d

    # defines only one side has: by design when a list above names them, else a difference
    jall: dict = dict(jit_user) if compute else {}  # a compute kernel's defines_generated.h: defines as well
    for r in jit["riscs"].values():
        jall.update(r["defines"])
    only_jit = sorted(k for k in jall if k not in emu["defines"] and k not in _BUILD_IDENTITY)
    only_emu = sorted(k for k in emu["defines"] if k not in jall)
    ok_jit = BY_DESIGN_ONLY_JIT | (BY_DESIGN_ONLY_JIT_COMPUTE if compute else set())
    ok_emu = BY_DESIGN_ONLY_EMU_COMPUTE if compute else set()
    by_design["defines_only_jit"] = [k for k in only_jit if k in ok_jit]
    by_design["defines_only_emu"] = [k for k in only_emu if k in ok_emu]
    unexplained = {"jit": [k for k in only_jit if k not in ok_jit], "emu": [k for k in only_emu if k not in ok_emu]}
    if unexplained["jit"] or unexplained["emu"]:
        differs["defines_only_one_side"] = unexplained
    # include roots: the kernel's folder and the descriptor's include paths must reach both builds
    src_dir = str(Path(emu["source"]).parent)
    need = [src_dir] + [str(p) for p in program_kernel.compiler_include_paths]
    jinc = set()
    for r in jit["riscs"].values():
        jinc.update(str(Path(p)) for p in r["includes"])
    einc = {str(Path(p)) for p in emu["includes"]}
    missing = {"jit": [p for p in need if p not in jinc], "emu": [p for p in need if p not in einc]}
    if missing["jit"] or missing["emu"]:
        differs["include_paths"] = missing
    jit_files = sorted(files)
    by_design["generated_files_jit"] = jit_files
    return {"differs": differs, "by_design": by_design}


def compare_launches(launches: list[list], builds: list[dict], grid: tuple[int, int]) -> list[dict]:
    """For every kernel the JIT built during ``launches`` (the kernels built earlier in the process were identical
    builds: tt-metal keys its build folders by everything that enters the build), the comparison with the emulator's
    view of the descriptor kernel of the same source whose named compile-time args and NoC match (else the first whose
    named compile-time args match, else the first)."""
    jit = jit_view(builds)
    candidates, seen = [], set()
    for progs in launches:
        for program in progs:
            if id(program) in seen:  # a cached program launched again (a decode loop's hit): viewed once
                continue
            seen.add(id(program))
            view = emulator_view(program, grid)
            for k, e in zip(program.kernels, view):
                candidates.append((k, e))
    out = []
    for j in jit:
        same = [(k, e) for k, e in candidates if e["name"] == j["name"]]
        if not same:
            # ttnn's own ops the call made on the way (from_torch's tilize into a sharded tensor, ...)
            out.append({"kernel": j["build"], "not_ours": True})
            continue
        jmap = _named_map(j["files"].get("named_ct_arg_map_generated.h", ""))
        same_args = [(k, e) for k, e in same if _named_map(e["files"].get("named_ct_arg_map_generated.h", "")) == jmap]
        # one source can be two kernels of a program that differ only in their NoC (a DRAM-bound decode's NoC 1
        # readers): the JIT build pairs with the emulator's kernel on the same NoC, if there is one
        jnoc = {r["defines"].get("NOC_INDEX") for r in j["riscs"].values()}
        same_noc = [(k, e) for k, e in same_args if e["defines"].get("NOC_INDEX") in jnoc]
        match = (same_noc or same_args or same)[0]
        out.append({"kernel": j["build"], **compare_kernel(j, match[1], match[0])})
    return out
