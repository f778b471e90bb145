"""A warm interpreter that runs programs as ``python script.py`` would, each in a fork of itself.

Started by ``samedevice.sim.warm.WarmRunner`` as ``python -m samedevice.sim._warm_worker``. It
imports torch and the simulator's modules once -- without enabling anything, so a child can
still become a plain-CPU reference run -- then reads one JSON request a line on stdin and
answers one JSON line. Each request runs in a forked child that sets up exactly what a fresh
interpreter started by ``runner.run_script`` would have (environment, working folder, argv,
``sys.path[0]``, a new ``__main__``, the device view from ``_process.start``) and ends the way
Python ends (excepthook, atexit handlers, exit status). Whatever a program changes (monkeypatches,
the cuda alias, a process group, module state) dies with its child; the worker never runs user
code itself.

Fork after ``import torch`` is safe here because the worker never ran a kernel (no OpenMP
pool to inherit), never touched a GPU, and runs with ``OMP_NUM_THREADS=1`` like the cold runs.
Programs that start processes (``torch.multiprocessing.spawn``) start fresh interpreters
that get their device view from ``sitecustomize``, exactly as under the cold runner.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time
from typing import Any, TextIO

# Imported once by the worker: torch, and what most programs import lazily (constructing any
# optimizer imports torch._dynamo: 3 s with sympy, which every child would otherwise pay
# again); then the simulator's modules -- imported, never enabled here.
WARM_MODULES = (
    "torch", "torch._dynamo", "torch.distributed", "torch.multiprocessing", "torch.utils.data",
    "samedevice.sim", "samedevice.sim._alias", "samedevice.sim._cpu_mode",
    "samedevice.sim._nn_kernels", "samedevice.sim._patches", "samedevice.sim._process",
    "samedevice.sim._runtime", "samedevice.sim._tracebacks", "samedevice.sim.dist",
)
# What a case page needs besides (``verify`` runs pages here too); optional: a plain
# ``pip install samedevice[torch]`` has no IPython, and verify then runs the programs alone.
PAGE_MODULES = ("IPython.core.interactiveshell", "ipykernel.compiler", "nbformat",
                "samedevice.pages.inprocess", "samedevice.ipython", "samedevice.testing")


def _exit_code(e: SystemExit) -> int:
    """What the interpreter does with ``sys.exit(x)``."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)
    return 1


def _text_stream(fd: int) -> TextIO:
    import io

    return io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8",
                            errors="backslashreplace", line_buffering=True, write_through=True)


def _become_child(req: dict[str, Any]) -> None:
    """What a fresh interpreter would have: its own process group, streams, folder, environment."""
    import random

    os.setpgid(0, 0)  # a timeout kills the program and the processes it started
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a fresh interpreter
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)
    sys.stdout = sys.__stdout__ = _text_stream(1)
    sys.stderr = sys.__stderr__ = _text_stream(2)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    random.seed()  # a fresh interpreter seeds from the OS; forks would share the worker's state
    fork = sys.modules.get("samedevice.sim._fork")
    if fork is not None:
        fork.fresh_process()  # a new interpreter, not a fork of one that used CUDA (no bad fork)


def _page_child(req: dict[str, Any]) -> int:
    """Run a case page as its kernel would (``samedevice.verify.page``)."""
    _become_child(req)
    sys.argv = ["ipykernel_launcher"]
    sys.path[0] = ""  # a kernel's first path entry: its working folder
    from samedevice.verify.page import run_in_child

    return run_in_child(req)


def _child(req: dict[str, Any]) -> int:
    """Become the program's process (we are the forked child); return its exit status."""
    import atexit
    import builtins
    import threading
    import types

    _become_child(req)
    script = req["script"]
    sys.argv = [script]
    sys.path[0] = os.path.dirname(script)

    code = 0
    try:
        from samedevice.sim import _process

        # what sitecustomize does at the start of a cold run
        _process.start(os.environ.get("SAMEDEVICE_SIM", "plain"))
        main = types.ModuleType("__main__")
        main.__file__ = script
        main.__builtins__ = builtins  # type: ignore[attr-defined]
        main.__spec__ = None  # multiprocessing's spawn finds the program through __file__
        sys.modules["__main__"] = main
        with open(script, "rb") as f:
            compiled = compile(f.read(), script, "exec")
        exec(compiled, main.__dict__)
    except SystemExit as e:
        code = _exit_code(e)
    except BaseException as e:
        if e.__traceback__ is not None:
            e.__traceback__ = e.__traceback__.tb_next  # leave this function's frame out
        sys.excepthook(type(e), e, e.__traceback__)
        code = 1
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # joins non-daemon threads, as exit does
    except Exception:
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return code


def _run(req: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            code = _page_child(req) if "page" in req else _child(req)
        finally:
            os._exit(code)
    deadline = time.monotonic() + float(req["timeout"])
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.005)
    try:
        os.killpg(pid, signal.SIGKILL)  # ranks or workers the program left running
    except (ProcessLookupError, PermissionError):
        pass
    return {"returncode": -9 if timed_out else os.waitstatus_to_exitcode(status),
            "timed_out": timed_out, "seconds": time.perf_counter() - start}


def main() -> None:
    # The protocol owns the real stdout; anything printed while importing goes to stderr.
    answers = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    # Ctrl-C reaches the whole process group: the parent stops the worker by closing stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in WARM_MODULES:
        importlib.import_module(name)
    pages = True
    for name in PAGE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pages = False

    answers.write(json.dumps({"ready": os.getpid(), "pages": pages}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        answers.write(json.dumps(_run(json.loads(line))) + "\n")


if __name__ == "__main__":
    main()
