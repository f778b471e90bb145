"""samedevice.sim: a simulated accelerator, so CPU-only machines reproduce device bugs exactly.

``enable()`` registers a second device, ``sim``, at PyTorch's PrivateUse1 key. Its tensors live
in ordinary host memory but count as another device: PyTorch's device checks fire where they
fire on CUDA, with CUDA's messages, and the numbers are the CPU's. ``enable(alias_cuda=True)``
also makes code that says "cuda" run on it and read like CUDA (``cuda:0``,
``wrapper_CUDA_addmm``, ``torch.cuda.FloatTensor``). See docs/how-cpu-verification-works.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

# torch is imported by the functions below, not here: `samedevice run`'s own process imports
# this package for its command line only (samedevice.sim.cli), and importing torch there
# doubled the CPU time of a short program's start-up.
if TYPE_CHECKING:
    import torch

__all__ = ["DEVICE_COUNT", "Unsupported", "cuda_alias", "device", "device_count", "enable", "is_enabled",
           "set_alias", "usage"]


def __getattr__(name: str) -> Any:
    if name == "Unsupported":
        from ._registry import Unsupported

        return Unsupported
    if name == "DEVICE_COUNT":
        from . import _backend

        return _backend.DEVICE_COUNT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def enable(alias_cuda: bool = False, gpus: int | None = None) -> torch.device:
    """Register the simulated accelerator (once per process) and return its device.

    With ``alias_cuda=True`` the "cuda" alias is switched on as well (see :func:`set_alias`):
    the process looks like a machine with ``gpus`` CUDA GPUs (default 1). Without the alias
    the simulator keeps two devices (``sim:0``, ``sim:1``) unless ``gpus`` says otherwise.
    Enabling is process-wide and cannot be undone; the alias can be switched off again.
    """
    import torch

    from . import _backend, _ipc, _warnings, dist
    from ._naming import BACKEND

    if gpus is not None or alias_cuda:
        _backend.set_device_count(1 if gpus is None else gpus)
    _backend.register()
    _warnings.install()
    _ipc.install()
    dist.register()
    if alias_cuda:
        set_alias(True)
    return torch.device(BACKEND, 0)


def is_enabled() -> bool:
    from . import _backend

    return _backend.is_registered()


def set_alias(on: bool) -> None:
    """Switch the "cuda" alias on or off for this thread (the simulator must be enabled)."""
    from . import _backend
    from ._naming import SPELLING

    if not _backend.is_registered():
        raise RuntimeError("samedevice.sim.enable() must run before the cuda alias is switched on")
    from . import _alias, _machine, dist

    if on:
        SPELLING.alias_cuda = True
        _alias.enable()
        _machine.install()
        dist.alias_nccl()
    else:
        _alias.disable()
        _machine.uninstall()
        SPELLING.alias_cuda = False


@contextlib.contextmanager
def cuda_alias(on: bool = True) -> Iterator[None]:
    """``with sim.cuda_alias(): ...`` -- the alias inside the block only."""
    from ._naming import SPELLING

    before = SPELLING.alias_cuda
    set_alias(on)
    try:
        yield
    finally:
        set_alias(before)


def device_count() -> int:
    """How many simulated GPUs the process has (``torch.cuda.device_count()`` under the alias)."""
    from . import _backend

    return _backend.DEVICE_COUNT


def device(index: int = 0) -> torch.device:
    """The simulated device as user code should name it (``cuda:N`` under the alias)."""
    import torch

    from ._naming import BACKEND, SPELLING

    return torch.device("cuda" if SPELLING.alias_cuda else BACKEND, index)


def usage() -> int:
    """How many simulated tensors this process has created so far.

    A program that leaves this unchanged never used the accelerator: on a CPU-only machine a
    snippet that picks its device with ``torch.cuda.is_available()`` runs entirely on the CPU
    and proves nothing about device placement.
    """
    from ._plumbing import USAGE

    return USAGE.created
