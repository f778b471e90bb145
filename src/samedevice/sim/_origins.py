"""Where the program made each of its CPU tensors: the line of its own code, remembered.

A device error names an operand on the CPU, and the failing statement names it (``pos_ids``),
but not where that tensor was made: a factory three calls up, in the branch that ran, in
another file. The code alone often cannot say which of several bindings ran; the live program
knows. The alias mode (``_alias``) sees every torch call the user's code makes, so it hands
each CPU result here:

* a result made from no CPU tensor the program had (``torch.arange(n)``, ``x.cpu()``,
  ``torch.stack`` in a DataLoader's collate) is *made* at the first frame of the user's code on
  the stack -- the line that called torch, or the library function that did;
* a result computed from a CPU tensor already known (``pos.unsqueeze(0)``, ``mask[:n]``) keeps
  that tensor's origin, so a chain of views and arithmetic still leads back to the factory.

Only the origin is kept (file, line), in a table of weak references: nothing is added to the
tensor itself (a checkpoint the program saves stays byte for byte what it was), and a tensor
freed is forgotten.
``torch.from_numpy`` is no torch call a mode sees, so ``follow_from_numpy`` wraps it: the
array a program converts is the commonest data it forgets to move. Tensors PyTorch makes
without any call the mode sees (the legacy ``torch.FloatTensor(...)`` constructors,
``torch.load``) have no origin; the first torch call on one that yields a new CPU tensor records
that call's line.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
import weakref
from typing import Any

import torch

_Tensor = torch.Tensor
# id(tensor) -> (weak reference, (file, line)); the reference's callback drops the entry, and a
# lookup checks the reference still points at the tensor (an id is reused once it is freed)
_made: dict[int, tuple[_Ref, tuple[str, int]]] = {}
_internal: dict[str, bool] = {}  # filename -> not the user's code (decided once per file)
_TORCH = os.path.dirname(torch.__file__) + os.sep
_SAMEDEVICE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB = sysconfig.get_paths().get("stdlib", "") + os.sep
_MAX_DEPTH = 40


def _is_internal(filename: str) -> bool:
    known = _internal.get(filename)
    if known is None:
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        known = (path.startswith((_TORCH, _SAMEDEVICE, "<frozen", "<__array_function__"))
                 or (path.startswith(_STDLIB) and "site-packages" not in path and "dist-packages" not in path))
        _internal[filename] = known
    return known


def _user_site(depth: int) -> tuple[str, int] | None:
    """(file, line) of the innermost frame of the user's code (or a library's) on the stack."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return None
    internal = _internal  # filename -> bool, looked up inline: this runs for every factory call
    for _ in range(_MAX_DEPTH):
        if f is None:
            return None
        name = f.f_code.co_filename
        known = internal.get(name)
        if known is None:
            known = _is_internal(name)
        if not known:
            return name, f.f_lineno
        f = f.f_back
    return None


def _origin(t: _Tensor) -> tuple[str, int] | None:
    entry = _made.get(id(t))
    if entry is not None and entry[0]() is t:
        return entry[1]
    return None


class _Ref(weakref.ref):
    """A weak reference that knows its table key, so one shared callback drops the entry."""

    __slots__ = ("key",)


def _drop(ref: _Ref) -> None:
    entry = _made.get(ref.key)
    if entry is not None and entry[0] is ref:
        _made.pop(ref.key, None)


_SEQUENCES = (list, tuple)


def _known_input(args: tuple) -> tuple[str, int] | None:
    """The origin of the first tensor among the call's arguments (and the items of a list or
    tuple given, as ``torch.cat`` takes them) that has one."""
    made = _made
    for a in args:
        if isinstance(a, _Tensor):
            entry = made.get(id(a))
            if entry is not None and entry[0]() is a:
                return entry[1]
        elif type(a) in _SEQUENCES:
            for b in a[:8]:
                if isinstance(b, _Tensor):
                    entry = made.get(id(b))
                    if entry is not None and entry[0]() is b:
                        return entry[1]
    return None


def note(args: tuple, result: Any) -> None:
    """Remember where ``result`` (a CPU-or-not tensor a torch call of the user's code returned)
    was made."""
    if not result.is_cpu:
        return
    made = _made
    key = id(result)
    entry = made.get(key)
    if entry is not None and entry[0]() is result:
        return  # in place: it was made before
    origin = _known_input(args) if args else None
    if origin is None:
        origin = _user_site(3)  # note <- the alias's handler <- the user's call
        if origin is None:
            return
    try:
        ref = _Ref(result, _drop)
    except TypeError:
        return  # a tensor that cannot be weakly referenced: no origin
    ref.key = key
    made[key] = (ref, origin)


def made_at(value: Any) -> tuple[str, int] | None:
    """(file, line) where the program made this CPU tensor, when the alias saw it; else that of
    a tensor the alias saw that shares its memory (``Variable(x[i:j])``, ``x.data``, a tensor a
    C extension returned as a view make a new tensor no mode sees)."""
    if not isinstance(value, _Tensor):
        return None
    origin = _origin(value)
    if origin is None:
        origin = _shared_origin(value)
    return origin


def _shared_origin(value: _Tensor) -> tuple[str, int] | None:
    """The origin of a known tensor over the same memory (asked once, after an error: a scan)."""
    try:
        storage = value.untyped_storage()
        if storage.nbytes() == 0:
            return None
        ptr = storage.data_ptr()
    except Exception:  # a tensor without storage (sparse, meta, a wrapper subclass)
        return None
    for ref, origin in list(_made.values()):
        t = ref()
        if t is None or t.layout != torch.strided or t.is_meta:
            continue
        try:
            if t.untyped_storage().data_ptr() == ptr:
                return origin
        except Exception:
            continue
    return None


_from_numpy = None  # torch's own, once wrapped


def follow_from_numpy() -> None:
    """Make ``torch.from_numpy`` record where it was called (once; the result is torch's own)."""
    global _from_numpy
    if _from_numpy is not None:
        return
    original = _from_numpy = torch.from_numpy
    is_compiling = torch.compiler.is_compiling

    @functools.wraps(original)
    def from_numpy(ndarray: Any) -> _Tensor:
        result = original(ndarray)
        if not is_compiling():  # Dynamo's fake tensors are not the program's
            note((), result)
        return result

    torch.from_numpy = from_numpy
