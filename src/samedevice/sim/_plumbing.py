"""Moving between a simulated-accelerator tensor and the CPU tensor that holds its data.

Every ``sim`` tensor's storage points at ordinary host memory. The trick that makes this cheap
is DLPack: ``torch._C._to_dlpack`` exports a tensor as a capsule naming its device; flipping
the capsule's device field between ``kDLCPU`` and ``kDLExtDev`` (which PyTorch maps to the
PrivateUse1 backend) and importing it again yields a tensor of the other device over the same
bytes, with the right sizes, strides and dtype, for about 2 microseconds.

Lifetime comes for free: the imported tensor's deleter holds the exported one, so a ``sim``
tensor keeps its CPU memory alive and a CPU view keeps its ``sim`` tensor alive. Because
``data_ptr()`` is real, ``torch.save``, ``storage.cpu()`` and ``data_ptr``-based identity
checks behave as on a real device. Any device index works (``sim:1`` as well as ``sim:0``).
"""

from __future__ import annotations

import ctypes
import os

import torch

from ._memory import TRACKER

_DL_CPU = 1
_DL_EXT_DEV = 12  # DLPack's "extension device": PyTorch maps it to PrivateUse1

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
# DLManagedTensor starts with DLTensor {void* data; DLDevice {int32 type; int32 id}; ...}:
# both fields are written at once as one little-endian int64.
_DEVICE_FIELD = ctypes.c_int64
_DEVICE_OFFSET = ctypes.sizeof(ctypes.c_void_p)
assert ctypes.sizeof(ctypes.c_int32) * 2 == ctypes.sizeof(_DEVICE_FIELD)

_to_dlpack = torch._C._to_dlpack
_from_dlpack = torch._C._from_dlpack


def _capsule_pointer_offset() -> int | None:
    """Where a PyCapsule object keeps its pointer (right after the object header in CPython's
    ``PyCapsule`` struct), checked against ``PyCapsule_GetPointer``; None if it is elsewhere."""
    capsule = _to_dlpack(torch.zeros(1))
    expected = _capsule_pointer(capsule, b"dltensor")
    offset = object.__basicsize__  # sizeof(PyObject)
    found = ctypes.c_void_p.from_address(id(capsule) + offset).value
    return offset if found == expected else None


# Reading the capsule's pointer field directly saves a foreign-function call (about a fifth of
# a retarget, which every op pays for each tensor it touches).
_POINTER_OFFSET = _capsule_pointer_offset()
_POINTER = ctypes.c_void_p


def _retarget(tensor: torch.Tensor, device_type: int, index: int) -> torch.Tensor:
    capsule = _to_dlpack(tensor)
    if _POINTER_OFFSET is not None:
        address = _POINTER.from_address(id(capsule) + _POINTER_OFFSET).value + _DEVICE_OFFSET
    else:
        address = _capsule_pointer(capsule, b"dltensor") + _DEVICE_OFFSET
    _DEVICE_FIELD.from_address(address).value = device_type | (index << 32)
    return _from_dlpack(capsule)


def to_cpu(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor sharing ``t``'s memory and geometry (``t`` is a sim tensor)."""
    if _POINTER_OFFSET is None:
        return _retarget(t, _DL_CPU, 0)
    # _retarget, inlined: every op calls this for each of its tensors
    capsule = _to_dlpack(t)
    address = _POINTER.from_address(id(capsule) + _POINTER_OFFSET).value + _DEVICE_OFFSET
    _DEVICE_FIELD.from_address(address).value = _DL_CPU
    return _from_dlpack(capsule)


class _Usage:
    """How many sim tensors were made: a run that made none never used the accelerator."""

    created = 0


USAGE = _Usage()


def _first_use() -> None:
    """Tell the runner at once that this process used the GPU. Its count is written at exit, but
    a program that ends in ``os._exit`` (or a forked worker, which always does) runs no exit
    handler, and would read as a run that never touched the GPU."""
    usage_dir = os.environ.get("SAMEDEVICE_USAGE_DIR")
    if usage_dir:
        try:
            with open(os.path.join(usage_dir, f"usage-{os.getpid()}"), "w") as f:
                f.write("1")
        except OSError:
            pass  # the runner has finished and removed its folder: nobody is counting


def from_cpu(c: torch.Tensor, index: int) -> torch.Tensor:
    """A ``sim:index`` tensor sharing the CPU tensor ``c``'s memory and geometry."""
    if not USAGE.created:
        _first_use()
    USAGE.created += 1
    if TRACKER.on:
        TRACKER.add(c, index)
    return _retarget(c, _DL_EXT_DEV, index)


_META = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)
_set_storage = torch.ops.aten.set_.source_Storage_storage_offset._handle.redispatch_boxed
_as_strided_ = torch.ops.aten.as_strided_.default._handle.redispatch_boxed


def set_geometry(t: torch.Tensor, size, stride, offset: int) -> None:
    """Change a sim tensor's sizes, strides and offset in place (metadata only)."""
    _as_strided_(_META, t, size, stride, offset)


def set_storage(t: torch.Tensor, storage: torch.UntypedStorage, offset: int, size, stride) -> None:
    """Point a sim tensor at another sim storage, as ``Tensor.set_`` does.

    The Meta kernel of ``set_`` only touches metadata, which is all a sim tensor needs, but it
    insists on a resizable storage whenever the new size has elements; DLPack storages are not
    resizable. Setting an empty geometry first and the real one afterwards sidesteps that,
    while ``as_strided_`` still checks the geometry against the storage's size.
    """
    _set_storage(_META, t, storage, 0, [0], [1])
    _as_strided_(_META, t, size, stride, offset)


def repoint(t: torch.Tensor, c: torch.Tensor) -> None:
    """Make sim tensor ``t`` hold CPU tensor ``c``'s memory and geometry (after a resize)."""
    fresh = from_cpu(c, t.get_device())
    set_storage(t, fresh.untyped_storage(), 0, c.shape, c.stride())


def is_sim(t: torch.Tensor) -> bool:
    """True for a tensor on the simulated device (cheaper than comparing ``t.device``)."""
    return t.get_device() >= 0 and not t.is_cuda
