"""Python-level PyTorch entry points that need to know about the simulated device.

* ``torch.accelerator.synchronize`` / memory functions reach C++ paths a Python backend
  cannot implement (no stream sync, no caching allocator): answered here as on an idle device.
* ``torch.accelerator`` device-index functions: the Python device guard always reports
  device 0, so the current index is kept here and followed by factories (``device="cuda"``).
* Generators: ``torch.Generator(device="sim")`` needs a C++ ``getNewGenerator`` hook. A sim
  generator is a CPU generator (numbers equal a CPU run's) that the kernel recognises by its
  C++ identity, so sampling ops reject an unmarked CPU generator exactly where CUDA does.
* ``torch.compile``: Inductor has no code generator for the device; compile with
  ``aot_eager`` (real tracing through Dynamo and AOTAutograd) and say so once.
* ``torch.nn.DataParallel``: its scatter/gather/broadcast are C++ functions built only with
  CUDA; Python versions over ``Tensor.to`` serve the simulated devices.
* What a build says that a CUDA machine never does: an RNN on the device asks
  ``torch.backends.cudnn.is_acceptable``, which warns "compiled without cuDNN" on the CPU
  wheel and, on a CUDA wheel, sends ``flatten_parameters`` to ``_cudnn_rnn_flatten_weight``,
  which has no kernel for the simulated device; it answers False for the simulated device on
  every build (the RNN takes the generic path, silently), and
  ``torch.utils.flop_counter`` logs "triton not found" once ``torch.version.cuda`` is set.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import _accelerator, _backend, _kernel, _warnings
from ._naming import BACKEND, SPELLING


def _sim_current() -> bool:
    acc = torch._C._accelerator_getAccelerator()  # PyTorch's own answer, whoever asks
    return acc is not None and acc.type == BACKEND


def _wrap(module: Any, name: str, replacement: Callable[..., Any]) -> None:
    """Route ``module.name`` to ``replacement`` while the simulated device is the accelerator.

    The replacement runs with torch-function handling off: it is simulator plumbing, and the
    CUDA alias must not rename devices under it.
    """
    original = getattr(module, name, None)
    if original is None or getattr(original, "_samedevice", False):
        return

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if _sim_current():
            with torch._C.DisableTorchFunction():
                return replacement(*args, **kwargs)
        return original(*args, **kwargs)

    wrapper._samedevice = True  # type: ignore[attr-defined]
    setattr(module, name, wrapper)


def _patch_accelerator() -> None:
    acc = torch.accelerator
    _wrap(acc, "synchronize", lambda device=None: None)
    # Memory statistics: the simulated GPUs' tracker (see _memory), as torch.cuda reports them.
    from ._memory import TRACKER

    def _idx(device_index: Any = None) -> int:
        return _backend.current_index() if device_index is None else torch._utils._get_device_index(device_index, optional=True)

    _wrap(acc, "memory_allocated", lambda device_index=None: TRACKER.read("allocated", _idx(device_index)))
    _wrap(acc, "max_memory_allocated", lambda device_index=None: TRACKER.read("peak", _idx(device_index)))
    _wrap(acc, "memory_reserved", lambda device_index=None: TRACKER.read("reserved", _idx(device_index)))
    _wrap(acc, "max_memory_reserved", lambda device_index=None: TRACKER.read("peak_reserved", _idx(device_index)))
    _wrap(acc, "empty_cache", lambda *a, **k: TRACKER.empty_cache())
    _wrap(acc, "reset_peak_memory_stats", lambda device_index=None: TRACKER.reset_peak(_idx(device_index)))
    _wrap(acc, "reset_accumulated_memory_stats", lambda *a, **k: None)
    _wrap(acc, "memory_stats", lambda device_index=None: TRACKER.stats(_idx(device_index)))
    _wrap(acc, "current_device_index", _backend.current_index)
    original_set = acc.set_device_index

    def set_device_index(device: Any, /) -> None:
        index = torch._utils._get_device_index(device, optional=True)
        if index >= 0:
            _backend._set_index(index)
        original_set(device)

    _wrap(acc, "set_device_index", set_device_index)
    _wrap(acc, "set_device_idx", set_device_index)

    _wrap(acc, "device_index", _accelerator.DeviceIndex)


# -- generators ----------------------------------------------------------------------------------

_CGenerator = torch._C.Generator


class _GeneratorMeta(type(_CGenerator)):  # type: ignore[misc]
    """Keep ``isinstance(torch.default_generator, torch.Generator)`` true after the swap."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _CGenerator)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _CGenerator)


