"""The device kernels use only the tt-metal kernel API that the ttnn 0.81.1 wheel ships, in its Device 2.0 form, and
take their arguments as ttflashdecode/ops/decode/args.py defines them.

The emulator compiles our kernels against its own implementation of that API, so a function the emulator
provides but silicon lacks would pass every emulator test and fail to compile on a card. These checks compare
against the wheel's own headers (``ttnn/tt_metal/hw/inc``). They look at names (functions, methods and the Device 2.0
classes), not signatures.

Style: data movement goes through ``Noc`` / ``CircularBuffer`` / ``CoreLocalMem`` / ``Semaphore`` / ``TensorAccessor``
(the legacy free functions are not used), every compile-time argument of every kernel of ours is positional, declared
at the index its op's ordered list (ops/decode/args.py for FlashDecode) gives its name, CB indices come from the
planner's table, and runtime args are read in the field order of ops/decode/args.py's dataclasses.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from kernel_source_args import declared_args, order_mismatches, reads
from tests_support_paths import KERNEL_ROOT, REPO
from ttflashdecode.ops.decode import args as kernel_args

EMULATOR_API = REPO / "ttemu" / "include"
KERNEL_SOURCES = sorted([*KERNEL_ROOT.rglob("*.cpp"), *KERNEL_ROOT.rglob("*.hpp")])
NOT_API = {
    "if",
    "for",
    "while",
    "switch",
    "return",
    "sizeof",
    "static_assert",
    "static_cast",
    "reinterpret_cast",
    "const_cast",
    "decltype",
    "defined",
    "uint32_t",
    "int32_t",
    "uint16_t",
    "uint8_t",
    "int64_t",
    "uint64_t",
    "float",
}


def _wheel_inc() -> Path:
    spec = importlib.util.find_spec("ttnn")
    return Path(spec.submodule_search_locations[0]) / "tt_metal" / "hw" / "inc"


def _code(path: Path) -> str:
    """Source without comments."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(errors="ignore"), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _defined_in_our_kernels() -> set[str]:
    """Functions (and lambdas bound to names) our kernel sources define themselves."""
    names = set()
    for path in KERNEL_SOURCES:
        code = _code(path)
        names |= set(re.findall(r"\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:->\s*[\w:]+\s*)?\{", code))
        names |= set(re.findall(r"\bauto\s+([A-Za-z_]\w*)\s*=\s*\[", code))
        # objects constructed by name: `CoreLocalMem<volatile uint32_t> words(l1_addr);`, `Semaphore<> arrived(id);`
        names |= {m for m in re.findall(r"(?:\b(?!return\b|else\b)\w+|>)\s+([A-Za-z_]\w*)\s*\([^;{}]*\)\s*;", code)}
    return names


