"""Warnings point at the user's line, not at the simulator's.

A warning PyTorch's C++ raises (``TORCH_WARN``: "Implicit dimension choice for softmax",
"To copy construct from a tensor") is attributed to the innermost Python frame. On CUDA that is
the user's call; here it is the simulator's TorchFunctionMode that made the call on the user's
behalf (``samedevice/sim/_alias.py``); a Python warning's ``stacklevel`` counts the frames the
mode added. Before a warning is shown, one located in the simulator's own files is moved to
the frame CUDA would name. (Python's once-per-location registry still keys on the simulator's
line, so a warning repeated from two user lines is shown once.)
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from types import FrameType
from typing import Any

from torch import overrides

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # .../samedevice/
_OVERRIDES_FILE = os.path.abspath(overrides.__file__)


def _ours(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE)


def _user_frame(filename: str, lineno: int) -> FrameType | None:
    """The frame the warning would name without the simulator in the stack.

    Start at the simulator's frame the warning names and go outwards past the simulator's
    frames. A Python torch function (``F.softmax``) reached the simulator through
    ``torch.overrides.handle_torch_function`` from a first call of itself, which the warning's
    ``stacklevel`` did not count: that frame and its caller's dispatch frame are skipped too.
    """
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and not (frame.f_code.co_filename == filename and frame.f_lineno == lineno):
        frame = frame.f_back
    while frame is not None and _ours(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is not None and os.path.abspath(frame.f_code.co_filename) == _OVERRIDES_FILE:
        frame = frame.f_back  # handle_torch_function
        frame = frame.f_back if frame is not None else None  # the torch function's first call
    return frame


def install() -> None:
    """Relocate shown warnings that name a simulator file (idempotent)."""
    original = warnings._showwarnmsg  # type: ignore[attr-defined]
    if getattr(original, "_samedevice", False):
        return

    def _showwarnmsg(msg: Any) -> None:
        if isinstance(msg.filename, str) and _ours(msg.filename):
            frame = _user_frame(msg.filename, msg.lineno)
            if frame is not None:
                msg = warnings.WarningMessage(msg.message, msg.category, frame.f_code.co_filename,
                                              frame.f_lineno, msg.file, None, msg.source)
        original(msg)

    _showwarnmsg._samedevice = True  # type: ignore[attr-defined]
    warnings._showwarnmsg = _showwarnmsg  # type: ignore[attr-defined]


class _NoTritonNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("triton not found")


def quiet_triton_note() -> None:
    """``torch.utils.flop_counter`` logs "triton not found; flop counting will not work for triton
    kernels" on import whenever ``torch.version.cuda`` is set and Triton is missing: a CUDA
    machine has Triton (the CUDA wheels depend on it), so neither run shows the note."""
    log = logging.getLogger("torch.utils.flop_counter")
    if not any(isinstance(f, _NoTritonNote) for f in log.filters):
        log.addFilter(_NoTritonNote())
