"""Reading and naming devices without touching them.

Everything here reads metadata only: no tensor is moved, copied or materialised and CUDA is
never initialised (``torch.device("cuda")`` is a plain value; nothing calls ``torch.cuda``).

Devices are read with torch-function handling switched off, so that a TorchFunctionMode in
effect (the simulated accelerator's "cuda" alias, a user's own mode) neither slows the walk
down nor changes what is read; :func:`label` then spells the device the way the user sees it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import torch

_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction


def raw_device(t: torch.Tensor) -> torch.device:
    with _NO_TORCH_FUNCTION():
        return t.device


def _sim_naming() -> Any:
    """The simulator's spelling rules, only if the simulator is already loaded."""
    return sys.modules.get("samedevice.sim._naming")


def label(device: torch.device) -> str:
    """``str(device)`` as the user sees it: ``cuda:0`` for the simulated device under its alias."""
    naming = _sim_naming()
    if naming is not None:
        return str(naming.device_text(device))
    return str(device)


def is_accelerator(device: torch.device) -> bool:
    return device.type not in ("cpu", "meta")


def normalise(device: Any) -> torch.device:
    """A device the user named (``"cuda"``, ``0``, ``torch.device``), as tensors report it.

    Under the simulator's "cuda" alias, user code says ``cuda`` while tensors really live on
    ``sim``; the comparison must use the real device.
    """
    d = torch.device(device) if not isinstance(device, torch.device) else device
    naming = _sim_naming()
    if d.type == "cuda" and naming is not None and naming.SPELLING.alias_cuda:
        d = torch.device(naming.BACKEND, d.index)
    return d


def matches(actual: torch.device, expected: torch.device) -> bool:
    """Same type, and the same index unless ``expected`` names none (``"cuda"`` means any)."""
    if actual.type != expected.type:
        return False
    if expected.index is None or actual.index is None:
        return True
    return actual.index == expected.index


def most_common(weights: Iterable[tuple[torch.device, int]]) -> torch.device | None:
    """The device carrying the largest weight; ties go to the device seen first."""
    totals: dict[torch.device, int] = {}
    for device, weight in weights:
        totals[device] = totals.get(device, 0) + weight
    if not totals:
        return None
    return max(totals, key=lambda d: totals[d])  # max keeps the first of equal keys


def shape_text(shape: Iterable[int]) -> str:
    dims = list(shape)
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def dtype_text(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
