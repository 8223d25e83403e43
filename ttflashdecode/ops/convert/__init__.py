"""The tile format conversion (a staging bfloat16 / float32 tensor packed into a block-float output): ``factory``
(the program descriptor) and ``kernels/`` (reader, compute, writer). It has no public function of its own: the decode
launches it after its own program when the output is bfloat8_b (:mod:`ttflashdecode.ops.convert.factory` says why)."""
