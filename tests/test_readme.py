"""The README's usage examples run as written, on the emulator (a README that drifts from the API fails here)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_runnable_examples():
    blocks = _python_blocks()
    # the first block is the one-line teaser (needs the user's tensors); the rest must run as they are
    assert len(blocks) >= 2, "README lost its usage examples"


def test_readme_examples_run(capsys):
    for block in _python_blocks()[1:]:
        namespace: dict = {}
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own README
        assert "out" in namespace, "a README example must produce `out`"
    printed = capsys.readouterr().out
    assert printed.strip(), "the README example prints the output shape"
