"""The positional compile-time args a kernel source declares, read from the source itself.

A kernel of ours reads compile-time arg i once, at namespace scope, into a constant named after it, as upstream's
kernels do: ``constexpr uint32_t Sk_t = get_compile_time_arg_val(15);`` (a flag compares it: ``constexpr bool is_causal
= get_compile_time_arg_val(23) == 1;``; an enum casts it). tests/test_kernel_api.py compares these declarations with
ops/decode/args.py's ordered lists; tests/test_descriptor_contents.py reads a descriptor's args by them.
"""

from __future__ import annotations

import re
from pathlib import Path

READ = "get_compile_time_arg_val("
DECLARATION = re.compile(
    r"^constexpr\s+[\w:]+\s+(\w+)\s*=\s*(?:static_cast<[\w:]+>\()?get_compile_time_arg_val\((\d+)\)\)?(?:\s*==\s*1)?$"
)


def code(path: Path) -> str:
    """Source without comments."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(errors="ignore"), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def reads(path: Path) -> list[str]:
    """Every statement of ``path`` that reads a positional compile-time arg, whitespace collapsed."""
    return [" ".join(st.split()) for st in re.split(r"[;{}]", code(path)) if READ in st]


def declared_args(path: Path) -> list[str]:
    """The names of the kernel's positional compile-time args, arg i at index i. Raises AssertionError on a read that
    is not such a declaration at namespace scope (one read, into a namespace-scope ``constexpr``), an index read twice
    or a gap."""
    at: dict[int, str] = {}
    # namespace scope: the declaration starts its line (the kernels do not indent the anonymous namespace)
    starts = {" ".join(line.split()) for line in code(path).splitlines() if line.startswith("constexpr ")}
    for statement in reads(path):
        match = DECLARATION.match(statement)
        if not match or statement.count(READ) != 1 or not any(s.startswith(statement) for s in starts):
            raise AssertionError(
                f"{path.name}: `{statement}` is not `constexpr <type> <name> = {READ}i)` at namespace scope"
            )
        name, index = match.group(1), int(match.group(2))
        if index in at:
            raise AssertionError(f"{path.name}: arg {index} read twice ({at[index]}, {name})")
        at[index] = name
    gaps = sorted(set(range(len(at))) - set(at))
    if gaps:
        raise AssertionError(f"{path.name}: args {gaps} are never read (reads {sorted(at)})")
    return [at[i] for i in range(len(at))]


def order_mismatches(declared: list[str], listed: tuple[str, ...]) -> list[str]:
    """Where a kernel's declarations and its ordered list disagree, one line per index (empty: they match)."""
    wrong = [
        f"arg {i}: the kernel declares {d!r}, the list has {n!r}"
        for i, (d, n) in enumerate(zip(declared, listed, strict=False))
        if d != n
    ]
    if len(declared) != len(listed):
        wrong.append(f"the kernel declares {len(declared)} args, the list has {len(listed)}")
    return wrong
