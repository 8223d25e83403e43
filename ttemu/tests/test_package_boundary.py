"""The emulator is a package of its own: nothing in ttemu/ (its tests included) imports the op package built on it,
names it, or finds files through it (kernel include paths come from each KernelDescriptor's
``compiler_include_paths``, the cache and install root from the emulator's own location), so the op package can change
its layout, or another package use the emulator, without touching it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
OP_PACKAGE = "ttflashdecode"
SOURCE_SUFFIXES = (".py", ".cpp", ".h", ".hpp", ".yaml", ".supp")


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports (absolute names; a relative import is the emulator's own by construction)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
            "find_spec",
        ):
            names |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return names


def test_no_emulator_module_imports_the_op_package():
    offenders = {
        str(p.relative_to(PACKAGE.parent)): sorted(m for m in _imported_modules(p) if m.split(".")[0] == OP_PACKAGE)
        for p in sorted(PACKAGE.rglob("*.py"))
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"ttemu imports the op package: {offenders}"


def test_no_emulator_source_names_the_op_package():
    """No path, cache folder, include root or logger name of the op package in the emulator's sources."""
    named = [
        str(p.relative_to(PACKAGE.parent))
        for p in sorted(PACKAGE.rglob("*"))
        if p.is_file()
        and p.suffix in SOURCE_SUFFIXES
        and p != Path(__file__).resolve()
        and OP_PACKAGE in p.read_text(errors="replace").lower()
    ]
    assert not named, f"emulator sources name {OP_PACKAGE}: {named}"


def test_importing_every_emulator_module_loads_no_op_module():
    """At run time too (an import hidden in a function body would pass the AST check only if it were spelled oddly)."""
    modules = sorted(
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        for p in PACKAGE.glob("*.py")
        if p.name != "__init__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] == {OP_PACKAGE!r}))"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout + res.stderr
