"""Exceptions raised by the host emulator.

Every error that comes from running a program names, where known, the core (logical ``"x,y"``), the kernel
(``"name (BRISC|NCRISC|TRISC)"``) and a human-readable ``details`` text (for hangs: one line per blocked thread).
"""

from __future__ import annotations


class EmulatorError(Exception):
    """Invalid program/tensor for the emulator, or the emulator itself failed."""

    def __init__(self, message: str, *, core: str | None = None, kernel: str | None = None, details: str = ""):
        self.core = core or None
        self.kernel = kernel or None
        self.details = details
        where = ", ".join(p for p in (f"core {core}" if core else "", f"kernel {kernel}" if kernel else "") if p)
        text = f"{message}" + (f" [{where}]" if where else "")
        if details and details not in text:
            text += f"\n{details}"
        super().__init__(text)


class KernelCompileError(EmulatorError):
    """A kernel failed to compile; ``kernel_path`` and the compiler's ``compiler_output`` are attached."""

    def __init__(self, kernel_path: str, compiler_output: str, command: str = ""):
        self.kernel_path = kernel_path
        self.compiler_output = compiler_output
        self.command = command
        super().__init__(f"kernel {kernel_path} failed to compile", kernel=kernel_path, details=compiler_output)


class KernelFault(EmulatorError):
    """A kernel crashed or broke an API rule (bad address, CB misuse, failed ASSERT, signal)."""


class EmulatorHang(EmulatorError):
    """All kernel threads blocked with no progress (deadlock), or the run passed its deadline."""
