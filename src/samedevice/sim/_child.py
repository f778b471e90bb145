"""Running the program as the terminal's own: signals reach it, its status comes back whole.

``subprocess.call`` answers a KeyboardInterrupt in the waiting parent by SIGKILLing the child, so
a program's ``except KeyboardInterrupt:`` cleanup never ran under ``samedevice run``; SIGTERM or
SIGHUP sent to ``run`` left the program running as an orphan; a program killed by signal N came
back as 256-N. Here the parent waits for the child whatever arrives, forwards SIGINT, SIGTERM and
SIGHUP to it (SIGINT only when the terminal has not sent it to the child already: Ctrl-C signals
the whole foreground process group), and reports a death by signal N as the shell does, 128+N.

No process the program started outlives ``run`` (Linux): ``run`` is a child subreaper, so what the
program leaves behind (a worker it never joined, multiprocessing's resource tracker, a grandchild
of a dead worker) becomes ``run``'s child when its parent dies. After the program ends, they get a
moment to finish on their own (the resource tracker exits once the program's end closes its pipe),
then SIGTERM, then SIGKILL; each is waited for, before ``run`` removes the folder they write to.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
# to finish on their own (a Python child imports torch and the simulator first: seconds); to stop
# after SIGTERM (the resource tracker ignores it, and exits once the others have closed its pipe)
GRACE_S, TERM_S = 5.0, 5.0


def _become_subreaper() -> bool:
    """Orphaned descendants of the program become this process's children (Linux 3.4+)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> set[int]:
    """The pids whose parent is this process (from /proc; empty where there is none)."""
    me, out = os.getpid(), set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ")"
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == me:
            out.add(int(name))
    return out


def _reap(pids: set[int]) -> bool:
    """Collect those of ``pids`` that have exited; True when none is left."""
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.discard(pid)
    return not pids


def _stop_leftovers(before: set[int]) -> None:
    """Wait for, then stop, the processes the program left behind (children now, not ``before``).
    Each round reaps the ones that exited; a stopped process's own orphans join the next round."""
    stopped: set[int] = set()
    step, deadline = None, time.monotonic() + GRACE_S  # None: the grace; then SIGTERM, SIGKILL
    while True:
        left = _children() - before
        if _reap(left):
            break
        now = time.monotonic()
        if now >= deadline:
            if step == signal.SIGKILL:
                break  # unkillable (stopped in the kernel): nothing more to do
            step, deadline = (signal.SIGTERM if step is None else signal.SIGKILL), now + TERM_S
            for pid in left:
                try:
                    os.kill(pid, step)
                except ProcessLookupError:
                    pass
                stopped.add(pid)
        time.sleep(0.02)
    if stopped:
        print(f"samedevice run: stopped {len(stopped)} process(es) the program left running "
              f"(pid {', '.join(map(str, sorted(stopped)))})", file=sys.stderr)


def _terminal_signals_the_child() -> bool:
    """Whether a Ctrl-C on the terminal reaches the child by itself (it is in our process group,
    and that group is the terminal's foreground)."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


def run(cmd: Sequence[str], env: dict[str, str]) -> int:
    """Run ``cmd`` to its end; its exit status, or 128+N if a signal N killed it."""
    reaping = _become_subreaper()
    before = _children() if reaping else set()
    from_terminal = _terminal_signals_the_child()
    started: list[subprocess.Popen] = []
    early: list[int] = []  # signals that came before the child existed

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and from_terminal:
            return  # the child has it already; a second one would interrupt its cleanup
        if not started:
            early.append(signum)
            return
        try:
            started[0].send_signal(signum)
        except ProcessLookupError:
            pass

    # the handlers are in place before the child starts: a signal in between would otherwise end
    # `run` by KeyboardInterrupt (or by SIGTERM) and leave the program running as an orphan
    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        child = subprocess.Popen(list(cmd), env=env)
        started.append(child)
        before.discard(child.pid)
        for signum in early:
            forward(signum, None)
        while True:
            try:
                status = child.wait()
                break
            except KeyboardInterrupt:  # a handler set by someone else raised: keep waiting
                continue
        if reaping:
            _stop_leftovers(before)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if status < 0:
        sys.stderr.flush()
        return 128 - status
    return status
