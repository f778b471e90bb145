"""The argument names of a torch API call, as its documentation names them.

``F.linear(x, w, b)`` has arguments ``input``, ``weight``, ``bias``; ``a - b`` is
``Tensor.__sub__(self, other)``. Python-level functions have signatures; C-level ones
(``F.linear``, ``Tensor.add``, ``torch.cat``) take their names from the ATen schema of the
operator of the same name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import Any

import torch

_SPECIAL = {
    "__getitem__": ("self", "indices"),
    "__setitem__": ("self", "indices", "value"),
}
_PREFIXES = (
    ("torch.nn.functional.", "F."), ("torch._C._nn.", "F."), ("torch._C._VariableFunctions.", "torch."),
    ("torch._C.TensorBase.", "Tensor."), ("torch.Tensor.", "Tensor."),
)


def display_name(func: Callable[..., Any]) -> str:
    """``F.linear``, ``Tensor.__sub__``, ``torch.cat``: the name a user recognises."""
    name = None
    try:
        name = torch.overrides.resolve_name(func)
    except Exception:  # a name is a nicety; never fail the note for it
        name = None
    if not name:
        owner = getattr(func, "__self__", None)
        qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
        name = f"torch.{qual}" if owner is None or inspect.ismodule(owner) else qual
    if name.startswith("torch._VariableFunctionsClass."):
        name = "torch." + name.rsplit(".", 1)[1]  # torch._foreach_* and other hidden functions
    for long, short in _PREFIXES:
        if name.startswith(long):
            return short + name[len(long):]
    return name


def bind(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(argument name, value)`` for every argument of the call, positional ones first."""
    names = parameter_names(func, len(args))
    pairs = [(names[i] if i < len(names) else f"arg{i}", a) for i, a in enumerate(args)]
    return pairs + list(kwargs.items())


def parameter_names(func: Callable[..., Any], count: int) -> tuple[str, ...]:
    name = getattr(func, "__name__", "")
    if name in _SPECIAL:
        return _SPECIAL[name]
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return _schema_names(name, count)
    return tuple(p.name for p in sig.parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


@cache
def _schema_names(name: str, count: int) -> tuple[str, ...]:
    """Positional argument names of the first ATen overload that takes ``count`` of them."""
    stem = name.strip("_") if name.startswith("__") else name
    candidates = [name, stem]
    if name.startswith("__i"):
        candidates.append(stem[1:] + "_")  # __iadd__ -> add_
    for candidate in candidates:
        packet = getattr(torch.ops.aten, candidate, None) if candidate else None
        if packet is None:
            continue
        try:
            overloads = packet.overloads()
        except Exception:
            continue
        for overload in overloads:
            schema = getattr(packet, overload)._schema
            positional = [a.name for a in schema.arguments if not a.kwarg_only]
            if len(positional) >= count:
                return tuple(positional)
    return ()


def tensors_of(pairs: list[tuple[str, Any]]) -> list[tuple[str, torch.Tensor]]:
    """Every tensor among the arguments; list items are named ``tensors[1]``."""
    out: list[tuple[str, torch.Tensor]] = []
    for name, value in pairs:
        if isinstance(value, torch.Tensor):
            out.append((name, value))
        elif isinstance(value, (list, tuple)):
            out.extend((f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, torch.Tensor))
    return out
