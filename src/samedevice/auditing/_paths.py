"""Paths written the way the user would write them in their own code.

``model.blocks[0].weight``, ``loss_fn._center.center``, ``batch['mask']``,
``optimizer.state[model.fc.weight]['exp_avg']``: each path is a Python expression that, typed
in the user's session, gives back the tensor it names.
"""

from __future__ import annotations

import keyword
from typing import Any


def attribute(path: str, name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{path}.{name}"
    return f"getattr({path}, {name!r})"


def item(path: str, key: Any) -> str:
    return f"{path}[{key_text(key)}]"


def child(path: str, name: str, container: str | None) -> str:
    """A submodule or parameter registered as ``name`` in its parent.

    Users index containers: ``model.blocks[0]`` (``Sequential``, ``ModuleList``,
    ``ParameterList``) and ``model.heads['cls']`` (``ModuleDict``, ``ParameterDict``). A
    non-numeric child of a list-like container is reached as an attribute.
    """
    if container == "dict":
        return f"{path}[{name!r}]"
    if container == "list" and name.isdigit():
        return f"{path}[{name}]"
    return attribute(path, name)


def key_text(key: Any) -> str:
    """``repr`` for keys a user can type back (str, numbers, tuples of them); a hint otherwise."""
    if key is None or isinstance(key, (str, int, float, bool)):
        return repr(key)
    if isinstance(key, tuple) and all(k is None or isinstance(k, (str, int, float, bool)) for k in key):
        return repr(key)
    return f"<{type(key).__name__}>"
