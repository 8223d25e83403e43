"""Exceptions raised by the host emulator.

Every error that comes from running a program names, where known, the core (logical ``"x,y"``), the kernel
(``"name (BRISC|NCRISC|TRISC)"``), the kernel source line (``location``,
``"mypackage/kernels/x.cpp:123"``, for faults) and a human-readable ``details`` text (for hangs: one line
per blocked thread; for faults: the backtrace).
"""

from __future__ import annotations


class EmulatorError(Exception):
    """Invalid program/tensor for the emulator, or the emulator itself failed."""

    def __init__(
        self,
        message: str,
        *,
        core: str | None = None,
        kernel: str | None = None,
        details: str = "",
        location: str | None = None,
    ):
        self.core = core or None
        self.kernel = kernel or None
        self.location = location or None
        self.details = details
        where = ", ".join(
            p
            for p in (
                f"core {core}" if core else "",
                f"kernel {kernel}" if kernel else "",
                f"at {location}" if location else "",
            )
            if p
        )
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


class SanitizerReport(EmulatorError):
    """A sanitizer build (``TTFD_EMU_SANITIZE``) reported a bug in the run: ``report`` is the sanitizer's text."""

    def __init__(self, sanitize: str, report: str):
        self.sanitize = sanitize
        self.report = report
        lines = [
            ln
            for ln in report.splitlines()
            if ln.startswith(("WARNING: ThreadSanitizer", "=="))
            and "ERROR" in ln
            or ln.startswith("WARNING: ThreadSanitizer")
        ]
        super().__init__(
            f"{sanitize} sanitizer report: " + (lines[0].strip() if lines else "see details"), details=report
        )
