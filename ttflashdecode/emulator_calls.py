"""ttnn's own functions meeting emulator tensors, while :func:`ttflashdecode.patch_ttnn` is active.

ttnn's ops are C++ bindings: given an emulator tensor (:class:`ttemu.EmuTensor`) they fail with a
binding ``TypeError`` that never mentions the emulator. While patched:

* the calls a decode step makes besides the ops route to the emulator when they meet an emulator tensor or device:

  ===============================================================  ==============================================
  ttnn                                                             emulator
  ===============================================================  ==============================================
  ``ttnn.from_torch(x, dtype, layout=, device=emu, memory_config=,  ``emu.from_torch(x, dtype, layout,
  mesh_mapper=)``                                                  memory_config[, mesh_mapper])`` (ttnn's default
                                                                   layout, ROW_MAJOR, kept)
  ``ttnn.to_torch(t, dtype=, mesh_composer=)``                     ``t.device().to_torch(t[, mesh_composer])``
  ``ttnn.deallocate(t)``                                           ``t.deallocate()``
  ``ttnn.to_memory_config(t, memory_config, dtype=)``              ``t`` itself when nothing changes, else a copy
                                                                   through the host (one chip's tensors)
  ``ttnn.copy_host_to_device_tensor(host, t)``                     ``t.device().write(t, ttnn.to_torch(host))``
  ``ttnn.ReplicateTensorToMesh`` / ``ShardTensorToMesh`` /         the emulator's mappers, for an emulated mesh
  ``ConcatMeshToTensor(mesh, ...)``, ``ShardTensor2dMesh`` /
  ``ConcatMesh2dToTensor(mesh, mesh_shape, dims)``
  ===============================================================  ==============================================

* every other function of ``ttnn``, ``ttnn.experimental`` and ``ttnn.transformer`` that fails on an emulator tensor or
  device raises :class:`EmulatorTensorError` (a ``TypeError``) saying so and naming the emulator's methods instead.
  A call without emulator objects goes to ttnn unchanged (on a card nothing differs).
"""

from __future__ import annotations

import functools

import torch

from ttflashdecode.backend import emulator, import_ttnn

NAMESPACES = ("", "experimental", "transformer")  # ttnn, ttnn.experimental, ttnn.transformer
EMULATOR_METHODS = (
    "device.from_torch(x, dtype=, layout=, memory_config=), device.to_torch(t), device.write(t, x) "
    "(ttnn.copy_host_to_device_tensor), t.deallocate()"
)


class EmulatorTensorError(TypeError):
    """A ttnn function was given an emulator tensor or device it cannot take."""


def _emulator_types() -> tuple[type, ...]:
    ttemu = emulator()

    return (ttemu.EmuTensor, ttemu.EmuMeshTensor, ttemu.EmuDevice, ttemu.EmuMeshDevice)


def emulator_object(args, kwargs):
    """The first emulator tensor or device among a call's arguments (one level into lists and tuples), or None."""
    kinds = _emulator_types()
    for value in (*args, *kwargs.values()):
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, kinds):
                return item
    return None


def _is_device(obj) -> bool:
    ttemu = emulator()

    return isinstance(obj, (ttemu.EmuDevice, ttemu.EmuMeshDevice))


def refusal(name: str, found) -> EmulatorTensorError:
    what = "device" if _is_device(found) else "tensor"
    return EmulatorTensorError(
        f"ttnn.{name} was given an emulator {what} ({type(found).__name__}); ttnn's own ops run on a Tenstorrent "
        f"device only. On the emulator use its methods: {EMULATOR_METHODS}, or compute on the host with torch "
        "(ttflashdecode's ops take emulator tensors directly)"
    )


