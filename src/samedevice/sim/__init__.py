"""samedevice.sim: a simulated accelerator, so CPU-only machines reproduce device bugs exactly."""

from __future__ import annotations

import torch

from . import _backend
from ._naming import BACKEND, SPELLING


def enable(alias_cuda: bool = False) -> torch.device:
    """Register the simulated accelerator (once per process) and return its device."""
    _backend.register()
    from . import dist

    dist.register()
    if alias_cuda:
        from . import _alias

        SPELLING.alias_cuda = True
        _alias.enable()
        dist.alias_nccl()
    return torch.device(BACKEND, 0)


def is_enabled() -> bool:
    return _backend.is_registered()