class Generator(_CGenerator, metaclass=_GeneratorMeta):
    """``torch.Generator`` that also accepts the simulated device (and, under the alias, "cuda")."""

    def __new__(cls, device: Any = None) -> Any:
        target = _sim_device(device)
        if target is None:
            return _CGenerator.__new__(cls, device=device) if device is not None else _CGenerator.__new__(cls)
        gen = _CGenerator.__new__(cls)
        gen._sim_device = target
        key = gen._cdata
        _kernel.SIM_GENERATORS[key] = target
        weakref.finalize(gen, _kernel.SIM_GENERATORS.pop, key, None)
        return gen

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        target = getattr(self, "_sim_device", None)
        if target is None:
            return _CGenerator.device.__get__(self)
        if SPELLING.alias_cuda:
            return torch.device("cuda", target.index)
        return target


def _sim_device(device: Any) -> torch.device | None:
    if device is None:
        return None
    d = torch.device(device) if isinstance(device, (str, int)) and not isinstance(device, bool) else device
    if isinstance(d, int):
        d = torch.device(BACKEND, d)
    if not isinstance(d, torch.device):
        return None
    if (d.type == "cuda" and SPELLING.alias_cuda) or d.type == BACKEND:
        return torch.device(BACKEND, d.index if d.index is not None else _backend.current_index())
    return None


def _patch_generator() -> None:
    if torch.Generator is not Generator:
        torch.Generator = Generator  # type: ignore[misc]


# -- torch.compile ------------------------------------------------------------------------------

_compile_warned = False


def _patch_compile() -> None:
    original = torch.compile
    if getattr(original, "_samedevice", False):
        return

    @functools.wraps(original)
    def compile(model: Any = None, *args: Any, backend: Any = "inductor", **kwargs: Any) -> Any:
        global _compile_warned
        if backend == "inductor":
            backend = "aot_eager"
            if not _compile_warned:
                _compile_warned = True
                warnings.warn(
                    "samedevice.sim: Inductor cannot generate code for the simulated accelerator; "
                    "torch.compile uses backend='aot_eager' (Dynamo + AOTAutograd, eager kernels).",
                    UserWarning,
                    stacklevel=2,
                )
        hide_simulator_in_dynamo_stacks()
        return original(model, *args, backend=backend, **kwargs)

    compile._samedevice = True  # type: ignore[attr-defined]
    torch.compile = compile


def hide_simulator_in_dynamo_stacks() -> None:
    """Dynamo quotes the traced user stack ("from user code:") in its errors; the alias's
    ``__torch_function__`` is traced too, and a CUDA user's stack has no such frame."""
    import traceback

    from torch._dynamo import exc

    original = exc.get_real_stack
    if getattr(original, "_samedevice", False):
        return

    def get_real_stack(e: Exception, frame: Any = None) -> Any:
        stack = original(e, frame)
        if stack is None:
            return None
        return traceback.StackSummary.from_list(
            [f for f in stack if "/samedevice/" not in f.filename.replace("\\", "/")])

    get_real_stack._samedevice = True  # type: ignore[attr-defined]
    exc.get_real_stack = get_real_stack


# -- DataParallel -------------------------------------------------------------------------------


def _as_device(d: Any) -> torch.device:
    if isinstance(d, torch.device):
        return d
    if isinstance(d, int):
        return torch.device("cpu") if d == -1 else torch.device(BACKEND, d)
    return torch.device(d)


def _broadcast(tensor: torch.Tensor, devices: Sequence[Any] | None = None, *, out: Any = None) -> Any:
    if out is not None:
        for o in out:
            o.copy_(tensor)
        return tuple(out)
    return tuple(tensor.to(_as_device(d)) for d in devices or ())


def _broadcast_coalesced(tensors: Sequence[torch.Tensor], devices: Sequence[Any], buffer_size: int = 10485760) -> list:
    out = []
    for d in devices:
        dev = _as_device(d)
        out.append([t if t.device == dev else t.to(dev) for t in tensors])
    return out


def _reduce_add(inputs: Sequence[torch.Tensor], destination: Any = None) -> torch.Tensor:
    dest = _as_device(destination if destination is not None else _backend.current_index())
    total = inputs[0].to(dest, copy=True)
    for t in inputs[1:]:
        total.add_(t.to(dest))
    return total


