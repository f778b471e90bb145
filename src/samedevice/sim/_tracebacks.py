"""Tracebacks without the simulator's own frames.

On CUDA a device error is raised in C++, so a Python traceback ends at the user's (or
PyTorch's) line that called the op. Under the simulator the raise happens in Python -- in the
kernel or the alias mode -- and those frames would be the last ones shown. IPython hides frames
marked ``__tracebackhide__`` except the last one, so the simulator removes its frames from the
chain before the traceback is displayed: notebooks and ``samedevice run`` then show what a
CUDA user sees.
"""

from __future__ import annotations

import types
from pathlib import Path

_PACKAGE = str(Path(__file__).resolve().parent.parent) + "/"


def _is_simulator_frame(tb: types.TracebackType) -> bool:
    filename = tb.tb_frame.f_code.co_filename
    return filename.startswith(_PACKAGE) and "/samedevice/sim/" in filename


def _is_torch_function_dispatch(tb: types.TracebackType) -> bool:
    code = tb.tb_frame.f_code
    return code.co_name == "handle_torch_function" and code.co_filename.replace("\\", "/").endswith(
        "torch/overrides.py")


def strip(tb: types.TracebackType | None) -> types.TracebackType | None:
    """A copy of the traceback chain without frames of ``samedevice.sim``.

    Under the "cuda" alias a Python-level torch function (``F.cross_entropy``,
    ``dist.all_reduce``) is entered twice: its first entry (with any decorators) only hands
    the call to ``handle_torch_function`` and the alias mode, which enter it again. The first
    entry is dropped too, leaving the chain a CUDA run would show.
    """
    chain = []
    while tb is not None:
        chain.append(tb)
        tb = tb.tb_next
    kept: list[types.TracebackType] = []
    for i, t in enumerate(chain):
        if _is_torch_function_dispatch(t):
            reentry = next((c.tb_frame.f_code for c in chain[i + 1:]
                            if not _is_simulator_frame(c) and not _is_torch_function_dispatch(c)), None)
            if reentry is not None and any(k.tb_frame.f_code is reentry for k in kept):
                while kept and kept.pop().tb_frame.f_code is not reentry:
                    pass
            elif kept:
                kept.pop()
        elif not _is_simulator_frame(t):
            kept.append(t)
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


def strip_exception(exc: BaseException) -> BaseException:
    """Strip ``exc`` and the exceptions it chains to (``__cause__`` / ``__context__``).

    Under the "cuda" alias the messages are respelled too: an error raised deep inside
    PyTorch (Dynamo's, c10d's) may name ``sim:0`` where CUDA would print ``cuda:0``.
    """
    from ._naming import respell

    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = strip(current.__traceback__)
        if current.args and isinstance(current.args[0], str):
            current.args = (respell(current.args[0]), *current.args[1:])
        current = current.__cause__ or current.__context__
    return exc
