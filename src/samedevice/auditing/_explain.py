"""After a device error escaped a ``locate`` block: name its tensors and add the note."""

from __future__ import annotations

import os
import types
from typing import Any

from ._namer import Namer, traceback_frames
from ._note import PREFIX, Failure, compose, is_device_error
from ._origins import Origins
from ._walk import walk

_OWN_FILES = (os.path.dirname(__file__) + os.sep,)


def annotate(exc: BaseException, failure: Failure | None, origins: Origins,
             named: list[tuple[str, Any]]) -> None:
    """Add the note to ``exc`` (once, however many ``locate`` blocks it passes through)."""
    if not is_device_error(exc) or any(str(n).startswith(PREFIX) for n in getattr(exc, "__notes__", ())):
        return
    if failure is not None and not _caused_by(exc, failure.exception):
        failure = None
    frames = traceback_frames(exc.__traceback__)
    w = walk(named)
    try:
        note = compose(exc, failure, Namer(w, origins, frames), w, frames, [n for n, _ in named])
    except Exception as e:  # explaining must never replace the user's error
        note = f"{PREFIX} could not name the tensors ({type(e).__name__}: {e})"
    exc.add_note(note)
    exc.__traceback__ = _without_own_frames(exc.__traceback__)


def _caused_by(exc: BaseException, cause: BaseException) -> bool:
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if current is cause:
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _without_own_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without this package's frames: the user's call is the last line shown."""
    frames = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_OWN_FILES):
            frames.append(tb)
        tb = tb.tb_next
    chain = None
    for t in reversed(frames):
        chain = types.TracebackType(chain, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return chain