def _api_calls() -> dict[str, list[str]]:
    """Called names that an API header provides (the emulator's, or the wheel's, which the emulator's compute build
    includes for the compute API), with the kernel files that call them."""
    emulator_text = "\n".join(_code(p) for root in (EMULATOR_API, _wheel_inc()) for p in root.rglob("*.h"))
    own = _defined_in_our_kernels()
    calls: dict[str, list[str]] = {}
    for path in KERNEL_SOURCES:
        for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*(?:<[^;(){}]*>)?\s*\(", _code(path))):
            if name not in own and name not in NOT_API and re.search(rf"\b{name}\b", emulator_text):
                calls.setdefault(name, []).append(path.name)
    return calls


def test_kernel_includes_exist_in_the_wheel():
    includes = {inc for path in KERNEL_SOURCES for inc in re.findall(r'#include "(api/[^"]+)"', path.read_text())}
    assert includes, "the kernels include no tt-metal API header?"
    missing = sorted(inc for inc in includes if not (_wheel_inc() / inc).is_file())
    assert not missing, f"included by our kernels but not shipped in the wheel's hw/inc: {missing}"


def test_kernel_api_calls_are_declared_in_the_wheel():
    # hw/inc plus tt-llk's Wormhole llk_lib, which a compute kernel's include path also holds on silicon (types such as
    # ReluConfig, whose ReluConfig::zero() upstream's sdpa passes to pack_relu_config, are declared there).
    llk_lib = _wheel_inc().parents[1] / "tt-llk" / "tt_llk_wormhole_b0" / "llk_lib"
    assert llk_lib.is_dir(), f"{llk_lib}: the wheel's tt-llk folder moved"
    wheel_text = "\n".join(_code(p) for root in (_wheel_inc(), llk_lib) for p in root.rglob("*.h"))
    calls = _api_calls()
    # The FlashDecode kernels need at least CBs, NOC reads/writes, semaphores, matmul, reduce and exp.
    for needed in (
        "async_read",
        "async_write",
        "async_read_barrier",
        "wait_front",
        "reserve_back",
        "get_write_ptr",
        "TensorAccessor",
        "CircularBuffer",
        "CoreLocalMem",
        "Semaphore",
        "up",
        "matmul_tiles",
        "reduce_tile",
        "exp_tile",
        "pack_tile",
    ):
        assert needed in calls, f"{needed} not found among the kernels' API calls: the scan is broken"
    missing = {
        name: files
        for name, files in calls.items()
        if not re.search(rf"\b{name}\s*(?:<[^;(){{}}]*>)?\s*\(", wheel_text)
    }
    assert not missing, f"called by our kernels, provided by the emulator, absent from the wheel: {missing}"


@pytest.mark.parametrize(
    "header", sorted(p.relative_to(EMULATOR_API) for p in (EMULATOR_API / "api").rglob("*.h")), ids=str
)
def test_emulator_api_headers_mirror_wheel_paths(header):
    """Kernels include the same paths on silicon and here, so each emulator API header stands where the wheel's is."""
    assert (_wheel_inc() / header).is_file(), f"emulator header {header} has no counterpart in the wheel's hw/inc"


# ---- Device 2.0 style -------------------------------------------------------------------------------------------
DEVICE2_TYPES = (
    "Noc",
    "CircularBuffer",
    "CoreLocalMem",
    "Semaphore",
    "TensorAccessor",
    "TensorAccessorArgs",
    "UnicastEndpoint",
)
# The legacy free functions the Device 2.0 objects replace (api/dataflow/dataflow_api.h); compute kernels still call
# the compute API by CB index, as upstream's, but synchronise CBs through CircularBuffer.
LEGACY = (
    "noc_async_read",
    "noc_async_write",
    "noc_async_read_tile",
    "noc_async_write_tile",
    "noc_async_read_page",
    "noc_async_write_page",
    "noc_async_read_barrier",
    "noc_async_write_barrier",
    "noc_async_atomic_barrier",
    "noc_semaphore_wait",
    "noc_semaphore_set",
    "noc_semaphore_inc",
    "get_semaphore",
    "get_noc_addr",
    "cb_reserve_back",
    "cb_push_back",
    "cb_wait_front",
    "cb_pop_front",
    "get_write_ptr",
    "get_read_ptr",
    "InterleavedAddrGen",
    "InterleavedAddrGenFast",
    "InterleavedPow2AddrGen",
    "InterleavedPow2AddrGenFast",
)
KERNELS = {
    "reader_flash_decode.cpp": (kernel_args.READER_ARGS, kernel_args.ReaderCommonArgs),
    "compute_flash_decode.cpp": (kernel_args.COMPUTE_ARGS, kernel_args.ComputeCommonArgs),
    "writer_flash_decode.cpp": (kernel_args.WRITER_ARGS, kernel_args.WriterCommonArgs),
}


def _kernel(name: str) -> Path:
    return next(p for p in KERNEL_SOURCES if p.name == name)


def test_device2_types_are_declared_in_the_wheel():
    wheel_text = "\n".join(_code(p) for p in _wheel_inc().rglob("*.h"))
    used = {t for p in KERNEL_SOURCES for t in DEVICE2_TYPES if re.search(rf"\b{t}\b", _code(p))}
    assert {"Noc", "CircularBuffer", "CoreLocalMem", "Semaphore", "TensorAccessor"} <= used, used
    missing = sorted(t for t in used if not re.search(rf"\b(?:class|struct)\s+{t}\b", wheel_text))
    assert not missing, f"Device 2.0 types our kernels use that the wheel does not declare: {missing}"


@pytest.mark.parametrize("path", KERNEL_SOURCES, ids=lambda p: str(p.relative_to(KERNEL_ROOT)))
def test_no_legacy_dataflow_calls(path):
    """Every NOC transfer, barrier, CB sync and semaphore goes through the Device 2.0 objects (a call as a member,
    ``noc.async_read(...)`` / ``cb.get_write_ptr()``, is fine; the free function is not)."""
    code = _code(path)
    legacy = sorted({name for name in LEGACY if re.search(rf"(?<![.\w]){name}\s*(?:<[^;(){{}}]*>)?\s*[({{]", code)})
    assert not legacy, f"{path.name} calls the legacy API {legacy}"


@pytest.mark.parametrize("path", KERNEL_SOURCES, ids=lambda p: str(p.relative_to(KERNEL_ROOT)))
def test_no_kernel_declares_a_cb_index(path):
    code = _code(path)
    assert not re.search(r"CBIndex::|\bc_\d+\b", code), f"{path.name} names a CB index itself (take cb_<name> args)"


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_compile_time_args_match_kernel_args(name):
    """A kernel declares exactly the args kernel_args.py lists for it, in its order: arg i is read into a constant named
    after the list's name i (no gaps, none extra, none missing), it reads no named arg, and every name has a documented
    meaning."""
    names, _ = KERNELS[name]
    path = _kernel(name)
    assert len(names) == len(set(names)), f"{name}: a name listed twice"
    wrong = order_mismatches(declared_args(path), names)
    assert not wrong, f"{name} against kernel_args:\n" + "\n".join(wrong)
    assert "get_named_compile_time_arg_val" not in _code(path), f"{name} reads a named arg"
    undocumented = [n for n in names if n not in kernel_args.DOCS]
    assert not undocumented, f"kernel_args.DOCS has no meaning for {undocumented}"


def _other_ops_kernels() -> dict[Path, tuple[str, ...]]:
    """The other ops' kernels (launched with every decode step: the cache update, the bfloat8_b output's conversion;
    the fill, shared-prefix decode's merge) and their ordered lists."""
    from ttflashdecode.ops.convert import factory as convert
    from ttflashdecode.ops.fill_cache import args as fill
    from ttflashdecode.ops.shared_prefix import args as merge
    from ttflashdecode.ops.update_cache import args as update

    assert fill.COMPUTE_ARGS == convert.COMPUTE_ARGS, "the fill runs the conversion's compute kernel"
    lists = {
        "update_cache/kernels/dataflow/reader_update_cache.cpp": update.READER_ARGS,
        "update_cache/kernels/compute/compute_update_cache.cpp": update.COMPUTE_ARGS,
        "update_cache/kernels/dataflow/writer_update_cache.cpp": update.WRITER_ARGS,
        "fill_cache/kernels/dataflow/reader_fill_cache.cpp": fill.READER_ARGS,
        "fill_cache/kernels/dataflow/writer_fill_cache.cpp": fill.WRITER_ARGS,
        "convert/kernels/dataflow/reader_tiles.cpp": convert.READER_ARGS,
        "convert/kernels/compute/compute_copy.cpp": convert.COMPUTE_ARGS,
        "convert/kernels/dataflow/writer_tiles.cpp": convert.WRITER_ARGS,
        "shared_prefix/kernels/dataflow/reader_merge_partials.cpp": merge.MERGE_READER_ARGS,
        "shared_prefix/kernels/compute/compute_merge_partials.cpp": merge.MERGE_COMPUTE_ARGS,
        "shared_prefix/kernels/dataflow/writer_merge_partials.cpp": merge.MERGE_WRITER_ARGS,
    }
    return {KERNEL_ROOT / path: names for path, names in lists.items()}


def test_every_kernel_of_ours_takes_positional_args_in_its_lists_order():
    """The other ops' kernels as the FlashDecode ones: each declares exactly its op's ordered list, name i at index i;
    no kernel of ours reads a named arg."""
    others = _other_ops_kernels()
    flash_decode = {_kernel(name) for name in KERNELS}
    assert set(others) | flash_decode == {p for p in KERNEL_SOURCES if p.suffix == ".cpp"}, "a kernel without a list"
    for path, names in others.items():
        wrong = order_mismatches(declared_args(path), names)
        assert not wrong, f"{path.relative_to(KERNEL_ROOT)} against its list:\n" + "\n".join(wrong)
    named = [p.name for p in KERNEL_SOURCES if "get_named_compile_time_arg_val" in _code(p)]
    assert not named, f"kernels reading named args: {named}"


def test_a_swapped_pair_of_args_is_caught():
    """Two names swapped in an ordered list (or two declarations in a kernel) are two mismatches naming both."""
    declared = declared_args(_kernel("reader_flash_decode.cpp"))
    i, j = declared.index("DHt"), declared.index("vDHt")
    swapped = list(kernel_args.READER_ARGS)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    wrong = order_mismatches(declared, tuple(swapped))
    assert len(wrong) == 2 and "'DHt'" in wrong[0] and "'vDHt'" in wrong[1], wrong


@pytest.mark.parametrize("path", KERNEL_SOURCES, ids=lambda p: str(p.relative_to(KERNEL_ROOT)))
def test_compile_time_args_are_read_in_constant_expressions(path):
    """Every compile-time arg is read into a constexpr: what shapes code (``if constexpr``, array sizes, template
    arguments) must be a constant, and a named arg the descriptor lacks fails a card's build only there (the wheel's
    lookup, api/compile_time_args.h get_named_ct_arg, ends in __builtin_unreachable(), an error only where a constant
    expression is required; a plain variable's initialiser would compile and read garbage). A positional index past
    the descriptor's args fails the build anywhere (get_ct_arg's static_assert)."""
    statements = [*reads(path), *(" ".join(st.split()) for st in re.split(r"[;{}]", _code(path)) if "get_named_" in st)]
    loose = [st for st in statements if not re.match(r"(?:static\s+)?constexpr\b", st)]
    assert not loose, f"{path.name} reads compile-time args outside a constexpr: {loose}"


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_runtime_args_read_in_kernel_args_order(name):
    """A kernel takes no per-core runtime args; it reads its own common args (addresses, run-time shape) in
    kernel_args' field order from ``work_args_at`` on (compute, which has no shard table: from 0), into locals or, where
    helpers outside kernel_main need them, the reader's namespace-scope run-time shape, then its work from the work
    table right after them (flash_decode_common.hpp's core_work, the layout kernel_args.core_work_table writes)."""
    _, common = KERNELS[name]
    code = _code(_kernel(name))
    assert not re.search(r"\bget_arg_val<", code), f"{name} reads a per-core runtime arg"
    read = re.findall(r"(?:const uint32_t )?(\w+) = get_common_arg_val<uint32_t>\(arg\+\+\);", code)
    assert tuple(read) == kernel_args.runtime_arg_names(common), f"{name} reads its common args as {read}"
    work_at = "arg" if read else "0"
    assert len(re.findall(rf"= core_work\({work_at}\);", code)) == 1, f"{name}: its work is not read after its args"
    if read:
        first = "0" if name.startswith("compute") else "work_args_at"
        assert f"uint32_t arg = {first};" in code, f"{name}: its own common args do not start at {first}"


def test_update_kernels_read_their_common_args_in_order():
    """The cache update's kernels (update_cache/args.py) as the decode kernels: no per-core runtime arg (but the
    signals of a writer fused with attention), their own common args read in ReaderCommonArgs' / WriterCommonArgs'
    field order (the reader's from ``work_args_at`` on, after the shard table), then their units from the work table
    right after them (update_cache_common.hpp's unit_range, the layout unit_work_table writes). The cache's size is
    not among the compile-time args: one build serves every cache size."""
    from ttflashdecode.ops.update_cache import args as update

    kernels = {
        "dataflow/reader_update_cache.cpp": (update.ReaderCommonArgs, "work_args_at"),
        "compute/compute_update_cache.cpp": (None, None),
        "dataflow/writer_update_cache.cpp": (update.WriterCommonArgs, "0"),
    }
    for path, (common, first) in kernels.items():
        code = _code(KERNEL_ROOT / "update_cache" / "kernels" / path)
        read = re.findall(r"(?:const uint32_t )?(\w+) = get_common_arg_val<uint32_t>\(arg\+\+\);", code)
        want = kernel_args.runtime_arg_names(common) if common else ()
        assert tuple(read) == want, f"{path} reads its common args as {read}"
        if common:
            assert f"uint32_t arg = {first};" in code, f"{path}: its own common args do not start at {first}"
        assert len(re.findall(rf"unit_range\({'arg' if common else '0'}\)", code)) == 1, f"{path}: its units"
        per_core = [m.start() for m in re.finditer(r"\bget_arg_val<", code)]
        signals = code.find("if constexpr (signal_cache_updated)")
        assert all(0 <= signals < at for at in per_core), f"{path} reads a per-core arg outside the signals"
    size = {"batch", "kv_len", "max_blocks_per_user", "num_blocks", "index_page_bytes", "page_table_page_bytes"}
    assert size <= set(kernel_args.runtime_arg_names(update.ReaderCommonArgs))
    assert not size & set(update.READER_ARGS), sorted(size & set(update.READER_ARGS))


def test_update_work_table_finds_each_cores_units():
    """unit_work_table's layout read as unit_range reads it (box x0, y0, width, then a word per core of the box, row
    by row: first_unit | num_units << 16) gives every core of a split its own range, on scattered cores too (a fused
    program's update cores), and zero units to a core of the box outside the split."""
    from ttflashdecode.ops.update_cache.args import unit_work_table
    from ttflashdecode.ops.work_split import split_units

    def unit_range(table, x, y):
        x0, y0, width = table[:3]
        word = table[3 + (y - y0) * width + x - x0]
        return word & 0xFFFF, word >> 16

    for split in (split_units(128, (8, 8)), split_units(37, (8, 8), [(7, 2), (1, 3), (4, 5), (2, 2), (6, 7)])):
        table = unit_work_table(split)
        for core, first, count in zip(split.cores, split.first_unit, split.num_units, strict=True):
            assert unit_range(table, *core) == (first, count), core
    assert unit_range(table, 3, 4) == (0, 0)


def test_run_time_shape_is_not_compile_time():
    """The cache's shape quantities (kernel_args.RunShape: batch, cache length, window, scale, block pool) are common
    runtime args, never compile-time args, so one build of a kernel serves them all; compute's scale_bits is the
    one exception, and only where the approximate exp takes the scale as a template argument."""
    shape = set(kernel_args.runtime_arg_names(kernel_args.RunShape))
    for name, (names, _) in KERNELS.items():
        allowed = {"scale_bits"} if name.startswith("compute") else set()
        compile_time = (shape & set(names)) - allowed
        assert not compile_time, f"{name} takes {sorted(compile_time)} at compile time"


def test_cb_args_cover_the_planners_table():
    """Every cb_<name> a kernel takes is an entry of the planner's one CB table (plan/cbs.py: CB_INDEX)."""
    from ttflashdecode.plan.cbs import CB_INDEX

    cb_names = {n for names, _ in KERNELS.values() for n in names if n.startswith("cb_")}
    assert cb_names <= {f"cb_{n}" for n in CB_INDEX}, sorted(cb_names - {f"cb_{n}" for n in CB_INDEX})


# ---- compiled with warnings on: no deprecated API ---------------------------------------------------------------
def test_our_kernels_compile_without_deprecation_warnings(emu_device):
    """A decode with a bfloat8_b output builds every kernel of ours (reader, compute, writer and the three convert
    kernels); the emulator compiles them with -Wall against headers that carry the wheel's [[deprecated]] markings, and
    reports nothing deprecated and no warning in our sources."""
    from decode_harness import DecodeCase, assert_matches_golden, run_case
    from ttemu import compiler
    from ttemu.ttnn_env import import_ttnn

    ttnn = import_ttnn()
    compiler.reset_compile_warnings()
    case = DecodeCase(
        batch=1,
        n_q_heads=8,
        n_kv_heads=1,
        head_dim=64,
        kv_len=256,
        cur_pos=(200,),
        k_chunk_size=64,
        max_cores_per_head_batch=4,
        out_dtype="bfloat8_b",
    )
    outcome = run_case(
        emu_device,
        case,
        to_torch=emu_device.to_torch,
        to_device=lambda x, dtype, **kw: emu_device.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, **kw),
    )
    assert_matches_golden(outcome, case)
    ours = sorted(
        str(p)
        for p in KERNEL_SOURCES
        if p.suffix == ".cpp" and (KERNEL_ROOT / "convert" in p.parents or p.name.endswith("_flash_decode.cpp"))
    )
    assert set(ours) <= compiler.compiled_sources(), sorted(set(ours) - compiler.compiled_sources())
    deprecated = [str(w) for src in ours for w in compiler.compile_warnings(src, deprecated_only=True)]
    assert not deprecated, deprecated
    in_our_files = [str(w) for w in compiler.compile_warnings() if str(KERNEL_ROOT) in w.file]
    assert not in_our_files, in_our_files