def guarded(name: str, original):
    """``original`` that, when it fails on a call holding an emulator object, raises :func:`refusal` instead."""

    @functools.wraps(original)
    def call(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except Exception as error:
            found = emulator_object(args, kwargs)
            if found is None:
                raise
            raise refusal(name, found) from error

    call.__wrapped_ttnn__ = original
    return call


# ---- the calls routed to the emulator ------------------------------------------------------------------------------


def _routed(name: str, original, emulated):
    """``original`` (:func:`guarded`) unless ``emulated(*args, **kwargs)`` takes the call (it returns NotImplemented
    otherwise)."""
    fallback = guarded(name, original)

    @functools.wraps(original)
    def call(*args, **kwargs):
        result = emulated(*args, **kwargs)
        if result is not NotImplemented:
            return result
        return fallback(*args, **kwargs)

    call.__wrapped_ttnn__ = original
    return call


def _from_torch(tensor=None, dtype=None, *, layout=None, device=None, memory_config=None, mesh_mapper=None, **rest):
    if device is None or not _is_device(device):
        return NotImplemented
    unsupported = sorted(k for k, v in rest.items() if v not in (None, False))
    if unsupported:
        raise EmulatorTensorError(
            f"ttnn.from_torch(device=<emulator device>): {', '.join(unsupported)} not supported "
            "on the emulator; expected dtype, layout, memory_config, mesh_mapper"
        )
    options = dict(dtype=dtype, layout=layout, memory_config=memory_config)  # the device's defaults are ttnn's
    if mesh_mapper is not None:
        options["mesh_mapper"] = mesh_mapper
    return device.from_torch(tensor, **options)


def _to_torch(tensor=None, dtype=None, *, mesh_composer=None, **rest):
    ttemu = emulator()

    if isinstance(tensor, ttemu.EmuMeshTensor):
        host = tensor.device().to_torch(tensor, mesh_composer=mesh_composer)
    elif isinstance(tensor, ttemu.EmuTensor):
        host = tensor.device().to_torch(tensor)
    else:
        return NotImplemented
    return host if dtype is None else host.to(dtype)


def _deallocate(tensor=None, force=True):
    if emulator_object((tensor,), {}) is None:
        return NotImplemented
    tensor.deallocate()
    return None


def _to_memory_config(tensor=None, memory_config=None, dtype=None, **rest):
    ttemu = emulator()

    if not isinstance(tensor, (ttemu.EmuTensor, ttemu.EmuMeshTensor)):
        return NotImplemented
    same_dtype = dtype is None or dtype == tensor.dtype
    if same_dtype and str(memory_config) == str(tensor.memory_config()):
        return tensor  # as ttnn: nothing to move
    if isinstance(tensor, ttemu.EmuMeshTensor):
        raise refusal("to_memory_config", tensor)
    device = tensor.device()
    return device.from_torch(
        device.to_torch(tensor),
        dtype=tensor.dtype if same_dtype else dtype,
        layout=tensor.layout,
        memory_config=memory_config,
    )


def _copy_host_to_device_tensor(host_tensor=None, device_tensor=None, cq_id=None):
    ttemu = emulator()

    if not isinstance(device_tensor, (ttemu.EmuTensor, ttemu.EmuMeshTensor)):
        return NotImplemented
    values = host_tensor if isinstance(host_tensor, torch.Tensor) else import_ttnn().to_torch(host_tensor)
    device_tensor.device().write(device_tensor, values.reshape(tuple(int(d) for d in device_tensor.shape)))
    return None


def _mapper(name: str):
    def emulated(mesh_device=None, *args, **kwargs):
        ttemu = emulator()

        if not isinstance(mesh_device, ttemu.EmuMeshDevice):
            return NotImplemented
        return getattr(ttemu, name)(mesh_device, *args, **kwargs)

    return emulated


ROUTED = {
    "from_torch": _from_torch,
    "to_torch": _to_torch,
    "deallocate": _deallocate,
    "to_memory_config": _to_memory_config,
    "copy_host_to_device_tensor": _copy_host_to_device_tensor,
    "ReplicateTensorToMesh": _mapper("ReplicateTensorToMesh"),
    "ShardTensorToMesh": _mapper("ShardTensorToMesh"),
    "ConcatMeshToTensor": _mapper("ConcatMeshToTensor"),
    "ShardTensor2dMesh": _mapper("ShardTensor2dMesh"),
    "ConcatMesh2dToTensor": _mapper("ConcatMesh2dToTensor"),
}


def _is_function(obj) -> bool:
    """ttnn's ops and functions (not classes, enums, modules or values)."""
    if isinstance(obj, type) or not callable(obj):
        return False
    kind = type(obj).__name__
    return kind in ("FastOperation", "Operation", "nb_func", "function", "builtin_function_or_method")


def replacements(skip: set[tuple[str, str]]) -> dict[tuple[str, str], object]:
    """(namespace, name) -> the function installed while patched, for every function of :data:`NAMESPACES` not in
    ``skip`` (the ops :mod:`ttflashdecode.ttnn_patch` routes to this package)."""
    ttnn = import_ttnn()
    table = {}
    for namespace in NAMESPACES:
        owner = getattr(ttnn, namespace) if namespace else ttnn
        for name in dir(owner):
            if name.startswith("_") or (namespace, name) in skip:
                continue
            original = getattr(owner, name, None)
            if not _is_function(original) or hasattr(original, "__wrapped_ttnn__"):
                continue
            if namespace == "" and name in ROUTED:
                table[(namespace, name)] = _routed(name, original, ROUTED[name])
            else:
                table[(namespace, name)] = guarded(f"{namespace + '.' if namespace else ''}{name}", original)
    return table


__all__ = ["EmulatorTensorError", "replacements", "guarded", "refusal", "emulator_object"]
