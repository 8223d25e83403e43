"""The build environment tt-metal's JIT kernel build gives a kernel, reproduced for the emulator's host build.

tt-metal (the 0.81.1 wheel's libtt_metal, tt_metal/jit_build/genfiles.cpp and hal_1xx_common.cpp) compiles each
kernel with per-RISC defines and two generated headers this module writes:

``chlkc_descriptors.h`` (genfiles.cpp ``generate_all_descriptors``), found by the wheel's
``api/dataflow/dataflow_api.h`` through ``__has_include`` (which then defines ``DATA_FORMATS_DEFINED`` and makes
``get_tile_size`` / ``get_tile_hw`` / ``get_tile_num_faces`` / ``get_dataformat`` constexpr) and by
``api/dataflow/dataflow_buffer.h`` (``DFB_DESCRIPTORS_DEFINED``). It holds one entry per CB index (32 on Wormhole)
for every CB placed on any core of the kernel (ProgramImpl::set_cb_data_fmt / set_cb_tile_dims): the L1 data format
(``unpack_src_format`` = ``pack_dst_format``), the register formats (``unpack_dst_format``, ``pack_src_format``), the
tile geometry (``*_tile_r_dim``, ``*_tile_c_dim``, ``*_tile_face_r_dim``, ``*_tile_num_faces``, ``*_partial_face``,
``*_narrow_tile``, ``*_num_faces_r_dim``, ``*_num_faces_c_dim``) and the tile size in bytes (``*_tile_size``).
Unconfigured CBs keep tt_hlk_desc's defaults (format Invalid = 255, a 32x32 tile of 4 16x16 faces, tile size
BFLOAT8_B_TILE_HW = 1088). The sections are guarded as genfiles.cpp guards them: MATH scalars under
``UCK_CHLKC_MATH``, unpack arrays under ``!UCK_CHLKC_PACK``, pack arrays under ``!UCK_CHLKC_MATH &&
!UCK_CHLKC_UNPACK``, ``DST_ACCUM_MODE`` / ``DST_SYNC_MODE`` under any ``UCK_CHLKC_*``; so a data-movement kernel sees
the unpack and pack arrays and none of the compute scalars. The emulator runs the three TRISC programs of a compute
kernel as one program (all of ``UCK_CHLKC_UNPACK/MATH/PACK`` defined), so a compute kernel's header holds every array
and takes the compute scalars (``DST_ACCUM_MODE``, the ``DST_SYNC_MODE`` macro, ``MATH_FIDELITY``, ``APPROX``) from
the emulator's compute API (api/compute/common_globals.h, from the ``EMU_*`` defines), which it includes.

``named_ct_arg_map_generated.h`` (jit_build_utils ``NAMED_CT_ARG_MAP_HEADER``, written by
``write_named_ct_arg_map_header``): ``#define KERNEL_COMPILE_TIME_ARG_MAP {"a",1},{"b",2}`` with the entries in
ascending name order (format_named_ct_arg_map), force-included (``-include``) so that api/compile_time_args.h sees
the map; tt-metal moved it from a ``-D`` define to this header because one argv element is capped at 128 KB.

Register formats (``unpack_dst_format``, ``pack_src_format``) follow tt-metal's jit_build/data_format.cpp for one
format per CB (get_single_unpack_dst_format, get_single_pack_src_format with input = output = the CB's format, the
conditional Float32 format of compute_data_formats); only compute LLKs read them (a data-movement kernel reaches them
only through DataflowBuffer::get_unpack_dst_format / get_pack_src_format).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import EmulatorError

MAX_CBS = 32  # Wormhole NUM_CIRCULAR_BUFFERS (hostdevcommon/kernel_structs.h)
TILE_HEIGHT = TILE_WIDTH = 32
FACE_HEIGHT = FACE_WIDTH = 16
L1_ALIGNMENT = 16  # Tile::get_tile_size's kHostOnlyL1Alignment (shared-exponent section alignment)
INVALID = 0xFF

# tt::DataFormat values (wheel: hw/inc/internal/tt-1xx/wormhole/wormhole_b0_defines/tensix_types.h; Fp8_e4m3 is the
# host enum's value, which genfiles emits verbatim; ttnn reports it as data_format_as_uint8 = 26).
FLOAT32, FLOAT16, BFP8, BFP4, TF32, FLOAT16_B, BFP8_B, BFP4_B = 0, 1, 2, 3, 4, 5, 6, 7
INT32, UINT16, LF8, BFP2, INT8, BFP2_B, UINT32, FP8_E4M3, UINT8 = 8, 9, 10, 11, 14, 15, 24, 26, 30
DATA_FORMAT_NAMES = {
    FLOAT32: "Float32",
    FLOAT16: "Float16",
    BFP8: "Bfp8",
    BFP4: "Bfp4",
    TF32: "Tf32",
    FLOAT16_B: "Float16_b",
    BFP8_B: "Bfp8_b",
    BFP4_B: "Bfp4_b",
    INT32: "Int32",
    UINT16: "UInt16",
    LF8: "Lf8",
    BFP2: "Bfp2",
    INT8: "Int8",
    BFP2_B: "Bfp2_b",
    UINT32: "UInt32",
    FP8_E4M3: "Fp8_e4m3",
    UINT8: "UInt8",
    0x82: "testMan7",
    0x8A: "testMan2",
}
_BFP = {BFP8, BFP8_B, BFP4, BFP4_B, BFP2, BFP2_B}
_EXP_B = {TF32, FLOAT16_B, BFP8_B, BFP4_B, BFP2_B}
_INTEGER = {INT8, UINT8, UINT16, INT32, UINT32}
_CONVERT_EXP_WIDTH = {
    BFP8: BFP8_B,
    BFP8_B: BFP8,
    BFP4: BFP4_B,
    BFP4_B: BFP4,
    BFP2: BFP2_B,
    BFP2_B: BFP2,
    FLOAT16: FLOAT16_B,
    FLOAT16_B: FLOAT16,
}

# tt-metal Tile's (tile shape -> face shape) table (tt_metal/impl/data_format/tile.cpp kTileFaceShapes).
TILE_FACE_SHAPES = {
    (32, 32): (16, 16),
    (16, 32): (16, 16),
    (32, 16): (16, 16),
    (16, 16): (16, 16),
    (8, 32): (8, 16),
    (4, 32): (4, 16),
    (2, 32): (2, 16),
    (1, 32): (1, 16),
    (8, 16): (8, 16),
    (4, 16): (4, 16),
    (2, 16): (2, 16),
    (1, 16): (1, 16),
}


@dataclass(frozen=True)
class TileGeometry:
    """A tt-metal Tile: its shape, face shape and the derived counts (Tile::Tile)."""

    height: int = TILE_HEIGHT
    width: int = TILE_WIDTH
    face_r: int = FACE_HEIGHT
    face_c: int = FACE_WIDTH

    @staticmethod
    def of(height: int, width: int) -> TileGeometry:
        face = TILE_FACE_SHAPES.get((int(height), int(width)))
        if face is None:
            raise EmulatorError(
                f"tile shape {height}x{width} is not valid for TT hardware (tt-metal Tile accepts "
                f"{sorted(TILE_FACE_SHAPES)})"
            )
        return TileGeometry(int(height), int(width), face[0], face[1])

    @property
    def tile_hw(self) -> int:
        return self.height * self.width

    @property
    def num_faces(self) -> int:
        return self.tile_hw // (self.face_r * self.face_c)

    @property
    def partial_face(self) -> int:
        return int(self.height < TILE_HEIGHT)

    @property
    def narrow_tile(self) -> int:
        return int(self.width < TILE_WIDTH)

    def tile_size(self, fmt: int) -> int:
        """Bytes of one tile of `fmt` (Tile::get_tile_size: datums plus, for block floats, one shared exponent per
        face row, rounded up to 16 B)."""
        exp = -(-(self.face_r * self.num_faces) // L1_ALIGNMENT) * L1_ALIGNMENT
        hw = self.tile_hw
        if fmt in (BFP2, BFP2_B):
            return hw // 4 + exp
        if fmt in (BFP4, BFP4_B):
            return hw // 2 + exp
        if fmt in (BFP8, BFP8_B):
            return hw + exp
        if fmt in (FLOAT16, FLOAT16_B, UINT16):
            return hw * 2
        if fmt in (FLOAT32, UINT32, INT32):
            return hw * 4
        if fmt in (FP8_E4M3, INT8, LF8, UINT8):
            return hw
        if fmt == TF32:
            raise EmulatorError("tile size of DataFormat::Tf32: tt-metal's Tile::get_tile_size refuses it")
        raise EmulatorError(f"tile size of data format {fmt}: not a tt::DataFormat a CB can hold")


@dataclass(frozen=True)
class CBEntry:
    """One CB index as the JIT build describes it to a kernel."""

    index: int
    data_format: int
    tile: TileGeometry
    num_faces: int
    face_r_dim: int
    tile_size: int


def cb_entry(
    index: int, data_format: int, tile_hw: tuple[int, int] | None, face_geometry: tuple[int, int] | None = None
) -> CBEntry:
    """The CB's descriptor entry as JitBuildOptions::set_cb_data_fmt_tile_and_face_geometry records it: no tile and
    no face geometry -> the default tile's size only (dims stay at tt_hlk_desc's defaults); else the requested tile,
    or the tile an unpack face geometry (face_r_dim, num_faces) implies when that is a supported shape."""
    if data_format not in DATA_FORMAT_NAMES:
        raise EmulatorError(f"CB {index}: data format {data_format} is not a tt::DataFormat value")
    requested = TileGeometry.of(*tile_hw) if tile_hw is not None else TileGeometry()
    if face_geometry is None:
        return CBEntry(
            index, data_format, requested, requested.num_faces, requested.face_r, requested.tile_size(data_format)
        )
    face_r, faces = (int(v) for v in face_geometry)
    h = face_r * (TILE_HEIGHT // FACE_HEIGHT if faces > 2 else 1)
    w = FACE_WIDTH if faces == 1 else TILE_WIDTH
    effective = TileGeometry.of(h, w) if (h, w) in TILE_FACE_SHAPES else requested
    return CBEntry(index, data_format, effective, faces, face_r, effective.tile_size(data_format))


# ------------------------------------------------------------------------------------------ register formats
def _exp_b(fmt: int) -> bool:
    return fmt in _EXP_B


def _data_exp_precision_b(formats: list[int]) -> bool:
    """get_data_exp_precision: the exponent width of the last valid format, skipping Float32 and integer formats
    (which pair with either width); B when that format is a -b format, and B when no format decides (a kernel whose
    CBs are all Float32 unpacks them to Float16_b in the wheel's JIT: tests/runtime format probe)."""
    last = INVALID
    for f in formats:
        if f in (FLOAT32, UINT32, UINT16, UINT8, INT32) or f == INVALID:
            continue
        last = f
    return True if last == INVALID else _exp_b(last)


def _conditional_dst_format(formats: list[int], fp32_dest_acc_en: bool) -> int:
    """compute_data_formats: the register format Float32 unpacks to."""
    b = _data_exp_precision_b(formats)
    cond = FLOAT16_B if b else FLOAT16
    valid = [f for f in formats if f != INVALID]
    if fp32_dest_acc_en and (all(f == FLOAT32 for f in valid) or b):
        cond = TF32
    return cond


def _unpack_dst(fmt: int, cond: int) -> int:
    """get_single_unpack_dst_format as the 0.81.1 wheel's JIT applies it: Float32 unpacks to the conditional format,
    every other format (block floats included: a Bfp4_b CB's entry is Bfp4_b, not Bfp8_b) to itself. Seen in the
    headers the wheel's JIT generates for our programs on a mock device (tests/runtime, docs/RUNTIME.md)."""
    if fmt == FLOAT32:
        return cond
    return fmt


def _pack_src(fmt: int, cond: int, fp32_dest_acc_en: bool) -> int:
    """get_single_pack_src_format with the CB's format as both input and output format."""
    if fmt == INVALID:
        return INVALID
    if fmt == UINT16:
        return fmt
    if fmt == FP8_E4M3:
        return FLOAT16
    if fp32_dest_acc_en:
        if fmt in _BFP:  # the wheel's JIT: Bfp8_b for a Bfp8_b or Bfp4_b CB (tests/runtime format probe)
            return BFP8_B if _exp_b(fmt) else BFP8
        if fmt == FLOAT16:
            return FLOAT16_B
        return fmt
    if fmt in _INTEGER:
        return fmt
    if fmt == FLOAT32:
        return cond
    if fmt in _BFP:
        return BFP8_B if _exp_b(fmt) else BFP8
    return fmt


# ------------------------------------------------------------------------------------------ generated headers
def _array(ctype: str, name: str, values: list[int]) -> str:
    """genfiles.cpp emit_formats_array: `<type> <name>[32] = {\\n    v,v,...\\n};`."""
    return f"{ctype} {name}[{len(values)}] = {{\n    {','.join(str(int(v)) for v in values)}\n}};\n"


def chlkc_descriptors(
    entries: list[CBEntry], *, compute: bool, fp32_dest_acc_en: bool = False, bfp8_pack_precise: bool = False
) -> str:
    """Text of chlkc_descriptors.h for a kernel whose cores hold the CBs `entries`. ``bfp8_pack_precise`` (a compute
    kernel's ComputeConfigDescriptor field): the packer converts to block floats from full floats, so a block-float
    CB's pack source is Float32 with an fp32 DST, else Float16_b (Float16 for A-exponent formats), as the wheel's JIT
    writes it for Bfp8_b and Bfp4_b CBs (tests/runtime format probe)."""
    fmt = [INVALID] * MAX_CBS
    tiles = [TileGeometry()] * MAX_CBS
    faces = [TILE_HEIGHT * TILE_WIDTH // (FACE_HEIGHT * FACE_WIDTH)] * MAX_CBS
    face_r = [FACE_HEIGHT] * MAX_CBS
    size = [1088] * MAX_CBS  # tt_hlk_desc default: constants::BFLOAT8_B_TILE_HW
    for e in entries:
        fmt[e.index], tiles[e.index], faces[e.index] = e.data_format, e.tile, e.num_faces
        face_r[e.index], size[e.index] = e.face_r_dim, e.tile_size
    acc = bool(fp32_dest_acc_en) and compute  # DataMovementConfig has no fp32_dest_acc_en: false for DM kernels
    cond = _conditional_dst_format(fmt, acc)
    unpack_dst = [_unpack_dst(f, cond) for f in fmt]
    pack_src = [_pack_src(f, cond, acc) for f in fmt]
    if compute and bfp8_pack_precise:  # Float32 with an fp32 DST (tests/runtime format probe)
        precise = (lambda f: FLOAT32) if acc else (lambda f: FLOAT16_B if _exp_b(f) else FLOAT16)
        pack_src = [precise(f) if f in _BFP else p for f, p in zip(fmt, pack_src)]
    if not acc and FP8_E4M3 in fmt:  # generate_pack_data_formats: Fp8 inputs make non-Fp8 outputs A-family
        to_a = {FLOAT16_B: FLOAT16, BFP8_B: BFP8, BFP4_B: BFP4, BFP2_B: BFP2}
        pack_src = [p if f == FP8_E4M3 else to_a.get(p, p) for f, p in zip(fmt, pack_src)]

    def dims(prefix: str) -> str:
        return "".join(
            [
                _array("constexpr uint8_t", f"{prefix}_tile_num_faces", faces),
                _array("constexpr uint8_t", f"{prefix}_partial_face", [t.partial_face for t in tiles]),
                _array("constexpr uint8_t", f"{prefix}_tile_face_r_dim", face_r),
                _array("constexpr uint8_t", f"{prefix}_narrow_tile", [t.narrow_tile for t in tiles]),
                _array("constexpr uint8_t", f"{prefix}_tile_r_dim", [t.height for t in tiles]),
                _array("constexpr uint8_t", f"{prefix}_tile_c_dim", [t.width for t in tiles]),
                _array("constexpr uint16_t", f"{prefix}_tile_size", size),
                _array(
                    "constexpr uint8_t", f"{prefix}_num_faces_r_dim", [t.height // r for t, r in zip(tiles, face_r)]
                ),
                _array("constexpr uint8_t", f"{prefix}_num_faces_c_dim", [t.width // FACE_WIDTH for t in tiles]),
            ]
        )

    # The formats are bytes (Invalid = 255): the 0.81.1 wheel's JIT declares the unpack arrays uint8_t, the pack
    # arrays unsigned char (genfiles.cpp emit_unpack_data_formats / emit_pack_data_formats).
    unpack = (
        _array("constexpr uint8_t", "unpack_src_format", fmt)
        + _array("constexpr uint8_t", "unpack_dst_format", unpack_dst)
        + dims("unpack")
    )
    pack = (
        _array("constexpr unsigned char", "pack_src_format", pack_src)
        + _array("constexpr unsigned char", "pack_dst_format", fmt)
        + dims("pack")
    )
    head = (
        "// Generated by ttemu.jit_env for the emulator's kernel build, laid out as tt-metal's\n"
        "// jit_build/genfiles.cpp generate_all_descriptors lays out chlkc_descriptors.h.\n#pragma once\n\n"
        "#include <cstdint>\n\n"
    )
    if compute:
        # One program stands for UNPACK, MATH and PACK: every array. The compute scalars (DST_ACCUM_MODE, the
        # DST_SYNC_MODE macro, MATH_FIDELITY, APPROX) and the LLK enums they name come from the emulator's compute
        # API, included here as chlkc_list.h brings ckernel.h and llk_defs.h ahead of the kernel on silicon.
        # EMU_CB_TILE_GEOMETRY: the emulator's unpacker / packer read each CB's tile shape from these arrays.
        return (
            head
            + '#include "api/compute/common_globals.h"\n\n#define EMU_CB_TILE_GEOMETRY 1\n\n'
            + unpack
            + "\n"
            + pack
        )
    return (
        head + "#if !defined(UCK_CHLKC_PACK)\n" + unpack + "#endif\n\n"
        "#if !defined(UCK_CHLKC_MATH) && !defined(UCK_CHLKC_UNPACK)\n" + pack + "#endif\n"
    )


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def named_ct_arg_map_header(named: list[tuple[str, int]]) -> str:
    """Text of named_ct_arg_map_generated.h (format_named_ct_arg_map_header): entries in ascending name order."""
    seen: dict[str, int] = {}
    for n, v in named:
        if n in seen and seen[n] != int(v):
            raise EmulatorError(f"named compile-time arg {n!r} given twice with different values")
        seen[n] = int(v) & 0xFFFFFFFF
    body = ",".join(f"{{{_c_string(n)},{v}}}" for n, v in sorted(seen.items()))
    return "// AUTO-GENERATED -- do not edit.\n#pragma once\n#define KERNEL_COMPILE_TIME_ARG_MAP " + body + "\n"


NAMED_CT_ARG_MAP_HEADER = "named_ct_arg_map_generated.h"
DESCRIPTORS_HEADER = "chlkc_descriptors.h"


def write_generated(root: Path, files: dict[str, str]) -> Path:
    """Write `files` into a directory named by their content hash under `root` (so the directory, which enters the
    kernel's flags, also keys the compile cache) and return it."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    d = root / h.hexdigest()[:20]
    if not all((d / n).is_file() for n in files):
        d.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            p = d / name
            if not p.is_file():
                tmp = p.with_suffix(p.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_text(text)
                tmp.rename(p)
    return d


# ------------------------------------------------------------------------------------------ include roots
# tt-metal's JIT build puts its source roots on every kernel's include path (build.cpp: the tt-metal root, ttnn/,
# ttnn/cpp/), so an upstream kernel finds its helper headers as "ttnn/operations/..." or "cpp/ttnn/...". For
# compute kernels it adds the LLK trees (tt_llk_<arch>/common/inc, llk_lib, hw/ckernels/<arch>/metal/llk_api and its
# llk_sfpu/). The emulator puts its own kernel API (include/) and its own LLK layer (include_llk/: ckernel.h, the
# TTI instruction macros, the host SFPI library, the llk_math_* / llk_pack_* entry points it models) first, then
# the wheel's LLK trees: the wheel's SFPU algorithms (ckernel_sfpu_*.h) compile unmodified against the host SFPI,
# while every header the emulator models is its own. llk_lib and the wheel's hw/inc are never on the path (what
# the emulator does not model fails to compile instead of running silicon-only code).
LLK_INCLUDE = Path(__file__).resolve().parent / "include_llk"


def wheel_root() -> Path | None:
    """The installed ttnn package directory (without importing ttnn), or None."""
    import importlib.util

    spec = importlib.util.find_spec("ttnn")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def kernel_source(relative: str) -> Path:
    """Absolute path of one of Tenstorrent's kernel sources in the installed ttnn wheel, given as upstream's program
    factories name it below ``ttnn/cpp`` (e.g. ``ttnn/operations/eltwise/unary/device/kernels/dataflow/
    reader_unary_interleaved_start_id.cpp``; a leading ``ttnn/cpp/``, the form ``CreateKernel`` calls use, is accepted
    too). The sources are read where the wheel keeps them (tt-metal's source root is the ttnn package directory),
    never copied: they are exactly what silicon runs for this ttnn version."""
    rel = relative.removeprefix("ttnn/cpp/")
    root = wheel_root()
    path = None if root is None else root / "ttnn" / "cpp" / rel
    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"upstream kernel {relative!r} is not in the installed ttnn wheel (looked for "
            f"{path or 'ttnn, which is not installed'})"
        )
    return path


def source_include_paths() -> list[str]:
    """The wheel's kernel-helper source roots every kernel sees (after the emulator's own headers)."""
    root = wheel_root()
    if root is None:
        return []
    # tt_metal/api: <tt-metalium/constants.hpp> and friends, which kernel helpers (kernel_lib, rt_args_common.hpp)
    # include; host-side constants only, no kernel API.
    return [str(p) for p in (root / "ttnn" / "cpp", root / "ttnn", root, root / "tt_metal" / "api") if p.is_dir()]


def compute_llk_include_paths(spec=None) -> list[str]:
    """The wheel's LLK trees of `spec`'s arch (an arch.ArchSpec; None: Wormhole B0) a compute kernel sees, behind the
    emulator's include_llk/."""
    root = wheel_root()
    if root is None:
        return []
    ckernels, llk_dir = (spec.ckernels, spec.llk) if spec is not None else ("wormhole_b0", "tt_llk_wormhole_b0")
    metal = root / "tt_metal" / "hw" / "ckernels" / ckernels / "metal" / "llk_api"
    llk = root / "tt_metal" / "tt-llk" / llk_dir / "common" / "inc"
    # hw/inc last: the wheel's compute API headers the emulator does not shadow (the SFPU ops: exp, recip, ...)
    # compile against the emulator's LLK layer, as tt-metal layers api/compute over llk_api over tt-llk.
    hw_inc = root / "tt_metal" / "hw" / "inc"
    return [str(p) for p in (metal, metal / "llk_sfpu", llk, hw_inc) if p.is_dir()]


# Defines the emulator adds to every compute kernel: the LLK's SFPU kernels then use their instruction-by-
# instruction form instead of SFPLOADMACRO sequences (whose pipelined macro scheduling the emulator does not model;
# the LLK keeps both forms of the same algorithm).
COMPUTE_DEFINES = ["-DDISABLE_SFPLOADMACRO"]


# ------------------------------------------------------------------------------------------ host compile of compute
# The wheel's SFPU kernels are written for the SFPI toolchain (a newer GCC), which accepts ``#pragma GCC unroll N``
# with N a template parameter; the host g++ 12 rejects it. The pragma is an unrolling hint with no effect on what
# the kernel computes, so compute kernels are compiled from their preprocessed text with those pragmas removed
# (compiler.py _compile_compute; perf/kernel_compile_survey.py does the same).
_DEPENDENT_UNROLL = re.compile(r"^[ \t]*#pragma GCC unroll[ \t]+(?![0-9]+[ \t]*$)[^\n]*$", re.M)


# Likewise ``static_assert(false, msg)`` in a discarded ``if constexpr`` branch (accepted since GCC 13, P2593): it
# becomes a run-time fault with the same message, which a valid kernel never reaches (the branch is discarded).
_STATIC_ASSERT_FALSE = re.compile(r'static_assert\s*\(\s*false\s*,\s*("(?:[^"\\]|\\.)*")\s*\)\s*;')


def host_compile_source(preprocessed: str) -> str:
    """The preprocessed kernel text without template-dependent ``#pragma GCC unroll`` lines, and with
    ``static_assert(false, msg)`` as a run-time fault."""
    text = _DEPENDENT_UNROLL.sub("", preprocessed)
    return _STATIC_ASSERT_FALSE.sub(r'::emu::fault("static_assert failed: %s", \1);', text)


def non_preprocessor_flags(flags) -> list[str]:
    """The flags that still matter when compiling preprocessed text (no -I / -D / -include / -MM)."""
    out, skip = [], False
    for f in flags:
        if skip:
            skip = False
            continue
        if f == "-include":
            skip = True
            continue
        if f.startswith(("-I", "-D", "-U")):
            continue
        out.append(f)
    return out
