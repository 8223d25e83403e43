"""Launching the wheel's Metal 2.0 (ProgramSpec) kernels from a ttnn ProgramDescriptor.

Upstream's current reduce, softmax and bcast factories build a ``ProgramSpec``: each kernel names its arguments
(``args::Ht``), its dataflow buffers (``dfb::in0``) and its tensors (``tensor::src``), and tt-metal's JIT
(genfiles.cpp) emits two headers per kernel, ``kernel_bindings_generated.h`` and ``kernel_args_generated.h``, that
define those names before the kernel source is compiled. ttnn's ``ProgramDescriptor`` has no field for such a spec, so
this module plays the JIT's part for the conformance suite: it writes the two headers' definitions ahead of an
``#include`` of the unmodified wheel source (a SOURCE_CODE kernel, the way tt-metal's firmware wrapper includes the
generated headers and then the kernel) and lays the arguments out in the descriptor as the definitions say:

- ``args::`` compile-time args are ``experimental::CtaVal<uint32_t>{value}``, runtime args
  ``experimental::RtaArg<uint32_t>{byte offset}`` into the core's runtime args, in the order the spec names them;
- ``dfb::`` names are ``DFBBindingToken<>{cb index}`` (on Wormhole a dataflow buffer is a circular buffer);
- ``tensor::`` names are ``tensor_accessor::TensorBindingToken<cta offset, crta byte offset>``: the tensor's
  ``TensorAccessorArgs`` at that offset of the compile-time args, its base address in that common runtime arg.

The layout is this module's choice (any layout the headers and the args agree on is what the JIT produces); what the
kernel computes comes only from its source and the emulator's kernel API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ttemu.jit_env import kernel_source


@dataclass
class Metal2Kernel:
    """One kernel of a ProgramSpec: its wheel source and the names it binds."""

    source: str  # below ttnn/cpp, as the factory names it
    cores: object  # ttnn.CoreRangeSet
    config: object  # Reader/Writer/ComputeConfigDescriptor
    dfbs: dict[str, int] = field(default_factory=dict)  # accessor name -> CB index
    tensors: dict[str, object] = field(default_factory=dict)  # accessor name -> device tensor
    ct_args: dict[str, int] = field(default_factory=dict)  # args:: compile-time values
    rta_names: tuple[str, ...] = ()  # args:: runtime args, in schema order
    rt_args: list = field(default_factory=list)  # [(CoreCoord, {name: value})]
    defines: dict[str, str] = field(default_factory=dict)
    ct_varargs: tuple[int, ...] = ()  # compile-time varargs (after the tensors' TensorAccessorArgs)


def _headers(k: Metal2Kernel, tensor_offsets: dict[str, tuple[int, int]]) -> str:
    out = [
        '#include "api/dataflow/dfb_binding_token.h"',
        '#include "api/tensor/tensor_binding_token.h"',
        '#include "api/dataflow/dataflow_buffer.h"',
        '#include "experimental/kernel_args.h"',
    ]
    if k.dfbs:
        out += ["namespace dfb {"] + [f"constexpr DFBBindingToken<> {n}{{{i}}};" for n, i in k.dfbs.items()]
        out += ["}  // namespace dfb"]
    if k.tensors:
        out.append("namespace tensor {")
        for n, (cta, crta) in tensor_offsets.items():
            out += [
                f"using {n}_t = ::tensor_accessor::TensorBindingToken<{cta}u, {crta}u>;",
                f"constexpr {n}_t {n}{{binding_details::LLKMetadata{{}}}};",
            ]
        out.append("}  // namespace tensor")
    out.append("namespace args {")
    out += [f"constexpr experimental::CtaVal<uint32_t> {n}{{{int(v) & 0xFFFFFFFF}u}};" for n, v in k.ct_args.items()]
    out += [f"constexpr experimental::RtaArg<uint32_t> {n}{{{4 * i}u}};" for i, n in enumerate(k.rta_names)]
    out.append("}  // namespace args")
    nrta = len(k.rta_names)
    out += [
        f"FORCE_INLINE uint32_t get_vararg(uint32_t idx) {{ return get_arg_val<uint32_t>({nrta} + idx); }}",
        "FORCE_INLINE uint32_t get_common_vararg(uint32_t idx) { return get_common_arg_val<uint32_t>(idx); }",
    ]
    return "\n".join(out)


def kernel_descriptor(ttnn, k: Metal2Kernel):
    """A SOURCE_CODE KernelDescriptor: the generated binding definitions, then the unmodified wheel source."""
    ct, crta, offsets = [], [], {}
    for name, t in k.tensors.items():
        offsets[name] = (len(ct), 4 * len(crta))
        ct += list(t.tensor_accessor_args())
        crta.append(t.buffer_address())
    ct += list(k.ct_varargs)
    path = kernel_source(k.source)
    code = (
        f"// Metal 2.0 bindings for {k.source}, as tt-metal's JIT emits them (ttemu/tests/conformance/metal2.py)\n"
        f'{_headers(k, offsets)}\n#include "{path}"\n'
    )
    rt = [(c, [int(vals[n]) for n in k.rta_names]) for c, vals in k.rt_args]
    desc = ttnn.KernelDescriptor(
        kernel_source=code,
        source_type=ttnn.KernelDescriptor.SourceType.SOURCE_CODE,
        core_ranges=k.cores,
        compile_time_args=ct,
        defines=list(k.defines.items()),
        runtime_args=rt,
        common_runtime_args=crta,
        config=k.config,
    )
    return desc
