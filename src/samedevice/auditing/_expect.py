"""Where each tensor should be, and which root-cause family a misplaced one points to.

The expected device is where most of the model's registered parameters live (by number of
elements), unless the caller names one; with no parameters, where the tensors on an accelerator
are. With neither (no parameters, every tensor on the CPU) there is no reference device, and the
report says so rather than guess. A model whose parameters sit on two or more
accelerators (pipeline stages, ``device_map="auto"``) is *split*, not half wrong: each tensor is
then held to the device of the part of the model it belongs to, and the split is reported.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import nn

from . import _devices
from ._walk import Route, Seen, Walk

_FAMILY_BY_ROUTE = {
    Route.UNREGISTERED: "F2",
    Route.OPTIMIZER_STATE: "F7",
    Route.OPTIMIZER_PARAM: "F7",
    Route.SCHEDULER: "F7",
    Route.METRIC: "F6",
    Route.DATA: "F3",
}


NO_REFERENCE = "no reference device"


@dataclasses.dataclass
class Expectation:
    device: torch.device | None  # one device for everything; None when the model is split
    basis: str  # why: "where most parameters are", "the device asked for", ...
    split: list[tuple[str, torch.device]] = dataclasses.field(default_factory=list)
    _first_stage: torch.device | None = None
    _stage_devices: set[torch.device] = dataclasses.field(default_factory=set)
    _module_hist: dict[str, dict[torch.device, int]] = dataclasses.field(default_factory=dict)
    _parents: dict[str, str | None] = dataclasses.field(default_factory=dict)

    def for_tensor(self, s: Seen, param_device: torch.device | None) -> torch.device | None:
        """The device ``s`` should be on (``param_device``: the device of its parameter)."""
        if s.route is Route.OPTIMIZER_STATE and param_device is not None:
            return param_device  # state must follow its parameter, wherever that is
        if self.device is not None:
            return self.device
        if s.module is not None:
            return self._module_device(s.module)
        actual = _devices.raw_device(s.tensor)
        if actual in self._stage_devices:
            return actual  # data on one of the stages' devices is where a stage can use it
        return self._first_stage

    def _module_device(self, module: str) -> torch.device | None:
        # Held to the parent's majority: a tensor alone on its device inside an otherwise
        # placed block is the odd one out, even if it is its own module's only tensor.
        scope = self._parents.get(module) or module
        while scope is not None:
            hist = self._module_hist.get(scope)
            if hist:
                return max(hist, key=lambda d: hist[d])
            scope = self._parents.get(scope)
        return self._first_stage


def expect(w: Walk, device: Any = None) -> Expectation | None:
    """The expectation for a walk, or None when it found no tensor at all."""
    if device is not None:
        return Expectation(_devices.normalise(device), "the device asked for")
    params = [s for s in w.seen.values() if s.route is Route.REGISTERED and isinstance(s.tensor, nn.Parameter)]
    weighted = [(_devices.raw_device(s.tensor), s.tensor.numel()) for s in params]
    accelerators = {d for d, _ in weighted if _devices.is_accelerator(d)}
    if len(accelerators) >= 2:
        return _split(w, params, weighted, accelerators)
    if weighted:
        return Expectation(_devices.most_common(weighted), "where most parameters are")
    everything = [(_devices.raw_device(s.tensor), s.tensor.numel()) for s in w.seen.values()]
    if not everything:
        return None
    # No parameters to go by: the point of moving things is the accelerator, so it wins.
    on_accelerators = [(d, n) for d, n in everything if _devices.is_accelerator(d)]
    if on_accelerators:
        return Expectation(_devices.most_common(on_accelerators), "where most tensors are")
    if len({d for d, _ in everything}) > 1:
        return Expectation(_devices.most_common(everything), "where most tensors are")
    # No parameters and every tensor on the CPU: a CPU run and a model that was never moved
    # look the same from here. Saying "nothing misplaced" would be a guess; say so instead.
    return Expectation(None, NO_REFERENCE)


def _split(w: Walk, params: list[Seen], weighted: list[tuple[torch.device, int]],
           accelerators: set[torch.device]) -> Expectation:
    parents = {node.path: node.parent for node in w.modules.values()}
    hist: dict[str, dict[torch.device, int]] = {}
    for s, (d, n) in zip(params, weighted, strict=True):
        if not _devices.is_accelerator(d):
            continue
        scope: str | None = s.module
        while scope is not None:
            h = hist.setdefault(scope, {})
            h[d] = h.get(d, 0) + n
            scope = parents.get(scope)
    first = next((d for d, _ in weighted if _devices.is_accelerator(d)), None)
    return Expectation(None, "split over several devices", _placement(w, params, parents), first,
                       accelerators, hist, parents)


def _placement(w: Walk, params: list[Seen], parents: dict[str, str | None]) -> list[tuple[str, torch.device]]:
    """The largest modules whose parameters all sit on one device, in model order."""
    devices_under: dict[str, set[torch.device]] = {}
    for s in params:
        scope: str | None = s.module
        d = _devices.raw_device(s.tensor)
        while scope is not None:
            devices_under.setdefault(scope, set()).add(d)
            scope = parents.get(scope)
    blocks: list[tuple[str, torch.device]] = []
    for path, devs in devices_under.items():  # insertion order is model order
        parent = parents.get(path)
        parent_uniform = parent is not None and len(devices_under.get(parent, ())) == 1
        if len(devs) == 1 and not parent_uniform:
            blocks.append((path, next(iter(devs))))
    return blocks


def family(s: Seen, actual: torch.device, expected: torch.device, whole_root_off: bool) -> str:
    """The root-cause family a misplaced tensor points to (ids of data/families.toml)."""
    if _devices.is_accelerator(actual) and _devices.is_accelerator(expected):
        return "F8"  # two accelerators disagree
    if s.route is Route.REGISTERED:
        # One registered part left behind: moved, then modified. The whole model elsewhere:
        # the model and its data were never brought together.
        return "F3" if whole_root_off else "F1"
    return _FAMILY_BY_ROUTE[s.route]
