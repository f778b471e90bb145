"""The "cuda" alias: code that says ``"cuda"`` runs on the simulated device and reads like CUDA.

Most user code and most upstream bugs say ``device="cuda"``, ``.cuda()`` or ``.to("cuda")``;
case pages should show the text those users saw. A TorchFunctionMode sits in front of every
torch call made by user code and

* maps ``"cuda"``/``"cuda:N"``/``torch.device("cuda")`` arguments to ``sim``/``sim:N``;
* answers ``.device`` with ``cuda:N``, ``.is_cuda`` with True and ``.type()`` with
  ``torch.cuda.FloatTensor`` for simulated tensors (``repr`` prints ``device='cuda:0'``);
* rewrites sim spellings in exceptions raised by PyTorch itself (``can't convert sim:0 ...``).

Code *inside* torch functions runs with the mode disabled (TorchFunctionMode semantics), so
PyTorch's internals keep seeing the real ``sim`` device and never call into CUDA. Python that
PyTorch calls back from in there on the user's behalf -- backward hooks,
``autograd.Function.backward``, saved-tensor hooks -- runs with the mode pushed again, as the
user's own code (see ``backward_mode``). The mode is pushed in every thread started while the
alias is on (worker threads, thread pools). What ``torch.cuda`` itself answers is
``_machine``'s job.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.overrides import _get_current_function_mode_stack as _mode_stack

from . import _backend, _origins
from ._fork import STATE as _FORK
from ._fork import lazy_init as _lazy_init
from ._naming import BACKEND, INVALID_ORDINAL, respell

Tensor = torch.Tensor
_DEVICE = Tensor.device
_IS_CUDA = Tensor.is_cuda
_is_compiling = torch.compiler.is_compiling
_REPR_FUNCS = {Tensor.__repr__, Tensor.__str__, Tensor.__format__}
_POSITIONAL_DEVICE = {Tensor.to, Tensor.pin_memory}
_SIM_REPR = re.compile(rf"device='{BACKEND}:(\d+)'")


def _to_sim(value: Any) -> Any:
    """Map a CUDA device spec to the simulated device; leave everything else alone.

    An index past the last simulated GPU raises CUDA's ``invalid device ordinal``. Naming the
    GPU is where PyTorch lazily initialises CUDA (its argument parser calls
    ``torch.cuda._lazy_init`` for a factory's ``device=`` and for ``Tensor.to``): in a process
    forked after its parent used CUDA that raises ``Cannot re-initialize CUDA in forked
    subprocess`` (see ``_fork``).
    """
    if isinstance(value, str):
        if value == "cuda" or value.startswith("cuda:"):
            value = torch.device(value)
        else:
            return value
    if isinstance(value, torch.device) and value.type == "cuda":
        if not _FORK.initialized:
            _lazy_init()
        if value.index is None:
            return torch.device(BACKEND)
        if value.index >= _backend.DEVICE_COUNT:
            raise torch.AcceleratorError(INVALID_ORDINAL)
        return torch.device(BACKEND, value.index)
    return value


def _to_cuda(device: torch.device) -> torch.device:
    if device.type == BACKEND:
        return torch.device("cuda", device.index if device.index is not None else 0)
    return device


def _on_stack() -> bool:
    return any(type(m) is CudaAlias for m in _mode_stack())


# A mode's handler runs its call with the mode popped (TorchFunctionMode semantics), so the
# Python that PyTorch calls back from in there would see ``sim:0`` tensors where a GPU shows
# ``cuda:0``: the autograd engine's hooks and ``autograd.Function.backward`` (FSDP's
# pre-backward check of the compute device), saved-tensor hooks (activation checkpointing).
# The alias is pushed again around them (the kernels they reach shed it, see ``_kernel``):
# around the engine when the handler below started the pass (``_patches``), around
# saved-tensor hooks that code under the alias pushed.
_TENSOR_BACKWARD = Tensor.backward
_AUTOGRAD_BACKWARD = torch.autograd.backward
_AUTOGRAD_GRAD = torch.autograd.grad
_backward = threading.local()


def backward_mode() -> CudaAlias | None:
    """The alias to push around the autograd engine now starting, or None (taken once).

    Set while the alias's handler runs ``loss.backward()``, ``torch.autograd.backward`` or
    ``torch.autograd.grad`` in this thread; a pass that PyTorch itself starts elsewhere
    (``torch.compile`` tracing its joint graph under its own modes) is left as it is.
    """
    mode = getattr(_backward, "mode", None)
    _backward.mode = None
    return mode


class CudaAlias(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True
        kwargs = kwargs or {}
        if func is _TENSOR_BACKWARD or func is _AUTOGRAD_BACKWARD or func is _AUTOGRAD_GRAD:
            previous = getattr(_backward, "mode", None)
            _backward.mode = self
            try:
                return func(*args, **kwargs)
            except Exception as e:
                _respell_exception(e)
                raise
            finally:
                _backward.mode = previous
        owner = getattr(func, "__self__", None)
        if owner is _DEVICE:
            return _to_cuda(func(*args, **kwargs))
        if owner is _IS_CUDA:
            t = args[0]
            return t.device.type in ("cuda", BACKEND)
        if func is Tensor.cuda:
            return _cuda_method(*args, **kwargs)
        if func is torch.device and len(args) == 1 and not kwargs and type(args[0]) is int:
            # a bare ordinal names the accelerator: on a CUDA machine torch.device(0) is cuda:0
            return torch.device("cuda", args[0])
        if func is Tensor.type:
            if len(args) == 1 and not kwargs:
                return respell(func(*args))
            return _legacy_type(func, args, kwargs)
        if "device" in kwargs:
            kwargs = dict(kwargs)
            kwargs["device"] = _to_sim(kwargs["device"])
        generator = kwargs.get("generator")
        if generator is not None:
            _check_sim_generator_target(generator, args, kwargs)
        if func in _POSITIONAL_DEVICE and args:
            # Tensor.to("cuda") / Tensor.to(torch.device("cuda"), ...): the device is positional
            args = tuple(_to_sim(a) for a in args)
        try:
            result = func(*args, **kwargs)
        except Exception as e:
            _respell_exception(e)
            raise
        if func in _REPR_FUNCS and isinstance(result, str):
            return _SIM_REPR.sub(r"device='cuda:\1'", result)
        if type(result) is Tensor and not _is_compiling():
            # where the program made it: the diagnosis asks (never while Dynamo traces this
            # handler: its fake tensors are not the program's, and the trace must not change)
            _origins.note(args, result)
        return result


def _legacy_type(func: Any, args: tuple, kwargs: dict) -> Any:
    """``x.type(torch.cuda.FloatTensor)`` / ``x.type("torch.cuda.FloatTensor")``: a move and a cast."""
    __tracebackhide__ = True
    target = args[1] if len(args) > 1 else kwargs.get("dtype")
    name = target if isinstance(target, str) else getattr(target, "__name__", None)
    module = "torch.cuda" if isinstance(target, str) else getattr(target, "__module__", None)
    if isinstance(target, str) and target.startswith("torch.cuda."):
        name = target.removeprefix("torch.cuda.")
    elif module != "torch.cuda" or isinstance(target, str):
        return func(*args, **kwargs)
    from ._cuda_api import _LEGACY

    dtype = _LEGACY.get(name or "")
    if dtype is None:
        return func(*args, **kwargs)
    with torch._C.DisableTorchFunction():
        return args[0].to(torch.device(BACKEND, _backend.current_index()), dtype,
                          non_blocking=kwargs.get("non_blocking", False))


def _cuda_method(self: Tensor, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Tensor:
    """``Tensor.cuda(device=None)``: the current simulated device, or the one given."""
    __tracebackhide__ = True
    if not _FORK.initialized:
        _lazy_init()
    if device is None:
        from ._backend import current_index

        target = torch.device(BACKEND, current_index())
    elif isinstance(device, int):
        target = _to_sim(torch.device("cuda", device))
    else:
        target = _to_sim(torch.device(device) if isinstance(device, str) else device)
    return self.to(target, non_blocking=non_blocking, **kwargs)


def _check_sim_generator_target(generator: Any, args: tuple, kwargs: dict) -> None:
    """A CUDA generator given to a CPU op: CUDA's CPU kernels reject it, so must the simulator.

    (The reverse -- a CPU generator for a device op -- is checked by the kernel itself.)
    """
    __tracebackhide__ = True
    from ._kernel import SIM_GENERATORS

    if getattr(generator, "_cdata", None) not in SIM_GENERATORS:
        return
    device = kwargs.get("device")
    if device is None:
        first = next((a for a in args if isinstance(a, Tensor)), None)
        if first is not None:
            with torch._C.DisableTorchFunction():
                device = first.device
        else:
            # read with the mode stack in place: torch.set_default_device("cuda") is a mode
            # (DeviceContext), invisible under DisableTorchFunction
            device = torch.get_default_device()
    if torch.device(device).type == "cpu":
        raise RuntimeError("Expected a 'cpu' device type for generator but found 'cuda'")


def _respell_exception(e: BaseException) -> None:
    if e.args and isinstance(e.args[0], str):
        new = respell(e.args[0])
        if new != e.args[0]:
            e.args = (new, *e.args[1:])


_mode: CudaAlias | None = None


_serialization_registered = False


def enable() -> None:
    """Push the alias mode for this thread (once) and every thread started from now on, and
    make checkpoints say "cuda"."""
    global _mode, _serialization_registered
    if _mode is None:
        _mode = CudaAlias()
        _mode.__enter__()
    if not _serialization_registered:
        _register_serialization()
        _respell_fake_tensor_errors()
        _saved_tensor_hooks_under_alias()
        _origins.follow_from_numpy()
        _serialization_registered = True
    _follow_threads()


def _follow_threads() -> None:
    from . import _threads

    _threads.follow(lambda: CudaAlias() if _mode is not None else None)


def _under_alias(hook: Any) -> Any:
    def run(value: Any) -> Any:
        if _on_stack():
            return hook(value)
        with CudaAlias():
            return hook(value)

    return run


def _saved_tensor_hooks_under_alias() -> None:
    """Pack and unpack hooks pushed under the alias run under it.

    PyTorch calls a pack hook from inside the op that saves a tensor and an unpack hook from
    the backward that needs it: both past the alias's handler. Non-reentrant checkpointing
    compares what its pack hooks saw (``x.device``) with what it sees when recomputing in
    backward, under the alias: both must say ``cuda:0``, as on a GPU.
    """
    hooks = torch.autograd.graph.saved_tensors_hooks
    if getattr(hooks.__enter__, "_samedevice", False):
        return

    def __enter__(self: Any) -> None:
        pack, unpack = self.pack_hook, self.unpack_hook
        if _mode is not None and _on_stack():
            pack, unpack = _under_alias(pack), _under_alias(unpack)
        torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)

    __enter__._samedevice = True  # type: ignore[attr-defined]
    hooks.__enter__ = __enter__  # type: ignore[method-assign]


def _respell_fake_tensor_errors() -> None:
    """``torch.compile`` reports a device mismatch found while tracing with fake tensors.

    Dynamo turns ``FakeTensorDeviceMismatchError`` into graph break GB5173 and quotes its text
    ("... found at least two devices, cpu and cuda:0!"); the exception is made deep inside
    tracing, outside the alias mode's reach, so its message is respelled where it is built.
    """
    from torch._subclasses.fake_tensor import FakeTensorDeviceMismatchError

    original = FakeTensorDeviceMismatchError.__init__
    if getattr(original, "_samedevice", False):
        return

    def __init__(self: FakeTensorDeviceMismatchError, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _respell_exception(self)

    __init__._samedevice = True  # type: ignore[attr-defined]
    FakeTensorDeviceMismatchError.__init__ = __init__  # type: ignore[method-assign]


def disable() -> None:
    global _mode
    if _mode is not None:
        _mode.__exit__(None, None, None)
        _mode = None


def _register_serialization() -> None:
    """Save simulated storages as ``cuda:N`` and restore ``cuda:N`` ones to the sim device.

    Under the alias a checkpoint written by a snippet reads like one written on a GPU, and
    loading a CUDA checkpoint (``map_location="cuda"`` or none) lands on the simulated device,
    as it would on a GPU machine.
    """
    from ._naming import SPELLING

    def tagger(storage: Any) -> str | None:
        if SPELLING.alias_cuda and storage.device.type == BACKEND:
            return f"cuda:{storage.device.index or 0}"
        return None

    def deserializer(obj: Any, location: str) -> Any:
        if not (SPELLING.alias_cuda and location.startswith("cuda")):
            return None
        _check_deserialize_index(location)
        device = _to_sim(location)
        if getattr(obj, "_torch_load_uninitialized", False):
            return torch.empty(obj.nbytes(), dtype=torch.uint8, device=device).untyped_storage()
        return obj.to(device=device)

    torch.serialization.register_package(15, tagger, deserializer)


def _check_deserialize_index(location: str) -> None:
    """CUDA's check before restoring a storage (torch/serialization.py, ``_validate_device``).

    A checkpoint saved on ``cuda:1`` and loaded without ``map_location`` on a machine with
    fewer GPUs fails there with this text, before any storage is created; the sim device would
    otherwise raise its own invalid-ordinal error. Runs once per storage in ``torch.load`` only.
    """
    from . import _backend

    index = torch.device(location).index or 0
    if index >= _backend.DEVICE_COUNT:
        raise RuntimeError(
            f"Attempting to deserialize object on CUDA device {index} but "
            f"torch.cuda.device_count() is {_backend.DEVICE_COUNT}. Please use torch.load with "
            "map_location to map your storages to an existing device."
        )
