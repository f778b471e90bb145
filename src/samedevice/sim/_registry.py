"""The simulated CUDA machine's facts and its registry of answered ``torch.cuda`` calls.

Everything the CUDA machine mode swaps into PyTorch is registered here (``emulates``, ``value``,
``refuse``) by the modules that implement it (``_cuda_api``, ``_cuda_streams``,
``_cuda_imports``); ``_machine`` installs the registry and generates the docs table from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from . import _backend
from ._naming import BACKEND, INVALID_ORDINAL


class Unsupported(RuntimeError):
    """A CUDA feature the simulated machine cannot provide (raised, never silently skipped)."""


class UnsupportedImport(Unsupported, ImportError):
    """``import triton`` under the alias: loud for the user, "not installed" for library probes."""


# -- the simulated GPU ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SimulatedGPU:
    """What ``torch.cuda.get_device_properties(i)`` reports for every simulated GPU.

    The numbers describe no real product: capability 8.0 makes the program take the paths it
    takes on a current data-centre GPU (bf16 and TF32 supported), and the memory size bounds
    ``mem_get_info``. Tensors really live in host memory.
    """

    name: str = "samedevice simulated GPU"
    major: int = 8
    minor: int = 0
    total_memory: int = 16 * 2**30
    multi_processor_count: int = 108
    warp_size: int = 32
    max_threads_per_multi_processor: int = 2048
    max_threads_per_block: int = 1024
    L2_cache_size: int = 40 * 2**20
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    regs_per_multiprocessor: int = 65536
    shared_memory_per_block: int = 48 * 2**10
    shared_memory_per_multiprocessor: int = 164 * 2**10
    gcnArchName: str = "NVIDIA CUDA does not support this field"  # as CUDA builds report it
    uuid: str = "00000000-0000-0000-0000-000000000000"
    pci_bus_id: int = 0
    pci_device_id: int = 0
    pci_domain_id: int = 0

    def __repr__(self) -> str:  # CUDA's _CudaDeviceProperties.__repr__ layout
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count}, "
            f"uuid={self.uuid}, pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
            f"pci_domain_id={self.pci_domain_id}, L2_cache_size={self.L2_cache_size // 2**20}MB)"
        )


GPU = SimulatedGPU()
CUDA_VERSION = "12.8"  # torch.version.cuda under the alias: a parseable, documented stand-in
CUDNN_VERSION = 90100  # torch.backends.cudnn.version() under the alias (likewise)

class _State:
    on = False  # the registry is installed (the alias is on, or the CPU reference run)
    target = BACKEND  # where "GPU" tensors live: the sim device, or the CPU in the reference run


STATE = _State()


def home(index: int) -> torch.device:
    """The device a tensor on simulated GPU ``index`` really has."""
    return torch.device(BACKEND, index) if STATE.target == BACKEND else torch.device("cpu")


def check_index(index: int) -> int:
    if not 0 <= index < _backend.DEVICE_COUNT:
        raise torch.AcceleratorError(INVALID_ORDINAL)
    return index


def device_index(device: Any = None, optional: bool = True) -> int:
    """``torch.cuda``'s device argument (None, int, "cuda:1", torch.device) as an index."""
    if device is None:
        return _backend.current_index()
    if isinstance(device, int) and not isinstance(device, bool):
        return check_index(device)
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type not in ("cuda", BACKEND) and not (device.type == STATE.target == "cpu"):
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return check_index(device.index) if device.index is not None else _backend.current_index()
    raise ValueError(f"Expected a cuda device, but got: {device!r}")


# -- the registry ---------------------------------------------------------------------------------


@dataclass
class Entry:
    target: str  # "torch.cuda.synchronize": module path + attribute
    behaviour: str  # one line for the docs table
    value: Any
    refused: bool = False

    @property
    def module(self) -> str:
        return self.target.rpartition(".")[0]

    @property
    def attr(self) -> str:
        return self.target.rpartition(".")[2]


REGISTRY: dict[str, Entry] = {}


def emulates(target: str, behaviour: str) -> Callable[[Any], Any]:
    def register(value: Any) -> Any:
        REGISTRY[target] = Entry(target, behaviour, value)
        return value

    return register


def value(target: str, behaviour: str, v: Any) -> None:
    REGISTRY[target] = Entry(target, behaviour, v)


def refuse(target: str, why: str) -> None:
    message = f"{target} is not simulated: {why}"
    name = target.rpartition(".")[2]

    def refused(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        raise Unsupported(message)

    if name[:1].isupper():
        # A class stays a class: libraries name it at import time, in annotations evaluated
        # then (transformers 5: ``-> torch.cuda.CUDAGraph | None``) and in isinstance checks;
        # only making one raises.
        def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            raise Unsupported(message)

        refused = type(name, (), {"__new__": __new__, "__doc__": message, "__module__": target.rpartition(".")[0]})
    else:
        refused.__name__ = name
    REGISTRY[target] = Entry(target, why, refused, refused=True)
