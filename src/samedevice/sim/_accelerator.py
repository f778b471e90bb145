"""What ``torch.accelerator`` answers: CUDA, in the simulated run and in the CPU reference run.

A program asks ``torch.accelerator.current_accelerator()`` which machine it is on and branches
on the answer (``if device.type == "cuda": model = DataParallel(model)``, ``print("Using
device:", device)``). On a CUDA machine the answer is ``cuda``, so it is here too:

* The simulated run: the accelerator PyTorch knows is ``sim`` (PrivateUse1), and PyTorch's own
  Python code must keep seeing it (its DataLoader, optimizers and DDP then drive the simulated
  device through ``torch.sim``). A call from any other code -- the program, or a library such
  as Lightning -- is answered ``cuda``, unless the run asked for the simulator's own name.
* The CPU reference run (``samedevice run --cpu``): PyTorch's compiled-in accelerator is none
  (the CPU wheel) or a CUDA without a driver (a CUDA wheel on a machine without a GPU), and
  either way a program would take another path than in the simulated run. Every caller is told
  ``cuda`` with the run's GPU count, and the calls PyTorch makes next (current stream, device
  index, synchronize, memory statistics) are answered as ``torch.cuda`` answers them in this
  run, so nothing reaches a CUDA driver.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import torch

from . import _backend
from ._naming import SPELLING
from ._registry import GPU

_CUDA = torch.device("cuda")
_INTERNAL = ("torch", "samedevice")


def _from_user_code(depth: int = 2) -> bool:
    """Whether the function ``depth`` frames up was called by code outside PyTorch and samedevice."""
    frame = sys._getframe(depth)
    name = frame.f_globals.get("__name__", "") or ""
    return not any(name == root or name.startswith(root + ".") for root in _INTERNAL)


def _replace(name: str, replacement: Callable[..., Any]) -> None:
    acc = torch.accelerator
    original = getattr(acc, name, None)
    if original is None or getattr(original, "_samedevice_accelerator", False):
        return
    if not isinstance(replacement, type):  # a class keeps its own name and dict
        functools.update_wrapper(replacement, original, updated=())
    replacement._samedevice_accelerator = True  # type: ignore[attr-defined]
    setattr(acc, name, replacement)


class DeviceIndex:
    """``torch.accelerator.device_index(i)``: the simulated GPU ``i`` is current inside the block."""

    def __init__(self, device: Any, /) -> None:
        self.index = device

    def __enter__(self) -> None:
        self.previous = _backend.current_index()
        if self.index is not None:
            _backend._set_index(torch._utils._get_device_index(self.index, optional=True))

    def __exit__(self, *exc: object) -> None:
        _backend._set_index(self.previous)


def install_simulated() -> None:
    """The simulated run: ``cuda`` for the program, ``sim`` for PyTorch (idempotent)."""
    original = torch.accelerator.current_accelerator

    def current_accelerator(check_available: bool = False) -> torch.device | None:
        acc = original(check_available)
        if acc is not None and SPELLING.alias_cuda and _from_user_code():
            return _CUDA
        return acc

    _replace("current_accelerator", current_accelerator)


def _answer_dynamo_current_stream(cuda: Callable[[], Any]) -> None:
    """Dynamo (2.15) reads the accelerator's current stream in compiled code and in its guards
    through ``torch._C._dynamo.utils.get_current_stream``, a C++ function that asks the CUDA
    runtime and bypasses every answer above: on a CUDA wheel without a driver the first call
    of a compiled model raised AcceleratorError. Dynamo's modules import the name from the C
    module when ``torch._dynamo`` loads (usually after this runs; in a warm worker, before)."""
    utils = getattr(getattr(torch._C, "_dynamo", None), "utils", None)
    original = getattr(utils, "get_current_stream", None)
    if original is None or getattr(original, "_samedevice", False):
        return

    def get_current_stream(device: torch.device) -> torch.Stream:
        if torch.device(device).type == "cuda":
            return cuda().current_stream(torch.device(device).index)
        return original(device)

    get_current_stream._samedevice = True  # type: ignore[attr-defined]
    get_current_stream.__wrapped__ = original  # type: ignore[attr-defined]
    # Compiled code calls it, with Dynamo's frame hook on: Dynamo would trace this function and
    # the emulated stream calls below it, and its guards call it again (a RecursionError). What
    # `torch.compiler.disable` does, without importing torch._dynamo here: skip this frame and
    # every frame it calls.
    frames = torch._C._dynamo.eval_frame
    skip = getattr(frames, "_FrameAction", None)
    if skip is not None and hasattr(frames, "set_code_exec_strategy"):
        frames.set_code_exec_strategy(
            get_current_stream.__code__, frames._FrameExecStrategy(skip.SKIP, skip.SKIP))
    utils.get_current_stream = get_current_stream
    for name, module in list(sys.modules.items()):  # a warm worker imported torch._dynamo first
        if name.startswith("torch._dynamo") and vars(module).get("get_current_stream") is original:
            module.get_current_stream = get_current_stream


def install_cpu_reference() -> None:
    """The CPU reference run: a CUDA machine with the run's GPUs, answered without a driver."""

    def cuda() -> Any:
        return torch.cuda  # the CUDA machine's answers, installed for this run by _machine

    def index(device: Any = None) -> int:
        if device is None:
            return _backend.current_index()
        return torch._utils._get_device_index(device, optional=True)

    def set_index(device: Any, /) -> None:
        _backend._set_index(index(device))

    answers: dict[str, Callable[..., Any]] = {
        "current_accelerator": lambda check_available=False: _CUDA,
        "is_available": lambda: True,
        "device_count": lambda: _backend.DEVICE_COUNT,
        "current_device_index": _backend.current_index,
        "current_device_idx": _backend.current_index,
        "set_device_index": set_index,
        "set_device_idx": set_index,
        "device_index": DeviceIndex,
        "current_stream": lambda device=None, /: cuda().current_stream(index(device)),
        "set_stream": lambda stream: cuda().set_stream(stream),
        "synchronize": lambda device=None, /: None,
        "get_device_capability": lambda device=None, /: {"major": GPU.major, "minor": GPU.minor},
        "empty_cache": lambda: None,
        "memory_allocated": lambda device_index=None, /: cuda().memory_allocated(device_index),
        "max_memory_allocated": lambda device_index=None, /: cuda().max_memory_allocated(device_index),
        "memory_reserved": lambda device_index=None, /: cuda().memory_reserved(device_index),
        "max_memory_reserved": lambda device_index=None, /: cuda().max_memory_reserved(device_index),
        "memory_stats": lambda device_index=None, /: cuda().memory_stats(device_index),
        "reset_peak_memory_stats": lambda device_index=None, /: cuda().reset_peak_memory_stats(device_index),
        "reset_accumulated_memory_stats": lambda device_index=None, /: None,
    }
    for name, answer in answers.items():
        _replace(name, answer)
    _answer_dynamo_current_stream(cuda)
    memory = sys.modules.get("torch.accelerator.memory")
    if memory is not None:  # `from torch.accelerator.memory import ...` keeps its own names
        for name in list(vars(memory)):
            if name in answers and callable(getattr(memory, name)):
                setattr(memory, name, getattr(torch.accelerator, name))
