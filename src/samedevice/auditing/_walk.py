"""Find every tensor an object graph holds, with the path the user would write to reach it.

The walk reads attributes and container items only; it never calls properties, never moves
or copies a tensor, and reads each object once (cycles end). Where reading an object raises,
the object is recorded in ``skipped`` with the reason and the walk goes on.

Each tensor is recorded with the *route* it was reached by, because the route is what tells
the root cause apart: a registered parameter left behind after a structural change (F1) is a
different bug from a tensor held in a plain attribute that ``.to()`` never sees (F2).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import weakref
from collections import deque
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from . import _paths

MAX_PLAIN_DEPTH = 6  # hops through plain objects and containers below a module or root
MAX_ITEMS = 10_000  # items read from one container

# Objects of these modules are tooling or data pipelines, not model state: a DataLoader's
# dataset legitimately lives on the CPU and would read as thousands of misplaced tensors.
_OPAQUE_MODULE_PREFIXES = (
    "torch.utils.data", "torch._dynamo", "torch.fx", "torch._inductor", "torch.distributed",
    "logging", "threading", "asyncio", "concurrent.", "multiprocessing", "socket", "io",
    "IPython", "ipykernel", "traitlets", "zmq", "tornado", "numpy", "pandas", "matplotlib",
)
_OPAQUE_TYPES = (
    type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
    types.CodeType, types.FrameType, types.TracebackType, types.GeneratorType, property,
    staticmethod, classmethod, enum.Enum, torch.device, torch.dtype, torch.Size,
    torch.Generator, str, bytes, bytearray, int, float, complex, bool, range, slice,
    weakref.ref,
)
# Names of metric internals that are caches or templates, not state the metric computes with.
_METRIC_INTERNALS = frozenset({
    "_defaults", "_cache", "_computed", "_forward_cache", "_reductions", "_persistent",
    "_device", "_dtype", "_update_signature",
})


class Route(enum.Enum):
    """How a tensor was reached; decides which root-cause family a misplacement points to."""

    REGISTERED = "registered"  # parameter or buffer reached through registered submodules
    UNREGISTERED = "unregistered"  # plain attribute, container, helper object, hidden submodule
    OPTIMIZER_STATE = "optimizer state"
    OPTIMIZER_PARAM = "optimizer param_groups"
    SCHEDULER = "scheduler"
    METRIC = "lifecycle state"  # metrics, result collections: state a framework moves itself
    DATA = "data"


@dataclasses.dataclass(slots=True)
class Seen:
    """One tensor found by the walk."""

    tensor: torch.Tensor
    path: str  # for optimizer state: the part before ``[param]``
    route: Route
    root: str
    module: str | None = None  # the module that owns it (registered or not)
    key: torch.Tensor | None = None  # optimizer state: the parameter the state belongs to
    suffix: str = ""  # optimizer state: the part after ``[param]``
    scalar_state: bool = False  # 0-dim optimizer state PyTorch keeps on the CPU by design


@dataclasses.dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: str


@dataclasses.dataclass(slots=True)
class ModuleNode:
    path: str
    parent: str | None
    root: str


class Walk:
    """The walk over a set of named root objects. Use :func:`walk`."""

    def __init__(self) -> None:
        self.seen: dict[int, Seen] = {}
        self.skipped: list[Skipped] = []
        self.notes: list[str] = []
        self.modules: dict[int, ModuleNode] = {}  # id(module) -> where it sits
        self._visited: set[int] = set()
        self._group_paths: dict[int, str] = {}  # id(param) -> optimizer.param_groups[g]['params'][i]
        self._module_internals = frozenset(vars(nn.Module()))

    # -- recording -----------------------------------------------------------------------------

    def _record(self, t: torch.Tensor, path: str, route: Route, root: str, module: str | None,
                **extra: Any) -> None:
        old = self.seen.get(id(t))
        if old is not None:
            # A registered name beats an alias (``self.w = self.fc.weight``) met earlier.
            if route is Route.REGISTERED and old.route is not Route.REGISTERED:
                old.path, old.route, old.root, old.module = path, route, root, module
            return
        self.seen[id(t)] = Seen(t, path, route, root, module, **extra)

    def _skip(self, path: str, reason: str) -> None:
        self.skipped.append(Skipped(path, reason))

    def name_of(self, t: torch.Tensor) -> str | None:
        s = self.seen.get(id(t))
        if s is not None and s.key is None:
            return s.path
        return self._group_paths.get(id(t))

    # -- modules -------------------------------------------------------------------------------

    def module(self, m: nn.Module, path: str, root: str, route: Route, parent: str | None) -> None:
        """A module tree: registered parameters and buffers first, then everything else.

        Registered names are recorded before plain attributes so that an alias of a parameter
        is reported under the parameter's own name.
        """
        order: list[tuple[nn.Module, str]] = []
        stack: list[tuple[nn.Module, str, str | None]] = [(m, path, parent)]
        while stack:  # iterative: module trees can be deeper than Python's recursion limit
            mod, mpath, mparent = stack.pop()
            if id(mod) in self._visited:
                continue
            self._visited.add(id(mod))
            self.modules[id(mod)] = ModuleNode(mpath, mparent, root)
            order.append((mod, mpath))
            indexed = _container_kind(mod)
            for name, p in mod._parameters.items():
                if p is not None:
                    self._record(p, _paths.child(mpath, name, indexed), route, root, mpath)
            for name, b in mod._buffers.items():
                if b is not None:
                    self._record(b, _paths.child(mpath, name, indexed), route, root, mpath)
            children = [(c, _paths.child(mpath, n, indexed)) for n, c in mod._modules.items() if c is not None]
            stack.extend((c, cpath, mpath) for c, cpath in reversed(children))
        for mod, mpath in order:
            self._module_extras(mod, mpath, root, route)

    def _module_extras(self, mod: nn.Module, mpath: str, root: str, route: Route) -> None:
        try:
            attrs = dict(vars(mod))
        except Exception as e:  # any failure to read is reported, not raised
            self._skip(mpath, _reason(e))
            return
        metric_states = _metric_states(mod)
        for name, value in attrs.items():
            if name in self._module_internals or (metric_states is not None and name in _METRIC_INTERNALS):
                continue
            apath = _paths.attribute(mpath, name)
            if metric_states is not None and name in metric_states and route is not Route.UNREGISTERED:
                # A metric moves its own states in ``_apply``; left behind, a lifecycle phase
                # moved them (F6). A metric the module tree cannot see is F2 like any other.
                self.plain(value, apath, root, Route.METRIC, 1, mpath)
            else:
                # Whatever the module's own route, state it keeps outside its registries is
                # invisible to ``.to()``: F2.
                self.plain(value, apath, root, Route.UNREGISTERED, 1, mpath)

    # -- optimizers ----------------------------------------------------------------------------

    def optimizer(self, opt: torch.optim.Optimizer, path: str, root: str) -> None:
        groups_path = _paths.attribute(path, "param_groups")
        try:
            groups = list(opt.param_groups)
            state = opt.state
        except Exception as e:
            self._skip(path, _reason(e))
            return
        scalar_on_device: set[int] = set()  # params whose 0-dim state must be on their device
        for g, group in enumerate(groups):
            gpath = _paths.item(groups_path, g)
            needs_device = bool(group.get("capturable") or group.get("fused"))
            for i, p in enumerate(group.get("params", ())):
                if isinstance(p, torch.Tensor):
                    ppath = _paths.item(_paths.item(gpath, "params"), i)
                    self._group_paths.setdefault(id(p), ppath)
                    self._record(p, ppath, Route.OPTIMIZER_PARAM, root, None)
                    if needs_device:
                        scalar_on_device.add(id(p))
            for key, value in group.items():
                if key != "params" and isinstance(value, torch.Tensor) and value.dim() > 0:
                    self._record(value, _paths.item(gpath, key), Route.OPTIMIZER_PARAM, root, None)
        state_path = _paths.attribute(path, "state")
        try:
            items = list(state.items())
        except Exception as e:
            self._skip(state_path, _reason(e))
            return
        for key, per_param in items:
            if not isinstance(key, torch.Tensor) or not isinstance(per_param, Mapping):
                self.plain(per_param, _paths.item(state_path, key), root, Route.OPTIMIZER_STATE, 1, None)
                continue
            for name, value in per_param.items():
                suffix = f"[{_paths.key_text(name)}]"
                if isinstance(value, torch.Tensor):
                    scalar = value.dim() == 0 and id(key) not in scalar_on_device
                    self._record(value, state_path, Route.OPTIMIZER_STATE, root, None,
                                 key=key, suffix=suffix, scalar_state=scalar)

    # -- plain objects and containers ----------------------------------------------------------

    def plain(self, obj: Any, path: str, root: str, route: Route, depth: int, module: str | None) -> None:
        try:
            self._plain(obj, path, root, route, depth, module)
        except Exception as e:  # even isinstance() can raise (dead proxies)
            self._skip(path, _reason(e))

    def _plain(self, obj: Any, path: str, root: str, route: Route, depth: int, module: str | None) -> None:
        if isinstance(obj, torch.Tensor):
            self._record(obj, path, route, root, module)
            return
        if obj is None or isinstance(obj, _OPAQUE_TYPES) or id(obj) in self._visited:
            return
        if isinstance(obj, nn.Module):
            if route is Route.UNREGISTERED:
                self.notes.append(f"{path} is a module in a plain attribute, list or dict: "
                                  ".to() and .parameters() miss it")
            self.module(obj, path, root, route if route is Route.UNREGISTERED else Route.REGISTERED, None)
            return
        if isinstance(obj, torch.optim.Optimizer):
            self._visited.add(id(obj))
            self.optimizer(obj, path, root)
            return
        if _opaque_module(obj):
            return
        if depth > MAX_PLAIN_DEPTH:
            self._skip(path, f"deeper than {MAX_PLAIN_DEPTH} levels of plain objects")
            return
        self._visited.add(id(obj))
        if route is Route.DATA:
            if isinstance(obj, _LR_SCHEDULER):
                route = Route.SCHEDULER
            elif _moves_itself(obj):
                route = Route.METRIC
        for child, cpath in list(_children(obj, path)):
            if cpath is None:  # the container was cut short
                self._skip(path, child)
                continue
            self.plain(child, cpath, root, route, depth + 1, module)


_LR_SCHEDULER: tuple[type, ...] = tuple(
    t for t in (getattr(torch.optim.lr_scheduler, "LRScheduler", None),
                getattr(torch.optim.lr_scheduler, "ReduceLROnPlateau", None)) if t is not None
)


def _children(obj: Any, path: str) -> Any:
    """``(value, path)`` pairs of a container or object; ``(reason, None)`` when cut short."""
    if isinstance(obj, Mapping):
        for n, (k, v) in enumerate(obj.items()):
            if n >= MAX_ITEMS:
                yield f"only the first {MAX_ITEMS} items were read", None
                return
            yield v, _paths.item(path, k)
        return
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        for name, v in zip(obj._fields, obj, strict=False):
            yield v, _paths.attribute(path, name)
        return
    if isinstance(obj, (list, tuple, deque)):
        for i, v in enumerate(obj):
            if i >= MAX_ITEMS:
                yield f"only the first {MAX_ITEMS} items were read", None
                return
            yield v, _paths.item(path, i)
        return
    if isinstance(obj, (set, frozenset)):
        return  # no path can name a set member
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, Mapping):
        for name, v in list(attrs.items()):
            if isinstance(name, str):
                yield v, _paths.attribute(path, name)
    for name in _slot_names(type(obj)):
        try:
            v = getattr(obj, name)
        except AttributeError:
            continue  # an empty slot
        yield v, _paths.attribute(path, name)


def _slot_names(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def _moves_itself(obj: Any) -> bool:
    """An object with its own ``.to()`` / ``.cpu()`` (a metric, a result collection, an EMA).

    Its tensors are placed by its own lifecycle -- moved at setup or teardown -- so one left
    behind points to lifecycle state (F6), not to data the loop forgot to move.
    """
    if isinstance(obj, (Mapping, list, tuple)):
        return False  # a batch that can move itself (``BatchEncoding.to``) is still data
    cls = type(obj)
    return any(callable(getattr(cls, name, None)) for name in ("to", "cpu", "cuda"))


def _opaque_module(obj: Any) -> bool:
    mod = type(obj).__module__ or ""
    return mod.startswith(_OPAQUE_MODULE_PREFIXES)


def _container_kind(m: nn.Module) -> str | None:
    if isinstance(m, (nn.ModuleDict, nn.ParameterDict)):
        return "dict"
    if isinstance(m, (nn.Sequential, nn.ModuleList, nn.ParameterList)):
        return "list"
    return None


def _metric_states(m: nn.Module) -> frozenset[str] | None:
    """State names of a torchmetrics-style ``Metric`` (``add_state`` fills ``_defaults``)."""
    defaults = vars(m).get("_defaults")
    if isinstance(defaults, dict) and callable(getattr(type(m), "add_state", None)):
        return frozenset(defaults)
    return None


def _reason(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def walk(named: list[tuple[str, Any]]) -> Walk:
    """Walk the named roots. Modules go first so that other roots can name their parameters."""
    w = Walk()
    ordered = sorted(named, key=lambda nv: not isinstance(nv[1], nn.Module))  # stable
    for name, obj in ordered:
        if isinstance(obj, nn.Module):
            w.module(obj, name, name, Route.REGISTERED, None)
        else:
            w.plain(obj, name, name, Route.DATA, 0, None)
    return w
