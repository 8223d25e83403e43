"""The package's device ops, one folder each, laid out alike (as upstream lays out ``ttnn/operations/<op>``):

- ``api``: the public functions (upstream's names and arguments) and one call's run;
- ``validate``: every argument checked on the host, naming it, before anything runs;
- ``args``: the one Python definition of the kernels' arguments (named compile-time args, accessor offsets, runtime
  args in wire order, circular buffers);
- ``factory``: the ``ttnn.ProgramDescriptor``;
- ``kernels/{dataflow,compute}``: reader, compute and writer.

Shared by every op: ``descriptors`` (the descriptor parts: kernels, circular buffers, core ranges, the compute
configuration, compile-time and runtime args) and ``work_split`` (the one 1-D work split the cache ops, the tile
conversion and shared-prefix decode's merge use).
"""