def _reduce_add_coalesced(inputs: Sequence[Sequence[torch.Tensor]], destination: Any = None, buffer_size: int = 10485760) -> list:
    return [_reduce_add([group[i] for group in inputs], destination) for i in range(len(inputs[0]))]


def _scatter(tensor: torch.Tensor, devices: Sequence[Any] | None = None, chunk_sizes: Any = None,
             dim: int = 0, streams: Any = None, *, out: Any = None) -> tuple:
    if out is not None:
        chunks = tensor.split([o.size(dim) for o in out], dim)
        for o, c in zip(out, chunks, strict=True):
            o.copy_(c)
        return tuple(out)
    devices = list(devices or ())
    chunks = tensor.split(list(chunk_sizes), dim) if chunk_sizes else tensor.chunk(len(devices), dim)
    return tuple(c.to(_as_device(d)).contiguous() for c, d in zip(chunks, devices, strict=False))


def _gather(tensors: Sequence[torch.Tensor], dim: int = 0, destination: Any = None, *, out: Any = None) -> torch.Tensor:
    if out is not None:
        return torch.cat([t.to(out.device) for t in tensors], dim, out=out)
    dest = _as_device(destination if destination is not None else _backend.current_index())
    return torch.cat([t.to(dest) for t in tensors], dim)


def _patch_data_parallel() -> None:
    from torch.nn.parallel import _functions, comm

    for name, fn in (("broadcast", _broadcast), ("broadcast_coalesced", _broadcast_coalesced),
                     ("reduce_add", _reduce_add), ("reduce_add_coalesced", _reduce_add_coalesced),
                     ("scatter", _scatter), ("gather", _gather)):
        _wrap(comm, name, fn)
    # Streams for copies between devices: the simulated device has its current stream, which
    # serves as each copy's background stream (DistributedDataParallel enters it unguarded when it
    # moves an input from another GPU onto the module's)
    _wrap(_functions, "_get_stream", _copy_stream)
    _alias_data_parallel()


def _copy_stream(device: torch.device) -> torch.Stream | None:
    if torch.device(device).type == "cpu":
        return None
    return torch.accelerator.current_stream()


def _alias_data_parallel() -> None:
    """Under the alias DataParallel must think in "cuda": it compares ``t.device`` (which the
    alias reports as ``cuda:N``) with ``torch.device(<available type>, device_ids[0])``."""
    import importlib

    # (torch.nn.parallel re-exports a *function* named data_parallel over the module name)
    data_parallel = importlib.import_module("torch.nn.parallel.data_parallel")

    original_type = data_parallel._get_available_device_type
    if getattr(original_type, "_samedevice", False):
        return

    def available_type() -> str | None:
        return "cuda" if SPELLING.alias_cuda else original_type()

    def all_indices() -> list[int] | None:
        return list(range(_backend.DEVICE_COUNT)) if SPELLING.alias_cuda else original_indices()

    def check_balance(device_ids: Any) -> None:
        if not SPELLING.alias_cuda:
            original_balance(device_ids)  # the simulated devices are identical: nothing to warn

    original_indices = data_parallel._get_all_device_indices
    original_balance = data_parallel._check_balance
    available_type._samedevice = True  # type: ignore[attr-defined]
    data_parallel._get_available_device_type = available_type
    data_parallel._get_all_device_indices = all_indices
    data_parallel._check_balance = check_balance


def _patch_cudnn_acceptable() -> None:
    cudnn = torch.backends.cudnn
    original = cudnn.is_acceptable
    if getattr(original, "_samedevice", False):
        return

    @functools.wraps(original)
    def is_acceptable(tensor: torch.Tensor) -> bool:
        if getattr(tensor, "device", None) is not None and tensor.device.type in ("cuda", BACKEND):
            # The simulated GPU has no cuDNN on any build: the generic kernels, without the CPU
            # wheel's "compiled without cuDNN" warning, and without a CUDA wheel's
            # `_cudnn_rnn_flatten_weight`, which has no kernel for the simulated device.
            return False
        return original(tensor)

    is_acceptable._samedevice = True  # type: ignore[attr-defined]
    cudnn.is_acceptable = is_acceptable


def install() -> None:
    _accelerator.install_simulated()
    _patch_accelerator()
    _patch_generator()
    _patch_compile()
    _patch_data_parallel()
    _patch_cudnn_acceptable()
    _warnings.quiet_triton_note()
