"""The package's device ops, one folder each, laid out alike (as upstream lays out ``ttnn/operations/<op>``):

- ``api``: the public functions (upstream's names and arguments) and one call's run;
- ``validate``: every argument checked on the host, naming it, before anything runs;
- ``args``: the one Python definition of the kernels' arguments (named compile-time args, accessor offsets, runtime
  args in wire order, circular buffers);
- ``factory``: the ``ttnn.ProgramDescriptor``;
- ``kernels/{dataflow,compute}``: reader, compute and writer.

``work_split`` is the one 1-D work split the cache ops and the tile conversion share.
"""
