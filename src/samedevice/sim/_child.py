"""Running the program as the terminal's own: signals reach it, its status comes back whole.

``subprocess.call`` answers a KeyboardInterrupt in the waiting parent by SIGKILLing the child, so
a program's ``except KeyboardInterrupt:`` cleanup never ran under ``samedevice run``; SIGTERM or
SIGHUP sent to ``run`` left the program running as an orphan; a program killed by signal N came
back as 256-N. Here the parent waits for the child whatever arrives, forwards SIGINT, SIGTERM and
SIGHUP to it (SIGINT only when the terminal has not sent it to the child already: Ctrl-C signals
the whole foreground process group), and reports a death by signal N as the shell does, 128+N.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _terminal_signals_the_child() -> bool:
    """Whether a Ctrl-C on the terminal reaches the child by itself (it is in our process group,
    and that group is the terminal's foreground)."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


def run(cmd: Sequence[str], env: dict[str, str]) -> int:
    """Run ``cmd`` to its end; its exit status, or 128+N if a signal N killed it."""
    child = subprocess.Popen(list(cmd), env=env)
    from_terminal = _terminal_signals_the_child()

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and from_terminal:
            return  # the child has it already; a second one would interrupt its cleanup
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        while True:
            try:
                status = child.wait()
                break
            except KeyboardInterrupt:  # a handler set by someone else raised: keep waiting
                continue
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if status < 0:
        sys.stderr.flush()
        return 128 - status
    return status
