"""Give a tensor met in a failing call the name it has in the user's code.

In order of preference:

1. a path in the objects passed to ``locate`` (``model.out_head.weight``), by identity, or a
   view of one by shared storage (``weight.t()`` shares ``weight``'s storage);
2. where it was made inside the block, if a factory or a transfer made it (see ``_origins``);
3. a variable of the user's code between the ``locate`` block and the failing call
   (``x in TinyGPT.forward, model.py:27``); PyTorch's own variables (``input`` inside
   ``F.cross_entropy``) would only repeat the argument's name;
4. otherwise: an intermediate result no variable holds.

Everything here runs only after a device error, so it may take its time.
"""

from __future__ import annotations

import dataclasses
import os
import types
from collections.abc import Iterator
from typing import Any

import torch

from . import _paths
from ._audit import full_path
from ._origins import Origin, Origins
from ._walk import Seen, Walk

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(__file__)) + os.sep  # samedevice/


@dataclasses.dataclass(frozen=True)
class Name:
    text: str
    seen: Seen | None = None  # found in the objects passed
    origin: Origin | None = None  # made inside the block
    local: bool = False  # named by a variable of the user's code only


def storage_key(t: torch.Tensor) -> int | None:
    try:
        with torch._C.DisableTorchFunction():
            return int(t.untyped_storage()._cdata)
    except Exception:  # sparse, nested and wrapper tensors have no plain storage
        return None


class Namer:
    def __init__(self, walk: Walk, origins: Origins, frames: list[tuple[types.FrameType, int]]) -> None:
        self._walk = walk
        self._origins = origins
        self._by_id = {id(s.tensor): s for s in walk.seen.values()}
        self._grads = _grads(walk)
        self._by_storage: dict[int, Seen] = {}
        for s in walk.seen.values():
            key = storage_key(s.tensor)
            if key is not None:
                self._by_storage.setdefault(key, s)
        self._local_by_id: dict[int, str] = {}
        self._local_by_storage: dict[int, str] = {}
        for frame, line in _ordered(frames):
            where = f"{frame.f_code.co_qualname}, {os.path.basename(frame.f_code.co_filename)}:{line}"
            for name, t in _locals(frame):
                self._local_by_id.setdefault(id(t), f"{name} in {where}")
                key = storage_key(t)
                if key is not None:
                    self._local_by_storage.setdefault(key, f"{name} in {where}")

    def name(self, t: torch.Tensor) -> Name:
        s = self._by_id.get(id(t))
        if s is not None:
            return Name(full_path(self._walk, s), seen=s)
        grad = self._grads.get(id(t))
        if grad is not None:
            return Name(full_path(self._walk, grad) + ".grad", seen=grad)
        origin = self._origins.get(t)
        if origin is not None:
            return Name(origin.text, origin=origin)
        local = self._local_by_id.get(id(t))
        if local is not None:
            return Name(local, local=True)
        key = storage_key(t)
        if key is not None:
            s = self._by_storage.get(key)
            if s is not None:
                return Name(f"a view of {full_path(self._walk, s)}", seen=s)
            local = self._local_by_storage.get(key)
            if local is not None:
                return Name(f"a view of {local}", local=True)
        return Name("an intermediate result no variable holds")

    def module_name(self, module: Any) -> str | None:
        node = self._walk.modules.get(id(module))
        return node.path if node is not None else None


def _ordered(frames: list[tuple[types.FrameType, int]]) -> list[tuple[types.FrameType, int]]:
    """The user's frames, outermost first.

    The outermost name of a tensor says where it came from (``images`` in the training step,
    not ``x`` in the ``forward`` it was passed to); a tensor made inside ``forward`` has a name
    only there.
    """
    return [(f, line) for f, line in frames if not _is_own(f) and not _is_torch(f)]


def _grads(walk: Walk) -> dict[int, Seen]:
    """``id(p.grad) -> p`` for the parameters found: the optimizer's arithmetic reads grads."""
    out = {}
    for s in walk.seen.values():
        grad = s.tensor.grad if isinstance(s.tensor, torch.nn.Parameter) else None
        if grad is not None:
            out[id(grad)] = s
    return out


def _is_torch(frame: types.FrameType) -> bool:
    return frame.f_code.co_filename.startswith(_TORCH_DIR)


def _is_own(frame: types.FrameType) -> bool:
    name = frame.f_code.co_filename
    return name.startswith(_OWN_DIR) and (f"{os.sep}auditing{os.sep}" in name or f"{os.sep}sim{os.sep}" in name)


def _locals(frame: types.FrameType) -> Iterator[tuple[str, torch.Tensor]]:
    """Tensors in a frame's variables, and one level into dicts, lists and tuples of them."""
    try:
        variables = dict(frame.f_locals)
    except Exception:
        return
    for name, value in variables.items():
        if isinstance(value, torch.Tensor):
            yield name, value
        elif isinstance(value, dict) and len(value) <= 1000:
            for k, v in value.items():
                if isinstance(v, torch.Tensor):
                    yield _paths.item(name, k), v
        elif isinstance(value, (list, tuple)) and len(value) <= 1000:
            for i, v in enumerate(value):
                if isinstance(v, torch.Tensor):
                    yield _paths.item(name, i), v


def traceback_frames(tb: types.TracebackType | None) -> list[tuple[types.FrameType, int]]:
    """``(frame, line)`` for each frame of a traceback, outermost first."""
    out = []
    while tb is not None:
        out.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return out


def is_library_frame(frame: types.FrameType) -> bool:
    """Frames that are no place to show the user: samedevice's own and torch's dispatch plumbing."""
    name = frame.f_code.co_filename
    return _is_own(frame) or name.endswith(("torch/overrides.py", "torch/utils/_python_dispatch.py"))
