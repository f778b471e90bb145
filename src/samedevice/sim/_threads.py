"""Torch-function modes that must hold in every thread, not only the one that pushed them.

A thread starts with an empty mode stack, so a ``.cuda()`` in a worker thread or a
``ThreadPoolExecutor`` would escape the "cuda" alias (or the CPU reference run's mapping).
``Thread._bootstrap_inner`` runs first in every ``threading.Thread`` -- subclasses and pool
workers included -- so wrapping it pushes the registered modes in each new thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

_factories: list[Callable[[], Any]] = []  # each returns a mode to enter, or None


def follow(factory: Callable[[], Any]) -> None:
    """Enter ``factory()`` (when not None) at the start of every thread started from now on."""
    if factory not in _factories:
        _factories.append(factory)
    original = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]
    if getattr(original, "_samedevice", False):
        return

    def bootstrap_inner(self: threading.Thread) -> None:
        with contextlib.ExitStack() as stack:
            for make in _factories:
                mode = make()
                if mode is not None:
                    stack.enter_context(mode)
            return original(self)

    bootstrap_inner._samedevice = True  # type: ignore[attr-defined]
    threading.Thread._bootstrap_inner = bootstrap_inner  # type: ignore[attr-defined]
