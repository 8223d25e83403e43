"""Decode attention (FlashDecode): a few new query tokens per user against a KV cache.

Parts as every op's (:mod:`ttflashdecode.ops`), and the run machinery decode adds:

- ``api``: the public functions (upstream's names and arguments) and one call's way through the wrapper;
- ``request``: a call's arguments as one object, checked in the order the entry points check them;
- ``validate``: decode's own host checks (the checks every op shares are :mod:`ttflashdecode.checks`);
- ``wrapper``: :class:`~ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper`, plan once and run per layer and step;
- ``fast_path``: a repeated call's signature and what it launches again;
- ``args``: the one Python definition of the kernels' arguments;
- ``factory``: the ``ttnn.ProgramDescriptor``;
- ``kernels/{dataflow,compute}``: reader, compute and writer.

The planner is :mod:`ttflashdecode.plan` (pure: shapes and a config in, a plan out). Nothing is imported here, so
importing one part (the cache ops import ``args`` and ``factory``) does not import the run machinery.
"""
