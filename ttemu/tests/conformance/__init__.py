"""Conformance suite: Tenstorrent's own kernel sources from the installed ttnn wheel (``jit_env.kernel_source``, never
copied) run on the emulator from ProgramDescriptors built the way upstream's program factories build them
(``factories.py``), compared against torch and against silicon results tt-metal issues publish. The ``ttnn`` and
``emu_device`` fixtures and the seed reporting are ttemu/tests/fixtures.py's."""
