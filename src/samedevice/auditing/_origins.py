"""Where tensors made inside a ``locate`` block came from: a factory or a transfer.

Two root causes leave no name to find: a tensor made by a factory without ``device=``
(``torch.arange(n)`` inside ``forward``, F4) and one moved off the accelerator mid-computation
(``.cpu()``, F5). Neither appears in the model or the batch, so ``locate`` remembers the few
tensors those calls make -- only those calls, which are rare, so the cost stays off the hot path.

Entries are keyed by ``id`` and hold a weak reference that confirms the tensor is still the
one recorded (ids are reused after a tensor dies); dead entries are swept as the table grows.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import weakref
from typing import Any

import torch

from . import _devices

_FACTORIES = frozenset(f for f in (
    torch.zeros, torch.ones, torch.empty, torch.full, torch.arange, torch.range, torch.linspace,
    torch.logspace, torch.eye, torch.tensor, torch.as_tensor, torch.randn, torch.rand,
    torch.randint, torch.randperm, torch.empty_strided, torch.scalar_tensor, torch.tril_indices,
    torch.triu_indices, torch.from_numpy,
) if f is not None)
_TRANSFERS = frozenset({torch.Tensor.cpu, torch.Tensor.to, torch.Tensor.cuda})
WATCHED = _FACTORIES | _TRANSFERS
_SWEEP_EVERY = 4096


@dataclasses.dataclass(frozen=True)
class Origin:
    text: str  # "made by torch.arange at model.py:12 without device="
    family: str  # F4 or F5


class Origins:
    def __init__(self) -> None:
        self._table: dict[int, tuple[weakref.ref[torch.Tensor], Origin]] = {}
        self._added = 0

    def note(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        """Remember where ``out`` came from, if ``func`` is a factory or a transfer."""
        if not isinstance(out, torch.Tensor):
            return
        where = _caller(sys._getframe(2))
        if func in _FACTORIES:
            if kwargs.get("device") is not None:
                return  # placed on purpose
            self._add(out, Origin(f"made by torch.{func.__name__} at {where} without device=", "F4"))
            return
        source = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if source is None or out is source:
            return
        before, after = _devices.raw_device(source), _devices.raw_device(out)
        if before != after:
            call = "." + func.__name__ + "()"
            self._add(out, Origin(f"moved from {_devices.label(before)} by {call} at {where}", "F5"))

    def get(self, t: torch.Tensor) -> Origin | None:
        entry = self._table.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        return None

    def _add(self, t: torch.Tensor, origin: Origin) -> None:
        self._table[id(t)] = (weakref.ref(t), origin)
        self._added += 1
        if self._added % _SWEEP_EVERY == 0:
            self._table = {k: v for k, v in self._table.items() if v[0]() is not None}


def _caller(frame: Any) -> str:
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame else "?"
