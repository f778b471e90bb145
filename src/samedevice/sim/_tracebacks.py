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


def strip(tb: types.TracebackType | None) -> types.TracebackType | None:
    """A copy of the traceback chain without frames of ``samedevice.sim``."""
    frames = []
    while tb is not None:
        if not _is_simulator_frame(tb):
            frames.append(tb)
        tb = tb.tb_next
    chain = None
    for t in reversed(frames):
        chain = types.TracebackType(chain, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return chain


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
